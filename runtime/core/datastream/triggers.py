"""Triggers of Flink's DataStream windows: when a window's contents are emitted, and when they are purged.

A trigger is asked about each window on each element (``on_element``), on each of its timers (``on_event_time``
/ ``on_processing_time``), when windows merge (``on_merge``, if ``can_merge``) and when the window goes
(``clear``); it answers a :class:`TriggerResult`.  It sees a :class:`TriggerContext`: the watermark and the
processing time (ms), timers of the window (set semantics: Flink's ``(key, window, time)``), and *partitioned
state*: values kept per window under a :class:`TriggerState` name, merged when windows merge if the state has a
merge function (Flink's ``ReducingStateDescriptor``).  The built-ins follow Flink's classes line by line:

* :class:`EventTime` (``EventTimeTrigger``, every event-time assigner's default): a timer at the window's
  ``max_timestamp``; FIRE at it; an element arriving when the watermark has passed it FIREs at once (a late
  firing, within the allowed lateness);
* :class:`ProcessingTime` (``ProcessingTimeTrigger``): FIRE at the processing-time timer at ``max_timestamp``;
* :class:`Count` (``CountTrigger``): FIRE when the window's element count reaches ``n`` (the count resets);
* :class:`Purging` (``PurgingTrigger``): the nested trigger's FIRE becomes FIRE_AND_PURGE;
* :class:`ContinuousEventTime` (``ContinuousEventTimeTrigger``): FIRE every ``interval`` of event time, and at
  the window's end;
* :class:`Never` (``GlobalWindows.NeverTrigger``): never fires (the global window's default);
* :class:`EarlyFirings` (``EventTime().with_early(Count(100))``): the main trigger, plus the early trigger's
  firings while the watermark is before the window's end (Beam's ``AfterWatermark.withEarlyFirings``).

A user trigger subclasses :class:`Trigger`.  Its methods return a :class:`TriggerResult`; anything else is a
:class:`~timeweave.core.errors.SpecError` naming the trigger and the method (:func:`checked`).

>>> from timeweave.core.windows.spec import Window
>>> from timeweave.core.datastream.timers import TimerQueue
>>> ctx = TriggerContext(Window(0, 10), {}, TimerQueue(), TimerQueue(), watermark=3)
>>> EventTime().on_element("a", 5, Window(0, 10), ctx), ctx.event_timers.first()
(<TriggerResult.CONTINUE: 'CONTINUE'>, 9)
>>> EventTime().on_event_time(9, Window(0, 10), ctx)
<TriggerResult.FIRE: 'FIRE'>
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any

from timeweave.core.datastream.assigners import Assigner, Global, max_timestamp
from timeweave.core.datastream.timers import TimerQueue
from timeweave.core.errors import SpecError, TimeweaveError
from timeweave.core.state import NO_WATERMARK
from timeweave.core.windows.spec import Window, duration_ms


class TriggerResult(Enum):
    """What a trigger asks of the operator (Flink's ``TriggerResult``)."""

    CONTINUE = "CONTINUE"
    FIRE = "FIRE"
    PURGE = "PURGE"
    FIRE_AND_PURGE = "FIRE_AND_PURGE"

    @property
    def fire(self) -> bool:
        """Emit the window's contents (Flink's ``isFire``)."""
        return self is TriggerResult.FIRE or self is TriggerResult.FIRE_AND_PURGE

    @property
    def purge(self) -> bool:
        """Drop the window's contents, keep its trigger state and timers (Flink's ``isPurge``)."""
        return self is TriggerResult.PURGE or self is TriggerResult.FIRE_AND_PURGE

    @staticmethod
    def of(fire: bool, purge: bool) -> TriggerResult:
        """The result doing ``fire`` and ``purge``.

        >>> TriggerResult.of(True, True)
        <TriggerResult.FIRE_AND_PURGE: 'FIRE_AND_PURGE'>
        """
        if fire:
            return TriggerResult.FIRE_AND_PURGE if purge else TriggerResult.FIRE
        return TriggerResult.PURGE if purge else TriggerResult.CONTINUE


CONTINUE, FIRE, PURGE, FIRE_AND_PURGE = (TriggerResult.CONTINUE, TriggerResult.FIRE, TriggerResult.PURGE,
                                         TriggerResult.FIRE_AND_PURGE)


class NoProcessingTimeError(TimeweaveError, RuntimeError):
    """Processing time was asked for, and the host set none for this step."""


@dataclass(frozen=True, slots=True)
class TriggerState:
    """A named piece of a trigger's per-window state; ``merge`` (two values -> one) makes it mergeable and
    lets :meth:`PartitionedState.add` fold values in (Flink's ``ReducingStateDescriptor``).

    >>> TriggerState("count", operator.add).name
    'count'
    """

    name: str
    merge: Callable[[Any, Any], Any] | None = None


class PartitionedState:
    """One window's value of a :class:`TriggerState` (values must be plain data the state codec stores)."""

    __slots__ = ("_desc", "_key", "_values")

    def __init__(self, values: dict[str, Any], key: str, desc: TriggerState) -> None:
        self._values, self._key, self._desc = values, key, desc

    def get(self) -> Any | None:
        return self._values.get(self._key)

    def update(self, value: Any) -> None:
        if value is None:
            self._values.pop(self._key, None)
        else:
            self._values[self._key] = value

    def add(self, value: Any) -> None:
        """Fold ``value`` in with the state's merge function (Flink's ``ReducingState.add``)."""
        if self._desc.merge is None:
            raise TypeError(f"trigger state {self._desc.name!r} has no merge function: add() needs one "
                            "(use update())")
        current = self._values.get(self._key)
        self.update(value if current is None else self._desc.merge(current, value))

    def clear(self) -> None:
        self._values.pop(self._key, None)


class TriggerContext:
    """What a trigger sees of one window: clocks (ms), the window's timers and its partitioned state.

    The operator builds it; ``merged_states`` are the trigger states of the windows being merged into
    ``window`` (only during ``on_merge``).  ``scoped(prefix)`` gives a nested trigger its own state names.
    """

    __slots__ = ("_merged", "_now", "_prefix", "_state", "_watermark", "event_timers", "processing_timers",
                 "window")

    def __init__(self, window: Window, state: dict[str, Any], event_timers: TimerQueue,
                 processing_timers: TimerQueue, *, watermark: int = NO_WATERMARK, processing_time: int | None = None,
                 merged_states: tuple[dict[str, Any], ...] = (), prefix: str = "") -> None:
        self.window = window
        self._state = state
        self.event_timers = event_timers
        self.processing_timers = processing_timers
        self._watermark = watermark
        self._now = processing_time
        self._merged = merged_states
        self._prefix = prefix

    def scoped(self, prefix: str) -> TriggerContext:
        """This context with state names under ``prefix`` (a composite trigger's children keep apart)."""
        return TriggerContext(self.window, self._state, self.event_timers, self.processing_timers,
                              watermark=self._watermark, processing_time=self._now, merged_states=self._merged,
                              prefix=self._prefix + prefix)

    @property
    def current_watermark(self) -> int:
        """The watermark (ms; Java's ``Long.MIN_VALUE`` before the first)."""
        return self._watermark

    @property
    def current_processing_time(self) -> int:
        """The host's processing time (ms) of this step."""
        if self._now is None:
            raise NoProcessingTimeError("processing time was asked for, but the host set none for this step "
                                        "(set the key context's processing_time)")
        return self._now

    def register_event_time_timer(self, time: int) -> None:
        self.event_timers.add(time, self.window)

    def delete_event_time_timer(self, time: int) -> None:
        self.event_timers.delete(time, self.window)

    def register_processing_time_timer(self, time: int) -> None:
        self.processing_timers.add(time, self.window)

    def delete_processing_time_timer(self, time: int) -> None:
        self.processing_timers.delete(time, self.window)

    def get_partitioned_state(self, desc: TriggerState) -> PartitionedState:
        """The window's value of ``desc`` (Flink's ``getPartitionedState``)."""
        return PartitionedState(self._state, self._prefix + desc.name, desc)

    def merge_partitioned_state(self, desc: TriggerState) -> None:
        """Fold the merged windows' values of ``desc`` into this window's (Flink's ``mergePartitionedState``;
        sources in window order, then into the target)."""
        if desc.merge is None:
            raise TypeError(f"trigger state {desc.name!r} has no merge function: it cannot be merged")
        key = self._prefix + desc.name
        merged = None
        for source in self._merged:
            value = source.get(key)
            if value is not None:
                merged = value if merged is None else desc.merge(merged, value)
        if merged is not None:
            current = self._state.get(key)
            self._state[key] = merged if current is None else desc.merge(current, merged)


class Trigger:
    """The base of every trigger (Flink's ``Trigger``): subclass it and override what you need.

    Times are ms.  ``on_*`` return a :class:`TriggerResult`; ``can_merge`` says whether the trigger works with
    merging (session) windows, and then ``on_merge`` re-registers what the merged window needs (its timers; its
    state with ``ctx.merge_partitioned_state``).  ``clear`` removes the window's timers and state.

    >>> class EveryOther(Trigger):
    ...     seen = TriggerState("seen", operator.add)
    ...     def on_element(self, element, timestamp, window, ctx):
    ...         state = ctx.get_partitioned_state(self.seen); state.add(1)
    ...         return FIRE if state.get() % 2 == 0 else CONTINUE
    """

    def on_element(self, element: Any, timestamp: int | None, window: Window, ctx: TriggerContext) -> TriggerResult:
        return CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return CONTINUE

    def can_merge(self) -> bool:
        return False

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not support merging windows")

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        return None

    def with_early(self, early: Trigger) -> EarlyFirings:
        """This trigger plus ``early``'s firings before the window's end (``EventTime().with_early(Count(100))``)."""
        return EarlyFirings(self, early)

    @property
    def name(self) -> str:
        return type(self).__name__


def checked(trigger: Trigger, method: str, result: Any) -> TriggerResult:
    """``result`` if it is a :class:`TriggerResult`, else a :class:`SpecError` naming trigger and method.

    >>> checked(Never(), "on_element", "FIRE")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: DataStream window: argument 'trigger': Never.on_element returned 'FIRE' (a str); a trigger method returns a TriggerResult: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE
    """
    if isinstance(result, TriggerResult):
        return result
    name = getattr(trigger, "name", type(trigger).__name__)
    raise SpecError("trigger", f"{name}.{method} returned {result!r:.60} (a {type(result).__name__}); a trigger "
                    "method returns a TriggerResult: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE",
                    where="DataStream window")


# -- built-ins ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EventTime(Trigger):
    """Flink's ``EventTimeTrigger``: FIRE when the watermark passes the window's end (see the module doc)."""

    def on_element(self, element: Any, timestamp: int | None, window: Window, ctx: TriggerContext) -> TriggerResult:
        if max_timestamp(window) <= ctx.current_watermark:
            return FIRE  # the watermark is past the window (a late element within the lateness): fire at once
        ctx.register_event_time_timer(max_timestamp(window))
        return CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return FIRE if time == max_timestamp(window) else CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        # Only register a timer if the watermark is not yet past the end of the merged window: otherwise the
        # timer would fire at once and, with allowed lateness, a late-merged window would fire twice.
        if max_timestamp(window) > ctx.current_watermark:
            ctx.register_event_time_timer(max_timestamp(window))

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(max_timestamp(window))


@dataclass(frozen=True)
class ProcessingTime(Trigger):
    """Flink's ``ProcessingTimeTrigger``: FIRE when processing time reaches the window's end."""

    def on_element(self, element: Any, timestamp: int | None, window: Window, ctx: TriggerContext) -> TriggerResult:
        ctx.register_processing_time_timer(max_timestamp(window))
        return CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return FIRE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        if max_timestamp(window) > ctx.current_processing_time:
            ctx.register_processing_time_timer(max_timestamp(window))

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_processing_time_timer(max_timestamp(window))


_COUNT = TriggerState("count", operator.add)


@dataclass(frozen=True)
class Count(Trigger):
    """Flink's ``CountTrigger``: FIRE when the window has received ``max_count`` elements since the last
    firing (the count is per window, merged when windows merge).

    >>> Count(0)
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: CountTrigger: argument 'max_count': must be a positive integer, got 0
    """

    max_count: int

    def __post_init__(self) -> None:
        if not isinstance(self.max_count, int) or isinstance(self.max_count, bool) or self.max_count <= 0:
            raise SpecError("max_count", f"must be a positive integer, got {self.max_count!r}", where="CountTrigger")

    @classmethod
    def of(cls, max_count: int) -> Count:
        return cls(max_count)

    def on_element(self, element: Any, timestamp: int | None, window: Window, ctx: TriggerContext) -> TriggerResult:
        count = ctx.get_partitioned_state(_COUNT)
        count.add(1)
        if count.get() >= self.max_count:
            count.clear()
            return FIRE
        return CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        ctx.merge_partitioned_state(_COUNT)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(_COUNT).clear()


@dataclass(frozen=True)
class Purging(Trigger):
    """Flink's ``PurgingTrigger``: the nested trigger, with every FIRE turned into FIRE_AND_PURGE."""

    nested: Trigger

    def __post_init__(self) -> None:
        if not isinstance(self.nested, Trigger):
            raise SpecError("nested", f"expected a Trigger, got {self.nested!r}", where="PurgingTrigger")

    @classmethod
    def of(cls, nested: Trigger) -> Purging:
        return cls(nested)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return FIRE_AND_PURGE if result.fire else result

    def on_element(self, element: Any, timestamp: int | None, window: Window, ctx: TriggerContext) -> TriggerResult:
        return self._purging(checked(self.nested, "on_element",
                                     self.nested.on_element(element, timestamp, window, ctx)))

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return self._purging(checked(self.nested, "on_event_time", self.nested.on_event_time(time, window, ctx)))

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return self._purging(checked(self.nested, "on_processing_time",
                                     self.nested.on_processing_time(time, window, ctx)))

    def can_merge(self) -> bool:
        return self.nested.can_merge()

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        self.nested.on_merge(window, ctx)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        self.nested.clear(window, ctx)


_FIRE_TIME = TriggerState("fire-time", min)


def _java_remainder(a: int, b: int) -> int:
    """Java's ``a % b`` (the sign of ``a``), which Flink's ``ContinuousEventTimeTrigger`` aligns with."""
    r = abs(a) % b
    return r if a >= 0 else -r


@dataclass(frozen=True)
class ContinuousEventTime(Trigger):
    """Flink's ``ContinuousEventTimeTrigger``: FIRE every ``interval`` ms of event time and at the window's end.

    The first firing time is ``t - t % interval + interval`` of the window's first element (Java's remainder:
    before 1970 it rounds toward zero, as Flink does), capped at the window's ``max_timestamp``.

    >>> ContinuousEventTime.of("1 min").interval
    60000
    """

    interval: int

    def __post_init__(self) -> None:
        if not isinstance(self.interval, int) or isinstance(self.interval, bool) or self.interval <= 0:
            raise SpecError("interval", f"must be greater than 0 ms, got {self.interval!r}",
                            where="ContinuousEventTimeTrigger")

    @classmethod
    def of(cls, interval: int | timedelta | str) -> ContinuousEventTime:
        return cls(duration_ms(interval, "interval", where="ContinuousEventTimeTrigger"))

    def on_element(self, element: Any, timestamp: int | None, window: Window, ctx: TriggerContext) -> TriggerResult:
        if max_timestamp(window) <= ctx.current_watermark:
            return FIRE  # the watermark is already past the window: fire at once
        ctx.register_event_time_timer(max_timestamp(window))
        fire_time = ctx.get_partitioned_state(_FIRE_TIME)
        if fire_time.get() is None and timestamp is not None:
            self._register_next(timestamp - _java_remainder(timestamp, self.interval), window, ctx, fire_time)
        return CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if time == max_timestamp(window):
            return FIRE
        fire_time = ctx.get_partitioned_state(_FIRE_TIME)
        if fire_time.get() == time:
            fire_time.clear()
            self._register_next(time, window, ctx, fire_time)
            return FIRE
        return CONTINUE

    def _register_next(self, time: int, window: Window, ctx: TriggerContext, fire_time: PartitionedState) -> None:
        next_fire = min(time + self.interval, max_timestamp(window))
        fire_time.add(next_fire)
        ctx.register_event_time_timer(next_fire)

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        ctx.merge_partitioned_state(_FIRE_TIME)
        next_fire = ctx.get_partitioned_state(_FIRE_TIME).get()
        if next_fire is not None:
            ctx.register_event_time_timer(next_fire)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        fire_time = ctx.get_partitioned_state(_FIRE_TIME)
        if fire_time.get() is not None:
            ctx.delete_event_time_timer(fire_time.get())
            fire_time.clear()


@dataclass(frozen=True)
class Never(Trigger):
    """Flink's ``GlobalWindows.NeverTrigger``: never fires (the global window's default)."""

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        return None


@dataclass(frozen=True)
class EarlyFirings(Trigger):
    """``main`` plus ``early``'s firings while the watermark is before the window's end.

    Both are asked about every element and timer (their state apart: ``early``'s names are scoped); the result
    fires if either fires and purges if either purges.  Once the watermark reaches the window's end the early
    trigger is cleared and no longer asked (late firings come from ``main``, as Beam's early firings stop at the
    watermark).
    """

    main: Trigger
    early: Trigger

    def __post_init__(self) -> None:
        for argument, value in (("main", self.main), ("early", self.early)):
            if not isinstance(value, Trigger):
                raise SpecError(argument, f"expected a Trigger, got {value!r}", where="with_early")

    @property
    def name(self) -> str:
        return f"{self.main.name}.with_early({self.early.name})"

    def _early_open(self, window: Window, ctx: TriggerContext) -> bool:
        return ctx.current_watermark < max_timestamp(window)

    def _combine(self, window: Window, ctx: TriggerContext, main: TriggerResult,
                 early: Callable[[TriggerContext], TriggerResult] | None) -> TriggerResult:
        early_ctx = ctx.scoped("early/")
        if early is not None and self._early_open(window, ctx):
            other = early(early_ctx)
            return TriggerResult.of(main.fire or other.fire, main.purge or other.purge)
        self.early.clear(window, early_ctx)
        return main

    def on_element(self, element: Any, timestamp: int | None, window: Window, ctx: TriggerContext) -> TriggerResult:
        main = checked(self.main, "on_element", self.main.on_element(element, timestamp, window, ctx))
        return self._combine(window, ctx, main, lambda c: checked(
            self.early, "on_element", self.early.on_element(element, timestamp, window, c)))

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        main = checked(self.main, "on_event_time", self.main.on_event_time(time, window, ctx))
        return self._combine(window, ctx, main, lambda c: checked(
            self.early, "on_event_time", self.early.on_event_time(time, window, c)))

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        main = checked(self.main, "on_processing_time", self.main.on_processing_time(time, window, ctx))
        return self._combine(window, ctx, main, lambda c: checked(
            self.early, "on_processing_time", self.early.on_processing_time(time, window, c)))

    def can_merge(self) -> bool:
        return self.main.can_merge() and self.early.can_merge()

    def on_merge(self, window: Window, ctx: TriggerContext) -> None:
        self.main.on_merge(window, ctx)
        self.early.on_merge(window, ctx.scoped("early/"))

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        self.main.clear(window, ctx)
        self.early.clear(window, ctx.scoped("early/"))


def default_trigger(assigner: Assigner) -> Trigger:
    """The assigner's default trigger, as Flink's ``getDefaultTrigger``.

    >>> from timeweave.core.datastream.assigners import Global, Tumbling
    >>> default_trigger(Tumbling.of(5)), default_trigger(Tumbling.of(5, processing_time=True)), default_trigger(Global())
    (EventTime(), ProcessingTime(), Never())
    """
    if isinstance(assigner, Global):
        return Never()
    return EventTime() if assigner.is_event_time else ProcessingTime()


__all__ = ["CONTINUE", "FIRE", "FIRE_AND_PURGE", "PURGE", "ContinuousEventTime", "Count", "EarlyFirings", "EventTime",
           "Never", "NoProcessingTimeError", "PartitionedState", "ProcessingTime", "Purging", "Trigger",
           "TriggerContext", "TriggerResult", "TriggerState", "checked", "default_trigger"]
