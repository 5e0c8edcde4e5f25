"""The sliced continuous GROUP BY backfill: ``[start, end)`` of the event time in N slices, each key's aggregate
state carried across the edges, each slice's changelog written.

The continuous GROUP BY's registration on the keyed backfill driver (:func:`timeweave.spark.host.backfill.run_keyed`):
the key is the GROUP BY columns, the order within a key the event time, and per key (:class:`_GroupSlice`, through
the keyed-operator contract) the core :class:`~timeweave.core.updates.GroupAggregateOperator` keeps the key's
accumulator row, its emitted result and its cleanup time.  At a slice edge that state is snapshot (the operator's
``StateLayout``, the state codec's bytes) and restored in the next slice, so a key's result runs on across the
edges as one result, and its changelog continues (``-U`` / ``+U`` of the result the slice before emitted).

**A slice's changelog is one micro-batch's.**  A slice stands for the micro-batch of a stream that reads exactly
the slice's rows: per key, its rows of the slice (in event-time order) are folded into one step, and the key's
change over the slice is written once (Flink's mini-batch aggregation, as the streaming door does per
micro-batch): ``+I`` for a new key, ``-U old`` / ``+U new`` (retract) or ``+U new`` (upsert) for a changed one,
``-D`` when retractions of an updating input empty it, nothing when its result is unchanged.  So the changelog
rows equal those of the flushed streaming job over the same rows fed one slice per micro-batch in event-time
order, and the slices' changelogs, applied in slice order (:func:`timeweave.spark.changelog_sink.apply_changelog`,
``batch_id`` = the slice index), materialise to the batch ``GROUP BY`` over the rows in ``[start, end)``, in any
number of slices.  No row is late (a GROUP BY result is never final; as in the stream).

**The event-time clock** (idle-state retention's): slice ``k`` runs at the watermark its micro-batch would have,
Spark's ``max(event time) - watermark`` over the rows of the slices before it (none for the first slice:
:func:`timeweave.core.event_time.watermark_after`), computed on the driver before the slice runs.  As in the
stream, a key first forgets its state when the watermark of the slice before reached its cleanup time (the stream's
timer fired in that micro-batch), then takes its rows (which push its cleanup time), so a key idle past its
retention starts over with ``+I`` in both, and one that comes back in time continues in both.  (Spark also fires
timers in a batch without data when a stream sits idle after the watermark moved; the backfill is the stream that
reads its slices back to back, so a key whose cleanup time falls between two slices' watermarks is kept.)

Layout (each slice overwritten whole, so re-running slice k from the state of slice k-1 replaces exactly its
files; a run killed mid-slice re-runs the slice whole):

* ``<output>/slice=<label>/``: the slice's changelog (the streaming door's schema: keys, aggregates, ``op``);
* ``<output>/_state/slice=<label>/``: GROUP BY columns + ``__tw_state`` after the slice;
* ``<dead_letter>/slice=<label>/``: rows the operator rejected (an unknown op code, a value an aggregate cannot
  take, a retraction of a group it does not hold); ``<dead_letter>/slice=none/``: rows with a NULL event time.
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
from timeweave.core.event_time import watermark_after
from timeweave.core.spec import StateRetention
from timeweave.core.state import NO_WATERMARK, KeyContext
from timeweave.core.state_codec import decode, encode
from timeweave.core.time import Slice
from timeweave.core.updates import Change, ChangelogMode, GroupAggregateOperator, GroupAggregateSpec, Rejected
from timeweave.core.windows.calls import AggregateText
from timeweave.spark.group_aggregate_streaming import OP_COLUMN, bind_group_aggregate
from timeweave.spark.host import backfill as host
from timeweave.spark.host.backfill import DEAD_LETTER, MAIN, REJECT_ROW, Tagged
from timeweave.spark.host.stream import delay_ms
from timeweave.spark.schema import column as named
from timeweave.spark.window_streaming import result_converter
from timeweave.spark.window_tagged import arrow_values, time_bounds, to_arrow_values
from timeweave.spark.windows import window_dead_letters

WHERE = "group aggregate backfill"


# -- executor side ------------------------------------------------------------------------------------------


class _GroupSlice:
    """The continuous GROUP BY over one slice's keys (a :class:`~timeweave.spark.host.backfill.SliceOperator`)."""

    # The streaming door's values: timestamps as µs, dates as days (their wire format), the rest as they are.
    read = staticmethod(arrow_values)
    to_arrow = staticmethod(to_arrow_values)

    def __init__(self, runner: _SliceRunner) -> None:
        schema = T.StructType.fromJson(json.loads(runner.input_json))
        output = T.StructType.fromJson(json.loads(runner.output_json))
        self.names = schema.names
        self.keys = runner.keys
        self.output = to_arrow_schema(output, timezone="UTC")
        self.carried_from = runner.carried_from
        self._op = GroupAggregateOperator(GroupAggregateSpec(
            runner.keys, tuple(a.call() for a in runner.aggregates), changelog=runner.changelog,
            op_column=runner.op_column, retention=runner.retention, output=WHERE))
        self._before, self._now = runner.watermarks
        values = tuple(a.name for a in runner.aggregates)
        self._values = values
        self._convert = tuple(result_converter(output[n].dataType) for n in values)

    def restore(self, ctx: KeyContext, blob: bytes, key: tuple[Any, ...]) -> None:
        where = f"backfill state {self.carried_from} (key {key!r:.200})"
        values = decode(blob, where=where)
        if not isinstance(values, dict):
            raise StateFormatError(f"malformed state: expected the group aggregate operator's values, found "
                                   f"{type(values).__name__}", where=where)
        try:
            self._op.layout.restore(ctx, values)
        except StateFormatError as error:
            raise StateFormatError(error.message, where=where) from error
        # What the stream's timers did up to the micro-batch before this one (module docstring, "clock").
        ctx.current_watermark = self._before  # type: ignore[attr-defined]
        self._op.forget_idle(ctx)

    def process(self, ctx: KeyContext, rows: list[dict[str, Any]]) -> list[Tagged]:
        ctx.current_watermark = self._now  # type: ignore[attr-defined]
        out = self._op.process_elements(ctx, rows)
        out.extend(self._op.on_watermark(ctx))
        return self._rows(out)

    def end_of_input(self, ctx: KeyContext) -> list[Tagged]:
        return self._rows(list(self._op.on_watermark(ctx)))  # retention only: nothing is emitted at the end

    def snapshot(self, ctx: KeyContext) -> bytes:
        return encode(self._op.layout.snapshot(ctx))

    def _rows(self, outputs: list[Any]) -> list[Tagged]:
        rows: list[Tagged] = []
        for out in outputs:
            if out.__class__ is Change:
                row = dict(zip(self.keys, out.key, strict=True))
                for name, convert, value in zip(self._values, self._convert, out.values, strict=True):
                    row[name] = convert(value)
                row[OP_COLUMN] = out.op
                rows.append((MAIN, row))
            elif out.__class__ is Rejected:
                rows.append((DEAD_LETTER, (out.row.get(REJECT_ROW), out.reason)))
            else:
                raise AssertionError(f"{WHERE}: unexpected operator output {out!r}")
        return rows


