"""The example DAG end to end: ``dag.test()`` once per data interval on the sqlite metadata DB.

Tasks run in this process (dag.test's in-process task runner), so the jobs and dbt share the run's
SparkSession (the ``spark`` fixture).  Each run's ``check`` task fails the run unless dbt, the
streaming job and the backfill agree on the interval's rows; the test also reads the metrics the
operators returned through XCom.
"""

from __future__ import annotations

import importlib.util

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


def _xcom(dag_run, task_id: str):
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.scalars(
            XComModel.get_many(run_id=dag_run.run_id, key="return_value", task_ids=task_id, dag_ids=dag_run.dag_id)
        ).one()
        return XComModel.deserialize_value(row)


def test_example_dag_parses_with_its_schedule(monkeypatch, tmp_path):
    from airflow.sdk import CronDataIntervalTimetable

    dag = _load_dag(tmp_path, monkeypatch)
    assert isinstance(dag.timetable, CronDataIntervalTimetable)
    assert dag.max_active_runs == 1
    assert dag.task_dict["land"].downstream_task_ids == {"dbt_build", "stream", "backfill"}
    assert dag.task_dict["check"].upstream_task_ids == {"dbt_build", "stream", "backfill"}
    assert dag.task_dict["stream"].config["checkpoint"].startswith(str(tmp_path))


@pytest.mark.slow
@pytest.mark.spark
def test_example_dag_runs_each_interval_and_the_doors_agree(spark, airflow_home, monkeypatch, tmp_path):
    from airflow.utils.state import DagRunState

    dag = _load_dag(tmp_path / "example", monkeypatch)
    for end, orders in zip(INTERVAL_ENDS, ORDERS_PER_DAY, strict=True):
        dag_run = dag.test(logical_date=end)
        assert dag_run.state == DagRunState.SUCCESS, f"run for the interval ending {end} failed"
        assert dag_run.data_interval_end == end and dag_run.data_interval_start == end.subtract(days=1)

        summaries = _xcom(dag_run, "check")
        assert [s["door"] for s in summaries] == ["dbt", "streaming", "backfill"]
        assert {s["rows"] for s in summaries} == {orders}
        assert len({s["checksum"] for s in summaries}) == 1

        backfill = _xcom(dag_run, "backfill")
        assert backfill["rows_out"] == orders and backfill["dead_letter"] == 0
        stream = _xcom(dag_run, "stream")
        assert stream["late"] == 0 and stream["dead_letter"] == 0
        assert stream["rows_in_left"] == orders  # each run reads only the files landed since the last
        assert stream["rows_out"] == orders  # the heartbeat at the interval end emitted all of them


def _readme_env(airflow_home) -> dict[str, str]:
    """The README's environment for the example DAG: AIRFLOW_HOME, the dags folder, no example DAGs; nothing else."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYSPARK_", "TIMEWEAVE_"))}
    env.update(AIRFLOW_HOME=str(airflow_home), AIRFLOW__CORE__LOAD_EXAMPLES="False")
    # an installed timeweave (README: pip install -e '.[all]' --config-settings editable_mode=strict)
    env["PYTHONPATH"] = str(REPO)
    return env


@pytest.mark.slow
def test_readme_commands_run_the_example_dag(tmp_path):
    """``airflow db migrate``, ``airflow dags test timeweave_example <day>`` and ``python dags/timeweave_example.py
    <day>`` exactly as the README's Airflow section writes them, in fresh processes on a fresh AIRFLOW_HOME."""
    import sqlite3
    import subprocess
    import sys
    from pathlib import Path

    home = tmp_path / "airflow"
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

    with sqlite3.connect(home / "airflow.db") as db:
        runs = db.execute("SELECT data_interval_end, state FROM dag_run WHERE dag_id = 'timeweave_example' "
                          "ORDER BY data_interval_end").fetchall()
        checks = db.execute("SELECT state FROM task_instance WHERE dag_id = 'timeweave_example' "
                            "AND task_id = 'check'").fetchall()
    assert [(end[:10], state) for end, state in runs] == [("2026-01-02", "success"), ("2026-01-03", "success")]
    assert checks == [("success",), ("success",)]  # each run's doors agreed on its interval
