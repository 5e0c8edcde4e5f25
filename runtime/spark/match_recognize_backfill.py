"""The sliced MATCH_RECOGNIZE backfill: ``[start, end)`` of the event time in N slices, matcher state carried.

MATCH_RECOGNIZE over a partition is one left-to-right pass: a
:class:`~timeweave.core.pattern.PartitionMatcher` takes the partition's rows in ORDER BY order and
emits each output row once it is decided.  Pausing that pass at a time edge and resuming it later
gives the same rows as one pass, as long as the matcher's state travels across the edge.  So each
slice (sequentially):

1. reads its rows (``start_k <= time < end_k``; the first ORDER BY column is the event time) and the
   previous slice's state, one row per PARTITION BY key holding its matcher as data (:func:`freeze`);
2. unions them, ``repartition``s by the PARTITION BY columns and sorts within partitions by key, state
   row first, then ORDER BY (the DataFrame door's arrangement), then ``mapInArrow``: per key, decode
   the carried matcher (:func:`thaw`; or start one), push the key's rows one Arrow batch at a time;
3. at the key's end: in the last slice the core's ``finish()`` closes the partition (``$`` matches, greedy
   attempts settle); otherwise the matcher is encoded into the state for the next slice.  Every key ever
   seen is carried, because ``MATCH_NUMBER()`` and the attempt in progress continue across edges.

The core decides everything (attempts, skips, what is decided before the edge, the end); the adapter
only arranges rows and moves bytes.  Hence the union of the slices equals
:func:`timeweave.spark.match_recognize.match_recognize` over the rows in ``[start, end)``.

Layout (all overwritten per slice, so re-running slice k from state k-1 replaces exactly its files):

* ``<output>/slice=<label>/``: the slice's output rows (the DataFrame door's schema); read ``<output>``
  as one parquet dataset (``_state`` is hidden from Spark's partition discovery by its ``_``);
* ``<output>/_state/slice=<label>/``: PARTITION BY columns + ``__tw_state`` (the matcher as data, without the
  clause every key shares: :func:`freeze`) after the slice;
* ``<dead_letter>/slice=none/``: rows with a NULL event time (``side`` = ``input``, ``reason``, ``row`` as
  JSON: the streaming door's shape); they belong to no slice;
* ``<dead_letter>/slice=<label>/``: the slice's rows of keys that ran out of their match budget (reason
  ``MATCH_BUDGET_EXCEEDED: ...``, as the DataFrame and streaming doors give); the key's carried state remembers
  it, so its rows of later slices go there too.

Memory per Spark task: one Arrow batch in, one output batch, and per key only the rows the core still
needs (it releases the rest).  The state is data (:mod:`timeweave.core.state_codec`: versioned, checksummed
MessagePack; never a pickle), because output locations are usually shared: a state file that is not this
release's format (a pickle an earlier release wrote, damaged or crafted bytes) fails the slice with a
:class:`~timeweave.core.errors.StateFormatError` naming the state directory, and nothing of it is executed.
State an earlier release wrote must be rebuilt: re-run the backfill from slice 0.
"""

from __future__ import annotations

import time as clock
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.errors import SpecError, StateFormatError
from timeweave.core.pattern import ClauseSpec, MatchBudget, PartitionMatcher
from timeweave.core.pattern.operator import HeldMatcher
from timeweave.core.state_codec import decode, encode
from timeweave.spark.backfill import Slice, slice_label, slices_of
from timeweave.spark.match_recognize import (
    _OUTPUT_BATCH_ROWS,
    REJECT_REASON,
    REJECT_ROW,
    MatchPlan,
    _arrow_schema,
    _bound,
    _naive,
    _sort_column,
    _to_arrow,
    plan,
    rejected_rows,
)
from timeweave.spark.schema import column as named
from timeweave.spark.schema import map_in_arrow
from timeweave.spark.subqueries import inline_subqueries

STATE = "__tw_state"  # BINARY: one key's PartitionMatcher as data (:func:`freeze`; state rows only)
_WHERE = "match_recognize backfill"
_EPOCH = datetime(1970, 1, 1)


def _quoted(name: str) -> Column:
    return named(name)


