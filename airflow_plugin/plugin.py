"""The timeweave Airflow plugin, registered by the ``airflow.plugins`` entry point in pyproject.toml.

Airflow 3 plugins cannot carry operators or hooks; import those from the package::

    from timeweave.airflow.operators.timeweave import TimeweaveBackfillOperator, TimeweaveStreamingOperator

The plugin contributes template macros under ``macros.timeweave``::

    "{{ macros.timeweave.backfill_slices(data_interval_start, data_interval_end, 3) }}"
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk.plugins_manager import AirflowPlugin

from timeweave.airflow.hooks.timeweave import utc_naive
from timeweave.core.time import slices_of


def backfill_slices(start: datetime | str, end: datetime | str, slices: int) -> list[list[str]]:
    """The ``[start, end)`` bounds (ISO, UTC) of the slices a backfill of ``slices`` slices runs.

    The same split the backfill job makes (:func:`timeweave.core.time.slices_of`), so a task per slice can be mapped over it.

    >>> backfill_slices("2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00", 2)
    [['2026-01-01T00:00:00', '2026-01-01T12:00:00'], ['2026-01-01T12:00:00', '2026-01-02T00:00:00']]
    """
    parts = slices_of(utc_naive(start, "start"), utc_naive(end, "end"), int(slices))
    return [[part.start.isoformat(), part.end.isoformat()] for part in parts]


class TimeweavePlugin(AirflowPlugin):
    """Registers the ``macros.timeweave`` template macros."""

    name = "timeweave"
    macros = [backfill_slices]  # noqa: RUF012 - AirflowPlugin declares these as class-level lists
