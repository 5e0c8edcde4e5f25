"""Keyed temporal-join operators: event time (``FOR SYSTEM_TIME AS OF left.rowtime``) and processing time.

:class:`EventTimeTemporalJoin` follows Flink's ``TemporalRowTimeJoinOperator``:

* the probe side (left) is a regular stream; the build side (right) is a versioned table;
* element handlers only buffer: a left row waits in state until the watermark (the minimum of both
  inputs' watermarks, supplied by the adapter) reaches its time, because until then a version at or
  before its time may still arrive;
* :meth:`on_watermark` emits every buffered left row with ``time <= watermark`` in time order
  (ties: arrival order), each paired with the version valid at its time (or None), then drops
  versions older than the watermark except the newest of them, which is still in force;
* one event-time timer per key: the smallest buffered left time (Flink's ``registerSmallestTimer``).
  Example: left times {1, 2, 5, 8, 9} buffered, Watermark(6) emits 1, 2, 5 and re-registers 8;
* a left row whose time is below the watermark when it arrives is *late*: the result it would have
  had may already be cleaned away, so it goes to the late output with the reason (Flink keeps
  such rows silently; timeweave reports them);
* the operator matches only: the join type, the extra predicate and the projection are applied
  after it, by the same finalize step the batch plan uses, so streaming and batch cannot disagree.

Idle-state retention (:class:`~timeweave.core.spec.StateRetention`) runs on event-time timers: every
element pushes the key's cleanup time to ``watermark + max_idle`` unless it is already beyond
``watermark + min_idle``; when the watermark reaches it the key's state is dropped after its
buffered rows are emitted, so no row is lost.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from operator import le, lt
from typing import Any, ClassVar

from timeweave.core.errors import SpecError
from timeweave.core.operator import StateLayout, Tag, ValueState
from timeweave.core.retention import CLEANUP, IdleRetention
from timeweave.core.spec import StateRetention, TemporalJoinSpec
from timeweave.core.state import NO_WATERMARK, KeyContext
from timeweave.core.state_data import expect, from_int64s, int64s
from timeweave.core.versioned import Match, VersionEvent, VersionHistory

# State names, declared once (Flink declares its state handles in open()); the layout below types them.
LEFT = "left"  # LeftBuffer: probe rows waiting for the watermark, column-wise, in (time, seq) order
RIGHT = "right"  # VersionHistory: the key's versions newer than the watermark plus the one in force
NEXT_TIMER = "next-timer"  # int: the single registered emission timer (smallest buffered left time)

#: The event-time temporal join's per-key state (layout 2: one cell per key in a bucket's map; layout 1, one
#: Spark ValueState per key, is not resumed).  The cleanup time is :mod:`timeweave.core.retention`'s.
LAYOUT = StateLayout(2, (
    ValueState(LEFT, "LeftBuffer: probe rows waiting for the watermark, in (time, seq) order"),
    ValueState(RIGHT, "VersionHistory: versions newer than the watermark plus the one in force"),
    ValueState(NEXT_TIMER, "int: the one emission timer (the smallest buffered left time)"),
    ValueState(CLEANUP, "int: the idle-state cleanup time, when retention is on"),
))
#: The processing-time join's per-key state: the key's latest version.
PROCESSING_TIME_LAYOUT = StateLayout(1, (ValueState(RIGHT, "VersionEvent: the key's latest version"),))


@dataclass(frozen=True, slots=True)
class LeftRow:
    """A probe-side row: event time (µs), arrival sequence, and the adapter's payload."""

    time: int
    seq: int
    payload: Any = None


