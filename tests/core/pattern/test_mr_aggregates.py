"""Aggregates beyond COUNT/SUM/AVG/MIN/MAX (runtime/core/pattern/aggregates.py), through the pure core.

The first group re-runs the shapes of Trino's published row-pattern aggregation results
(``TestAggregationsInRowPatternMatching``: array_agg, max_by, count(), selective aggregation over a
SUBSET, runtime-evaluated arguments, RUNNING vs FINAL); the rest pins our documented choices (first row
wins ties, NULL handling, empty matches) and checks each fold against an independent computation.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import PatternValidationError, match_recognize, parse_clause
from timeweave.core.pattern.schema import output_columns


def run(rows: list[dict[str, Any]], clause: str, *columns: str) -> list[tuple]:
    return [tuple(r[c] for c in columns) for r in match_recognize(parse_clause(clause), rows)]


def ids(n: int) -> list[dict[str, Any]]:
    return [{"id": i} for i in range(1, n + 1)]


def test_running_array_agg_of_classifier() -> None:
    clause = """ORDER BY id MEASURES RUNNING array_agg(CLASSIFIER(A)) AS labels
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A*) DEFINE A AS true"""
    assert run(ids(4), clause, "id", "labels") == [
        (1, ["A"]), (2, ["A", "A"]), (3, ["A", "A", "A"]), (4, ["A", "A", "A", "A"]),
    ]


def test_array_agg_of_a_runtime_evaluated_argument_per_partition() -> None:
    rows = [{"part": p, "id": i, "value": v} for p, i, v in
            [("p1", 1, "a"), ("p1", 2, "b"), ("p1", 3, "c"), ("p1", 4, "d"), ("p2", 1, "g"), ("p2", 2, "h")]]
    clause = """PARTITION BY part ORDER BY id MEASURES array_agg(value || CLASSIFIER()) AS m
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (X Y Z*) DEFINE X AS true"""
    assert run(rows, clause, "part", "id", "m") == [
        ("p1", 1, ["aX"]), ("p1", 2, ["aX", "bY"]), ("p1", 3, ["aX", "bY", "cZ"]), ("p1", 4, ["aX", "bY", "cZ", "dZ"]),
        ("p2", 1, ["gX"]), ("p2", 2, ["gX", "hY"]),
    ]


def test_one_row_per_match_array_agg() -> None:
    rows = [{"id": i, "value": v} for i, v in enumerate("abcdef", start=1)]
    clause = """ORDER BY id MEASURES array_agg(value || CLASSIFIER()) AS m ONE ROW PER MATCH
        PATTERN (X Y Z) DEFINE X AS true"""
    assert run(rows, clause, "m") == [(["aX", "bY", "cZ"],), (["dX", "eY", "fZ"],)]


def test_max_by_with_a_runtime_evaluated_key() -> None:
    rows = [{"id": i, "value": v} for i, v in enumerate("pqrs", start=1)]
    clause = """ORDER BY id MEASURES max_by(value, CLASSIFIER()) AS m ALL ROWS PER MATCH
        PATTERN (A B D C) DEFINE A AS true"""
    assert run(rows, clause, "id", "m") == [(1, "p"), (2, "q"), (3, "r"), (4, "r")]


def test_selective_aggregation_over_a_subset() -> None:
    rows = [{"id": i, "value": v} for i, v in enumerate("abcd", start=1)]
    clause = """ORDER BY id MEASURES array_agg(U.id) AS m1, array_agg(CLASSIFIER(U)) AS m2,
            array_agg(U.value || CLASSIFIER(U)) AS m3
        ALL ROWS PER MATCH PATTERN (X Y Z Y) SUBSET U = (X, Z) DEFINE X AS true"""
    assert run(rows, clause, "id", "m1", "m2", "m3") == [
        (1, [1], ["X"], ["aX"]), (2, [1], ["X"], ["aX"]),
        (3, [1, 3], ["X", "Z"], ["aX", "cZ"]), (4, [1, 3], ["X", "Z"], ["aX", "cZ"]),
    ]


def test_count_without_arguments_counts_rows() -> None:
    clause = """ORDER BY id MEASURES count(*) AS m1, count() AS m2, RUNNING count() AS m3, FINAL count() AS m4
        ALL ROWS PER MATCH PATTERN (X Y Z) DEFINE X AS id > 1"""
    assert run(ids(4), clause, "id", "m1", "m2", "m3", "m4") == [(2, 1, 1, 1, 3), (3, 2, 2, 2, 3), (4, 3, 3, 3, 3)]


def test_running_and_final_array_agg_with_match_number() -> None:
    clause = """ORDER BY id MEASURES RUNNING array_agg(CLASSIFIER()) AS r, FINAL array_agg(lower(CLASSIFIER())) AS f,
            RUNNING sum(MATCH_NUMBER() * 100) AS rm
        ALL ROWS PER MATCH PATTERN (A B) DEFINE A AS true"""
    assert run(ids(4), clause, "id", "r", "f", "rm") == [
        (1, ["A"], ["a", "b"], 100), (2, ["A", "B"], ["a", "b"], 200),
        (3, ["A"], ["a", "b"], 200), (4, ["A", "B"], ["a", "b"], 400),
    ]


def test_aggregates_in_define_are_running_and_see_the_tentative_row() -> None:
    # B rows are taken while fewer than two of them have v > 2; count_if runs per thread in DEFINE.
    rows = [{"id": i, "v": v} for i, v in enumerate([5, 1, 7, 8, 2], start=1)]
    clause = """ORDER BY id MEASURES array_agg(B.v) AS bs ONE ROW PER MATCH
        PATTERN (A B+) DEFINE B AS count_if(B.v > 2) < 2"""
    assert run(rows, clause, "bs") == [([1, 7],), ([2],)]


def test_bool_and_bool_or_every_ignore_nulls() -> None:
    rows = [{"id": i, "v": v} for i, v in enumerate([3, None, 5, -1], start=1)]
    clause = """ORDER BY id MEASURES bool_and(v > 0) AS a, every(v > 0) AS e, bool_or(v < 0) AS o,
            count_if(v > 0) AS c
        ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true"""
    assert run(rows, clause, "a", "e", "o", "c") == [
        (True, True, False, 1), (True, True, False, 1), (True, True, False, 2), (False, False, True, 2),
    ]


def test_arbitrary_is_the_first_non_null_value_and_by_ties_keep_the_first_row() -> None:
    rows = [{"id": i, "v": v, "k": k} for i, (v, k) in enumerate([(None, 1), ("x", 3), ("y", 3), ("z", None)], 1)]
    clause = """ORDER BY id MEASURES arbitrary(v) AS a, any_value(v) AS av, max_by(v, k) AS mx, min_by(id, k) AS mn
        ONE ROW PER MATCH PATTERN (A+) DEFINE A AS true"""
    assert run(rows, clause, "a", "av", "mx", "mn") == [("x", "x", "x", 1)]


def test_empty_match_aggregates() -> None:
    clause = """ORDER BY id MEASURES array_agg(A.id) AS arr, count_if(A.id > 0) AS c, bool_and(A.id > 0) AS b,
            stddev(A.id) AS s, max_by(A.id, A.id) AS m
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A*) DEFINE A AS id > 5"""
    assert run(ids(1), clause, "arr", "c", "b", "s", "m") == [(None, 0, None, None, None)]


def test_array_agg_keeps_nulls() -> None:
    rows = [{"id": i, "v": v} for i, v in enumerate([1, None, 3], start=1)]
    clause = "ORDER BY id MEASURES array_agg(v) AS arr ONE ROW PER MATCH PATTERN (A+) DEFINE A AS true"
    assert run(rows, clause, "arr") == [([1, None, 3],)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=1, max_size=12))
def test_variance_family_matches_statistics(values: list[int | None]) -> None:
    rows = [{"id": i, "v": v} for i, v in enumerate(values)]
    clause = """ORDER BY id MEASURES stddev(v) AS s, stddev_samp(v) AS ss, stddev_pop(v) AS sp,
            variance(v) AS va, var_samp(v) AS vs, var_pop(v) AS vp
        ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true"""
    out = run(rows, clause, "s", "ss", "sp", "va", "vs", "vp")
    for i, (s, ss, sp, va, vs, vp) in enumerate(out):
        present = [float(v) for v in values[: i + 1] if v is not None]
        expected_samp = statistics.variance(present) if len(present) >= 2 else None
        expected_pop = statistics.pvariance(present) if present else None
        for got, want in ((va, expected_samp), (vs, expected_samp), (vp, expected_pop)):
            assert (got is None) == (want is None) and (got is None or math.isclose(got, want, abs_tol=1e-9))
        for got, want in ((s, expected_samp), (ss, expected_samp), (sp, expected_pop)):
            assert (got is None) == (want is None) and (got is None or math.isclose(got, math.sqrt(want), abs_tol=1e-9))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 4))), min_size=1, max_size=10))
def test_by_aggregates_match_a_direct_scan(pairs: list[tuple[int, int | None]]) -> None:
    rows = [{"id": i, "x": x, "y": y} for i, (x, y) in enumerate(pairs)]
    clause = """ORDER BY id MEASURES max_by(x, y) AS mx, min_by(x, y) AS mn
        ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true"""
    for i, (mx, mn) in enumerate(run(rows, clause, "mx", "mn")):
        seen = [(x, y) for x, y in pairs[: i + 1] if y is not None]
        assert mx == (next(x for x, y in seen if y == max(y for _, y in seen)) if seen else None)
        assert mn == (next(x for x, y in seen if y == min(y for _, y in seen)) if seen else None)


def test_output_types() -> None:
    spec = parse_clause("""PARTITION BY k ORDER BY t MEASURES array_agg(A.p) AS arr, max_by(A.s, A.p) AS mb,
        stddev(A.p) AS sd, count_if(A.p > 1) AS ci, bool_or(A.p > 1) AS bo, count() AS n PATTERN (A+)""")
    assert output_columns(spec, {"k": "string", "t": "timestamp", "p": "bigint", "s": "string"}) == [
        ("k", "string"), ("arr", "array<bigint>"), ("mb", "string"), ("sd", "double"), ("ci", "bigint"),
        ("bo", "boolean"), ("n", "bigint"),
    ]


@pytest.mark.parametrize(("clause", "message"), [
    ("MEASURES max_by(A.x) AS m PATTERN (A)", "expected ','"),
    ("MEASURES array_agg(A.x, A.y) AS m PATTERN (A)", "ARRAY_AGG takes one argument"),
    ("MEASURES stddev(A.x, 2) AS m PATTERN (A)", "STDDEV takes one argument"),
])
def test_arity_errors_are_positioned(clause: str, message: str) -> None:
    with pytest.raises(QuerySyntaxError, match=message) as caught:
        parse_clause(clause)
    assert "col" in str(caught.value)


def test_two_argument_aggregate_must_use_one_variable() -> None:
    with pytest.raises(PatternValidationError, match="single pattern variable, found A, B"):
        parse_clause("MEASURES max_by(A.x, B.y) AS m PATTERN (A B)")


def test_aggregates_cannot_nest() -> None:
    with pytest.raises(PatternValidationError, match="cannot be nested inside an aggregate"):
        parse_clause("MEASURES array_agg(count_if(A.x > 1)) AS m PATTERN (A)")


def test_printing_round_trips() -> None:
    spec = parse_clause("MEASURES RUNNING max_by(A.x, A.y) AS m, count_if(A.x > 0) AS c PATTERN (A+)")
    again = parse_clause(f"MEASURES {spec.measures[0].expr} AS m, {spec.measures[1].expr} AS c PATTERN (A+)")
    assert again.measures == spec.measures


def test_array_agg_state_pickles_flat_and_compares_by_value() -> None:
    import pickle

    from timeweave.core.pattern.aggregates import ArrayChain

    long = ArrayChain.of(list(range(50_000)))  # a recursive pickle / == would pass the recursion limit
    again = pickle.loads(pickle.dumps(long))
    assert again == long and hash(again) == hash(long) and again is not long
    assert ArrayChain.of([1, None]) != ArrayChain.of([1, 2]) and ArrayChain.of([None]) == ArrayChain.of([None])


def test_array_agg_in_define_over_a_long_run() -> None:
    rows = [{"id": i, "v": i % 3} for i in range(1500)]
    clause = """ORDER BY id MEASURES count(*) AS n, array_agg(A.v) AS arr ONE ROW PER MATCH
        PATTERN (A+ C) DEFINE A AS array_agg(A.v) IS NOT NULL, C AS id = 1499"""
    [(n, arr)] = run(rows, clause, "n", "arr")
    assert n == 1500 and arr == [i % 3 for i in range(1499)]


# -- arrays and the scalar functions over them ------------------------------------------------------------
def test_array_constructor_compares_with_array_agg_in_define() -> None:
    # every alternative thread is kept until X checks the whole label history (Trino's forking threads)
    clause = """ORDER BY id MEASURES RUNNING array_agg(CLASSIFIER()) AS labels ALL ROWS PER MATCH
        PATTERN ((A | B | C)* X) DEFINE X AS array_agg(CLASSIFIER()) = ARRAY['C', 'A', 'B', 'X']"""
    assert run(ids(4), clause, "id", "labels") == [
        (1, ["C"]), (2, ["C", "A"]), (3, ["C", "A", "B"]), (4, ["C", "A", "B", "X"]),
    ]


def test_concat_ws_over_a_running_array() -> None:
    clause = """ORDER BY id MEASURES concat_ws('', RUNNING array_agg(lower(CLASSIFIER(U)))) AS word
        ALL ROWS PER MATCH PATTERN (M A X X T C H "!") SUBSET U = (M, A, T, C, H, "!") DEFINE M AS true"""
    assert [w for (w,) in run(ids(8), clause, "word")] == ["m", "ma", "ma", "ma", "mat", "matc", "match", "match!"]


@pytest.mark.parametrize(("expression", "expected"), [
    ("cardinality(array_agg(A.v))", 3),
    ("size(ARRAY[1, NULL])", 2),
    ("element_at(array_agg(A.v), 1)", 4),
    ("element_at(array_agg(A.v), -1)", 6),
    ("element_at(array_agg(A.v), 9)", None),
    ("array_contains(array_agg(A.v), 5)", True),
    ("contains(ARRAY[1, NULL], 2)", None),
    ("contains(ARRAY[1, 2], 3)", False),
    ("array_join(array_agg(A.v), '-')", "4-5-6"),
    ("array_join(ARRAY['a', NULL, 'c'], ',', '?')", "a,?,c"),
    ("concat('n=', COUNT(*), '!')", "n=3!"),
    ("concat('a', NULL)", None),
    ("concat_ws(NULL, 'a')", None),
    ("concat_ws('/', 'a', NULL, ARRAY['b', NULL, 'c'])", "a/b/c"),
    ("substring('abcdef', 2, 3)", "bcd"),
    ("substr('abcdef', -2)", "ef"),
    ("substring('abc', 0, 2)", "ab"),
    ("substring('abc', -5, 3)", "a"),
    ("length(trim('  ab '))", 2),
    ("replace('a-b-c', '-', '')", "abc"),
    ("sqrt(16)", 4.0),
    ("ln(0)", None),
    ("power(2, 10)", 1024.0),
    ("ARRAY[FIRST(A.v), LAST(A.v)]", [4, 6]),
])
def test_scalar_functions(expression: str, expected: Any) -> None:
    rows = [{"id": i, "v": v} for i, v in enumerate([4, 5, 6], start=1)]
    clause = f"ORDER BY id MEASURES {expression} AS m ONE ROW PER MATCH PATTERN (A+) DEFINE A AS true"
    assert run(rows, clause, "m") == [(expected,)]


def test_sqrt_of_a_negative_is_nan_and_element_at_zero_fails() -> None:
    rows = [{"id": 1, "v": -4}]
    [(root,)] = run(rows, "ORDER BY id MEASURES sqrt(A.v) AS m PATTERN (A) DEFINE A AS true", "m")
    assert math.isnan(root)
    from timeweave.core.pattern import MatchRuntimeError

    with pytest.raises(MatchRuntimeError, match="element_at index 0"):
        run(rows, "ORDER BY id MEASURES element_at(array_agg(A.v), 0) AS m PATTERN (A) DEFINE A AS true", "m")


def test_function_result_types() -> None:
    spec = parse_clause("""ORDER BY t MEASURES ARRAY[A.p, 2] AS arr, element_at(array_agg(A.s), 1) AS first_s,
        concat_ws(',', array_agg(A.s)) AS joined, sqrt(A.p) AS r, cardinality(array_agg(A.p)) AS n,
        substring(A.s, 1, 2) AS sub, array_contains(array_agg(A.p), 1) AS has PATTERN (A+)""")
    assert output_columns(spec, {"t": "timestamp", "p": "bigint", "s": "string"}) == [
        ("arr", "array<bigint>"), ("first_s", "string"), ("joined", "string"), ("r", "double"), ("n", "bigint"),
        ("sub", "string"), ("has", "boolean"),
    ]


def test_array_constructor_errors_are_positioned() -> None:
    with pytest.raises(QuerySyntaxError, match=r"expected '\]'|expected \]") as caught:
        parse_clause("MEASURES ARRAY[1, 2 AS m PATTERN (A)")
    assert "col" in str(caught.value)


# -- predicates written as functions: LIKE, IS [NOT] DISTINCT FROM, IS [NOT] TRUE/FALSE, IF ----------------
@pytest.mark.parametrize(("expression", "expected"), [
    ("'abc' LIKE 'a%'", True),
    ("'abc' LIKE 'a_'", False),
    ("'abc' NOT LIKE '%c'", False),
    ("'a%c' LIKE 'a\\%c'", True),
    ("'abc' LIKE 'a\\%c'", False),
    ("'a%c' LIKE 'a!%c' ESCAPE '!'", True),
    ("'a\nb' LIKE 'a_b'", True),
    ("NULL LIKE 'a%'", None),
    ("1 IS DISTINCT FROM NULL", True),
    ("NULL IS NOT DISTINCT FROM NULL", True),
    ("2 IS DISTINCT FROM 2.0", False),
    ("NULL IS TRUE", False),
    ("NULL IS NOT FALSE", True),
    ("(1 > 0) IS TRUE", True),
    ("IF(COUNT(*) > 2, 'many', 'few')", "many"),
    ("IF(NULL, 1, 2)", 2),
    ("IF(FALSE, 1)", None),
])
def test_predicates(expression: str, expected: Any) -> None:
    rows = [{"id": i} for i in range(1, 4)]
    clause = f"ORDER BY id MEASURES {expression} AS m ONE ROW PER MATCH PATTERN (A+) DEFINE A AS true"
    assert run(rows, clause, "m") == [(expected,)]


def test_like_in_define_and_its_errors() -> None:
    rows = [{"id": i, "s": s} for i, s in enumerate(["login", "view", "buy_now", "logout"], start=1)]
    clause = """ORDER BY id MEASURES FIRST(A.s) AS first_s, LAST(B.s) AS last_s ONE ROW PER MATCH
        PATTERN (A B+) DEFINE A AS A.s LIKE 'log%', B AS B.s NOT LIKE 'log%'"""
    assert run(rows, clause, "first_s", "last_s") == [("login", "buy_now")]
    from timeweave.core.pattern import MatchRuntimeError

    with pytest.raises(MatchRuntimeError, match="escape character"):
        run(rows, "ORDER BY id MEASURES A.s LIKE 'a\\b' AS m PATTERN (A) DEFINE A AS true", "m")
    with pytest.raises(QuerySyntaxError, match="LIKE takes 2 to 3 arguments"):
        parse_clause("MEASURES LIKE(A.s) AS m PATTERN (A)")


def test_predicate_types() -> None:
    spec = parse_clause("""ORDER BY t MEASURES A.s LIKE 'x%' AS l, A.p IS DISTINCT FROM 1 AS d, A.p > 1 IS TRUE AS it,
        IF(A.p > 1, A.s, NULL) AS i PATTERN (A+)""")
    assert output_columns(spec, {"t": "timestamp", "p": "bigint", "s": "string"}) == [
        ("l", "boolean"), ("d", "boolean"), ("it", "boolean"), ("i", "string"),
    ]
