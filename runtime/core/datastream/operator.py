"""The keyed window operator of Flink's DataStream API (``WindowOperator`` / ``EvictingWindowOperator``).

One instance serves every key; it sees one key at a time through a :class:`~timeweave.core.state.KeyContext`
(the keyed-operator contract, :mod:`timeweave.core.operator`).  It follows Flink's ``WindowOperator`` step by step:

* **An element** is assigned its windows (event time: the row's time; processing time: the host's ``now``).
  With a merging assigner (sessions) each window is added to the key's in-flight windows (Flink's
  ``MergingWindowSet``): windows it intersects merge, and the merge callback runs ``trigger.on_merge`` on the
  result, ``trigger.clear`` and the cleanup-timer deletion on each merged window, then merges their contents
  (window order).  A window that is *late* (``max_timestamp + allowed_lateness <= watermark``, Flink's
  ``isWindowLate``) is skipped (a late merged window is retired).  Otherwise the element is added (reduced,
  aggregated, or kept when the function needs all elements or an evictor is set), ``trigger.on_element``
  decides, a FIRE emits the window's contents and a PURGE drops them, and the window's cleanup timer is
  registered at ``max_timestamp + allowed_lateness`` (event time) or ``max_timestamp`` (processing time).  An
  element skipped by every window and late (``time + allowed_lateness <= watermark``, ``isElementLate``) goes to
  the late output (:class:`LateElement`, with the watermark at its arrival).
* **Timers** (event time: the watermark reached them; processing time: the host's clock did) ask the trigger
  (``on_event_time`` / ``on_processing_time``) about their window; at the window's cleanup time all of its state
  goes (``clearAllState``: contents, ``trigger.clear``, the process function's ``clear``, the merging set's
  entry).  A timer of a merged-away window does nothing.  Event-time and processing-time timers are kept in the
  operator's state; the key context holds one event-time timer, the earliest.  Spark's ``transformWithState``
  cannot mix timer kinds, so processing-time timers fire when the host advances its processing clock (the
  context's ``processing_time``, set per step like ``current_watermark``; :meth:`WindowOperator.next_processing_timer`
  says when a key wants to be woken).  Processing-time timers are handled before event-time ones.
* **Output** (tags of the contract): each firing is one :class:`Firing` (main): the key, the window, the
  function's results, early / on time / late, its sequence number in the window, whether it replaces the
  window's previous firing (it fired and was not purged since), and the fired windows merged into it since its
  last firing; what an updating (retract / upsert) encoder needs.  A user function that raises (trigger,
  window function, evictor, gap function, key selector) does not stop the key: the element goes to the dead
  letter (:class:`DeadLetter`, with the step and the exception text), or, for a firing, a dead letter naming
  the window.  A trigger returning something other than a ``TriggerResult`` is a
  :class:`~timeweave.core.errors.SpecError` (a program error, not a data error).

Differences from Flink, each deliberate: timers at the same instant fire in window order (Flink: heap order);
merged contents are in window order (Flink: its hash set's order); when windows merge, their per-window process
state and leftover trigger state are dropped, and a window's whole entry goes at cleanup (Flink leaves state a
user trigger or function did not clear); a row skipped by every window and not late (a ``Sliding`` gap, size <
slide) is a dead letter (Flink drops it uncounted); allowed lateness on a processing-time or global assigner is
refused (Flink ignores it); a failing function dead-letters the row instead of failing the job (windows the row
entered before the failing step keep it; an ``AggregateFunction.add`` that changed its accumulator in place
before raising leaves that change).

Times are ms, as Flink's; the context's watermark, processing time and timers are the core's µs.

>>> from timeweave.core.datastream.assigners import Tumbling
>>> from timeweave.core.datastream.functions import reduce
>>> from timeweave.core.state import InMemoryKeyContext
>>> op = WindowOperator(Tumbling.of("5 s"), reduce(lambda a, b: {**a, "n": a["n"] + b["n"]}), time_column="t",
...                     key_by="k")
>>> ctx = InMemoryKeyContext()
>>> op.process_elements(ctx, [{"k": "a", "t": 1000, "n": 1}, {"k": "a", "t": 4000, "n": 2}])
[]
>>> ctx.current_watermark = 4_999_000   # µs: the window [0, 5000) ends at 4999 ms
>>> [(f.key, f.window.start, f.window.end, f.values, f.kind.value) for f in op.on_watermark(ctx)]
[('a', 0, 5000, ({'k': 'a', 't': 1000, 'n': 3},), 'on_time')]
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any, ClassVar

from timeweave.core import state_codec
from timeweave.core.datastream.assigners import MAX_TIME, Assigner, Global, Session, Sliding, Tumbling, max_timestamp
from timeweave.core.datastream.evictors import Evictor, EvictorContext, TimestampedValue, checked_elements
from timeweave.core.datastream.functions import ProcessContext, ProcessWindowFunction, WindowFunction
from timeweave.core.datastream.timers import TimerQueue
from timeweave.core.datastream.triggers import (
    CONTINUE,
    NoProcessingTimeError,
    Trigger,
    TriggerContext,
    TriggerResult,
    checked,
    default_trigger,
)
from timeweave.core.errors import SpecError, TimeweaveError
from timeweave.core.operator import StateLayout, Tag, ValueState
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, KeyContext
from timeweave.core.windows.late import format_ms, watermark_ms
from timeweave.core.windows.sessions import add_window
from timeweave.core.windows.spec import Window, duration_ms, event_time_ms

# State names, declared once.
KEY = "ds-key"  # the key (from the first element: firings driven by timers carry it)
WINDOWS = "ds-windows"  # list of window entries (see _Pane.to_state), sorted by window
EVENT_TIMERS = "ds-event-timers"  # [[time ms, window start, window end], ...]
PROCESSING_TIMERS = "ds-processing-timers"  # the same, processing time
GLOBAL_STATE = "ds-global"  # the process function's per-key state (a dict)

WHERE = "DataStream window"


class StateValueError(TimeweaveError, TypeError):
    """A value the operator keeps (a window's contents, trigger or process state) is not data the state codec
    stores; raised at the key's first snapshot, naming the state and the value's type."""


@dataclass(frozen=True, slots=True)
class CheckedLayout(StateLayout):
    """A :class:`StateLayout` whose snapshot checks that every value is storable state data (user functions
    put their own values into this operator's state: a bad one is named at the first snapshot, not deep in a
    host's checkpoint writer)."""

    def snapshot(self, ctx: KeyContext) -> dict[str, Any]:
        out = StateLayout.snapshot(self, ctx)
        for name, value in out.items():
            try:
                state_codec.encode(value)
            except TypeError as exc:
                raise StateValueError(
                    f"DataStream window state {name!r} cannot be stored: {exc}. Window contents (reduce values, "
                    "accumulators, elements), trigger state and process state must be plain data: None, bool, int, "
                    "float, str, bytes, lists, tuples, dicts, sets, Decimal, datetime/date/time/timedelta") from exc
        return out


#: The operator's declared per-key state (version 1).
LAYOUT = CheckedLayout(1, (
    ValueState(KEY, "the key (from its first element)"),
    ValueState(WINDOWS, "the key's windows: [start, end, contents, trigger state, firings, fired on time, purged "
                        "since its last firing, fired windows merged in since, process window state]"),
    ValueState(EVENT_TIMERS, "event-time timers [[time ms, window start, window end], ...]"),
    ValueState(PROCESSING_TIMERS, "processing-time timers [[time ms, window start, window end], ...]"),
    ValueState(GLOBAL_STATE, "the process function's per-key state"),
))


class FiringKind(StrEnum):
    """When a firing happened relative to its window's end (Beam's pane timing)."""

    EARLY = "early"  # before the clock reached the window's max_timestamp
    ON_TIME = "on_time"  # the first firing at or after it
    LATE = "late"  # a later one (allowed lateness, or a trigger firing again)


@dataclass(frozen=True, slots=True)
class Firing:
    """One firing of one window of one key (main output).

    ``values``: what the window function emitted (reduce and aggregate: one value; process: any number).
    ``sequence``: the window's firing count before this one (0: first).  ``replaces_previous``: the window fired
    before and its contents were not purged since, so these values supersede that firing's.  ``merged_from``:
    windows that fired (unpurged) and were merged into this one since its last firing: superseded too.
    ``purged``: the contents were purged after this firing.  ``at``: the clock (ms) the firing happened at: the
    timer's time, or, when an element made the window fire, the watermark (event-time windows) or the processing
    time (processing-time windows) at its arrival; ``kind`` compares it with the window's ``max_timestamp`` (so
    neither depends on how far one watermark step jumped).
    """

    key: Any
    window: Window
    values: tuple[Any, ...]
    kind: FiringKind
    sequence: int
    replaces_previous: bool
    merged_from: tuple[Window, ...]
    purged: bool
    at: int
    tag: ClassVar[Tag] = Tag.MAIN

    @property
    def max_timestamp(self) -> int:
        return max_timestamp(self.window)

    @property
    def fired_before(self) -> bool:
        return self.sequence > 0


@dataclass(frozen=True, slots=True)
class LateElement:
    """An element every window of which had been cleaned up when it arrived (late output)."""

    row: Any
    time: int
    watermark: int
    allowed_lateness: int
    key: Any = None
    tag: ClassVar[Tag] = Tag.LATE

    @property
    def reason(self) -> str:
        """
        >>> LateElement({}, 1_000, 9_000, 2_000).reason
        'late: event time 1970-01-01 00:00:01.000 + allowed lateness 2000 ms <= watermark 1970-01-01 00:00:09.000 at its arrival: every window of the element had been cleaned up'
        """
        return (f"late: event time {format_ms(self.time)} + allowed lateness {self.allowed_lateness} ms <= watermark "
                f"{format_ms(self.watermark)} at its arrival: every window of the element had been cleaned up")


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An element (or, with ``row`` None, a firing of ``window``) a user function failed on, or an element with
    no event time.  ``step`` names what failed (``"reduce function"``, ``"trigger on_element"``...)."""

    row: Any
    step: str
    reason: str
    window: Window | None = None
    #: the key (None for window_all, or when the key selector itself failed on the key's first element)
    key: Any = None
    tag: ClassVar[Tag] = Tag.DEAD_LETTER


Output = Firing | LateElement | DeadLetter


class _Failed(Exception):
    """A user function raised during ``step`` (caught by the operator: a dead letter)."""

    def __init__(self, step: str, exc: BaseException) -> None:
        super().__init__(step)
        self.step, self.exc = step, exc

    @property
    def reason(self) -> str:
        return f"{self.step} raised {type(self.exc).__name__}: {self.exc}"


def _call(step: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except (SpecError, NoProcessingTimeError, StateValueError):
        raise  # program and host errors, not data errors
    except Exception as exc:
        raise _Failed(step, exc) from exc


class _Pane:
    """One window of the key while a step runs (stored as a list, :meth:`to_state`)."""

    __slots__ = ("contents", "fires", "merged_from", "on_time", "purged", "trigger_state", "window", "window_state")

    def __init__(self, window: Window) -> None:
        self.window = window
        #: None: empty; [kept value] (incremental); [[element, time], ...] (elements kept)
        self.contents: list[Any] | None = None
        self.trigger_state: dict[str, Any] = {}
        self.fires = 0
        self.on_time = False
        self.purged = False
        self.merged_from: list[list[int]] = []
        self.window_state: dict[str, Any] = {}

    def to_state(self) -> list[Any]:
        return [self.window.start, self.window.end, self.contents, self.trigger_state or None, self.fires,
                self.on_time, self.purged, self.merged_from or None, self.window_state or None]

    @classmethod
    def from_state(cls, value: list[Any]) -> _Pane:
        start, end, contents, trigger_state, fires, on_time, purged, merged_from, window_state = value
        pane = cls(Window(start, end))
        pane.contents = contents
        pane.trigger_state = trigger_state or {}
        pane.fires, pane.on_time, pane.purged = fires, on_time, purged
        pane.merged_from = merged_from or []
        pane.window_state = window_state or {}
        return pane

    def copy(self) -> _Pane:
        """A copy a failed merge restores (kept values and states deep, element lists shallow: never changed
        in place by user code)."""
        other = _Pane(self.window)
        if self.contents is not None:
            other.contents = list(self.contents) if len(self.contents) != 1 else copy.deepcopy(self.contents)
        other.trigger_state = copy.deepcopy(self.trigger_state)
        other.fires, other.on_time, other.purged = self.fires, self.on_time, self.purged
        other.merged_from = list(self.merged_from)
        other.window_state = self.window_state
        return other


class _Work:
    """The key's state while a step runs."""

    __slots__ = ("event", "global_state", "inflight", "key", "now", "panes", "processing", "watermark")

    def __init__(self, ctx: KeyContext, merging: bool) -> None:
        self.key = ctx.get(KEY)
        self.panes: dict[Window, _Pane] = {}
        for entry in ctx.get(WINDOWS) or ():
            pane = _Pane.from_state(entry)
            self.panes[pane.window] = pane
        #: merging assigners: the in-flight windows, sorted and disjoint ([start, end, None]: sessions.add_window)
        self.inflight: list[list[Any]] = [[w.start, w.end, None] for w in sorted(self.panes)] if merging else []
        self.event = TimerQueue.from_state(ctx.get(EVENT_TIMERS))
        self.processing = TimerQueue.from_state(ctx.get(PROCESSING_TIMERS))
        self.global_state: dict[str, Any] = ctx.get(GLOBAL_STATE) or {}
        self.watermark = watermark_ms(ctx.watermark)
        now = getattr(ctx, "processing_time", NO_WATERMARK)
        self.now = None if now == NO_WATERMARK else watermark_ms(now)

    def store(self, ctx: KeyContext) -> None:
        windows = [self.panes[w].to_state() for w in sorted(self.panes)]
        event, processing = self.event.to_state(), self.processing.to_state()
        holds = bool(windows or event or processing or self.global_state)
        for name, value in ((WINDOWS, windows), (EVENT_TIMERS, event), (PROCESSING_TIMERS, processing),
                            (GLOBAL_STATE, self.global_state)):
            if value:
                ctx.put(name, value)
            else:
                ctx.clear(name)
        if holds and self.key is not None:  # a key may be falsy (0, ""): kept all the same
            ctx.put(KEY, self.key)
        else:
            ctx.clear(KEY)
        # The key context holds one timer, the earliest event-time one (in the core's µs); the operator's state
        # is the truth, so a restored key (whose context lost its timers) gets it back at its next call.
        first = self.event.first()
        wanted = None if first is None else min(max(first, NO_WATERMARK // 1000 + 1) * 1000, END_OF_TIME)
        registered = ctx.timers()
        for timer in registered:
            if timer != wanted:
                ctx.delete_timer(timer)
        if wanted is not None and wanted not in registered:
            ctx.register_timer(wanted)


def _key_selector(key_by: Any) -> Callable[[Any], Any] | None:
    if key_by is None or callable(key_by):
        return key_by
    if isinstance(key_by, str):
        return lambda row: row[key_by]
    if isinstance(key_by, tuple | list) and key_by and all(isinstance(c, str) for c in key_by):
        columns = tuple(key_by)
        return lambda row: tuple(row[c] for c in columns)
    raise SpecError("key_by", f"expected a column name, a tuple of column names or a function, got {key_by!r}",
                    where=WHERE)


class WindowOperator:
    """Flink's keyed DataStream window: ``assigner``, ``function`` (:func:`~.functions.reduce`,
    :func:`~.functions.aggregate`, :func:`~.functions.process`), optional ``trigger`` (default: the assigner's),
    ``evictor`` and ``allowed_lateness`` (a duration, event time only).

    ``time_column`` names the event-time column (a timestamp or epoch ms; read with
    :func:`~timeweave.core.windows.spec.event_time_ms`) or ``time_of`` reads a row's time (ms or None);
    event-time assigners need one.  ``key_by`` (a column, columns or a function) gives the key firings carry;
    the host groups elements by the same key.

    >>> from timeweave.core.datastream.assigners import Session, Tumbling
    >>> from timeweave.core.datastream.functions import reduce
    >>> from timeweave.core.datastream.triggers import Trigger
    >>> WindowOperator(Tumbling.of(5), reduce(max), time_column="t", allowed_lateness=-1)
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: DataStream window: argument 'allowed_lateness': the allowed lateness cannot be negative, got -1 ms
    >>> WindowOperator(Session.of(5), reduce(max), time_column="t", trigger=Trigger())
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: DataStream window: argument 'trigger': a merging window assigner (EventTimeSessionWindows) cannot be used with a trigger that does not support merging (Trigger.can_merge() is False)
    """

    def __init__(
        self,
        assigner: Assigner,
        function: WindowFunction,
        *,
        trigger: Trigger | None = None,
        evictor: Evictor | None = None,
        allowed_lateness: int | timedelta | str = 0,
        time_column: str | None = None,
        time_of: Callable[[Any], int | None] | None = None,
        key_by: str | Sequence[str] | Callable[[Any], Any] | None = None,
    ) -> None:
        if not isinstance(assigner, Tumbling | Sliding | Session | Global):
            raise SpecError("assigner", f"expected Tumbling, Sliding, Session or Global, got {assigner!r:.60}",
                            where=WHERE)
        if not isinstance(function, WindowFunction):
            raise SpecError("function", f"expected reduce(...), aggregate(...) or process(...), got {function!r:.60}",
                            where=WHERE)
        trigger = default_trigger(assigner) if trigger is None else trigger
        if not isinstance(trigger, Trigger):
            raise SpecError("trigger", f"expected a Trigger, got {trigger!r:.60}", where=WHERE)
        if assigner.merging and not trigger.can_merge():
            raise SpecError("trigger", f"a merging window assigner ({assigner.name}) cannot be used with a trigger "
                            f"that does not support merging ({trigger.name}.can_merge() is False)", where=WHERE)
        if evictor is not None and not isinstance(evictor, Evictor):
            raise SpecError("evictor", f"expected an Evictor, got {evictor!r:.60}", where=WHERE)
        lateness = duration_ms(allowed_lateness, "allowed_lateness", where=WHERE)
        if lateness < 0:
            raise SpecError("allowed_lateness", f"the allowed lateness cannot be negative, got {lateness} ms",
                            where=WHERE)
        if lateness and not assigner.is_event_time:
            raise SpecError("allowed_lateness", f"allowed lateness applies to event-time windows; {assigner.name} is "
                            "not (Flink ignores it there)", where=WHERE)
        if time_column is not None and (not isinstance(time_column, str) or not time_column):
            raise SpecError("time_column", f"expected a column name, got {time_column!r}", where=WHERE)
        if assigner.is_event_time and time_column is None and time_of is None:
            raise SpecError("time_column", f"{assigner.name} needs the event time: name its column or give time_of",
                            where=WHERE)
        self.assigner = assigner
        self.function = function
        self.trigger = trigger
        self.evictor = evictor
        self.allowed_lateness = lateness
        self.time_column = time_column
        if time_of is None and time_column is not None:
            column = time_column
            time_of = lambda row: event_time_ms(row[column])  # noqa: E731
        self._time_of = time_of
        self._key_of = _key_selector(key_by)
        self._null_reason = null_event_time_reason(time_column or "(time_of)")
        #: whether windows keep their elements (a process function, or an evictor: no pre-aggregation)
        self._keeps = function.keeps_elements or evictor is not None
        self._assign_step = "session gap function" if isinstance(assigner, Session) and assigner.gap_function \
            else "window assigner"
        #: the declared per-key state (the keyed-operator contract)
        self.layout = LAYOUT

    # -- the contract ----------------------------------------------------------------------------------
    def process_elements(self, ctx: KeyContext, elements: Iterable[Any]) -> list[Output]:
        """Add a key's elements of one step (arrival order, all at the context's watermark).  Timers the
        watermark (or processing time) has reached fire first, so a host may call this and
        :meth:`on_watermark` in either order."""
        work = _Work(ctx, self.assigner.merging)
        out: list[Output] = []
        self._advance(work, out)
        for row in elements:
            self._element(work, row, out)
        work.store(ctx)
        return out

    def on_watermark(self, ctx: KeyContext) -> list[Output]:
        """Fire the key's timers the processing time and the watermark have reached."""
        work = _Work(ctx, self.assigner.merging)
        out: list[Output] = []
        self._advance(work, out)
        work.store(ctx)
        return out

    def next_processing_timer(self, ctx: KeyContext) -> int | None:
        """The key's earliest processing-time timer (ms), for a host that wakes keys on its clock."""
        timers = ctx.get(PROCESSING_TIMERS)
        return timers[0][0] if timers else None

    # -- time rules (Flink's WindowOperator) -----------------------------------------------------------
    def cleanup_time(self, window: Window) -> int:
        """When the window's state goes: ``max_timestamp + allowed_lateness`` (event time; ``Long.MAX_VALUE`` on
        overflow), ``max_timestamp`` (processing time).  ``MAX_TIME``: never (no timer)."""
        end = max_timestamp(window)
        if self.assigner.is_event_time:
            return min(end + self.allowed_lateness, MAX_TIME)
        return min(end, MAX_TIME)

    def is_window_late(self, window: Window, watermark: int) -> bool:
        return self.assigner.is_event_time and self.cleanup_time(window) <= watermark

    def is_element_late(self, time: int | None, watermark: int) -> bool:
        return self.assigner.is_event_time and time is not None and time + self.allowed_lateness <= watermark

    def _register_cleanup(self, work: _Work, window: Window) -> None:
        cleanup = self.cleanup_time(window)
        if cleanup == MAX_TIME:  # no GC timer for the end of time (Flink)
            return
        (work.event if self.assigner.is_event_time else work.processing).add(cleanup, window)

    def _delete_cleanup(self, work: _Work, window: Window) -> None:
        cleanup = self.cleanup_time(window)
        if cleanup != MAX_TIME:
            (work.event if self.assigner.is_event_time else work.processing).delete(cleanup, window)

    # -- elements --------------------------------------------------------------------------------------
    def _element(self, work: _Work, row: Any, out: list[Output]) -> None:
        try:
            if work.key is None and self._key_of is not None:
                work.key = _call("key selector", self._key_of, row)
            time = None if self._time_of is None else self._read_time(row)
            if self.assigner.is_event_time and time is None:
                out.append(DeadLetter(row, "event time", self._null_reason, key=work.key))
                return
            if self.assigner.processing_time and work.now is None:
                raise NoProcessingTimeError(f"{self.assigner.name} needs the processing time, and the host set none "
                                            "for this step (set the key context's processing_time)")
            windows = _call(self._assign_step, self.assigner.assign, row, time, work.now)
            if not windows:
                out.append(DeadLetter(row, "window assigner", f"{self.assigner.name}: time "
                                      f"{format_ms(time if self.assigner.is_event_time else work.now)} falls in no "
                                      "window (size < slide leaves gaps)", key=work.key))
                return
            skipped = True
            for window in windows:
                undo = None
                if self.assigner.merging:
                    actual, undo = self._add_merging(work, window)
                    if self.is_window_late(actual, work.watermark):
                        self._retire(work, actual)
                        continue
                elif self.is_window_late(window, work.watermark):
                    continue
                else:
                    actual = window
                skipped = False
                try:
                    self._into_window(work, actual, row, time, out)
                except _Failed:
                    if undo is not None:
                        undo()  # a dead letter bridges no sessions: the merge its window caused is undone
                    raise
            if skipped:
                if self.is_element_late(time, work.watermark):
                    assert time is not None
                    out.append(LateElement(row, time, work.watermark, self.allowed_lateness, work.key))
                else:
                    out.append(DeadLetter(row, "window assigner", "the element entered no window", key=work.key))
        except _Failed as failed:
            out.append(DeadLetter(row, failed.step, failed.reason, key=work.key))

    def _read_time(self, row: Any) -> int | None:
        """The element's event time (ms or None); an unreadable one is a data error (a dead letter)."""
        try:
            time = self._time_of(row)  # type: ignore[misc]
            if time is not None and (not isinstance(time, int) or isinstance(time, bool)):
                raise TypeError(f"time_of must give integer epoch ms or None, got {time!r:.40}")
        except Exception as exc:  # incl. SpecError: event_time_ms refusing the column's value is the row's fault
            raise _Failed("event time", exc) from exc
        return time

    def _into_window(self, work: _Work, window: Window, row: Any, time: int | None, out: list[Output]) -> None:
        pane = work.panes.get(window)
        if pane is None:
            pane = work.panes[window] = _Pane(window)
        before = pane.contents
        function = self.function
        try:
            if self._keeps:
                if before is None:
                    pane.contents = [[row, time]]
                else:
                    before.append([row, time])
            elif before is None:
                pane.contents = [_call(function.add_step, function.create, row)]
            else:
                pane.contents = [_call(function.add_step, function.add, before[0], row)]
            result = checked(self.trigger, "on_element", _call(
                "trigger on_element", self.trigger.on_element, row, time, window, self._trigger_ctx(work, pane)))
        except _Failed:
            # the element is a dead letter: take it out of the window again
            if self._keeps and before is not None and before and before[-1][0] is row:
                before.pop()
            pane.contents = before
            if before is None and not pane.trigger_state and not pane.fires:
                work.panes.pop(window, None)  # nothing in it: the window was never there
                if self.assigner.merging:
                    self._retire(work, window)
            else:
                self._register_cleanup(work, window)
            raise
        self._act(work, pane, result, work.now if self.assigner.processing_time else work.watermark, out)
        self._register_cleanup(work, window)

    def _act(self, work: _Work, pane: _Pane, result: TriggerResult, at: int | None, out: list[Output]) -> None:
        if result.fire and pane.contents is not None:
            self._emit(work, pane, result.purge, at, out)
        if result.purge:
            pane.contents = None
            pane.purged = True

    # -- merging (Flink's MergingWindowSet.addWindow and WindowOperator's merge callback) ---------------
    def _add_merging(self, work: _Work, window: Window) -> tuple[Window, Callable[[], None] | None]:
        """Add ``window`` to the in-flight windows (merging it with those it intersects); returns the window
        the element goes to and, when windows merged, how to undo the merge (the element failing later)."""
        inflight = work.inflight
        merged, lo, hi = add_window(inflight, window)
        if lo == hi:  # a new, self-contained window
            inflight.insert(lo, [window.start, window.end, None])
            work.panes[window] = _Pane(window)
            return window, None
        existing = [Window(entry[0], entry[1]) for entry in inflight[lo:hi]]
        if hi - lo == 1 and existing[0] == merged:  # inside an in-flight window: nothing merges
            return merged, None
        if self.assigner.is_event_time and self.cleanup_time(merged) <= work.watermark:
            raise TimeweaveError(f"the end timestamp of an event-time window cannot become earlier than the current "
                                 f"watermark by merging ({merged} at watermark {work.watermark})")
        panes = [work.panes[w] for w in existing]
        saved = [p.copy() for p in panes]
        event, processing = work.event.copy(), work.processing.copy()

        def undo() -> None:
            work.panes.pop(merged, None)
            for p in saved:
                work.panes[p.window] = p
            work.event, work.processing = event, processing
            work.inflight[:] = [[w.start, w.end, None] for w in sorted(work.panes)]

        result = _Pane(merged)
        try:
            self._merge(work, result, panes)
        except _Failed:  # the element is a dead letter: the windows stay as they were
            undo()
            raise
        for w in existing:
            del work.panes[w]
        work.panes[merged] = result
        inflight[lo:hi] = [[merged.start, merged.end, None]]
        return merged, undo

    def _merge(self, work: _Work, result: _Pane, panes: list[_Pane]) -> None:
        trigger = self.trigger
        merged_states = tuple(p.trigger_state for p in panes)
        _call("trigger on_merge", trigger.on_merge, result.window,
              self._trigger_ctx(work, result, merged_states=merged_states))
        for p in panes:
            _call("trigger clear", trigger.clear, p.window, self._trigger_ctx(work, p))
            self._delete_cleanup(work, p.window)
        contents: list[Any] | None = None
        function = self.function
        for p in panes:  # window order (the merged contents' order: elements oldest window first)
            if p.contents is None:
                continue
            if contents is None:
                contents = list(p.contents)
            elif self._keeps:
                contents.extend(p.contents)
            else:
                contents = [_call(function.merge_step, function.merge, contents[0], p.contents[0])]
        result.contents = contents
        # a window merged from one that already fired at or after its end fires late, not on time, again
        result.on_time = any(p.on_time for p in panes)
        for p in panes:
            result.merged_from.extend(p.merged_from)
            if p.fires and not p.purged:
                result.merged_from.append([p.window.start, p.window.end])

    def _retire(self, work: _Work, window: Window) -> None:
        work.panes.pop(window, None)
        work.inflight[:] = [e for e in work.inflight if (e[0], e[1]) != (window.start, window.end)]

    # -- timers ----------------------------------------------------------------------------------------
    def _advance(self, work: _Work, out: list[Output]) -> None:
        if work.now is not None:
            while (timer := work.processing.pop_due(work.now)) is not None:
                self._on_timer(work, timer[0], timer[1], False, out)
        while (timer := work.event.pop_due(work.watermark)) is not None:
            self._on_timer(work, timer[0], timer[1], True, out)

    def _on_timer(self, work: _Work, time: int, window: Window, event_time: bool, out: list[Output]) -> None:
        if self.assigner.merging and window not in work.panes:
            return  # a timer of a window merged away or retired (a trigger did not delete it): nothing to do
        pane = work.panes.get(window)
        transient = pane is None
        if pane is None:
            pane = _Pane(window)
        method = "on_event_time" if event_time else "on_processing_time"
        try:
            result = checked(self.trigger, method, _call(f"trigger {method}", getattr(self.trigger, method), time,
                                                         window, self._trigger_ctx(work, pane)))
        except _Failed as failed:
            out.append(DeadLetter(None, failed.step, failed.reason, window, work.key))
            result = CONTINUE
        self._act(work, pane, result, time, out)
        if event_time == self.assigner.is_event_time and time == self.cleanup_time(window):
            self._clear_all_state(work, pane, out)
        elif transient and pane.trigger_state:
            work.panes[window] = pane

    def _clear_all_state(self, work: _Work, pane: _Pane, out: list[Output]) -> None:
        window = pane.window
        pane.contents = None
        try:
            _call("trigger clear", self.trigger.clear, window, self._trigger_ctx(work, pane))
        except _Failed as failed:
            out.append(DeadLetter(None, failed.step, failed.reason, window, work.key))
        if isinstance(self.function.process_function, ProcessWindowFunction):
            try:
                _call("process function clear", self.function.clear, self._process_ctx(work, pane))
            except _Failed as failed:
                out.append(DeadLetter(None, failed.step, failed.reason, window, work.key))
        work.panes.pop(window, None)
        if self.assigner.merging:
            self._retire(work, window)

    # -- firing ----------------------------------------------------------------------------------------
    def _emit(self, work: _Work, pane: _Pane, purging: bool, at: int | None, out: list[Output]) -> None:
        window, function, evictor = pane.window, self.function, self.evictor
        contents = pane.contents
        assert contents is not None
        try:
            if evictor is None:
                kept = [e[0] for e in contents] if self._keeps else contents[0]
                values = _call(function.emit_step, function.emit, kept, self._process_ctx(work, pane), key=work.key)
            else:
                ectx = EvictorContext(work.watermark, work.now)
                elements = [TimestampedValue(e[0], e[1]) for e in contents]
                elements = checked_elements(evictor, "evict_before", _call(
                    "evictor evict_before", evictor.evict_before, elements, window, ectx))
                survivors = [e.value for e in elements]
                if function.keeps_elements:
                    values = _call(function.emit_step, function.emit, survivors, self._process_ctx(work, pane),
                                   key=work.key)
                elif function.kind == "reduce" and not survivors:
                    values = ()  # nothing left to reduce: the window fires with no value
                else:
                    kept = _call(function.add_step, function.incremental, survivors)
                    values = _call(function.emit_step, function.emit, kept, self._process_ctx(work, pane),
                                   key=work.key)
                elements = checked_elements(evictor, "evict_after", _call(
                    "evictor evict_after", evictor.evict_after, elements, window, ectx))
                pane.contents = [[e.value, e.timestamp] for e in elements] or None
        except _Failed as failed:
            out.append(DeadLetter(None, failed.step, failed.reason, window, work.key))
            return
        at = NO_WATERMARK if at is None else at
        if at < max_timestamp(window):
            kind = FiringKind.EARLY
        elif not pane.on_time:
            kind = FiringKind.ON_TIME
            pane.on_time = True
        else:
            kind = FiringKind.LATE
        out.append(Firing(work.key, window, values, kind, pane.fires, pane.fires > 0 and not pane.purged,
                          tuple(Window(s, e) for s, e in pane.merged_from), purging, at))
        pane.fires += 1
        pane.purged = False
        pane.merged_from = []

    # -- contexts --------------------------------------------------------------------------------------
    def _trigger_ctx(self, work: _Work, pane: _Pane, merged_states: tuple[dict[str, Any], ...] = ()) -> TriggerContext:
        return TriggerContext(pane.window, pane.trigger_state, work.event, work.processing, watermark=work.watermark,
                              processing_time=work.now, merged_states=merged_states)

    def _process_ctx(self, work: _Work, pane: _Pane) -> ProcessContext:
        return ProcessContext(work.key, pane.window, work.watermark, work.now, pane.window_state, work.global_state)


def window_all(assigner: Assigner, function: WindowFunction, **options: Any) -> WindowOperator:
    """A non-keyed window (Flink's ``windowAll``): every element in one key, so the window runs with
    parallelism 1, as in Flink; the host sends every row to the one key.  ``options`` as :class:`WindowOperator`
    (no ``key_by``; firings carry the key None).

    >>> from timeweave.core.datastream.assigners import Tumbling
    >>> from timeweave.core.datastream.functions import reduce
    >>> window_all(Tumbling.of(5), reduce(max), time_column="t").layout.version
    1
    """
    if "key_by" in options:
        raise SpecError("key_by", "window_all has no key (use WindowOperator with key_by for keyed windows)",
                        where=WHERE)
    return WindowOperator(assigner, function, **options)


__all__ = ["EVENT_TIMERS", "GLOBAL_STATE", "KEY", "LAYOUT", "PROCESSING_TIMERS", "WINDOWS", "CheckedLayout",
           "DeadLetter", "Firing", "FiringKind", "LateElement", "Output", "StateValueError", "WindowOperator",
           "window_all"]
