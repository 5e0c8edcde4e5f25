"""The streaming window door (timeweave.spark.window_streaming) and the window streaming job.

* Every ``win_*`` Flink conformance case through the door's processor on the streaming host, without a JVM
  (PySpark's TwsTester plays Spark): Flink's arrival order, the watermark Flink had at each row's arrival, the
  processor woken by its Spark timers only, its state in the host's cells.  Main rows = Flink's streaming
  output; the late output = exactly the rows Flink dropped (recomputing every window without each late row's
  missed windows gives Flink's rows again).
* The job end to end (Spark): random rows with out-of-order, late and NULL-time rows, read in two runs with a
  restart from the checkpoint in between and flushed: main = the DataFrame door over the rows minus each late
  row's missed windows, late = the rows the core's late rule names, dead letter = the NULL-time rows.
* Errors come before any Spark job (a query without a watermark, a non-timestamp event time, bad aggregates).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import types as T
from pyspark.sql.streaming.tws_tester import TwsTester

from tests.helpers.flink_cases import Case, load_case
from tests.helpers.window_cases import WINDOW_CASES, WindowPlan, in_grouping_set, render
from tests.helpers.window_random import AGGREGATES, SCHEMA, random_rows, reference_stream
from timeweave.core.errors import SpecError
from timeweave.core.event_time import END_OF_INPUT_MS
from timeweave.core.state import NO_WATERMARK
from timeweave.core.windows import CountStar, Max, Sum, Window, WindowRow, session, tumble
from timeweave.core.windows.calls import AggregateText
from timeweave.jobs import cli
from timeweave.jobs.config import ConfigError, WindowJobConfig, load_job_config
from timeweave.jobs.streaming import run_streaming
from timeweave.spark import window_streaming as W
from timeweave.spark.host import BUCKET, KEY_TEXT, OP, ROW, TIME, pack_rows
from timeweave.spark.host.stream import DATA_ROW
from timeweave.spark.windows import window_aggregate, window_tvf

B = 3
_EPOCH = datetime(1970, 1, 1)
_FUNCTIONS = {CountStar: "COUNT(*)", Sum: "SUM", Max: "MAX"}


def _spark_type(name: str) -> T.DataType:
    if name == "TIMESTAMP":
        return T.TimestampType()
    if name.startswith("DECIMAL"):
        p, s = map(int, re.findall(r"\d+", name))
        return T.DecimalType(p, s)
    return {"BIGINT": T.LongType(), "INT": T.IntegerType(), "DOUBLE": T.DoubleType()}.get(name, T.StringType())


def _wire(value: Any) -> Any:
    """A case value in the host's wire format (what to_wire writes): timestamps as µs since the epoch."""
    if isinstance(value, datetime):
        return (value - _EPOCH) // pd.Timedelta(microseconds=1)
    return value


def _text(row: dict[str, Any]) -> str:
    return "{" + ",".join(f"{json.dumps(k)}:{W._json_value(_wire(v))}" for k, v in row.items() if v is not None) + "}"


def _processor(plan: WindowPlan) -> W.WindowProcessor:
    schema = T.StructType([T.StructField(n, _spark_type(t)) for n, t in plan.table.columns])
    aggregates, fields = [], []
    for call in plan.calls:
        function = _FUNCTIONS[type(call.accumulator)]
        aggregates.append(AggregateText(call.name, function, call.argument, None, f"{function}({call.argument})"))
        argument = schema[call.argument].dataType if call.argument else T.LongType()
        if function == "SUM" and isinstance(argument, T.DecimalType):
            argument = T.DecimalType(min(38, argument.precision + 10), argument.scale)
        fields.append(T.StructField(call.name, T.LongType() if function == "COUNT(*)" else argument))
    return W.WindowProcessor(plan.tvf.spec, tuple(aggregates), plan.tvf.time_column, schema.json(),
                             T.StructType(fields).json(), None)


