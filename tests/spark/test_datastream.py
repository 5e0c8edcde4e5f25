"""DataStream windows on Spark (timeweave.spark.datastream): the builder, the streaming registration, the bounded run.

* Without a JVM: the builder's errors name the step (no window, negative lateness, an evictor after the window
  function, a result schema clash, an unknown emit, an upsert without the key columns); the streaming processor
  on PySpark's TwsTester
  (Spark's watermark before each micro-batch, the end of input) gives exactly the core operator's outputs run
  in memory over the same steps, for random rows with out-of-order, late, NULL-time and failing rows; results map
  to the output schema (dict, tuple, one-column value) and a misfit is a dead letter naming the column.
* With Spark: seed 002's examples through ``start()`` and ``run_batch()``; random rows streamed file by file
  (one micro-batch each) with a restart from the checkpoint and a flush = ``run_batch(arrival=...)`` = the core
  in memory (main, late, dead letter); a failing user function's row is a dead letter and the job goes on.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark import cloudpickle
from pyspark.sql import types as T
from pyspark.sql.streaming.tws_tester import TwsTester

from tests.helpers.spark_jobs import no_spark_job
from timeweave.core.datastream import (
    GLOBAL_WINDOW,
    AggregateFunction,
    DeadLetter,
    Firing,
    LateElement,
    Session,
    Sliding,
    Tumbling,
)
from timeweave.core.datastream.evictors import Count as CountEvictor
from timeweave.core.datastream.triggers import Count, EventTime, Trigger
from timeweave.core.errors import SpecError
from timeweave.core.event_time import END_OF_INPUT_MS, watermark_us
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, InMemoryKeyContext
from timeweave.spark import datastream as D
from timeweave.spark.host import BUCKET, KEY_TEXT, OP, ROW, TIME, pack_rows
from timeweave.spark.host.stream import DATA_ROW, DEAD_ROW

# The user functions below (SumCount, the pipelines' lambdas) travel to Spark's workers by value: pytest imports
# this file under a name the workers cannot import.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

EPOCH = datetime(1970, 1, 1)
BASE = datetime(2026, 11, 26, 12)
SCHEMA = T.StructType([T.StructField("id", T.StringType()), T.StructField("k", T.StringType()),
                       T.StructField("ts", T.TimestampType()), T.StructField("v", T.LongType()),
                       T.StructField("batch", T.IntegerType())])
DDL = "id STRING, k STRING, ts TIMESTAMP, v BIGINT, batch INT"
DELAY = "10 seconds"
B = 3


_TYPES = {"STRING": T.StringType(), "BIGINT": T.LongType(), "INT": T.IntegerType(), "TIMESTAMP": T.TimestampType()}


def ddl(text: str) -> T.StructType:
    """A simple DDL text as a StructType without a Spark session (DDL strings need one; tested with Spark)."""
    return T.StructType([T.StructField(n, _TYPES[t]) for n, t in (c.split() for c in text.split(","))])


class _Frame:
    """A stand-in for a DataFrame's schema (the builder's checks read only the schema: no JVM)."""

    isStreaming = False

    def __init__(self, schema: T.StructType) -> None:
        self.schema = schema
        self.columns = schema.names


class SumCount(AggregateFunction):
    """(count, sum of v); a negative v raises (a failing user function)."""

    def create(self):
        return [0, 0]

    def add(self, value, acc):
        if value["v"] < 0:
            raise ValueError(f"negative v {value['v']}")
        return [acc[0] + 1, acc[1] + value["v"]]

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]

    def result(self, acc):
        return {"n": acc[0], "total": acc[1]}


def _keyed(window, pipeline_df=None):
    return D.stream(pipeline_df if pipeline_df is not None else _Frame(SCHEMA), time="ts", watermark=DELAY).key_by("k").window(window)


def pipelines(df=None) -> dict[str, D.Pipeline]:
    """The pipelines the random tests run (built over ``df``, or the schema stand-in)."""
    return {
        "tumble_early_lateness": _keyed(Tumbling.of("1 min"), df).trigger(EventTime().with_early(Count.of(3)))
        .allowed_lateness("30 s").aggregate(SumCount(), output_schema=ddl("n BIGINT, total BIGINT")),
        "tumble_early_keyed": _keyed(Tumbling.of("1 min"), df).trigger(EventTime().with_early(Count.of(3)))
        .allowed_lateness("30 s").aggregate(SumCount(), lambda key, ctx, sums: [{"k": key, **sums[0]}],
                                            output_schema=ddl("k STRING, n BIGINT, total BIGINT")),
        "session_process": _keyed(Session.of("20 s"), df).allowed_lateness("15 s").process(
            lambda key, ctx, rows: [(key, len(rows), sum(r["v"] for r in rows), min(r["ts"] for r in rows))],
            output_schema=ddl("key STRING, n BIGINT, total BIGINT, first TIMESTAMP")),
        "sliding_evictor_reduce": _keyed(Sliding.of("1 min", "30 s"), df).evictor(CountEvictor.of(2))
        .reduce(lambda a, b: {**a, "v": a["v"] + b["v"]}),
    }


# =================================================================================================
# The builder (no JVM)
# =================================================================================================
@pytest.mark.parametrize("build, message", [
    (lambda p: p.key_by("k").reduce(max), "step '.reduce': argument 'function': comes after .window(...)"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).allowed_lateness("-5 s"),
     "step '.allowed_lateness': argument 'allowed_lateness': cannot be negative, got -5000 ms"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).aggregate(SumCount(), output_schema=ddl("n BIGINT"))
     .evictor(CountEvictor.of(2)),
     "step '.evictor': argument 'evictor': comes before the window function (.aggregate was given)"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).reduce(max).trigger(Count.of(2)),
     "step '.trigger': argument 'trigger': comes before the window function (.reduce was given)"),
    (lambda p: p.window(Tumbling.of("1 min")), "step '.window': argument 'assigner': comes after .key_by"),
    (lambda p: p.key_by("nope"), "step '.key_by': argument 'key': column 'nope' not found"),
    (lambda p: p.key_by(lambda r: r["k"]), "a key selector function is not supported"),
    (lambda p: p.key_by("k").window_all(Tumbling.of(5)), "window_all is for an unkeyed stream"),
    (lambda p: p.key_by("k").window("5 min"), "expected Tumbling, Sliding, Session or Global"),
    (lambda p: p.key_by("k").window(Session.of("1 min")).trigger(Trigger()),
     "cannot be used with a trigger that does not support merging"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).aggregate(SumCount()),
     "step '.aggregate': argument 'output_schema': give the columns of each result"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).process(lambda k, c, e: e, output_schema=ddl("window_end INT")),
     "step '.process': argument 'output_schema': column(s) ['window_end'] are the firing's own columns"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).aggregate(object(), output_schema=ddl("n INT")),
     "step '.aggregate': argument 'aggregate'"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min", processing_time=True)).allowed_lateness("1 s"),
     "applies to event-time windows"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).reduce(max).streaming(emit="retraction"),
     "DataStream pipeline, emit: argument 'emit': expected 'append' (every firing a row"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).aggregate(SumCount(), output_schema=ddl("n BIGINT"))
     .streaming(emit="upsert"), "the output schema ['n'] lacks the key column(s) ['k']; add them to the results"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).aggregate(SumCount(), output_schema=ddl("pane BIGINT"))
     .run_batch(emit="retract"), "column(s) ['pane'] of the output schema are the changelog's own"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).reduce(max).run_batch(arrival="nope"),
     "argument 'arrival': column 'nope' not found"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min", processing_time=True)).reduce(max).run_batch(),
     "runs on a processing clock, which a bounded run does not have"),
])
def test_a_bad_pipeline_is_named_at_its_step(build, message) -> None:
    with pytest.raises(SpecError) as caught:
        build(D.stream(_Frame(SCHEMA), time="ts", watermark=DELAY))
    assert message in str(caught.value)


def test_stream_checks_the_time_and_the_watermark() -> None:
    with pytest.raises(SpecError, match=r"argument 'time': column 'when' not found"):
        D.stream(_Frame(SCHEMA), time="when", watermark=DELAY)
    with pytest.raises(SpecError, match=r"column 'v' is bigint: the event time must be a TIMESTAMP"):
        D.stream(_Frame(SCHEMA), time="v", watermark=DELAY)
    with pytest.raises(SpecError, match=r"argument 'watermark': a DataStream pipeline needs"):
        D.stream(_Frame(SCHEMA), time="ts", watermark="")
    late = T.StructType([*SCHEMA.fields, T.StructField("reason", T.StringType())])
    with pytest.raises(SpecError, match=r"\['reason'\] are added by the late output"):
        D.stream(_Frame(late), time="ts", watermark=DELAY)


def test_each_step_returns_a_new_frozen_pipeline() -> None:
    base = D.stream(_Frame(SCHEMA), time="ts", watermark=DELAY).key_by("K")  # spelled as the input spells it
    one, two = base.window(Tumbling.of("1 min")), base.window(Sliding.of("1 min", "30 s"))
    assert base.assigner is None and one.assigner != two.assigner and one.keys == ("k",)
    with pytest.raises(AttributeError):
        one.keys = ("id",)  # type: ignore[misc]
    done = one.allowed_lateness("5 min").reduce(lambda a, b: a)
    assert done.lateness_ms == 300_000 and done.operator().allowed_lateness == 300_000
    assert [f.name for f in done.main_schema.fields] == [*D.FIRING_COLUMNS, *SCHEMA.names]


@pytest.mark.parametrize("result, expected", [
    ({"k": "a", "n": 2}, '"k":"a","n":2'), (("a", 2), '"k":"a","n":2'), ({"n": None}, ""),
])
def test_results_map_to_the_output_schema(result, expected) -> None:
    schema = T.StructType([T.StructField("k", T.StringType()), T.StructField("n", T.LongType())])
    assert D.result_text(result, schema) == expected


@pytest.mark.parametrize("result, message", [
    ({"k": "a", "x": 1}, "the result names ['x'], not columns"),
    (("a",), "the result has 1 values; the output schema has 2 columns"),
    (("a", "2"), "column 'n' (bigint) expects an int, got str '2'"),
    ((1, 2), "column 'k' (string) expects a str, got int 1"),
    (7, "a int result for an output schema of 2 columns"),
    (("a", 2**63), "column 'n' (bigint): 9223372036854775808 is out of range"),
])
def test_a_result_that_does_not_fit_is_named(result, message) -> None:
    schema = T.StructType([T.StructField("k", T.StringType()), T.StructField("n", T.LongType())])
    with pytest.raises(D.ResultError) as caught:
        D.result_text(result, schema)
    assert message in str(caught.value)


def test_one_column_results_and_timestamps() -> None:
    schema = T.StructType([T.StructField("t", T.TimestampType())])
    assert D.result_text(datetime(1970, 1, 1, 0, 0, 1), schema) == '"t":1000000'
    assert D.result_text([[1, 2]], T.StructType([T.StructField("a", T.ArrayType(T.LongType()))])) == '"a":[1,2]'


# =================================================================================================
# Random rows: the streaming processor (TwsTester) = the core in memory
# =================================================================================================
def random_rows(seed: int, n: int = 60, batches: int = 6) -> list[dict[str, Any]]:
    """Rows in ``batches`` arrival steps: event times drift forward with jitter (out of order), some far behind
    (late), some NULL, some with a negative v (the aggregate raises)."""
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        batch = i * batches // n
        at = batch * 45 + rnd.randint(-40, 40)
        if rnd.random() < 0.1:
            at -= rnd.randint(60, 200)  # far behind: late for some windows
        ts = None if rnd.random() < 0.05 else BASE + timedelta(seconds=at)
        v = -1 if rnd.random() < 0.05 else rnd.randint(0, 9)
        rows.append({"id": f"r{i}", "k": rnd.choice("abc"), "ts": ts, "v": v, "batch": batch})
    return rows


def _us(ts: datetime) -> int:
    return (ts - EPOCH) // timedelta(microseconds=1)


def wire_text(row: dict[str, Any]) -> str:
    return json.dumps({k: _us(v) if isinstance(v, datetime) else v for k, v in row.items() if v is not None},
                      separators=(",", ":"))


def step_watermarks(rows: list[dict[str, Any]]) -> dict[int, int]:
    """Spark's watermark (ms) before each batch: the largest event time of the earlier ones minus the delay."""
    out, seen = {}, None
    for batch in sorted({r["batch"] for r in rows}):
        out[batch] = NO_WATERMARK if seen is None else seen - 10_000
        times = [_us(r["ts"]) // 1000 for r in rows if r["batch"] == batch and r["ts"] is not None]
        if times:
            seen = max([seen, *times]) if seen is not None else max(times)
    return out


def core_in_memory(pipeline: D.Pipeline, rows: list[dict[str, Any]]) -> tuple[Counter, Counter, Counter]:
    """The core operator run in memory over the same steps: (main, late, dead) as comparable multisets."""
    op = pipeline.operator()
    decode = D.element_decoder(SCHEMA)
    watermarks = step_watermarks(rows)
    main, late, dead = Counter(), Counter(), Counter()
    by_key: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["ts"] is None:
            dead[(row["id"], "NULL event time column ts")] += 1
        else:
            by_key.setdefault(row["k"], []).append(row)
    for key_rows in by_key.values():
        ctx, outputs = InMemoryKeyContext(), []
        for batch in sorted({r["batch"] for r in key_rows}):
            wm = watermarks[batch]
            ctx.current_watermark = NO_WATERMARK if wm == NO_WATERMARK else watermark_us(wm)
            elements = decode([wire_text(r) for r in key_rows if r["batch"] == batch])
            outputs += op.process_elements(ctx, elements) + op.on_watermark(ctx)
        ctx.current_watermark = END_OF_TIME
        outputs += op.on_watermark(ctx)
        for out in outputs:
            if isinstance(out, Firing):
                for value in out.values:
                    main[_main_key(out, value, pipeline.output_schema)] += 1
            elif isinstance(out, LateElement):
                late[(out.row["id"], out.reason)] += 1
            elif isinstance(out, DeadLetter):
                dead[(out.row["id"] if out.row is not None else "window", out.reason)] += 1
    return main, late, dead


def _norm(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    return value


def _main_key(f: Firing, value: Any, schema: T.StructType) -> tuple:
    if isinstance(value, dict):
        values = tuple(_norm(value.get(n)) for n in schema.names)
    else:
        values = tuple(_norm(v) for v in value)
    window = (None, None) if f.window == GLOBAL_WINDOW else (EPOCH + timedelta(milliseconds=f.window.start),
                                                             EPOCH + timedelta(milliseconds=f.window.end))
    return (*window, f.kind.value, f.sequence, *values)


def _pack(rows: list[dict[str, Any]]) -> pd.DataFrame:
    batch = pa.record_batch({
        BUCKET: pa.array([B] * len(rows), pa.int32()), KEY_TEXT: pa.array(["s" + r["k"] for r in rows]),
        OP: pa.array([DATA_ROW if r["ts"] is not None else DEAD_ROW for r in rows], pa.int8()),
        TIME: pa.array([_us(r["ts"]) if r["ts"] is not None else 0 for r in rows], pa.int64()),
        ROW: pa.array([wire_text(r) if r["ts"] is not None else json.dumps({**r, "ts": None}) for r in rows]),
    })
    return next(pack_rows(iter([batch]))).to_pandas()


def through_tester(pipeline: D.Pipeline, rows: list[dict[str, Any]], emit: str = "append") -> pd.DataFrame:
    kind, state = (D.DataStreamProcessor, D.STATE) if emit == "append" else (D.DataStreamChangelogProcessor,
                                                                              D.CHANGELOG_STATE)
    processor = kind(pipeline.keyed_operator(emit), SCHEMA.json(), pipeline.output_schema.json(), "ts")
    tester = TwsTester(processor, timeMode="EventTime", eventTimeExtractor=lambda _row: 2**62)
    frames, current = [], 0
    for batch, wm in step_watermarks(rows).items():
        if wm > current:
            frames.append(tester.setWatermark(wm))
            current = wm
        frames.append(tester.testInPandas(B, _pack([r for r in rows if r["batch"] == batch])))
    frames.append(tester.setWatermark(END_OF_INPUT_MS))
    assert tester.peekMapState(state.keys, B) == {}  # every window fired and was cleaned up at the end of input
    return pd.concat([f for f in frames if len(f)], ignore_index=True)


def tagged_outputs(pipeline: D.Pipeline, out: pd.DataFrame) -> tuple[Counter, Counter, Counter]:
    """The tagged rows as the same multisets (wire values decoded as split() decodes them in Spark)."""
    schema = pipeline.output_schema
    times = {f.name for f in schema.fields if isinstance(f.dataType, T.TimestampType)}
    main, late, dead = Counter(), Counter(), Counter()
    for kind, text, row, reason in zip(out[D.KIND], out[D.OUT], out[D.IN_ROW], out[D.REASON], strict=True):
        if kind == D.MAIN:
            values = json.loads(text)
            window = tuple(EPOCH + timedelta(microseconds=values[c]) if c in values else None
                           for c in ("window_start", "window_end"))
            user = tuple(EPOCH + timedelta(microseconds=values[n]) if n in times and values.get(n) is not None
                         else values.get(n) for n in schema.names)
            main[(*window, values["firing_kind"], values["firing_sequence"], *user)] += 1
        elif kind == D.LATE:
            late[(json.loads(row)["id"], reason)] += 1
        elif kind in (D.DEAD_WIRE, D.DEAD_JSON):
            data = json.loads(row)
            dead[(data.get("id") or "window", reason.split(" (window ")[0])] += 1
    return main, late, dead


@pytest.mark.parametrize("name", sorted(pipelines()))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_streaming_processor_gives_the_core_operators_outputs(name: str, seed: int) -> None:
    pipeline = pipelines()[name]
    rows = random_rows(seed)
    main, late, dead = core_in_memory(pipeline, rows)
    got = tagged_outputs(pipeline, through_tester(pipeline, rows))
    assert main and (late or name == "session_process")
    assert got[0] == main
    assert got[1] == late
    assert Counter({k[0]: n for k, n in got[2].items()}) == Counter({k[0]: n for k, n in dead.items()})
    assert sorted(k[1] for k in got[2]) == sorted(k[1] for k in dead)


def core_changelog(pipeline: D.Pipeline, rows: list[dict[str, Any]], emit: str) -> tuple[Counter, Counter]:
    """The core's changelog run in memory over the tester's calls (a watermark rise alone, as ``setWatermark``
    runs the due timers; then each batch's rows at it): (changelog rows as dicts, the reference table of the
    append run's last unsuperseded firings) as multisets of sorted items."""
    from tests.core.datastream.test_ds_changelog import final_firings

    decode = D.element_decoder(SCHEMA)
    watermarks = step_watermarks(rows)
    changes, firings = [], []
    for key in sorted({r["k"] for r in rows if r["ts"] is not None}):
        key_rows = [r for r in rows if r["k"] == key and r["ts"] is not None]
        for op, out in ((pipeline.keyed_operator(emit), changes), (pipeline.operator(), firings)):
            ctx = InMemoryKeyContext()
            for batch, wm in watermarks.items():
                if wm != NO_WATERMARK:
                    ctx.current_watermark = watermark_us(wm)
                    out += op.on_watermark(ctx)
                elements = decode([wire_text(r) for r in key_rows if r["batch"] == batch])
                if elements:
                    out += op.process_elements(ctx, elements) + op.on_watermark(ctx)
            ctx.current_watermark = END_OF_TIME
            out += op.on_watermark(ctx)
    got = Counter()
    for c in changes:
        if c.__class__.__name__ == "Change":
            _, start, end, pane = c.key
            got[_items({"window_start": start * 1000, "window_end": end * 1000, "pane": pane,
                        **json.loads("{" + c.values[0] + "}"), "op": c.op})] += 1
    table = Counter()
    shown = D.ResultText(pipeline.output_schema)
    for (_, start, end, body), n in final_firings([f for f in firings if isinstance(f, Firing)], shown).items():
        table[_items({"window_start": start * 1000, "window_end": end * 1000, **json.loads("{" + body + "}")})] += n
    return got, table


def _items(row: dict[str, Any]) -> tuple:
    return tuple(sorted(row.items()))


@pytest.mark.parametrize("name, emit", [("tumble_early_lateness", "retract"), ("tumble_early_keyed", "upsert"),
                                        ("session_process", "retract"), ("sliding_evictor_reduce", "upsert")])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_changelog_processor_gives_the_cores_changelog_and_materializes_to_the_last_firings(
        name: str, emit: str, seed: int) -> None:
    from timeweave.core.updates import MaterializedTable

    pipeline = pipelines()[name]
    rows = random_rows(seed)
    expected, table = core_changelog(pipeline, rows, emit)
    assert table
    out = through_tester(pipeline, rows, emit)
    written = [json.loads(t) for t in out[out[D.KIND] == D.MAIN][D.OUT]]
    assert Counter(_items(r) for r in written) == expected
    if name.startswith("tumble_early"):  # early, on-time and late firings refine the windows' rows
        assert {r["op"] for r in written} == ({"+I", "-U", "+U"} if emit == "retract" else {"+I", "+U"})
    values = [n for n in ["pane", *pipeline.output_schema.names] if n not in pipeline.changelog_key()]
    materialized = MaterializedTable(emit, key_names=pipeline.changelog_key(), value_names=values)
    materialized.apply_rows([{n: r.get(n) for n in (*materialized.key_names, *values, "op")} for r in written])
    assert Counter(_items({k: v for k, v in r.items() if k != "pane" and v is not None})
                   for r in materialized.rows()) == table


def test_a_failing_user_function_is_a_dead_letter_and_the_key_goes_on() -> None:
    pipeline = pipelines()["tumble_early_lateness"]
    rows = [{"id": "ok1", "k": "a", "ts": BASE, "v": 1, "batch": 0},
            {"id": "bad", "k": "a", "ts": BASE + timedelta(seconds=1), "v": -3, "batch": 0},
            {"id": "ok2", "k": "a", "ts": BASE + timedelta(seconds=2), "v": 2, "batch": 1}]
    out = through_tester(pipeline, rows)
    dead = out[out[D.KIND] == D.DEAD_WIRE]
    assert [json.loads(r)["id"] for r in dead[D.IN_ROW]] == ["bad"]
    assert dead[D.REASON].tolist() == ["aggregate add raised ValueError: negative v -3"]
    assert dead[D.SIDE].tolist() == ["input"]
    main = [json.loads(t) for t in out[out[D.KIND] == D.MAIN][D.OUT]]
    assert [(m["firing_kind"], m["n"], m["total"]) for m in main] == [("on_time", 2, 3)]


def test_a_result_that_does_not_fit_is_a_dead_letter_naming_the_column() -> None:
    pipeline = _keyed(Tumbling.of("1 min")).process(
        lambda key, ctx, rows: [{"key": key, "n": "many" if len(rows) > 1 else len(rows)}],
        output_schema=ddl("key STRING, n BIGINT"))
    rows = [{"id": f"r{i}", "k": k, "ts": BASE, "v": 1, "batch": 0} for i, k in enumerate("aab")]
    out = through_tester(pipeline, rows)
    [reason] = out[out[D.KIND] == D.DEAD_JSON][D.REASON].tolist()
    assert reason == ("output schema: firing 0 of window [2026-11-26 12:00:00.000, 2026-11-26 12:01:00.000), result 0: "
                      "column 'n' (bigint) expects an int, got str 'many'")
    assert [json.loads(t)["key"] for t in out[out[D.KIND] == D.DEAD_JSON][D.IN_ROW]] == ["a"]
    assert [json.loads(t)["key"] for t in out[out[D.KIND] == D.MAIN][D.OUT]] == ["b"]


def test_processing_time_windows_take_the_invocations_clock() -> None:
    pipeline = _keyed(Tumbling.of("1 s", processing_time=True)).process(
        lambda key, ctx, rows: [(key, len(rows))], output_schema=ddl("key STRING, n BIGINT"))
    processor = D.DataStreamProcessor(pipeline.operator(), SCHEMA.json(), pipeline.output_schema.json(), "ts")
    tester = TwsTester(processor, timeMode="EventTime", eventTimeExtractor=lambda _row: 2**62)
    rows = [{"id": "x", "k": "a", "ts": BASE, "v": 1, "batch": 0}]
    # TwsTester has no processing clock in EventTime mode (Spark does: the batch's timestamp): set its field
    tester._currentProcessingTimeMs = 1_000_500
    assert (tester.testInPandas(B, _pack(rows))[D.KIND] == D.MAIN).sum() == 0  # the window is open
    stored = tester.peekMapState(D.STATE.keys, B)
    assert stored  # the window and its processing-time timer are in the key's state
    tester._currentProcessingTimeMs = 1_001_000  # the next invocation's processing time: past the window's end
    out = tester.testInPandas(B, _pack([dict(rows[0], id="y")]))
    assert [json.loads(t)["n"] for t in out[out[D.KIND] == D.MAIN][D.OUT]] == [1]


@pytest.mark.parametrize("name", ["timeweave.spark.datastream", "timeweave.jobs.datastream"])
def test_docstring_examples_run(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


# =================================================================================================
# With Spark
# =================================================================================================
def _collect_main(df) -> Counter:
    return Counter(tuple(r) for r in df.collect())


def _write_batches(root: Path, rows: list[dict[str, Any]], batches: list[int]) -> None:
    """One file per batch; modification times one second apart in batch order (Spark's file source takes files
    oldest first, one per micro-batch with maxFilesPerTrigger 1: files written within one clock tick would tie)."""
    import os
    import time

    root.mkdir(parents=True, exist_ok=True)
    for batch in batches:
        lines = [json.dumps({k: (v.isoformat() + "Z" if isinstance(v, datetime) else v) for k, v in r.items()})
                 for r in rows if r["batch"] == batch]
        path = root / f"b{batch:03d}.json"
        path.write_text("\n".join(lines) + "\n")
        at = time.time() - 3600 + batch
        os.utime(path, (at, at))


def _as_counters(main, late, dead, schema: T.StructType) -> tuple[Counter, Counter, Counter]:
    got_main = Counter()
    for r in main.collect():
        got_main[tuple(r)] += 1
    got_late = Counter((r["id"], r["reason"]) for r in late.collect())
    got_dead = Counter((json.loads(r["row"]).get("id") or "window", r["reason"].split(" (window ")[0])
                       for r in dead.collect())
    return got_main, got_late, got_dead


@pytest.mark.spark
@pytest.mark.slow
def test_streamed_restarted_and_flushed_equals_run_batch_and_the_core(spark, tmp_path: Path) -> None:
    from timeweave.jobs.streaming import CONTROL_SCHEMA, END_OF_INPUT, heartbeat_times, write_heartbeat

    rows = random_rows(7, n=48, batches=6)
    source = tmp_path / "in"
    control = tmp_path / "chk" / "control"
    control.mkdir(parents=True)
    pipeline_of = lambda df: pipelines(df)["tumble_early_lateness"]  # noqa: E731  (df: the raw DataFrame)
    out = str(tmp_path / "out")

    def run() -> None:
        df = spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1).json(str(source))
        beat = heartbeat_times(spark.readStream.format("json").schema(CONTROL_SCHEMA).load(str(control)))
        query = pipeline_of(df).start(
            output=out, checkpoint=str(tmp_path / "chk" / "q"), trigger={"availableNow": True}, heartbeat=beat)
        query.awaitTermination()
        assert query.exception() is None

    _write_batches(source, rows, [0, 1, 2])
    run()
    _write_batches(source, rows, [3, 4, 5])
    run()  # a restart from the checkpoint
    write_heartbeat(spark, str(tmp_path / "chk"), END_OF_INPUT)
    run()  # the flush

    static = spark.createDataFrame([tuple(r.values()) for r in rows], SCHEMA)
    pipeline = pipeline_of(static)
    main, late, dead = core_in_memory(pipeline, rows)
    streamed = _as_counters(spark.read.parquet(out), spark.read.parquet(f"{out}_late"),
                            spark.read.parquet(f"{out}_dead_letter"), pipeline.main_schema)
    batch = _as_counters(*pipeline.run_batch(arrival="batch"), pipeline.main_schema)
    assert late and dead and main
    assert streamed[0] == batch[0] == main
    assert streamed[1] == batch[1] == late
    assert streamed[2] == batch[2] == dead
    spark_main = spark.read.parquet(out)
    assert spark_main.columns == [*D.FIRING_COLUMNS, "n", "total"]
    assert spark.read.parquet(f"{out}_late").columns == [*SCHEMA.names, "reason", "watermark"]


@pytest.mark.spark
@pytest.mark.slow
def test_an_early_firing_changelog_streamed_equals_run_batch_and_materializes_to_the_final_windows(
        spark, tmp_path: Path) -> None:
    import re

    from pyspark.sql import functions as F

    from timeweave.core.updates import MaterializedTable
    from timeweave.jobs.streaming import CONTROL_SCHEMA, END_OF_INPUT, heartbeat_times, write_heartbeat

    rows = random_rows(5, n=40, batches=4)
    source = tmp_path / "in"
    control = tmp_path / "chk" / "control"
    control.mkdir(parents=True)
    out = str(tmp_path / "out")
    _write_batches(source, rows, [0, 1, 2, 3])

    def run() -> None:
        df = spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1).json(str(source))
        beat = heartbeat_times(spark.readStream.format("json").schema(CONTROL_SCHEMA).load(str(control)))
        query = pipelines(df)["tumble_early_keyed"].start(
            output=out, checkpoint=str(tmp_path / "chk" / "q"), trigger={"availableNow": True}, heartbeat=beat,
            emit="upsert")
        query.awaitTermination()
        assert query.exception() is None

    run()  # one micro-batch per file
    write_heartbeat(spark, str(tmp_path / "chk"), END_OF_INPUT)
    run()  # the flush: every window fires

    static = spark.createDataFrame([tuple(r.values()) for r in rows], SCHEMA)
    pipeline = pipelines(static)["tumble_early_keyed"]
    streamed = spark.read.parquet(out)
    assert streamed.columns == ["window_start", "window_end", "pane", "k", "n", "total", "op"]
    written = streamed.withColumn("__file", F.input_file_name()).collect()
    changes = Counter(tuple(r)[:-1] for r in written)
    assert changes == Counter(tuple(r) for r in pipeline.run_batch(arrival="batch", emit="upsert").main.collect())
    assert {r["op"] for r in written} == {"+I", "+U"}

    def batch_of(row: Any) -> int:
        return int(re.search(r"part-b(\d+)-", row["__file"]).group(1))

    key = pipeline.changelog_key()
    assert key == ("k", "window_start", "window_end", "pane")
    # a micro-batch names each row's key once: what an upsert sink (apply_changelog) applies
    assert max(Counter((batch_of(r), *(r[c] for c in key)) for r in written).values()) == 1
    table = MaterializedTable("upsert", key_names=key, value_names=("n", "total"))
    for batch in sorted({batch_of(r) for r in written}):
        table.apply_rows([r.asDict() for r in written if batch_of(r) == batch], batch_id=batch)
    final: dict[tuple, tuple] = {}  # the append run's last firing of every window
    for r in pipeline.run_batch(arrival="batch").main.collect():
        window = (r["k"], r["window_start"], r["window_end"])
        if window not in final or r["firing_sequence"] > final[window][0]:
            final[window] = (r["firing_sequence"], r["n"], r["total"])
    assert sorted((r["k"], r["window_start"], r["window_end"], r["pane"], r["n"], r["total"]) for r in table.rows()) \
        == sorted((*window, 0, n, total) for window, (_, n, total) in final.items())


@pytest.mark.spark
def test_seed_002_examples_through_start_and_run_batch(spark, tmp_path: Path) -> None:
    """Seed 002: a ReduceFunction summing a field; a ProcessWindowFunction naming the window and counting; an
    incremental reduce (minimum) with a window function; allowed lateness with the late side output."""
    rows = [("a", BASE, 1, 0), ("a", BASE + timedelta(seconds=2), 2, 0), ("b", BASE + timedelta(seconds=3), 5, 0),
            ("a", BASE + timedelta(seconds=6), 3, 0), ("a", BASE + timedelta(seconds=20), 1, 1),
            ("a", BASE + timedelta(seconds=4), 4, 1), ("a", BASE + timedelta(seconds=1), 8, 2),
            ("c", BASE + timedelta(seconds=40), 1, 3)]
    df = spark.createDataFrame(rows, "k STRING, ts TIMESTAMP, v BIGINT, batch INT")
    base = D.stream(df, time="ts", watermark="0 seconds").key_by("k").window(Tumbling.of("5 s"))

    def main_rows(pipeline, *columns):
        main, late, dead = pipeline.run_batch(arrival="batch")
        assert dead.count() == 0
        return sorted(tuple(r[c] for c in columns) for r in main.collect()), late

    summed, late = main_rows(base.allowed_lateness("10 s").reduce(lambda v1, v2: {**v1, "v": v1["v"] + v2["v"]}),
                             "window_start", "k", "v", "firing_kind")
    at = lambda s: BASE + timedelta(seconds=s)  # noqa: E731
    # [0, 5) of a: 1 + 2 on time when the watermark reaches 6 s (batch 1), + 4 (batch 1, within the lateness) a late
    # firing; 8 arrives at the watermark 20 s (batch 2), after 1 s + 10 s of lateness: the late output
    assert summed == [(at(0), "a", 3, "on_time"), (at(0), "a", 7, "late"), (at(0), "b", 5, "on_time"),
                      (at(5), "a", 3, "on_time"), (at(20), "a", 1, "on_time"), (at(40), "c", 1, "on_time")]
    assert [(r["v"], r["watermark"]) for r in late.collect()] == [(8, at(20))]

    counted, _ = main_rows(base.allowed_lateness("10 s").process(lambda key, ctx, elements: [
        f"Window: {ctx.window} count: {len(elements)}"], output_schema="text STRING"), "text")
    first = (f"Window: Window(start={(at(0) - EPOCH) // timedelta(milliseconds=1)}, "
             f"end={(at(5) - EPOCH) // timedelta(milliseconds=1)}) count: ")
    assert counted[:3] == [(first + "1",), (first + "2",), (first + "3",)]  # b; a on time; a late

    minimum, _ = main_rows(base.allowed_lateness("10 s").reduce(lambda r1, r2: r2 if r1["v"] > r2["v"] else r1,
                                       lambda key, ctx, mins: [(ctx.window.start, mins[0]["v"])],
                                       output_schema="start BIGINT, v BIGINT"), "start", "v")
    start = (at(0) - EPOCH) // timedelta(milliseconds=1)
    assert minimum[:3] == [(start, 1), (start, 1), (start, 5)]  # a on time, a late, b

    # the same reduce as a stream: main rows equal the bounded run's
    src = tmp_path / "in"
    _write_batches(src, [{"k": k, "ts": t, "v": v, "batch": b} for k, t, v, b in rows], [0, 1, 2, 3])
    streaming = spark.readStream.schema("k STRING, ts TIMESTAMP, v BIGINT, batch INT").option(
        "maxFilesPerTrigger", 1).json(str(src))
    sp = D.stream(streaming, time="ts", watermark="0 seconds").key_by("k").window(Tumbling.of("5 s")).allowed_lateness(
        "10 s").reduce(lambda v1, v2: {**v1, "v": v1["v"] + v2["v"]})
    query = sp.start(output=str(tmp_path / "out"), checkpoint=str(tmp_path / "chk"), trigger={"availableNow": True})
    query.awaitTermination()
    assert query.exception() is None
    got = sorted((r["window_start"], r["k"], r["v"], r["firing_kind"]) for r in spark.read.parquet(
        str(tmp_path / "out")).collect())
    # without a flush the last windows may stay open: the stream has at least what the watermark 20 s (before the
    # last batch) closed, and nothing the bounded run does not have; c's window [40 s, 45 s) never closed
    assert [s for s in summed if s[0] < at(20)] == [g for g in got if g[0] < at(20)]
    assert set(got) <= set(summed) and all(g[0] < at(40) for g in got)
    assert query.timeweave_metrics["late"] == 1 and query.timeweave_metrics["rows_in"] == len(rows)


@pytest.mark.spark
def test_a_pipeline_is_checked_before_any_spark_job(spark) -> None:
    df = spark.createDataFrame([], SCHEMA)

    def build():
        p = pipelines(df)["tumble_early_lateness"]
        with pytest.raises(SpecError, match="comes before the window function"):
            p.evictor(CountEvictor.of(1))
        with pytest.raises(SpecError, match="lacks the key column"):
            p.streaming(emit="upsert")
        with pytest.raises(SpecError, match="start\\(\\) runs a streaming DataFrame"):
            p.streaming()
        return p.run_batch()  # lazy: planned, not run

    no_spark_job(spark, build)


# =================================================================================================
# The job registry entry
# =================================================================================================
def job_pipeline(df):
    """The pipeline a job config names (``tests.spark.test_datastream:job_pipeline``)."""
    return (D.stream(df, time="ts", watermark=DELAY).key_by("k").window(Tumbling.of("1 min")).allowed_lateness("30 s")
            .aggregate(SumCount(), output_schema="n BIGINT, total BIGINT"))


def job_config(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    config = {"datastream": {"pipeline": "tests.spark.test_datastream:job_pipeline"},
              "input": {"path": str(tmp_path / "in"), "format": "json", "schema": DDL,
                        "options": {"maxFilesPerTrigger": "1"}},
              "output": {"path": str(tmp_path / "out")}, "checkpoint": str(tmp_path / "chk")}
    config.update(changes)
    return config


@pytest.mark.parametrize("change, message", [
    ({"datastream": {"pipeline": "nomodule"}}, "datastream.pipeline: expected 'package.module:function'"),
    ({"datastream": {"pipeline": "a:b", "window": 1}}, "datastream.window: unknown key"),
    ({"input": {"path": "in", "format": "json", "schema": DDL, "watermark_delay": "1 s"}},
     "input.watermark_delay: a DataStream pipeline names its own watermark"),
    ({"datastream": {"pipeline": "a:b", "emit": "changes"}},
     "datastream.emit: expected 'append', 'retract' or 'upsert', got 'changes'"),
])
def test_the_job_config_is_strict(tmp_path: Path, change, message) -> None:
    from timeweave.jobs.config import ConfigError, load_job_config

    with pytest.raises(ConfigError) as caught:
        load_job_config(job_config(tmp_path, **change))
    assert message in str(caught.value)


def test_the_job_config_selects_the_datastream_operator(tmp_path: Path) -> None:
    from timeweave.jobs.config import load_job_config
    from timeweave.jobs.datastream import DataStreamJobConfig, describe

    job = load_job_config(job_config(tmp_path))
    assert isinstance(job, DataStreamJobConfig)
    assert describe(job).startswith("DataStream window job: pipeline tests.spark.test_datastream:job_pipeline;")
    upsert = load_job_config(job_config(tmp_path, datastream={"pipeline": "m:f", "emit": "Upsert"}))
    assert upsert.emit.value == "upsert" and describe(upsert).startswith("DataStream window job: pipeline m:f, "
                                                                           "upsert changelog;")


@pytest.mark.spark
def test_the_streaming_job_runs_the_named_pipeline_and_flushes(spark, tmp_path: Path) -> None:
    from timeweave.jobs.datastream import build_pipeline
    from timeweave.jobs.streaming import run_streaming

    rows = random_rows(11, n=24, batches=3)
    _write_batches(tmp_path / "in", rows, [0, 1, 2])
    config = job_config(tmp_path)
    metrics = run_streaming(config, spark, flush=True)
    static = spark.createDataFrame([tuple(r.values()) for r in rows], SCHEMA)
    expected = build_pipeline(config["datastream"]["pipeline"], static).run_batch(arrival="batch")
    assert _collect_main(spark.read.parquet(str(tmp_path / "out"))) == _collect_main(expected.main)
    late_path = tmp_path / "out_late"  # the writer writes an output only when it has rows
    got_late = _collect_main(spark.read.parquet(str(late_path))) if late_path.exists() else Counter()
    assert got_late == _collect_main(expected.late)
    assert metrics["rows_in"] == len(rows) and metrics["kind"] == "datastream"


@pytest.mark.spark
def test_the_streaming_job_writes_the_changelog_its_config_asks_for(spark, tmp_path: Path) -> None:
    from timeweave.jobs.datastream import build_pipeline
    from timeweave.jobs.streaming import run_streaming

    rows = random_rows(13, n=24, batches=3)
    _write_batches(tmp_path / "in", rows, [0, 1, 2])
    config = job_config(tmp_path, datastream={"pipeline": "tests.spark.test_datastream:job_pipeline",
                                              "emit": "retract"})
    metrics = run_streaming(config, spark, flush=True)
    static = spark.createDataFrame([tuple(r.values()) for r in rows], SCHEMA)
    expected = build_pipeline(config["datastream"]["pipeline"], static).run_batch(arrival="batch", emit="retract")
    got = spark.read.parquet(str(tmp_path / "out"))
    assert got.columns == ["window_start", "window_end", "pane", "n", "total", "op"]
    assert _collect_main(got) == _collect_main(expected.main)
    assert metrics["emit"] == "retract" and metrics["rows_in"] == len(rows)
