"""The deferrable streaming operator and its trigger: start through spark-submit, defer, resume with the metrics.

spark-submit is the fake of ``fake_spark_submit.py``: it writes the status file with the job CLI's own writer.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import time

import pendulum
import pytest
from airflow.sdk.exceptions import TaskDeferred

from tests.airflow.common import CONFIG
from timeweave.airflow.hooks.timeweave import TimeweaveJobError
from timeweave.airflow.operators.timeweave import TimeweaveBackfillOperator, TimeweaveStreamingOperator
from timeweave.airflow.triggers.timeweave import TimeweaveJobTrigger
from timeweave.jobs.metrics_file import StatusWriter


def _context(run_id: str = "manual__2026-01-02") -> dict:
    return {"run_id": run_id, "data_interval_start": pendulum.datetime(2026, 1, 1, tz="UTC"),
            "data_interval_end": pendulum.datetime(2026, 1, 2, tz="UTC")}


def _fire(trigger: TimeweaveJobTrigger, timeout: float = 60.0) -> dict:
    """Run the trigger as the triggerer does (after a serialize / re-import round trip); its one event."""
    path, kwargs = trigger.serialize()
    module, _, name = path.rpartition(".")
    revived = getattr(importlib.import_module(module), name)(**json.loads(json.dumps(kwargs)))

    async def first() -> dict:
        async for event in revived.run():
            return event.payload
        raise AssertionError("the trigger ended without an event")

    return asyncio.run(asyncio.wait_for(first(), timeout))


def _defer(op, context=None) -> TaskDeferred:
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(context or _context())
    return deferred.value


def test_deferrable_needs_spark_submit():
    with pytest.raises(ValueError, match="'deferrable'"):
        TimeweaveStreamingOperator(task_id="stream", config=CONFIG, deferrable=True)


def test_the_trigger_is_importable_from_the_installed_package():
    trigger = TimeweaveJobTrigger(metrics_file="s3a://runs/m.json", kind="streaming", poll_interval=2)
    path, kwargs = trigger.serialize()
    assert path == "timeweave.airflow.triggers.timeweave.TimeweaveJobTrigger"
    assert kwargs["metrics_file"] == "s3a://runs/m.json" and kwargs["poll_interval"] == 2.0


def test_deferred_streaming_job_resumes_with_its_metrics(fake_spark, monkeypatch, tmp_path):
    """The task defers while the (client-mode) job runs on; the trigger sees its progress and its end."""
    monkeypatch.setenv("FAKE_SPARK_MODE", "progress")
    monkeypatch.setenv("FAKE_SPARK_STDOUT", "0")
    metrics_file = tmp_path / "runs" / "stream.json"
    op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG, launcher="spark-submit", deferrable=True,
                                    metrics_file=str(metrics_file), poll_interval=0.05, heartbeat="2026-01-02")
    started = time.monotonic()
    deferred = _defer(op)
    assert time.monotonic() - started < 10  # the task did not wait for the job
    assert deferred.method_name == "execute_complete"
    trigger = deferred.trigger
    assert isinstance(trigger, TimeweaveJobTrigger) and trigger.metrics_file == str(metrics_file)
    assert trigger.pid is not None and trigger.log_file  # the detached client-mode driver
    event = _fire(trigger)
    assert event["status"] == "success"
    metrics = op.execute_complete(_context(), event)
    assert metrics["rows_out"] == 7 and metrics["kind"] == "streaming"
    assert metrics["args"][:2] == ["--heartbeat", "2026-01-02T00:00:00"]
    assert metrics["config_inline"] is True  # no temp file has to outlive the deferred task
    json.dumps(metrics)  # the XCom value


def test_deferred_job_failure_fails_the_task_with_the_jobs_error(fake_spark, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_SPARK_MODE", "fail")
    op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG, launcher="spark-submit", deferrable=True,
                                    metrics_file=str(tmp_path / "m.json"), poll_interval=0.05)
    event = _fire(_defer(op).trigger)
    assert event["status"] == "error"
    with pytest.raises(TimeweaveJobError, match="column 'currency' not found in the left input"):
        op.execute_complete(_context(), event)


def test_a_driver_that_dies_without_a_final_status_fails_the_trigger(fake_spark, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_SPARK_MODE", "crash")
    op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG, launcher="spark-submit", deferrable=True,
                                    metrics_file=str(tmp_path / "m.json"), poll_interval=0.05, start_timeout=None)
    event = _fire(_defer(op).trigger)
    assert event["status"] == "error" and "exited without a final status" in event["error"]


def test_a_deferred_retry_does_not_resume_on_the_earlier_trys_status(fake_spark, monkeypatch, tmp_path):
    metrics_file = tmp_path / "m.json"
    metrics_file.write_text(json.dumps({"state": "succeeded", "metrics": {"rows_out": 999}}))
    monkeypatch.setenv("FAKE_SPARK_MODE", "crash")
    op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG, launcher="spark-submit", deferrable=True,
                                    metrics_file=str(metrics_file), poll_interval=0.05, start_timeout=None)
    event = _fire(_defer(op).trigger)
    assert event["status"] == "error" and "exited without a final status" in event["error"]


def test_a_job_that_never_writes_times_out(tmp_path):
    event = _fire(TimeweaveJobTrigger(str(tmp_path / "never.json"), poll_interval=0.02, start_timeout=0.2))
    assert event["status"] == "error" and "wrote no status" in event["error"]


def test_the_trigger_follows_a_running_job_until_its_final_state(tmp_path):
    """Per-batch 'running' updates do not fire the trigger; the final state does."""
    target = str(tmp_path / "m.json")
    writer = StatusWriter(target, "streaming")
    writer.running({"batches": 1})
    trigger = TimeweaveJobTrigger(target, poll_interval=0.02)

    async def scenario() -> dict:
        async def finish_later() -> None:
            await asyncio.sleep(0.3)
            writer.running({"batches": 2})
            await asyncio.sleep(0.3)
            writer.succeeded({"batches": 2, "rows_out": 5})

        task = asyncio.create_task(finish_later())
        async for event in trigger.run():
            await task
            return event.payload
        raise AssertionError

    event = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert event["status"] == "success" and event["metrics"] == {"batches": 2, "rows_out": 5}


def test_deferred_yarn_cluster_job_does_not_wait_for_the_application(fake_spark, spark_conn_env, monkeypatch,
                                                                   tmp_path):
    """Cluster mode: spark-submit is told not to wait (YARN's waitAppCompletion); the trigger does the waiting."""
    monkeypatch.setenv("FAKE_SPARK_STDOUT", "0")
    conn = spark_conn_env("tw_yarn_deferred", {"conn_type": "timeweave", "host": "yarn",
                                               "extra": {"deploy-mode": "cluster", "metrics-dir": str(tmp_path)}})
    op = TimeweaveBackfillOperator(task_id="backfill", config=CONFIG, launcher="spark-submit", conn_id=conn,
                                   deferrable=True, poll_interval=0.05, start="2026-01-01", end="2026-01-02", slices=2)
    trigger = _defer(op).trigger
    assert trigger.pid is None and trigger.metrics_file.startswith(str(tmp_path))
    ((_, argv),) = fake_spark()
    assert "spark.yarn.submit.waitAppCompletion=false" in argv
    assert op.execute_complete(_context(), _fire(trigger))["rows_out"] == 7


def test_deferred_kubernetes_cluster_job_is_not_failed_for_the_exit_code_it_cannot_print_yet(
        fake_spark, spark_conn_env, monkeypatch, tmp_path):
    """Submitted without waiting, spark-submit prints no driver exit code; the provider alone would call that a failure."""
    from airflow.providers.apache.spark.hooks import spark_submit

    monkeypatch.setattr(spark_submit, "kube_client", object(), raising=False)  # the cncf provider is not installed
    monkeypatch.setenv("FAKE_SPARK_STDOUT", "0")
    conn = spark_conn_env("tw_k8s", {"conn_type": "timeweave", "host": "k8s://https://k8s.example:6443",
                                     "extra": {"deploy-mode": "cluster", "namespace": "etl"}})
    op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG, launcher="spark-submit", conn_id=conn,
                                    deferrable=True, poll_interval=0.05, metrics_file=str(tmp_path / "m.json"),
                                    application="local:///opt/timeweave/timeweave_job.py")
    trigger = _defer(op).trigger
    ((_, argv),) = fake_spark()
    assert "spark.kubernetes.submission.waitAppCompletion=false" in argv
    assert "spark.kubernetes.namespace=etl" in argv and "local:///opt/timeweave/timeweave_job.py" in argv
    assert op._hook._kubernetes_driver_pod == "timeweave-job-0123abcd-driver"  # what on_kill would delete
    assert op.execute_complete(_context(), _fire(trigger))["rows_out"] == 7


@pytest.fixture
def spark_conn_env(monkeypatch):
    def define(conn_id: str, conn: dict) -> str:
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
        return conn_id

    return define


def test_detached_driver_outlives_the_task_process_group(fake_spark, monkeypatch, tmp_path):
    """The client-mode driver runs in a session of its own: killing the task's process group spares it."""
    monkeypatch.setenv("FAKE_SPARK_MODE", "sleep")
    monkeypatch.setenv("FAKE_SPARK_SLEEP", "5")
    op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG, launcher="spark-submit", deferrable=True,
                                    metrics_file=str(tmp_path / "m.json"))
    trigger = _defer(op).trigger
    try:
        assert os.getpgid(trigger.pid) != os.getpgid(0)
    finally:
        os.kill(trigger.pid, 15)
