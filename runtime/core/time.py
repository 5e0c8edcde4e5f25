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

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal, InvalidOperation
from itertools import pairwise
from typing import Any

from timeweave.core.durations import parse_duration
from timeweave.core.errors import SpecError
from timeweave.core.event_time import END_OF_INPUT_MS
from timeweave.core.spec import DATE, DECIMAL, FLOATING, INTEGER, TIME_DOMAINS

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


#: The forms a backfill's bounds take, by the type of the time column(s) it slices on (:func:`bound_form`), and
#: how an error shows each one.
BOUND_FORMS: dict[str, str] = {
    "timestamp": "an ISO timestamp (UTC), e.g. 2024-01-31T00:00:00",
    "date": "a date, e.g. 2024-01-31 (or a timestamp at 00:00 UTC)",
    "integer": "an integer, e.g. 1706659200000",
    "decimal": "a number, e.g. 1706659200.5",
    "floating": "a number, e.g. 1706659200.5",
}
_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def bound_form(kinds: Iterable[str]) -> str:
    """The form (:data:`BOUND_FORMS`) of the bounds of a backfill sliced on time columns of these kinds
    (:mod:`timeweave.core.spec`'s column kinds; all of one time domain, which the operator checked).

    Timestamps (with or without a zone) take timestamps, dates dates; numbers take integers when every time
    column is integral (TINYINT .. BIGINT: epoch millis, sequence numbers, LSNs), else numbers (floats when
    one is FLOAT / DOUBLE, decimals otherwise).

    >>> bound_form(["timestamp", "timestamp_ntz"]), bound_form(["date"]), bound_form(["integer", "integer"])
    ('timestamp', 'date', 'integer')
    >>> bound_form(["integer", "decimal"]), bound_form(["decimal", "floating"])
    ('decimal', 'floating')
    """
    kinds = list(kinds)
    domains = {TIME_DOMAINS.get(kind) for kind in kinds}
    if len(domains) != 1 or None in domains:
        raise SpecError("time", f"time columns of kinds {kinds} have no one time domain", where="backfill")
    if domains == {"timestamp"}:
        return "timestamp"
    if domains == {"date"} or DATE in kinds:
        return "date"
    if all(kind == INTEGER for kind in kinds):
        return "integer"
    return "floating" if FLOATING in kinds else "decimal" if DECIMAL in kinds else "integer"


def parse_bound(value: Any, form: str | None, argument: str, where: str = "backfill", column: str | None = None) -> Edge:
    """A backfill bound (``value``: text as a command line or a template gives it, or a Python value) read in
    ``form`` (:data:`BOUND_FORMS`), the time domain of the column the backfill slices on; an error names
    ``argument``, the value and the form expected (and ``column``, the time column(s) deciding it).

    * ``timestamp``: an ISO timestamp or a datetime, as a naive UTC datetime (an aware one is converted); a
      date alone is its midnight (UTC), as before.  Numbers are refused.
    * ``date``: ``YYYY-MM-DD`` or a date; a timestamp only when it is at exactly 00:00 UTC (a daily schedule's
      data interval, e.g. Airflow's ``{{ data_interval_start }}``), since any other instant would move the
      slice edge to a day it does not name.
    * ``integer``: an integer (text of digits with an optional sign); ``1.5``, ``1e3``, ``1.0``, dates and
      timestamps are refused (the column's unit, epoch millis or a sequence number, is the user's to give).
    * ``decimal`` / ``floating``: any finite number (``12``, ``-0.5``, ``1e3``), as a Decimal / a float.
    * None: the form is not known (the schema text did not name the time column): the value's own form, the
      operator checks it against the column's type before any Spark job.

    >>> parse_bound("2024-01-31T02:00:00+02:00", "timestamp", "start")
    datetime.datetime(2024, 1, 31, 0, 0)
    >>> parse_bound("2024-01-31", "date", "start"), parse_bound("2024-01-31T00:00:00+00:00", "date", "end")
    (datetime.date(2024, 1, 31), datetime.date(2024, 1, 31))
    >>> parse_bound("1706659200000", "integer", "--start"), parse_bound("2.5", "decimal", "--end")
    (1706659200000, Decimal('2.5'))
    >>> parse_bound("1.5", "integer", "--start", column="the time columns left.t (BIGINT) and right.t (BIGINT)")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: backfill: argument '--start': expected an integer, e.g. 1706659200000 (the time columns left.t (BIGINT) and right.t (BIGINT) are integral), got '1.5': not a whole number
    >>> parse_bound("2024-01-31T06:00", "date", "--end")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: backfill: argument '--end': expected a date, e.g. 2024-01-31 (or a timestamp at 00:00 UTC) (the time column is a DATE), got '2024-01-31T06:00': it is not at 00:00 UTC, a DATE slice edge cannot hold its time of day
    """
    if form is None:
        return _bound_of_own_form(value, argument, where)
    if form not in BOUND_FORMS:
        raise SpecError("form", f"unknown bound form {form!r}; use one of {sorted(BOUND_FORMS)}", where=where)
    text = value.strip() if isinstance(value, str) else None
    number = isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)

    def refuse(why: str = "") -> SpecError:
        said = f"{column} {_ARE[form]}" if column else f"the time column {_IS[form]}"
        return SpecError(argument, f"expected {BOUND_FORMS[form]} ({said}), got {value!r}{': ' + why if why else ''}",
                         where=where)

    if form == "timestamp":
        if isinstance(value, datetime):
            return naive_utc(value)
        if isinstance(value, date):
            return datetime.combine(value, time())
        if text is not None:
            try:
                return naive_utc(datetime.fromisoformat(text))
            except ValueError:
                pass
        raise refuse("a number does not slice a timestamp time" if number or _reads_as_number(text) else "")
    if form == "date":
        if isinstance(value, date) and not isinstance(value, datetime):
            return value
        instant = value if isinstance(value, datetime) else None
        if text is not None:
            try:
                return date.fromisoformat(text)
            except ValueError:
                try:
                    instant = datetime.fromisoformat(text)
                except ValueError:
                    pass
        if instant is not None:
            instant = naive_utc(instant)
            if instant.time() == time():
                return instant.date()
            raise refuse("it is not at 00:00 UTC, a DATE slice edge cannot hold its time of day")
        raise refuse("a number does not slice a DATE time" if number or _reads_as_number(text) else "")
    if form == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if text is not None and _INTEGER_TEXT.fullmatch(text):
            return int(text)
        if number or _reads_as_number(text):
            raise refuse("not a whole number")
        raise refuse(_not_a_time_hint(text))
    # decimal / floating
    parsed: Decimal | float | None = None
    if number:
        parsed = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    elif text is not None and _NUMBER_TEXT.fullmatch(text):
        try:
            parsed = Decimal(text)
        except InvalidOperation:  # pragma: no cover - the pattern reads as a Decimal
            parsed = None
    if parsed is None or not parsed.is_finite():
        raise refuse(_not_a_time_hint(text) if parsed is None else "not a finite number")
    return float(parsed) if form == "floating" else parsed


