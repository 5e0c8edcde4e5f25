"""Window assigners of Flink's DataStream API: which windows an element belongs to.

Each assigner is a frozen dataclass built with ``.of(...)``; durations are integer milliseconds, a
:class:`~datetime.timedelta` or a text (``"10 min"``, ``"-8 hours"``), read by the window TVF's one reader
(:func:`~timeweave.core.windows.spec.duration_ms`), and checked with Flink's rules at construction (a bad value
raises :class:`~timeweave.core.errors.SpecError` naming Flink's class and the argument):

* :class:`Tumbling` (``TumblingEventTimeWindows`` / ``TumblingProcessingTimeWindows``): ``size > 0`` and
  ``abs(offset) < size``; one window ``[start, start + size)`` with ``start`` Flink's
  ``TimeWindow.getWindowStartWithOffset`` (:func:`~timeweave.core.windows.spec.window_start`, before 1970 too);
* :class:`Sliding` (``SlidingEventTimeWindows`` / ``SlidingProcessingTimeWindows``): ``slide > 0``,
  ``abs(offset) < slide`` and ``size > 0`` (``size`` need not be a multiple of ``slide``, unlike the HOP
  TVF); windows listed newest first, as Flink's ``assignWindows`` does (the order triggers see them in);
* :class:`Session` (``EventTimeSessionWindows`` / ``ProcessingTimeSessionWindows`` and their ``Dynamic``
  forms with a per-element gap function): ``gap > 0``; each element opens ``[t, t + gap)``
  (:func:`~timeweave.core.windows.sessions.session_window`) and the operator merges intersecting windows
  (Flink's ``MergingWindowSet``);
* :class:`Global` (``GlobalWindows``): every element of a key in the one :data:`GLOBAL_WINDOW`, whose
  ``max_timestamp`` is Java's ``Long.MAX_VALUE``; it is not an event-time assigner (no element is ever late)
  and its default trigger never fires.

Event-time assigners use the element's timestamp; processing-time ones the host's processing time ``now``.

>>> Tumbling.of("1 day", offset="-8 hours")
Tumbling(size=86400000, offset=-28800000, processing_time=False)
>>> [(w.start, w.end) for w in Sliding.of("10 s", "5 s").assign(None, 12_000, None)]
[(10000, 20000), (5000, 15000)]
>>> Tumbling.of(0)
Traceback (most recent call last):
...
timeweave.core.errors.SpecError: TumblingEventTimeWindows: argument 'size': must be greater than 0, but got 0 ms
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from timeweave.core.errors import SpecError
from timeweave.core.windows.sessions import session_window
from timeweave.core.windows.spec import Window, duration_ms, window_start

#: Java's ``Long.MIN_VALUE`` / ``Long.MAX_VALUE``: Flink's time range (ms).
MIN_TIME = -(2**63)
MAX_TIME = 2**63 - 1
#: Flink's ``GlobalWindow``: ``max_timestamp`` is ``Long.MAX_VALUE`` (so no cleanup timer is ever set).
GLOBAL_WINDOW = Window(MIN_TIME, MAX_TIME + 1)

Duration = int | timedelta | str


def max_timestamp(window: Window) -> int:
    """Flink's ``Window.maxTimestamp()``: the last millisecond of the window (``end - 1``).

    >>> max_timestamp(Window(0, 5000)), max_timestamp(GLOBAL_WINDOW) == MAX_TIME
    (4999, True)
    """
    return window.end - 1


def _positive(where: str, argument: str, value: int) -> None:
    if value <= 0:
        raise SpecError(argument, f"must be greater than 0, but got {value} ms", where=where)


def _offset(where: str, offset: int, period: int, period_name: str) -> None:
    if abs(offset) >= period:  # Flink: "parameters must satisfy abs(offset) < size" (slide for sliding)
        raise SpecError("offset", f"must satisfy abs(offset) < {period_name}, but got offset {offset} ms and "
                        f"{period_name} {period} ms", where=where)


def _flink_name(kind: str, processing_time: bool) -> str:
    return f"{kind}{'Processing' if processing_time else 'Event'}TimeWindows"


@dataclass(frozen=True, slots=True)
class Tumbling:
    """Fixed, non-overlapping windows of ``size`` ms starting at ``offset + k * size``.

    >>> Tumbling.of("5 s").assign(None, -1, None)   # before 1970: the window holding -1 ms
    [Window(start=-5000, end=0)]
    >>> Tumbling.of("1 h", offset="1 h")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: TumblingEventTimeWindows: argument 'offset': must satisfy abs(offset) < size, but got offset 3600000 ms and size 3600000 ms
    """

    size: int
    offset: int = 0
    processing_time: bool = False

    def __post_init__(self) -> None:
        _positive(self.name, "size", self.size)
        _offset(self.name, self.offset, self.size, "size")

    @classmethod
    def of(cls, size: Duration, offset: Duration = 0, *, processing_time: bool = False) -> Tumbling:
        """A tumbling assigner from durations (ms, timedelta or text)."""
        where = _flink_name("Tumbling", processing_time)
        return cls(duration_ms(size, "size", where=where), duration_ms(offset, "offset", where=where), processing_time)

    @property
    def name(self) -> str:
        """Flink's class name (errors and docs name it)."""
        return _flink_name("Tumbling", self.processing_time)

    @property
    def is_event_time(self) -> bool:
        return not self.processing_time

    merging = False

    def assign(self, element: Any, timestamp: int | None, now: int | None) -> list[Window]:
        """The element's window (``timestamp`` for event time, ``now`` for processing time; ms)."""
        t = now if self.processing_time else timestamp
        assert t is not None, "the operator checks the time first"
        start = window_start(t, self.offset, self.size)
        return [Window(start, start + self.size)]


