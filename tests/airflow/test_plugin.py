"""The plugin is found through the ``airflow.plugins`` entry point and contributes its macros."""

from __future__ import annotations

from importlib.metadata import entry_points

from timeweave.airflow.plugin import TimeweavePlugin, backfill_slices


def test_entry_point_names_the_plugin_class():
    (entry,) = [e for e in entry_points(group="airflow.plugins") if e.name == "timeweave"]
    assert entry.load() is TimeweavePlugin


def test_airflow_loads_the_plugin_from_the_entry_point():
    from airflow import plugins_manager

    plugins, import_errors = plugins_manager._get_plugins()
    loaded = {plugin.name: plugin for plugin in plugins}
    assert isinstance(loaded.get("timeweave"), TimeweavePlugin)
    # An editable checkout run from its root also exposes ./timeweave.egg-info: the same entry point is
    # seen twice and Airflow skips the second one.  Any other error would be a real import failure.
    errors = [error for source, error in import_errors.items() if "timeweave" in source]
    assert all("already registered" in error for error in errors), errors
    assert "timeweave.airflow.plugin:TimeweavePlugin" in str(loaded["timeweave"].source)


def test_macros_are_reachable_from_templates():
    from airflow.sdk.execution_time import macros
    from airflow.sdk.plugins_manager import integrate_macros_plugins

    integrate_macros_plugins()
    assert macros.timeweave.backfill_slices("2026-01-01", "2026-01-01T03:00", 3) == [
        ["2026-01-01T00:00:00", "2026-01-01T01:00:00"],
        ["2026-01-01T01:00:00", "2026-01-01T02:00:00"],
        ["2026-01-01T02:00:00", "2026-01-01T03:00:00"],
    ]


def test_backfill_slices_match_the_backfill_job_split():
    from datetime import datetime

    from timeweave.core.time import slices_of

    bounds = backfill_slices("2026-01-01T00:00:00+00:00", "2026-01-01T10:00:00+00:00", 4)
    expected = slices_of(datetime(2026, 1, 1), datetime(2026, 1, 1, 10), 4)
    assert bounds == [[s.start.isoformat(), s.end.isoformat()] for s in expected]


def test_backfill_slices_need_no_spark():
    """The macro splits with the core's rule (timeweave.core.time): rendering a DAG's template imports no Spark."""
    import subprocess
    import sys

    code = ("import sys; from timeweave.airflow.plugin import backfill_slices; "
            "backfill_slices('2026-01-01', '2026-01-02', 2); print('pyspark' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "False"
