"""Window specs: TUMBLE, HOP, CUMULATE and SESSION as Flink's window TVFs define them, in epoch milliseconds.

A window is ``[start, end)``; its ``window_time`` is ``end - 1`` (Flink's precision: one millisecond).
Aligned windows (TUMBLE, HOP, CUMULATE) start at ``offset`` plus a multiple of their period; the offset
may be negative (a 1-day window in UTC+8 is ``tumble("1 day", offset="-8 hours")``).  Each spec is a
frozen dataclass validated once, at construction, with Flink's rules; a bad value raises
:class:`~timeweave.core.errors.SpecError` naming the argument:

* TUMBLE: ``size > 0`` and ``abs(offset) < size`` (Flink's ``TumblingSliceAssigner``);
* HOP: ``slide > 0``, ``size > 0`` and ``size`` an integral multiple of ``slide`` (Flink's slicing
  ``HoppingSliceAssigner``: a window is ``size / slide`` slices; so ``slide <= size``);
* CUMULATE: ``step > 0``, ``max_size > 0`` and ``max_size`` an integral multiple of ``step``;
* SESSION: ``gap > 0``; rows whose times are at most ``gap`` apart share a session.

Durations are integer milliseconds, :class:`~datetime.timedelta` or text (``"10 minutes"``, ``"-8 hours"``,
``"1.5 seconds"``), read by :func:`duration_ms`.

>>> tumble("10 minutes")
TumbleSpec(size=600000, offset=0)
>>> hop(slide="5 minutes", size="10 minutes").windows_per_row
2
>>> Window(0, 600_000).time
599999
>>> cumulate(step="2 minutes", max_size="5 minutes")
Traceback (most recent call last):
...
timeweave.core.errors.SpecError: CUMULATE: argument 'max_size': must be an integral multiple of step, but got max_size 300000 ms and step 120000 ms
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

from timeweave.core.errors import SpecError

_DURATION = re.compile(
    r"^\s*([+-]?\s*\d+(?:\.\d+)?)\s*(milliseconds?|millis|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|h|days?|d)\s*$",
    re.IGNORECASE,
)
_UNIT_MS = {"millisecond": 1, "millis": 1, "ms": 1, "second": 1000, "sec": 1000, "s": 1000, "minute": 60_000,
            "min": 60_000, "m": 60_000, "hour": 3_600_000, "h": 3_600_000, "day": 86_400_000, "d": 86_400_000}


def duration_ms(value: int | timedelta | str, argument: str, *, where: str | None = None) -> int:
    """Milliseconds in ``value``: an integer (already ms), a :class:`~datetime.timedelta` or a text such as
    ``"10 minutes"`` or ``"-8 hours"``.  A value that is not a whole number of milliseconds is refused
    (window bounds are milliseconds, as in Flink).

    >>> duration_ms("10 minutes", "size"), duration_ms(timedelta(hours=-8), "offset"), duration_ms(1500, "gap")
    (600000, -28800000, 1500)
    >>> duration_ms("ten minutes", "size")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: argument 'size': cannot read duration 'ten minutes'; write e.g. '10 minutes', '-8 hours' or 500 (ms)
    """
    if isinstance(value, bool):
        raise SpecError(argument, f"expected a duration, got {value!r}", where=where)
    if isinstance(value, int):
        return value
    if isinstance(value, timedelta):
        micros = value // timedelta(microseconds=1)
        if micros % 1000:
            raise SpecError(argument, f"{value} is not a whole number of milliseconds", where=where)
        return micros // 1000
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            unit = match.group(2).lower()
            unit = unit[:-1] if unit.endswith("s") and unit not in ("s", "ms", "millis") else unit
            try:
                amount = Decimal(match.group(1).replace(" ", "")) * _UNIT_MS[unit]
            except InvalidOperation:  # pragma: no cover - the pattern admits only decimal numbers
                amount = None
            if amount is not None:
                if amount != amount.to_integral_value():
                    raise SpecError(argument, f"{value!r} is not a whole number of milliseconds", where=where)
                return int(amount)
    raise SpecError(argument, f"cannot read duration {value!r}; write e.g. '10 minutes', '-8 hours' or 500 (ms)",
                    where=where)


#: The columns a window TVF adds to its input, Flink's names (every door's window columns).
WINDOW_COLUMNS = ("window_start", "window_end", "window_time")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def event_time_ms(value: Any) -> int | None:
    """A row's event time in epoch milliseconds: a datetime (naive = UTC; sub-millisecond digits are cut,
    as Flink's TIMESTAMP(3) rowtime), an integer (already ms), or None (NULL: the row is a dead letter).

    >>> event_time_ms(datetime(2020, 4, 15, 8, 5)), event_time_ms(datetime(1969, 12, 31, 23, 59, 59, 999_999))
    (1586937900000, -1)
    >>> event_time_ms(None) is None, event_time_ms(42)
    (True, 42)
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return (aware - _EPOCH) // _MS
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise SpecError("time", f"an event time must be a timestamp or integer epoch milliseconds, got {value!r}")


