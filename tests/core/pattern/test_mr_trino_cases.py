"""Trino's documented row-pattern results (TestRowPatternMatching), re-run through the pure core.

Each case is (input values, clause, expected rows); the expectations are Trino's published
outputs for the same VALUES and clause, so these pin the core to Trino's reading of the standard.
"""

from __future__ import annotations

from typing import Any

import pytest

from timeweave.core.pattern import MatchRuntimeError, match_recognize, parse_clause

N = None
STANDARD = """ORDER BY id
    MEASURES match_number() AS match, RUNNING LAST(value) AS val, classifier() AS label
    {rows} AFTER MATCH SKIP PAST LAST ROW {pattern} DEFINE {define}"""


def run(values: list[int], clause: str, columns: tuple[str, ...] = ("id", "match", "val", "label")) -> list[tuple]:
    rows = [{"id": i + 1, "value": v} for i, v in enumerate(values)]
    return [tuple(r[c] for c in columns) for r in match_recognize(parse_clause(clause), rows)]


def standard(values: list[int], pattern: str, define: str, rows: str = "ALL ROWS PER MATCH") -> list[tuple]:
    return run(values, STANDARD.format(rows=rows, pattern=pattern, define=define))


FOUR = [90, 80, 70, 70]


def test_simple_query() -> None:
    assert standard([90, 80, 70, 80, 90, 50, 40, 60], "PATTERN (A B+ C+)",
                    "B AS B.value < PREV (B.value), C AS C.value > PREV (C.value)") == [
        (1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C"), (5, 1, 90, "C"),
        (6, 2, 50, "A"), (7, 2, 40, "B"), (8, 2, 60, "C")]


EMPTY_EACH_ROW = [(1, 1, N, N), (2, 2, N, N), (3, 3, N, N), (4, 4, N, N)]


@pytest.mark.parametrize(
    ("pattern", "define", "expected"),
    [
        # the empty pattern is preferred over A: every row is an empty match
        ("PATTERN (() | A)", "A AS true", EMPTY_EACH_ROW),
        ("PATTERN (^A)", "A AS true", [(1, 1, 90, "A")]),
        ("PATTERN (A^)", "A AS true", []),
        ("PATTERN (^A^)", "A AS true", []),
        ("PATTERN (A$)", "A AS true", [(4, 1, 70, "A")]),
        ("PATTERN ($A)", "A AS true", []),
        ("PATTERN ($A$)", "A AS true", []),
        ("PATTERN (A B C)", "B AS B.value < PREV (B.value), C AS C.value = PREV (C.value)",
         [(2, 1, 80, "A"), (3, 1, 70, "B"), (4, 1, 70, "C")]),
        # alternation: the first matching alternative in order of declaration
        ("PATTERN (B | C | A)", "B AS B.value < PREV (B.value), C AS C.value <= PREV (C.value)",
         [(1, 1, 90, "A"), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, 70, "C")]),
        # permutation: the first in lexicographic order
        ("PATTERN (PERMUTE(B, C))", "B AS B.value < PREV (B.value), C AS C.value < PREV (C.value)",
         [(2, 1, 80, "B"), (3, 1, 70, "C")]),
        ("PATTERN (((A) (B (C))))", "B AS B.value < PREV (B.value), C AS C.value = PREV (C.value)",
         [(2, 1, 80, "A"), (3, 1, 70, "B"), (4, 1, 70, "C")]),
    ],
)
def test_row_pattern(pattern: str, define: str, expected: list[tuple]) -> None:
    assert standard(FOUR, pattern, define) == expected


GREEDY_STAR = [(1, 1, N, N), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 2, 70, "B")]
ONE_EACH = [(2, 1, 80, "B"), (3, 2, 70, "B"), (4, 3, 70, "B")]
ALL_THREE = [(2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 70, "B")]
OPTIONAL = [(1, 1, N, N), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, 70, "B")]