@dataclass(frozen=True, slots=True)
class Sliding:
    """Windows of ``size`` ms starting every ``slide`` ms (at ``offset + k * slide``), newest first.

    >>> Sliding.of("12 h", "1 h", offset="-30 min", processing_time=True).name
    'SlidingProcessingTimeWindows'
    >>> [(w.start, w.end) for w in Sliding.of(10, 3).assign(None, 7, None)]
    [(6, 16), (3, 13), (0, 10)]
    """

    size: int
    slide: int
    offset: int = 0
    processing_time: bool = False

    def __post_init__(self) -> None:
        _positive(self.name, "slide", self.slide)
        _offset(self.name, self.offset, self.slide, "slide")
        _positive(self.name, "size", self.size)

    @classmethod
    def of(cls, size: Duration, slide: Duration, offset: Duration = 0, *, processing_time: bool = False) -> Sliding:
        """A sliding assigner (Flink's argument order: size, then slide)."""
        where = _flink_name("Sliding", processing_time)
        return cls(duration_ms(size, "size", where=where), duration_ms(slide, "slide", where=where),
                   duration_ms(offset, "offset", where=where), processing_time)

    @property
    def name(self) -> str:
        return _flink_name("Sliding", self.processing_time)

    @property
    def is_event_time(self) -> bool:
        return not self.processing_time

    merging = False

    def assign(self, element: Any, timestamp: int | None, now: int | None) -> list[Window]:
        """Every window holding the time, newest first (Flink's loop: ``start > t - size``).  Empty when
        ``size < slide`` and the time falls between two windows."""
        t = now if self.processing_time else timestamp
        assert t is not None, "the operator checks the time first"
        size, slide = self.size, self.slide
        start = window_start(t, self.offset, slide)
        windows = []
        while start > t - size:
            windows.append(Window(start, start + size))
            start -= slide
        return windows