@dataclass(slots=True)
class LeftBuffer:
    """A key's probe rows waiting for the watermark: parallel lists, kept sorted by (time, seq).

    Column-wise because a key may hold thousands of rows and the buffer is written to state and
    read back every micro-batch (:meth:`to_state`): lists of ints and strings encode in C, a list of objects costs a
    Python call per row each way.  Sorted by (time, seq), rows with equal (time, seq) in arrival
    order, because emission takes the rows at or below the watermark in that order: a prefix.

    >>> b = LeftBuffer()
    >>> b.add([5, 2], [0, 1], ["x", "y"]); b.add([9, 2], [2, 3], ["z", "w"])
    >>> b.times, b.payloads, b.ready(5)
    ([2, 2, 5, 9], ['y', 'w', 'x', 'z'], 3)
    """

    times: list[int] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    payloads: list[Any] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.times)

    def __reduce__(self) -> tuple:
        # Three lists, pickled in C (the dataclass default would call dataclasses.fields() per object).
        return (LeftBuffer, (self.times, self.seqs, self.payloads))

    def to_state(self) -> list[list[Any]]:
        """The buffer as plain data for :mod:`timeweave.core.state_codec`: its three columns.

        >>> b = LeftBuffer([1, 2], [0, 1], ["x", "y"]); LeftBuffer.from_state(b.to_state()) == b
        True
        """
        return [int64s(self.times), int64s(self.seqs), self.payloads]

    @classmethod
    def from_state(cls, data: Any) -> LeftBuffer:
        """The buffer :meth:`to_state` gave (checked: three columns of one length, 64-bit times and sequences)."""
        expect(isinstance(data, list) and len(data) == 3 and isinstance(data[2], list), "left buffer: expected three columns")
        times, seqs = from_int64s(data[0], "left buffer times"), from_int64s(data[1], "left buffer sequences")
        expect(len(times) == len(seqs) == len(data[2]), "left buffer: columns of unequal length")
        return cls(times, seqs, data[2])

    @classmethod
    def of(cls, value: LeftBuffer | list[LeftRow] | None) -> LeftBuffer:
        """The buffer in the ``left`` state ``value``: a :class:`LeftBuffer`, nothing, or the ``list[LeftRow]``
        in arrival order that earlier versions kept (checkpoints written by them resume).

        >>> LeftBuffer.of([LeftRow(7, 0, "a"), LeftRow(3, 1, "b")]).payloads
        ['b', 'a']
        """
        if value is None:
            return cls()
        if isinstance(value, LeftBuffer):
            return value
        buffer = cls()
        buffer.add([r.time for r in value], [r.seq for r in value], [r.payload for r in value])
        return buffer

    def add(self, times: Sequence[int], seqs: Sequence[int], payloads: Sequence[Any]) -> None:
        """Add rows in arrival order (parallel sequences), keeping the buffer sorted by (time, seq)."""
        if not times:
            return
        if _ascending(times, seqs) and (
            not self.times or (self.times[-1], self.seqs[-1]) <= (times[0], seqs[0])
        ):
            # The usual case: a key's rows arrive in time order, later than what waits.
            self.times.extend(times)
            self.seqs.extend(seqs)
            self.payloads.extend(payloads)
            return
        all_times = [*self.times, *times]
        all_seqs = [*self.seqs, *seqs]
        all_payloads = [*self.payloads, *payloads]
        keys = list(zip(all_times, all_seqs, strict=True))
        order = sorted(range(len(keys)), key=keys.__getitem__)  # stable: equal (time, seq) keep arrival order
        self.times = [all_times[i] for i in order]
        self.seqs = [all_seqs[i] for i in order]
        self.payloads = [all_payloads[i] for i in order]

    def ready(self, watermark: int) -> int:
        """How many rows (a prefix) have ``time <= watermark``."""
        return bisect_right(self.times, watermark)

    def take(self, count: int) -> tuple[list[int], list[int], list[Any]]:
        """Remove the first ``count`` rows; their times, sequences and payloads."""
        taken = self.times[:count], self.seqs[:count], self.payloads[:count]
        del self.times[:count], self.seqs[:count], self.payloads[:count]
        return taken

    def rows(self) -> list[LeftRow]:
        """The rows as :class:`LeftRow` objects, in buffer order."""
        return list(map(LeftRow, self.times, self.seqs, self.payloads))


def _ascending(times: Sequence[int], seqs: Sequence[int]) -> bool:
    """Whether (time, seq) pairs are non-decreasing: strictly increasing times are checked first, in C."""
    if all(map(lt, times, islice(times, 1, None))):
        return True
    keys = list(zip(times, seqs, strict=True))
    return all(map(le, keys, islice(keys, 1, None)))


