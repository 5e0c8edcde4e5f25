"""Finding ``<relation> [t(c, ...)] MATCH_RECOGNIZE (...) [AS m[(c, ...)]]`` in a query (the SQL door's scanner)."""

from __future__ import annotations

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.match_sql import find_match_recognize

MR = "MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS true)"


@pytest.mark.parametrize(("before", "after", "relation", "alias", "columns"), [
    ("SELECT * FROM ticker", " AS m", "ticker", "m", None),
    ("SELECT * FROM db.ticker", "", "db.ticker", None, None),
    # Trino's tests: an aliased input with a column list
    ("SELECT m.id FROM (VALUES (1, 90), (2, 80)) t(id, value)", " AS m", "(VALUES (1, 90), (2, 80)) t(id, value)", "m", None),
    ("SELECT * FROM ticker AS t", " m", "ticker AS t", "m", None),
    ("SELECT * FROM ticker t", "", "ticker t", None, None),
    ("SELECT * FROM (SELECT 1 AS x) AS q(y)", " m(a)", "(SELECT 1 AS x) AS q(y)", "m", "(a)"),
    ("SELECT * FROM range(3)", " m", "range(3)", "m", None),
    ("SELECT * FROM range(3) r(id)", " m", "range(3) r(id)", "m", None),
    ("SELECT * FROM a JOIN b", " m ON a.x = m.x", "b", "m", None),
    ("SELECT * FROM a, (SELECT 1) s", " AS m", "(SELECT 1) s", "m", None),
])
def test_relation_alias_and_output_alias(before: str, after: str, relation: str, alias: str | None,
                                         columns: str | None) -> None:
    [found] = find_match_recognize(f"{before} {MR}{after}")
    assert (found.relation, found.alias, found.alias_columns) == (relation, alias, columns)


def test_several_clauses_in_one_query() -> None:
    query = f"SELECT * FROM (VALUES 1) t(id) {MR} AS first, (VALUES 2) t(id) {MR} AS second"
    assert [(c.relation, c.alias) for c in find_match_recognize(query)] == [
        ("(VALUES 1) t(id)", "first"), ("(VALUES 2) t(id)", "second")]


@pytest.mark.parametrize(("query", "message", "col"), [
    (f"SELECT x {MR}", "must follow a table or (subquery) in FROM", 8),
    (f"SELECT * FROM t WHERE x {MR}", "must follow a table or (subquery) in FROM", 23),
    (f"{MR}", "needs an input table", 1),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)", "never closed", 33),
    (f"SELECT * FROM t {MR} m(a", "column list of the alias is never closed", 65),
])
def test_misplaced_clauses_are_positioned_errors(query: str, message: str, col: int) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        find_match_recognize(query)
    assert message in str(info.value) and info.value.col == col, str(info.value)
