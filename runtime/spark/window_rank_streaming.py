"""Streaming window Top-N and window deduplication: the core
:class:`~timeweave.core.windows.rank_operator.WindowRankOperator` per PARTITION BY key on the streaming host
(:mod:`timeweave.spark.host`, event time).

A registration: what is the rank operator's own.  Which windows a row belongs to, when a window fires, which
rows are late for which windows and how a window's rows are ranked are the core's
(:mod:`timeweave.core.windows`); the output schema is the DataFrame door's
(:func:`timeweave.spark.window_ops.window_top_n` over the same input, analysed only); buckets, the state bridge,
packs, heartbeats and the watermark are the host's (:func:`timeweave.spark.host.stream.keyed_packs`, as the
window aggregate's registration, :mod:`timeweave.spark.window_streaming`, whose tagged columns, late and
dead-letter shapes this one shares).

1. **The elements.**  A row is kept as ``[event time µs, wire text, ORDER BY values...]`` (the values in the
   host's wire format: timestamps µs, dates days, decimals exact): what ranking needs, and the row to emit.
2. **The state.**  :data:`timeweave.core.windows.rank_operator.LAYOUT` in the bucket's MapState
   ``timeweave_wrank_keys`` and index ``timeweave_wrank_index`` (:data:`STATE`), LZ4-compressed from 2 kB: per key,
   each slice's candidate rows (those that can still rank within the range).
3. **Emission.**  A window's ranked rows once the watermark passes its ``window_time`` (append-only, final); the
   flush's watermark (``END_OF_TIME``) fires every remaining window, as a batch run emits it.

**Outputs** (one tagged stream split per micro-batch by :meth:`StreamingRanks.split`, written by the host's writer):
main: the DataFrame door's rows (the input columns, ``window_start``, ``window_end``, ``window_time``, the rank
column); late: the input columns + ``reason`` + ``watermark`` + ``missed_windows``; dead letter: ``side``
(``input``), ``reason`` (``NULL event time column <time>``), ``row`` (JSON).

The event time is a ``TIMESTAMP`` (windows on the session time zone's wall clock: an IANA zone or a fixed offset)
or a ``TIMESTAMP_NTZ`` (its own clock, no zone), as in the DataFrame door; an NTZ time travels as the instant a UTC
clock shows it at (Spark's watermark needs a TIMESTAMP) and the window columns come back as NTZ
(:mod:`timeweave.spark.window_tagged`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
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
from timeweave.core.windows.rank_operator import RankedRow, WindowRankOperator
from timeweave.core.windows.ranking import RankRange, SortKey, dedup_order, sort_keys
from timeweave.core.windows.zones import TimeShift
from timeweave.spark.host.processor import HostProcessor, StateVariables
from timeweave.spark.host.schema import DEFAULT_BUCKETS, KEY_TEXT, MALFORMED_ROW, ROW, TIME, check_buckets
from timeweave.spark.host.state import PackedEntry, SparkKeyContext
from timeweave.spark.host.stream import DEAD_ROW, BatchOutputs, dead_letters, delay_ms, keyed_packs, run_operator
from timeweave.spark.host.wire import from_wire
from timeweave.spark.host.writer import OutputCounts
from timeweave.spark.render import quote
from timeweave.spark.window_tagged import (
    DEAD,
    IN_ROW,
    KIND,
    LATE,
    LATE_COLUMNS,
    MAIN,
    MISSED,
    N_IN,
    REASON,
    SIDE,
    STATS,
    WATERMARK,
    dead_rows,
    event_instant,
    late_rows,
    micros_as,
    rows_decoder,
    session_zone,
    watermark_us_of,
)

W_START = "__tw_w_start"  # a main row's window start (µs)
W_END = "__tw_w_end"  # a main row's window end (µs)
W_TIME = "__tw_w_time"  # a main row's window_time (µs): the instant of the window's last wall-clock millisecond
RANK = "__tw_rank"  # a main row's rank
#: Where the operator's state lives (with :data:`timeweave.core.windows.rank_operator.LAYOUT`: the checkpoint layout).
STATE = StateVariables("timeweave_wrank_keys", "timeweave_wrank_index", PackedEntry)


def tagged_schema() -> T.StructType:
    """The operator's output: every output class in one row shape (split by ``KIND``)."""
    strings = (KIND, IN_ROW, REASON, MISSED, SIDE)
    longs = (W_START, W_END, W_TIME, RANK, WATERMARK, N_IN)
    return T.StructType([*(T.StructField(n, T.StringType()) for n in strings),
                         *(T.StructField(n, T.LongType()) for n in longs)])