@dataclass(frozen=True, slots=True)
class Joined:
    """A left row with the version valid at its time (None: no version)."""

    left: LeftRow
    match: Match | None

    tag: ClassVar[Tag] = Tag.MAIN


@dataclass(frozen=True, slots=True)
class Late:
    """A left row that arrived with its time below the watermark."""

    left: LeftRow
    watermark: int

    tag: ClassVar[Tag] = Tag.LATE

    @property
    def reason(self) -> str:
        return f"late: event time {self.left.time} < watermark {self.watermark} (µs since epoch)"


Output = Joined | Late


@dataclass(frozen=True, slots=True)
class JoinedRows:
    """Joined rows column-wise (:meth:`EventTimeTemporalJoin.release`): the left rows' times, sequences and
    payloads in emission order, and the versions as runs (how many consecutive rows, the version valid at
    their times, as :meth:`VersionHistory.version_runs` gives them).

    >>> rows = JoinedRows([1, 2], [0, 1], ["a", "b"], [(2, None)])
    >>> rows.outputs() == [Joined(LeftRow(1, 0, "a"), None), Joined(LeftRow(2, 1, "b"), None)]
    True
    """

    times: list[int]
    seqs: list[int]
    payloads: list[Any]
    runs: list[tuple[int, Match | None]]

    tag: ClassVar[Tag] = Tag.MAIN

    def __len__(self) -> int:
        return len(self.times)

    def matches(self) -> list[Match | None]:
        """The version of each row."""
        out: list[Match | None] = []
        for count, match in self.runs:
            out += [match] * count
        return out

    def outputs(self) -> list[Joined]:
        """The rows as :class:`Joined` outputs (one object per row: what :meth:`on_watermark` yields)."""
        return list(map(Joined, map(LeftRow, self.times, self.seqs, self.payloads), self.matches()))