def time_bounds(data_type: T.DataType, start: datetime, end: datetime, column: str) -> tuple[Column, Column]:
    """Spark literals for ``start`` and ``end`` (naive = UTC) comparable with the event-time column's type.

    TIMESTAMP columns compare with the session's wall clock (the suite and jobs run in UTC);
    integer columns count microseconds since the epoch, as the core's streaming operator does.

    >>> time_bounds(T.StringType(), datetime(1970, 1, 1), datetime(1970, 1, 2), "t")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: match_recognize backfill: argument 'order_by': the event time t (the first ORDER BY column) must be a TIMESTAMP or an integer (µs since the epoch) to be sliced, got string
    """
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        kind = "timestamp" if isinstance(data_type, T.TimestampType) else "timestamp_ntz"
        return tuple(F.lit(at.isoformat(sep=" ")).cast(kind) for at in (start, end))  # type: ignore[return-value]
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return tuple(F.lit(_micros(at)) for at in (start, end))  # type: ignore[return-value]
    raise SpecError("order_by", f"the event time {column} (the first ORDER BY column) must be a TIMESTAMP or an "
                                f"integer (µs since the epoch) to be sliced, got {data_type.simpleString()}", where=_WHERE)


def _micros(at: datetime) -> int:
    naive = at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo is not None else at
    delta = naive - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _event_time(bound: MatchPlan) -> tuple[str, T.DataType]:
    spec = bound.spec
    if not spec.order_by:
        raise SpecError("clause", "a backfill needs ORDER BY <event time column> first in the clause", where=_WHERE)
    if spec.order_by[0].descending:
        raise SpecError("clause", "the event time (the first ORDER BY column) must be ordered ascending "
                                  "to be processed slice by slice", where=_WHERE)
    name = bound.order_columns[0][0]
    return name, bound.input_schema[name].dataType


# -- executor side ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _SliceRunner:
    """The ``mapInArrow`` function of one slice (picklable, tiny): sorted rows + carried state in, output rows
    and state rows out in one schema (the door's columns, then ``__tw_state``: NULL on output rows)."""

    clause: str
    input_json: str
    output_json: str
    timezone: str
    last: bool  # the last slice of the range: finish every partition instead of carrying it
    counters: tuple[Any, ...]  # accumulators: rows in, rows out, state keys out
    carried_from: str | None = None  # the state directory read (named by state format errors)
    budget: MatchBudget | None = None  # each key's match budget (None: the default)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        bound = _bound(self.clause, self.input_json, self.output_json)
        door = _arrow_schema(bound.schema, self.timezone)
        schema = pa.schema([*door, pa.field(STATE, pa.binary()), pa.field(REJECT_REASON, pa.string()),
                            pa.field(REJECT_ROW, pa.string())])
        # the input row's to_json rides along (REJECT_ROW): a key over budget sends its rows to the dead letter
        names = (*bound.input_names, REJECT_ROW)
        key_positions = [names.index(c) for c in bound.partition_columns]
        # Output column i holds partition column j's value in a state row (partition columns come first).
        key_slots = {i: j for j, c in enumerate(bound.partition_columns) for i, f in enumerate(door) if f.name == c}
        pending: list[_Item] = []
        counts = [0, 0, 0]
        matcher: PartitionMatcher | None = None
        current: tuple[Any, ...] | None = None

        def rejected(matcher: PartitionMatcher) -> Iterator[_Item]:
            rows = matcher.take_rejected()
            if rows:
                assert matcher.exceeded is not None
                reason = matcher.exceeded.reason
                yield from ((None, None, (row[REJECT_ROW], reason)) for row in rows)

        def close() -> Iterator[_Item]:
            if matcher is None:
                return
            if self.last:
                for out in matcher.finish():
                    yield out, None, None
                yield from rejected(matcher)
            else:
                yield None, current, freeze(matcher)

        def flush() -> pa.RecordBatch:
            counts[1] += sum(1 for out, _, _ in pending if out is not None)
            counts[2] += sum(1 for out, _, blob in pending if out is None and blob.__class__ is bytes)
            return _batch(bound, schema, key_slots, pending)

        for batch in batches:
            states = batch.column(STATE).to_pylist()
            # (a batch without REJECT_ROW, e.g. built by hand, carries none: a rejected row's text is then NULL)
            columns = [_naive(batch.column(n)).to_pylist() if n in batch.schema.names else [None] * batch.num_rows
                       for n in names]
            key_columns = [columns[p] for p in key_positions]
            i, size = 0, len(states)
            while i < size:
                key = tuple(column[i] for column in key_columns)
                if matcher is None or key != current:
                    pending.extend(close())
                    matcher, current = None, key
                if states[i] is not None:  # sorted first within its key: the matcher the previous slice left
                    matcher = thaw(states[i], bound.spec, where=f"backfill state {self.carried_from} (key {key!r:.200})",
                                   budget=self.budget)
                    i += 1
                    continue
                end = i + 1  # the key's run of rows in this batch: pushed at once
                while end < size and states[end] is None and tuple(c[end] for c in key_columns) == key:
                    end += 1
                if matcher is None:
                    matcher = PartitionMatcher(bound.spec, budget=self.budget, dead_letter=True)
                rows = [dict(zip(names, values, strict=True)) for values in zip(*(c[i:end] for c in columns), strict=True)]
                counts[0] += end - i
                pending.extend((out, None, None) for out in matcher.push_many(rows))
                pending.extend(rejected(matcher))
                if len(pending) >= _OUTPUT_BATCH_ROWS:
                    yield flush()
                    pending = []
                i = end
        pending.extend(close())
        if pending:
            yield flush()
        for counter, count in zip(self.counters, counts, strict=True):
            counter.add(count)


