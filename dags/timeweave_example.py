"""The timeweave example pipeline as an Airflow 3 DAG, one run per day of sample data.

Each run (data interval ``[start, end)``, one day):

1. ``land``: the interval's sample files arrive in the landing directory (``dags/sample_data``).
2. ``dbt_build``: the dbt project (``timeweave.temporal_join`` in a model) over everything landed, via
   dbtRunner in-process.
3. ``stream``: the streaming job, an incremental ``availableNow`` run on a persistent checkpoint; the
   heartbeat at ``data_interval_end`` moves the watermark to the end of the interval, so every order
   of the interval is emitted in this run.
4. ``backfill``: the backfill job recomputes the interval in 3 slices.
5. ``check``: the three outputs, restricted to the interval, must have the same rows.

Jobs run in-process (``launcher="local"``); for a cluster set ``launcher="spark-submit"`` and a Spark
``conn_id``.  Work files go to ``$TIMEWEAVE_EXAMPLE_HOME`` (default ``$AIRFLOW_HOME/timeweave_example``).

Run it (``dag.test()`` needs the DAG serialized in the metadata DB, which Airflow does for the DAGs of
its dags folder, so that folder must be this one)::

    export AIRFLOW_HOME=$PWD/.airflow AIRFLOW__CORE__DAGS_FOLDER=$PWD/dags AIRFLOW__CORE__LOAD_EXAMPLES=False
    .venv/bin/airflow db migrate
    .venv/bin/airflow dags test timeweave_example 2026-01-02   # the interval [2026-01-01, 2026-01-02)
    .venv/bin/airflow dags test timeweave_example 2026-01-03   # the next day (its stream resumes the first)

or, after ``airflow db migrate``, ``.venv/bin/python dags/timeweave_example.py 2026-01-02`` (it points the
dags folder at its own directory itself).
"""

from __future__ import annotations

import os
from pathlib import Path

if __name__ == "__main__":
    # dag.test() serializes the DAGs of the configured dags folder and refuses a DAG it did not find there
    # ("the dag is not serialized"): run as a script, this file's folder is that folder.  Airflow fixes the
    # folder when it is first imported, so this comes before any import of airflow.
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(Path(__file__).resolve().parent)

import pendulum
from airflow.sdk import DAG, CronDataIntervalTimetable, task

from timeweave.airflow.hooks.timeweave import utc_naive
from timeweave.airflow.operators.timeweave import TimeweaveBackfillOperator, TimeweaveStreamingOperator
from timeweave.jobs import example_pipeline as example

WORK = Path(
    os.environ.get("TIMEWEAVE_EXAMPLE_HOME")
    or Path(os.environ.get("AIRFLOW_HOME", "~/airflow")).expanduser() / "timeweave_example"
)
PATHS = example.ExamplePaths(WORK)
# The jobs need no metastore; leaving Hive out keeps embedded Derby to the dbt task (one JVM at a time).
JOB_SPARK_CONF = example.spark_conf(PATHS, hive=False)

with DAG(
    dag_id="timeweave_example",
    description="dbt, streaming and sliced backfill of one event-time temporal join, checked to agree",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    end_date=pendulum.datetime(2026, 1, 3, tz="UTC"),  # the sample data covers two days
    catchup=True,
    # One run at a time: runs share the streaming checkpoint, and each run's stream resumes the last.
    max_active_runs=1,
    tags=["timeweave", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def land(data_interval_start=None, data_interval_end=None) -> list[str]:  # Airflow passes the interval
        """Copy the interval's sample files into the landing directory."""
        return [str(p) for p in example.land(PATHS, data_interval_start, data_interval_end)]

    @task
    def dbt_build() -> dict:
        """dbt deps + build of the example project over everything landed so far."""
        example.spark_session(PATHS, hive=True)  # dbt-spark's session method reuses this session
        return example.run_dbt(PATHS)

    stream = TimeweaveStreamingOperator(
        task_id="stream",
        config=example.job_config(PATHS, "streaming"),
        heartbeat="{{ data_interval_end }}",
        spark_conf=JOB_SPARK_CONF,
    )

    backfill = TimeweaveBackfillOperator(
        task_id="backfill",
        config=example.job_config(PATHS, "backfill"),
        start="{{ data_interval_start }}",
        end="{{ data_interval_end }}",
        slices=3,
        spark_conf=JOB_SPARK_CONF,
    )

    @task
    def check(data_interval_start=None, data_interval_end=None) -> list[dict]:
        """The interval's rows of the three outputs: same count and checksum, or the run fails."""
        spark = example.spark_session(PATHS, hive=False)
        start, end = utc_naive(data_interval_start, "start"), utc_naive(data_interval_end, "end")
        summaries = example.compare_outputs(spark, PATHS, start, end)
        print(example.format_table(summaries))
        if not example.agree(summaries):
            raise ValueError(f"outputs differ for [{start}, {end}):\n{example.format_table(summaries)}")
        return [{"door": s.door, "rows": s.rows, "checksum": s.checksum} for s in summaries]

    landed = land()
    built = dbt_build()
    landed >> [built, stream, backfill]
    [built, stream, backfill] >> check()


if __name__ == "__main__":
    import sys

    day = pendulum.parse(sys.argv[1], tz="UTC") if len(sys.argv) > 1 else pendulum.datetime(2026, 1, 2, tz="UTC")
    run = dag.test(logical_date=day)
    sys.exit(0 if run.state == "success" else f"timeweave_example run for {day} ended {run.state}")
