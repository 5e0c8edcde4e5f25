"""Streaming window join: the core :class:`~timeweave.core.windows.join_operator.WindowJoinOperator` per join key on
the streaming host (:mod:`timeweave.spark.host`, event time), both inputs in one keyed stream.

A registration: what is the window join's own.  Which windows a row belongs to, when a window fires, which rows
are late and how a window's rows pair up are the core's (:mod:`timeweave.core.windows`); the output schema is the
DataFrame door's (:func:`timeweave.spark.window_ops.window_join` over the same inputs, analysed only); buckets,
the state bridge, packs, heartbeats and the watermark are the host's.

1. **The elements.**  Each input's rows are keyed by the join key (the right side's key columns cast to the left
   side's types, so equal keys make equal key texts and buckets), tagged by side (``tw_op`` :data:`LEFT_ROW` /
   :data:`RIGHT_ROW`; a NULL event time :data:`DEAD_LEFT` / :data:`DEAD_RIGHT`), unioned and packed
   (:func:`timeweave.spark.host.packs.packs_with_latest_time`).  A kept row is ``[event time µs, wire text,
   key marker]`` (the marker None when a key value is NULL: a NULL key joins nothing).
2. **Watermark.**  One ``withWatermark`` over both inputs' packs (the largest event time of either input minus
   ``watermark``), heartbeats unioned in before it: the host's one watermark for the operator, as the other
   one-stream registrations take it.
3. **The state.**  :data:`timeweave.core.windows.join_operator.LAYOUT` in ``timeweave_wjoin_keys`` /
   ``timeweave_wjoin_index`` (:data:`STATE`), LZ4-compressed from 2 kB: each side's rows per open slice.

**Outputs**: main: the DataFrame door's rows (inner / outer joins: ``window_start``, ``window_end``,
``window_time``, the left's then the right's columns with their prefixes; semi / anti: the left's windowed rows),
append-only once the watermark passes the window's ``window_time``; late: ``side`` (``left`` / ``right``),
``row`` (the input row as JSON), ``reason``, ``watermark``, ``missed_windows``; dead letter: ``side``,
``reason`` (``NULL event time column <time>``), ``row``.  Both event times are ``TIMESTAMP`` (windows on the
session time zone's wall clock: an IANA zone or a fixed offset) or both ``TIMESTAMP_NTZ`` (their own clock, no
zone; they travel as the instants a UTC clock shows them at, and the window columns come back as NTZ), as in the
DataFrame door.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessorHandle

from timeweave.core.errors import SpecError
from timeweave.core.event_time import END_OF_INPUT_MS, end_of_input_ms
from timeweave.core.operator import StateLayout
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.windows import LateRow, WindowSpec
from timeweave.core.windows.join_operator import LEFT, RIGHT, JoinedRow, WindowJoinOperator
from timeweave.core.windows.ranking import check_join_windows, join_type
from timeweave.core.windows.zones import TimeShift
from timeweave.spark.host.packs import PACK, PACK_TIME, PACKS_WITH_TIME_SCHEMA, packs_with_latest_time
from timeweave.spark.host.processor import HostProcessor, StateVariables
from timeweave.spark.host.schema import BUCKET, DEAD_TS, DEFAULT_BUCKETS, KEY_TEXT, OP, ROW, TIME, TS, check_buckets
from timeweave.spark.host.state import PackedEntry, SparkKeyContext
from timeweave.spark.host.stream import DATA_ROW, BatchOutputs, delay_ms, heartbeat_rows, run_operator
from timeweave.spark.host.wire import JSON_OPTIONS, from_wire, key_columns, to_wire
from timeweave.spark.host.writer import OutputCounts
from timeweave.spark.schema import column as named
from timeweave.spark.window_tagged import (
    DEAD,
    IN_ROW,
    KIND,
    LATE,
    MAIN,
    MISSED,
    N_IN,
    REASON,
    SIDE,
    STATS,
    WATERMARK,
    dead_rows,
    event_instant,
    late_times,
    micros_as,
    session_zone,
    watermark_us_of,
)

WHERE = "window join stream"
#: ``tw_op`` of a left / right row, and of a left / right row with a NULL event time (dead letters).
LEFT_ROW, RIGHT_ROW, DEAD_LEFT, DEAD_RIGHT = DATA_ROW, 1, 4, 5
L_ROW = "__tw_l_row"  # a main row's left wire text (None: no left row)
R_ROW = "__tw_r_row"  # a main row's right wire text
W_START = "__tw_w_start"
W_END = "__tw_w_end"
W_TIME = "__tw_w_time"
SIDES = ("left", "right")
#: Where the operator's state lives (with :data:`timeweave.core.windows.join_operator.LAYOUT`).
STATE = StateVariables("timeweave_wjoin_keys", "timeweave_wjoin_index", PackedEntry)
_KEY_PREFIX = "__tw_jk"  # the join key columns as both sides key them


def tagged_schema() -> T.StructType:
    """The operator's output: every output class in one row shape (split by ``KIND``)."""
    strings = (KIND, L_ROW, R_ROW, IN_ROW, REASON, MISSED, SIDE)
    longs = (W_START, W_END, W_TIME, WATERMARK, N_IN)
    return T.StructType([*(T.StructField(n, T.StringType()) for n in strings),
                         *(T.StructField(n, T.LongType()) for n in longs)])


