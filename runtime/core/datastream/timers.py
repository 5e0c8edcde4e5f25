"""A key's window timers: Flink's ``InternalTimerService`` for one key, as plain data the operator stores.

Flink keys a timer by (key, window, time): registering the same one twice keeps one, deleting an absent one
does nothing, and a watermark (or processing time) reaching a time fires every timer at or before it, in time
order, including timers registered while firing.  Timers at the same time fire here in window order (start,
then end); Flink leaves that order to its heap.  The operator keeps two queues, event time and processing time
(Spark's ``transformWithState`` cannot mix the two kinds, so processing-time timers live in state and fire when
the host advances its processing clock).

>>> from timeweave.core.windows.spec import Window
>>> q = TimerQueue(); q.add(9, Window(0, 10)); q.add(4, Window(0, 5)); q.add(9, Window(0, 10))
>>> q.pop_due(9), q.pop_due(9), q.pop_due(9)
((4, Window(start=0, end=5)), (9, Window(start=0, end=10)), None)
"""

from __future__ import annotations

import heapq
from typing import Any

from timeweave.core.windows.spec import Window


class TimerQueue:
    """A set of ``(time, window)`` timers popped in ``(time, window)`` order (times in ms)."""

    __slots__ = ("_heap", "_set")

    def __init__(self) -> None:
        self._set: set[tuple[int, Window]] = set()
        self._heap: list[tuple[int, Window]] = []  # may hold deleted timers (skipped when popped)

    def add(self, time: int, window: Window) -> None:
        timer = (time, window)
        if timer not in self._set:
            self._set.add(timer)
            heapq.heappush(self._heap, timer)

    def delete(self, time: int, window: Window) -> None:
        self._set.discard((time, window))

    def contains(self, time: int, window: Window) -> bool:
        return (time, window) in self._set

    def pop_due(self, now: int) -> tuple[int, Window] | None:
        """The next timer at or before ``now`` (removed), or None."""
        heap = self._heap
        while heap and heap[0] not in self._set:
            heapq.heappop(heap)
        if not heap or heap[0][0] > now:
            return None
        timer = heapq.heappop(heap)
        self._set.discard(timer)
        return timer

    def first(self) -> int | None:
        """The earliest timer's time (ms), or None."""
        heap = self._heap
        while heap and heap[0] not in self._set:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def copy(self) -> TimerQueue:
        other = TimerQueue()
        other._set = set(self._set)
        other._heap = list(self._heap)
        return other

    def __len__(self) -> int:
        return len(self._set)

    def to_state(self) -> list[list[int]] | None:
        """``[[time, start, end], ...]`` sorted (None when empty): what the operator stores."""
        if not self._set:
            return None
        return [[t, w.start, w.end] for t, w in sorted(self._set)]

    @classmethod
    def from_state(cls, value: Any) -> TimerQueue:
        queue = cls()
        for time, start, end in value or ():
            queue.add(time, Window(start, end))
        return queue


__all__ = ["TimerQueue"]
