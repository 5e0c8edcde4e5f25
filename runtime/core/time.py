"""Time below every adapter: a backfill's slices of ``[start, end)``, their path labels, exact µs, end of input.

Engine-free.  The backfill drivers (``timeweave.spark.host.backfill`` and the operators' registrations), the
jobs and the Airflow plugin split a time range with the one rule here, so a task mapped over
:func:`slices_of` in a DAG runs exactly the slice the job runs.  Bounds are naive UTC datetimes (an aware
one is converted); event time in the core is µs since the epoch (:mod:`timeweave.core.event_time`).

>>> [s.label for s in slices_of(datetime(2020, 1, 1), datetime(2020, 1, 2), 2)]
['2020-01-01T00-00-00', '2020-01-01T12-00-00']
>>> END_OF_INPUT
END_OF_INPUT
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from timeweave.core.durations import parse_duration
from timeweave.core.errors import SpecError
from timeweave.core.event_time import END_OF_INPUT_MS

_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)

@dataclass(frozen=True)
class EndOfInput:
    """The end-of-input mark (the streaming job's ``flush``): a flag, not a time.

    A heartbeat with this mark moves the watermark to :data:`END_OF_INPUT_US`, one ms past TIMESTAMP's last
    value (:data:`timeweave.core.event_time.END_OF_INPUT_MS`), which no row's time can equal: a row at
    9999-12-31 23:59:59.999 is processed like any other (it once stood where the flush did, and closed the
    stream).  A heartbeat at a time, any time, only moves the watermark there.
    """

    def __repr__(self) -> str:
        return "END_OF_INPUT"


#: The streaming job's end-of-input heartbeat (its ``flush``): ``write_heartbeat(spark, checkpoint, END_OF_INPUT)``.
END_OF_INPUT = EndOfInput()
#: The time (µs since the epoch) the end-of-input heartbeat carries into Spark: 10000-01-01 00:00:00 UTC, past
#: every TIMESTAMP a row can hold (a Python datetime cannot hold it; Spark's TIMESTAMP can).
END_OF_INPUT_US = END_OF_INPUT_MS * 1000


def naive_utc(at: datetime) -> datetime:
    """``at`` as a naive UTC datetime (a naive one is taken as UTC already).

    >>> from datetime import timezone
    >>> naive_utc(datetime(2020, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))))
    datetime.datetime(2020, 1, 1, 0, 0)
    """
    return at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo is not None else at


def micros(at: datetime) -> int:
    """``at`` (naive = UTC) in µs since the epoch, exactly (integer arithmetic, no float; any year).

    >>> micros(datetime(1, 1, 1)), micros(datetime(1969, 12, 31, 23, 59, 59, 999999))
    (-62135596800000000, -1)
    """
    return (naive_utc(at) - _EPOCH) // _MICROSECOND


def slice_label(at: datetime) -> str:
    """A path-safe name for a slice edge (microsecond precision, so narrow slices never collide).

    The year always has 4 digits (``strftime("%Y")`` gives ``1`` for year 1 on glibc).

    >>> slice_label(datetime(1, 1, 1)), slice_label(datetime(1969, 12, 31, 23, 59, 59, 999999))
    ('0001-01-01T00-00-00', '1969-12-31T23-59-59.999999')
    """
    return f"{at.year:04d}-" + at.strftime("%m-%dT%H-%M-%S") + (f".{at.microsecond:06d}" if at.microsecond else "")


@dataclass(frozen=True)
class Slice:
    """Slice ``index`` of a backfill: the event times ``[start, end)`` (naive UTC)."""

    index: int
    start: datetime
    end: datetime

    @property
    def label(self) -> str:
        """The slice's directory name: its start edge's :func:`slice_label`."""
        return slice_label(self.start)


def slices_of(start: datetime, end: datetime, count: int) -> list[Slice]:
    """``count`` equal slices of ``[start, end)``.

    >>> [(s.index, s.start.hour, s.end.hour) for s in slices_of(datetime(2020, 1, 1), datetime(2020, 1, 1, 6), 3)]
    [(0, 0, 2), (1, 2, 4), (2, 4, 6)]
    >>> slices_of(datetime(2020, 1, 2), datetime(2020, 1, 1), 1)
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: backfill: argument 'end': end 2020-01-01 00:00:00 must be after start 2020-01-02 00:00:00
    """
    if count < 1:
        raise SpecError("slices", f"must be >= 1, got {count}", where="backfill")
    if end <= start:
        raise SpecError("end", f"end {end} must be after start {start}", where="backfill")
    width = (end - start) / count
    edges = [start + width * i for i in range(count)] + [end]
    return [Slice(i, edges[i], edges[i + 1]) for i in range(count)]


def wanted_slices(plan: Sequence[Slice], only: Sequence[int] | None, where: str = "backfill") -> list[int]:
    """The sorted slice indexes a run does: all of ``plan``, or ``only`` (each must be an index of ``plan``).

    >>> plan = slices_of(datetime(2020, 1, 1), datetime(2020, 1, 2), 3)
    >>> wanted_slices(plan, None), wanted_slices(plan, [2, 0, 2])
    ([0, 1, 2], [0, 2])
    >>> wanted_slices(plan, [3, -1])
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: backfill: argument 'only': slice indexes [-1, 3] are not in 0..2
    """
    wanted = set(range(len(plan))) if only is None else set(only)
    unknown = [i for i in wanted if not (isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(plan))]
    if unknown:
        shown = sorted(unknown) if all(isinstance(i, int) for i in unknown) else sorted(unknown, key=repr)
        raise SpecError("only", f"slice indexes {shown} are not in 0..{len(plan) - 1}", where=where)
    return sorted(wanted)


def consecutive_runs(indexes: Sequence[int], longest: int) -> list[list[int]]:
    """``indexes`` (sorted) cut into runs of consecutive indexes, each at most ``longest`` long.

    >>> consecutive_runs([0, 1, 2, 4, 5], 2)
    [[0, 1], [2], [4, 5]]
    """
    runs: list[list[int]] = []
    for i in indexes:
        if runs and runs[-1][-1] == i - 1 and len(runs[-1]) < longest:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


__all__ = [
    "END_OF_INPUT",
    "END_OF_INPUT_US",
    "EndOfInput",
    "Slice",
    "consecutive_runs",
    "micros",
    "naive_utc",
    "parse_duration",
    "slice_label",
    "slices_of",
    "wanted_slices",
]