@pytest.mark.parametrize(
    ("quantified", "expected"),
    [
        ("B*", GREEDY_STAR), ("B*?", EMPTY_EACH_ROW), ("B+", ALL_THREE), ("B+?", ONE_EACH),
        ("B?", OPTIONAL), ("B??", EMPTY_EACH_ROW), ("B{,}", GREEDY_STAR), ("B{,}?", EMPTY_EACH_ROW),
        ("B{1,}", ALL_THREE), ("B{1,}?", ONE_EACH), ("B{2,}", ALL_THREE), ("B{2,}?", [(2, 1, 80, "B"), (3, 1, 70, "B")]),
        ("B{5,}", []), ("B{5,}?", []), ("B{,1}", OPTIONAL), ("B{,1}?", EMPTY_EACH_ROW),
        ("B{,2}", [(1, 1, N, N), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 3, 70, "B")]), ("B{,2}?", EMPTY_EACH_ROW),
        ("B{,5}", GREEDY_STAR), ("B{,5}?", EMPTY_EACH_ROW), ("B{1,1}", ONE_EACH), ("B{1,1}?", ONE_EACH),
        ("B{1,5}", ALL_THREE), ("B{1,5}?", ONE_EACH), ("B{5,7}", []), ("B{5,7}?", []), ("B{1}", ONE_EACH),
        ("B{1}?", ONE_EACH), ("B{2}", [(2, 1, 80, "B"), (3, 1, 70, "B")]), ("B{2}?", [(2, 1, 80, "B"), (3, 1, 70, "B")]),
        ("B{5}", []), ("B{5}?", []),
    ],
)
def test_pattern_quantifiers(quantified: str, expected: list[tuple]) -> None:
    assert standard(FOUR, f"PATTERN ({quantified})", "B AS B.value <= PREV (B.value)") == expected


EIGHT = [90, 80, 70, 80, 90, 50, 40, 60]


@pytest.mark.parametrize(
    ("pattern", "ids"),
    [
        ("A B+ C+", [1, 2, 3, 4, 5, 6, 7, 8]),
        ("A {- B+ -} C+", [1, 4, 5, 6, 8]),
        ("{- A -} {- B+ -} C+", [4, 5, 8]),
        ("A {- {- B+ -} C+ -}", [1, 6]),  # nested: everything in the outermost exclusion
        ("{- A B+ C+ -}", []),
        ("A B+ {- ()* -} C+", [1, 2, 3, 4, 5, 6, 7, 8]),  # excluding the empty pattern excludes nothing
        ("A {- B -}+ {- C -}+", [1, 6]),
        ("A {- B -}* {- C -}*", [1, 6]),
        ("A {- B -}{1,2} {- C -}{1,2}", [1, 6]),
        ("A {- C -}{2,3} {- B -}{2,3}", [3]),
    ],
)
def test_exclusions(pattern: str, ids: list[int]) -> None:
    out = standard(EIGHT, f"PATTERN ({pattern})", "B AS B.value < PREV (B.value), C AS C.value > PREV (C.value)")
    assert [row[0] for row in out] == ids


def test_back_references() -> None:
    def classes(values: list[int], define: str, pattern: str = "PATTERN ((A | B)* X)") -> list[tuple]:
        return run(values, f"MEASURES CLASSIFIER() AS label ALL ROWS PER MATCH {pattern} DEFINE {define}",
                   ("value", "label"))

    assert classes([1, 1], "X AS value = A.value") == [(1, "A"), (1, "X")]
    assert classes([1, 1], "X AS value = B.value") == [(1, "B"), (1, "X")]
    condition = "PREV(LAST(A.value), 3) + FIRST(A.value) + PREV(LAST(B.value), 2)"
    out = run([1, 2, 3, 4, 5, 6], f"ORDER BY value MEASURES CLASSIFIER() AS label, {condition} AS c "
              f"ALL ROWS PER MATCH PATTERN ((A | B)* X) DEFINE X AS value = {condition}", ("value", "label", "c"))
    assert out == [(1, "B", N), (2, "A", N), (3, "A", N), (4, "A", N), (5, "B", 6), (6, "X", 6)]
    condition = "PREV(CLASSIFIER(U), 1) = 'A' AND LAST(CLASSIFIER(), 3) = 'B' AND FIRST(CLASSIFIER(U)) = 'B'"
    out = run([1, 2, 3, 4, 5], f"ORDER BY value MEASURES CLASSIFIER() AS label, {condition} AS c "
              f"ALL ROWS PER MATCH PATTERN ((A | B)* X $) SUBSET U = (A, B) DEFINE X AS {condition}",
              ("value", "label", "c"))
    assert out == [(1, "B", N), (2, "B", False), (3, "A", False), (4, "A", True), (5, "X", True)]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("PATTERN (()* | B)", EMPTY_EACH_ROW),
        ("PATTERN (()+ | B)", EMPTY_EACH_ROW),
        ("PATTERN ((){5,} | B)", EMPTY_EACH_ROW),
        ("PATTERN (B | ()*)", [(1, 1, N, N), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, N, N)]),
        ("PATTERN ((B ()*)*)", [(1, 1, N, N), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 3, N, N)]),
        ("PATTERN ((B ()*)*?)", EMPTY_EACH_ROW),
        ("PATTERN (^* | B)", EMPTY_EACH_ROW),
        ("PATTERN (^+ | B)", [(1, 1, N, N), (2, 2, 80, "B"), (3, 3, 70, "B")]),
        ("PATTERN (^* A B)", [(1, 1, 90, "A"), (2, 1, 80, "B")]),
        ("PATTERN ($* | B)", EMPTY_EACH_ROW),
        ("PATTERN ($+ | B)", [(2, 1, 80, "B"), (3, 2, 70, "B")]),
        ("PATTERN (B A $+)", [(3, 1, 70, "B"), (4, 1, 70, "A")]),
    ],
)
def test_empty_cycles(pattern: str, expected: list[tuple]) -> None:
    assert standard(FOUR, pattern, "B AS B.value < PREV (B.value)") == expected