# =================================================================================================
# The processor
# =================================================================================================
@dataclass
class _Sink:
    joined: list[tuple[str | None, str | None, int, int, int]] = field(default_factory=list)
    late: list[tuple[str, str, str, int, str]] = field(default_factory=list)  # (side, text, reason, watermark, missed)
    n_in: int | None = None


def _time_of(side: int, row: list[Any]) -> int:
    return row[0] // 1000  # µs -> ms, floored as Spark's unix_millis


def _key_marker(text: str | None, keys: int) -> int | None:
    """1 when the key text (:func:`timeweave.spark.host.wire.key_columns`, marked) holds no NULL value, else None."""
    if keys == 0:
        return 1  # no join key: every row of the window pairs up
    if text is None or text == "n":
        return None
    if keys == 1 and text.startswith("s"):
        return 1
    values = json.loads(text)
    return 1 if len(values) == keys and all(v is not None for v in values.values()) else None


class JoinProcessor(HostProcessor):
    """The streaming host's processor of the window join: one bucket of join keys, one core
    :class:`~timeweave.core.windows.join_operator.WindowJoinOperator` state per key.  Picklable and small."""

    state = STATE
    dead_ops = (DEAD_LEFT, DEAD_RIGHT)
    timer_at_end = False

    def __init__(self, spec: WindowSpec, how: str, times: tuple[str, str], keys: int,
                 end_ms: int = END_OF_INPUT_MS, zone: str | None = None) -> None:
        self.zone = zone
        self.spec = spec
        self.how = how
        self.times = times
        self.keys = keys
        self.end_ms = end_ms

    def open(self, handle: StatefulProcessorHandle) -> None:
        self._op = WindowJoinOperator(self.spec, self.how, left_time=self.times[0], right_time=self.times[1],
                                      left_keys=("key",), right_keys=("key",), time_of=_time_of,
                                      read=lambda row, column: row[2], time_zone=self.zone)
        shift = TimeShift.of(self.zone)
        self._instant = (lambda ms: ms) if shift is None else shift.instant
        self._reasons = tuple(null_event_time_reason(t) for t in self.times)

    @property
    def layout(self) -> StateLayout:
        return self._op.layout

    def new_sink(self) -> _Sink:
        return _Sink()

    def dead_frame(self, dead: pa.Table) -> pd.DataFrame:
        ops = dead.column(OP).to_pylist()
        rows = dead.column(ROW).to_pylist()
        sides = [SIDES[LEFT if op == DEAD_LEFT else RIGHT] for op in ops]
        reasons = [self._reasons[LEFT if op == DEAD_LEFT else RIGHT] for op in ops]
        return _frame(_Sink(), list(zip(sides, reasons, rows, strict=True)))

    def group(self, table: pa.Table, sink: _Sink) -> list[tuple[str, Any]]:
        sink.n_in = len(table)
        keys = table.column(KEY_TEXT).to_pylist()
        ops = table.column(OP).to_pylist()
        times = table.column(TIME).to_pylist()
        texts = table.column(ROW).to_pylist()
        by_key: dict[str | None, list[tuple[int, list[Any]]]] = {}
        markers: dict[str | None, int | None] = {}
        for key, op, time, text in zip(keys, ops, times, texts, strict=True):
            if key not in markers:
                markers[key] = _key_marker(key, self.keys)
            by_key.setdefault(key, []).append((LEFT if op == LEFT_ROW else RIGHT, [time, text, markers[key]]))
        return list(by_key.items())

    def process(self, ctx: SparkKeyContext, elements: list[tuple[int, list[Any]]], sink: _Sink) -> None:
        self._collect(self._op.process_elements(ctx, elements), sink)

    def fire(self, ctx: SparkKeyContext, sink: _Sink) -> None:
        self._collect(self._op.on_watermark(ctx), sink)

    def _collect(self, outputs: list[Any], sink: _Sink) -> None:
        instant = self._instant
        for out in outputs:
            if out.__class__ is JoinedRow:
                w = out.window
                sink.joined.append((None if out.left is None else out.left[1],
                                    None if out.right is None else out.right[1], instant(w.start) * 1000,
                                    instant(w.end) * 1000, instant(w.end - 1) * 1000))
            elif out.__class__ is LateRow:
                side, row = out.row
                missed = json.dumps([[instant(w.start) * 1000, instant(w.end) * 1000] for w in out.missed])
                sink.late.append((SIDES[side], row[1], out.reason, watermark_us_of(out.watermark), missed))
            else:  # a DeadLetter: NULL-time rows never reach the operator (they are dead_ops)
                raise AssertionError(f"unexpected window join operator output {out!r}")

    def frames(self, sink: _Sink, always: bool) -> Iterator[pd.DataFrame]:
        if always or sink.joined or sink.late:
            yield _frame(sink)


