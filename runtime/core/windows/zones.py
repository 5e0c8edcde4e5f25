"""Windows over TIMESTAMP_LTZ in a session time zone: Flink's time-zone shift (``TimeWindowUtil``).

A TIMESTAMP_LTZ time attribute is an instant; Flink aligns its windows on the *wall clock* of the session
time zone (a 1-day TUMBLE in Asia/Shanghai runs from local midnight to local midnight), so a row's instant is
shifted to its local wall-clock time before windows are assigned (:meth:`TimeShift.local`,
``toUtcTimestampMills``), ``window_start`` / ``window_end`` are wall-clock TIMESTAMPs, and a window fires
when the watermark (an instant) reaches the instant of its last wall-clock millisecond
(:meth:`TimeShift.fire_time`, ``toEpochMillsForTimer``): around a daylight-saving change, a window ending
in the skipped hour fires at the first instant after the gap, and one ending in the repeated hour at its
second occurrence, so both hours' rows are in.  TIMESTAMP inputs (no zone, or UTC) are not shifted.

A zone is an IANA name or a fixed offset from UTC, spelled as ``java.time.ZoneId.of`` reads one (the spellings
Spark's ``spark.sql.session.timeZone`` takes): ``Z``, ``+08:00``, ``-05:30``, ``+8``, ``+0530``, ``-13:33:33``,
and those behind ``UTC`` / ``GMT`` / ``UT`` (``UTC+8``, ``GMT-03:00``).  A fixed offset is a constant shift: no
daylight saving, every wall-clock time exists once.

>>> shanghai = TimeShift.of("Asia/Shanghai")
>>> shanghai.local(0)                     # 1970-01-01 00:00 UTC is 08:00 on Shanghai's clock
28800000
>>> shanghai.fire_time(28800000 - 1)      # the window ending at 08:00 local fires at 00:00 UTC
-1
>>> TimeShift.of(None) is None and TimeShift.of("UTC") is None and TimeShift.of("GMT+0") is None
True
>>> TimeShift.of("UTC+8").local(0), TimeShift.of("UTC+8").zone   # a fixed offset, named as Spark prints it
(28800000, '+08:00')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from timeweave.core.errors import SpecError
from timeweave.core.state import END_OF_TIME, NO_WATERMARK

_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_HOUR_MS = 3_600_000
#: ``ZoneOffset.of``'s forms after an optional UTC / GMT / UT prefix: ±h, ±hh, ±hh:mm, ±hhmm, ±hh:mm:ss, ±hhmmss.
_OFFSET = re.compile(r"(?:UTC|GMT|UT)?([+-])(\d{1,2}|\d\d:\d\d|\d{4}|\d\d:\d\d:\d\d|\d{6})", re.IGNORECASE)
_ZERO = ("Z", "UTC", "GMT", "UT", "ETC/UTC")
_MAX_OFFSET_S = 18 * 3600  # java.time's bound: -18:00 to +18:00


def _offset_seconds(zone: str) -> int | None:
    """The seconds east of UTC of a fixed-offset spelling; None when ``zone`` is not one (an IANA name, or
    nothing).  An offset out of java.time's range is a :class:`SpecError`.

    >>> _offset_seconds("+08:00"), _offset_seconds("GMT-3"), _offset_seconds("+8:30"), _offset_seconds("Asia/Tokyo")
    (28800, -10800, 30600, None)
    """
    if zone.upper() in _ZERO:
        return 0
    # Spark's getZoneId first pads the forms it took before 3.0: +8:00 -> +08:00, +08:3 -> +08:03
    padded = re.sub(r"([+-])(\d):", r"\g<1>0\2:", zone, count=1)
    padded = re.sub(r"([+-])(\d\d):(\d)$", r"\1\2:0\3", padded, count=1)
    found = _OFFSET.fullmatch(padded)
    if found is None:
        return None
    sign, digits = found.group(1), found.group(2).replace(":", "")
    if len(digits) <= 2:
        hours, minutes, seconds = int(digits), 0, 0
    else:
        hours, minutes, seconds = int(digits[:2]), int(digits[2:4]), int(digits[4:6] or 0)
    total = hours * 3600 + minutes * 60 + seconds
    if minutes > 59 or seconds > 59 or total > _MAX_OFFSET_S:
        raise SpecError("time_zone", f"the offset {zone!r} is out of range: -18:00 to +18:00, minutes and seconds "
                        "below 60")
    return -total if sign == "-" else total


@dataclass(frozen=True, slots=True)
class TimeShift:
    """The wall clock of one time zone (build it with :meth:`of`, which gives None for no shift): an IANA zone
    (``zone`` its name, ``offset_ms`` None) or a fixed offset (``zone`` as Spark prints it, ``+08:00``;
    ``offset_ms`` its constant shift)."""

    zone: str
    offset_ms: int | None = None

    @classmethod
    def of(cls, zone: str | None) -> TimeShift | None:
        """The shift for ``zone``: an IANA name such as ``"America/Los_Angeles"`` or a fixed offset such as
        ``"+08:00"`` / ``"UTC-5"`` (the module docstring lists the spellings); None for None, UTC and offset 0.

        >>> TimeShift.of("-05:30")
        TimeShift(zone='-05:30', offset_ms=-19800000)
        >>> TimeShift.of("Mars/Olympus")
        Traceback (most recent call last):
        ...
        timeweave.core.errors.SpecError: argument 'time_zone': unknown time zone 'Mars/Olympus' (expected an IANA \
name such as 'Asia/Shanghai' or a fixed offset such as '+08:00', 'UTC+8', 'GMT-03:00', 'Z')
        """
        if zone is None:
            return None
        if not isinstance(zone, str):
            raise SpecError("time_zone", f"expected a time zone name, got {zone!r}")
        seconds = _offset_seconds(zone)
        if seconds is not None:
            return None if seconds == 0 else cls(_offset_name(seconds), seconds * 1000)
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise SpecError("time_zone", f"unknown time zone {zone!r} (expected an IANA name such as 'Asia/Shanghai' "
                            "or a fixed offset such as '+08:00', 'UTC+8', 'GMT-03:00', 'Z')") from None
        return cls(zone)

    @property
    def _info(self) -> ZoneInfo:
        return ZoneInfo(self.zone)  # cached by zoneinfo

    def local(self, epoch_ms: int) -> int:
        """The wall-clock time (as ms of a naive timestamp) of the instant ``epoch_ms`` (``toUtcTimestampMills``).

        >>> TimeShift.of("America/Los_Angeles").local(1615716000000)   # 2021-03-14 10:00 UTC = 03:00 PDT
        1615690800000
        """
        if epoch_ms in (NO_WATERMARK, END_OF_TIME):
            return epoch_ms
        if self.offset_ms is not None:
            return epoch_ms + self.offset_ms
        moment = _EPOCH_UTC + timedelta(milliseconds=epoch_ms)
        return epoch_ms + moment.astimezone(self._info).utcoffset() // _MS

    def _instant(self, local_ms: int) -> int:
        """Java's ``LocalDateTime.atZone(zone)``: the earlier offset at an overlap, moved past a gap."""
        if self.offset_ms is not None:
            return local_ms - self.offset_ms
        wall = (_EPOCH + timedelta(milliseconds=local_ms)).replace(tzinfo=self._info)  # fold=0: Java's choice
        return local_ms - wall.utcoffset() // _MS

    def fire_time(self, local_ms: int) -> int:
        """The instant (epoch ms) at which a window whose last wall-clock millisecond is ``local_ms`` fires
        (Flink's ``toEpochMillsForTimer``, with its daylight-saving rules; a fixed offset has none).

        >>> la = TimeShift.of("America/Los_Angeles")
        >>> la.fire_time(1615687200000)   # 2021-03-14 02:00 does not exist: the first skipped instant (03:00 PDT)
        1615716000000
        >>> la.fire_time(1636246800000)   # 2021-11-07 01:00 happens twice: the second one (01:00 PST)
        1636275600000
        >>> TimeShift.of("+08:00").fire_time(28800000 - 1)
        -1
        """
        if local_ms in (NO_WATERMARK, END_OF_TIME):
            return local_ms
        if self.offset_ms is not None:
            return local_ms - self.offset_ms
        return _fire_time(self.zone, local_ms)

    def instant(self, local_ms: int) -> int:
        """The instant of a wall-clock time (``toEpochMills``): a shifted window's ``window_time`` as an instant
        (the TIMESTAMP_LTZ value of ``window_time``).

        >>> TimeShift.of("Asia/Shanghai").instant(28800000 - 1)
        -1
        """
        if local_ms in (NO_WATERMARK, END_OF_TIME):
            return local_ms
        return self._instant(local_ms)


