"""The sliced DataStream window backfill: ``[start, end)`` of the event time in N slices, each key's window state carried.

DataStream windows' registration on the keyed backfill driver (:func:`timeweave.spark.host.backfill.run_keyed`):
the key is the pipeline's ``key_by`` columns (none for ``window_all``), and per key (:class:`_DataStreamSlice`,
through the keyed-operator contract) the core :class:`~timeweave.core.datastream.WindowOperator` (or its
:class:`~timeweave.core.datastream.changelog.WindowChangelog`) keeps the key's windows in its context: their
contents, trigger state, firings, timers (event and processing time, all in the operator's state), the process
function's state and, for a changelog, the emitted results.  At a slice edge that state is snapshot (the
operator's ``layout``, the state codec's bytes: data, never pickle) and restored in the next slice, so a session
merging across an edge, a window fired early in one slice and late in the next, or a window whose allowed
lateness runs into the next slice is one window, as in one bounded run.

**Arrival order and slices.**  The backfill is :meth:`~timeweave.spark.datastream.Pipeline.run_batch` cut into
slices: the rows (event time in ``[start, end)``, or NULL) arrive in steps ordered by the ``arrival`` column (equal
values: one step, like one micro-batch; within a step, in the DataFrame's row order), the watermark before a step
is the largest event time of every earlier step minus the pipeline's ``watermark`` (Spark's rule), and the input
ends after the last step.  A step belongs to the slice that holds its *stream time*, the largest event time of it
and every earlier step: that time never falls as the steps go on, so each slice is a run of consecutive steps,
every step lies whole in one slice, and a late row is processed where the stream met it, after the steps that
moved the watermark past its windows.  The watermark is the input's, so a key's steps see in every slice (and in a
re-run of one slice alone) the watermarks they see in one bounded run, and the union of the slices' main, late and
dead-letter rows is ``run_batch(arrival=..., emit=...)`` over the same rows.  Without ``arrival`` the whole range is
one step (Flink's batch mode: no row late, every window fires at the end of input), which lies in the last slice.

**Time.**  Event-time windows only: a processing-time assigner or the ``ProcessingTime`` trigger is refused (a
backfill has no processing clock; Flink's batch mode would fire every processing-time timer once, at the end of
input, which turns such a trigger into "fire at the end" and is better written as an event-time trigger).  A user
trigger that asks for the processing time fails as in ``run_batch``.

Layout (all overwritten per slice, so re-running slice k from the state of slice k-1 replaces exactly its files;
a run killed mid-slice is repaired by running that slice again):

* ``<output>/slice=<label>/``: the slice's main rows (the pipeline's ``main_schema``, or ``changelog_schema`` for a
  retract / upsert changelog);
* ``<late>/slice=<label>/``: its late rows (the input columns, ``reason``, ``watermark``);
* ``<output>/_state/slice=<label>/``: the key columns + ``__tw_state`` after the slice;
* ``<dead_letter>/slice=<label>/``: its dead letters (a failing user function's row or firing, a result that does
  not fit the output schema); ``<dead_letter>/slice=none/``: the rows with a NULL event time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.window import Window as SparkWindow

from timeweave.core.datastream.changelog import WindowChangelog
from timeweave.core.datastream.operator import WindowOperator
from timeweave.core.datastream.triggers import ProcessingTime, Trigger
from timeweave.core.errors import SpecError, StateFormatError
from timeweave.core.event_time import watermark_us
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.state import NO_WATERMARK, KeyContext
from timeweave.core.state_codec import decode, encode
from timeweave.spark import datastream as D
from timeweave.spark.host import backfill as host
from timeweave.spark.host.backfill import DEAD_LETTER, LATE, MAIN, Tagged
from timeweave.spark.host.stream import delay_ms
from timeweave.spark.host.wire import to_wire
from timeweave.spark.render import quote
from timeweave.spark.schema import column as named
from timeweave.spark.window_tagged import arrow_values, time_bounds, to_arrow_values

WHERE = "DataStream backfill"
#: The internal columns the backfill adds to the input: a row's wire text (the stream's element), its arrival step,
#: its order within the step, the largest event time (ms) of every earlier step (NULL: none) and its step's stream
#: time (the largest event time so far: which slice the step belongs to).
WIRE, STEP, ORDER, BEFORE, STREAM_TIME = "__tw_wire", "__tw_step", "__tw_order", "__tw_before", "__tw_stream_time"
INTERNAL = (WIRE, STEP, ORDER, BEFORE, STREAM_TIME)


# -- executor side ------------------------------------------------------------------------------------------


class _DataStreamSlice:
    """The DataStream window over one slice's keys (a :class:`~timeweave.spark.host.backfill.SliceOperator`).

    A key's rows come sorted by step and order; the rows of one step are one ``process_elements`` and
    ``on_watermark`` of the core, at the step's watermark, as in ``run_batch``.  An Arrow batch may end inside a
    step, so the last step of each call waits for the key's next rows or :meth:`key_done`."""

    def __init__(self, runner: _SliceRunner) -> None:
        output = T.StructType.fromJson(json.loads(runner.output_json))
        self.names = (*runner.keys, *INTERNAL)
        self.keys = runner.keys
        self.output = to_arrow_schema(output, timezone="UTC")
        self.carried_from = runner.carried_from
        self._op = runner.operator
        self._delay_ms = runner.delay_ms
        self._decode = D.element_decoder(T.StructType.fromJson(json.loads(runner.input_json)))
        self._collector = D._Collector(T.StructType.fromJson(json.loads(runner.result_json)))
        # the held step: (its key's context, its step value, the watermark before it in ms or None, its wire texts)
        self._held: tuple[KeyContext, Any, Any, list[str]] | None = None

    read = staticmethod(arrow_values)
    to_arrow = staticmethod(to_arrow_values)

    def restore(self, ctx: KeyContext, blob: bytes, key: tuple[Any, ...]) -> None:
        where = f"backfill state {self.carried_from} (key {key!r:.200})"
        values = decode(blob, where=where)
        if not isinstance(values, dict):
            raise StateFormatError(f"malformed state: expected the DataStream window's values, found "
                                   f"{type(values).__name__}", where=where)
        try:
            self._op.layout.restore(ctx, values)
        except StateFormatError as error:
            raise StateFormatError(error.message, where=where) from error

    def process(self, ctx: KeyContext, rows: list[dict[str, Any]]) -> list[Tagged]:
        out: list[Tagged] = []
        held = self._held
        if held is not None and held[0] is not ctx:  # another key's step (the driver closes a key first)
            out += self._run(*held)
            held = None
        for row in rows:
            if held is not None and row[STEP] == held[1]:
                held[3].append(row[WIRE])
                continue
            if held is not None:
                out += self._run(*held)
            held = (ctx, row[STEP], row[BEFORE], [row[WIRE]])
        self._held = held
        return out

    def key_done(self, ctx: KeyContext) -> list[Tagged]:
        held, self._held = self._held, None
        return self._run(*held) if held is not None else []

    def end_of_input(self, ctx: KeyContext) -> list[Tagged]:
        return self._tagged(self._op.on_watermark(ctx), {})  # the driver set the watermark to END_OF_TIME

    def snapshot(self, ctx: KeyContext) -> bytes:
        return encode(self._op.layout.snapshot(ctx))

    def _run(self, ctx: KeyContext, step: Any, before: Any, texts: list[str]) -> list[Tagged]:
        """One arrival step of the key: ``run_batch``'s watermark before it, its elements, its due timers."""
        ctx.current_watermark = NO_WATERMARK if before is None else watermark_us(  # type: ignore[attr-defined]
            int(before) - self._delay_ms)
        elements = self._decode(texts)
        wire = {id(e): t for e, t in zip(elements, texts, strict=True)}
        return self._tagged(self._op.process_elements(ctx, elements) + self._op.on_watermark(ctx), wire)

    def _tagged(self, outputs: list[Any], texts: Mapping[int, str]) -> list[Tagged]:
        sink = D._Sink()
        self._collector.collect(outputs, texts, sink)
        return [(MAIN, {D.KIND: kind, D.OUT: out, D.IN_ROW: row, D.REASON: reason, D.SIDE: side, D.WATERMARK: mark,
                        D.N_IN: 0})
                for kind, out, row, reason, side, mark in zip(sink.kinds, sink.outs, sink.rows, sink.reasons,
                                                             sink.sides, sink.watermarks, strict=True)]


