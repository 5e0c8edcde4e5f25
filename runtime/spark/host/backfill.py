"""The backfill driver: ``[start, end)`` of the event time in N slices, each key's operator state carried across edges.

A backfill pauses an operator's pass over time at each slice edge and resumes it in the next slice, as a
stream would across micro-batches, so the union of the slices equals one batch run over ``[start, end)``.
Operators run here in one of two ways:

* **Keyed** (:func:`run_keyed`): the operator sees one key at a time through the keyed-operator contract
  (:class:`~timeweave.core.state.KeyContext`, a :class:`SliceOperator`): the key's rows of a slice in order,
  then, at the last slice's end, the end of input (watermark ``END_OF_TIME``).  At a slice's end edge the
  key's state is snapshot (the codec's bytes, :mod:`timeweave.core.state_codec`) into
  ``<output>/_state/slice=<label>/`` (the key columns and ``__tw_state``) and restored at the next slice's
  start.  Each slice (sequentially): its rows (``start <= time < end``) and the carried states are
  repartitioned by key and sorted (key, state row first, then the operator's order) and run through
  ``mapInArrow`` (:func:`run_keyed_slice`).  MATCH_RECOGNIZE runs this way
  (:mod:`timeweave.spark.match_recognize_backfill` is its registration).
* **Set-based**: an operator whose state at an edge is a relation computes every edge's state and the
  slices' outputs in a few Spark jobs.  The temporal join runs this way
  (:mod:`timeweave.spark.temporal_join_backfill`: the state at an edge is the newest version event per key,
  which a stream's operator keeps too), on the helpers here: exact time literals, grouped slice writes,
  parquet footers.

Layout of a keyed run (:func:`keyed_target`; written by the one writer's slice target,
:class:`~timeweave.spark.host.writer.SliceWriter`: every write replaces a slice's directory, so re-running
slice k from the state of slice k-1 replaces exactly its files, and a run killed mid-slice leaves that slice
to be re-run whole):

* ``<output>/slice=<label>/``: the slice's main output (read ``<output>`` as one parquet dataset: ``_state``
  is hidden from Spark's partition discovery by its ``_``);
* ``<output>/_state/slice=<label>/``: the state after the slice, one row per key (none after the last slice);
* ``<dead_letter>/slice=<label>/``: rows the operator rejected in the slice (``side``, ``reason``, ``row`` as
  JSON); ``<dead_letter>/slice=none/``: the rows with a NULL event time (the registration says how).

The slicing itself (slices, labels, exact µs, end of input) is :mod:`timeweave.core.time`.
"""

from __future__ import annotations

import time as clock
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Protocol

import pyarrow as pa
from py4j.protocol import Py4JJavaError
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.errors import SpecError
from timeweave.core.operator import Tag
from timeweave.core.pattern.row_functions import is_hidden
from timeweave.core.state import END_OF_TIME, InMemoryKeyContext, KeyContext
from timeweave.core.time import (
    Slice,
    consecutive_runs,
    edge_domain,
    edge_text,
    micros,
    naive_utc,
    slices_of,
    wanted_slices,
)
from timeweave.spark.hadoop import HadoopFiles
from timeweave.spark.host.writer import SLICE_COLUMN, STATE_OUTPUT, SliceTarget, SliceWriter
from timeweave.spark.schema import column as named
from timeweave.spark.schema import map_in_arrow

#: A keyed state row's carried state (BINARY, the codec's bytes); NULL on input and output rows.
STATE = "__tw_state"
#: A rejected row's reason; NULL on every other row.
REJECT_REASON = "__tw_reject_reason"
#: The input row as JSON (``to_json``), riding along so a rejected row reaches the dead letter as it was read.
REJECT_ROW = "__tw_reject_row"
#: The directory (under ``<output>``) of a keyed run's carried state.
STATE_DIR = "_state"
#: The most slice files one task of a grouped job keeps open at a time.
MAX_OPEN_SLICE_FILES = 32
#: The most input files whose footers the driver reads instead of running a count job.
MAX_FOOTER_FILES = 256
#: Output rows per Arrow batch a keyed slice hands back to Spark.
OUTPUT_BATCH_ROWS = 4096
#: The tags of a :class:`SliceOperator`'s outputs (:class:`~timeweave.core.operator.Tag`'s values); ``LATE`` is
#: an output a registration's :attr:`KeyedBackfill.split` may give (the operator's rows still come tagged main).
MAIN, LATE, DEAD_LETTER = Tag.MAIN.value, Tag.LATE.value, Tag.DEAD_LETTER.value
#: The label of the rows of no slice (a NULL event time): their directory is ``slice=none``.
NO_SLICE = "none"
_EPOCH_DAY = date(1970, 1, 1)


