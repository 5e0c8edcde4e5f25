"""The example DAG end to end, run by the README's commands: ``airflow dags test`` for the first data interval
and the DAG file as a script (``dag.test()``) for the second, on a fresh AIRFLOW_HOME with its sqlite metadata DB.

Each run's ``check`` task fails the run unless dbt, the streaming job and the backfill agree on the interval's
rows; the tests read the runs' states and the metrics the operators returned (XCom) from that metadata DB.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pendulum
import pytest

from tests.airflow.conftest import REPO

DAG_FILE = REPO / "dags" / "timeweave_example.py"
# Interval ends: dag.test(logical_date=end) runs the CronDataIntervalTimetable interval that ends there.
INTERVAL_ENDS = [pendulum.datetime(2026, 1, 2, tz="UTC"), pendulum.datetime(2026, 1, 3, tz="UTC")]
# Orders per sample day (dags/sample_data/orders/<day>.csv).
ORDERS_PER_DAY = [9, 8]


def _load_dag(work_dir, monkeypatch):
    monkeypatch.setenv("TIMEWEAVE_EXAMPLE_HOME", str(work_dir))
    spec = importlib.util.spec_from_file_location("timeweave_example_dag_under_test", DAG_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def test_example_dag_parses_with_its_schedule(monkeypatch, tmp_path):
    from airflow.sdk import CronDataIntervalTimetable

    dag = _load_dag(tmp_path, monkeypatch)
    assert isinstance(dag.timetable, CronDataIntervalTimetable)
    assert dag.max_active_runs == 1
    assert dag.task_dict["land"].downstream_task_ids == {"dbt_build", "stream", "backfill"}
    assert dag.task_dict["check"].upstream_task_ids == {"dbt_build", "stream", "backfill"}
    assert dag.task_dict["stream"].config["checkpoint"].startswith(str(tmp_path))


def _readme_env(airflow_home) -> dict[str, str]:
    """The README's environment for the example DAG: AIRFLOW_HOME, the dags folder, no example DAGs; nothing else."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYSPARK_", "TIMEWEAVE_"))}
    env.update(AIRFLOW_HOME=str(airflow_home), AIRFLOW__CORE__LOAD_EXAMPLES="False")
    # an installed timeweave (README: pip install -e '.[all]' --config-settings editable_mode=strict)
    env["PYTHONPATH"] = str(REPO)
    return env


@pytest.fixture(scope="module")
def readme_runs(tmp_path_factory) -> Path:
    """``airflow db migrate``, ``airflow dags test timeweave_example 2026-01-02`` and ``python
    dags/timeweave_example.py 2026-01-03`` exactly as the README's Airflow section writes them, in fresh
    processes on a fresh AIRFLOW_HOME; returns that home's sqlite metadata DB.

    The two DAG runs (one per data interval; the second's stream resumes the first's checkpoint) are the
    module's one run of the example DAG: each job starts its own JVM, so a run costs minutes, and both tests
    below read the same runs (states, data intervals, and the metrics the operators returned through XCom).
    """
    import subprocess
    import sys

    home = tmp_path_factory.mktemp("readme") / "airflow"
    env = _readme_env(home)
    airflow = str(Path(sys.executable).parent / "airflow")

    def run(args, extra=None):
        done = subprocess.run(args, env={**env, **(extra or {})}, cwd=REPO, capture_output=True, text=True,
                              timeout=1800, check=False)
        assert done.returncode == 0, f"{args}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"

    dags_folder = {"AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags")}
    run([airflow, "db", "migrate"], dags_folder)
    run([airflow, "dags", "test", "timeweave_example", "2026-01-02"], dags_folder)
    # the script form sets the dags folder itself: run it without the variable
    run([sys.executable, str(DAG_FILE), "2026-01-03"])
    return home / "airflow.db"


def _dag_runs(db_path: Path) -> list[dict]:
    """The example DAG's runs in the metadata DB, by interval: state, interval, and each task's XCom return value."""
    import json
    import sqlite3

    with sqlite3.connect(db_path) as db:
        runs = db.execute("SELECT run_id, data_interval_start, data_interval_end, state FROM dag_run "
                          "WHERE dag_id = 'timeweave_example' ORDER BY data_interval_end").fetchall()
        out = []
        for run_id, start, end, state in runs:
            xcoms = db.execute("SELECT task_id, value FROM xcom WHERE dag_id = 'timeweave_example' AND run_id = ? "
                               "AND key = 'return_value' AND map_index = -1", (run_id,)).fetchall()
            tasks = dict(db.execute("SELECT task_id, state FROM task_instance WHERE dag_id = 'timeweave_example' "
                                    "AND run_id = ?", (run_id,)).fetchall())
            out.append({"start": pendulum.parse(start, tz="UTC"), "end": pendulum.parse(end, tz="UTC"),
                        "state": state, "tasks": tasks, "xcom": {t: json.loads(v) for t, v in xcoms}})
    return out


@pytest.mark.slow
def test_readme_commands_run_the_example_dag(readme_runs):
    """The README's commands (see ``readme_runs``) ran the DAG once per interval, every task of both runs succeeded."""
    runs = _dag_runs(readme_runs)
    assert [(r["end"].to_date_string(), r["state"]) for r in runs] == [("2026-01-02", "success"),
                                                                        ("2026-01-03", "success")]
    for r in runs:  # each run's doors agreed on its interval (``check`` fails the run otherwise)
        assert r["tasks"] == dict.fromkeys(["land", "dbt_build", "stream", "backfill", "check"], "success")


@pytest.mark.slow
def test_example_dag_runs_each_interval_and_the_doors_agree(readme_runs):
    """Each run covered its day, and the metrics the operators returned say the doors agreed on that day's orders."""
    runs = _dag_runs(readme_runs)
    assert [r["end"] for r in runs] == INTERVAL_ENDS
    for run, end, orders in zip(runs, INTERVAL_ENDS, ORDERS_PER_DAY, strict=True):
        assert run["state"] == "success", f"run for the interval ending {end} failed"
        assert run["start"] == end.subtract(days=1)

        summaries = run["xcom"]["check"]
        assert [s["door"] for s in summaries] == ["dbt", "streaming", "backfill"]
        assert {s["rows"] for s in summaries} == {orders}
        assert len({s["checksum"] for s in summaries}) == 1

        backfill = run["xcom"]["backfill"]
        assert backfill["rows_out"] == orders and backfill["dead_letter"] == 0
        stream = run["xcom"]["stream"]
        assert stream["late"] == 0 and stream["dead_letter"] == 0
        assert stream["rows_in_left"] == orders  # each run reads only the files landed since the last
        assert stream["rows_out"] == orders  # the heartbeat at the interval end emitted all of them