@dataclass(frozen=True)
class _SliceRunner:
    """The ``mapInArrow`` function of one slice (picklable: the operator carries the user's functions, which
    Spark's UDF mechanism cloudpickles)."""

    operator: WindowOperator | WindowChangelog
    keys: tuple[str, ...]
    input_json: str
    result_json: str
    output_json: str
    delay_ms: int
    last: bool
    counters: tuple[Any, ...]
    carried_from: str | None = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return host.run_keyed_slice(batches, _DataStreamSlice(self), self.last, self.counters)


# -- driver side ----------------------------------------------------------------------------------------------


def processing_time_parts(trigger: Trigger | None) -> list[str]:
    """The names of the processing-time triggers in ``trigger`` (itself, or nested in ``Purging`` / early firings).

    >>> from timeweave.core.datastream.triggers import EventTime, Purging
    >>> processing_time_parts(Purging.of(ProcessingTime())), processing_time_parts(EventTime())
    (['ProcessingTime'], [])
    """
    if trigger is None:
        return []
    if isinstance(trigger, ProcessingTime):
        return [type(trigger).__name__]
    found: list[str] = []
    if is_dataclass(trigger):
        for f in fields(trigger):
            value = getattr(trigger, f.name)
            if isinstance(value, Trigger):
                found += processing_time_parts(value)
    return found