class EventTimeTemporalJoin:
    """Event-time temporal join of one key; see the module docstring for the rules.

    >>> from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
    >>> from timeweave.core.state import InMemoryKeyContext
    >>> op = EventTimeTemporalJoin(TemporalJoinSpec(VersionedTableSpec("k", "t"), left_time="t"))
    >>> ctx = InMemoryKeyContext()
    >>> list(op.process_right(ctx, VersionEvent(10, 0, False, "v1")))
    []
    >>> list(op.process_left(ctx, LeftRow(15, 0, "o1")))
    []
    >>> ctx.current_watermark = 20
    >>> [(o.left.payload, o.match.event.payload) for o in op.on_watermark(ctx)]
    [('o1', 'v1')]
    """

    def __init__(self, spec: TemporalJoinSpec, retention: StateRetention | None = None) -> None:
        if spec.validity is not None and spec.validity.valid_to is not None:
            raise SpecError(
                "validity",
                "valid_to is unknown when a streaming row is emitted (a later version may still arrive); "
                "use ValidityColumns(valid_to=None) in streaming jobs",
                where=spec.where,
            )
        self.spec = spec
        self.retention = retention
        self._idle = None if retention is None else IdleRetention(retention, CLEANUP, (NEXT_TIMER,))

    layout = LAYOUT

    # -- element handlers: buffer, register the smallest timer ------------------------------------
    def process_elements(self, ctx: KeyContext, elements: Iterable[LeftRow | VersionEvent]) -> list[Output]:
        """The contract's element handler (:mod:`timeweave.core.operator`): a key's left rows and versions of
        one step, in arrival order.  The handlers only buffer and the two sides touch separate state, so the
        versions apply first and the left rows in one call: the same outputs and state as element by element.
        """
        elements = list(elements)
        for element in elements:
            if element.__class__ is VersionEvent:
                self.process_right(ctx, element)
        left = [e for e in elements if e.__class__ is not VersionEvent]
        return self.process_left_rows(ctx, left) if left else []

    def process_left(self, ctx: KeyContext, row: LeftRow) -> Iterator[Output]:
        return iter(self.process_left_columns(ctx, [row.time], [row.seq], [row.payload]))

    def process_left_rows(self, ctx: KeyContext, rows: list[LeftRow]) -> list[Output]:
        """:meth:`process_left` for several rows of the key, in arrival order: the same outputs and the
        same state, with one state update (adapters feeding micro-batches call this; per row, the
        buffering costs more than the rule).

        >>> from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
        >>> from timeweave.core.state import InMemoryKeyContext
        >>> op = EventTimeTemporalJoin(TemporalJoinSpec(VersionedTableSpec("k", "t"), left_time="t"))
        >>> ctx = InMemoryKeyContext(current_watermark=10)
        >>> [o.left.payload for o in op.process_left_rows(ctx, [LeftRow(12, 0, "a"), LeftRow(5, 1, "late")])]
        ['late']
        >>> ctx.get(LEFT).payloads, ctx.timers()
        (['a'], [12])
        """
        return self.process_left_columns(
            ctx, [r.time for r in rows], [r.seq for r in rows], [r.payload for r in rows]
        )

    def process_left_columns(
        self, ctx: KeyContext, times: Sequence[int], seqs: Sequence[int], payloads: Sequence[Any]
    ) -> list[Output]:
        """:meth:`process_left_rows` over parallel sequences (time, seq, payload of each row, in arrival
        order): no object per row.  Returns the late rows' outputs.

        >>> from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
        >>> from timeweave.core.state import InMemoryKeyContext
        >>> op = EventTimeTemporalJoin(TemporalJoinSpec(VersionedTableSpec("k", "t"), left_time="t"))
        >>> ctx = InMemoryKeyContext(current_watermark=10)
        >>> [o.reason for o in op.process_left_columns(ctx, [12, 5], [0, 1], ["a", "late"])]
        ['late: event time 5 < watermark 10 (µs since epoch)']
        """
        watermark = ctx.watermark
        late: list[Output] = []
        if not times:
            return late
        if watermark != NO_WATERMARK and min(times) < watermark:
            late = [Late(LeftRow(t, q, p), watermark) for t, q, p in zip(times, seqs, payloads, strict=True)
                    if t < watermark]
            kept = [i for i, t in enumerate(times) if t >= watermark]
            times = [times[i] for i in kept]
            seqs = [seqs[i] for i in kept]
            payloads = [payloads[i] for i in kept]
        if times:
            pending = LeftBuffer.of(ctx.get(LEFT))
            pending.add(times, seqs, payloads)
            ctx.put(LEFT, pending)
            # Row by row the timer would step down to each smaller time; only the smallest remains.
            self._register_smallest_timer(ctx, min(times))
            self._touch(ctx)
        return late

    def process_right(self, ctx: KeyContext, event: VersionEvent) -> Iterator[Output]:
        history: VersionHistory = ctx.get(RIGHT) or VersionHistory()
        history.apply(event)
        ctx.put(RIGHT, history)
        self._touch(ctx)
        return iter(())

    # -- the watermark produces output ------------------------------------------------------------
    def on_watermark(self, ctx: KeyContext) -> Iterator[Output]:
        """Emit buffered rows the watermark has passed, expire versions, then apply retention."""
        released = self.release(ctx)
        if released is not None:
            yield from released.outputs()

    def release(self, ctx: KeyContext) -> JoinedRows | None:
        """:meth:`on_watermark`'s work with its joined rows column-wise (None when no row is emitted): no
        object per row.  The state changes are on_watermark's.

        >>> from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
        >>> from timeweave.core.state import InMemoryKeyContext
        >>> op = EventTimeTemporalJoin(TemporalJoinSpec(VersionedTableSpec("k", "t"), left_time="t"))
        >>> ctx = InMemoryKeyContext()
        >>> _ = op.process_left_columns(ctx, [15, 30], [0, 1], ["o1", "o2"])
        >>> ctx.current_watermark = 20
        >>> op.release(ctx), ctx.timers()
        (JoinedRows(times=[15], seqs=[0], payloads=['o1'], runs=[(1, None)]), [30])
        """
        watermark = ctx.watermark
        value = ctx.get(LEFT)
        pending = LeftBuffer.of(value)
        history: VersionHistory = ctx.get(RIGHT) or VersionHistory()
        count = pending.ready(watermark)
        released = None
        if count:
            times, seqs, payloads = pending.take(count)
            # (version_runs: bisections over the history for the time-ordered rows, equal to version_at per row)
            released = JoinedRows(times, seqs, payloads, history.version_runs(times))
            if pending:
                ctx.put(LEFT, pending)
            else:
                ctx.clear(LEFT)
        elif pending is not value and pending:
            ctx.put(LEFT, pending)  # a state value earlier versions wrote, in today's layout
        if len(history) and history.expire_before(watermark):
            ctx.put(RIGHT, history)
        timer = ctx.get(NEXT_TIMER)
        if timer is not None and timer <= watermark:
            ctx.delete_timer(timer)
            ctx.clear(NEXT_TIMER)
            if pending:
                self._register_smallest_timer(ctx, pending.times[0])  # sorted: the smallest waiting time
        if self._idle is not None and self._idle.due(ctx):
            self._cleanup(ctx)
        return released

    # -- helpers ----------------------------------------------------------------------------------
    def _register_smallest_timer(self, ctx: KeyContext, time: int) -> None:
        current = ctx.get(NEXT_TIMER)
        if current is None or time < current:
            # A key has one timer per time (as in Flink and Spark): keep it when the cleanup shares it.
            if current is not None and current != ctx.get(CLEANUP):
                ctx.delete_timer(current)
            ctx.register_timer(time)
            ctx.put(NEXT_TIMER, time)

    def _touch(self, ctx: KeyContext) -> None:
        """Push the idle cleanup time forward (Flink's registerProcessingCleanupTimer, on event time)."""
        if self._idle is not None:
            self._idle.touch(ctx)

    def _cleanup(self, ctx: KeyContext) -> None:
        # Buffered rows newer than the watermark mean the key is not idle: keep them and their timer.
        assert self._idle is not None
        self._idle.expire(ctx, (RIGHT, NEXT_TIMER), busy=bool(ctx.get(LEFT)))


