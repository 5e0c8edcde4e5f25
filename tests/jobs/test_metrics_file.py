"""The job's status file (``timeweave-job --metrics-file``): whole replacements, running / succeeded / failed."""

from __future__ import annotations

import json
import threading
from datetime import datetime
from pathlib import Path

import pytest

from timeweave.jobs import cli
from timeweave.jobs import metrics_file as mf


def test_a_write_replaces_the_file_whole_and_leaves_no_staging_file(tmp_path: Path) -> None:
    target = tmp_path / "runs" / "job.json"
    mf.write_status(str(target), mf.status_document("streaming", "running", {"batches": 1}))
    mf.write_status(f"file://{target}", mf.status_document("streaming", "succeeded", {"rows_out": 4}))
    document = json.loads(target.read_text())
    assert (document["format"], document["state"], document["metrics"]) == (mf.FORMAT, "succeeded", {"rows_out": 4})
    assert sorted(p.name for p in target.parent.iterdir()) == ["job.json"]


def test_readers_never_see_a_partial_file(tmp_path: Path) -> None:
    """A reader racing many writers always parses a whole document (the rename is atomic)."""
    target = tmp_path / "job.json"
    mf.write_status(str(target), mf.status_document("streaming", "running"))
    big = {f"k{i}": "x" * 200 for i in range(200)}
    done = threading.Event()

    def writer() -> None:
        for batch in range(200):
            mf.write_status(str(target), mf.status_document("streaming", "running", {**big, "batches": batch}))
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    while not done.is_set():
        json.loads(target.read_text())  # raises on a torn read
        reads += 1
    thread.join()
    assert reads > 0


def test_a_bad_state_and_a_uri_without_spark_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'state'"):
        mf.status_document("streaming", "done")
    with pytest.raises(ValueError, match="hdfs://"):
        mf.write_status("hdfs://nn/runs/job.json", mf.status_document("streaming", "running"))


def test_a_config_error_is_the_jobs_final_state(tmp_path: Path, capsys) -> None:
    """The scheduler watching the file learns why the job never started, without a JVM."""
    target = tmp_path / "m.json"
    code = cli.main(["streaming", "--config", '{"output": {"path": "out"}}', "--metrics-file", str(target)])
    assert code == cli.EXIT_USAGE
    document = json.loads(target.read_text())
    assert document["state"] == "failed" and document["kind"] == "streaming"
    assert document["error"] == capsys.readouterr().err.removeprefix("timeweave-job: error: ").strip()


def test_the_cli_parses_metrics_file_for_both_jobs() -> None:
    assert cli.parser().parse_args(["backfill", "--config", "j", "--start", "a", "--end", "b",
                                    "--metrics-file", "s3a://b/m.json"]).metrics_file == "s3a://b/m.json"
    assert cli.parser().parse_args(["streaming", "--config", "j"]).metrics_file is None


@pytest.mark.slow
@pytest.mark.spark
def test_a_streaming_job_reports_every_micro_batch_then_its_metrics(spark, tmp_path: Path, monkeypatch) -> None:
    from timeweave.jobs import example_pipeline as ep

    paths = ep.ExamplePaths(tmp_path)
    ep.land(paths, datetime(2026, 1, 1), datetime(2026, 1, 3))
    config = ep.job_config(paths, "streaming")
    config["left"]["options"] = {**config["left"].get("options", {}), "maxFilesPerTrigger": "1"}
    written: list[dict] = []
    real_write = mf.write_status

    def record(target: str, document: dict, spark=None) -> None:
        written.append(document)
        real_write(target, document, spark)

    monkeypatch.setattr(mf, "write_status", record)
    target = tmp_path / "status.json"
    assert cli.main(["streaming", "--config", json.dumps(config), "--flush", "--metrics-file", str(target)]) == 0
    states = [d["state"] for d in written]
    final = json.loads(target.read_text())
    assert states[0] == "running" and states[-1] == "succeeded" and set(states[1:-1]) == {"running"}
    per_batch = [d["metrics"]["batches"] for d in written[1:-1]]
    assert per_batch == list(range(1, final["metrics"]["batches"] + 1))  # one update per micro-batch, in order
    assert final["metrics"]["rows_out"] == 17 and final["metrics"]["rows_out"] == written[-2]["metrics"]["rows_out"]


@pytest.mark.spark
@pytest.mark.parametrize("atomic_put", [False, True])
def test_a_hadoop_uri_is_written_whole_through_spark(spark, tmp_path: Path, atomic_put: bool) -> None:
    """HDFS-like stores: a hidden sibling renamed over the target; object stores: one create of the target."""
    target = tmp_path / "runs" / "job.json"
    for state in ("running", "succeeded"):  # the second write replaces the first
        text = json.dumps(mf.status_document("backfill", state, {"slices": 2}))
        mf._write_hadoop(spark, f"file://{target}", text, atomic_put=atomic_put)
    assert json.loads(target.read_text())["state"] == "succeeded"
    assert [p.name for p in target.parent.iterdir() if not p.name.endswith(".crc")] == ["job.json"]