def freeze(matcher: PartitionMatcher) -> bytes:
    """One key's carried state: the matcher as data (:mod:`timeweave.core.state_codec`: versioned, checksummed
    MessagePack, never pickle), without the clause every key shares (:func:`thaw` puts it back).

    >>> from timeweave.core.pattern import parse_clause
    >>> spec = parse_clause("MEASURES COUNT(*) AS n PATTERN (A B+) DEFINE B AS B.x > PREV(B.x)")
    >>> matcher = PartitionMatcher(spec)
    >>> matcher.push_many([{"x": 1}, {"x": 2}])
    []
    >>> again = thaw(freeze(matcher), spec)
    >>> again.push({"x": 3}) + again.push({"x": 1}) + again.finish()
    [{'n': 3}]
    """
    return encode(HeldMatcher(matcher))


def thaw(blob: bytes, spec: ClauseSpec, where: str | None = None, budget: MatchBudget | None = None) -> PartitionMatcher:
    """The matcher :func:`freeze` stored, bound to ``spec`` again (in dead-letter mode, with ``budget``).

    The bytes come from storage others may write to: they are decoded as data only, and anything that
    is not this release's state format (a pickle an earlier release wrote, damaged or modified bytes)
    raises :class:`~timeweave.core.errors.StateFormatError` naming ``where``.

    >>> thaw(b"\\x80\\x04K\\x01.", None, where="backfill state out/_state/slice=0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    timeweave.core.errors.StateFormatError: backfill state out/_state/slice=0: state written by an earlier ...
    """
    held = decode(blob, where=where)
    if not isinstance(held, HeldMatcher):
        raise StateFormatError(f"malformed state: expected a matcher, found {type(held).__name__}", where=where)
    try:
        return held.get(spec, budget=budget, dead_letter=True)
    except StateFormatError as exc:
        if exc.where is None and where is not None:
            raise StateFormatError(exc.message, where=where) from exc
        raise


#: (output row | None, state key, state | (rejected row's to_json, reason) | None)
_Item = tuple[dict[str, Any] | None, tuple[Any, ...] | None, bytes | tuple[str, str] | None]