@dataclass(frozen=True)
class _SliceRunner:
    """The ``mapInArrow`` function of one slice (picklable, small)."""

    keys: tuple[str, ...]
    aggregates: tuple[AggregateText, ...]
    changelog: ChangelogMode
    op_column: str | None
    retention: StateRetention | None
    input_json: str
    output_json: str
    last: bool
    counters: tuple[Any, ...]
    carried_from: str | None
    watermarks: tuple[int, int]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return host.run_keyed_slice(batches, _GroupSlice(self), self.last, self.counters)


# -- driver side ----------------------------------------------------------------------------------------------


def slice_watermarks(df: DataFrame, plan: Sequence[Slice], index: int, *, time: str, delay: int) -> tuple[int, int]:
    """The watermarks (core µs) of the micro-batches slices ``index - 1`` and ``index`` stand for: Spark's over the
    rows of ``df`` in the slices before each (none before the first slice).  ``delay``: ms.  One aggregate job
    over the two slices before ``index`` (the largest event time so far is in them unless they are empty), a
    second over every slice before it when one of them is."""
    if index == 0:
        return NO_WATERMARK, NO_WATERMARK
    data_type = df.schema[time].dataType
    t = named(time)

    def latest(lo: datetime) -> tuple[Any, Any]:
        low, before = time_bounds(data_type, lo, plan[index - 1].start)
        _, now = time_bounds(data_type, lo, plan[index].start)
        row = df.where((t >= low) & (t < now)).agg(
            F.max(F.when(t < before, F.unix_micros(t))).alias("before"), F.max(F.unix_micros(t)).alias("now")).first()
        return row["before"], row["now"]

    before, now = latest(plan[max(index - 2, 0)].start)
    if now is None or (before is None and index >= 2):
        before, now = latest(plan[0].start)
    return watermark_after(before, delay), watermark_after(now, delay)


