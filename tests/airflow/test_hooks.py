"""TimeweaveHook on the Spark provider's SparkSubmitHook: options, connection, metrics file, cluster mode, kill.

spark-submit (and yarn) are the fake of ``fake_spark_submit.py`` (the ``fake_spark`` fixture): the real
command lines the provider builds run, with no JVM.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from tests.airflow.common import CONFIG
from tests.airflow.fake_spark_submit import DRIVER_ID, YARN_APP
from timeweave.airflow.hooks.timeweave import (
    TimeweaveHook,
    TimeweaveJobError,
    default_application,
    job_cli_arguments,
    parse_metrics,
)

CLUSTER_CONN = {
    "conn_type": "timeweave", "host": "spark://master.example", "port": 7077,
    "extra": {"queue": "etl", "spark-binary": "spark3-submit", "deploy-mode": "client"},
}
BACKFILL = {"start": "2026-01-01T00:00:00+00:00", "end": "2026-01-02T00:00:00+00:00", "slices": 3}


@pytest.fixture
def spark_conn(monkeypatch):
    def define(conn_id: str, conn: dict) -> str:
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
        return conn_id

    return define


def test_the_hook_is_the_spark_providers_hook():
    assert issubclass(TimeweaveHook, SparkSubmitHook)
    assert (TimeweaveHook.conn_type, TimeweaveHook.default_conn_name) == ("timeweave", "timeweave_default")


def test_spark_submit_command_from_connection(spark_conn):
    hook = TimeweaveHook(
        spark_conn("tw_cluster", CLUSTER_CONN), launcher="spark-submit", name="tw-job",
        spark_conf={"spark.sql.shuffle.partitions": 8, "spark.executor.memory": "2g"},
        py_files=["deps.zip"], application="/opt/app/job.py",
    )
    command = hook.spark_submit_command("backfill", "/tmp/job.json", "/runs/m.json", **BACKFILL)
    assert command == [
        "spark3-submit", "--master", "spark://master.example:7077",
        "--conf", "spark.executor.memory=2g", "--conf", "spark.sql.shuffle.partitions=8",
        "--py-files", "deps.zip", "--name", "tw-job", "--queue", "etl", "--deploy-mode", "client",
        "/opt/app/job.py",
        "backfill", "--config", "/tmp/job.json",
        "--start", "2026-01-01T00:00:00", "--end", "2026-01-02T00:00:00", "--slices", "3",
        "--metrics-file", "/runs/m.json",
    ]


def test_every_spark_submit_option_passes_through(spark_conn, tmp_path):
    """The options the former hook could not pass: jars, packages, files, resources, keytab / principal, ..."""
    keytab = tmp_path / "etl.keytab"
    keytab.write_bytes(b"k")
    hook = TimeweaveHook(
        spark_conn("tw_yarn", {"conn_type": "timeweave", "host": "yarn", "extra": {"deploy-mode": "cluster"}}),
        launcher="spark-submit", name="tw", files=["lookup.csv", "rules.json"], archives="env.tar.gz#env",
        jars=["a.jar", "b.jar"], packages="org.apache.hadoop:hadoop-aws:3.4.1", exclude_packages="x:y",
        repositories="https://repo.example/maven", driver_class_path="/opt/extra", num_executors=4,
        total_executor_cores=16, executor_cores=4, executor_memory="8g", driver_memory="2g",
        keytab=str(keytab), principal="etl@EXAMPLE.COM", proxy_user="analyst", properties_file="spark.conf",
        yarn_queue="nightly", verbose=True,
    )
    command = hook.spark_submit_command("streaming", '{"x": 1}', "hdfs:///runs/m.json", flush=True)
    pairs = {command[i]: command[i + 1] for i in range(len(command) - 1) if command[i].startswith("--")}
    assert pairs["--master"] == "yarn" and pairs["--deploy-mode"] == "cluster" and pairs["--queue"] == "nightly"
    assert pairs["--files"] == "lookup.csv,rules.json" and pairs["--archives"] == "env.tar.gz#env"
    assert pairs["--jars"] == "a.jar,b.jar" and pairs["--packages"] == "org.apache.hadoop:hadoop-aws:3.4.1"
    assert pairs["--exclude-packages"] == "x:y" and pairs["--repositories"] == "https://repo.example/maven"
    assert pairs["--driver-class-path"] == "/opt/extra"
    assert (pairs["--num-executors"], pairs["--total-executor-cores"], pairs["--executor-cores"]) == ("4", "16", "4")
    assert (pairs["--executor-memory"], pairs["--driver-memory"]) == ("8g", "2g")
    assert (pairs["--keytab"], pairs["--principal"], pairs["--proxy-user"]) == (str(keytab), "etl@EXAMPLE.COM", "analyst")
    assert pairs["--properties-file"] == "spark.conf" and "--verbose" in command
    assert command[command.index(default_application()) + 1:] == [
        "streaming", "--config", '{"x": 1}', "--flush", "--metrics-file", "hdfs:///runs/m.json"]


def test_spark_submit_command_without_connection_uses_spark_master_and_packaged_launcher():
    hook = TimeweaveHook(launcher="spark-submit", spark_conf={"spark.master": "local[2]"})
    command = hook.spark_submit_command("streaming", "job.json", flush=True)
    assert Path(command[0]).name == "spark-submit"  # on PATH, or pyspark's next to the interpreter
    assert command[1:3] == ["--master", "local[2]"]
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
    from timeweave.jobs.cli import parser

    hook = TimeweaveHook(launcher="spark-submit")
    command = hook.spark_submit_command("streaming", "j.json", "s3a://runs/m.json", heartbeat="2026-01-02",
                                        until_idle=False, timeout_seconds=90)
    parsed = parser().parse_args(command[command.index(default_application()) + 1:])
    assert (parsed.heartbeat, parsed.timeout, parsed.no_until_idle, parsed.flush, parsed.metrics_file) == (
        "2026-01-02T00:00:00", 90.0, True, False, "s3a://runs/m.json")
    command = hook.spark_submit_command("backfill", "j.json", "m.json", start="2026-01-01", end="2026-01-02",
                                        slices=4, only=[2], slices_per_job=1)
    parsed = parser().parse_args(command[command.index(default_application()) + 1:])
    assert (parsed.start, parsed.end, parsed.slices, parsed.only, parsed.slices_per_job, parsed.metrics_file) == (
        "2026-01-01T00:00:00", "2026-01-02T00:00:00", 4, [2], 1, "m.json")


@pytest.mark.parametrize(
    ("extra", "argument"),
    [({"deploy-mode": "sideways"}, "deploy-mode"), ({"spark-binary": "/bin/sh"}, "spark-binary")],
)
def test_connection_extras_are_checked(spark_conn, extra, argument):
    conn_id = spark_conn("tw_bad", {**CLUSTER_CONN, "extra": extra})
    with pytest.raises(ValueError, match=argument):
        TimeweaveHook(conn_id, launcher="spark-submit")


def test_an_unknown_connection_is_an_error_not_a_silent_yarn_default():
    from airflow.sdk.exceptions import AirflowException

    with pytest.raises(AirflowException, match="tw_missing"):
        TimeweaveHook("tw_missing", launcher="spark-submit")


def test_arguments_the_hook_owns_are_refused():
    with pytest.raises(ValueError, match="'application_args'"):
        TimeweaveHook(launcher="spark-submit", application_args=["x"])
    with pytest.raises(ValueError, match="'deploy_mode'"):
        TimeweaveHook(launcher="spark-submit", deploy_mode="detached")


def test_cluster_mode_needs_a_metrics_file_both_sides_reach(fake_spark, spark_conn):
    conn = spark_conn("tw_yarn_cluster", {"conn_type": "timeweave", "host": "yarn", "extra": {"deploy-mode": "cluster"}})
    with pytest.raises(ValueError, match="'metrics_file'"):
        TimeweaveHook(conn, launcher="spark-submit").run("streaming", CONFIG)
    assert fake_spark() == []  # refused before anything was submitted


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


def test_submit_ships_the_config_and_reads_the_metrics_file(fake_spark, monkeypatch, tmp_path):
    config_file = tmp_path / "job.json"
    config_file.write_text(json.dumps(CONFIG))
    monkeypatch.setenv("FAKE_SPARK_STDOUT", "0")  # no metrics line: the file is the only source
    monkeypatch.setenv("FAKE_ENV_MARK", "from-the-worker")
    metrics = TimeweaveHook(launcher="spark-submit").run("backfill", config_file, **BACKFILL)
    assert metrics == {
        "kind": "backfill", "output": "out/enriched", "rows_out": 7, "config_inline": False,
        "env_mark": "from-the-worker",
        "args": ["--start", "2026-01-01T00:00:00", "--end", "2026-01-02T00:00:00", "--slices", "3",
                 "--metrics-file", metrics["args"][-1]],
    }
    ((binary, argv),) = fake_spark()
    assert binary == "spark-submit" and argv[:2] == ["--master", "local[*]"]


def test_stdout_metrics_are_the_fallback_in_client_mode(fake_spark, monkeypatch):
    monkeypatch.setenv("FAKE_SPARK_MODE", "stdout")
    assert TimeweaveHook(launcher="spark-submit").run("streaming", CONFIG)["rows_out"] == 7


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("fail", "the streaming job failed: column 'currency' not found"),
        ("crash", "(?s)Error code is: 3.*Running Spark version"),
        ("silent", "metrics file .* is absent, and no 'TIMEWEAVE_METRICS"),
    ],
)
def test_submit_failures_are_reported(fake_spark, monkeypatch, mode, message):
    monkeypatch.setenv("FAKE_SPARK_MODE", mode)
    with pytest.raises(TimeweaveJobError, match=message):
        TimeweaveHook(launcher="spark-submit").run("streaming", CONFIG)


def test_yarn_cluster_mode_reads_the_metrics_file_and_ships_the_config_inline(fake_spark, spark_conn, monkeypatch,
                                                                              tmp_path):
    """The driver's stdout never reaches a cluster-mode submitter: the metrics come from the status file."""
    monkeypatch.setenv("FAKE_SPARK_STDOUT", "0")
    conn = spark_conn("tw_yarn", {"conn_type": "timeweave", "host": "yarn",
                                  "extra": {"deploy-mode": "cluster", "metrics-dir": str(tmp_path / "runs")}})
    hook = TimeweaveHook(conn, launcher="spark-submit", name="orders")
    metrics = hook.run("streaming", CONFIG, flush=True)
    assert metrics["rows_out"] == 7 and metrics["config_inline"] is True  # no local file for a remote driver
    ((_, argv),) = fake_spark()
    assert argv[argv.index("--deploy-mode") + 1] == "cluster"
    metrics_file = argv[argv.index("--metrics-file") + 1]
    assert metrics_file.startswith(str(tmp_path / "runs" / "orders-")) and Path(metrics_file).is_file()
    assert hook._yarn_application_id == YARN_APP  # the provider's log processing found it


