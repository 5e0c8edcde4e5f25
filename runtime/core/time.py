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
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from itertools import pairwise
from typing import Any

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


#: A slice edge: an instant (a naive UTC datetime) for timestamp times, a date for date times, a number
#: (int, Decimal, float) for numeric times (:data:`timeweave.core.spec.TIME_DOMAINS`).
Edge = datetime | date | int | Decimal | float


def edge_domain(edge: Any) -> str | None:
    """The time domain an edge value belongs to (``timestamp``, ``date``, ``numeric``), None for another value.

    >>> edge_domain(datetime(2020, 1, 1)), edge_domain(date(2020, 1, 1)), edge_domain(Decimal("1.5")), edge_domain(True)
    ('timestamp', 'date', 'numeric', None)
    """
    if isinstance(edge, datetime):
        return "timestamp"
    if isinstance(edge, date):
        return "date"
    if isinstance(edge, (int, Decimal, float)) and not isinstance(edge, bool):
        return "numeric"
    return None


def slice_label(at: Edge) -> str:
    """A path-safe name for a slice edge (microsecond precision, so narrow slices never collide).

    The year always has 4 digits (``strftime("%Y")`` gives ``1`` for year 1 on glibc).  A date is its ISO
    text, a number its decimal text (``repr`` of a float: the shortest text that reads back as it).

    >>> slice_label(datetime(1, 1, 1)), slice_label(datetime(1969, 12, 31, 23, 59, 59, 999999))
    ('0001-01-01T00-00-00', '1969-12-31T23-59-59.999999')
    >>> slice_label(date(2020, 3, 1)), slice_label(-40), slice_label(Decimal("2.5")), slice_label(0.1)
    ('2020-03-01', '-40', '2.5', '0.1')
    """
    if isinstance(at, datetime):
        return f"{at.year:04d}-" + at.strftime("%m-%dT%H-%M-%S") + (f".{at.microsecond:06d}" if at.microsecond else "")
    if isinstance(at, date):
        return f"{at.year:04d}-" + at.strftime("%m-%d")
    return repr(at) if isinstance(at, float) else str(at)


def edge_text(at: Edge) -> str | int | float:
    """An edge as a metrics value: ISO text for instants and dates, the number itself (a Decimal as text).

    >>> edge_text(datetime(2020, 1, 1)), edge_text(7), edge_text(Decimal("0.5"))
    ('2020-01-01T00:00:00', 7, '0.5')
    """
    if isinstance(at, date):
        return at.isoformat()
    return str(at) if isinstance(at, Decimal) else at


@dataclass(frozen=True)
class Slice:
    """Slice ``index`` of a backfill: the event times ``[start, end)`` (naive UTC instants, dates or numbers)."""

    index: int
    start: Edge
    end: Edge

    @property
    def label(self) -> str:
        """The slice's directory name: its start edge's :func:`slice_label`."""
        return slice_label(self.start)


def slices_of(start: Edge, end: Edge, count: int) -> list[Slice]:
    """``count`` equal slices of ``[start, end)``, in the time domain of the bounds (:func:`edge_domain`).

    How each domain is cut: instants into equal durations (µs, as a ``timedelta`` divides); dates and
    integers at whole days / whole numbers, ``start + (end - start) * i // count`` (so a slice is at least
    one day or one unit: at most ``end - start`` slices); decimals and floats at ``start + (end - start) * i /
    count`` in their own arithmetic (Decimal's 28 digits, double).  Slices partition ``[start, end)``
    whatever the domain, so N slices give one run's rows.

    >>> [(s.index, s.start.hour, s.end.hour) for s in slices_of(datetime(2020, 1, 1), datetime(2020, 1, 1, 6), 3)]
    [(0, 0, 2), (1, 2, 4), (2, 4, 6)]
    >>> [(s.start, s.end) for s in slices_of(0, 10, 3)]
    [(0, 3), (3, 6), (6, 10)]
    >>> [s.label for s in slices_of(date(2020, 1, 1), date(2020, 1, 8), 3)]
    ['2020-01-01', '2020-01-03', '2020-01-05']
    >>> [str(s.end) for s in slices_of(Decimal("0"), Decimal("1"), 4)]
    ['0.25', '0.5', '0.75', '1']
    >>> slices_of(datetime(2020, 1, 2), datetime(2020, 1, 1), 1)
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: backfill: argument 'end': end 2020-01-01 00:00:00 must be after start 2020-01-02 00:00:00
    >>> slices_of(0, 2, 3)
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: backfill: argument 'slices': [0, 2) has 2 whole units: at most 2 slices, got 3
    """
    if count < 1:
        raise SpecError("slices", f"must be >= 1, got {count}", where="backfill")
    domains = (edge_domain(start), edge_domain(end))
    if None in domains or domains[0] != domains[1]:
        raise SpecError(
            "end", f"start {start!r} and end {end!r} must both be datetimes, both dates or both numbers", where="backfill")
    if end <= start:
        raise SpecError("end", f"end {end} must be after start {start}", where="backfill")
    if isinstance(start, datetime):
        width = (end - start) / count
        edges = [start + width * i for i in range(count)] + [end]
    elif isinstance(start, date) or (isinstance(start, int) and isinstance(end, int)):
        span = (end - start).days if isinstance(start, date) else end - start
        if span < count:
            unit = "days" if isinstance(start, date) else "whole units"
            raise SpecError("slices", f"[{start}, {end}) has {span} {unit}: at most {span} slices, got {count}", where="backfill")
        steps = [span * i // count for i in range(count)]
        edges = [start + (timedelta(days=n) if isinstance(start, date) else n) for n in steps] + [end]
    else:
        low, high = (Decimal(start), Decimal(end)) if isinstance(start, Decimal) or isinstance(end, Decimal) else (float(start), float(end))
        edges = [low + (high - low) * i / count for i in range(count)] + [high]
        if any(a >= b for a, b in pairwise(edges)):
            raise SpecError("slices", f"[{start}, {end}) is too narrow for {count} distinct slices", where="backfill")
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
    "edge_domain",
    "edge_text",
    "micros",
    "naive_utc",
    "parse_duration",
    "slice_label",
    "slices_of",
    "wanted_slices",
]
