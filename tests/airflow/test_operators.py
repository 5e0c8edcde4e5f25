"""Operators: template fields, what they hand the hook, XCom-ready metrics, on_kill."""

from __future__ import annotations

import itertools
import json
import threading
import time
from datetime import date, datetime
from typing import Any

import pendulum
import pytest
from airflow.sdk import DAG

from tests.airflow.common import CONFIG
from timeweave.airflow.hooks.timeweave import TimeweaveHook, TimeweaveJobError, job_cli_arguments
from timeweave.airflow.operators.timeweave import TimeweaveBackfillOperator, TimeweaveStreamingOperator

INTERVAL_START = pendulum.datetime(2026, 1, 1, tz="UTC")
INTERVAL_END = pendulum.datetime(2026, 1, 2, tz="UTC")
METRICS = {"rows_in_left": 5, "rows_in_right": 4, "rows_out": 5, "late": 0, "dead_letter": 1,
           "watermark": datetime(2026, 1, 1, 23, 0)}


def _context(**extra: Any) -> dict[str, Any]:
    return {"data_interval_start": INTERVAL_START, "data_interval_end": INTERVAL_END, "ds": "2026-01-01", **extra}


@pytest.fixture
def hook_calls(monkeypatch) -> list[tuple[str, dict, dict]]:
    """Record what the operators hand the in-process launcher; answer with METRICS."""
    calls: list[tuple[str, dict, dict]] = []

    def run_in_process(self, kind, config, **job_args):
        calls.append((kind, dict(config), job_args))
        return json.loads(json.dumps(METRICS, default=str))

    monkeypatch.setattr(TimeweaveHook, "run_in_process", run_in_process)
    return calls


def test_template_fields_are_explicit():
    assert TimeweaveStreamingOperator.template_fields == (
        "config", "checkpoint", "heartbeat", "processing_time", "conn_id", "spark_conf", "metrics_file"
    )
    assert TimeweaveBackfillOperator.template_fields == (
        "config", "start", "end", "slices", "only", "slices_per_job", "conn_id", "spark_conf", "metrics_file"
    )
    assert TimeweaveBackfillOperator.template_ext == (".json",)


def test_templates_render_into_the_config_and_the_interval():
    with DAG("tw_render", schedule=None, start_date=INTERVAL_START):
        op = TimeweaveBackfillOperator(
            task_id="backfill",
            config={**CONFIG, "output": {"path": "out/{{ ds }}/enriched"}},
            slices="{{ 1 + 2 }}",
            spark_conf={"spark.app.tag": "{{ ds }}"},
        )
    op.render_template_fields(_context())
    assert op.config["output"]["path"] == "out/2026-01-01/enriched"
    assert op.start == str(INTERVAL_START) and op.end == str(INTERVAL_END)
    assert op.slices == "3"
    assert op.spark_conf == {"spark.app.tag": "2026-01-01"}


def test_a_json_config_file_is_rendered_as_a_template(tmp_path):
    (tmp_path / "job.json").write_text(json.dumps({**CONFIG, "checkpoint": "chk/{{ ds }}"}))
    with DAG("tw_render_file", schedule=None, start_date=INTERVAL_START, template_searchpath=[str(tmp_path)]):
        op = TimeweaveStreamingOperator(task_id="stream", config="job.json")
    op.render_template_fields(_context())
    assert json.loads(op.config)["checkpoint"] == "chk/2026-01-01"


def test_a_metrics_file_is_rendered_as_text_never_read_as_a_template_file(tmp_path):
    """Its path ends in .json like a config file (template_ext), but it names the file the job will write."""
    with DAG("tw_render_metrics", schedule=None, start_date=INTERVAL_START, template_searchpath=[str(tmp_path)]):
        op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG, metrics_file="runs/{{ ds }}/status.json")
    op.resolve_template_files()
    op.render_template_fields(_context())
    assert op.metrics_file == "runs/2026-01-01/status.json"


def test_backfill_hands_the_data_interval_in_utc_and_returns_metrics(hook_calls):
    op = TimeweaveBackfillOperator(task_id="backfill", config=CONFIG, start=str(INTERVAL_START),
                                   end="2026-01-02T01:00:00+01:00", slices="3")
    metrics = op.execute(_context())
    assert metrics == {**METRICS, "watermark": "2026-01-01 23:00:00"}
    json.dumps(metrics)  # XCom-serializable as it is
    ((kind, config, job_args),) = hook_calls
    assert kind == "backfill" and config["output"] == CONFIG["output"]
    assert job_args == {"start": datetime(2026, 1, 1), "end": datetime(2026, 1, 2), "slices": 3}