# -- slicing on Spark ---------------------------------------------------------------------------------------------


def plan_slices(
    start: Any, end: Any, slices: Any, only: Sequence[int] | None, where: str, domain: str = "timestamp",
) -> tuple[list[Slice], list[int]]:
    """The slices of ``[start, end)`` and the sorted indexes a run does, all checked first.

    Bounds are datetimes (naive = UTC) unless ``domains`` names others (a temporal join's time domain over
    dates or numbers: :func:`timeweave.core.time.slices_of` says how each is cut).

    >>> plan, wanted = plan_slices(datetime(2020, 1, 1), datetime(2020, 1, 2), 4, [3, 1], "backfill")
    >>> [s.label for s in plan][:2], wanted
    (['2020-01-01T00-00-00', '2020-01-01T06-00-00'], [1, 3])
    >>> plan_slices(datetime(2020, 1, 1), "2020-01-02", 1, None, "backfill")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: backfill: argument 'end': must be a datetime (the event time is a timestamp), got '2020-01-02'
    """
    if isinstance(slices, bool) or not isinstance(slices, int):
        raise SpecError("slices", f"must be an integer >= 1, got {slices!r}", where=where)
    wanted_type = {"timestamp": "a datetime", "date": "a date", "numeric": "a number"}[domain]
    for at, argument in ((start, "start"), (end, "end")):
        if edge_domain(at) != domain:
            raise SpecError(argument, f"must be {wanted_type} (the event time is a {domain}), got {at!r}", where=where)
    if domain == "timestamp":
        start, end = naive_utc(start), naive_utc(end)
    plan = slices_of(start, end, slices)
    return plan, wanted_slices(plan, only, where)


def at(moment: Any) -> Column:
    """``moment`` (naive = UTC, as the job's bounds are; an aware one is converted) as an exact TIMESTAMP literal;
    a date edge as an exact DATE literal (days since the epoch: no calendar rebasing either), a number as itself.

    Not ``F.lit(moment)``: PySpark hands a datetime to the JVM as a ``java.sql.Timestamp`` (epoch ms), which
    Spark reads as a Julian-calendar date and rebases to the proleptic Gregorian one it stores: a bound
    before 1582-10-15 moved (0001-01-01 became 0001-01-03), and the rows between the given and the moved
    bound fell into no slice (issue 20).  µs since the epoch carry no calendar; the literal folds to a
    constant, so filters on it still reach the parquet scan.
    """
    if isinstance(moment, datetime):
        return F.timestamp_micros(F.lit(micros(moment)))
    if edge_domain(moment) == "date":
        return F.date_from_unix_date(F.lit((moment - _EPOCH_DAY).days))
    return F.lit(moment)


def time_literals(data_type: T.DataType, start: datetime, end: datetime) -> tuple[Column, Column] | None:
    """Literals for ``start`` and ``end`` comparable with an event-time column of ``data_type``; None for another type.

    The bounds are instants whatever the session's time zone (naive = UTC, :func:`at`): a TIMESTAMP column
    compares with them exactly as the temporal join's slices do (a text literal cast on the session's clock
    moved a MATCH_RECOGNIZE backfill's slices by the zone's offset under a non-UTC session, issue 20).  A
    TIMESTAMP_NTZ column holds wall clocks with no zone: it compares with the bounds' UTC wall clock.  Integer
    columns count µs since the epoch, as the core does.
    """
    if isinstance(data_type, T.TimestampType):
        return at(start), at(end)
    if isinstance(data_type, T.TimestampNTZType):
        return F.lit(start.isoformat(sep=" ")).cast("timestamp_ntz"), F.lit(end.isoformat(sep=" ")).cast("timestamp_ntz")
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return F.lit(micros(start)), F.lit(micros(end))
    return None