class ProcessingTimeTemporalJoin:
    """Processing-time temporal join: each left row joins the key's latest version *now*, no waiting.

    Flink only offers this through temporal table functions (FLINK-19830): the result depends on
    arrival timing, a left row never waits for a complete snapshot of the versioned side, and
    re-running the same input can give different rows.  Use it for lookups where "latest known"
    is the intent; it is not part of the cross-door equality guarantee.
    """

    def __init__(self, spec: TemporalJoinSpec) -> None:
        if spec.validity is not None and spec.validity.valid_to is not None:
            raise SpecError("validity", "valid_to is not defined for a processing-time join", where=spec.where)
        self.spec = spec

    layout = PROCESSING_TIME_LAYOUT

    def process_elements(self, ctx: KeyContext, elements: Iterable[LeftRow | VersionEvent]) -> list[Output]:
        """The contract's element handler: each element in arrival order (a left row joins the version now)."""
        out: list[Output] = []
        for element in elements:
            if element.__class__ is VersionEvent:
                out.extend(self.process_right(ctx, element))
            else:
                out.extend(self.process_left(ctx, element))
        return out

    def on_watermark(self, ctx: KeyContext) -> Iterator[Output]:
        """Nothing waits for the watermark in processing time."""
        return iter(())

    def process_right(self, ctx: KeyContext, event: VersionEvent) -> Iterator[Output]:
        latest: VersionEvent | None = ctx.get(RIGHT)
        if latest is None or event.seq >= latest.seq or event.time > latest.time:
            if event.deleted:
                ctx.clear(RIGHT)
            else:
                ctx.put(RIGHT, event)
        return iter(())

    def process_left(self, ctx: KeyContext, row: LeftRow) -> Iterator[Output]:
        latest: VersionEvent | None = ctx.get(RIGHT)
        yield Joined(row, Match(latest, None) if latest is not None else None)
