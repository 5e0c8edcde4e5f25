"""The late rule of event-time windows (Flink's observable rule), and the late output's record.

A window *fires* once the watermark reaches its ``window_time``: ``window_end - 1 <= watermark``
(Flink's ``TimeWindowUtil.isWindowFired``).  A row arriving at watermark ``W`` is dropped only from the
windows that have already fired at ``W``; it still counts in its windows that have not (HOP, CUMULATE and
sessions it merges into).  Every row dropped from at least one window goes to the late output
(:class:`LateRow`) with the window(s) it missed and the watermark at its arrival; ``dropped`` says
whether it counted nowhere.  (Flink drops such rows silently, counting them in ``numLateRecordsDropped``.)

Units: windows and row times are epoch milliseconds; a :class:`~timeweave.core.state.KeyContext` speaks
the core's microseconds (watermark and timers), converted here by :func:`watermark_ms` and
:func:`timer_us`.

>>> is_fired(Window(0, 600_000), 599_999), is_fired(Window(0, 600_000), 599_998)
(True, False)
>>> missed_windows([Window(0, 10), Window(5, 15)], watermark=9)
(Window(start=0, end=10),)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from timeweave.core.operator import Tag
from timeweave.core.state import END_OF_TIME, NO_WATERMARK
from timeweave.core.windows.spec import Window

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_fired(window: Window, watermark: int) -> bool:
    """Whether ``window`` has fired at ``watermark`` (ms): its ``window_time`` is at or below it."""
    return window.end - 1 <= watermark


def missed_windows(windows: Iterable[Window], watermark: int,
                   fire_time: Callable[[int], int] | None = None) -> tuple[Window, ...]:
    """The windows among ``windows`` that have fired at ``watermark`` (ms): a row arriving then misses them.
    ``fire_time(end)`` is the watermark at which the window ending at ``end`` fires (default ``end - 1``; a
    wall-clock window of a session time zone fires at its instant, :meth:`TimeShift.fire_time
    <timeweave.core.windows.zones.TimeShift.fire_time>`)."""
    if fire_time is None:
        return tuple(w for w in windows if w.end - 1 <= watermark)
    return tuple(w for w in windows if fire_time(w.end) <= watermark)


def watermark_ms(watermark: int) -> int:
    """A core watermark (µs, :class:`~timeweave.core.state.KeyContext`) in milliseconds, the windows' unit.

    ``NO_WATERMARK`` and ``END_OF_TIME`` stay as they are (below and above every window).  Flooring is
    exact for the rule: ``end - 1 <= floor(w / 1000)`` iff ``(end - 1) * 1000 <= w``.

    >>> watermark_ms(1_586_937_600_000_999), watermark_ms(NO_WATERMARK) == NO_WATERMARK
    (1586937600000, True)
    """
    if watermark == NO_WATERMARK or watermark >= END_OF_TIME:
        return watermark
    return watermark // 1000


def timer_us(window_time: int) -> int:
    """The core timer (µs) at which a window whose ``window_time`` is ``window_time`` (ms) fires.

    >>> timer_us(599_999)
    599999000
    """
    return window_time * 1000


def next_window_end(slicing: Any, slice_groups: Iterable[Iterable[int] | None], fire_time: Callable[[int], int],
                    watermark: int) -> int | None:
    """The end of the earliest window, over the key's open slices, that has not fired at ``watermark``.

    Each slice's windows are visited in end order (``slicing.window_ends``) and only its first unfired one counts,
    so this is the next instant a window operator holding slices wants to be woken at.  ``slice_groups``: the
    state values holding slice ids (a join holds two; an empty or missing value contributes nothing);
    ``fire_time``: a window end's instant on the watermark's clock (a session zone shifts it).

    >>> from timeweave.core.windows.slicing import Slicing
    >>> from timeweave.core.windows.spec import hop
    >>> slicing = Slicing.of(hop(5, 10))
    >>> next_window_end(slicing, [[5, 10], None], lambda end: end - 1, watermark=9)
    15
    """
    next_end: int | None = None
    window_ends = slicing.window_ends
    for slices in slice_groups:
        for s in slices or ():
            for end in window_ends(s):
                if fire_time(end) > watermark:
                    if next_end is None or end < next_end:
                        next_end = end
                    break
    return next_end


def keep_one_timer(ctx: Any, name: str, wanted: int | None) -> None:
    """Keep exactly one registered timer, remembered in the key's state value ``name``: ``wanted`` (µs), or none.

    A key has one timer per instant (Flink and Spark both), so the old one is deleted when the wanted instant moves.

    >>> from timeweave.core.state import InMemoryKeyContext
    >>> ctx = InMemoryKeyContext()
    >>> keep_one_timer(ctx, "t", 5); keep_one_timer(ctx, "t", 9); ctx.timers(), ctx.values
    ([9], {'t': 9})
    >>> keep_one_timer(ctx, "t", None); ctx.timers(), ctx.values
    ([], {})
    """
    current = ctx.get(name)
    if current == wanted:
        return
    if current is not None:
        ctx.delete_timer(current)
    if wanted is None:
        ctx.clear(name)
    else:
        ctx.register_timer(wanted)
        ctx.put(name, wanted)


def format_ms(ms: int) -> str:
    """Epoch milliseconds as a UTC timestamp text with milliseconds (how Flink prints TIMESTAMP(3)).

    >>> format_ms(1_586_937_599_999)
    '2020-04-15 07:59:59.999'
    """
    if ms == NO_WATERMARK:
        return "none"
    if ms >= END_OF_TIME:
        return "end of input"
    moment = _EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


@dataclass(frozen=True, slots=True)
class LateRow:
    """An input row that arrived after some of its windows fired.

    ``time`` is its event time and ``watermark`` the watermark at its arrival (ms); ``missed`` the windows
    it was dropped from; ``dropped`` is True when it counted in no window at all.

    >>> late = LateRow({"id": 1}, 480_000, 600_000, (Window(0, 600_000),), True)
    >>> late.reason
    'late: event time 1970-01-01 00:08:00.000 missed window [1970-01-01 00:00:00.000, 1970-01-01 00:10:00.000) fired at watermark 1970-01-01 00:10:00.000; dropped from every window'
    """

    row: Any
    time: int
    watermark: int
    missed: tuple[Window, ...]
    dropped: bool
    tag: ClassVar[Tag] = Tag.LATE

    @property
    def reason(self) -> str:
        """The late output's reason text: the event time, the windows missed, the watermark at arrival."""
        windows = ", ".join(f"[{format_ms(w.start)}, {format_ms(w.end)})" for w in self.missed)
        noun = "window" if len(self.missed) == 1 else "windows"
        tail = "dropped from every window" if self.dropped else "still counted in its later windows"
        return (f"late: event time {format_ms(self.time)} missed {noun} {windows} fired at watermark "
                f"{format_ms(self.watermark)}; {tail}")


__all__ = ["LateRow", "format_ms", "is_fired", "missed_windows", "timer_us", "watermark_ms"]