def in_slices(time: Column, done: Sequence[Slice]) -> Column:
    """``time`` inside one of the slices ``done``: one range test per run of adjacent slices (one for a whole run)."""
    by_index = {s.index: s for s in done}
    test = F.lit(False)
    for run in consecutive_runs(sorted(by_index), len(done) or 1):
        test = test | ((time >= at(by_index[run[0]].start)) & (time < at(by_index[run[-1]].end)))
    return test


def slice_metrics(s: Slice, **figures: Any) -> dict[str, Any]:
    """One slice's reported figures: its index, label and bounds, then ``figures``."""
    return {"slice": s.index, "label": s.label, "start": edge_text(s.start), "end": edge_text(s.end), **figures}


# -- keyed operators: the executor side ---------------------------------------------------------------------------

#: An operator's output: (:data:`MAIN`, output row) or (:data:`DEAD_LETTER`, (the row's ``REJECT_ROW`` text, reason)).
Tagged = tuple[str, Any]


class SliceOperator(Protocol):
    """One operator over the keys of a slice, through the keyed-operator contract (executor side).

    The driver hands each key a fresh :class:`~timeweave.core.state.KeyContext`; the operator keeps all it
    needs across calls (and slices) in the context's values.
    """

    #: The input columns each row dict has (the driver adds ``REJECT_ROW``).
    names: Sequence[str]
    #: The key columns (each is also a main output column: a state row carries its key there).
    keys: Sequence[str]
    #: The main output's Arrow schema.
    output: pa.Schema

    def read(self, batch: pa.RecordBatch, name: str) -> list[Any]:
        """Column ``name`` of ``batch`` as Python values."""
        ...

    def to_arrow(self, values: list[Any], arrow_type: pa.DataType) -> pa.Array:
        """An output column's values as Arrow."""
        ...

    def restore(self, ctx: KeyContext, blob: bytes, key: tuple[Any, ...]) -> None:
        """Put the state :meth:`snapshot` wrote for ``key`` back into ``ctx``."""
        ...

    def process(self, ctx: KeyContext, rows: list[dict[str, Any]]) -> list[Tagged]:
        """The key's next rows (in the operator's order); the outputs now decided."""
        ...

    def end_of_input(self, ctx: KeyContext) -> list[Tagged]:
        """The end of input (``ctx.watermark`` is ``END_OF_TIME``): the key's remaining outputs."""
        ...

    def snapshot(self, ctx: KeyContext) -> bytes:
        """The key's state as bytes (:mod:`timeweave.core.state_codec`), to carry across the edge."""
        ...

    # Optional: ``key_done(ctx) -> list[Tagged]``, called once a key's rows of the slice have all been given (before
    # ``end_of_input`` or ``snapshot``): the outputs of rows an operator held back because they belong with rows
    # an Arrow batch edge may have cut off (the DataStream backfill's arrival steps, each one step of the operator).