@pytest.mark.parametrize(
    ("rows", "pattern", "expected"),
    [
        ("ONE ROW PER MATCH", "PATTERN (B*)", [(1, N, N), (2, 70, "B"), (3, N, N)]),
        ("", "PATTERN (B*)", [(1, N, N), (2, 70, "B"), (3, N, N)]),
        ("ONE ROW PER MATCH", "PATTERN (B+)", [(1, 70, "B")]),
        ("ALL ROWS PER MATCH", "PATTERN (B*)", [(1, N, N), (2, 80, "B"), (2, 70, "B"), (3, N, N)]),
        ("ALL ROWS PER MATCH", "PATTERN (B+)", [(1, 80, "B"), (1, 70, "B")]),
        ("ALL ROWS PER MATCH SHOW EMPTY MATCHES", "PATTERN (B*)", [(1, N, N), (2, 80, "B"), (2, 70, "B"), (3, N, N)]),
        ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "PATTERN (B*)", [(2, 80, "B"), (2, 70, "B")]),
        ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "PATTERN (B+)", [(1, 80, "B"), (1, 70, "B")]),
        ("ALL ROWS PER MATCH WITH UNMATCHED ROWS", "PATTERN (B+)", [(N, N, N), (1, 80, "B"), (1, 70, "B"), (N, N, N)]),
    ],
)
def test_output_modes(rows: str, pattern: str, expected: list[tuple]) -> None:
    clause = STANDARD.format(rows=rows, pattern=pattern, define="B AS B.value < PREV (B.value)")
    assert run(FOUR, clause, ("match", "val", "label")) == expected


SKIP_CLAUSE = """ORDER BY id MEASURES match_number() AS match, RUNNING LAST(value) AS val, classifier() AS label
    ALL ROWS PER MATCH {skip} PATTERN (A B+ C+ D?) SUBSET U = (C, D)
    DEFINE B AS B.value < PREV (B.value), C AS C.value > PREV (C.value), D AS false"""