@dataclass(frozen=True, slots=True)
class Session:
    """Session windows: each element opens ``[t, t + gap)``; the operator merges intersecting ones.

    ``gap`` is a duration, or ``gap_function`` a function of the element giving its gap (integer ms or a
    timedelta; Flink's ``SessionWindowTimeGapExtractor``): build either with :meth:`of`.

    >>> Session.of("10 min").assign(None, 0, None)
    [Window(start=0, end=600000)]
    >>> Session.of(lambda row: row["gap"]).assign({"gap": 5}, 10, None)
    [Window(start=10, end=15)]
    >>> Session.of(lambda row: 0).assign({}, 10, None)
    Traceback (most recent call last):
    ...
    ValueError: DynamicEventTimeSessionWindows: the gap function gave 0 ms; a session gap must satisfy 0 < gap
    """

    gap: int | None = None
    gap_function: Callable[[Any], int | timedelta] | None = None
    processing_time: bool = False

    def __post_init__(self) -> None:
        if (self.gap is None) == (self.gap_function is None):
            raise SpecError("gap", "give a gap or a gap function, exactly one", where=self.name)
        if self.gap is not None:
            _positive(self.name, "gap", self.gap)
        elif not callable(self.gap_function):
            raise SpecError("gap", f"a gap function must be callable, got {self.gap_function!r}", where=self.name)

    @classmethod
    def of(cls, gap: Duration | Callable[[Any], int | timedelta], *, processing_time: bool = False) -> Session:
        """A session assigner with a static ``gap`` (a duration) or a per-element gap function."""
        if callable(gap):
            return cls(None, gap, processing_time)
        return cls(duration_ms(gap, "gap", where=_flink_name("Session", processing_time)), None, processing_time)

    @property
    def name(self) -> str:
        kind = "Dynamic" if self.gap_function is not None else ""
        return f"{kind}{'ProcessingTime' if self.processing_time else 'EventTime'}SessionWindows"

    @property
    def is_event_time(self) -> bool:
        return not self.processing_time

    merging = True

    def gap_of(self, element: Any) -> int:
        """The element's gap (ms): the static gap, or the gap function's answer (checked: ``0 < gap``)."""
        if self.gap is not None:
            return self.gap
        assert self.gap_function is not None
        gap = self.gap_function(element)
        if isinstance(gap, timedelta):
            try:
                gap = duration_ms(gap, "gap", where=self.name)
            except SpecError as exc:  # the element's value, not the program: a data error
                raise ValueError(str(exc)) from None
        if not isinstance(gap, int) or isinstance(gap, bool):
            raise TypeError(f"{self.name}: the gap function must return integer ms or a timedelta, got {gap!r}")
        if gap <= 0:
            raise ValueError(f"{self.name}: the gap function gave {gap} ms; a session gap must satisfy 0 < gap")
        return gap

    def assign(self, element: Any, timestamp: int | None, now: int | None) -> list[Window]:
        t = now if self.processing_time else timestamp
        assert t is not None, "the operator checks the time first"
        return [session_window(t, self.gap_of(element))]


@dataclass(frozen=True, slots=True)
class Global:
    """Every element of a key in one window, :data:`GLOBAL_WINDOW` (Flink's ``GlobalWindows``).

    It needs a trigger that fires (its default never does); it is not event time: no element is late.

    >>> Global.of().assign("x", 5, None) == [GLOBAL_WINDOW], Global.of().is_event_time
    (True, False)
    """

    name = "GlobalWindows"
    is_event_time = False
    merging = False
    processing_time = False

    @classmethod
    def of(cls) -> Global:
        return cls()

    create = of

    def assign(self, element: Any, timestamp: int | None, now: int | None) -> list[Window]:
        return [GLOBAL_WINDOW]


Assigner = Tumbling | Sliding | Session | Global


__all__ = ["GLOBAL_WINDOW", "MAX_TIME", "MIN_TIME", "Assigner", "Global", "Session", "Sliding", "Tumbling",
           "max_timestamp"]
