"""Render the window Top-N / deduplication / join plan (``runtime/spark/timeweave_window_ops_sql.sql``; dbt renders
a generated copy) from Python.  Imports no pyspark.

The file calls the temporal-join plan's identifier quoting (``timeweave.timeweave__q``); the ``timeweave``
namespace here (:class:`timeweave.spark.render.MacroNamespace`) resolves a name among the core's constants, then
in the window-ops file, then in the temporal-join plan, as dbt resolves the package's macros.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from timeweave.core.windows.ranking import RankRange, SortKey
from timeweave.spark import render

WINDOW_OPS_FILE_NAME = "timeweave_window_ops_sql.sql"
#: The window-ops plan's single source, beside this module; the dbt package's ``macros/`` holds a generated copy
#: (``python -m timeweave.dbt_package.generate``).
WINDOW_OPS_PLAN_FILE = Path(__file__).resolve().parent / WINDOW_OPS_FILE_NAME


@cache
def _macros() -> Any:
    # the window-ops file's own macros first, then the temporal-join plan's (its quoting helpers)
    return render.plan_module(WINDOW_OPS_PLAN_FILE, _macros, render._macros)


def macro(name: str, *args: Any, **kwargs: Any) -> str:
    """Render one macro of the window-ops file to SQL text."""
    return str(getattr(_macros(), name)(*args, **kwargs)).strip()


def window_rank_sql(relation: str, columns: Sequence[str], partition_by: Sequence[str], order: Sequence[SortKey],
                    ranks: RankRange, rank_column: str | None) -> str:
    """Window Top-N over ``relation`` (a window TVF's output or a window aggregate: ``columns`` hold
    ``window_start`` and ``window_end``): the ranks ``ranks`` per window and ``partition_by`` by ``order``.

    >>> sql = window_rank_sql("bids", ["window_start", "window_end", "price"], [], [SortKey("price", True)],
    ...                       RankRange.top(3), "rownum")
    >>> "ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY `price` DESC NULLS LAST)" in sql
    True
    >>> "WHERE __tw_rank BETWEEN 1 AND 3" in sql
    True
    """
    return macro("timeweave__window_rank_sql", relation, list(columns), list(partition_by),
                 [[k.column, k.sql_direction] for k in order], function=ranks.function, lower=ranks.lower,
                 upper=ranks.upper, rank_column=rank_column)


def window_join_sql(left: str, left_columns: Sequence[str], right: str, right_columns: Sequence[str],
                    on: Sequence[tuple[str, str]], how: str, left_names: Sequence[str] | None = None,
                    right_names: Sequence[str] | None = None) -> str:
    """Window join of ``left`` and ``right`` on ``window_start``, ``window_end`` and ``on`` (column pairs).

    >>> sql = window_join_sql("l", ["num"], "r", ["num"], [("num", "num")], "SEMI")
    >>> "LEFT SEMI JOIN r __tw_r" in sql and "__tw_l.`num` = __tw_r.`num`" in sql
    True
    """
    return macro("timeweave__window_join_sql", left, list(left_columns), right, list(right_columns),
                 [list(pair) for pair in on], how=how, left_names=None if left_names is None else list(left_names),
                 right_names=None if right_names is None else list(right_names))


__all__ = ["WINDOW_OPS_PLAN_FILE", "macro", "window_join_sql", "window_rank_sql"]
