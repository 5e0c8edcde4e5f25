"""Session merging with Flink's ``MergingWindowSet`` semantics, over plain data.

Each row opens the window ``[t, t + gap)``; two windows merge when they *intersect* in Flink's sense
(``TimeWindow.intersects``: ``a.start <= b.end and a.end >= b.start``), so rows exactly one gap apart
share a session (``[0, 5)`` and ``[5, 10)`` merge into ``[0, 10)``).  The merged window covers both.  A
row falling between two sessions that it intersects both of *bridges* them: the three become one.

A key's in-flight sessions are a list of ``[start, end, payload]`` entries, sorted by start and pairwise
disjoint (never touching: touching ones are merged), as the operator keeps them in state.

>>> sessions = []
>>> for t in (0, 20, 10):
...     merged, lo, hi = add_window(sessions, Window(t, t + 5))
...     sessions[lo:hi] = [[merged.start, merged.end, None]]
...     [(s[0], s[1]) for s in sessions]
[(0, 5)]
[(0, 5), (20, 25)]
[(0, 5), (10, 15), (20, 25)]
>>> merged, lo, hi = add_window(sessions, Window(5, 10))   # touches [0, 5) and [10, 15): bridges them
>>> (merged.start, merged.end), (lo, hi)
((0, 15), (0, 2))
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import Any

from timeweave.core.windows.spec import Window


def session_window(timestamp: int, gap: int) -> Window:
    """The window a row at ``timestamp`` opens: ``[timestamp, timestamp + gap)``.

    >>> session_window(10, 5)
    Window(start=10, end=15)
    """
    return Window(timestamp, timestamp + gap)


def intersects(a: Window, b: Window) -> bool:
    """Flink's ``TimeWindow.intersects``: the windows overlap or touch.

    >>> intersects(Window(0, 5), Window(5, 10)), intersects(Window(0, 5), Window(6, 10))
    (True, False)
    """
    return a.start <= b.end and a.end >= b.start


def add_window(sessions: list[list[Any]], window: Window) -> tuple[Window, int, int]:
    """Where ``window`` goes among ``sessions`` (sorted, disjoint ``[start, end, payload]`` entries): the
    merged window and the slice ``sessions[lo:hi]`` it absorbs (empty when ``lo == hi``: a new session
    inserted at ``lo``).  ``sessions`` is not modified.

    >>> add_window([[0, 5, "a"], [20, 25, "b"]], Window(7, 12))
    (Window(start=7, end=12), 1, 1)
    >>> add_window([[0, 5, "a"], [20, 25, "b"]], Window(3, 8))
    (Window(start=0, end=8), 0, 1)
    """
    # Sorted by start and disjoint, so ends are sorted too: the sessions intersecting ``window`` are the
    # contiguous run ending with the last one starting at or before window.end.
    hi = bisect_right(sessions, window.end, key=_start)
    lo = hi
    while lo > 0 and sessions[lo - 1][1] >= window.start:
        lo -= 1
    if lo == hi:
        return window, lo, hi
    return Window(min(window.start, sessions[lo][0]), max(window.end, sessions[hi - 1][1])), lo, hi


def _start(entry: list[Any]) -> int:
    return entry[0]


def sessionize(times: Iterable[int], gap: int) -> list[Window]:
    """The sessions of a complete set of row times (the batch answer: order of arrival does not matter).

    >>> sessionize([13, 5, 7, 17], gap=2)
    [Window(start=5, end=9), Window(start=13, end=15), Window(start=17, end=19)]
    >>> sessionize([0, 4, 2], gap=2)   # 2 is one gap after 0 and before 4: one session
    [Window(start=0, end=6)]
    """
    sessions: list[list[Any]] = []
    for t in times:
        merged, lo, hi = add_window(sessions, session_window(t, gap))
        sessions[lo:hi] = [[merged.start, merged.end, None]]
    return [Window(s[0], s[1]) for s in sessions]


__all__ = ["add_window", "intersects", "session_window", "sessionize"]