def _runner(keys: tuple[str, ...], aggregates: tuple[AggregateText, ...], changelog: ChangelogMode,
            op_column: str | None, retention: StateRetention | None, input_json: str, output_json: str, last: bool,
            counters: tuple[Any, ...], carried_from: str | None, watermarks: tuple[int, int]) -> _SliceRunner:
    return _SliceRunner(keys, aggregates, changelog, op_column, retention, input_json, output_json, last, counters,
                        carried_from, watermarks)


def _untimed(df: DataFrame, time: str) -> DataFrame:
    """The rows with a NULL event time as the streaming door's dead letters."""
    return window_dead_letters(df, time).select("side", "reason", "row")


def backfill_group_aggregate(
    df: DataFrame,
    aggregates: Mapping[str, str],
    *,
    keys: str | Sequence[str],
    time: str,
    watermark: str,
    start: datetime,
    end: datetime,
    slices: int,
    output: str,
    changelog: ChangelogMode | str = ChangelogMode.RETRACT,
    op_column: str | None = None,
    retention: StateRetention | None = None,
    dead_letter: str | None = None,
    only: Sequence[int] | None = None,
    on_slice: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The continuous GROUP BY over the rows of ``df`` with event time in ``[start, end)`` (naive = UTC), in
    ``slices`` sequential slices, each slice's changelog written (see the module docstring); returns the driver's
    metrics.  The arguments are :func:`timeweave.spark.group_aggregate_streaming.group_aggregate_stream`'s
    (``watermark``: the stream's delay, the clock of idle-state ``retention``).  ``only`` re-runs the given
    slices from the state the previous slice left, replacing exactly their output and state.  Errors in the
    arguments raise before any Spark job.

    Example::

        backfill_group_aggregate(clicks, {"cnt": "COUNT(url)"}, keys="user", time="cTime", watermark="5 seconds",
                                 changelog="upsert", start=datetime(2026, 1, 1), end=datetime(2026, 1, 2), slices=24,
                                 output="out/clicks_per_user")
        # each slice=<label> directory is one micro-batch's changelog: apply them in slice order
    """
    if not output:
        raise SpecError("output", "an output path is required", where=WHERE)
    plan, wanted = host.plan_slices(start, end, slices, only, WHERE)
    mode = ChangelogMode.parse(changelog, where=WHERE)
    if watermark is None or (isinstance(watermark, str) and not watermark.strip()):
        raise SpecError("watermark", "the backfill needs the stream's watermark delay (e.g. watermark='5 seconds'): "
                        "it is the clock of idle-state retention", where=WHERE)
    delay = delay_ms(watermark, "watermark")
    query = bind_group_aggregate(df, aggregates, keys, time, op_column, where=WHERE)
    # the core checks the spec (retractable aggregates for an updating input, retention) before any Spark job
    GroupAggregateSpec(query.keys, tuple(a.call() for a in query.aggregates), changelog=mode,
                       op_column=query.op_column, retention=retention, output=WHERE)
    host.check_reserved(df, WHERE)
    # Every column nullable: a slice's state rows and dead letters travel in the same Arrow batches, NULL there.
    output_schema = T.StructType([T.StructField(f.name, f.dataType, True) for f in query.schema.fields])
    registration = host.KeyedBackfill(
        name="group_aggregate", where=WHERE, keys=query.keys, key_order=[named(k).asc_nulls_first() for k in query.keys],
        order=[named(query.time).asc()], time=query.time, bounds=partial(time_bounds, df.schema[query.time].dataType),
        output=output_schema,
        runner=partial(_runner, query.keys, query.aggregates, mode, query.op_column, retention, df.schema.json(),
                       output_schema.json()),
        untimed=partial(_untimed, time=query.time),
        clock=partial(slice_watermarks, time=query.time, delay=delay),
    )
    return host.run_keyed(df, registration, plan, wanted, output, dead_letter or f"{output}_dead_letter", on_slice)


__all__ = ["backfill_group_aggregate", "slice_watermarks"]