def _offset_name(seconds: int) -> str:
    """A fixed offset as ``ZoneOffset.getId`` writes it (what Spark shows): ``+08:00``, ``-13:33:33``."""
    sign, rest = "-" if seconds < 0 else "+", abs(seconds)
    name = f"{sign}{rest // 3600:02d}:{rest % 3600 // 60:02d}"
    return name if rest % 60 == 0 else f"{name}:{rest % 60:02d}"


@lru_cache(maxsize=1 << 16)
def _fire_time(zone: str, local_ms: int) -> int:
    # (cached: a key's windows ask for the same few window ends over and over)
    shift = TimeShift(zone)
    first = shift._instant(local_ms)
    if not _uses_daylight_time(zone, (_EPOCH + timedelta(milliseconds=local_ms)).year):
        return first
    later = shift._instant(local_ms + _HOUR_MS)
    if first == later:  # in the skipped hour
        return first - first % _HOUR_MS
    if later - first > _HOUR_MS:  # in the repeated hour
        return first + _HOUR_MS
    return first


@lru_cache(maxsize=1024)
def _uses_daylight_time(zone: str, year: int) -> bool:
    """Whether ``zone`` keeps daylight-saving time in ``year`` (Java's ``useDaylightTime``, per year)."""
    info = ZoneInfo(zone)
    return any((datetime(year, month, 1, tzinfo=info).dst() or timedelta(0)) != timedelta(0) for month in (1, 4, 7, 10))


__all__ = ["TimeShift"]
