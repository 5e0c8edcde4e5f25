"""TimeweaveHook: spark-submit argument lists, connection handling, metrics parsing, kill."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from airflow_plugin.hooks.timeweave import (
    TimeweaveHook,
    TimeweaveJobError,
    default_application,
    job_cli_arguments,
    parse_metrics,
)
from tests.airflow.common import CONFIG, FAKE_APP

CLUSTER_CONN = {
    "conn_type": "spark", "host": "spark://master.example", "port": 7077,
    "extra": {"queue": "etl", "spark-binary": "spark3-submit", "deploy-mode": "client"},
}


@pytest.fixture
def spark_conn(monkeypatch):
    def define(conn_id: str, conn: dict) -> str:
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
        return conn_id

    return define


def _fake_hook(monkeypatch, mode: str) -> TimeweaveHook:
    """A spark-submit hook whose command runs the fake app instead of spark-submit."""
    hook = TimeweaveHook(launcher="spark-submit")

    def command(kind, config_path, **job_args):
        return [sys.executable, str(FAKE_APP), mode, *job_cli_arguments(kind, config_path, job_args)]

    monkeypatch.setattr(hook, "spark_submit_command", command)
    return hook


def test_spark_submit_command_from_connection(spark_conn):
    hook = TimeweaveHook(
        spark_conn("tw_cluster", CLUSTER_CONN), launcher="spark-submit", name="tw-job",
        spark_conf={"spark.sql.shuffle.partitions": 8, "spark.executor.memory": "2g"},
        py_files=["deps.zip"], application="/opt/app/job.py",
    )
    command = hook.spark_submit_command(
        "backfill", "/tmp/job.json", start="2026-01-01T00:00:00+00:00", end="2026-01-02T00:00:00+00:00", slices=3
    )
    assert command == [
        "spark3-submit", "--master", "spark://master.example:7077", "--deploy-mode", "client",
        "--name", "tw-job", "--queue", "etl",
        "--conf", "spark.executor.memory=2g", "--conf", "spark.sql.shuffle.partitions=8",
        "--py-files", "deps.zip", "/opt/app/job.py",
        "backfill", "--config", "/tmp/job.json",
        "--start", "2026-01-01T00:00:00", "--end", "2026-01-02T00:00:00", "--slices", "3",
    ]


def test_spark_submit_command_without_connection_uses_spark_master_and_packaged_launcher():
    hook = TimeweaveHook(launcher="spark-submit", spark_conf={"spark.master": "local[2]"})
    command = hook.spark_submit_command("streaming", "job.json", flush=True)
    assert Path(command[0]).name == "spark-submit"  # on PATH, or pyspark's next to the interpreter
    assert command[1:5] == ["--master", "local[2]", "--deploy-mode", "client"]
    assert "spark.master=local[2]" not in command  # --master is the single source of the master
    assert command[-5:] == [default_application(), "streaming", "--config", "job.json", "--flush"]
    assert Path(default_application()).name == "timeweave_job.py"
    # Alone in its directory: spark-submit puts that directory first on sys.path.
    assert sorted(p.name for p in Path(default_application()).parent.glob("*.py")) == ["__init__.py", "timeweave_job.py"]


def test_backfill_times_are_converted_to_utc_not_relabelled():
    args = job_cli_arguments("backfill", "j.json", {"start": "2026-01-01T02:00:00+02:00",
                                                    "end": "2026-01-01 12:00:00+00:00", "slices": "2"})
    assert args[3:] == ["--start", "2026-01-01T00:00:00", "--end", "2026-01-01T12:00:00", "--slices", "2"]


def test_streaming_cli_arguments():
    args = job_cli_arguments("streaming", "j.json", {"heartbeat": "2026-01-02T00:00:00+00:00", "until_idle": False,
                                                     "timeout_seconds": 90, "flush": False})
    assert args == ["streaming", "--config", "j.json", "--heartbeat", "2026-01-02T00:00:00", "--timeout", "90.0",
                    "--no-until-idle"]
    assert job_cli_arguments("backfill", "j.json", {"start": "2026-01-01", "end": "2026-01-02", "slices": 4,
                                                    "only": ["1", 3]})[-3:] == ["--only", "1", "3"]


def test_hook_and_job_cli_agree_on_the_arguments():
    """Every argument the hook builds is one the job CLI parses, to the same values."""
    from runtime.jobs.cli import parser

    args = job_cli_arguments("streaming", "j.json", {"heartbeat": "2026-01-02", "until_idle": False,
                                                     "timeout_seconds": 90})
    parsed = parser().parse_args(args)
    assert (parsed.heartbeat, parsed.timeout, parsed.no_until_idle, parsed.flush) == (
        "2026-01-02T00:00:00", 90.0, True, False)
    parsed = parser().parse_args(job_cli_arguments("backfill", "j.json", {"start": "2026-01-01", "end": "2026-01-02",
                                                                          "slices": 4, "only": [2]}))
    assert (parsed.start, parsed.end, parsed.slices, parsed.only) == ("2026-01-01T00:00:00", "2026-01-02T00:00:00", 4, [2])


@pytest.mark.parametrize(
    ("extra", "argument"),
    [({"deploy-mode": "cluster"}, "deploy-mode"), ({"spark-binary": "/bin/sh"}, "spark-binary")],
)
def test_connection_extras_are_checked(spark_conn, extra, argument):
    conn_id = spark_conn("tw_bad", {**CLUSTER_CONN, "extra": extra})
    with pytest.raises(ValueError, match=argument):
        TimeweaveHook(conn_id, launcher="spark-submit").spark_submit_command("streaming", "j.json")


@pytest.mark.parametrize(
    ("kind", "job_args", "argument"),
    [
        ("streaming", {"slices": 2}, "'slices'"),
        ("streaming", {"flush": True, "heartbeat": "2026-01-01"}, "'heartbeat'"),
        ("backfill", {"start": "2026-01-01", "end": "2026-01-02"}, "'slices'"),
        ("backfill", {"start": "2026-01-01", "end": "2026-01-02", "slices": 0}, "'slices'"),
        ("batch", {}, "'kind'"),
    ],
)
def test_job_arguments_are_checked_before_anything_runs(kind, job_args, argument):
    with pytest.raises(ValueError, match=argument):
        TimeweaveHook(launcher="spark-submit").run(kind, CONFIG, **job_args)


def test_invalid_config_is_rejected_before_submit():
    with pytest.raises(ValueError, match="output"):
        TimeweaveHook(launcher="spark-submit").run("streaming", {k: v for k, v in CONFIG.items() if k != "output"})


def test_unknown_launcher():
    with pytest.raises(ValueError, match="'launcher'"):
        TimeweaveHook(launcher="yarn")


def test_parse_metrics_takes_the_last_metrics_line():
    lines = ["TIMEWEAVE_METRICS {\"rows_out\": 1}", "noise", "  TIMEWEAVE_METRICS {\"rows_out\": 2}  "]
    assert parse_metrics(lines) == {"rows_out": 2}
    with pytest.raises(TimeweaveJobError, match="no 'TIMEWEAVE_METRICS"):
        parse_metrics(["INFO done"])
    with pytest.raises(TimeweaveJobError, match="JSON object"):
        parse_metrics(["TIMEWEAVE_METRICS [1, 2]"])


def test_submit_ships_the_config_and_returns_the_metrics(monkeypatch, tmp_path):
    config_file = tmp_path / "job.json"
    config_file.write_text(json.dumps(CONFIG))
    metrics = _fake_hook(monkeypatch, "ok").run(
        "backfill", config_file, start="2026-01-01T00:00:00", end="2026-01-02T00:00:00", slices=3
    )
    assert metrics == {
        "kind": "backfill", "output": "out/enriched", "rows_out": 7,
        "args": ["--start", "2026-01-01T00:00:00", "--end", "2026-01-02T00:00:00", "--slices", "3"],
    }


@pytest.mark.parametrize(("mode", "message"), [("fail", "(?s)exited with code 3.*ERROR boom"), ("silent", "no 'TIMEWEAVE")])
def test_submit_failures_are_reported(monkeypatch, mode, message):
    with pytest.raises(TimeweaveJobError, match=message):
        _fake_hook(monkeypatch, mode).run("streaming", CONFIG)


def test_kill_stops_the_spark_submit_process(monkeypatch):
    hook = _fake_hook(monkeypatch, "sleep")
    outcome: dict[str, BaseException] = {}

    def run() -> None:
        try:
            hook.run("streaming", CONFIG)
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 30
    while hook._process is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process = hook._process
    assert process is not None, "the fake spark-submit never started"
    time.sleep(0.3)  # let it reach its sleep
    started = time.monotonic()
    hook.kill()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert time.monotonic() - started < 10
    assert process.poll() is not None
    assert isinstance(outcome.get("error"), TimeweaveJobError)
    assert "killed" in str(outcome["error"])


def test_kill_without_a_job_is_harmless():
    TimeweaveHook().kill()