#: How :func:`parse_bound`'s errors say what decides a form: of named time columns, of "the time column".
_ARE = {"timestamp": "are timestamps", "date": "are DATEs", "integer": "are integral", "decimal": "are numeric",
        "floating": "are numeric"}
_IS = {"timestamp": "is a timestamp", "date": "is a DATE", "integer": "is integral", "decimal": "is numeric",
       "floating": "is numeric"}


def _reads_as_number(text: str | None) -> bool:
    return text is not None and _NUMBER_TEXT.fullmatch(text) is not None


def _not_a_time_hint(text: str | None) -> str:
    """Why a date or timestamp does not bound a numeric time (the column's unit is not known here)."""
    if text is None:
        return ""
    for reader in (date.fromisoformat, datetime.fromisoformat):
        try:
            reader(text)
        except ValueError:
            continue
        return "a date or timestamp does not slice a numeric time: give numbers in the column's own unit"
    return ""


def _bound_of_own_form(value: Any, argument: str, where: str) -> Edge:
    """A bound in the form it is written in (:func:`parse_bound` without a known form)."""
    if edge_domain(value) is not None:
        return naive_utc(value) if isinstance(value, datetime) else value
    text = value.strip() if isinstance(value, str) else None
    if text is not None:
        if _INTEGER_TEXT.fullmatch(text):
            return int(text)
        if _NUMBER_TEXT.fullmatch(text):
            return Decimal(text)
        for reader in (date.fromisoformat, datetime.fromisoformat):
            try:
                return naive_utc(reader(text)) if reader is datetime.fromisoformat else reader(text)
            except ValueError:
                continue
    raise SpecError(argument, f"expected a timestamp, a date or a number, got {value!r}", where=where)


def bound_text(at: Edge) -> str:
    """A bound as a command line takes it back (:func:`parse_bound` reads it to the same value).

    >>> bound_text(datetime(2024, 1, 31)), bound_text(date(2024, 1, 31)), bound_text(12), bound_text(0.1)
    ('2024-01-31T00:00:00', '2024-01-31', '12', '0.1')
    """
    if isinstance(at, date):
        return at.isoformat()
    if isinstance(at, float):
        if not math.isfinite(at):
            raise SpecError("bound", f"{at!r} is not a finite number", where="backfill")
        return repr(at)
    return str(at)


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
    "BOUND_FORMS",
    "END_OF_INPUT",
    "END_OF_INPUT_US",
    "EndOfInput",
    "Slice",
    "bound_form",
    "bound_text",
    "consecutive_runs",
    "edge_domain",
    "edge_text",
    "micros",
    "naive_utc",
    "parse_bound",
    "parse_duration",
    "slice_label",
    "slices_of",
    "wanted_slices",
]
