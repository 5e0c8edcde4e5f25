"""The sliced MATCH_RECOGNIZE backfill: ``[start, end)`` of the event time in N slices, matcher state carried.

MATCH_RECOGNIZE over a partition is one left-to-right pass: a
:class:`~timeweave.core.pattern.PartitionMatcher` takes the partition's rows in ORDER BY order and
emits each output row once it is decided.  Pausing that pass at a time edge and resuming it later
gives the same rows as one pass, as long as the matcher's state travels across the edge.  This module is
MATCH_RECOGNIZE's registration on the keyed backfill driver (:func:`timeweave.spark.host.backfill.run_keyed`):
the key is the PARTITION BY columns, the order within a key ORDER BY (the DataFrame door's arrangement), and
per key (:class:`_MatchSlice`, through the keyed-operator contract) the key's matcher lives in its context:
restored from the carried state (:func:`thaw`) or started, pushed the key's rows one Arrow batch at a time,
closed by the core's ``finish()`` at the end of input (``$`` matches, greedy attempts settle) or snapshot
for the next slice (:func:`freeze`).  Every key ever seen is carried, because ``MATCH_NUMBER()`` and the
attempt in progress continue across edges.

The core decides everything (attempts, skips, what is decided before the edge, the end); the driver
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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import types as T

from timeweave.core.errors import SpecError, StateFormatError
from timeweave.core.pattern import ClauseSpec, MatchBudget, PartitionMatcher
from timeweave.core.pattern.operator import HeldMatcher
from timeweave.core.state import KeyContext
from timeweave.core.state_codec import decode, encode
from timeweave.core.time import slice_label
from timeweave.spark.host import backfill as host
from timeweave.spark.host.backfill import DEAD_LETTER, MAIN, STATE, Tagged
from timeweave.spark.match_recognize import (
    MatchPlan,
    _arrow_schema,
    _bound,
    _naive,
    _sort_column,
    _to_arrow,
    plan,
    rejected_rows,
)
from timeweave.spark.match_recognize_functions import with_row_functions
from timeweave.spark.subqueries import inline_subqueries

_WHERE = "match_recognize backfill"
MATCHER = "matcher"  # the key's PartitionMatcher, in its KeyContext


def time_bounds(data_type: T.DataType, start: datetime, end: datetime, column: str) -> tuple[Column, Column]:
    """Spark literals for ``start`` and ``end`` (naive = UTC) comparable with the event-time column's type.

    TIMESTAMP columns compare with the bounds as instants, whatever the session's time zone (the temporal
    join's rule, :func:`timeweave.spark.host.backfill.time_literals`); integer columns count microseconds since
    the epoch, as the core's streaming operator does.

    >>> time_bounds(T.StringType(), datetime(1970, 1, 1), datetime(1970, 1, 2), "t")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: match_recognize backfill: argument 'order_by': the event time t (the first ORDER BY column) must be a TIMESTAMP or an integer (µs since the epoch) to be sliced, got string
    """
    bounds = host.time_literals(data_type, start, end)
    if bounds is None:
        raise SpecError("order_by", f"the event time {column} (the first ORDER BY column) must be a TIMESTAMP or an "
                                    f"integer (µs since the epoch) to be sliced, got {data_type.simpleString()}", where=_WHERE)
    return bounds


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


class _MatchSlice:
    """MATCH_RECOGNIZE over one slice's keys (a :class:`~timeweave.spark.host.backfill.SliceOperator`): the key's
    matcher lives in its context under :data:`MATCHER`."""

    def __init__(self, runner: _SliceRunner) -> None:
        bound = _bound(runner.clause, runner.input_json, runner.output_json)
        self.spec, self.budget, self.carried_from = bound.spec, runner.budget, runner.carried_from
        self.names, self.keys = bound.input_names, bound.partition_columns
        self.output = _arrow_schema(bound.schema, runner.timezone)

    def read(self, batch: pa.RecordBatch, name: str) -> list[Any]:
        return _naive(batch.column(name)).to_pylist()

    def to_arrow(self, values: list[Any], arrow_type: pa.DataType) -> pa.Array:
        return _to_arrow(values, arrow_type)

    def restore(self, ctx: KeyContext, blob: bytes, key: tuple[Any, ...]) -> None:
        ctx.put(MATCHER, thaw(blob, self.spec, where=f"backfill state {self.carried_from} (key {key!r:.200})",
                              budget=self.budget))

    def process(self, ctx: KeyContext, rows: list[dict[str, Any]]) -> list[Tagged]:
        matcher = ctx.get(MATCHER)
        if matcher is None:
            matcher = PartitionMatcher(self.spec, budget=self.budget, dead_letter=True)
            ctx.put(MATCHER, matcher)
        out: list[Tagged] = [(MAIN, row) for row in matcher.push_many(rows)]
        return out + self._rejected(matcher)

    def end_of_input(self, ctx: KeyContext) -> list[Tagged]:
        matcher = ctx.get(MATCHER)
        return [(MAIN, row) for row in matcher.finish()] + self._rejected(matcher)

    def snapshot(self, ctx: KeyContext) -> bytes:
        return freeze(ctx.get(MATCHER))

    @staticmethod
    def _rejected(matcher: PartitionMatcher) -> list[Tagged]:
        rows = matcher.take_rejected()
        if not rows:
            return []
        assert matcher.exceeded is not None
        reason = matcher.exceeded.reason
        return [(DEAD_LETTER, (row[host.REJECT_ROW], reason)) for row in rows]


@dataclass(frozen=True)
class _SliceRunner:
    """The ``mapInArrow`` function of one slice (picklable, tiny): :func:`~timeweave.spark.host.backfill.run_keyed_slice`
    with :class:`_MatchSlice`."""

    clause: str
    input_json: str
    output_json: str
    timezone: str
    last: bool  # the last slice of the range: finish every partition instead of carrying it
    counters: tuple[Any, ...]  # accumulators: rows in, rows out, state keys out
    carried_from: str | None = None  # the state directory read (named by state format errors)
    budget: MatchBudget | None = None  # each key's match budget (None: the default)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return host.run_keyed_slice(batches, _MatchSlice(self), self.last, self.counters)


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


# -- driver side ----------------------------------------------------------------------------------------------


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
    if not isinstance(clause, str) or not clause.strip():
        raise SpecError("clause", "the MATCH_RECOGNIZE clause (the text between its parentheses) is required",
                        where=_WHERE)
    if not output:
        raise SpecError("output", "an output path is required", where=_WHERE)
    slices_plan, wanted = host.plan_slices(start, end, slices, only, _WHERE)
    spec = inline_subqueries(df.sparkSession, clause)  # subqueries run once, for every slice
    df = with_row_functions(df, spec)  # Spark computes the per-row function calls as hidden columns
    bound = plan(spec, df.schema)
    host.check_reserved(df, _WHERE)
    time_column, time_type = _event_time(bound)
    time_bounds(time_type, slices_plan[0].start, slices_plan[-1].end, time_column)  # the type check, before any job
    timezone = df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    registration = host.KeyedBackfill(
        name="match_recognize", where=_WHERE, keys=bound.partition_columns,
        key_order=[_sort_column(c, False, False) for c in bound.partition_columns],
        order=[_sort_column(*o) for o in bound.order_columns], time=time_column,
        bounds=partial(time_bounds, time_type, column=time_column), output=bound.schema,
        runner=partial(_runner, bound.spec.text, bound.input_schema.json(), bound.schema.json(), timezone, budget),
        untimed=partial(rejected_rows, bound=bound),  # the DataFrame door's dead letter: shape and reason
    )
    return host.run_keyed(df, registration, slices_plan, wanted, output, dead_letter or f"{output}_dead_letter",
                          on_slice)


def _runner(clause: str, input_json: str, output_json: str, timezone: str, budget: MatchBudget | None, last: bool,
            counters: tuple[Any, ...], carried_from: str | None) -> _SliceRunner:
    return _SliceRunner(clause, input_json, output_json, timezone, last, counters, carried_from, budget)


__all__ = ["STATE", "backfill_match_recognize", "freeze", "slice_label", "thaw", "time_bounds"]