def window_start(timestamp: int, offset: int, size: int) -> int:
    """The start of the ``size``-long aligned period holding ``timestamp`` (Flink's ``getWindowStartWithOffset``).

    Periods start at ``offset + k * size`` for every integer ``k``, before 1970 too.

    >>> window_start(7, 0, 5), window_start(-1, 0, 5), window_start(7, 3, 5), window_start(2, -2, 5)
    (5, -5, 3, -2)
    """
    return timestamp - (timestamp - offset) % size


@dataclass(frozen=True, slots=True, order=True)
class Window:
    """A window ``[start, end)`` in epoch milliseconds; ``time`` is Flink's ``window_time`` (``end - 1``).

    >>> w = Window(0, 10); (w.time, w.contains(9), w.contains(10))
    (9, True, False)
    """

    start: int
    end: int

    @property
    def time(self) -> int:
        """``window_time``: the last millisecond of the window (a time attribute: windows cascade on it)."""
        return self.end - 1

    def contains(self, timestamp: int) -> bool:
        return self.start <= timestamp < self.end


def _check_int(kind: str, argument: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise SpecError(argument, f"expected integer milliseconds, got {value!r}", where=kind)


def _positive(kind: str, argument: str, value: int) -> None:
    _check_int(kind, argument, value)
    if value <= 0:
        raise SpecError(argument, f"must be greater than 0, but got {argument} {value} ms", where=kind)


@dataclass(frozen=True, slots=True)
class TumbleSpec:
    """``TUMBLE(TABLE t, DESCRIPTOR(ts), size [, offset])``: fixed, non-overlapping windows."""

    size: int
    offset: int = 0
    kind: ClassVar[str] = "TUMBLE"

    def __post_init__(self) -> None:
        _positive(self.kind, "size", self.size)
        _check_int(self.kind, "offset", self.offset)
        if abs(self.offset) >= self.size:  # Flink: "must satisfy abs(offset) < size"
            raise SpecError("offset", f"must satisfy abs(offset) < size, but got size {self.size} ms and offset "
                            f"{self.offset} ms", where=self.kind)

    @property
    def windows_per_row(self) -> int:
        return 1


@dataclass(frozen=True, slots=True)
class HopSpec:
    """``HOP(TABLE t, DESCRIPTOR(ts), slide, size [, offset])``: windows of ``size`` starting every ``slide``."""

    slide: int
    size: int
    offset: int = 0
    kind: ClassVar[str] = "HOP"

    def __post_init__(self) -> None:
        _positive(self.kind, "slide", self.slide)
        _positive(self.kind, "size", self.size)
        _check_int(self.kind, "offset", self.offset)
        if self.size % self.slide:  # Flink's slicing rule (a window is size / slide slices)
            raise SpecError("size", f"must be an integral multiple of slide, but got size {self.size} ms and slide "
                            f"{self.slide} ms", where=self.kind)

    @property
    def windows_per_row(self) -> int:
        return self.size // self.slide


@dataclass(frozen=True, slots=True)
class CumulateSpec:
    """``CUMULATE(TABLE t, DESCRIPTOR(ts), step, max_size [, offset])``: windows growing by ``step`` from the
    start of each ``max_size`` period, up to the whole period."""

    step: int
    max_size: int
    offset: int = 0
    kind: ClassVar[str] = "CUMULATE"

    def __post_init__(self) -> None:
        _positive(self.kind, "step", self.step)
        _positive(self.kind, "max_size", self.max_size)
        _check_int(self.kind, "offset", self.offset)
        if self.max_size % self.step:
            raise SpecError("max_size", f"must be an integral multiple of step, but got max_size {self.max_size} ms "
                            f"and step {self.step} ms", where=self.kind)

    @property
    def windows_per_row(self) -> int:
        """The most windows one row belongs to (a row in the first step of a period)."""
        return self.max_size // self.step


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """``SESSION(TABLE t [PARTITION BY k], DESCRIPTOR(ts), gap)``: a session holds rows at most ``gap`` apart
    and ends ``gap`` after its last row; ``partition_by`` names the columns sessions are kept apart by."""

    gap: int
    partition_by: tuple[str, ...] = ()
    kind: ClassVar[str] = "SESSION"

    def __post_init__(self) -> None:
        _positive(self.kind, "gap", self.gap)
        if not isinstance(self.partition_by, tuple) or not all(isinstance(c, str) and c for c in self.partition_by):
            raise SpecError("partition_by", f"expected a tuple of column names, got {self.partition_by!r}",
                            where=self.kind)
        if len(set(self.partition_by)) != len(self.partition_by):
            raise SpecError("partition_by", f"a column is named twice in {list(self.partition_by)}", where=self.kind)


AlignedSpec = TumbleSpec | HopSpec | CumulateSpec
WindowSpec = TumbleSpec | HopSpec | CumulateSpec | SessionSpec


def tumble(size: int | timedelta | str, offset: int | timedelta | str = 0) -> TumbleSpec:
    """A TUMBLE spec from durations (ms, timedelta or text).

    >>> tumble("1 day", offset="-8 hours")
    TumbleSpec(size=86400000, offset=-28800000)
    >>> tumble("0 seconds")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: TUMBLE: argument 'size': must be greater than 0, but got size 0 ms
    """
    return TumbleSpec(duration_ms(size, "size", where="TUMBLE"), duration_ms(offset, "offset", where="TUMBLE"))


def hop(slide: int | timedelta | str, size: int | timedelta | str, offset: int | timedelta | str = 0) -> HopSpec:
    """A HOP spec (Flink's argument order: slide, then size).

    >>> hop("5 minutes", "10 minutes")
    HopSpec(slide=300000, size=600000, offset=0)
    >>> hop("2 seconds", "5 seconds")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: HOP: argument 'size': must be an integral multiple of slide, but got size 5000 ms and slide 2000 ms
    """
    return HopSpec(duration_ms(slide, "slide", where="HOP"), duration_ms(size, "size", where="HOP"),
                   duration_ms(offset, "offset", where="HOP"))


def cumulate(step: int | timedelta | str, max_size: int | timedelta | str,
             offset: int | timedelta | str = 0) -> CumulateSpec:
    """A CUMULATE spec (Flink's argument order: step, then max_size).

    >>> cumulate("2 minutes", "10 minutes").windows_per_row
    5
    """
    return CumulateSpec(duration_ms(step, "step", where="CUMULATE"), duration_ms(max_size, "max_size", where="CUMULATE"),
                        duration_ms(offset, "offset", where="CUMULATE"))


def session(gap: int | timedelta | str, partition_by: str | tuple[str, ...] | list[str] = ()) -> SessionSpec:
    """A SESSION spec; ``partition_by`` is one column name or several.

    >>> session("2 minutes", partition_by="supplier_id")
    SessionSpec(gap=120000, partition_by=('supplier_id',))
    """
    columns = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by)
    return SessionSpec(duration_ms(gap, "gap", where="SESSION"), columns)


__all__ = [
    "WINDOW_COLUMNS",
    "AlignedSpec",
    "CumulateSpec",
    "HopSpec",
    "SessionSpec",
    "TumbleSpec",
    "Window",
    "WindowSpec",
    "cumulate",
    "duration_ms",
    "event_time_ms",
    "hop",
    "session",
    "tumble",
    "window_start",
]
