"""Batch window aggregation: every row counts (no watermark, so no late row), what batch doors compute.

It assigns each row to *all* its windows with the same assigners the TVF uses (:meth:`Slicing.windows_of
<runtime.core.windows.slicing.Slicing.windows_of>`, :func:`~runtime.core.windows.sessions.sessionize`) and
accumulates with the same :mod:`~runtime.core.windows.accumulators`, deliberately without slices: the
streaming operator's slice sharing is checked against this direct answer (a stream without late rows,
flushed, gives the same rows).  Rows with a NULL event time are dead letters, as in every door.

>>> from runtime.core.windows.accumulators import AggregateCall, Sum
>>> from runtime.core.windows.spec import hop
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

from runtime.core.pattern.partition import null_event_time_reason
from runtime.core.windows.accumulators import AggregateCall, Aggregates
from runtime.core.windows.operator import DeadLetter, WindowRow
from runtime.core.windows.sessions import sessionize
from runtime.core.windows.slicing import Slicing
from runtime.core.windows.spec import SessionSpec, Window, WindowSpec, event_time_ms


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
) -> BatchResult:
    """Aggregate ``rows`` per key (``key_of(row)``; default: the SESSION spec's ``partition_by`` values, else
    ``()``, one global key) and window.  A SESSION key must include the ``partition_by`` columns (sessions
    are kept apart by them).  ``time_of`` reads epoch ms (default: ``time_column`` via
    :func:`~runtime.core.windows.spec.event_time_ms`).
    """
    aggs = aggregates if isinstance(aggregates, Aggregates) else Aggregates(aggregates)
    read_time = time_of or (lambda row: event_time_ms(row[time_column]))
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


def _add(windows: dict[tuple[Window, int], list[Any]], aggs: Aggregates, slot: tuple[Window, int], row: Any) -> None:
    accs = windows.get(slot)
    if accs is None:
        windows[slot] = accs = aggs.create()
    aggs.add(accs, row)


__all__ = ["BatchResult", "evaluate"]
