"""The sliced window-aggregation backfill: ``[start, end)`` of the event time in N slices, open windows carried.

Window aggregation's registration on the keyed backfill driver (:func:`timeweave.spark.host.backfill.run_keyed`):
the key is the GROUP BY columns, the order within a key the event time, and per key (:class:`_WindowSlice`,
through the keyed-operator contract) the core :class:`~timeweave.core.windows.WindowAggregateOperator` keeps the
key's open windows in its context: the accumulator rows of its slices (HOP and CUMULATE share them) or its
in-flight sessions.  At a slice edge that state is snapshot (:data:`timeweave.core.windows.operator.LAYOUT`, the
state codec's bytes: data, never pickle) and restored in the next slice, so a session or a HOP window crossing
an edge is one window, as in one batch run.

**Emission.**  A key's rows arrive in event-time order, so after a run of rows whose last event time is ``t``
no later row of the key can fall in a window that ends at or before ``t``'s millisecond: the watermark moves to
just below it (``t`` ms - 1 µs) and the core emits those windows (sessions: those that end before ``t``, which
no later row can reach).  The rest wait for the key's next rows, in this slice or a later one, and the last
slice's end of input fires them all.  No row is ever late: a backfill is a batch run (every row counts, as in
the DataFrame door and Flink's batch mode), and its union over the slices equals
:func:`timeweave.spark.windows.window_aggregate` over the rows in ``[start, end)``.

**Time types.**  The event time is a TIMESTAMP (its windows on the session time zone's wall clock: an IANA zone
or a fixed offset) or a TIMESTAMP_NTZ (its own clock, no zone; the slice bounds compare with it as their UTC wall
clock), as in the DataFrame door; the window columns have its type.

Layout (all overwritten per slice, so re-running slice k from the state of slice k-1 replaces exactly its files):

* ``<output>/slice=<label>/``: the windows emitted in the slice (the DataFrame door's schema);
* ``<output>/_state/slice=<label>/``: GROUP BY columns + ``__tw_state`` (the key's open windows) after the slice;
* ``<dead_letter>/slice=none/``: rows with a NULL event time (``side`` = ``input``, ``reason``, ``row`` as JSON: the
  DataFrame door's :func:`~timeweave.spark.windows.window_dead_letters`); they belong to no slice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from timeweave.core.errors import SpecError, StateFormatError
from timeweave.core.state import KeyContext
from timeweave.core.state_codec import decode, encode
from timeweave.core.windows import LateRow, WindowAggregateOperator, WindowRow, WindowSpec
from timeweave.core.windows.accumulators import AggregateCall, Collect
from timeweave.core.windows.calls import AggregateText
from timeweave.core.windows.grouping import GroupingSets
from timeweave.core.windows.operator import LAYOUT
from timeweave.core.windows.zones import TimeShift
from timeweave.spark.host import backfill as host
from timeweave.spark.host.backfill import MAIN, Tagged
from timeweave.spark.schema import column as named
from timeweave.spark.window_streaming import bind_window_query, result_converter
from timeweave.spark.window_tagged import arrow_values, time_bounds, to_arrow_values
from timeweave.spark.windows import window_dead_letters

WHERE = "window aggregate backfill"


# -- executor side ------------------------------------------------------------------------------------------


class _WindowSlice:
    """Window aggregation over one slice's keys (a :class:`~timeweave.spark.host.backfill.SliceOperator`)."""

    def __init__(self, runner: _SliceRunner) -> None:
        schema = T.StructType.fromJson(json.loads(runner.input_json))
        output = T.StructType.fromJson(json.loads(runner.output_json))
        self.names = schema.names
        self.keys = runner.keys
        # instants: the zone only labels them; a TIMESTAMP_NTZ (no zone) is µs of its own clock, as it came in
        self.output = to_arrow_schema(output, timezone="UTC")
        self.time = runner.time
        self.carried_from = runner.carried_from
        self.keep_rows = runner.keep_rows
        names = tuple(self.names)
        # Keeping rows: a window holds its rows' input values (a list in input column order: plain data for the
        # state codec at slice edges) and a fired window emits them; Spark aggregates them (WindowQuery).
        calls = [AggregateCall(Collect(), lambda row: [row[n] for n in names], name="rows")] if self.keep_rows else [
            a.call() for a in runner.aggregates]
        self._op = WindowAggregateOperator(runner.spec, calls, time_column=runner.time, time_of=self._time_of,
                                           time_zone=runner.zone)
        self._names = tuple(a.name for a in runner.aggregates)
        self._convert = tuple(result_converter(output[a.name].dataType) for a in runner.aggregates)
        shift = TimeShift.of(runner.zone)
        self._instant = (lambda ms: ms) if shift is None else shift.instant
        self._key: tuple[KeyContext | None, tuple[Any, ...]] = (None, ())

    def _time_of(self, row: dict[str, Any]) -> int:
        return row[self.time] // 1000  # µs -> ms, floored as Spark's unix_millis

    # The streaming door's values: timestamps as µs, dates as days (their wire format), the rest as they are.
    read = staticmethod(arrow_values)
    to_arrow = staticmethod(to_arrow_values)

    def restore(self, ctx: KeyContext, blob: bytes, key: tuple[Any, ...]) -> None:
        where = f"backfill state {self.carried_from} (key {key!r:.200})"
        values = decode(blob, where=where)
        if not isinstance(values, dict):
            raise StateFormatError(f"malformed state: expected the window operator's values, found "
                                   f"{type(values).__name__}", where=where)
        try:
            LAYOUT.restore(ctx, values)
        except StateFormatError as error:
            raise StateFormatError(error.message, where=where) from error
        self._key = (ctx, key)

    def process(self, ctx: KeyContext, rows: list[dict[str, Any]]) -> list[Tagged]:
        if self._key[0] is not ctx:
            self._key = (ctx, tuple(rows[0][k] for k in self.keys))
        out = self._op.process_elements(ctx, rows)
        # The key's rows come in event-time order: no later row falls in a window ending at or before the last
        # row's millisecond, so the watermark moves to just below it (see "Emission" in the module docstring).
        ctx.current_watermark = self._time_of(rows[-1]) * 1000 - 1  # type: ignore[attr-defined]
        out += self._op.on_watermark(ctx)
        return self._rows(out)

    def end_of_input(self, ctx: KeyContext) -> list[Tagged]:
        return self._rows(self._op.finish(ctx))

    def snapshot(self, ctx: KeyContext) -> bytes:
        return encode(LAYOUT.snapshot(ctx))

    def _rows(self, outputs: list[Any]) -> list[Tagged]:
        key = dict(zip(self.keys, self._key[1], strict=True))
        instant = self._instant
        rows: list[Tagged] = []
        for out in outputs:
            if out.__class__ is LateRow:  # a row below the watermark: the arrangement broke its promise
                raise AssertionError(f"{WHERE}: a row arrived out of event-time order: {out.reason}")
            assert out.__class__ is WindowRow, out
            w = out.window
            window = {"window_start": instant(w.start) * 1000, "window_end": instant(w.end) * 1000,
                      "window_time": instant(w.end - 1) * 1000}
            if self.keep_rows:
                rows.extend((MAIN, {**dict(zip(self.names, values, strict=True)), **window}) for values in out.values[0])
                continue
            row = {**window, **key}
            for name, convert, value in zip(self._names, self._convert, out.values, strict=True):
                row[name] = convert(value)
            rows.append((MAIN, row))
        return rows