def _frame(sink: _Sink, dead: list[tuple[str, str, str]] | None = None) -> pd.DataFrame:
    """The tagged rows of an invocation: joined rows, late rows, dead letters (side, reason, row), one stats row."""
    joined, late, dead = sink.joined, sink.late, dead or []
    stats = [] if sink.n_in is None else [sink.n_in]
    kinds = [MAIN] * len(joined) + [LATE] * len(late) + [DEAD] * len(dead) + [STATS] * len(stats)
    none_j, none_l, none_d, none_s = ([None] * len(x) for x in (joined, late, dead, stats))
    zeros = [0] * (len(late) + len(dead) + len(stats))

    def column(values: list[Any]) -> Any:
        return pd.array(values, dtype=object)

    def longs(values: list[int]) -> np.ndarray:
        return np.array(values, dtype=np.int64)

    return pd.DataFrame({
        KIND: column(kinds),
        L_ROW: column([j[0] for j in joined] + none_l + none_d + none_s),
        R_ROW: column([j[1] for j in joined] + none_l + none_d + none_s),
        IN_ROW: column(none_j + [r[1] for r in late] + [d[2] for d in dead] + none_s),
        REASON: column(none_j + [r[2] for r in late] + [d[1] for d in dead] + none_s),
        MISSED: column(none_j + [r[4] for r in late] + none_d + none_s),
        SIDE: column(none_j + [r[0] for r in late] + [d[0] for d in dead] + none_s),
        W_START: longs([j[2] for j in joined] + zeros),
        W_END: longs([j[3] for j in joined] + zeros),
        W_TIME: longs([j[4] for j in joined] + zeros),
        WATERMARK: longs([0] * len(joined) + [r[3] for r in late] + [0] * (len(dead) + len(stats))),
        N_IN: longs([0] * (len(joined) + len(late) + len(dead)) + stats),
    })


# =================================================================================================
# Building the stream
# =================================================================================================
@dataclass(frozen=True)
class StreamingJoinWindows:
    """A streaming window join: the tagged stream and how to split its micro-batches (a
    :class:`~timeweave.spark.host.writer.TaggedStream`).  ``schema`` is the main output's (the DataFrame door's);
    ``columns`` maps each main column to ``(side, input column)`` (side None: a window column)."""

    stream: DataFrame
    schema: T.StructType
    schemas: tuple[T.StructType, T.StructType]
    columns: tuple[tuple[str, int | None, str], ...]

    compress_cache: ClassVar[bool] = True

    def count_columns(self) -> list[Column]:
        kind = F.col(KIND)
        return [F.count_if(kind == MAIN).alias("joined"), F.count_if(kind == LATE).alias("late"),
                F.count_if(kind == DEAD).alias("dead"),
                F.coalesce(F.sum(F.when(kind == STATS, F.col(N_IN))), F.lit(0)).alias("n_in")]

    def counts(self, observed: Mapping[str, Any]) -> OutputCounts:
        dead = int(observed["dead"])
        return OutputCounts({"rows_in": int(observed["n_in"]) + dead}, main=int(observed["joined"]),
                            late=int(observed["late"]), dead=dead)

    def split(self, batch: DataFrame) -> BatchOutputs:
        window_type = self.schema["window_start"].dataType
        main = batch.where(F.col(KIND) == MAIN).select(
            from_wire(F.col(L_ROW), self.schemas[LEFT]).alias("__tw_l"),
            from_wire(F.col(R_ROW), self.schemas[RIGHT]).alias("__tw_r"), W_START, W_END, W_TIME)
        windows = {"window_start": micros_as(F.col(W_START), window_type),
                   "window_end": micros_as(F.col(W_END), window_type),
                   "window_time": micros_as(F.col(W_TIME), self.schema["window_time"].dataType)}
        picked = []
        for name, side, source in self.columns:
            value = windows[source] if side is None else F.col(("__tw_l", "__tw_r")[side]).getField(source)
            picked.append(value.cast(self.schema[name].dataType).alias(name))
        main = main.select(*picked)
        as_json = [F.to_json(from_wire(F.col(IN_ROW), s), JSON_OPTIONS) for s in self.schemas]
        watermark, missed = late_times(window_type)
        late = batch.where(F.col(KIND) == LATE).select(
            F.col(SIDE).alias("side"),
            F.when(F.col(SIDE) == F.lit("left"), as_json[LEFT]).otherwise(as_json[RIGHT]).alias("row"),
            F.col(REASON).alias("reason"), watermark, missed)
        return BatchOutputs(main, late, dead_rows(batch))


