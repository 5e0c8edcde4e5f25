"""Slice partials: rows pre-aggregated per key and slice before they reach the window operator (Flink's local
aggregation ahead of the global window aggregate).

A host may fold the rows of one key and one slice that arrive together (one micro-batch of one source partition)
into the accumulator row the operator would have built from them, and hand the operator that row instead of the
rows (:meth:`~timeweave.core.windows.operator.WindowAggregateOperator.process_partials`).  It is exact because
everything the operator decides about a row of an aligned window depends on its slice, not on its own time: the
windows it belongs to, and at a given watermark whether it is late for some of them (``fire(slice_end) <=
watermark``).  A partial whose slice is late at the operator's watermark is not merged: the operator asks for
its rows and takes them one by one, so late rows are reported exactly as without partials.

What may be pre-aggregated (:func:`partial_functions`): aligned windows (TUMBLE, HOP, CUMULATE; not SESSION,
whose windows depend on each row's time) on the UTC clock, and aggregates whose accumulator is a function of a
few column statistics, without ``FILTER``: ``COUNT(*)``, ``COUNT(x)``, ``SUM(x)``, ``AVG(x)``, ``MIN(x)``,
``MAX(x)``.  :func:`accumulator_row` builds the operator's accumulator row ``[row_count, acc_1, ...]`` from those
statistics, the one place that knows each accumulator's layout (:mod:`~timeweave.core.windows.accumulators`).

>>> accumulator_row(("COUNT(*)", "SUM", "AVG", "MIN"), 3, [(), (7, 2), (7, 2), (1, 2)])
[3, 3, 7, [7, 2], 1]
>>> accumulator_row(("SUM", "MAX"), 2, [(None, 0), (None, 0)])
[2, None, None]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from timeweave.core.windows.calls import AggregateText
from timeweave.core.windows.spec import CumulateSpec, HopSpec, TumbleSpec, WindowSpec

#: The statistics each function's partial needs, per slice: COUNT(*) none (the row count is the group's);
#: the others (value, non-NULL count) with value the SUM / MIN / MAX of the non-NULL values (None when none).
STATISTICS: dict[str, str | None] = {"COUNT(*)": None, "COUNT": "count", "SUM": "sum", "AVG": "sum", "MIN": "min",
                                     "MAX": "max"}


def partial_functions(spec: WindowSpec, aggregates: Sequence[AggregateText], zone: str | None) -> tuple[str, ...] | None:
    """The aggregates' functions when the rows of a window aggregation may be pre-aggregated per slice (see the
    module docstring), else None.

    >>> from timeweave.core.windows.calls import parse_aggregate
    >>> from timeweave.core.windows.spec import session, tumble
    >>> partial_functions(tumble("1 minute"), [parse_aggregate("n", "COUNT(*)"), parse_aggregate("s", "SUM(p)")], None)
    ('COUNT(*)', 'SUM')
    >>> partial_functions(session("1 minute"), [parse_aggregate("n", "COUNT(*)")], None) is None
    True
    >>> partial_functions(tumble("1 minute"), [parse_aggregate("n", "COUNT(*) FILTER (WHERE ok)")], None) is None
    True
    """
    if not isinstance(spec, TumbleSpec | HopSpec | CumulateSpec) or zone is not None or not aggregates:
        return None
    if any(a.function not in STATISTICS or a.filter is not None for a in aggregates):
        return None
    return tuple(a.function for a in aggregates)


def accumulator_row(functions: Sequence[str], rows: int, statistics: Sequence[tuple[Any, ...]]) -> list[Any]:
    """The accumulator row ``[row_count, acc_1, ...]`` of ``rows`` rows of one key and slice, from per aggregate
    ``(value, non-NULL count)`` (``()`` for ``COUNT(*)``): what adding the rows one by one gives."""
    out: list[Any] = [rows]
    for function, stats in zip(functions, statistics, strict=True):
        if function == "COUNT(*)":
            out.append(rows)
            continue
        value, present = stats
        if function == "COUNT":
            out.append(present)
        elif function == "AVG":
            out.append([value if present else None, present])
        else:  # SUM, MIN, MAX: None when no value was non-NULL
            out.append(value if present else None)
    return out


__all__ = ["STATISTICS", "accumulator_row", "partial_functions"]