# =================================================================================================
# The query, checked before any Spark job
# =================================================================================================
@dataclass(frozen=True)
class RankQuery:
    """A window Top-N (or deduplication) checked against its input: the spec, the event-time column, the
    PARTITION BY keys and ORDER BY keys as the input spells them, the ranks, the rank column (None: left out),
    the main output's schema (the DataFrame door's), ``where`` (the messages' door name), ``keep`` (a
    deduplication's ``first`` / ``last``; None: a Top-N) and ``zone`` (the session time zone whose wall clock
    aligns the windows; None: UTC)."""

    spec: WindowSpec
    time: str
    keys: tuple[str, ...]
    order: tuple[SortKey, ...]
    ranks: RankRange
    rank_column: str | None
    schema: T.StructType
    where: str
    keep: str | None = None
    zone: str | None = None

    def operator(self, **readers: Any) -> WindowRankOperator:
        """The core operator of this query (``time_of``, ``read``: how it reads the host's rows)."""
        if self.keep is not None:
            return WindowRankOperator.deduplicate(self.spec, time_column=self.time, keep=self.keep,
                                                  time_zone=self.zone, **readers)
        return WindowRankOperator(self.spec, self.order, self.ranks, time_column=self.time, where=self.where,
                                  time_zone=self.zone, **readers)

    def instant(self) -> Any:
        """How a window bound (ms, the operator's clock) becomes an instant (ms): the zone's, or as it is."""
        shift = TimeShift.of(self.zone)
        return (lambda ms: ms) if shift is None else shift.instant

    def slim(self) -> RankQuery:
        """This query without its Spark schema (what travels to the executors; pickled small)."""
        return replace(self, schema=None)  # type: ignore[arg-type]


def bind_rank_query(df: DataFrame, *, order_by: Any, ranks: RankRange, partition_by: str | Sequence[str], time: str,
                    window: WindowSpec, rank_column: str | None, where: str, keep: str | None = None) -> RankQuery:
    """Check a window Top-N for the core operator (streaming, backfill) against ``df``'s schema; errors name the
    argument.  The output schema is the DataFrame door's over an empty input (analysis only: no Spark job)."""
    from timeweave.spark import window_ops  # the DataFrame door: its checks, its schema
    from timeweave.spark.windows import time_kind

    empty = df.sparkSession.createDataFrame([], df.schema)
    if keep is not None:
        schema = window_ops.window_deduplicate(empty, time=time, keys=partition_by, keep=keep, window=window,
                                               rank_column=rank_column).schema
    else:
        schema = window_ops.window_top_n(empty, order_by=order_by, partition_by=partition_by, ranks=ranks,
                                         rank_column=rank_column, time=time, window=window).schema
    columns = df.columns
    spelled_time, kind = time_kind(df.schema, window_ops._spelled(columns, time, "time", where), where)
    zone = session_zone(df.sparkSession, kind)
    keys = tuple(window_ops._spelled(columns, k, "partition_by", where)
                 for k in window_ops._names(partition_by, "partition_by", where))
    order = tuple(SortKey(window_ops._spelled(columns, k.column, "order_by", where), k.descending, k.nulls_first)
                  for k in sort_keys(order_by))
    for name in LATE_COLUMNS:
        if any(c.lower() == name for c in columns):
            raise SpecError("df", f"column '{name}' is added by the late output; rename the input column", where=where)
    return RankQuery(window, spelled_time, keys, order, ranks, rank_column, schema, where, keep, zone)


def top_n_ranks(n: int | None, function: str, ranks: RankRange | tuple[int, int] | None, where: str) -> RankRange:
    """The rank range of ``n`` / ``ranks=(lower, upper)`` (exactly one), as the DataFrame door takes them."""
    if (n is None) == (ranks is None):
        raise SpecError("n", "pass exactly one of n (ranks 1..n) and ranks=(lower, upper)", where=where)
    if isinstance(ranks, RankRange):
        return ranks
    if ranks is not None:
        try:
            lower, upper = ranks
        except (TypeError, ValueError):
            raise SpecError("ranks", f"expected (lower, upper), got {ranks!r}", where=where) from None
        return RankRange(function, lower, upper)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise SpecError("n", f"expected an integer >= 1, got {n!r}", where=where)
    return RankRange.top(n, function)


