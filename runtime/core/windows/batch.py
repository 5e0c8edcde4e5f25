"""Batch window aggregation: every row counts (no watermark, so no late row), what batch doors compute.

It assigns each row to *all* its windows with the same assigners the TVF uses (:meth:`Slicing.windows_of
<timeweave.core.windows.slicing.Slicing.windows_of>`, :func:`~timeweave.core.windows.sessions.sessionize`) and
accumulates with the same :mod:`~timeweave.core.windows.accumulators`, deliberately without slices: the
streaming operator's slice sharing is checked against this direct answer (a stream without late rows,
flushed, gives the same rows).  Rows with a NULL event time are dead letters, as in every door.

>>> from timeweave.core.windows.accumulators import AggregateCall, Sum
>>> from timeweave.core.windows.spec import hop
>>> result = evaluate(hop(5, 10), [AggregateCall(Sum(), "v", name="total")],
...                   [{"t": 1, "v": 1}, {"t": 7, "v": 2}, {"t": None, "v": 3}], time_column="t")
>>> [(key, row.window.start, row.window.end, row.values) for key, row in result.rows]
[((), -5, 5, (1,)), ((), 0, 10, (3,)), ((), 5, 15, (2,))]
>>> [d.reason for d in result.dead_letters]
['NULL event time column t']
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.windows.accumulators import AggregateCall, Aggregates
from timeweave.core.windows.operator import DeadLetter, WindowRow
from timeweave.core.windows.sessions import sessionize
from timeweave.core.windows.slicing import Slicing
from timeweave.core.windows.spec import SessionSpec, Window, WindowSpec, event_time_ms
from timeweave.core.windows.zones import TimeShift


@dataclass(frozen=True)
class BatchResult:
    """The windows of every key, ordered by window end, start, then the key's first appearance, and the
    dead letters in input order."""

    rows: list[tuple[Any, WindowRow]] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)


def evaluate(
    spec: WindowSpec,
    aggregates: Aggregates | Sequence[AggregateCall],
    rows: Iterable[Any],
    *,
    time_column: str,
    key_of: Callable[[Any], Any] | None = None,
    time_of: Callable[[Any], int | None] | None = None,
    time_zone: str | None = None,
) -> BatchResult:
    """Aggregate ``rows`` per key (``key_of(row)``; default: the SESSION spec's ``partition_by`` values, else
    ``()``, one global key) and window.  A SESSION key must include the ``partition_by`` columns (sessions
    are kept apart by them).  ``time_of`` reads epoch ms (default: ``time_column`` via
    :func:`~timeweave.core.windows.spec.event_time_ms`); ``time_zone`` aligns TIMESTAMP_LTZ windows on that
    zone's wall clock (:mod:`~timeweave.core.windows.zones`), as the operator does.
    """
    aggs = aggregates if isinstance(aggregates, Aggregates) else Aggregates(aggregates)
    read_time = _reader(time_column, time_of, time_zone)
    if key_of is None:
        columns = spec.partition_by if isinstance(spec, SessionSpec) else ()
        key_of = (lambda row: tuple(row[c] for c in columns)) if columns else (lambda row: ())
    dead: list[DeadLetter] = []
    reason = null_event_time_reason(time_column)
    by_key: dict[Any, list[tuple[int, Any]]] = {}
    for row in rows:
        time = read_time(row)
        if time is None:
            dead.append(DeadLetter(row, reason))
            continue
        by_key.setdefault(key_of(row), []).append((time, row))
    windows: dict[tuple[Window, int], list[Any]] = {}
    keys = list(by_key)
    for index, key in enumerate(keys):
        timed = by_key[key]
        if isinstance(spec, SessionSpec):
            sessions = sessionize((t for t, _ in timed), spec.gap)
            starts = [w.start for w in sessions]
            for time, row in timed:
                window = sessions[bisect_right(starts, time) - 1]
                _add(windows, aggs, (window, index), row)
        else:
            windows_of = Slicing.of(spec).windows_of
            for time, row in timed:
                for window in windows_of(time):
                    _add(windows, aggs, (window, index), row)
    ordered = sorted(windows, key=lambda wk: (wk[0].end, wk[0].start, wk[1]))
    return BatchResult([(keys[i], WindowRow(w, aggs.results(windows[(w, i)]))) for w, i in ordered], dead)


@dataclass(frozen=True)
class Assigned:
    """The window TVF's output over a complete input: each row with each of its windows, in input order (a
    row's windows by end), and the dead letters (NULL event time) in input order."""

    rows: list[tuple[Any, Window]] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)


def assign_windows(
    spec: WindowSpec,
    rows: Iterable[Any],
    *,
    time_column: str,
    key_of: Callable[[Any], Any] | None = None,
    time_of: Callable[[Any], int | None] | None = None,
    time_zone: str | None = None,
) -> Assigned:
    """The window TVF itself (no aggregation): every row paired with each window holding it.  A SESSION row
    gets the session of its ``partition_by`` values (``key_of``, default those columns) over the whole input.

    >>> from timeweave.core.windows.spec import session
    >>> rows = [{"t": 0, "k": "a"}, {"t": 4, "k": "b"}, {"t": 3, "k": "a"}, {"t": 9, "k": "a"}]
    >>> [(r["t"], w.start, w.end) for r, w in assign_windows(session(3, "k"), rows, time_column="t").rows]
    [(0, 0, 6), (4, 4, 7), (3, 0, 6), (9, 9, 12)]
    """
    read_time = _reader(time_column, time_of, time_zone)
    reason = null_event_time_reason(time_column)
    timed: list[tuple[int, Any]] = []
    dead: list[DeadLetter] = []
    for row in rows:
        time = read_time(row)
        if time is None:
            dead.append(DeadLetter(row, reason))
        else:
            timed.append((time, row))
    if not isinstance(spec, SessionSpec):
        windows_of = Slicing.of(spec).windows_of
        return Assigned([(row, window) for time, row in timed for window in windows_of(time)], dead)
    if key_of is None:
        columns = spec.partition_by
        key_of = lambda row: tuple(row[c] for c in columns)  # noqa: E731
    times_by_key: dict[Any, list[int]] = {}
    keys = [key_of(row) for _, row in timed]
    for key, (time, _) in zip(keys, timed, strict=True):
        times_by_key.setdefault(key, []).append(time)
    sessions = {key: sessionize(times, spec.gap) for key, times in times_by_key.items()}
    starts = {key: [w.start for w in found] for key, found in sessions.items()}
    return Assigned([(row, sessions[key][bisect_right(starts[key], time) - 1])
                     for key, (time, row) in zip(keys, timed, strict=True)], dead)


def _reader(time_column: str, time_of: Callable[[Any], int | None] | None,
            time_zone: str | None) -> Callable[[Any], int | None]:
    read = time_of or (lambda row: event_time_ms(row[time_column]))
    shift = TimeShift.of(time_zone)
    if shift is None:
        return read
    local = shift.local
    return lambda row: None if (t := read(row)) is None else local(t)


def _add(windows: dict[tuple[Window, int], list[Any]], aggs: Aggregates, slot: tuple[Window, int], row: Any) -> None:
    accs = windows.get(slot)
    if accs is None:
        windows[slot] = accs = aggs.create()
    aggs.add(accs, row)


__all__ = ["Assigned", "BatchResult", "assign_windows", "evaluate"]
