"""Core-level checks for the gaps the peers' suites found (Trino's analyzer via IoTDB's port, Flink's ITCase).

Each rule is the standard's (and Trino's); the error must be positioned at the offending token.
"""

from __future__ import annotations

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import expr as E
from timeweave.core.pattern import match_recognize, parse_clause
from timeweave.core.pattern.subqueries import find, inline

CLAUSE = "ORDER BY t MEASURES {measure} AS c PATTERN (A B+) SUBSET U = (A, B) DEFINE B AS B.v > 5"


@pytest.mark.parametrize(("measure", "message", "at"), [
    # FINAL belongs to the logical navigation inside PREV/NEXT (Trino: "FINAL semantics is not supported with
    # prev pattern recognition function")
    ("FINAL PREV(A.v)", "FINAL cannot apply to PREV; write PREV(FINAL LAST(...)) instead", "PREV"),
    ("FINAL NEXT(A.v, 2)", "FINAL cannot apply to NEXT", "NEXT"),
    ("PREV()", "PREV takes 1 or 2 arguments", ")"),
    ("NEXT()", "NEXT takes 1 or 2 arguments", ")"),
    ("CLASSIFIER(A, B)", "CLASSIFIER takes no argument or one pattern variable or subset name", ", B"),
    ("MATCH_NUMBER(A)", "MATCH_NUMBER takes no arguments", "A)"),
    ("PREV(A.v, 3000000000)", "the offset of PREV must not exceed 2147483647", "3000000000"),
    ("FIRST(A.v, 2147483648)", "the offset of FIRST must not exceed 2147483647", "2147483648"),
])
def test_function_call_errors_are_positioned(measure: str, message: str, at: str) -> None:
    text = CLAUSE.format(measure=measure)
    with pytest.raises(QuerySyntaxError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        parse_clause(text)
    assert info.value.position == text.index(at, text.index(measure)), str(info.value)


@pytest.mark.parametrize("measure", ["PREV(FINAL LAST(A.v))", "RUNNING PREV(A.v)", "FINAL LAST(A.v)",
                                     "CLASSIFIER(U)", "MATCH_NUMBER()", "PREV(A.v, 2147483647)"])
def test_the_accepted_spellings_still_parse(measure: str) -> None:
    parse_clause(CLAUSE.format(measure=measure))


def test_final_inside_prev_reads_the_final_last_row() -> None:
    rows = [{"t": i, "v": v} for i, v in enumerate([1, 7, 8, 9], 1)]
    spec = parse_clause("ORDER BY t MEASURES PREV(FINAL LAST(B.v)) AS p, PREV(RUNNING LAST(B.v)) AS r "
                        "ALL ROWS PER MATCH PATTERN (A B+) DEFINE B AS B.v > 5")
    assert [(r["p"], r["r"]) for r in match_recognize(spec, rows)] == [(8, None), (8, 1), (8, 7), (8, 8)]


@pytest.mark.parametrize(("written", "query"), [
    ("CURRENT_TIMESTAMP", "SELECT current_timestamp()"), ("current_date", "SELECT current_date()"),
    ("CURRENT_TIMESTAMP()", "SELECT current_timestamp()"),
])
def test_current_datetime_functions_are_one_value_per_query(written: str, query: str) -> None:
    # read as the uncorrelated subquery they equal: the doors evaluate them once, before matching
    spec = parse_clause(f"ORDER BY t MEASURES LAST(A.t) AS c PATTERN (A) DEFINE A AS A.t < {written}")
    [node] = find(spec)
    assert isinstance(node, E.Subquery) and node.query == query and node.kind == "scalar"
    assert node.start == spec.text.index(written)
    assert parse_clause(str(spec)) == spec  # the printed clause parses back to the same spec
    fixed = inline(spec, {query: [(5,)]})
    assert [r["c"] for r in match_recognize(fixed, [{"t": 3}, {"t": 7}])] == [3]


def test_a_column_named_like_the_function_is_still_reachable_qualified_or_quoted() -> None:
    spec = parse_clause('ORDER BY t MEASURES LAST(A."current_date") AS c, A.current_date AS d PATTERN (A)')
    assert not find(spec)
