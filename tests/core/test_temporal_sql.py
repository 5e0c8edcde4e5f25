"""The FOR SYSTEM_TIME AS OF finder: shapes it accepts, positioned errors, and the bare ``*`` it reports."""

from __future__ import annotations

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.temporal_sql import find_temporal_joins

JOIN = "FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur"


@pytest.mark.parametrize(
    ("select", "stars"),
    [
        ("SELECT *", ["*"]),
        ("SELECT DISTINCT *", ["*"]),
        ("SELECT *, o.id", ["*"]),
        ("SELECT o.*, r.rate", []),
        ("SELECT count(*) AS n", []),
        ("SELECT o.id, *", ["*"]),
        ("SELECT 2 * 3 AS six", []),
    ],
)
def test_bare_stars_of_the_joins_own_select_list(select: str, stars: list[str]) -> None:
    query = f"{select} {JOIN}"
    [clause] = find_temporal_joins(query)
    assert [query[p] for p in clause.select_stars] == stars
    assert all(query[p - 1] in " ," for p in clause.select_stars)


def test_stars_of_an_outer_query_block_are_not_the_joins() -> None:
    query = f"SELECT * FROM (SELECT o.id, r.rate {JOIN}) AS t"
    [clause] = find_temporal_joins(query)
    assert clause.select_stars == ()
    inner = f"SELECT x.* FROM (SELECT * {JOIN}) AS x"
    [clause] = find_temporal_joins(inner)
    assert [inner.index("SELECT *") + 7] == list(clause.select_stars)


def test_clause_span_and_parts() -> None:
    query = f"SELECT o.id {JOIN} AND r.rate > 1 WHERE o.id > 0"
    [clause] = find_temporal_joins(query)
    assert query[clause.start : clause.end] == f"{JOIN[5:]} AND r.rate > 1"
    assert (clause.left_alias, clause.right_alias, clause.how, clause.left_time) == ("o", "r", "inner", "ts")
    assert clause.key_pairs == (("cur", "cur"),) and clause.predicate == "r.rate > 1"


@pytest.mark.parametrize(
    ("query", "message", "at"),
    [
        ("SELECT * FROM orders o FULL JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur", "FULL", "FULL"),
        ("SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF x.ts r ON o.cur = r.cur", "AS OF needs", "x.ts"),
        ("SELECT * FROM a JOIN b ON a.k = b.k JOIN rates FOR SYSTEM_TIME AS OF b.ts r ON b.cur = r.cur", "right after FROM", "b.k JOIN"),
    ],
)
def test_errors_point_at_the_problem(query: str, message: str, at: str) -> None:
    with pytest.raises(QuerySyntaxError, match=message) as info:
        find_temporal_joins(query)
    assert info.value.position == query.index(at)


def test_a_keyed_table_needs_equalities_a_keyless_one_takes_any_on() -> None:
    query = "SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.cur > r.cur"
    [clause] = find_temporal_joins(query)
    with pytest.raises(QuerySyntaxError, match="at least one equality") as info:
        clause.join_keys(("cur",), "join")
    assert info.value.position == query.index("o.cur >")
    assert clause.join_keys((), "join") == ((), "o.cur > r.cur")
    [on_true] = find_temporal_joins("SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON TRUE")
    assert on_true.key_pairs == () and on_true.join_keys((), "join") == ((), None)
    [both] = find_temporal_joins("SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.c = r.c AND o.n < r.n")
    assert both.join_keys((), "join") == ((), "(o.c = r.c) AND (o.n < r.n)")