@dataclass(frozen=True)
class JoinQuery:
    """A window join checked against its inputs (no Spark job): the spec, the join type, each side's event-time
    column and join keys as the inputs spell them, the keys' common types (the left's), the main output's schema
    (the DataFrame door's) and where each main column comes from (``(name, side or None for a window column,
    source column)``) and ``zone`` (the session time zone whose wall clock aligns the windows; None: UTC)."""

    spec: WindowSpec
    how: str
    times: tuple[str, str]
    keys: tuple[tuple[str, ...], tuple[str, ...]]
    key_types: tuple[T.DataType, ...]
    schema: T.StructType
    columns: tuple[tuple[str, int | None, str], ...]
    zone: str | None = None


def bind_join_query(left: DataFrame, right: DataFrame, *, on: Any, how: str, time: str | tuple[str, str],
                    window: WindowSpec | tuple[WindowSpec, WindowSpec], left_prefix: str, right_prefix: str,
                    where: str) -> JoinQuery:
    """Check a window join for the core operator (streaming, backfill) against the inputs' schemas; errors name
    the argument.  The output schema is the DataFrame door's over empty inputs (analysis only)."""
    from timeweave.spark import window_ops  # the DataFrame door: its checks, its schema
    from timeweave.spark.windows import time_kind

    kind = join_type(how)
    left_spec, right_spec = window if isinstance(window, tuple) else (window, window)
    check_join_windows(left_spec, right_spec)
    spark = left.sparkSession
    empty = (spark.createDataFrame([], left.schema), spark.createDataFrame([], right.schema))
    schema = window_ops.window_join(*empty, on=on, how=how, time=time, window=window, left_prefix=left_prefix,
                                    right_prefix=right_prefix).schema
    named_times = time if isinstance(time, tuple) else (time, time)
    times = (window_ops._spelled(left.columns, named_times[0], "time", where),
             window_ops._spelled(right.columns, named_times[1], "time", where))
    kinds = [time_kind(df.schema, t, f"{where} ({SIDES[side]})")[1]
             for side, df, t in ((LEFT, left, times[LEFT]), (RIGHT, right, times[RIGHT]))]
    if kinds[LEFT] != kinds[RIGHT]:
        # one watermark and one window clock for both inputs: an instant and a zone-less wall clock have no
        # common clock to wait on
        named_kinds = ["TIMESTAMP" if k == "ltz" else "TIMESTAMP_NTZ" for k in kinds]
        raise SpecError("time", f"the left event time {times[LEFT]!r} is a {named_kinds[LEFT]} and the right "
                        f"{times[RIGHT]!r} a {named_kinds[RIGHT]}: the streaming and backfill window join need both "
                        "of one type; cast one", where=where)
    zone = session_zone(spark, kinds[LEFT])
    pairs = window_ops._pairs(on, where)
    left_keys = tuple(window_ops._spelled(left.columns, lk, "on", where) for lk, _ in pairs)
    right_keys = tuple(window_ops._spelled(right.columns, rk, "on", where) for _, rk in pairs)
    window_names = ("window_start", "window_end", "window_time")
    if kind in ("SEMI", "ANTI"):
        columns = tuple((n, None if n in window_names else LEFT, n) for n in schema.names)
    else:
        sources: dict[str, tuple[int | None, str]] = {n: (None, n) for n in window_names}
        sources.update({left_prefix + c: (LEFT, c) for c in left.columns})
        sources.update({right_prefix + c: (RIGHT, c) for c in right.columns})
        columns = tuple((n, *sources[n]) for n in schema.names)
    return JoinQuery(left_spec, kind, times, (left_keys, right_keys),
                     tuple(left.schema[k].dataType for k in left_keys), schema, columns, zone)


