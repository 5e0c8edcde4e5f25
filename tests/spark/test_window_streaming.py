"""The streaming window door (timeweave.spark.window_streaming) and the window streaming job.

* Every ``win_*`` Flink conformance case through the door's processor on the streaming host, without a JVM
  (PySpark's TwsTester plays Spark): Flink's arrival order, the watermark Flink had at each row's arrival, the
  processor woken by its Spark timers only, its state in the host's cells.  Main rows = Flink's streaming
  output; the late output = exactly the rows Flink dropped (recomputing every window without each late row's
  missed windows gives Flink's rows again).
* The job end to end (Spark): random rows with out-of-order, late and NULL-time rows, read in two runs with a
  restart from the checkpoint in between and flushed: main = the DataFrame door over the rows minus each late
  row's missed windows, late = the rows the core's late rule names, dead letter = the NULL-time rows.
* Errors come before any Spark job (a query without a watermark, a TIMESTAMP_NTZ event time, bad aggregates).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import types as T
from pyspark.sql.streaming.tws_tester import TwsTester

from tests.helpers.flink_cases import Case, load_case
from tests.helpers.window_cases import WINDOW_CASES, WindowPlan, in_grouping_set, render
from timeweave.core.event_time import END_OF_INPUT_MS
from timeweave.core.state import NO_WATERMARK
from timeweave.core.windows import CountStar, Max, Sum, Window, WindowRow, tumble
from timeweave.core.windows.calls import AggregateText
from timeweave.spark import window_streaming as W
from timeweave.spark.host import BUCKET, KEY_TEXT, OP, ROW, TIME, pack_rows

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
        OP: pa.array([W.DATA_ROW if time_us is not None else W.DEAD_ROW], pa.int8()),
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