# =================================================================================================
# The processor
# =================================================================================================
@dataclass
class _Sink:
    """One handler call's outputs: ranked rows (wire text, start µs, end µs, rank), late rows, the input count."""

    ranked: list[tuple[str, int, int, int, int]] = field(default_factory=list)  # (text, start, end, time, rank)
    late: list[tuple[str, str, int, str]] = field(default_factory=list)  # (wire text, reason, watermark µs, missed)
    n_in: int | None = None


def _reader(order: Sequence[SortKey]) -> Any:
    """How the core reads an ORDER BY value of a kept row ``[time µs, wire text, values...]``."""
    slot = {k.column: 2 + i for i, k in enumerate(order)}
    return lambda row, column: row[slot[column]]


def _time_of(row: list[Any]) -> int:
    """A kept row's event time in ms (the core's window unit), floored as Spark's ``unix_millis``."""
    return row[0] // 1000


class RankProcessor(HostProcessor):
    """The streaming host's processor of window Top-N / deduplication: one bucket of PARTITION BY keys, one core
    :class:`~timeweave.core.windows.rank_operator.WindowRankOperator` state per key.  Picklable and small."""

    state = STATE
    dead_ops = (DEAD_ROW, MALFORMED_ROW)  # MALFORMED_ROW: a source's malformed record (keyed_packs)
    # Every key holding state keeps a core timer at its next window's window_time, which the end of input passes.
    timer_at_end = False

    def __init__(self, query: RankQuery, input_json: str, end_ms: int = END_OF_INPUT_MS) -> None:
        self.query = query.slim()
        self.input_json = input_json
        self.end_ms = end_ms

    def open(self, handle: StatefulProcessorHandle) -> None:
        schema = T.StructType.fromJson(json.loads(self.input_json))
        self._op = self.query.operator(time_of=_time_of, read=_reader(self.query.order))
        self._decode = rows_decoder(schema)
        self._instant = self.query.instant()
        self._columns = [k.column for k in self._op.order]
        self._dead_reason = null_event_time_reason(self.query.time)

    @property
    def layout(self) -> StateLayout:
        return self._op.layout

    def new_sink(self) -> _Sink:
        return _Sink()

    def dead_frame(self, dead: pa.Table) -> pd.DataFrame:
        return _frame(_Sink(), *dead_letters(dead, self._dead_reason))

    def group(self, table: pa.Table, sink: _Sink) -> list[tuple[str, Any]]:
        sink.n_in = len(table)
        keys = table.column(KEY_TEXT).to_pylist()
        times = table.column(TIME).to_pylist()
        texts = table.column(ROW).to_pylist()
        by_key: dict[str | None, list[int]] = {}
        for i, key in enumerate(keys):
            by_key.setdefault(key, []).append(i)
        columns, time = self._columns, self.query.time
        out = []
        for key, positions in by_key.items():
            decoded = self._decode([texts[i] for i in positions])
            # the event time orders as its µs (a TIMESTAMP_NTZ's wire value is text)
            out.append((key, [[times[i], texts[i], *(times[i] if c == time else row[c] for c in columns)]
                              for row, i in zip(decoded, positions, strict=True)]))
        return out

    def process(self, ctx: SparkKeyContext, elements: list[list[Any]], sink: _Sink) -> None:
        self._collect(self._op.process_elements(ctx, elements), sink)

    def fire(self, ctx: SparkKeyContext, sink: _Sink) -> None:
        self._collect(self._op.on_watermark(ctx), sink)

    def _collect(self, outputs: list[Any], sink: _Sink) -> None:
        instant = self._instant
        for out in outputs:
            if out.__class__ is RankedRow:
                w = out.window
                sink.ranked.append((out.row[1], instant(w.start) * 1000, instant(w.end) * 1000,
                                    instant(w.end - 1) * 1000, out.rank))
            elif out.__class__ is LateRow:
                missed = json.dumps([[instant(w.start) * 1000, instant(w.end) * 1000] for w in out.missed])
                sink.late.append((out.row[1], out.reason, watermark_us_of(out.watermark), missed))
            else:  # a DeadLetter: NULL-time rows never reach the operator (they are dead_ops)
                raise AssertionError(f"unexpected window rank operator output {out!r}")

    def frames(self, sink: _Sink, always: bool) -> Iterator[pd.DataFrame]:
        if always or sink.ranked or sink.late:
            yield _frame(sink)