def run_keyed_slice(
    batches: Iterator[pa.RecordBatch], op: SliceOperator, last: bool, counters: Sequence[Any],
) -> Iterator[pa.RecordBatch]:
    """One task of a keyed slice: rows sorted by key (a key's state row first) in, output and state rows out.

    Out: the operator's main columns, then ``STATE`` (state rows: the key in its key columns), ``REJECT_REASON``
    and ``REJECT_ROW`` (dead letters).  ``last``: the slice ends the input, every key gets its end of input
    and no state is carried.  ``counters`` (accumulators, ``add``): rows in, main rows out, state rows out.
    A key whose context is empty at the edge carries nothing (the operator forgot it).
    """
    schema = pa.schema([*op.output, pa.field(STATE, pa.binary()), pa.field(REJECT_REASON, pa.string()),
                        pa.field(REJECT_ROW, pa.string())])
    names = (*op.names, REJECT_ROW)
    key_positions = [names.index(c) for c in op.keys]
    key_slots = {i: j for j, c in enumerate(op.keys) for i, f in enumerate(op.output) if f.name == c}
    pending: list[_Item] = []
    counts = [0, 0, 0]
    key_done = getattr(op, "key_done", None)
    ctx: InMemoryKeyContext | None = None
    current: tuple[Any, ...] | None = None

    def tagged(outputs: list[Tagged]) -> Iterator[_Item]:
        for tag, payload in outputs:
            yield (payload, None, None) if tag == MAIN else (None, None, payload)

    def close() -> Iterator[_Item]:
        if ctx is None:
            return
        if key_done is not None:
            yield from tagged(key_done(ctx))
        if last:
            ctx.current_watermark = END_OF_TIME
            yield from tagged(op.end_of_input(ctx))
        elif not ctx.is_empty():
            yield None, current, op.snapshot(ctx)

    def flush() -> pa.RecordBatch:
        counts[1] += sum(1 for out, _, _ in pending if out is not None)
        counts[2] += sum(1 for out, _, blob in pending if out is None and blob.__class__ is bytes)
        return _batch(op, schema, key_slots, pending)

    for batch in batches:
        states = batch.column(STATE).to_pylist()
        # (a batch without REJECT_ROW, e.g. built by hand, carries none: a rejected row's text is then NULL)
        columns = [op.read(batch, n) if n in batch.schema.names else [None] * batch.num_rows for n in names]
        key_columns = [columns[p] for p in key_positions]
        i, size = 0, len(states)
        while i < size:
            key = tuple(column[i] for column in key_columns)
            if ctx is None or key != current:
                pending.extend(close())
                ctx, current = InMemoryKeyContext(), key
            if states[i] is not None:  # sorted first within its key: the state the previous slice left
                op.restore(ctx, states[i], key)
                i += 1
                continue
            end = i + 1  # the key's run of rows in this batch: handed over at once
            while end < size and states[end] is None and tuple(c[end] for c in key_columns) == key:
                end += 1
            rows = [dict(zip(names, values, strict=True)) for values in zip(*(c[i:end] for c in columns), strict=True)]
            counts[0] += end - i
            pending.extend(tagged(op.process(ctx, rows)))
            if len(pending) >= OUTPUT_BATCH_ROWS:
                yield flush()
                pending = []
            i = end
    pending.extend(close())
    if pending:
        yield flush()
    for counter, count in zip(counters, counts, strict=True):
        counter.add(count)


#: (main output row | None, state key, state bytes | (rejected row's REJECT_ROW text, reason) | None)
_Item = tuple[dict[str, Any] | None, tuple[Any, ...] | None, bytes | tuple[str, str] | None]