def test_backfill_only_and_slices_per_job_are_templated_and_handed_on(hook_calls):
    with DAG("tw_only", schedule=None, start_date=INTERVAL_START, params={"redo": "[0, 2]", "per_job": 1}):
        op = TimeweaveBackfillOperator(task_id="backfill", config=CONFIG, slices=3, only="{{ params.redo }}",
                                       slices_per_job="{{ params.per_job }}")
        listed = TimeweaveBackfillOperator(task_id="listed", config=CONFIG, slices=4, only=["{{ 1 + 2 }}", 1])
    context = _context(params={"redo": "[0, 2]", "per_job": 1})
    op.render_template_fields(context)
    listed.render_template_fields(context)
    assert op.only == "[0, 2]" and op.slices_per_job == "1"
    op.execute(context)
    listed.execute(context)
    TimeweaveBackfillOperator(task_id="all", config=CONFIG, start=str(INTERVAL_START), end=str(INTERVAL_END), slices=2,
                              only="", slices_per_job=None).execute(context)
    (_, _, first), (_, _, second), (_, _, third) = hook_calls
    assert first == {"start": datetime(2026, 1, 1), "end": datetime(2026, 1, 2), "slices": 3, "only": [0, 2],
                     "slices_per_job": 1}
    assert second["only"] == [3, 1] and "slices_per_job" not in second
    assert "only" not in third and "slices_per_job" not in third  # every slice, the job's default grouping


def test_backfill_only_and_slices_per_job_reach_the_job_cli():
    args = job_cli_arguments("backfill", "job.json", {"start": "2026-01-01", "end": "2026-01-02", "slices": 4,
                                                      "only": [1, 3], "slices_per_job": "2"})
    assert args[-5:] == ["--only", "1", "3", "--slices-per-job", "2"]
    with pytest.raises(ValueError, match="'slices_per_job'"):
        job_cli_arguments("backfill", "job.json", {"start": "2026-01-01", "end": "2026-01-02", "slices": 4,
                                                   "slices_per_job": 0})


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [({"start": "2026-01-02", "end": "2026-01-01"}, "'end'"), ({"start": "yesterday"}, "'start'"),
     ({"slices": "three"}, "'slices'"), ({"only": "0,2"}, "slice index 2 is outside 0..1"),
     ({"only": ["first"]}, "'only'"), ({"slices_per_job": "two"}, "'slices_per_job'"),
     ({"slices_per_job": 0}, "'slices_per_job'")],
)
def test_backfill_arguments_are_checked(hook_calls, kwargs, argument):
    op = TimeweaveBackfillOperator(task_id="backfill", config=CONFIG, **{"start": "2026-01-01", "end": "2026-01-02",
                                                                         "slices": 2, **kwargs})
    with pytest.raises(ValueError, match=argument):
        op.execute(_context())
    assert hook_calls == []


def _with_time(time_type: str) -> dict[str, Any]:
    """CONFIG with both time columns of ``time_type`` (issue 17: bounds in the time column's own domain)."""
    return {**CONFIG,
            "left": {**CONFIG["left"], "schema": f"order_id STRING, currency STRING, order_time {time_type}"},
            "right": {**CONFIG["right"], "schema": f"op STRING, currency STRING, rate DOUBLE, update_time {time_type}"}}


def test_backfill_numeric_bounds_given_explicitly_reach_the_job(hook_calls):
    lsn = _with_time("BIGINT")
    with DAG("tw_lsn", schedule=None, start_date=INTERVAL_START, params={"lsn_from": 1000}):
        templated = TimeweaveBackfillOperator(task_id="templated", config=lsn, start="{{ params.lsn_from }}",
                                              end="{{ params.lsn_from + 2000 }}", slices=2)
    templated.render_template_fields(_context(params={"lsn_from": 1000}))
    templated.execute(_context())
    TimeweaveBackfillOperator(task_id="ints", config=lsn, start=0, end=3_000_000, slices=3).execute(_context())
    TimeweaveBackfillOperator(task_id="doubles", config=_with_time("DOUBLE"), start="0.5", end=10,
                              slices=2).execute(_context())
    (_, _, first), (_, _, second), (_, _, third) = hook_calls
    assert (first["start"], first["end"]) == (1000, 3000)
    assert (second["start"], second["end"]) == (0, 3_000_000)
    assert (third["start"], third["end"]) == (0.5, 10.0)


