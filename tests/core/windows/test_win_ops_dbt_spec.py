"""The dbt window-ops macros' checks (dbt_macros/macros/_timeweave_window_ops_internal.sql, restated in Jinja because
dbt cannot import timeweave.core) accept, compute and reject exactly what the core's rules do
(:mod:`timeweave.core.windows.ranking`).  No JVM, no dbt: the macros are rendered with jinja2 and dbt's
``return`` / ``exceptions`` stand-ins."""

from __future__ import annotations

import pytest

from tests.helpers.dbt_jinja import CompilerError, dbt_macros
from timeweave.core.errors import SpecError
from timeweave.core.windows.ranking import RankRange, join_type, sort_keys

DBT = dbt_macros("_timeweave_window_ops_internal.sql", "_timeweave_internal.sql")


def _same(dbt_call, core_call):
    """Both accept with equal values, or both reject naming the same argument (the dbt message ends with the
    core's)."""
    try:
        expected = core_call()
    except SpecError as error:
        with pytest.raises(CompilerError) as failed:
            dbt_call()
        assert f"argument '{error.argument}': {error.message}" in str(failed.value), (str(failed.value), str(error))
        return None
    return expected, dbt_call()


@pytest.mark.parametrize(("function", "lower", "upper"), [
    ("ROW_NUMBER", 1, 3), ("rank", 2, 2), ("DENSE_RANK", 1, 10), ("NTILE", 1, 3), ("ROW_NUMBER", 0, 3),
    ("ROW_NUMBER", 3, 2), ("ROW_NUMBER", 1, True), ("RANK", 1, "3"),
])
def test_rank_ranges(function, lower, upper) -> None:
    same = _same(lambda: DBT._window_rank_range(function, lower, upper),
                 lambda: RankRange(function, lower, upper))
    if same:
        core, dbt = same
        assert dbt == {"function": core.function, "lower": core.lower, "upper": core.upper}


@pytest.mark.parametrize("order_by", ["price DESC", ["a", "b desc nulls first"], "x asc nulls last", "`t` DESC",
                                      "price sideways", [], "a NULLS", "b DESC NULLS LAST",
                                      # back-quoted names with spaces, doubled quotes, dots, quotes, unicode,
                                      # newlines (issue 20: names are data), and quoting that is not closed
                                      "`bid time` ASC NULLS LAST", "  `a``b` desc", "`v.a``l' \\`\tDESC",
                                      ["`id 日本 \\'`", "`t``ime.x\n` DESC NULLS FIRST"], "```` DESC",
                                      "`open DESC", "`a`b DESC", "a`b DESC", "`` DESC", "`x`DESC"])
def test_sort_keys(order_by) -> None:
    same = _same(lambda: DBT._window_sort_keys(order_by), lambda: sort_keys(order_by))
    if same:
        core, dbt = same
        assert dbt == [[k.column, k.sql_direction] for k in core]


@pytest.mark.parametrize("how", ["inner", "LEFT OUTER", "full outer", "semi", "left anti", "right", "cross"])
def test_join_types(how) -> None:
    same = _same(lambda: DBT._window_join_type(how), lambda: join_type(how))
    if same:
        assert same[0] == same[1]
