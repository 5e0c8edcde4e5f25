"""Render the window-TVF plan (``runtime/spark/timeweave_windows_sql.sql``; dbt renders a generated copy) from Python.

The DataFrame and SQL doors render the same Jinja file the dbt macros ``tumble`` / ``hop`` / ``cumulate`` /
``session`` render, so there is one window plan.  The file calls the temporal-join plan's helpers
(``timeweave.timeweave__q``, ``timeweave.timeweave__str``); the ``timeweave`` namespace here
(:class:`timeweave.spark.render.MacroNamespace`) resolves a name among the core's constants, then in the
window file, then in the temporal-join plan.  Imports no pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from timeweave.core.windows.spec import WINDOW_COLUMNS, CumulateSpec, HopSpec, SessionSpec, TumbleSpec, WindowSpec
from timeweave.spark import render

WINDOW_FILE_NAME = "timeweave_windows_sql.sql"
#: The window plan's single source, shipped beside this module; the dbt package's ``macros/`` holds a generated
#: copy (``python -m timeweave.dbt_package.generate``).
WINDOW_PLAN_FILE = Path(__file__).resolve().parent / WINDOW_FILE_NAME


@cache
def _macros() -> Any:
    # the window file's own macros first, then the temporal-join plan's (its quoting and string helpers)
    return render.plan_module(WINDOW_PLAN_FILE, _macros, render._macros)


def macro(name: str, *args: Any, **kwargs: Any) -> str:
    """Render one macro of the window file to SQL text.

    >>> macro("timeweave__win_ms", "`ts`", "ltz", None)
    'unix_millis(`ts`)'
    """
    return str(getattr(_macros(), name)(*args, **kwargs)).strip()


def spec_arguments(spec: WindowSpec) -> dict[str, Any]:
    """The plan macro's arguments for a validated core spec (function name and values in ms).

    >>> from timeweave.core.windows import hop
    >>> spec_arguments(hop("5 minutes", "10 minutes"))
    {'function': 'HOP', 'slide': 300000, 'size': 600000, 'offset': 0}
    """
    if isinstance(spec, TumbleSpec):
        return {"function": "TUMBLE", "size": spec.size, "offset": spec.offset}
    if isinstance(spec, HopSpec):
        return {"function": "HOP", "slide": spec.slide, "size": spec.size, "offset": spec.offset}
    if isinstance(spec, CumulateSpec):
        return {"function": "CUMULATE", "step": spec.step, "max_size": spec.max_size, "offset": spec.offset}
    if isinstance(spec, SessionSpec):
        return {"function": "SESSION", "gap": spec.gap, "partition_by": list(spec.partition_by)}
    raise TypeError(f"not a window spec: {spec!r}")


def window_tvf_sql(spec: WindowSpec, relation: str, columns: Sequence[str], time: str, *, kind: str = "ltz",
                   zone: str | None = None) -> str:
    """The window TVF's rows over ``relation``: ``columns`` plus ``window_start``, ``window_end``, ``window_time``.

    ``kind`` is the time column's type (``"ltz"``: Spark TIMESTAMP, ``"ntz"``: TIMESTAMP_NTZ); ``zone`` the
    session time zone whose wall clock aligns TIMESTAMP windows (None: UTC).

    >>> from timeweave.core.windows import tumble
    >>> sql = window_tvf_sql(tumble("10 minutes"), "bids", ["bidtime", "price"], "bidtime")
    >>> "pmod(__tw_t - (0L), 600000L)" in sql and "FROM bids" in sql
    True
    """
    return macro("timeweave__window_tvf_sql", relation, list(columns), time, kind=kind, zone=zone,
                 **spec_arguments(spec))


def window_aggregate_sql(spec: WindowSpec, relation: str, columns: Sequence[str], time: str, keys: Sequence[str],
                         aggregates: Sequence[Mapping[str, Any]], *, kind: str = "ltz", zone: str | None = None) -> str:
    """Window aggregation of an aligned ``spec`` with shared slices: ``window_start``, ``window_end``,
    ``window_time``, the ``keys``, then one column per aggregate (dicts: ``name``, ``function`` count / sum / min /
    max / avg, ``argument`` a quoted column or None for COUNT(*), ``type`` the aggregate's SQL type).

    >>> from timeweave.core.windows import hop
    >>> sql = window_aggregate_sql(hop("5 minutes", "10 minutes"), "bids", ["bidtime", "item"], "bidtime", ["item"],
    ...                            [{"name": "n", "function": "count", "argument": None, "type": "bigint"}])
    >>> "GROUP BY `item`, __tw_t - pmod(__tw_t - (0L), 300000L) + 300000L" in sql and "GROUP BY `item`, __tw_we" in sql
    True
    """
    arguments = spec_arguments(spec)
    if arguments["function"] == "SESSION":
        raise TypeError("sessions have no slices: aggregate the SESSION TVF's rows")
    return macro("timeweave__window_aggregate_sql", relation, list(columns), time, arguments.pop("function"),
                 list(keys), [dict(a) for a in aggregates], kind=kind, zone=zone, **arguments)


def window_dead_letter_sql(relation: str, columns: Sequence[str], time: str, reason: str) -> str:
    """The rows of ``relation`` with a NULL ``time``: ``side`` (``input``), ``reason``, ``row`` (JSON)."""
    return macro("timeweave__window_dead_letter_sql", relation, list(columns), time, reason)


__all__ = ["WINDOW_COLUMNS", "macro", "spec_arguments", "window_aggregate_sql", "window_dead_letter_sql",
           "window_tvf_sql"]