def test_backfill_of_dates_takes_the_daily_data_interval(hook_calls):
    with DAG("tw_dates", schedule=None, start_date=INTERVAL_START):
        op = TimeweaveBackfillOperator(task_id="daily", config=_with_time("DATE"), slices=1)
    op.render_template_fields(_context())  # the default {{ data_interval_start }} / {{ data_interval_end }}
    op.execute(_context())
    ((_, _, job_args),) = hook_calls
    assert (job_args["start"], job_args["end"]) == (date(2026, 1, 1), date(2026, 1, 2))


@pytest.mark.parametrize(("time_type", "kwargs", "message"), [
    ("BIGINT", {"start": "1.5", "end": "10"}, r"argument 'start': expected an integer.*got '1\.5'"),
    ("BIGINT", {}, r"argument 'start': expected an integer.*got '2026-01-01 00:00:00\+00:00'"),  # the data interval
    ("DATE", {"start": "2026-01-01T06:00:00+00:00", "end": "2026-01-02"}, r"argument 'start': expected a date"),
    ("TIMESTAMP", {"start": 0, "end": 10}, r"argument 'start': expected an ISO timestamp"),
])
def test_backfill_bounds_of_the_wrong_form_are_refused_before_the_job(hook_calls, time_type, kwargs, message):
    with DAG("tw_wrong_form", schedule=None, start_date=INTERVAL_START):
        op = TimeweaveBackfillOperator(task_id="backfill", config=_with_time(time_type), slices=1, **kwargs)
    op.render_template_fields(_context())
    with pytest.raises(ValueError, match=message):
        op.execute(_context())
    assert hook_calls == []


def test_numeric_and_date_bounds_reach_the_job_cli_as_its_own_text():
    args = job_cli_arguments("backfill", "job.json", {"start": 0, "end": 3_000_000, "slices": 3})
    assert args[3:7] == ["--start", "0", "--end", "3000000"]
    args = job_cli_arguments("backfill", "job.json", {"start": "1000", "end": 2.5, "slices": 1})
    assert args[3:7] == ["--start", "1000", "--end", "2.5"]  # text of another form: the job reads it in its domain
    args = job_cli_arguments("backfill", "job.json", {"start": date(2026, 1, 1), "end": date(2026, 2, 1), "slices": 1})
    assert args[3:7] == ["--start", "2026-01-01", "--end", "2026-02-01"]


def test_numeric_bounds_reach_spark_submit(fake_spark):
    op = TimeweaveBackfillOperator(task_id="backfill", config=_with_time("BIGINT"), launcher="spark-submit",
                                   start=1_706_659_200_000, end="1706662800000", slices=2)
    metrics = op.execute(_context())
    assert metrics["args"][:6] == ["--start", "1706659200000", "--end", "1706662800000", "--slices", "2"]


def test_streaming_overrides_checkpoint_trigger_and_heartbeat(hook_calls):
    with DAG("tw_stream", schedule=None, start_date=INTERVAL_START):
        op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG, checkpoint="chk/{{ ds }}",
                                        heartbeat="{{ data_interval_end }}")
    op.render_template_fields(_context())
    assert op.execute(_context())["rows_out"] == 5
    TimeweaveStreamingOperator(task_id="final", config=CONFIG, flush=True).execute(_context())
    TimeweaveStreamingOperator(task_id="forever", config=CONFIG, processing_time="30 seconds",
                               timeout_seconds=600).execute(_context())
    (_, first, first_args), (_, second, second_args), (_, third, third_args) = hook_calls
    assert first["checkpoint"] == "chk/2026-01-01"
    assert first_args == {"flush": False, "heartbeat": datetime(2026, 1, 2)}
    assert second["checkpoint"] == CONFIG["checkpoint"] and second_args == {"flush": True}
    assert third["trigger"] == {"processing_time": "30 seconds"}
    assert third_args == {"flush": False, "until_idle": False, "timeout_seconds": 600.0}


