"""OpenLineage: the operators name their input and output datasets; a real run emits them (file transport)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.airflow.common import CONFIG
from tests.airflow.conftest import REPO
from timeweave.airflow.operators.timeweave import TimeweaveBackfillOperator, TimeweaveStreamingOperator

MATCH = {
    "match_recognize": {"clause": "PARTITION BY s ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS A.p > 0"},
    "input": {"path": "s3a://lake/ticks", "format": "json", "schema": "s STRING, t TIMESTAMP, p DOUBLE"},
    "output": {"path": "s3a://lake/runs"},
    "checkpoint": "s3a://lake/chk/runs",
}


def _names(datasets) -> list[tuple[str, str]]:
    return [(d.namespace, d.name) for d in datasets]


def test_temporal_join_lineage_names_both_inputs_and_every_output():
    op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG)
    lineage = op.get_openlineage_facets_on_start()
    cwd = os.getcwd()
    assert _names(lineage.inputs) == [("file", f"{cwd}/data/orders"), ("file", f"{cwd}/data/rates")]
    assert _names(lineage.outputs) == [("file", f"{cwd}/out/enriched"), ("file", f"{cwd}/out/enriched_late"),
                                       ("file", f"{cwd}/out/enriched_dead_letter")]
    assert all(not d.outputFacets for d in lineage.outputs)  # no counts before the job ran


def test_lineage_on_complete_carries_the_row_counts():
    op = TimeweaveBackfillOperator(task_id="backfill", config={**CONFIG, "output": {
        "path": "s3a://lake/enriched", "late_path": "s3a://lake/late", "dead_letter_path": "hdfs://nn:8020/dlq"}})
    op._metrics = {"rows_out": 12, "late": 1, "dead_letter": 2}
    lineage = op.get_openlineage_facets_on_complete(None)
    assert _names(lineage.outputs) == [("s3://lake", "enriched"), ("s3://lake", "late"), ("hdfs://nn:8020", "/dlq")]
    assert [d.outputFacets["outputStatistics"].rowCount for d in lineage.outputs] == [12, 1, 2]


def test_match_recognize_lineage_names_its_one_input():
    lineage = TimeweaveStreamingOperator(task_id="match", config=MATCH).get_openlineage_facets_on_start()
    assert _names(lineage.inputs) == [("s3://lake", "ticks")]
    assert _names(lineage.outputs)[0] == ("s3://lake", "runs")


DAG_FILE = """
    import pendulum
    from airflow.sdk import DAG

    from timeweave.airflow.operators.timeweave import TimeweaveBackfillOperator, TimeweaveStreamingOperator

    CONFIG = {config}
    with DAG("tw_lineage", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
        TimeweaveBackfillOperator(task_id="backfill", config=CONFIG, launcher="spark-submit", slices=2,
                                  start="2026-01-01", end="2026-01-02")
        TimeweaveStreamingOperator(task_id="stream", config=CONFIG, launcher="spark-submit", deferrable=True,
                                   poll_interval=0.2, metrics_file={metrics!r})
"""


@pytest.mark.slow
def test_a_dag_run_emits_the_datasets_through_openlineages_file_transport(airflow_home, fake_spark, tmp_path):
    """``airflow dags test`` on a DAG of both operators (the streaming one deferred), spark-submit faked, events
    written by OpenLineage's file transport: each task's START and COMPLETE events name the job's datasets."""
    dags = tmp_path / "dags"
    dags.mkdir()
    config = {**CONFIG, "left": {**CONFIG["left"], "path": str(tmp_path / "orders")},
              "right": {**CONFIG["right"], "path": str(tmp_path / "rates")}, "output": {"path": str(tmp_path / "out")}}
    (dags / "tw_lineage.py").write_text(textwrap.dedent(DAG_FILE).format(
        config=repr(config), metrics=str(tmp_path / "stream-status.json")))
    events_file = tmp_path / "openlineage.jsonl"
    env = {**os.environ, "AIRFLOW__CORE__DAGS_FOLDER": str(dags), "FAKE_SPARK_STDOUT": "0",
           "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(events_file),
                                                          "append": True}),
           "AIRFLOW__OPENLINEAGE__NAMESPACE": "timeweave-test"}
    done = subprocess.run([str(Path(sys.executable).parent / "airflow"), "dags", "test", "tw_lineage", "2026-01-02"],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    events = [json.loads(line) for line in events_file.read_text().splitlines() if line.strip()]
    by_task = {}
    for event in events:
        job = event["job"]["name"]
        if job.startswith("tw_lineage."):
            by_task.setdefault(job.split(".", 1)[1], {})[event["eventType"]] = event
    inputs = [("file", str(tmp_path / "orders")), ("file", str(tmp_path / "rates"))]
    outputs = [("file", str(tmp_path / name)) for name in ("out", "out_late", "out_dead_letter")]
    for task in ("backfill", "stream"):
        assert {"START", "COMPLETE"} <= set(by_task[task]), (task, sorted(by_task[task]))
        for kind in ("START", "COMPLETE"):
            event = by_task[task][kind]
            assert [(d["namespace"], d["name"]) for d in event["inputs"]] == inputs, (task, kind)
            assert [(d["namespace"], d["name"]) for d in event["outputs"]] == outputs, (task, kind)
        main = by_task[task]["COMPLETE"]["outputs"][0]
        assert main["outputFacets"]["outputStatistics"]["rowCount"] == 7  # the fake job's rows_out, after the run
        assert "outputFacets" not in by_task[task]["START"]["outputs"][0] or not by_task[task]["START"]["outputs"][0][
            "outputFacets"]
