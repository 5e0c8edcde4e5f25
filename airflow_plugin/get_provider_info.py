"""Provider metadata for Airflow's ``ProvidersManager`` (the ``apache_airflow_provider`` entry point in pyproject.toml).

It registers the ``timeweave`` connection type (its form fields are the Spark connection's, plus the
``metrics-dir`` extra) with :class:`~timeweave.airflow.hooks.timeweave.TimeweaveHook`, and lists the
package's operators, hook and trigger.  The ``airflow.plugins`` entry point (template macros) is separate.
"""

from __future__ import annotations

from typing import Any


def get_provider_info() -> dict[str, Any]:
    """The provider info dict (Airflow's runtime ``provider_info.schema.json``).

    >>> info = get_provider_info()
    >>> info["package-name"], info["connection-types"][0]["connection-type"]
    ('timeweave', 'timeweave')
    """
    return {
        "package-name": "timeweave",
        "name": "Timeweave",
        "description": "Flink's event-time semantics on Spark: streaming and backfill jobs from Airflow, "
                       "on the Apache Spark provider's spark-submit.",
        "integrations": [{"integration-name": "Timeweave", "tags": ["software"]}],
        "operators": [{"integration-name": "Timeweave", "python-modules": ["timeweave.airflow.operators.timeweave"]}],
        "hooks": [{"integration-name": "Timeweave", "python-modules": ["timeweave.airflow.hooks.timeweave"]}],
        "triggers": [{"integration-name": "Timeweave", "python-modules": ["timeweave.airflow.triggers.timeweave"]}],
        "connection-types": [
            {"hook-class-name": "timeweave.airflow.hooks.timeweave.TimeweaveHook", "connection-type": "timeweave"},
        ],
    }
