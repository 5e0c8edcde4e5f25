"""The spark-submit launcher for real: pyspark's spark-submit runs the packaged launcher on local Spark.

This necessarily starts a second JVM (the submitted driver); it runs one small backfill.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from timeweave.airflow.hooks.timeweave import TimeweaveHook
from timeweave.jobs import example_pipeline as ep


@pytest.mark.slow
def test_backfill_through_spark_submit_reports_its_metrics(tmp_path):
    paths = ep.ExamplePaths(tmp_path)
    ep.land(paths, datetime(2026, 1, 1), datetime(2026, 1, 3))
    conf = {k: v for k, v in ep.spark_conf(paths, hive=False).items() if k != "spark.master"}
    hook = TimeweaveHook(launcher="spark-submit", spark_conf={**conf, "spark.master": "local[1]"})
    metrics = hook.run(
        "backfill", ep.job_config(paths, "backfill"), start="2026-01-01T00:00:00+00:00",
        end="2026-01-03T00:00:00+00:00", slices=2,
    )
    assert metrics["kind"] == "backfill"
    assert metrics["rows_out"] == 17 and metrics["dead_letter"] == 0
    assert len(list(paths.backfill_output.glob("slice=*"))) == 2
