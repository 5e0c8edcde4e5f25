"""Windows over TIMESTAMP_LTZ in a session time zone: Flink's time-zone shift (``TimeWindowUtil``).

A TIMESTAMP_LTZ time attribute is an instant; Flink aligns its windows on the *wall clock* of the session
time zone (a 1-day TUMBLE in Asia/Shanghai runs from local midnight to local midnight), so a row's instant is
shifted to its local wall-clock time before windows are assigned (:meth:`TimeShift.local`,
``toUtcTimestampMills``), ``window_start`` / ``window_end`` are wall-clock TIMESTAMPs, and a window fires
when the watermark (an instant) reaches the instant of its last wall-clock millisecond
(:meth:`TimeShift.fire_time`, ``toEpochMillsForTimer``): around a daylight-saving change, a window ending
in the skipped hour fires at the first instant after the gap, and one ending in the repeated hour at its
second occurrence, so both hours' rows are in.  TIMESTAMP inputs (no zone, or UTC) are not shifted.

>>> shanghai = TimeShift.of("Asia/Shanghai")
>>> shanghai.local(0)                     # 1970-01-01 00:00 UTC is 08:00 on Shanghai's clock
28800000
>>> shanghai.fire_time(28800000 - 1)      # the window ending at 08:00 local fires at 00:00 UTC
-1
>>> TimeShift.of(None) is None and TimeShift.of("UTC") is None
True
"""

from __future__ import annotations

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


@dataclass(frozen=True, slots=True)
class TimeShift:
    """The wall clock of one IANA time zone (build it with :meth:`of`, which gives None for no shift)."""

    zone: str

    @classmethod
    def of(cls, zone: str | None) -> TimeShift | None:
        """The shift for ``zone`` (an IANA name such as ``"America/Los_Angeles"``); None for None and UTC.

        >>> TimeShift.of("Mars/Olympus")
        Traceback (most recent call last):
        ...
        timeweave.core.errors.SpecError: argument 'time_zone': unknown time zone 'Mars/Olympus'
        """
        if zone is None or zone.upper() in ("UTC", "Z", "ETC/UTC", "GMT", "+00:00"):
            return None
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise SpecError("time_zone", f"unknown time zone {zone!r}") from None
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
        moment = _EPOCH_UTC + timedelta(milliseconds=epoch_ms)
        return epoch_ms + moment.astimezone(self._info).utcoffset() // _MS

    def _instant(self, local_ms: int) -> int:
        """Java's ``LocalDateTime.atZone(zone)``: the earlier offset at an overlap, moved past a gap."""
        wall = (_EPOCH + timedelta(milliseconds=local_ms)).replace(tzinfo=self._info)  # fold=0: Java's choice
        return local_ms - wall.utcoffset() // _MS

    def fire_time(self, local_ms: int) -> int:
        """The instant (epoch ms) at which a window whose last wall-clock millisecond is ``local_ms`` fires
        (Flink's ``toEpochMillsForTimer``, with its daylight-saving rules).

        >>> la = TimeShift.of("America/Los_Angeles")
        >>> la.fire_time(1615687200000)   # 2021-03-14 02:00 does not exist: the first skipped instant (03:00 PDT)
        1615716000000
        >>> la.fire_time(1636246800000)   # 2021-11-07 01:00 happens twice: the second one (01:00 PST)
        1636275600000
        """
        if local_ms in (NO_WATERMARK, END_OF_TIME):
            return local_ms
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