def _pack(key: str, row: dict[str, Any], time_us: int | None) -> pd.DataFrame:
    batch = pa.record_batch({
        BUCKET: pa.array([B], pa.int32()), KEY_TEXT: pa.array([key], pa.string()),
        OP: pa.array([DATA_ROW if time_us is not None else W.DEAD_ROW], pa.int8()),
        TIME: pa.array([time_us if time_us is not None else 0], pa.int64()), ROW: pa.array([_text(row)], pa.string()),
    })
    return next(pack_rows(iter([batch]))).to_pandas()


def stream_through_processor(plan: WindowPlan, key_columns: tuple[str, ...]):
    """The case's rows through the processor in Flink's arrival order: before each row the watermark moves to
    Flink's at its arrival (Spark fires the bucket's due timer then); the end of input fires the rest.
    Returns the frames of every output row."""
    processor = _processor(plan)
    tester = TwsTester(processor, timeMode="EventTime", eventTimeExtractor=lambda _row: 2**62)
    frames, current = [], NO_WATERMARK
    for row, watermark in plan.arrivals():
        if watermark > current:  # Spark's watermark only moves forward (a row before the maximum leaves it)
            frames.append(tester.setWatermark(watermark // 1000))
            current = watermark
        key = json.dumps([row[c] for c in key_columns])
        time = row[plan.tvf.time_column]
        frames.append(tester.testInPandas(B, _pack(key, row, None if time is None else _wire(time))))
    frames.append(tester.setWatermark(END_OF_INPUT_MS))
    out = pd.concat([f for f in frames if len(f)], ignore_index=True)
    # every key's state is gone after the end of input: the windows all fired
    assert tester.peekMapState(W.STATE.keys, B) == {}
    return out


@pytest.fixture(scope="module", params=WINDOW_CASES)
def case(request) -> Case:
    return load_case(request.param)


def test_win_cases_through_the_streaming_processor_equal_flink(case: Case) -> None:
    plan = WindowPlan(case)
    header, expected = case.expected("streaming")
    names = tuple(c.name for c in plan.calls)
    timestamps = {c.name for c in plan.calls if c.argument == plan.tvf.time_column and not isinstance(c.accumulator, CountStar)}
    got, late_items = [], []
    for key_columns in plan.grouping_sets:
        out = stream_through_processor(plan, key_columns)
        for kind, key, text in zip(out[W.KIND], out[W.KEY], out[W.OUT], strict=True):
            if kind != W.MAIN:
                continue
            values = json.loads(text, parse_float=Decimal)
            window = Window(values["window_start"] // 1000, values["window_end"] // 1000)
            assert values["window_time"] == values["window_end"] - 1000  # Flink's window_time: end - 1 ms
            # a MAX over the event time comes back in the wire format: µs since the epoch
            row = WindowRow(window, tuple(_EPOCH + pd.Timedelta(microseconds=v).to_pytimedelta()
                                          if n in timestamps and v is not None else v
                                          for n, v in ((n, values.get(n)) for n in names)))
            got.append(render(header, key_columns, tuple(json.loads(key)), row, names))
        late = out[out[W.KIND] == W.LATE]
        assert (out[W.KIND] == W.DEAD).sum() == 0
        for text, reason, watermark, missed in zip(late[W.IN_ROW], late[W.REASON], late[W.WATERMARK], late[W.MISSED],
                                                   strict=True):
            row = json.loads(text)
            late_items.append(row["item"])
            assert reason.startswith("late: event time ")
            windows = json.loads(missed)
            # each missed window had fired at the row's arrival: window_end - 1 ms <= the watermark then
            assert windows and all(end - 1000 <= watermark for _, end in windows)
            assert all(start <= row[plan.tvf.time_column] < end for start, end in windows)
        # the rows the case's notes name late are the late output, once per grouping set
        named = set(re.findall(r"\b(L\d)\b \(", case.spec.get("notes", "")))
        assert {json.loads(t)["item"] for t in late[W.IN_ROW]} == named
        assert sorted(r for r in got if in_grouping_set(header, r, key_columns, plan)) == sorted(
            r for r in expected if in_grouping_set(header, r, key_columns, plan))
    assert sorted(got, key=str) == sorted(expected, key=str)


def test_dead_letters_leave_at_once_and_heartbeats_run_no_key() -> None:
    plan = WindowPlan(load_case("win_tumble"))
    tester = TwsTester(_processor(plan), timeMode="EventTime", eventTimeExtractor=lambda _row: 2**62)
    row = dict(plan.rows()[0], bidtime=None)
    out = tester.testInPandas(B, _pack("[]", row, None))
    assert out[W.KIND].tolist() == [W.DEAD]
    assert out[W.REASON].tolist() == ["NULL event time column bidtime"]
    assert out[W.SIDE].tolist() == ["input"]
    assert tester.peekMapState(W.STATE.keys, B) == {}


def test_time_zones_shift_windows_to_the_wall_clock() -> None:
    """A 1-day TUMBLE in Asia/Shanghai runs from local midnight: 2020-04-15 16:00 UTC is 00:00 on the 16th there."""
    plan = WindowPlan(load_case("win_tumble"))
    processor = _processor(plan)
    processor.spec = tumble("1 day")
    processor.zone = "Asia/Shanghai"
    tester = TwsTester(processor, timeMode="EventTime", eventTimeExtractor=lambda _row: 2**62)
    at = datetime(2020, 4, 15, 15, 59)
    tester.testInPandas(B, _pack("[]", dict(plan.rows()[0], bidtime=at), _wire(at)))
    out = tester.setWatermark(END_OF_INPUT_MS)
    [text] = out[out[W.KIND] == W.MAIN][W.OUT].tolist()
    values = json.loads(text)
    # the window [2020-04-15 00:00, 2020-04-16 00:00) of Shanghai's clock, as instants (UTC)
    as_utc = lambda us: datetime.fromtimestamp(us / 1e6, UTC).replace(tzinfo=None)  # noqa: E731
    assert (as_utc(values["window_start"]), as_utc(values["window_end"])) == (
        datetime(2020, 4, 14, 16), datetime(2020, 4, 15, 16))


# -- the job end to end (Spark) ---------------------------------------------------------------------------------
WINDOWS = {  # the job config's window section (besides time, keys, aggregates), the core spec, the door's spec
    "hop": {"function": "hop", "slide": "5 minutes", "size": "15 minutes"},
    "session": {"tvf": "SESSION(TABLE input PARTITION BY k, DESCRIPTOR(ts), INTERVAL '4' MINUTES)"},
}
DELAY = timedelta(minutes=5)


def _write_json(path: Path, rows: list[dict[str, Any]], extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)

    def value(v: Any) -> Any:
        return v.isoformat() if isinstance(v, datetime) else float(v) if isinstance(v, Decimal) else v

    path.write_text("".join(json.dumps({k: value(v) for k, v in r.items()}) + "\n" for r in rows) + extra)


def window_config(tmp_path: Path, window_id: str) -> dict[str, Any]:
    window = dict(WINDOWS[window_id])
    if "tvf" not in window:
        window["time"] = "ts"
    return {
        "window": {**window, "keys": ["k"], "aggregates": AGGREGATES},
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": SCHEMA,
                  "watermark_delay": f"{DELAY.seconds} seconds"},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
        "trigger": {"available_now": True},
    }


def _main_rows(rows) -> set[tuple]:
    return {tuple(r) for r in rows}


def _reference_rows(results) -> set[tuple]:
    out = set()
    for (k,), r in results:
        values = dict(zip(AGGREGATES, r.values, strict=True))
        values["avg_p"] = values["avg_p"].quantize(Decimal("0.000001"))  # AVG(DECIMAL(10,2)): DECIMAL(14,6)
        as_time = lambda ms: _EPOCH + timedelta(milliseconds=ms)  # noqa: E731
        out.add((as_time(r.start), as_time(r.end), as_time(r.end - 1), k, *values.values()))
    return out


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("window_id", ["hop", "session"])
def test_the_job_restarted_and_flushed_writes_the_reference_rows_and_the_dataframe_doors(
        spark, tmp_path: Path, window_id: str, capsys) -> None:
    rows = random_rows(7 if window_id == "hop" else 8)
    runs = [rows[:25], rows[25:45], rows[45:]]
    config = window_config(tmp_path, window_id)
    job = WindowJobConfig.from_dict(config)
    _write_json(tmp_path / "in" / "a.json", runs[0])
    first = run_streaming(config, spark)
    _write_json(tmp_path / "in" / "b.json", runs[1])
    second = run_streaming(config, spark)  # a restart from the checkpoint
    _write_json(tmp_path / "in" / "c.json", runs[2], extra='{"id": "bad", "ts": "not a time", "k": "a"}\n')
    assert cli.main(["streaming", "--config", json.dumps(config), "--flush"]) == 0
    third = json.loads(capsys.readouterr().out.strip().splitlines()[-1].removeprefix(cli.METRICS_PREFIX))

    results, late, dead = reference_stream(runs, job.spec, ("k",), DELAY)
    main = spark.read.parquet(config["output"]["path"])
    door = window_aggregate(spark.createDataFrame([], SCHEMA), AGGREGATES, keys=["k"], time="ts", window=job.spec)
    assert [(f.name, f.dataType) for f in main.schema] == [(f.name, f.dataType) for f in door.schema]
    assert len(main.collect()) == len(results) and _main_rows(main.collect()) == _reference_rows(results)
    assert late, "the random rows must have late ones"
    late_out = spark.read.parquet(f"{config['output']['path']}_late")
    assert late_out.columns == ["id", "k", "ts", "v", "p", "flag", "reason", "watermark", "missed_windows"]
    got_late = {r["id"]: r for r in late_out.collect()}
    assert set(got_late) == {r.row["id"] for r in late}
    for r in late:
        out = got_late[r.row["id"]]
        assert out["reason"] == r.reason
        assert out["watermark"] == _EPOCH + timedelta(milliseconds=r.watermark)
        assert [(w["window_start"], w["window_end"]) for w in out["missed_windows"]] == [
            (_EPOCH + timedelta(milliseconds=w.start), _EPOCH + timedelta(milliseconds=w.end)) for w in r.missed]
    dead_out = spark.read.parquet(f"{config['output']['path']}_dead_letter").collect()
    assert sorted(json.loads(r["row"]).get("id") for r in dead_out if r["reason"].startswith("NULL")) == sorted(
        r["id"] for r in dead)
    assert any("bad" in r["row"] for r in dead_out if not r["reason"].startswith("NULL"))  # the unparsable record
    counts = [(m["rows_in"], m["late"], m["dead_letter"]) for m in (first, second, third)]
    assert sum(c[0] for c in counts) == len(rows) + 1
    assert sum(c[1] for c in counts) == len(late) and sum(c[2] for c in counts) == len(dead) + 1
    assert first["rows_out"] + second["rows_out"] + third["rows_out"] == len(results) and third["kind"] == "window"

    # The DataFrame door over the same rows, each late row left out of the windows it missed, gives the same rows.
    source = spark.read.schema(SCHEMA).json(str(tmp_path / "in")).where("id != 'bad'")
    missed = spark.createDataFrame(
        [(r.row["id"], _EPOCH + timedelta(milliseconds=w.start)) for r in late for w in r.missed],
        "id STRING, window_start TIMESTAMP")
    if window_id == "session":  # a late session row merged with nothing: dropped whole
        kept = window_aggregate(source.join(missed.select("id"), "id", "left_anti"), AGGREGATES, keys=["k"], time="ts",
                                window=job.spec)
    else:
        windowed = window_tvf(source, "ts", job.spec).join(missed, ["id", "window_start"], "left_anti")
        kept = window_aggregate(windowed, AGGREGATES, keys=["k"])
    assert _main_rows(kept.select(*main.columns).collect()) == _main_rows(main.collect())


def test_a_streaming_window_query_without_a_watermark_fails_before_any_spark_job(spark) -> None:
    from timeweave.core.windows import hop

    context = spark.sparkContext
    context.setJobGroup("tw-window-checks", "errors before any job")
    df = spark.createDataFrame([], SCHEMA)
    with pytest.raises(SpecError, match=r"argument 'watermark': a streaming window aggregation needs an event-time "
                                        r"watermark"):
        W.window_aggregate_stream(df, AGGREGATES, keys="k", time="ts", window=hop("1 minute", "2 minutes"),
                                  watermark=None)
    with pytest.raises(SpecError, match=r"argument 'aggregates': s = SUM\(w \+ 1\): Spark cannot analyse it"):
        W.window_aggregate_stream(df, {"s": "SUM(w + 1)"}, time="ts", window=hop("1 minute", "2 minutes"),
                                  watermark="1 minute")
    with pytest.raises(SpecError, match=r"argument 'aggregates': s = SUM\(nope\): column 'nope' not found"):
        W.window_aggregate_stream(df, {"s": "SUM(nope)"}, time="ts", window=hop("1 minute", "2 minutes"),
                                  watermark="1 minute")
    with pytest.raises(SpecError, match=r"FILTER column 'v' must be BOOLEAN"):
        W.window_aggregate_stream(df, {"s": "COUNT(*) FILTER (WHERE v)"}, time="ts", window=hop("1 minute", "2 minutes"),
                                  watermark="1 minute")
    with pytest.raises(SpecError, match=r"argument 'time': column 'ts' must be a TIMESTAMP or TIMESTAMP_NTZ, found int"):
        W.window_aggregate_stream(spark.createDataFrame([], "ts INT, v INT"), {"n": "COUNT(*)"}, time="ts",
                                  window=hop("1 minute", "2 minutes"), watermark="1 minute")
    with pytest.raises(SpecError, match=r"argument 'keys': a SESSION partitioned by \['k'\] must group by"):
        W.window_aggregate_stream(df, {"n": "COUNT(*)"}, time="ts", window=session("1 minute", "k"),
                                  watermark="1 minute")
    assert context.statusTracker().getJobIdsForGroup("tw-window-checks") == []
    context.setJobGroup("", "")


def test_the_job_config_is_strict_and_validate_describes_it(tmp_path: Path, capsys) -> None:
    config = window_config(tmp_path, "hop")
    config["window"]["slid"] = "1 minute"
    with pytest.raises(ConfigError, match=r"window.slid: unknown key; did you mean 'slide'\?"):
        load_job_config(config)
    config = window_config(tmp_path, "hop")
    config["window"]["aggregates"] = {"x": 42}
    with pytest.raises(ConfigError, match=r"window.aggregates.x: expected the aggregate as SQL text"):
        load_job_config(config)
    config["window"]["aggregates"] = {"x": "MEDIAN(v)"}  # any Spark aggregate: Spark analyses it when the job starts
    assert load_job_config(config).aggregates == {"x": "MEDIAN(v)"}
    config = window_config(tmp_path, "session")
    config["window"]["function"] = "session"
    with pytest.raises(ConfigError, match=r"either as 'tvf'"):
        load_job_config(config)
    config = window_config(tmp_path, "hop")
    assert cli.main(["validate", json.dumps(config)]) == 0
    out = capsys.readouterr().out
    assert "valid window aggregation job: HopSpec(slide=300000, size=900000, offset=0) on ts, keys [k]" in out


@pytest.mark.parametrize("name", ["timeweave.spark.window_tagged", "timeweave.core.windows.calls",
                                  "timeweave.core.windows.operator", "timeweave.jobs.windows", "timeweave.jobs.config"])
def test_docstring_examples_run(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