@dataclass(frozen=True)
class _SliceRunner:
    """The ``mapInArrow`` function of one slice (picklable, small)."""

    spec: WindowSpec
    aggregates: tuple[AggregateText, ...]
    time: str
    keys: tuple[str, ...]
    input_json: str
    output_json: str
    zone: str | None
    last: bool
    counters: tuple[Any, ...]
    carried_from: str | None = None
    keep_rows: bool = False

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return host.run_keyed_slice(batches, _WindowSlice(self), self.last, self.counters)


# -- driver side ----------------------------------------------------------------------------------------------


def backfill_window_aggregate(
    df: DataFrame,
    aggregates: Mapping[str, str],
    *,
    keys: str | Sequence[str] = (),
    time: str,
    window: WindowSpec,
    start: datetime,
    end: datetime,
    slices: int,
    output: str,
    dead_letter: str | None = None,
    only: Sequence[int] | None = None,
    on_slice: Callable[[dict[str, Any]], None] | None = None,
    grouping_sets: GroupingSets | Sequence[Sequence[str]] | None = None,
) -> dict[str, Any]:
    """Window aggregation over the rows of ``df`` with event time in ``[start, end)`` (naive = UTC), in ``slices``
    sequential slices; returns metrics.  The union of ``<output>/slice=*`` equals
    ``timeweave.window_aggregate(df.where(start <= time < end), aggregates, keys=keys, time=time, window=window)``
    (the arguments are that door's: any Spark aggregate, ``grouping_sets``; those :mod:`timeweave.core.windows.calls`
    reads are accumulated per slice, any other makes the open windows keep, and carry across edges, their rows:
    :class:`~timeweave.spark.window_streaming.WindowQuery`).

    ``only`` re-runs the given slice indexes from the state the previous slice left (it must exist), replacing
    exactly their output and state.  Rows with a NULL event time go to ``<dead_letter>/slice=none`` (default
    ``<output>_dead_letter``).  Errors in the arguments raise before any Spark job.  Metrics: ``rows_in`` /
    ``rows_out`` / ``state_keys_out`` / ``seconds`` per slice under ``per_slice`` (``on_slice(one)`` gets each as
    it is written), their totals, ``state_keys_carried``, ``dead_letter``, ``seconds``.

    Example::

        from timeweave.core.windows import session
        metrics = backfill_window_aggregate(
            bids, {"cnt": "COUNT(*)", "total": "SUM(price)"}, keys="supplier_id", time="bidtime",
            window=session("2 minutes", partition_by="supplier_id"),
            start=datetime(2020, 4, 15), end=datetime(2020, 4, 16), slices=24, output="out/sessions")
        spark.read.parquet("out/sessions")  # the sessions, with a `slice` column from the directory names
    """
    if not output:
        raise SpecError("output", "an output path is required", where=WHERE)
    plan, wanted = host.plan_slices(start, end, slices, only, WHERE)
    query = bind_window_query(df, aggregates, keys, time, window, WHERE, grouping_sets)
    host.check_reserved(df, WHERE)
    zone, time_type = query.zone, query.time_type
    # Every column nullable: a slice's state rows and dead letters travel in the same Arrow batches, NULL there.
    # Keeping rows, the slice operator's output is the fired windows' rows (the TVF's), aggregated before the write.
    output_schema = query.tvf_schema() if query.keep_rows else T.StructType(
        [T.StructField(f.name, f.dataType, True) for f in query.schema.fields])
    keys = query.operator_keys
    registration = host.KeyedBackfill(
        name="window", where=WHERE, keys=keys, key_order=[named(k).asc_nulls_first() for k in keys],
        order=[named(query.time).asc()], time=query.time, bounds=partial(time_bounds, time_type), output=output_schema,
        runner=partial(_runner, query.spec, query.aggregates, query.time, keys, df.schema.json(),
                       output_schema.json(), zone, query.keep_rows),
        untimed=partial(_untimed, time=query.time),
        finish=query.aggregate_rows if query.keep_rows else None,
    )
    return host.run_keyed(df, registration, plan, wanted, output, dead_letter or f"{output}_dead_letter", on_slice)


def _untimed(df: DataFrame, time: str) -> DataFrame:
    """The rows with a NULL event time as the DataFrame door's dead letters."""
    return window_dead_letters(df, time).select("side", "reason", F.col("row"))


def _runner(spec: WindowSpec, aggregates: tuple[AggregateText, ...], time: str, keys: tuple[str, ...], input_json: str,
            output_json: str, zone: str | None, keep_rows: bool, last: bool, counters: tuple[Any, ...],
            carried_from: str | None) -> _SliceRunner:
    return _SliceRunner(spec, aggregates, time, keys, input_json, output_json, zone, last, counters, carried_from,
                        keep_rows)


__all__ = ["backfill_window_aggregate", "time_bounds"]