def _side_rows(df: DataFrame, keys: Sequence[str], key_types: Sequence[T.DataType], time: str, op: int, dead_op: int,
               buckets: int) -> DataFrame:
    """One input's rows in the host's shape, keyed by its join key cast to ``key_types``."""
    aliased = [f"{_KEY_PREFIX}{i}" for i in range(len(keys))]
    keyed = df.select(*[named(c) for c in df.columns],
                      *[named(k).cast(t).alias(a) for k, t, a in zip(keys, key_types, aliased, strict=True)])
    event = named(time)
    dead = event.isNull()
    original = F.to_json(F.struct(*[named(c) for c in df.columns]))
    return keyed.select(
        *key_columns(keyed, aliased, buckets, marked=True),
        F.when(dead, F.lit(dead_op)).otherwise(F.lit(op)).cast("tinyint").alias(OP),
        F.unix_micros(F.when(dead, F.lit(DEAD_TS).cast("timestamp"))
                      .otherwise(event_instant(event, df.schema[time].dataType))).alias(TIME),
        F.when(dead, original).otherwise(to_wire(df)).alias(ROW),
    )


def window_join_stream(
    left: DataFrame,
    right: DataFrame,
    *,
    on: str | Sequence[str] | Sequence[tuple[str, str]] = (),
    how: str = "inner",
    time: str | tuple[str, str],
    window: WindowSpec | tuple[WindowSpec, WindowSpec],
    watermark: str | None,
    left_prefix: str = "",
    right_prefix: str = "",
    heartbeat: DataFrame | None = None,
    buckets: int = DEFAULT_BUCKETS,
) -> StreamingJoinWindows:
    """The streaming window join of two streaming DataFrames (see the module docstring): the arguments of
    :func:`timeweave.spark.window_ops.window_join` over the raw inputs (``time=``, ``window=``), plus ``watermark``
    (required), ``heartbeat`` and ``buckets``.  Everything is checked before any Spark job.

    Example::

        from timeweave.core.windows import tumble
        joined = window_join_stream(left, right, on="num", how="full", time="row_time", window=tumble("5 minutes"),
                                    watermark="1 minute", left_prefix="L_", right_prefix="R_")
    """
    if watermark is None or (isinstance(watermark, str) and not watermark.strip()):
        raise SpecError("watermark", "a streaming window join needs an event-time watermark (the allowed "
                        "out-of-orderness, e.g. watermark='1 minute'): windows are joined when the watermark passes "
                        "their end, and without one none ever is", where=WHERE)
    check_buckets(buckets, WHERE)
    q = bind_join_query(left, right, on=on, how=how, time=time, window=window, left_prefix=left_prefix,
                        right_prefix=right_prefix, where=WHERE)
    end_ms = end_of_input_ms(delay_ms(watermark, "watermark"))
    rows = _side_rows(left, q.keys[LEFT], q.key_types, q.times[LEFT], LEFT_ROW, DEAD_LEFT, buckets).unionByName(
        _side_rows(right, q.keys[RIGHT], q.key_types, q.times[RIGHT], RIGHT_ROW, DEAD_RIGHT, buckets))
    internal = rows.mapInArrow(packs_with_latest_time, PACKS_WITH_TIME_SCHEMA).select(
        BUCKET, F.lit(DATA_ROW).cast("tinyint").alias(OP), F.timestamp_micros(F.col(PACK_TIME)).alias(TS), PACK)
    if heartbeat is not None:
        internal = internal.unionByName(heartbeat_rows(heartbeat, internal))
    internal = internal.withWatermark(TS, watermark).drop(TS)
    processor = JoinProcessor(q.spec, q.how, q.times, len(q.keys[LEFT]), end_ms, q.zone)
    stream = run_operator(internal, processor, tagged_schema(), event_time=True)
    return StreamingJoinWindows(stream, q.schema, (left.schema, right.schema), q.columns)


__all__ = ["STATE", "JoinProcessor", "JoinQuery", "StreamingJoinWindows", "bind_join_query", "tagged_schema",
           "window_join_stream"]
