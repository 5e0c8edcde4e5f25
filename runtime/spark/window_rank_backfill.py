"""The sliced window Top-N / deduplication backfill: ``[start, end)`` of the event time in N slices, open windows'
candidate rows carried across the edges.

The rank operator's registration on the keyed backfill driver (:func:`timeweave.spark.host.backfill.run_keyed`),
as window aggregation's (:mod:`timeweave.spark.window_backfill`): the key is the PARTITION BY columns, the order
within a key the event time, and per key (:class:`_RankSlice`, through the keyed-operator contract) the core
:class:`~timeweave.core.windows.rank_operator.WindowRankOperator` keeps each open slice's candidate rows.  At a
slice edge that state is snapshot (:data:`timeweave.core.windows.rank_operator.LAYOUT`, the state codec's bytes)
and restored in the next slice, so a HOP or CUMULATE window crossing an edge is ranked once, over all its rows.

**Emission** is window aggregation's backfill rule: a key's rows arrive in event-time order, so after a run of
rows whose last time is ``t`` the watermark moves to just below ``t``'s millisecond and the windows ending at or
before it fire; the last slice's end of input fires the rest.  No row is ever late (a backfill is a batch run),
and the union over the slices equals :func:`timeweave.spark.window_ops.window_top_n` (or ``window_deduplicate``)
over the rows in ``[start, end)``.

Layout (each slice overwritten whole): ``<output>/slice=<label>/`` (the DataFrame door's schema),
``<output>/_state/slice=<label>/`` (PARTITION BY columns + ``__tw_state``), ``<dead_letter>/slice=none/`` (rows
with a NULL event time: ``side``, ``reason``, ``row``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from timeweave.core.errors import SpecError, StateFormatError
from timeweave.core.state import KeyContext
from timeweave.core.state_codec import decode, encode
from timeweave.core.windows import LateRow, WindowSpec
from timeweave.core.windows.rank_operator import LAYOUT, RankedRow
from timeweave.core.windows.ranking import RankRange, SortKey, dedup_order
from timeweave.spark.host import backfill as host
from timeweave.spark.host.backfill import MAIN, REJECT_ROW, Tagged
from timeweave.spark.schema import column as named
from timeweave.spark.window_rank_streaming import RankQuery, bind_rank_query, top_n_ranks
from timeweave.spark.window_tagged import arrow_values, time_bounds, to_arrow_values
from timeweave.spark.windows import window_dead_letters


class _RankSlice:
    """Window Top-N over one slice's keys (a :class:`~timeweave.spark.host.backfill.SliceOperator`)."""

    # The window backfills' Arrow values (timestamps µs, dates days).
    read = staticmethod(arrow_values)
    to_arrow = staticmethod(to_arrow_values)

    def __init__(self, runner: _SliceRunner) -> None:
        schema = T.StructType.fromJson(json.loads(runner.input_json))
        output = T.StructType.fromJson(json.loads(runner.output_json))
        self.names = schema.names
        self.keys = runner.query.keys
        self.output = to_arrow_schema(output, timezone="UTC")
        self.time = runner.query.time
        self.rank_column = runner.query.rank_column
        self.carried_from = runner.carried_from
        self._op = runner.query.operator(time_of=self._time_of)
        self._instant = runner.query.instant()
        self._where = runner.query.where

    def _time_of(self, row: dict[str, Any]) -> int:
        return row[self.time] // 1000  # µs -> ms, floored as Spark's unix_millis

    def restore(self, ctx: KeyContext, blob: bytes, key: tuple[Any, ...]) -> None:
        where = f"backfill state {self.carried_from} (key {key!r:.200})"
        values = decode(blob, where=where)
        if not isinstance(values, dict):
            raise StateFormatError(f"malformed state: expected the window rank operator's values, found "
                                   f"{type(values).__name__}", where=where)
        try:
            LAYOUT.restore(ctx, values)
        except StateFormatError as error:
            raise StateFormatError(error.message, where=where) from error

    def process(self, ctx: KeyContext, rows: list[dict[str, Any]]) -> list[Tagged]:
        # the driver's dead-letter text of each row is not state: it stays out of the kept rows
        out = self._op.process_elements(ctx, [{k: v for k, v in row.items() if k != REJECT_ROW} for row in rows])
        # Rows come in event-time order per key: the watermark moves to just below the last row's millisecond.
        ctx.current_watermark = self._time_of(rows[-1]) * 1000 - 1  # type: ignore[attr-defined]
        out += self._op.on_watermark(ctx)
        return self._rows(out)

    def end_of_input(self, ctx: KeyContext) -> list[Tagged]:
        return self._rows(self._op.finish(ctx))

    def snapshot(self, ctx: KeyContext) -> bytes:
        return encode(LAYOUT.snapshot(ctx))

    def _rows(self, outputs: list[Any]) -> list[Tagged]:
        rows: list[Tagged] = []
        for out in outputs:
            if out.__class__ is LateRow:  # a row below the watermark: the arrangement broke its promise
                raise AssertionError(f"{self._where}: a row arrived out of event-time order: {out.reason}")
            assert out.__class__ is RankedRow, out
            w, instant = out.window, self._instant
            row = {**out.row, "window_start": instant(w.start) * 1000, "window_end": instant(w.end) * 1000,
                   "window_time": instant(w.end - 1) * 1000}
            if self.rank_column is not None:
                row[self.rank_column] = out.rank
            rows.append((MAIN, row))
        return rows