def _batch(bound: MatchPlan, schema: pa.Schema, key_slots: dict[int, int], items: list[_Item]) -> pa.RecordBatch:
    arrays = []
    for i, key in enumerate(bound.keys):
        slot = key_slots.get(i)
        values = [
            out.get(key) if out is not None else (state_key[slot] if slot is not None and state_key else None)
            for out, state_key, _ in items
        ]
        arrays.append(_to_arrow(values, schema.field(i).type))
    arrays.append(pa.array([blob if blob.__class__ is bytes else None for _, _, blob in items], type=pa.binary()))
    for part in (1, 0):  # REJECT_REASON, REJECT_ROW
        arrays.append(pa.array([blob[part] if blob.__class__ is tuple else None for _, _, blob in items],  # type: ignore[index]
                               type=pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# -- driver side ----------------------------------------------------------------------------------------------


def _state_schema(bound: MatchPlan) -> T.StructType:
    fields = [bound.input_schema[c] for c in bound.partition_columns]
    return T.StructType([*[T.StructField(f.name, f.dataType, True) for f in fields], T.StructField(STATE, T.BinaryType())])


def _read_state(df: DataFrame, bound: MatchPlan, path: str, index: int, edge: datetime) -> DataFrame:
    try:
        state = df.sparkSession.read.schema(_state_schema(bound)).parquet(path)
        state.inputFiles()  # fails now, with our message, when the previous slice never ran
    except Exception as exc:
        raise SpecError("only", f"slice {index} needs the state at {edge} ({path}); run slice {index - 1} first",
                        where=_WHERE) from exc
    return state


def _run_slice(df: DataFrame, bound: MatchPlan, s: Slice, last: bool, carried: DataFrame | None,
               output: str, state_root: str, carried_from: str | None = None, dead_letter: str | None = None,
               budget: MatchBudget | None = None) -> dict[str, Any]:
    started = clock.perf_counter()
    time_column, time_type = _event_time(bound)
    lo, hi = time_bounds(time_type, s.start, s.end, time_column)
    event_time = _quoted(time_column)
    original = F.to_json(F.struct(*[_quoted(c) for c in df.columns]))  # the dead-letter shape (rejected_rows)
    rows = df.where((event_time >= lo) & (event_time < hi)).withColumn(STATE, F.lit(None).cast("binary")) \
        .withColumn(REJECT_ROW, original)
    if carried is not None:
        rows = rows.unionByName(carried, allowMissingColumns=True)
    keys = [_quoted(c) for c in bound.partition_columns]
    arranged = rows.repartition(*keys) if keys else rows.repartition(1)
    arranged = arranged.sortWithinPartitions(
        *[_sort_column(c, False, False) for c in bound.partition_columns],
        F.col(STATE).asc_nulls_last(),  # the carried matcher before the key's rows
        *[_sort_column(*o) for o in bound.order_columns],
    )
    spark = df.sparkSession
    timezone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    counters = tuple(spark.sparkContext.accumulator(0) for _ in range(3))
    runner = _SliceRunner(bound.spec.text, bound.input_schema.json(), bound.schema.json(), timezone, last, counters,
                          carried_from, budget)
    out_schema = T.StructType([*bound.schema.fields, T.StructField(STATE, T.BinaryType()),
                               T.StructField(REJECT_REASON, T.StringType()), T.StructField(REJECT_ROW, T.StringType())])
    result = map_in_arrow(arranged, runner, out_schema)
    result = result.persist()  # two or three writes: the Python pass runs once for all
    reason = F.col(REJECT_REASON)
    try:
        # Every write overwrites, so re-running the slice replaces exactly its files.
        result.where(F.col(STATE).isNull() & reason.isNull()).select(
            *[_quoted(f.name) for f in bound.schema.fields]).write.mode("overwrite").parquet(f"{output}/slice={s.label}")
        if dead_letter is not None:  # keys over their match budget: their rows of this slice
            result.where(reason.isNotNull()).select(
                F.lit("input").alias("side"), reason.alias("reason"), F.col(REJECT_ROW).alias("row"),
            ).write.mode("overwrite").parquet(f"{dead_letter}/slice={s.label}")
        # Read now: the write above ran every task once (counted only by successful attempts).
        rows_in, rows_out, state_keys = (c.value for c in counters)
        if not last:  # the last slice finished every partition: no state is left, none is ever read
            result.where(F.col(STATE).isNotNull()).select(*keys, F.col(STATE)).write.mode("overwrite").parquet(
                f"{state_root}/slice={s.label}")
        over_budget = 0 if dead_letter is None else spark.read.parquet(f"{dead_letter}/slice={s.label}").count()
    finally:
        result.unpersist()
    return {
        "slice": s.index, "label": s.label, "start": s.start.isoformat(), "end": s.end.isoformat(),
        "rows_in": rows_in, "rows_out": rows_out, "state_keys_out": state_keys, "dead_letter": over_budget,
        "seconds": round(clock.perf_counter() - started, 3),
    }


def backfill_match_recognize(
    df: DataFrame,
    clause: str,
    start: datetime,
    end: datetime,
    slices: int,
    output: str,
    dead_letter: str | None = None,
    only: Sequence[int] | None = None,
    on_slice: Callable[[dict[str, Any]], None] | None = None,
    budget: MatchBudget | None = None,
) -> dict[str, Any]:
    """Run ``MATCH_RECOGNIZE (clause)`` over the rows of ``df`` with event time in ``[start, end)``, in ``slices``
    sequential slices; returns metrics.  The union of ``<output>/slice=*`` equals
    ``timeweave.match_recognize(df.where(start <= time < end), clause)``.

    The event time is the clause's first ORDER BY column (ascending; TIMESTAMP, or integer µs since the
    epoch); ``start``/``end`` are naive UTC (aware ones are converted).  ``only`` re-runs the given slice
    indexes from the state the previous slice left (it must exist), replacing exactly their output
    and state.  Rows with a NULL event time go to ``<dead_letter>/slice=none`` (default
    ``<output>_dead_letter``), the rows of keys over their match ``budget`` (None: the default
    :class:`~timeweave.core.pattern.MatchBudget`) to ``<dead_letter>/slice=<label>``.  Errors in the clause or
    its columns raise before any Spark job.

    Metrics: ``rows_in`` / ``rows_out`` / ``state_keys_out`` / ``seconds`` per slice under ``per_slice``,
    their totals (``on_slice(one)`` gets each slice's as it is written), ``state_keys_carried`` (keys handed across the last edge run), ``dead_letter``,
    ``seconds``.

    Example::

        metrics = backfill_match_recognize(
            ticker, "PARTITION BY symbol ORDER BY rowtime MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS A.price > 10",
            datetime(2024, 1, 1), datetime(2024, 1, 2), 3, "out/ticker_runs")
        spark.read.parquet("out/ticker_runs")  # the matches, with a `slice` column from the directory names
    """
    started = clock.perf_counter()
    if not isinstance(clause, str) or not clause.strip():
        raise SpecError("clause", "the MATCH_RECOGNIZE clause (the text between its parentheses) is required",
                        where=_WHERE)
    if not output:
        raise SpecError("output", "an output path is required", where=_WHERE)
    if isinstance(slices, bool) or not isinstance(slices, int):
        raise SpecError("slices", f"must be an integer >= 1, got {slices!r}", where=_WHERE)
    start, end = (_naive_utc(at, name) for at, name in ((start, "start"), (end, "end")))
    plan_slices = slices_of(start, end, slices)
    wanted = set(range(len(plan_slices))) if only is None else set(only)
    unknown = sorted(i for i in wanted if not (isinstance(i, int) and 0 <= i < len(plan_slices)))
    if unknown:
        raise SpecError("only", f"slice indexes {unknown} are not in 0..{len(plan_slices) - 1}", where=_WHERE)
    bound = plan(inline_subqueries(df.sparkSession, clause), df.schema)  # subqueries run once, for every slice
    for reserved in (STATE, REJECT_ROW):
        if any(c.lower() == reserved.lower() for c in df.columns):
            raise SpecError("df", f"the input has a column named {reserved}, which the backfill uses internally",
                            where=_WHERE)
    time_column, time_type = _event_time(bound)
    time_bounds(time_type, start, end, time_column)  # the type check, before any job
    dead_letter = dead_letter or f"{output}_dead_letter"
    state_root = f"{output}/_state"

    per_slice: list[dict[str, Any]] = []
    for s in plan_slices:
        if s.index not in wanted:
            continue
        carried = carried_from = None
        if s.index > 0:
            carried_from = f"{state_root}/slice={plan_slices[s.index - 1].label}"
            carried = _read_state(df, bound, carried_from, s.index, s.start)
        per_slice.append(_run_slice(df, bound, s, s.index == len(plan_slices) - 1, carried, output, state_root,
                                    carried_from, dead_letter, budget))
        if on_slice is not None:
            on_slice(per_slice[-1])

    # The DataFrame door's dead letter (match_recognize_with_rejects; the streaming door's shape and reason).
    untimed = rejected_rows(df, bound)
    untimed.write.mode("overwrite").parquet(f"{dead_letter}/slice=none")
    dead = df.sparkSession.read.parquet(f"{dead_letter}/slice=none").count()
    return {
        "kind": "backfill",
        "job": "match_recognize",
        "slices": len(per_slice),
        "per_slice": per_slice,
        "rows_in": sum(m["rows_in"] for m in per_slice),
        "rows_out": sum(m["rows_out"] for m in per_slice),
        "state_keys_carried": per_slice[-1]["state_keys_out"] if per_slice else 0,
        "dead_letter": dead + sum(m["dead_letter"] for m in per_slice),
        "watermark": end.isoformat(),
        "seconds": round(clock.perf_counter() - started, 3),
    }


def _naive_utc(at: datetime, argument: str) -> datetime:
    if not isinstance(at, datetime):
        raise SpecError(argument, f"must be a datetime, got {at!r}", where=_WHERE)
    return at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo is not None else at


__all__ = ["STATE", "backfill_match_recognize", "freeze", "slice_label", "thaw", "time_bounds"]