FIRST_MATCH = [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C")]
FROM_ROW_4 = [(4, 2, 80, "A"), (5, 2, 70, "B"), (6, 2, 80, "C")]


@pytest.mark.parametrize(
    ("skip", "expected"),
    [
        ("AFTER MATCH SKIP PAST LAST ROW", FIRST_MATCH),
        ("AFTER MATCH SKIP TO NEXT ROW", [*FIRST_MATCH, (2, 2, 80, "A"), (3, 2, 70, "B"), (4, 2, 80, "C"),
                                          (4, 3, 80, "A"), (5, 3, 70, "B"), (6, 3, 80, "C")]),
        ("AFTER MATCH SKIP TO FIRST C", [*FIRST_MATCH, *FROM_ROW_4]),
        ("AFTER MATCH SKIP TO LAST B", [*FIRST_MATCH, *FROM_ROW_4]),
        ("AFTER MATCH SKIP TO B", [*FIRST_MATCH, *FROM_ROW_4]),
        ("AFTER MATCH SKIP TO U", [*FIRST_MATCH, *FROM_ROW_4]),
    ],
)
def test_after_match_skip(skip: str, expected: list[tuple]) -> None:
    assert run([90, 80, 70, 80, 70, 80], SKIP_CLAUSE.format(skip=skip)) == expected


def test_after_match_skip_errors() -> None:
    values = [90, 80, 70, 80, 70, 80]
    with pytest.raises(MatchRuntimeError, match="cannot skip to the first row of the match"):
        run(values, SKIP_CLAUSE.format(skip="AFTER MATCH SKIP TO A"))
    with pytest.raises(MatchRuntimeError, match="D is not present in the match"):
        run(values, SKIP_CLAUSE.format(skip="AFTER MATCH SKIP TO D"))


def test_unmatched_rows_already_output_in_a_match_are_not_repeated() -> None:
    clause = """ORDER BY id MEASURES match_number() AS match, classifier() AS label
        ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B{2}) DEFINE B AS B.value < PREV (B.value)"""
    assert run([100, 100, 90, 80, 70, 100], clause, ("id", "match", "value", "label")) == [
        (1, N, 100, N), (2, 1, 100, "A"), (3, 1, 90, "B"), (4, 1, 80, "B"),
        (3, 2, 90, "A"), (4, 2, 80, "B"), (5, 2, 70, "B"), (6, N, 100, N)]


def test_union_variables() -> None:
    clause = """ORDER BY id MEASURES match_number() AS match, RUNNING LAST(value) AS val,
                    classifier(U) AS lower_or_higher, classifier(W) AS label
        ALL ROWS PER MATCH PATTERN ((L | H) A) SUBSET U = (L, H), W = (A, L, H)
        DEFINE A AS A.value = 80, L AS L.value < 80, H AS H.value > 80"""
    assert run([90, 80, 70, 80], clause, ("id", "match", "val", "lower_or_higher", "label")) == [
        (1, 1, 90, "H", "H"), (2, 1, 80, "H", "A"), (3, 2, 70, "L", "L"), (4, 2, 80, "L", "A")]


@pytest.mark.parametrize(
    ("measure", "expected"),
    [
        ("value", [10, 20, 30]), ("LAST(value)", [10, 20, 30]), ("RUNNING LAST(value)", [10, 20, 30]),
        ("FINAL LAST(value)", [30, 30, 30]), ("FIRST(value)", [10, 10, 10]), ("RUNNING FIRST(value)", [10, 10, 10]),
        ("FINAL FIRST(value)", [10, 10, 10]), ("FINAL LAST(value, 2)", [10, 10, 10]), ("FIRST(value, 2)", [30, 30, 30]),
        ("LAST(value, 10)", [N, N, N]), ("FIRST(value, 10)", [N, N, N]), ("PREV(value)", [N, 10, 20]),
        ("NEXT(value)", [20, 30, N]), ("NEXT(FIRST(value), 2)", [30, 30, 30]), ("NEXT(FIRST(value), 10)", [N, N, N]),
        ("PREV(FIRST(value), 10)", [N, N, N]), ("PREV(FIRST(value, 10), 2)", [N, N, N]),
        ("PREV(LAST(value, 10), 2)", [N, N, N]),
    ],
)
def test_navigation_functions(measure: str, expected: list[Any]) -> None:
    clause = f"ORDER BY id MEASURES {measure} AS measure ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true"
    assert [m for _, m in run([10, 20, 30], clause, ("id", "measure"))] == expected


@pytest.mark.parametrize(
    ("measure", "expected"),
    [("PREV(B.value, 4)", N), ("PREV(B.value, 3)", 10), ("PREV(B.value, 2)", 20), ("NEXT(B.value, 1)", 40),
     ("NEXT(B.value, 2)", N)],
)
def test_navigation_outside_the_match_within_the_partition(measure: str, expected: Any) -> None:
    clause = f"ORDER BY id MEASURES {measure} AS measure ONE ROW PER MATCH PATTERN (A B) DEFINE B AS B.value = PREV(B.value)"
    assert run([10, 20, 30, 30, 40], clause, ("measure",)) == [(expected,)]


def test_classifier_past_the_current_row() -> None:
    clause = """ORDER BY id MEASURES CLASSIFIER() AS label, NEXT(CLASSIFIER()) AS next_label ALL ROWS PER MATCH
        PATTERN (A B+ C+) DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value)"""
    # in MEASURES the match is complete: the next row's label is known
    assert run([90, 80, 70, 80], clause, ("id", "value", "label", "next_label")) == [
        (1, 90, "A", "B"), (2, 80, "B", "B"), (3, 70, "B", "C"), (4, 80, "C", N)]
    # in DEFINE no row after the current one is matched yet: NULL, so A never holds
    clause = "ORDER BY id MEASURES value AS val ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS NEXT(CLASSIFIER()) = 'A'"
    assert run([90, 80, 70, 80], clause) == []


def test_case_sensitive_labels() -> None:
    clause = """ORDER BY id MEASURES CLASSIFIER() AS label ALL ROWS PER MATCH PATTERN (a "b"+ C+)
        DEFINE "b" AS "b".value < PREV("b".value), C AS C.value > PREV(C.value)"""
    assert run([90, 80, 70, 80], clause, ("id", "label")) == [(1, "A"), (2, "b"), (3, "b"), (4, "C")]


def test_scalar_functions() -> None:
    clause = """ORDER BY id MEASURES CAST(lower(LAST(CLASSIFIER())) || '_label' AS varchar(7)) AS label
        ALL ROWS PER MATCH PATTERN (A B+) DEFINE B AS B.value + 10 < abs(PREV (B.value))"""
    assert run([90, 80, 60], clause, ("id", "label")) == [(2, "a_label"), (3, "b_label")]


def test_running_and_final() -> None:
    clause = """ORDER BY id MEASURES CLASSIFIER() AS label, FINAL LAST(CLASSIFIER()) AS final_label,
            RUNNING LAST(value) AS running_value, FINAL LAST(value) AS final_value,
            RUNNING LAST(A.value) AS a_running, FINAL LAST(A.value) AS a_final,
            RUNNING LAST(B.value) AS b_running, FINAL LAST(B.value) AS b_final,
            RUNNING LAST(C.value) AS c_running, FINAL LAST(C.value) AS c_final
        ALL ROWS PER MATCH PATTERN (A B+ C+) DEFINE B AS B.value < PREV (B.value), C AS C.value > PREV (C.value)"""
    columns = ("id", "label", "final_label", "running_value", "final_value", "a_running", "a_final", "b_running",
               "b_final", "c_running", "c_final")
    assert run([90, 80, 70, 100, 200], clause, columns) == [
        (1, "A", "C", 90, 200, 90, 90, N, 70, N, 200),
        (2, "B", "C", 80, 200, 90, 90, 80, 70, N, 200),
        (3, "B", "C", 70, 200, 90, 90, 70, 70, N, 200),
        (4, "C", "C", 100, 200, 90, 90, 70, 70, 100, 200),
        (5, "C", "C", 200, 200, 90, 90, 70, 70, 200, 200)]


def test_partitioning_and_ordering_of_unordered_input() -> None:
    rows = [{"id": i, "part": p, "value": v} for i, p, v in [
        (1, "p1", 90), (2, "p1", 80), (6, "p1", 80), (2, "p2", 20), (2, "p3", 60), (1, "p3", 50), (3, "p1", 70),
        (4, "p1", 80), (5, "p1", 90), (1, "p2", 20), (3, "p3", 70), (3, "p2", 10)]]
    spec = parse_clause("""PARTITION BY part ORDER BY id
        MEASURES match_number() AS match, PREV(RUNNING LAST(value)) AS val, classifier() AS label
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (B+) DEFINE B AS B.value < PREV (B.value)""")
    out = [(r["part"], r["id"], r["match"], r["val"], r["label"]) for r in match_recognize(spec, rows)]
    assert out == [("p1", 2, 1, 90, "B"), ("p1", 3, 1, 80, "B"), ("p1", 6, 2, 90, "B"), ("p2", 3, 1, 20, "B")]
    assert list(match_recognize(spec, [])) == []


def test_output_layout() -> None:
    row = {"id": "ordering", "part": "partitioning", "value": 90}
    clause = "PARTITION BY part ORDER BY id MEASURES CLASSIFIER() AS classy {rows} PATTERN (A) DEFINE A AS true"
    all_rows = list(match_recognize(parse_clause(clause.format(rows="ALL ROWS PER MATCH")), [row]))
    assert [list(r.items()) for r in all_rows] == [[("part", "partitioning"), ("id", "ordering"), ("classy", "A"),
                                                    ("value", 90)]]
    one_row = list(match_recognize(parse_clause(clause.format(rows="ONE ROW PER MATCH")), [row]))
    assert [list(r.items()) for r in one_row] == [[("part", "partitioning"), ("classy", "A")]]


def test_all_rows_without_measures() -> None:
    rows = [{"id": i, "part": p, "value": v} for i, p, v in [(5, "p2", 10), (2, "p1", 90), (1, "p1", 80),
                                                             (4, "p2", 20), (3, "p1", 30)]]
    spec = parse_clause("PARTITION BY part ORDER BY id ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW "
                        "PATTERN (B+) DEFINE B AS B.value < PREV (B.value)")
    # partitions come out in order of first appearance (SQL leaves it unspecified): compare as a set
    assert sorted((r["id"], r["part"]) for r in match_recognize(spec, rows)) == [(3, "p1"), (5, "p2")]


@pytest.mark.parametrize(
    ("measure", "expected"),
    [
        ("FIRST(A.value) IN (300, LAST(A.value))", [False, False, True, True]),
        ("CLASSIFIER() IN ('X', lower(CLASSIFIER()))", [False, False, False, False]),
        ("MATCH_NUMBER() IN (0, MATCH_NUMBER())", [True, True, True, True]),
    ],
)
def test_in_predicate(measure: str, expected: list[bool]) -> None:
    clause = (f"ORDER BY id MEASURES {measure} AS val ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW "
              "PATTERN (A+) DEFINE A AS true")
    assert [v for (v,) in run([100, 200, 300, 400], clause, ("val",))] == expected


def test_potentially_exponential_match_is_pruned() -> None:
    clause = "MEASURES CLASSIFIER() AS classy PATTERN ((A+)+ B) DEFINE A AS value = 1, B AS value = 2"
    assert run([1] * 60, clause, ("classy",)) == []


def test_exponential_match_found_last() -> None:
    # CLASSIFIER in DEFINE makes every label sequence distinct: all 2^8 prefixes stay alive, and the
    # only match, B B B B B B B B LAST, is the least preferred one
    condition = " AND ".join(f"FIRST(CLASSIFIER(), {k}) = 'B'" for k in range(8))
    clause = (f"ORDER BY value MEASURES CLASSIFIER() AS classy ALL ROWS PER MATCH PATTERN ((A | B)+ LAST) "
              f"DEFINE LAST AS {condition}")
    assert [c for (c,) in run(list(range(1, 10)), clause, ("classy",))] == ["B"] * 8 + ["LAST"]


def test_running_aggregates_in_all_rows() -> None:
    clause = "ORDER BY id MEASURES RUNNING sum(id) AS s ALL ROWS PER MATCH PATTERN (A*) DEFINE A AS true"
    assert run(list(range(8)), clause, ("id", "s")) == [(i, i * (i + 1) // 2) for i in range(1, 9)]


def test_aggregates_see_the_tentative_label_of_the_current_row() -> None:
    clause = """ORDER BY id MEASURES RUNNING avg(B.value) AS avg_b, CLASSIFIER() AS classy ALL ROWS PER MATCH
        PATTERN ((A | B)*) DEFINE A AS avg(B.value) = 5"""
    assert run([4, 6, 0], clause, ("id", "classy", "avg_b")) == [(1, "B", 4.0), (2, "B", 5.0), (3, "A", 5.0)]
    clause = """ORDER BY id MEASURES RUNNING avg(A.value) AS avg_a, CLASSIFIER() AS classy ALL ROWS PER MATCH
        PATTERN ((A | B)*) DEFINE A AS avg(A.value) = 5"""
    assert run([4, 6, 0, 5], clause, ("id", "classy", "avg_a")) == [
        (1, "B", N), (2, "B", N), (3, "B", N), (4, "A", 5.0)]
    rows = [{"id": i, "part": p, "value": v} for p, v in (("p1", 1), ("p2", 2)) for i in range(1, 6)]
    spec = parse_clause("""PARTITION BY part ORDER BY id MEASURES RUNNING sum(value) AS s, CLASSIFIER() AS classy
        ALL ROWS PER MATCH PATTERN ((A | B)*) DEFINE A AS sum(value) > 4""")
    assert [(r["part"], r["id"], r["classy"], r["s"]) for r in match_recognize(spec, rows)] == [
        ("p1", 1, "B", 1), ("p1", 2, "B", 2), ("p1", 3, "B", 3), ("p1", 4, "B", 4), ("p1", 5, "A", 5),
        ("p2", 1, "B", 2), ("p2", 2, "B", 4), ("p2", 3, "A", 6), ("p2", 4, "A", 8), ("p2", 5, "A", 10)]