@dataclass(frozen=True)
class _SliceRunner:
    """The ``mapInArrow`` function of one slice (picklable, small)."""

    query: RankQuery
    input_json: str
    output_json: str
    last: bool
    counters: tuple[Any, ...]
    carried_from: str | None = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return host.run_keyed_slice(batches, _RankSlice(self), self.last, self.counters)


def _untimed(df: DataFrame, time: str) -> DataFrame:
    """The rows with a NULL event time as the DataFrame door's dead letters."""
    return window_dead_letters(df, time).select("side", "reason", "row")


def _runner(query: RankQuery, input_json: str, output_json: str, last: bool, counters: tuple[Any, ...],
            carried_from: str | None) -> _SliceRunner:
    return _SliceRunner(query, input_json, output_json, last, counters, carried_from)


def _run(df: DataFrame, query: RankQuery, plan: tuple[list[Any], list[int]], output: str, dead_letter: str | None,
         on_slice: Callable[[dict[str, Any]], None] | None) -> dict[str, Any]:
    host.check_reserved(df, query.where)
    slice_plan, wanted = plan
    time_type = df.schema[query.time].dataType
    # Every column nullable: a slice's state rows and dead letters travel in the same Arrow batches, NULL there.
    output_schema = T.StructType([T.StructField(f.name, f.dataType, True) for f in query.schema.fields])
    registration = host.KeyedBackfill(
        name="window_rank", where=query.where, keys=query.keys,
        key_order=[named(k).asc_nulls_first() for k in query.keys],
        order=[named(query.time).asc()], time=query.time, bounds=partial(time_bounds, time_type), output=output_schema,
        runner=partial(_runner, query.slim(), df.schema.json(), output_schema.json()),
        untimed=partial(_untimed, time=query.time),
    )
    return host.run_keyed(df, registration, slice_plan, wanted, output, dead_letter or f"{output}_dead_letter",
                          on_slice)


def backfill_window_top_n(
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
    start: datetime,
    end: datetime,
    slices: int,
    output: str,
    dead_letter: str | None = None,
    only: Sequence[int] | None = None,
    on_slice: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Window Top-N over the rows of ``df`` with event time in ``[start, end)`` (naive = UTC), in ``slices``
    sequential slices; returns metrics (those of :func:`timeweave.spark.window_backfill.backfill_window_aggregate`).
    The union of ``<output>/slice=*`` equals ``timeweave.window_top_n(df.where(start <= time < end), n, ...,
    time=time, window=window)``.  ``only`` re-runs the given slices from the state the previous slice left.
    Errors in the arguments raise before any Spark job.

    Example::

        from timeweave.core.windows import hop
        backfill_window_top_n(bids, 3, order_by="price DESC", time="bidtime", window=hop("5 minutes", "10 minutes"),
                              start=datetime(2020, 4, 15), end=datetime(2020, 4, 16), slices=24, output="out/top3")
    """
    where = "window Top-N backfill"
    if not output:
        raise SpecError("output", "an output path is required", where=where)
    plan = host.plan_slices(start, end, slices, only, where)
    query = bind_rank_query(df, order_by=order_by, ranks=top_n_ranks(n, function, ranks, where),
                            partition_by=partition_by, time=time, window=window, rank_column=rank_column, where=where)
    return _run(df, query, plan, output, dead_letter, on_slice)


def backfill_window_deduplicate(
    df: DataFrame,
    *,
    time: str,
    keys: str | Sequence[str] = (),
    keep: str = "first",
    window: WindowSpec,
    rank_column: str | None = None,
    start: datetime,
    end: datetime,
    slices: int,
    output: str,
    dead_letter: str | None = None,
    only: Sequence[int] | None = None,
    on_slice: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Window deduplication over the rows of ``df`` with event time in ``[start, end)``, in ``slices`` slices: the
    union of the slices equals ``timeweave.window_deduplicate(df.where(start <= time < end), time=time, keys=keys,
    keep=keep, window=window)``; arguments and metrics as :func:`backfill_window_top_n`.

    Example::

        from timeweave.core.windows import tumble
        backfill_window_deduplicate(bids, time="bidtime", keys="item", keep="last", window=tumble("10 minutes"),
                                    start=datetime(2020, 4, 15), end=datetime(2020, 4, 16), slices=4, output="out/last")
    """
    where = "window deduplication backfill"
    if not output:
        raise SpecError("output", "an output path is required", where=where)
    plan = host.plan_slices(start, end, slices, only, where)
    query = bind_rank_query(df, order_by=[dedup_order(time, keep)], ranks=RankRange.top(1), partition_by=keys,
                            time=time, window=window, rank_column=rank_column, where=where, keep=keep)
    return _run(df, query, plan, output, dead_letter, on_slice)


__all__ = ["backfill_window_deduplicate", "backfill_window_top_n"]
