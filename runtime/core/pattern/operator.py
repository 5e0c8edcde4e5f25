"""Keyed streaming MATCH_RECOGNIZE over event time (Flink's ``CepOperator`` contract, one key = one partition).

* Element handlers only buffer: a row waits in state until the watermark reaches its time, because
  an earlier row may still arrive and the pattern must see rows in ORDER BY order.  A row whose
  time is at or below the watermark when it arrives is *late* (Flink's CEP rule: "timestamp smaller
  than or equal to the last seen watermark"); it is reported, never matched.
* :meth:`on_watermark` releases the buffered rows with ``time <= watermark`` in (time, remaining
  ORDER BY columns, arrival) order into the key's :class:`~timeweave.core.pattern.partition.PartitionMatcher`
  and emits every output row that is now decided.  One event-time timer per key: the smallest
  buffered time, plus the WITHIN deadline of the attempt in progress.
* WITHIN pruning: once the watermark is ``within`` past the first row of the attempt in progress,
  no later row can join it, so the attempt is concluded at once and its rows released (this is
  what bounds state for patterns such as ``A B+ C`` with a never-satisfied ``C``).
* :meth:`finish` is the end of input (a bounded source, or the final watermark): the buffered rows
  are matched and the partition is closed, so ``$`` can match and greedy attempts settle exactly
  as in batch.  Then a stream with no late rows gives the same rows as
  :func:`~timeweave.core.pattern.partition.match_recognize` (the cross-door invariant).

All state is plain data (:mod:`timeweave.core.state_codec` stores it): rows as given (dicts), counters, and the
matcher's threads.  The matcher is
held in state without its clause (:class:`HeldMatcher`): the operator re-attaches its own, so a state
written per key and micro-batch does not carry the clause's object tree each time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from numbers import Integral
from typing import Any, ClassVar

from timeweave.core.errors import SpecError, StateFormatError
from timeweave.core.operator import StateLayout, Tag, ValueState
from timeweave.core.pattern.budget import MatchBudget
from timeweave.core.pattern.partition import PartitionMatcher, elapsed, sort_key
from timeweave.core.pattern.spec import ClauseSpec
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, KeyContext
from timeweave.core.state_data import expect

# State names, declared once.
BUFFER = "mr-buffer"  # list[tuple[int, int, dict]]: (event time µs, arrival seq, row) waiting for the watermark
MATCHER = "mr-matcher"  # HeldMatcher: rows released to matching, the attempt in progress, match number
SEQUENCE = "mr-seq"  # int: next arrival sequence number (ties between equal times keep arrival order)
TIMER = "mr-timer"  # int: the one registered event-time timer

#: MATCH_RECOGNIZE's per-key state (layout 2: one cell per key in a bucket's map; layout 1, one Spark
#: ValueState per key, is not resumed).
LAYOUT = StateLayout(2, (
    ValueState(BUFFER, "list[(time, seq, row)]: rows waiting for the watermark"),
    ValueState(MATCHER, "HeldMatcher: released rows, the attempt in progress, the match number"),
    ValueState(SEQUENCE, "int: the next arrival number"),
    ValueState(TIMER, "int: the one registered event-time timer"),
))

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def micros(value: Any) -> int:
    """Event time in microseconds since the epoch: datetimes (naive = UTC) or integers (already µs).

    >>> micros(datetime(1970, 1, 1, 0, 0, 1)), micros(5)
    (1000000, 5)
    """
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        delta = aware - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, Integral) and not isinstance(value, bool):
        return int(value)
    raise SpecError("order_by", f"the first ORDER BY column must be a timestamp or integer microseconds, got {value!r}")


@dataclass(frozen=True, slots=True)
class Matched:
    """An output row of the clause (ONE ROW or ALL ROWS PER MATCH shape)."""

    row: dict[str, Any]

    tag: ClassVar[Tag] = Tag.MAIN


@dataclass(frozen=True, slots=True)
class LateRow:
    """An input row that arrived with its time at or below the watermark; it took no part in matching."""

    time: int
    row: Mapping[str, Any]
    watermark: int

    tag: ClassVar[Tag] = Tag.LATE

    @property
    def reason(self) -> str:
        return f"late: event time {self.time} <= watermark {self.watermark} (µs since epoch)"


@dataclass(frozen=True, slots=True)
class BudgetRejected:
    """An input row of a key whose matching ran out of its :class:`~timeweave.core.pattern.budget.MatchBudget`.

    From then on the key is poisoned: every later row of it is rejected too (when the watermark releases
    it), so one pathological key cannot stall the query.  ``reason`` names the pattern and the row.
    """

    row: Mapping[str, Any]
    reason: str

    tag: ClassVar[Tag] = Tag.DEAD_LETTER


Output = Matched | LateRow | BudgetRejected


class MatchRecognizeOperator:
    """MATCH_RECOGNIZE for one key (the PARTITION BY values) of an event-time stream.

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> from timeweave.core.state import InMemoryKeyContext
    >>> op = MatchRecognizeOperator(parse_clause(
    ...     "ORDER BY t MEASURES FIRST(A.t) AS s, LAST(B.t) AS e PATTERN (A B+) DEFINE B AS B.v > PREV(B.v)"))
    >>> ctx = InMemoryKeyContext()
    >>> for t, v in [(1, 5), (3, 7), (2, 6), (4, 1)]:
    ...     _ = list(op.process_element(ctx, {"t": t, "v": v}))
    >>> ctx.current_watermark = 4
    >>> [o.row for o in op.on_watermark(ctx)]
    [{'s': 1, 'e': 3}]
    """

    def __init__(
        self,
        spec: ClauseSpec,
        *,
        time_of: Callable[[Mapping[str, Any]], int] | None = None,
        rows_of: Callable[[list[Any]], list[Mapping[str, Any]]] | None = None,
        budget: MatchBudget | None = None,
    ) -> None:
        """``time_of`` reads a row's event time (µs); default: the first ORDER BY column's value.

        ``rows_of`` turns rows as handed to :meth:`process_elements` into the rows the matcher reads,
        all rows the watermark releases in one call (default: the rows as handed).  It lets an adapter
        buffer a compact form of its input (cheaper to keep in state) and decode each row once, on
        release; ``time_of`` must then read both forms (late rows are reported in the handed form).

        >>> from timeweave.core.pattern.parser import parse_clause
        >>> from timeweave.core.state import InMemoryKeyContext
        >>> op = MatchRecognizeOperator(parse_clause("ORDER BY t MEASURES A.v AS v PATTERN (A) DEFINE A AS A.v > 1"),
        ...     time_of=lambda r: r["t"], rows_of=lambda rows: [{"t": r["t"], "v": int(r["text"])} for r in rows])
        >>> ctx = InMemoryKeyContext()
        >>> op.process_elements(ctx, [{"t": 1, "text": "5"}, {"t": 2, "text": "1"}])
        []
        >>> ctx.current_watermark = 2
        >>> [o.row for o in op.on_watermark(ctx)]
        [{'v': 5}]
        """
        if not spec.order_by:
            raise SpecError("order_by", "streaming MATCH_RECOGNIZE needs ORDER BY <event time column> first")
        if spec.order_by[0].descending:
            raise SpecError("order_by", "the event time must be ordered ascending (Flink's rule too)")
        self.spec = spec
        column = spec.order_by[0].column
        self.time_of = time_of or (lambda row: micros(row[column]))
        self.rows_of = rows_of
        self.budget = budget  # None: the default MatchBudget
        self._tie_key = sort_key(spec)

    layout = LAYOUT

    # -- element handler: buffer or report late ----------------------------------------------------------
    def process_element(self, ctx: KeyContext, row: Mapping[str, Any]) -> Iterator[Output]:
        """Buffer ``row`` until the watermark passes it, or report it late (one rule: :meth:`process_elements`)."""
        yield from self.process_elements(ctx, (row,))

    def process_elements(self, ctx: KeyContext, rows: Iterable[Mapping[str, Any]]) -> list[LateRow]:
        """:meth:`process_element` for each of ``rows`` in arrival order, with one state update for all.

        Same late rows, buffer, arrival numbers and timer as row by row (the handlers only buffer), so
        an adapter can hand over everything a key received in a micro-batch at once.

        >>> from timeweave.core.pattern.parser import parse_clause
        >>> from timeweave.core.state import InMemoryKeyContext
        >>> op = MatchRecognizeOperator(parse_clause("ORDER BY t PATTERN (A) DEFINE A AS A.v > 0"))
        >>> ctx = InMemoryKeyContext(); ctx.current_watermark = 2
        >>> [late.time for late in op.process_elements(ctx, [{"t": 3, "v": 1}, {"t": 2, "v": 1}, {"t": 5, "v": 0}])]
        [2]
        >>> [(time, seq) for time, seq, _ in ctx.get(BUFFER)], ctx.timers()
        ([(3, 0), (5, 1)], [3])
        """
        watermark = ctx.watermark
        has_watermark = watermark != NO_WATERMARK
        time_of = self.time_of
        late: list[LateRow] = []
        buffered: list[tuple[int, int, Mapping[str, Any]]] | None = None
        sequence = smallest = 0
        for row in rows:
            time = time_of(row)
            if has_watermark and time <= watermark:
                late.append(LateRow(time, row, watermark))
                continue
            if buffered is None:
                buffered = ctx.get(BUFFER) or []
                sequence = ctx.get(SEQUENCE) or 0
                smallest = time
            elif time < smallest:
                smallest = time
            buffered.append((time, sequence, row))
            sequence += 1
        if buffered is None:
            return late
        ctx.put(SEQUENCE, sequence)
        ctx.put(BUFFER, buffered)
        current: int | None = ctx.get(TIMER)
        if current is None or smallest < current:
            if current is not None:
                ctx.delete_timer(current)
            ctx.register_timer(smallest)
            ctx.put(TIMER, smallest)
        return late

    # -- the watermark produces output -------------------------------------------------------------------
    def on_watermark(self, ctx: KeyContext) -> Iterator[Output]:
        """Match every buffered row the watermark has passed; conclude attempts WITHIN rules out."""
        watermark = ctx.watermark
        if watermark >= END_OF_TIME:
            yield from self.finish(ctx)
            return
        matcher = self._matcher(ctx)
        ready = self._release(ctx, watermark)
        if ready:  # one drive of the matcher for all released rows (same output as row by row)
            yield from map(Matched, matcher.push_many(ready))
            yield from _rejected(matcher)
        if self.spec.within is not None:
            yield from map(Matched, self._prune_within(matcher, watermark))
        ctx.put(MATCHER, HeldMatcher(matcher))
        self._schedule(ctx, matcher)

    def finish(self, ctx: KeyContext) -> Iterator[Output]:
        """End of input: match everything buffered and close the partition."""
        matcher = self._matcher(ctx)
        ready = self._release(ctx, None)
        if ready:
            yield from map(Matched, matcher.push_many(ready))
        yield from map(Matched, matcher.finish())
        yield from _rejected(matcher)
        self.layout.clear(ctx)

    # -- helpers -------------------------------------------------------------------------------------------
    def _matcher(self, ctx: KeyContext) -> PartitionMatcher:
        held: HeldMatcher | PartitionMatcher | None = ctx.get(MATCHER)
        if held is None:
            return PartitionMatcher(self.spec, budget=self.budget, dead_letter=True)
        if isinstance(held, PartitionMatcher):  # a state written before HeldMatcher
            return held
        return held.get(self.spec, budget=self.budget, dead_letter=True)

    def _release(self, ctx: KeyContext, watermark: int | None) -> list[Mapping[str, Any]]:
        buffered: list[tuple[int, int, Mapping[str, Any]]] = ctx.get(BUFFER) or []
        ready = [b for b in buffered if watermark is None or b[0] <= watermark]
        if not ready:
            return []
        waiting = [b for b in buffered if watermark is not None and b[0] > watermark]
        if waiting:
            ctx.put(BUFFER, waiting)
        else:
            ctx.clear(BUFFER)
        rows_of = self.rows_of
        if len(self.spec.order_by) == 1:
            ready.sort(key=_time_and_arrival)  # the time is the whole ORDER BY: no per-row key to build
            rows = [b[2] for b in ready]
            return rows if rows_of is None else rows_of(rows)
        if rows_of is not None:  # the tie-breaking ORDER BY columns are read from the matcher's rows
            ready = [(b[0], b[1], row) for b, row in zip(ready, rows_of([b[2] for b in ready]), strict=True)]
        ready.sort(key=lambda b: (b[0], self._tie_key(b[2]), b[1]))
        return [b[2] for b in ready]

    def _prune_within(self, matcher: PartitionMatcher, watermark: int) -> list[dict[str, Any]]:
        """Conclude attempts that no row still to come can join (their WITHIN deadline has passed).

        Not with a lookahead (NEXT in DEFINE, ``$``): the attempt's last rows may still need to read
        a future row, so such attempts end when a row past the deadline arrives, as in batch.
        """
        out: list[dict[str, Any]] = []
        assert self.spec.within is not None
        while matcher.run is not None and not matcher.clause.lookahead:
            start_row = matcher.rows.get(matcher.run.start)
            assert start_row is not None
            # a future row has time > watermark; it could join only if it were less than `within` after the start
            if elapsed(watermark, self.time_of(start_row)) < self.spec.within:
                break
            out.extend(matcher.close_attempt())
        return out

    def _schedule(self, ctx: KeyContext, matcher: PartitionMatcher) -> None:
        """Keep one timer: the smallest buffered time, or the WITHIN deadline of the attempt in progress."""
        candidates = [b[0] for b in ctx.get(BUFFER) or []]
        if self.spec.within is not None and matcher.run is not None:
            start_row = matcher.rows.get(matcher.run.start)
            if start_row is not None:
                candidates.append(self.time_of(start_row) + self.spec.within // _MICROSECOND)
        wanted = min(candidates) if candidates else None
        current = ctx.get(TIMER)
        if current == wanted:
            return
        if current is not None:
            ctx.delete_timer(current)
            ctx.clear(TIMER)
        if wanted is not None:
            ctx.register_timer(wanted)
            ctx.put(TIMER, wanted)


class HeldMatcher:
    """A key's :class:`PartitionMatcher` as the operator keeps it in state.

    Stored (:mod:`timeweave.core.state_codec`) as the matcher's plain-data state without its :class:`ClauseSpec`
    (an object tree that cost more to store and read back than the rest of a key's state); :meth:`get`
    re-attaches the operator's spec.

    >>> from timeweave.core.state_codec import decode, encode
    >>> from timeweave.core.pattern.parser import parse_clause
    >>> spec = parse_clause("MEASURES COUNT(*) AS n PATTERN (A B) DEFINE B AS B.x > A.x")
    >>> matcher = PartitionMatcher(spec); _ = matcher.push({"x": 1})
    >>> restored = decode(encode(HeldMatcher(matcher))).get(spec)
    >>> restored.push({"x": 2})
    [{'n': 2}]
    """

    __slots__ = ("matcher", "state")

    def __init__(self, matcher: PartitionMatcher | None = None, state: dict[str, Any] | None = None) -> None:
        self.matcher = matcher
        self.state = state

    def __reduce__(self) -> tuple[Any, ...]:
        return HeldMatcher, (None, self.to_state())

    def to_state(self) -> dict[str, Any]:
        """The matcher as plain data, without its clause (:meth:`PartitionMatcher.to_state`)."""
        if self.matcher is None:
            assert self.state is not None
            return self.state
        return self.matcher.to_state()

    @classmethod
    def from_state(cls, data: Any) -> HeldMatcher:
        """A held matcher over the data :meth:`to_state` gave; :meth:`get` rebuilds the matcher with the clause.

        The structure is checked here already (the rows, counters and attempt are checked by the rebuild).
        """
        expect(isinstance(data, dict) and _MATCHER_FIELDS <= data.keys(), "matcher state: missing fields")
        return cls(None, data)

    def get(self, spec: ClauseSpec, *, budget: MatchBudget | None = None, dead_letter: bool = False
            ) -> PartitionMatcher:
        """The matcher, rebuilt with ``spec`` (the clause it was created with) after decoding or unpickling."""
        if self.matcher is None:
            assert self.state is not None
            try:
                matcher = PartitionMatcher.from_state(self.state, spec, budget=budget, dead_letter=dead_letter)
            except StateFormatError:
                raise
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                # Checked fields of the wrong shape for this clause (another clause's state, a crafted one).
                raise StateFormatError(f"malformed state: the matcher does not fit the clause ({exc!r:.200})") from exc
            self.matcher, self.state = matcher, None
        return self.matcher


_MATCHER_FIELDS = frozenset(("rows", "base", "length", "next_start", "use_fast", "run", "match_number",
                             "last_matched", "ended", "time_column", "checked_columns"))


def _rejected(matcher: PartitionMatcher) -> Iterator[BudgetRejected]:
    rows = matcher.take_rejected()
    if rows:
        assert matcher.exceeded is not None
        reason = matcher.exceeded.reason
        yield from (BudgetRejected(row, reason) for row in rows)


def _time_and_arrival(buffered: tuple[int, int, Mapping[str, Any]]) -> tuple[int, int]:
    return buffered[0], buffered[1]
