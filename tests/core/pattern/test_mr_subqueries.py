"""Uncorrelated subqueries in MEASURES / DEFINE: parsing, printing, the inlining rules and the core's refusal.

The Spark doors run the queries (tests/spark/test_match_recognize_subqueries.py); here the rows are given.
"""

from __future__ import annotations

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import PatternValidationError, match_recognize, parse_clause, subqueries
from timeweave.core.pattern import expr as E
from timeweave.core.pattern.parser import parse_expression

CLAUSE = "ORDER BY id MEASURES {measure} AS val ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A+) DEFINE A AS {define}"
ROWS = [{"id": i, "value": v} for i, v in enumerate([100, 200, 300, 400], start=1)]


def run(measure: str, define: str, results: dict[str, list[tuple]]) -> list:
    spec = subqueries.inline(parse_clause(CLAUSE.format(measure=measure, define=define)), results)
    return [row["val"] for row in match_recognize(spec, ROWS)]


@pytest.mark.parametrize("text", [
    "(SELECT 'x')",
    "FINAL LAST(A.value + (SELECT 1000), 0)",
    "A.id > 0 AND 1 IN (SELECT 1)",
    "(id % 2) NOT IN (SELECT 0 FROM t WHERE (a) = 1)",
    "A.value < 0 OR EXISTS (SELECT 1)",
    "(WITH c AS (SELECT 1 AS x) SELECT x FROM c) + 1",
])
def test_subqueries_parse_and_print_back(text: str) -> None:
    node = parse_expression(text)
    assert any(isinstance(n, E.Subquery | E.InSubquery) for n in node.walk())
    assert str(node) == text
    assert parse_expression(str(node)) == node


def test_query_text_is_kept_as_written() -> None:
    node = parse_expression("x IN ( SELECT  code FROM codes WHERE kind = 'a' )")
    assert isinstance(node, E.InSubquery) and node.query == "SELECT  code FROM codes WHERE kind = 'a'"


@pytest.mark.parametrize(("text", "message", "col"), [
    ("(SELECT 1", r"subquery \( is never closed", 1),
    ("EXISTS (1)", "EXISTS needs a subquery", 8),
])
def test_malformed_subqueries_are_positioned_errors(text: str, message: str, col: int) -> None:
    with pytest.raises(QuerySyntaxError, match=message) as info:
        parse_expression(text)
    assert info.value.col == col


# Trino's TestRowPatternMatching.testSubqueries, with the subqueries' rows given.
def test_trino_scalar_subqueries() -> None:
    assert run("(SELECT 'x')", "(SELECT true)", {"SELECT 'x'": [("x",)], "SELECT true": [(True,)]}) == ["x"] * 4


def test_trino_subquery_nested_in_navigation() -> None:
    results = {"SELECT 1000": [(1000,)], "SELECT true": [(True,)]}
    assert run("FINAL LAST(A.value + (SELECT 1000))", "FIRST(A.value < 0 OR (SELECT true))", results) == [1400] * 4


def test_trino_in_predicate_subqueries() -> None:
    one = {"SELECT 1": [(1,)]}
    assert run("LAST(A.id < 0 OR 1 IN (SELECT 1))", "FIRST(A.id > 0 AND 1 IN (SELECT 1))", one) == [True] * 4
    zero = {"SELECT 0": [(0,)]}
    assert run("FIRST(id % 2 IN (SELECT 0))", "FIRST(value * 0 IN (SELECT 0))", zero) == [False, True, False, True]


def test_trino_exists_subqueries() -> None:
    one = {"SELECT 1": [(1,)]}
    assert run("LAST(A.value < 0 OR EXISTS(SELECT 1))", "FIRST(A.value < 0 OR EXISTS(SELECT 1))", one) == [True] * 4


def test_scalar_subquery_without_rows_is_null_and_with_two_rows_fails() -> None:
    assert run("(SELECT v FROM t)", "true", {"SELECT v FROM t": []}) == [None] * 4
    spec = parse_clause(CLAUSE.format(measure="(SELECT v FROM t)", define="true"))
    with pytest.raises(PatternValidationError, match="returned more than one row") as info:
        subqueries.inline(spec, {"SELECT v FROM t": [(1,), (2,)]})
    assert info.value.position == spec.text.index("(SELECT v")


def test_in_an_empty_subquery_is_false_even_for_null_and_not_in_is_true() -> None:
    empty = {"SELECT v FROM t": []}
    assert run("CAST(NULL AS BIGINT) IN (SELECT v FROM t)", "true", empty) == [False] * 4
    assert run("CAST(NULL AS BIGINT) NOT IN (SELECT v FROM t)", "true", empty) == [True] * 4
    assert run("EXISTS (SELECT v FROM t)", "true", empty) == [False] * 4


def test_in_a_subquery_with_null_follows_three_valued_logic() -> None:
    rows = {"SELECT v FROM t": [(100,), (None,), (100,)]}  # duplicates collapse; the NULL stays
    assert run("FIRST(A.value) IN (SELECT v FROM t)", "true", rows) == [True, None, None, None]
    assert run("FIRST(A.value) NOT IN (SELECT v FROM t)", "true", rows) == [False, None, None, None]


def test_find_reports_every_subquery_and_inline_replaces_all() -> None:
    spec = parse_clause(CLAUSE.format(measure="(SELECT 1) + (SELECT 2)", define="A.value IN (SELECT v FROM t)"))
    assert [str(n) for n in subqueries.find(spec)] == ["A.value IN (SELECT v FROM t)", "(SELECT 1)", "(SELECT 2)"]
    inlined = subqueries.inline(spec, {"SELECT 1": [(1,)], "SELECT 2": [(2,)], "SELECT v FROM t": [(5,)]})
    assert subqueries.find(inlined) == []
    assert "MEASURES 1 + 2 AS val" in inlined.text and "DEFINE A AS A.value IN (5)" in inlined.text


def test_the_core_refuses_a_clause_with_a_subquery_at_its_position() -> None:
    clause = CLAUSE.format(measure="LAST(A.value)", define="A.value > (SELECT 10)")
    with pytest.raises(PatternValidationError, match="the row-pattern core cannot run the subquery") as info:
        list(match_recognize(parse_clause(clause), ROWS))
    assert info.value.position == clause.index("(SELECT 10)")