def _frame(sink: _Sink, dead: list[str] | None = None, dead_reasons: list[str] | None = None) -> pd.DataFrame:
    """The tagged rows of an invocation: ranked rows, late rows, dead letters, one ``stats`` row when counted."""
    ranked, late, dead = sink.ranked, sink.late, dead or []
    stats = [] if sink.n_in is None else [sink.n_in]
    kinds = [MAIN] * len(ranked) + [LATE] * len(late) + [DEAD] * len(dead) + [STATS] * len(stats)
    none_r, none_l, none_d, none_s = ([None] * len(x) for x in (ranked, late, dead, stats))
    zeros = [0] * (len(late) + len(dead) + len(stats))

    def column(values: list[Any]) -> Any:
        return pd.array(values, dtype=object)

    def longs(values: list[int]) -> np.ndarray:
        return np.array(values, dtype=np.int64)

    return pd.DataFrame({
        KIND: column(kinds),
        IN_ROW: column([r[0] for r in ranked] + [r[0] for r in late] + dead + none_s),
        REASON: column(none_r + [r[1] for r in late] + (dead_reasons or []) + none_s),
        MISSED: column(none_r + [r[3] for r in late] + none_d + none_s),
        SIDE: column(none_r + none_l + ["input"] * len(dead) + none_s),
        W_START: longs([r[1] for r in ranked] + zeros),
        W_END: longs([r[2] for r in ranked] + zeros),
        W_TIME: longs([r[3] for r in ranked] + zeros),
        RANK: longs([r[4] for r in ranked] + zeros),
        WATERMARK: longs([0] * len(ranked) + [r[2] for r in late] + [0] * (len(dead) + len(stats))),
        N_IN: longs([0] * (len(ranked) + len(late) + len(dead)) + stats),
    })


# =================================================================================================
# Building the stream
# =================================================================================================
@dataclass(frozen=True)
class StreamingRanks:
    """A streaming window Top-N / deduplication: the tagged stream and how to split each of its micro-batches (the
    :class:`~timeweave.spark.host.writer.TaggedStream` the host's writer takes).  ``schema`` is the main output's
    (the DataFrame door's), ``input_schema`` the input's, ``rank_column`` the rank's output name (None: none)."""

    stream: DataFrame
    schema: T.StructType
    input_schema: T.StructType
    rank_column: str | None

    compress_cache: ClassVar[bool] = True

    def count_columns(self) -> list[Column]:
        """The batch's counts, observed by the host's writer."""
        kind = F.col(KIND)
        return [
            F.count_if(kind == MAIN).alias("ranked"),
            F.count_if(kind == LATE).alias("late"),
            F.count_if(kind == DEAD).alias("dead"),
            F.coalesce(F.sum(F.when(kind == STATS, F.col(N_IN))), F.lit(0)).alias("n_in"),
        ]

    def counts(self, observed: Mapping[str, Any]) -> OutputCounts:
        """:meth:`count_columns`' values as the writer's counts (dead letters are input rows too)."""
        dead = int(observed["dead"])
        return OutputCounts({"rows_in": int(observed["n_in"]) + dead}, main=int(observed["ranked"]),
                            late=int(observed["late"]), dead=dead)

    def split(self, batch: DataFrame) -> BatchOutputs:
        """Main, late and dead-letter DataFrames of one micro-batch of :attr:`stream`."""
        window_type = self.schema["window_start"].dataType
        computed = {
            "window_start": micros_as(F.col(W_START), window_type),
            "window_end": micros_as(F.col(W_END), window_type),
            "window_time": micros_as(F.col(W_TIME), self.schema["window_time"].dataType),
        }
        if self.rank_column is not None:
            computed[self.rank_column] = F.col(RANK).cast(self.schema[self.rank_column].dataType)
        main = batch.where(F.col(KIND) == MAIN).select(from_wire(F.col(IN_ROW), self.input_schema).alias("__tw_in"),
                                                       *(c.alias(n) for n, c in computed.items()))
        main = main.select(*[F.col(quote(f.name)) if f.name in computed else F.col("__tw_in").getField(f.name).alias(f.name)
                             for f in self.schema.fields])
        late = late_rows(batch, self.input_schema, window_type)
        return BatchOutputs(main, late, dead_rows(batch))