def _batch(op: SliceOperator, schema: pa.Schema, key_slots: dict[int, int], items: list[_Item]) -> pa.RecordBatch:
    arrays = []
    for i, field in enumerate(op.output):
        slot = key_slots.get(i)
        values = [
            out.get(field.name) if out is not None else (state_key[slot] if slot is not None and state_key else None)
            for out, state_key, _ in items
        ]
        arrays.append(op.to_arrow(values, schema.field(i).type))
    arrays.append(pa.array([blob if blob.__class__ is bytes else None for _, _, blob in items], type=pa.binary()))
    for part in (1, 0):  # REJECT_REASON, REJECT_ROW
        arrays.append(pa.array([blob[part] if blob.__class__ is tuple else None for _, _, blob in items],  # type: ignore[index]
                               type=pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# -- keyed operators: the driver side -----------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyedBackfill:
    """A keyed operator's backfill registration (driver side).

    ``name``: the metrics' ``job``; ``where``: the error messages' prefix; ``keys``: the key columns, sorted by
    ``key_order``; ``order``: the sort within a key after its state row; ``time``: the event-time column and
    ``bounds(start, end)`` its literals; ``output``: the main output's Spark schema (every key column among
    its fields); ``runner(last, counters, carried_from)``: the picklable ``mapInArrow`` function of a slice
    (calling :func:`run_keyed_slice`); ``untimed(df)``: the dead letters of the rows with a NULL event time;
    ``main``: the output columns written to the main output (None: every one; an operator whose key columns are
    internal, as the window join's, leaves them out); ``finish``: a last step over a slice's main rows before they
    are written (the window aggregate keeping rows aggregates them there), its rows counted as the slice's out;
    ``clock(df, plan, index)``: what slice ``index`` must know of the rows before it, computed on the driver before
    the slice runs and handed to ``runner`` as a fourth argument (the continuous GROUP BY's watermarks: a slice
    stands for one micro-batch of a stream); None: ``runner`` takes three.
    ``split``: instead, for an operator whose main rows carry several output classes in one shape (the DataStream
    window's tagged rows), the slice's main rows as each output's rows by tag (:data:`MAIN` required, :data:`LATE`
    written to the target's late root, :data:`DEAD_LETTER` added to the rejected rows; ``side``, ``reason``,
    ``row``), main and late counted as written.
    """

    name: str
    where: str
    keys: Sequence[str]
    key_order: Sequence[Column]
    order: Sequence[Column]
    time: str
    bounds: Callable[[datetime, datetime], tuple[Column, Column]]
    output: T.StructType
    runner: Callable[..., Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]]
    untimed: Callable[[DataFrame], DataFrame]
    main: Sequence[str] | None = None
    finish: Callable[[DataFrame], DataFrame] | None = None
    clock: Callable[[DataFrame, Sequence[Slice], int], Any] | None = None
    split: Callable[[DataFrame], Mapping[str, DataFrame]] | None = None


def check_reserved(df: DataFrame, where: str) -> None:
    """Refuse an input with a column the keyed driver adds (``STATE``, ``REJECT_ROW``; case-insensitively)."""
    for reserved in (STATE, REJECT_ROW):
        if any(c.lower() == reserved.lower() for c in df.columns):
            raise SpecError("df", f"the input has a column named {reserved}, which the backfill uses internally",
                            where=where)


def run_keyed(
    df: DataFrame, op: KeyedBackfill, plan: Sequence[Slice], wanted: Sequence[int], output: str, dead_letter: str,
    on_slice: Callable[[dict[str, Any]], None] | None = None, late: str | None = None,
) -> dict[str, Any]:
    """Run the ``wanted`` slices of ``plan`` in order through the keyed operator ``op``; returns the metrics.

    A slice after the first starts from the state the slice before it left (it must exist: a run of
    ``only=[k]`` says which slice to run first).  Metrics: ``rows_in`` / ``rows_out`` / ``state_keys_out`` /
    ``dead_letter`` / ``seconds`` per slice under ``per_slice`` (``on_slice(one)`` gets each as it is
    written), their totals, ``state_keys_carried`` (keys handed across the last edge run), ``watermark``.
    ``late``: the late output's root (``<late>/slice=<label>/``), for a registration whose ``split`` gives late
    rows; its slices' rows are counted in ``late`` (per slice and in total).
    """
    started = clock.perf_counter()
    writer = SliceWriter(df.sparkSession, keyed_target(output, dead_letter, late))
    per_slice: list[dict[str, Any]] = []
    for index in wanted:
        s = plan[index]
        carried = carried_from = None
        if index > 0:
            carried_from = writer.target.directory(STATE_OUTPUT, plan[index - 1].label)
            carried = _read_state(df, op, carried_from, s)
        known = () if op.clock is None else (op.clock(df, plan, index),)
        per_slice.append(_run_keyed_slice(df, op, s, index == len(plan) - 1, carried, carried_from, writer, known))
        if on_slice is not None:
            on_slice(per_slice[-1])
    writer.write(op.untimed(df), DEAD_LETTER, NO_SLICE)
    untimed = df.sparkSession.read.parquet(writer.target.directory(DEAD_LETTER, NO_SLICE)).count()
    late_rows = {"late": sum(m["late"] for m in per_slice)} if late is not None else {}
    return {
        "kind": "backfill", "job": op.name, "slices": len(per_slice), "per_slice": per_slice,
        "rows_in": sum(m["rows_in"] for m in per_slice), "rows_out": sum(m["rows_out"] for m in per_slice),
        **late_rows,
        "state_keys_carried": per_slice[-1]["state_keys_out"] if per_slice else 0,
        "dead_letter": untimed + sum(m["dead_letter"] for m in per_slice),
        "watermark": edge_text(plan[-1].end), "seconds": round(clock.perf_counter() - started, 3),
    }


def keyed_target(output: str, dead_letter: str, late: str | None = None) -> SliceTarget:
    """A keyed run's slice directories: main ``<output>/slice=<label>``, dead letters ``<dead_letter>/slice=<label>``,
    carried state ``<output>/_state/slice=<label>``; late rows ``<late>/slice=<label>`` when ``late`` is given.

    >>> keyed_target("out", "dead").directory("state", "2020-01-01T00-00-00")
    'out/_state/slice=2020-01-01T00-00-00'
    >>> keyed_target("out", "dead", "out_late").directory("late", "x")
    'out_late/slice=x'
    """
    roots = {MAIN: output, DEAD_LETTER: dead_letter, STATE_OUTPUT: f"{output}/{STATE_DIR}"}
    return SliceTarget(roots if late is None else {**roots, LATE: late})


def _state_schema(df: DataFrame, op: KeyedBackfill) -> T.StructType:
    fields = [df.schema[c] for c in op.keys]
    return T.StructType([*[T.StructField(f.name, f.dataType, True) for f in fields], T.StructField(STATE, T.BinaryType())])


def _read_state(df: DataFrame, op: KeyedBackfill, path: str, s: Slice) -> DataFrame:
    try:
        state = df.sparkSession.read.schema(_state_schema(df, op)).parquet(path)
        state.inputFiles()  # fails now, with our message, when the previous slice never ran
    except Exception as exc:
        raise SpecError("only", f"slice {s.index} needs the state at {s.start} ({path}); run slice {s.index - 1} first",
                        where=op.where) from exc
    return state


def _run_keyed_slice(
    df: DataFrame, op: KeyedBackfill, s: Slice, last: bool, carried: DataFrame | None, carried_from: str | None,
    writer: SliceWriter, known: tuple[Any, ...] = (),
) -> dict[str, Any]:
    started = clock.perf_counter()
    lo, hi = op.bounds(s.start, s.end)
    event_time = named(op.time)
    # the dead letter's `row`: the input's own columns (not MATCH_RECOGNIZE's computed functions)
    original = F.to_json(F.struct(*[named(c) for c in df.columns if not is_hidden(c)]))
    rows = df.where((event_time >= lo) & (event_time < hi)).withColumn(STATE, F.lit(None).cast("binary")) \
        .withColumn(REJECT_ROW, original)
    if carried is not None:
        rows = rows.unionByName(carried, allowMissingColumns=True)
    keys = [named(c) for c in op.keys]
    arranged = rows.repartition(*keys) if keys else rows.repartition(1)
    arranged = arranged.sortWithinPartitions(*op.key_order, F.col(STATE).asc_nulls_last(), *op.order)
    spark = df.sparkSession
    counters = tuple(spark.sparkContext.accumulator(0) for _ in range(3))
    out_schema = T.StructType([*op.output.fields, T.StructField(STATE, T.BinaryType()),
                               T.StructField(REJECT_REASON, T.StringType()), T.StructField(REJECT_ROW, T.StringType())])
    result = map_in_arrow(arranged, op.runner(last, counters, carried_from, *known), out_schema).persist()
    reason = F.col(REJECT_REASON)
    try:  # two to four writes of one persisted pass; each replaces the slice's directory, so a re-run replaces exactly its files
        main = result.where(F.col(STATE).isNull() & reason.isNull()).select(
            *[named(n) for n in (op.main if op.main is not None else op.output.names)])
        outputs = {MAIN: main if op.finish is None else op.finish(main)} if op.split is None else op.split(main)
        writer.write(outputs[MAIN], MAIN, s.label)
        late: dict[str, int] = {}
        if LATE in writer.target.roots:  # written (perhaps empty) whenever the run has a late output (split gives it)
            writer.write(outputs[LATE], LATE, s.label)
            late = {"late": writer.rows(LATE, [s.label])}
        rejected_rows = result.where(reason.isNotNull()).select(
            F.lit("input").alias("side"), reason.alias("reason"), F.col(REJECT_ROW).alias("row"))
        if DEAD_LETTER in outputs:
            rejected_rows = rejected_rows.unionByName(outputs[DEAD_LETTER])
        writer.write(rejected_rows, DEAD_LETTER, s.label)
        # Read now: the write above ran every task once (counted only by successful attempts).
        rows_in, rows_out, state_keys = (c.value for c in counters)
        if op.finish is not None or op.split is not None:  # the operator's rows became others: count what was written
            rows_out = writer.rows(MAIN, [s.label])
        if not last:  # the last slice ended the input: no state is left, none is ever read
            writer.write(result.where(F.col(STATE).isNotNull()).select(*keys, F.col(STATE)), STATE_OUTPUT, s.label)
        rejected = writer.rows(DEAD_LETTER, [s.label])  # from the footers: no Spark job
    finally:
        result.unpersist()
    return slice_metrics(s, rows_in=rows_in, rows_out=rows_out, state_keys_out=state_keys, dead_letter=rejected,
                         **late, seconds=round(clock.perf_counter() - started, 3))


# -- set-based runs: Spark helpers --------------------------------------------------------------------------------


def timed(write: Callable[[], Any]) -> float:
    """Run ``write``; its seconds (wall clock)."""
    started = clock.perf_counter()
    write()
    return round(clock.perf_counter() - started, 3)


def fits_broadcast(spark: SparkSession, df: DataFrame) -> bool:
    """Whether Spark's size estimate of ``df`` is within the session's broadcast threshold (never when broadcasts are off)."""
    threshold = spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold()  # parsed ("10MB", "-1")
    if threshold < 0:
        return False
    estimate = int(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())  # a BigInteger: py4j gives an int
    return estimate <= threshold


def observed_metrics(seen: Observation) -> dict | None:
    """The metrics ``seen`` observed, or None when Spark ended the action without them: adaptive execution
    drops the observing operator when a stage after it produced no row and it replaces the plan above
    that stage by an empty relation."""
    if seen._jo.getRow().length() == 0:  # pyspark's `get` fails on this empty row
        return None
    return seen.get


def observed(df: DataFrame, seen: list[Observation], count: Column | None = None) -> DataFrame:
    """``df`` counting its rows (or ``count``) into a new Observation appended to ``seen``, read after the action."""
    observation = Observation()
    seen.append(observation)
    return df.observe(observation, (F.count(F.lit(1)) if count is None else count).alias("n"))


def total(seen: Sequence[Observation]) -> int:
    """The sum of the counts ``seen`` (:func:`observed`) made."""
    return sum(int(o.get["n"]) for o in seen)


@contextmanager
def concurrent_writers(spark: SparkSession, slices_per_job: int) -> Iterator[None]:
    """While a job writes several slices, each task keeps one open file per slice it meets.

    Without it Spark sorts every task's rows by the partition column before writing (a sort of the
    whole run's output, for rows a time-ordered input delivers mostly slice after slice anyway).
    """
    if slices_per_job == 1:
        yield
        return
    key = "spark.sql.maxConcurrentOutputFileWriters"
    before = spark.conf.get(key, None)
    # Each open writer buffers its row group: past this many slices a task meets, Spark sorts the rest.
    spark.conf.set(key, str(min(slices_per_job, MAX_OPEN_SLICE_FILES) + 1))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def footers_show_no_nulls(df: DataFrame, columns: Sequence[str]) -> bool:
    """Whether ``df`` scans parquet files (unfiltered, ``columns`` stored in them) whose footers count no NULL in ``columns``.

    False whenever that cannot be told cheaply: another plan, more than ``MAX_FOOTER_FILES`` files, a
    footer without null counts.  Driver-side footer reads only (~10 ms for 2 files, 10 row groups).
    """
    files = parquet_scan_files(df, columns)
    if files is None or len(files) > MAX_FOOTER_FILES:
        return False
    try:
        nulls = HadoopFiles(df.sparkSession).parquet_null_counts(files, columns)
    except Py4JJavaError:  # an unreadable footer: the count job reads the rows (and reports the problem)
        return False
    return nulls is not None and not any(nulls.values())


def parquet_scan_files(df: DataFrame, columns: Sequence[str]) -> list[str] | None:
    """The files of ``df`` when its plan is a parquet scan, at most projected, with ``columns`` stored in its files."""
    plan = df._jdf.queryExecution().optimizedPlan()
    if plan.nodeName() == "Project":  # a projection of columns as they are (no renamed or computed one)
        projected = plan.projectList()
        if not all(projected.apply(i).getClass().getSimpleName() == "AttributeReference" for i in range(projected.size())):
            return None
        plan = plan.child()
    if plan.nodeName() != "LogicalRelation":
        return None
    relation = plan.relation()
    if relation.getClass().getSimpleName() != "HadoopFsRelation" or relation.fileFormat().getClass().getSimpleName() != "ParquetFileFormat":
        return None
    stored = set(relation.dataSchema().fieldNames()) - set(relation.partitionSchema().fieldNames())
    return list(df.inputFiles()) if set(columns) <= stored else None


__all__ = [
    "DEAD_LETTER",
    "LATE",
    "MAIN",
    "NO_SLICE",
    "REJECT_REASON",
    "REJECT_ROW",
    "SLICE_COLUMN",
    "STATE",
    "KeyedBackfill",
    "SliceOperator",
    "at",
    "check_reserved",
    "keyed_target",
    "plan_slices",
    "run_keyed",
    "run_keyed_slice",
    "time_literals",
]