def backfill_datastream(
    pipeline: D.Pipeline,
    *,
    start: datetime,
    end: datetime,
    slices: int,
    output: str,
    late_output: str | None = None,
    dead_letter: str | None = None,
    arrival: str | None = None,
    emit: str = "append",
    only: Sequence[int] | None = None,
    on_slice: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The pipeline over the rows of its (static) DataFrame with event time in ``[start, end)`` (naive = UTC) and the
    rows with a NULL one, in ``slices`` sequential slices; returns metrics.  The union of ``<output>/slice=*``,
    ``<late_output>/slice=*`` and ``<dead_letter>/slice=*`` equals ``pipeline.run_batch(arrival=arrival, emit=emit)``
    over those rows (see the module docstring: arrival steps, the watermark, which slice a step lies in).

    ``late_output`` defaults to ``<output>_late``, ``dead_letter`` to ``<output>_dead_letter``.  ``only`` re-runs
    the given slice indexes from the state the previous slice left (it must exist), replacing exactly their
    outputs and state.  Errors in the arguments raise before any Spark job.  Metrics: ``rows_in`` / ``rows_out`` /
    ``late`` / ``dead_letter`` / ``state_keys_out`` / ``seconds`` per slice under ``per_slice`` (``on_slice(one)``
    gets each as it is written), their totals, ``state_keys_carried``, ``seconds``.

    Example::

        from timeweave.core.datastream import Session
        p = (timeweave.stream(clicks, time="ts", watermark="1 minute").key_by("user").window(Session.of("30 min"))
             .allowed_lateness("10 min").process(lambda key, ctx, rows: [len(rows)], output_schema="n BIGINT"))
        metrics = backfill_datastream(p, start=datetime(2026, 12, 1), end=datetime(2026, 12, 8), slices=7,
                                      output="out/sessions", arrival="batch")
        spark.read.parquet("out/sessions")  # the firings, with a `slice` column from the directory names
    """
    where = f"{WHERE}, arguments"
    if not isinstance(output, str) or not output:
        raise SpecError("output", "an output path is required", where=where)
    if not isinstance(pipeline, D.Pipeline):
        raise SpecError("pipeline", f"expected a pipeline (timeweave.stream(df, ...)...), got {pipeline!r:.60}",
                        where=where)
    plan, wanted = host.plan_slices(start, end, slices, only, WHERE)
    op = pipeline.keyed_operator(emit)
    df = pipeline.df
    if df.isStreaming:
        raise SpecError("df", "a backfill runs over a static DataFrame (spark.read...); start() runs a streaming one",
                        where=where)
    assigner = pipeline.assigner
    if not assigner.is_event_time:  # type: ignore[union-attr]
        raise SpecError("window", f"{assigner.name} runs on a processing clock, which a backfill does not have: run "  # type: ignore[union-attr]
                        "it as a stream", where=where)
    clocked = processing_time_parts(pipeline.trigger_spec)
    if clocked:
        raise SpecError("trigger", f"{', '.join(clocked)} fires on the processing clock, which a backfill does not "
                        "have (Flink's batch mode would fire it once, at the end of input): use an event-time "
                        "trigger (EventTime, ContinuousEventTime) or run it as a stream", where=where)
    step_column = None
    if arrival is not None:
        step_column = D._find(df.columns, arrival) if isinstance(arrival, str) else None
        if step_column is None:
            raise SpecError("arrival", f"column {arrival!r} not found; available: {df.columns}", where=where)
    host.check_reserved(df, WHERE)
    clash = [c for c in df.columns if c.lower() in INTERNAL]
    if clash:
        raise SpecError("df", f"the input has column(s) {clash}, which the backfill uses internally", where=where)
    keys = tuple(pipeline.keys or ())
    rows = _arrived(df, pipeline.time, step_column, start, end)
    tagged = D.tagged_schema()
    output_schema = T.StructType([*(T.StructField(k, df.schema[k].dataType, True) for k in keys), *tagged.fields])
    outputs = pipeline._outputs(rows.limit(0), emit)  # only its schemas and split: the slices' rows come split
    registration = host.KeyedBackfill(
        name="datastream", where=WHERE, keys=keys, key_order=[named(k).asc_nulls_first() for k in keys],
        order=[F.col(STEP).asc_nulls_first(), F.col(ORDER).asc()], time=STREAM_TIME,
        bounds=partial(time_bounds, T.TimestampType()), output=output_schema,
        runner=partial(_runner, op, keys, df.schema.json(), pipeline.output_schema.json(),  # type: ignore[union-attr]
                       output_schema.json(), delay_ms(pipeline.watermark, "watermark")),
        untimed=partial(_untimed, time=pipeline.time, columns=tuple(df.columns)),
        split=partial(_split, outputs),
    )
    # Every slice reads its steps from the rows of the range (the watermark is the whole range's): arranged once.
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return host.run_keyed(rows, registration, plan, wanted, output, dead_letter or f"{output}_dead_letter",
                              on_slice, late=late_output or f"{output}_late")
    finally:
        rows.unpersist()


def _arrived(df: DataFrame, time: str, step_column: str | None, start: datetime, end: datetime) -> DataFrame:
    """The rows of the range (and the NULL-time ones) with the internal columns: their wire text, step, order, the
    watermark's source before their step and their step's stream time (NULL for a NULL event time: no slice)."""
    event = F.col(quote(time))
    lo, hi = time_bounds(T.TimestampType(), start, end)
    # The order is taken over the whole DataFrame, before any filter (a non-deterministic column: Spark pushes no
    # filter below it), as run_batch takes it.
    rows = df.withColumn(ORDER, F.monotonically_increasing_id()).where(event.isNull() | ((event >= lo) & (event < hi)))
    rows = rows.withColumn(WIRE, to_wire(df)).withColumn(
        STEP, F.col(quote(step_column)) if step_column else F.lit(0))
    steps = rows.groupBy(STEP).agg(F.max(F.floor(F.unix_micros(event) / 1000)).alias("__tw_max_ms"),
                                   F.max(F.unix_micros(event)).alias("__tw_max_us"))
    ordered = SparkWindow.orderBy(F.col(STEP).asc_nulls_first())  # one row per step in its single partition
    steps = steps.select(
        F.col(STEP).alias("__tw_s"),
        F.max("__tw_max_ms").over(ordered.rowsBetween(SparkWindow.unboundedPreceding, -1)).alias(BEFORE),
        F.max("__tw_max_us").over(ordered.rowsBetween(SparkWindow.unboundedPreceding, 0)).alias("__tw_upto"))
    rows = rows.join(steps, F.col(STEP).eqNullSafe(F.col("__tw_s")), "left")
    return rows.withColumn(STREAM_TIME, F.when(event.isNotNull(), F.timestamp_micros(F.col("__tw_upto")))) \
        .drop("__tw_s", "__tw_upto")


def _split(outputs: D.DataStreamOutputs, main: DataFrame) -> dict[str, DataFrame]:
    """A slice's tagged rows as the stream's outputs (the streaming door's split: the same decoding)."""
    parts = outputs.split(main)
    return {MAIN: parts.main, LATE: parts.late, DEAD_LETTER: parts.dead_letter}


def _untimed(df: DataFrame, time: str, columns: tuple[str, ...]) -> DataFrame:
    """The rows with a NULL event time as ``run_batch``'s dead letters (the input columns as JSON)."""
    return df.where(F.col(quote(time)).isNull()).select(
        F.lit("input").alias("side"), F.lit(null_event_time_reason(time)).alias("reason"),
        F.to_json(F.struct(*[F.col(quote(c)) for c in columns])).alias("row"))


def _runner(operator: WindowOperator | WindowChangelog, keys: tuple[str, ...], input_json: str, result_json: str,
            output_json: str, delay: int, last: bool, counters: tuple[Any, ...], carried_from: str | None) -> _SliceRunner:
    return _SliceRunner(operator, keys, input_json, result_json, output_json, delay, last, counters, carried_from)


__all__ = ["INTERNAL", "backfill_datastream", "processing_time_parts"]
