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

Idle-state retention (:class:`~runtime.core.spec.StateRetention`) runs on event-time timers: every
element pushes the key's cleanup time to ``watermark + max_idle`` unless it is already beyond
``watermark + min_idle``; when the watermark reaches it the key's state is dropped after its
buffered rows are emitted, so no row is lost.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from runtime.core.errors import SpecError
from runtime.core.spec import StateRetention, TemporalJoinSpec
from runtime.core.state import NO_WATERMARK, KeyContext
from runtime.core.versioned import Match, VersionEvent, VersionHistory

# State names, declared once (Flink declares its state handles in open()).
LEFT = "left"  # list[LeftRow]: probe rows waiting for the watermark, in arrival order
RIGHT = "right"  # VersionHistory: the key's versions newer than the watermark plus the one in force
NEXT_TIMER = "next-timer"  # int: the single registered emission timer (smallest buffered left time)
CLEANUP = "cleanup-timestamp"  # int: the idle-state cleanup timer, when retention is on


@dataclass(frozen=True, slots=True)
class LeftRow:
    """A probe-side row: event time (µs), arrival sequence, and the adapter's payload."""

    time: int
    seq: int
    payload: Any = None


@dataclass(frozen=True, slots=True)
class Joined:
    """A left row with the version valid at its time (None: no version)."""

    left: LeftRow
    match: Match | None


@dataclass(frozen=True, slots=True)
class Late:
    """A left row that arrived with its time below the watermark."""

    left: LeftRow
    watermark: int

    @property
    def reason(self) -> str:
        return f"late: event time {self.left.time} < watermark {self.watermark} (µs since epoch)"


Output = Joined | Late


class EventTimeTemporalJoin:
    """Event-time temporal join of one key; see the module docstring for the rules.

    >>> from runtime.core.spec import TemporalJoinSpec, VersionedTableSpec
    >>> from runtime.core.state import InMemoryKeyContext
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

    # -- element handlers: buffer, register the smallest timer ------------------------------------
    def process_left(self, ctx: KeyContext, row: LeftRow) -> Iterator[Output]:
        if ctx.watermark != NO_WATERMARK and row.time < ctx.watermark:
            yield Late(row, ctx.watermark)
            return
        pending: list[LeftRow] = ctx.get(LEFT) or []
        pending.append(row)
        ctx.put(LEFT, pending)
        self._register_smallest_timer(ctx, row.time)
        self._touch(ctx)

    def process_left_rows(self, ctx: KeyContext, rows: list[LeftRow]) -> list[Output]:
        """:meth:`process_left` for several rows of the key, in arrival order: the same outputs and the
        same state, with one state update (adapters feeding micro-batches call this; per row, the
        buffering costs more than the rule).

        >>> from runtime.core.spec import TemporalJoinSpec, VersionedTableSpec
        >>> from runtime.core.state import InMemoryKeyContext
        >>> op = EventTimeTemporalJoin(TemporalJoinSpec(VersionedTableSpec("k", "t"), left_time="t"))
        >>> ctx = InMemoryKeyContext(current_watermark=10)
        >>> [o.left.payload for o in op.process_left_rows(ctx, [LeftRow(12, 0, "a"), LeftRow(5, 1, "late")])]
        ['late']
        >>> [r.payload for r in ctx.get(LEFT)], ctx.timers()
        (['a'], [12])
        """
        watermark = ctx.watermark
        late: list[Output] = []
        on_time = rows
        if watermark != NO_WATERMARK and any(r.time < watermark for r in rows):
            late = [Late(r, watermark) for r in rows if r.time < watermark]
            on_time = [r for r in rows if r.time >= watermark]
        if on_time:
            pending: list[LeftRow] = ctx.get(LEFT) or []
            pending.extend(on_time)
            ctx.put(LEFT, pending)
            # Row by row the timer would step down to each smaller time; only the smallest remains.
            self._register_smallest_timer(ctx, min(r.time for r in on_time))
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
        watermark = ctx.watermark
        pending: list[LeftRow] = ctx.get(LEFT) or []
        history: VersionHistory = ctx.get(RIGHT) or VersionHistory()
        ready = sorted((r for r in pending if r.time <= watermark), key=lambda r: (r.time, r.seq))
        waiting = [r for r in pending if r.time > watermark]
        # (versions_at: one walk over the history for the time-ordered rows, equal to version_at per row)
        yield from map(Joined, ready, history.versions_at([r.time for r in ready]))
        if ready:
            if waiting:
                ctx.put(LEFT, waiting)
            else:
                ctx.clear(LEFT)
        if len(history) and history.expire_before(watermark):
            ctx.put(RIGHT, history)
        timer = ctx.get(NEXT_TIMER)
        if timer is not None and timer <= watermark:
            ctx.delete_timer(timer)
            ctx.clear(NEXT_TIMER)
            if waiting:
                self._register_smallest_timer(ctx, min(r.time for r in waiting))
        cleanup = ctx.get(CLEANUP)
        if cleanup is not None and cleanup <= watermark:
            self._cleanup(ctx)

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
        if self.retention is None or ctx.watermark == NO_WATERMARK:
            return
        now = ctx.watermark
        current = ctx.get(CLEANUP)
        if current is None or now + self.retention.min_idle > current:
            if current is not None and current != ctx.get(NEXT_TIMER):  # the emission timer may share it
                ctx.delete_timer(current)
            cleanup = now + self.retention.max_idle
            ctx.register_timer(cleanup)
            ctx.put(CLEANUP, cleanup)

    def _cleanup(self, ctx: KeyContext) -> None:
        # Buffered rows newer than the watermark mean the key is not idle: keep them and their timer.
        if ctx.get(LEFT):
            ctx.clear(CLEANUP)
            return
        for name in (RIGHT, CLEANUP, NEXT_TIMER):
            ctx.clear(name)
        for timer in ctx.timers():
            ctx.delete_timer(timer)


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