@pytest.mark.parametrize(
    ("config", "kwargs", "argument"),
    [
        ({k: v for k, v in CONFIG.items() if k != "checkpoint"}, {}, "'checkpoint'"),
        (CONFIG, {"heartbeat": "2026-01-02", "flush": True}, "'heartbeat'"),
        (CONFIG, {"timeout_seconds": 5}, "'timeout_seconds'"),
        (CONFIG, {"processing_time": "soon"}, "processing_time"),
        ("no/such/job.json", {}, "'config'"),
    ],
)
def test_streaming_arguments_are_checked(hook_calls, config, kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        TimeweaveStreamingOperator(task_id="stream", config=config, **kwargs).execute(_context())
    assert hook_calls == []


def test_on_kill_stops_a_spark_submit_run(fake_spark, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_SPARK_MODE", "sleep")
    metrics_file = tmp_path / "m.json"
    op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG, launcher="spark-submit",
                                    metrics_file=str(metrics_file))
    errors: list[BaseException] = []
    worker = threading.Thread(target=lambda: _capture(errors, op.execute, _context()))
    worker.start()
    deadline = time.monotonic() + 30
    while not metrics_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    op.on_kill()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], TimeweaveJobError)


def test_spark_submit_options_reach_spark_submit(fake_spark, monkeypatch):
    """The operator passes every SparkSubmitHook option on; the metrics come back through XCom as before."""
    op = TimeweaveBackfillOperator(task_id="backfill", config=CONFIG, launcher="spark-submit", slices=2,
                                   start="2026-01-01", end="2026-01-02", only=[1], slices_per_job=1,
                                   jars=["udfs.jar"], packages="org.apache.spark:spark-avro_2.13:4.0.0",
                                   files="lookup.csv", executor_memory="3g", executor_cores=2, driver_memory="1g",
                                   num_executors=3, principal="etl@EXAMPLE.COM", keytab="/etc/etl.keytab")
    metrics = op.execute(_context())
    assert metrics["rows_out"] == 7 and metrics["args"][:8] == [
        "--start", "2026-01-01T00:00:00", "--end", "2026-01-02T00:00:00", "--slices", "2", "--only", "1"]
    ((_, argv),) = fake_spark()
    pairs = dict(itertools.pairwise(argv))
    assert (pairs["--jars"], pairs["--packages"], pairs["--files"]) == (
        "udfs.jar", "org.apache.spark:spark-avro_2.13:4.0.0", "lookup.csv")
    assert (pairs["--executor-memory"], pairs["--executor-cores"], pairs["--driver-memory"]) == ("3g", "2", "1g")
    assert (pairs["--num-executors"], pairs["--principal"], pairs["--keytab"]) == ("3", "etl@EXAMPLE.COM",
                                                                                  "/etc/etl.keytab")
    assert pairs["--slices-per-job"] == "1"


def _capture(errors: list[BaseException], fn, *args) -> None:
    try:
        fn(*args)
    except BaseException as exc:
        errors.append(exc)


@pytest.mark.spark
def test_on_kill_stops_an_in_process_streaming_query(spark, monkeypatch, tmp_path):
    """A long-running (processingTime) job in-process: on_kill stops the query it started, not others."""
    from timeweave import jobs

    bystander = spark.readStream.format("rate").load().writeStream.format("noop").start()
    started: list[Any] = []

    def run(kind, config, spark=None, **job_args):
        query = (
            spark.readStream.format("rate").option("rowsPerSecond", 5).load()
            .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(processingTime="1 second").start()
        )
        started.append(query)
        query.awaitTermination()
        return {"rows_out": 0}

    monkeypatch.setattr(jobs, "run", run, raising=False)
    op = TimeweaveStreamingOperator(task_id="stream", config=CONFIG, processing_time="1 second")
    errors: list[BaseException] = []
    worker = threading.Thread(target=lambda: _capture(errors, op.execute, _context()))
    worker.start()
    deadline = time.monotonic() + 60
    while not (started and started[0].isActive) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started, "the streaming query never started"
    try:
        op.on_kill()
        worker.join(timeout=60)
        assert not worker.is_alive()
        assert not started[0].isActive
        assert bystander.isActive
        assert len(errors) == 1 and isinstance(errors[0], TimeweaveJobError)
    finally:
        bystander.stop()
        for query in started:
            query.stop()