def _stream(df: DataFrame, query: RankQuery, watermark: str | None, heartbeat: DataFrame | None,
            buckets: int) -> StreamingRanks:
    end_ms = end_of_input_ms(delay_ms(watermark, "watermark"))  # type: ignore[arg-type]
    event = event_instant(F.col(quote(query.time)), df.schema[query.time].dataType)
    internal = keyed_packs(df, query.keys, event, buckets, heartbeat, watermark)  # type: ignore[arg-type]
    processor = RankProcessor(query, df.schema.json(), end_ms)
    stream = run_operator(internal, processor, tagged_schema(), event_time=True)
    return StreamingRanks(stream, query.schema, df.schema, query.rank_column)


def _check_watermark(watermark: str | None, operation: str, where: str) -> None:
    if watermark is None or (isinstance(watermark, str) and not watermark.strip()):
        raise SpecError("watermark", f"a streaming {operation} needs an event-time watermark (the "
                        "allowed out-of-orderness, e.g. watermark='1 minute'): windows are emitted when the "
                        "watermark passes their end, and without one none ever is", where=where)


def window_top_n_stream(
    df: DataFrame,
    n: int | None = None,
    *,
    order_by: str | SortKey | Sequence[str | SortKey],
    partition_by: str | Sequence[str] = (),
    function: str = "ROW_NUMBER",
    ranks: RankRange | tuple[int, int] | None = None,
    rank_column: str | None = "rownum",
    time: str,
    window: WindowSpec,
    watermark: str | None,
    heartbeat: DataFrame | None = None,
    buckets: int = DEFAULT_BUCKETS,
) -> StreamingRanks:
    """The streaming window Top-N of a streaming DataFrame (see the module docstring): the arguments of
    :func:`timeweave.spark.window_ops.window_top_n` over the raw input (``time=``, ``window=``), plus
    ``watermark`` (the event time's allowed out-of-orderness, required), ``heartbeat`` (a stream with one
    timestamp column whose rows move the watermark; the job's flush) and ``buckets`` (part of the state layout).
    Everything is checked before any Spark job.

    Example::

        from timeweave.core.windows import tumble
        top = window_top_n_stream(bids, 3, order_by="price DESC", time="bidtime", window=tumble("10 minutes"),
                                  watermark="1 minute")
        def write(batch, batch_id):
            top.split(batch.persist()).main.write.mode("append").parquet("out/top3")
        top.stream.writeStream.foreachBatch(write).option("checkpointLocation", "chk").start()
    """
    where = "window Top-N stream"
    _check_watermark(watermark, "window Top-N", where)
    check_buckets(buckets, where)
    range_ = top_n_ranks(n, function, ranks, where)
    query = bind_rank_query(df, order_by=order_by, ranks=range_, partition_by=partition_by, time=time, window=window,
                            rank_column=rank_column, where=where)
    return _stream(df, query, watermark, heartbeat, buckets)


def window_deduplicate_stream(
    df: DataFrame,
    *,
    time: str,
    keys: str | Sequence[str] = (),
    keep: str = "first",
    window: WindowSpec,
    rank_column: str | None = None,
    watermark: str | None,
    heartbeat: DataFrame | None = None,
    buckets: int = DEFAULT_BUCKETS,
) -> StreamingRanks:
    """The streaming window deduplication (Top-1 by ROW_NUMBER on ``time``, Flink's rule) of a streaming
    DataFrame: the arguments of :func:`timeweave.spark.window_ops.window_deduplicate` over the raw input, plus
    ``watermark``, ``heartbeat`` and ``buckets`` as :func:`window_top_n_stream` takes them.

    Example::

        from timeweave.core.windows import tumble
        last = window_deduplicate_stream(bids, time="bidtime", keys="item", keep="last",
                                         window=tumble("10 minutes"), watermark="1 minute")
    """
    where = "window deduplication stream"
    _check_watermark(watermark, "window deduplication", where)
    check_buckets(buckets, where)
    query = bind_rank_query(df, order_by=[dedup_order(time, keep)], ranks=RankRange.top(1), partition_by=keys,
                            time=time, window=window, rank_column=rank_column, where=where, keep=keep)
    return _stream(df, query, watermark, heartbeat, buckets)


__all__ = [
    "STATE",
    "RankProcessor",
    "RankQuery",
    "StreamingRanks",
    "bind_rank_query",
    "tagged_schema",
    "top_n_ranks",
    "window_deduplicate_stream",
    "window_top_n_stream",
]