def test_standalone_cluster_mode_tracks_the_driver(fake_spark, spark_conn, tmp_path):
    conn = spark_conn("tw_standalone", {"conn_type": "timeweave", "host": "spark://master.example", "port": 7077,
                                        "extra": {"deploy-mode": "cluster"}})
    hook = TimeweaveHook(conn, launcher="spark-submit", metrics_file=str(tmp_path / "m.json"), status_poll_interval=0)
    assert hook.run("backfill", CONFIG, **BACKFILL)["rows_out"] == 7
    calls = fake_spark()
    assert ["--master", "spark://master.example:7077", "--status", DRIVER_ID] in [argv for _, argv in calls]


def _run_in_thread(hook: TimeweaveHook, *args, **kwargs) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["metrics"] = hook.run(*args, **kwargs)
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    return worker, outcome


def _wait_for(predicate, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert predicate(), "timed out"


def test_kill_stops_the_spark_submit_process_group(fake_spark, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_SPARK_MODE", "sleep")
    metrics_file = tmp_path / "m.json"
    hook = TimeweaveHook(launcher="spark-submit", metrics_file=str(metrics_file))
    worker, outcome = _run_in_thread(hook, "streaming", CONFIG)
    _wait_for(lambda: metrics_file.exists())  # the fake job is up (it wrote "running")
    process = hook._process
    started = time.monotonic()
    hook.kill()
    worker.join(timeout=30)
    assert not worker.is_alive() and time.monotonic() - started < 10
    assert process.poll() is not None
    assert isinstance(outcome.get("error"), TimeweaveJobError) and "killed" in str(outcome["error"])
    # SIGTERM first: the job stopped gracefully and said so in its status file
    assert json.loads(metrics_file.read_text())["metrics"]["stopped"] == "SIGTERM"


def test_kill_on_yarn_cluster_mode_kills_the_application(fake_spark, spark_conn, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_SPARK_MODE", "sleep")
    conn = spark_conn("tw_yarn_kill", {"conn_type": "timeweave", "host": "yarn", "extra": {"deploy-mode": "cluster"}})
    hook = TimeweaveHook(conn, launcher="spark-submit", metrics_file=str(tmp_path / "m.json"))
    worker, outcome = _run_in_thread(hook, "streaming", CONFIG)
    _wait_for(lambda: hook._yarn_application_id is not None)
    hook.kill()
    worker.join(timeout=30)
    assert not worker.is_alive() and "killed" in str(outcome.get("error"))
    assert ("yarn", ["application", "-kill", YARN_APP]) in fake_spark()


def test_kill_on_a_standalone_cluster_kills_the_driver(fake_spark, spark_conn, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_SPARK_MODE", "sleep")
    conn = spark_conn("tw_sa_kill", {"conn_type": "timeweave", "host": "spark://master.example", "port": 7077,
                                     "extra": {"deploy-mode": "cluster"}})
    hook = TimeweaveHook(conn, launcher="spark-submit", metrics_file=str(tmp_path / "m.json"))
    worker, outcome = _run_in_thread(hook, "streaming", CONFIG)
    _wait_for(lambda: hook._driver_id is not None)
    hook.kill()
    worker.join(timeout=30)
    assert not worker.is_alive() and "killed" in str(outcome.get("error"))
    assert ("spark-submit", ["--master", "spark://master.example:7077", "--kill", DRIVER_ID]) in fake_spark()


def test_kill_without_a_job_is_harmless():
    TimeweaveHook().kill()


def test_a_stale_status_file_from_an_earlier_try_is_not_taken_for_this_jobs(fake_spark, monkeypatch, tmp_path):
    """A retry reuses the metrics file path; a job that ends without writing must fail, not read as the old success."""
    metrics_file = tmp_path / "m.json"
    metrics_file.write_text(json.dumps({"state": "succeeded", "metrics": {"rows_out": 999}}))
    monkeypatch.setenv("FAKE_SPARK_MODE", "silent")
    with pytest.raises(TimeweaveJobError, match="is absent"):
        TimeweaveHook(launcher="spark-submit", metrics_file=str(metrics_file)).run("streaming", CONFIG)
    assert not metrics_file.exists()


def test_the_connection_form_shows_extra_for_metrics_dir():
    behaviour = TimeweaveHook.get_ui_field_behaviour()
    assert "extra" not in behaviour["hidden_fields"] and "metrics-dir" in behaviour["placeholders"]["extra"]
