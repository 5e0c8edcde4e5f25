"""Evictors of Flink's DataStream windows: which of a window's elements go, before and/or after its function.

An evictor sees the window's elements as :class:`TimestampedValue` (the element and its event time, None when
the element has none: Flink's ``hasTimestamp``), in the order the window holds them, when the window fires:
``evict_before`` before the window function, ``evict_after`` after it; what it returns is what the window keeps
(Flink writes the survivors back into the window's state, ``EvictingWindowOperator``).  The built-ins evict
before the function unless built with ``after=True`` (Flink's ``doEvictAfter``), and follow Flink's code:

* :class:`Count` (``CountEvictor``): keep the last ``max_count`` elements (drop from the head);
* :class:`Time` (``TimeEvictor``): drop elements with ``timestamp <= max_timestamp_seen - window_size``
  (nothing when the elements carry no timestamp);
* :class:`Delta` (``DeltaEvictor``): drop elements whose ``delta_function(element, last)`` is ``>= threshold``,
  ``last`` being the window's last element.

An evictor means the window keeps every element (no pre-aggregation: ``reduce`` and ``aggregate`` run over the
survivors at each firing), as in Flink.

>>> elements = [TimestampedValue("a", 1), TimestampedValue("b", 5), TimestampedValue("c", 9)]
>>> [e.value for e in Count.of(2).evict_before(elements, None, None)]
['b', 'c']
>>> [e.value for e in Time.of(4).evict_before(elements, None, None)]   # cutoff 9 - 4 = 5: drops 1 and 5
['c']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from timeweave.core.errors import SpecError
from timeweave.core.windows.spec import Window, duration_ms


@dataclass(frozen=True, slots=True)
class TimestampedValue:
    """An element of a window with its event time (ms; None: no timestamp), Flink's ``TimestampedValue``."""

    value: Any
    timestamp: int | None = None

    @property
    def has_timestamp(self) -> bool:
        return self.timestamp is not None


@dataclass(frozen=True, slots=True)
class EvictorContext:
    """What an evictor may read: the watermark and the processing time (ms; None when the host set none)."""

    current_watermark: int
    current_processing_time: int | None


class Evictor:
    """The base of every evictor: override ``evict_before`` and/or ``evict_after`` (each returns the kept
    elements, a list of :class:`TimestampedValue`)."""

    def evict_before(self, elements: list[TimestampedValue], window: Window | None,
                     ctx: EvictorContext | None) -> list[TimestampedValue]:
        return elements

    def evict_after(self, elements: list[TimestampedValue], window: Window | None,
                    ctx: EvictorContext | None) -> list[TimestampedValue]:
        return elements

    @property
    def name(self) -> str:
        return type(self).__name__


class _BuiltIn(Evictor):
    """A built-in evictor: one ``evict`` rule, applied before or after the function (``after``)."""

    after: bool

    def evict(self, elements: list[TimestampedValue]) -> list[TimestampedValue]:
        raise NotImplementedError

    def evict_before(self, elements: list[TimestampedValue], window: Window | None,
                     ctx: EvictorContext | None) -> list[TimestampedValue]:
        return elements if self.after else self.evict(elements)

    def evict_after(self, elements: list[TimestampedValue], window: Window | None,
                    ctx: EvictorContext | None) -> list[TimestampedValue]:
        return self.evict(elements) if self.after else elements


@dataclass(frozen=True)
class Count(_BuiltIn):
    """Flink's ``CountEvictor``: keep at most ``max_count`` elements, dropping from the head.

    >>> Count.of(0)
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: CountEvictor: argument 'max_count': must be a positive integer, got 0
    """

    max_count: int
    after: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.max_count, int) or isinstance(self.max_count, bool) or self.max_count <= 0:
            raise SpecError("max_count", f"must be a positive integer, got {self.max_count!r}", where="CountEvictor")

    @classmethod
    def of(cls, max_count: int, *, after: bool = False) -> Count:
        return cls(max_count, after)

    def evict(self, elements: list[TimestampedValue]) -> list[TimestampedValue]:
        size = len(elements)
        return elements if size <= self.max_count else elements[size - self.max_count:]


@dataclass(frozen=True)
class Time(_BuiltIn):
    """Flink's ``TimeEvictor``: keep elements newer than ``max timestamp - window_size`` (ms).

    >>> Time.of("-1 s")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: TimeEvictor: argument 'window_size': must be greater than 0 ms, got -1000
    """

    window_size: int
    after: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.window_size, int) or isinstance(self.window_size, bool) or self.window_size <= 0:
            raise SpecError("window_size", f"must be greater than 0 ms, got {self.window_size!r}", where="TimeEvictor")

    @classmethod
    def of(cls, window_size: int | timedelta | str, *, after: bool = False) -> Time:
        return cls(duration_ms(window_size, "window_size", where="TimeEvictor"), after)

    def evict(self, elements: list[TimestampedValue]) -> list[TimestampedValue]:
        if not elements or not elements[0].has_timestamp:  # Flink's hasTimestamp looks at the first element
            return elements
        cutoff = max(e.timestamp for e in elements if e.timestamp is not None) - self.window_size
        return [e for e in elements if e.timestamp is None or e.timestamp > cutoff]


@dataclass(frozen=True)
class Delta(_BuiltIn):
    """Flink's ``DeltaEvictor``: drop elements whose delta to the window's last element is ``>= threshold``.

    >>> [e.value for e in Delta.of(3, lambda a, b: abs(a - b)).evict_before(
    ...     [TimestampedValue(v) for v in (1, 8, 6, 7)], None, None)]
    [8, 6, 7]
    """

    threshold: float
    delta_function: Callable[[Any, Any], float]
    after: bool = False

    def __post_init__(self) -> None:
        if not callable(self.delta_function):
            raise SpecError("delta_function", f"must be callable, got {self.delta_function!r}", where="DeltaEvictor")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int | float):
            raise SpecError("threshold", f"must be a number, got {self.threshold!r}", where="DeltaEvictor")

    @classmethod
    def of(cls, threshold: float, delta_function: Callable[[Any, Any], float], *, after: bool = False) -> Delta:
        return cls(threshold, delta_function, after)

    def evict(self, elements: list[TimestampedValue]) -> list[TimestampedValue]:
        if not elements:
            return elements
        last = elements[-1].value
        delta, threshold = self.delta_function, self.threshold
        return [e for e in elements if not delta(e.value, last) >= threshold]


def checked_elements(evictor: Evictor, method: str, kept: Any) -> list[TimestampedValue]:
    """``kept`` as a list of :class:`TimestampedValue`, or a :class:`SpecError` naming evictor and method."""
    if isinstance(kept, Sequence) and not isinstance(kept, str) and all(isinstance(e, TimestampedValue) for e in kept):
        return list(kept)
    raise SpecError("evictor", f"{evictor.name}.{method} returned {kept!r:.60}; an evictor returns the kept "
                    "elements, a list of TimestampedValue", where="DataStream window")


__all__ = ["Count", "Delta", "Evictor", "EvictorContext", "Time", "TimestampedValue", "checked_elements"]
