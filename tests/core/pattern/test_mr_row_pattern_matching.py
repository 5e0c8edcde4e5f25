"""Layer 3: clause text + rows → output rows, one test per feature (Trino's TestRowPatternMatching shape)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import MatchRuntimeError, match_partition, match_recognize, parse_clause


def rows_of(prices: list[Any], **extra: list[Any]) -> list[dict[str, Any]]:
    rows = [{"id": i + 1, "price": p} for i, p in enumerate(prices)]
    for column, values in extra.items():
        for row, value in zip(rows, values, strict=True):
            row[column] = value
    return rows


def mr(clause: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list(match_partition(parse_clause(clause), rows))


def project(rows: list[dict[str, Any]], *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(r[c] for c in columns) for r in rows]


def test_flink_docs_running_aggregates_in_define() -> None:
    # Flink docs, "Pattern navigation" table: #5 (35) is not a B: SUM(price) = 111 and SUM(B.price) = 101
    out = mr("""
        MEASURES COUNT(B.*) AS nb, SUM(price) AS total, SUM(B.price) AS total_b, CLASSIFIER() AS last_label
        PATTERN (A B+)
        DEFINE A AS A.price >= 10,
               B AS B.price > A.price AND SUM(price) < 100 AND SUM(B.price) < 80""", rows_of([10, 15, 20, 31, 35]))
    assert out == [{"nb": 3, "total": 76, "total_b": 66, "last_label": "B"}]


def test_flink_docs_logical_offsets() -> None:
    # 35 is not mapped: 35 < 2 * LAST(B.price, 2) = 40
    out = mr("""
        MEASURES LAST(B.price) AS last_b, FIRST(B.price, 1) AS second_b, LAST(B.price, 5) AS too_far
        PATTERN (A B+)
        DEFINE A AS A.price >= 10,
               B AS (LAST(B.price, 1) IS NULL OR B.price > LAST(B.price, 1)) AND
                    (LAST(B.price, 2) IS NULL OR B.price > 2 * LAST(B.price, 2))""", rows_of([10, 15, 20, 31, 35]))
    assert out == [{"last_b": 31, "second_b": 20, "too_far": None}]


def test_flink_docs_universal_variable_offsets() -> None:
    clause = """MEASURES CLASSIFIER(B) AS b, LAST(price, 1) AS before_c
                PATTERN (A B? C) DEFINE B AS B.price < 20, C AS LAST(price, 1) < C.price"""
    assert mr(clause, rows_of([10, 15, 20])) == [{"b": "B", "before_c": 15}]  # LAST(price, 1) is B's row
    assert mr(clause, rows_of([10, 20])) == [{"b": None, "before_c": 10}]  # ... or A's when there is no B


def test_column_reference_is_running_last_of_its_variable() -> None:
    # in DEFINE, A.price is the current row when classifying it as A, B.price the last B so far
    out = mr("MEASURES A.price AS a, B.price AS b PATTERN (A+ B) DEFINE A AS A.price < 5, B AS B.price > A.price",
             rows_of([1, 2, 3]))
    assert out == [{"a": 2, "b": 3}]


def test_physical_navigation_leaves_the_match_but_not_the_partition() -> None:
    out = mr("""MEASURES PREV(A.price) AS before, PREV(A.price, 2) AS two_before, PREV(A.price, 9) AS outside,
                         NEXT(A.price) AS after, PREV(FIRST(A.price), 1) AS before_first, NEXT(LAST(A.price, 1), 2) AS n
                PATTERN (A{2}) DEFINE A AS A.price > 10""", rows_of([1, 20, 30, 4]))
    assert out == [{"before": 20, "two_before": 1, "outside": None, "after": 4, "before_first": 1, "n": 4}]


def test_next_in_define_reads_ahead() -> None:
    # rows followed by a higher price; the last row has no next row (NULL): no match
    out = mr("MEASURES A.id AS id PATTERN (A) DEFINE A AS NEXT(A.price) > A.price", rows_of([1, 3, 2, 5]))
    assert out == [{"id": 1}, {"id": 3}]


def test_output_is_streamed_before_the_input_ends() -> None:
    consumed: list[int] = []

    def source() -> Iterator[dict[str, Any]]:
        for row in rows_of([1, 3, 2, 5, 4]):
            consumed.append(row["id"])
            yield row

    results = match_partition(parse_clause("MEASURES A.id AS id PATTERN (A) DEFINE A AS NEXT(A.price) > A.price"),
                              source())
    assert next(results) == {"id": 1}
    assert consumed == [1, 2]  # decided as soon as the row after it (lookahead 1) arrived
    assert next(results) == {"id": 3}
    assert consumed == [1, 2, 3, 4]


def test_all_rows_per_match_running_and_final() -> None:
    out = mr("""ORDER BY id MEASURES RUNNING LAST(B.price) AS running_b, FINAL LAST(B.price) AS final_b,
                         COUNT(*) AS running_count, FINAL COUNT(*) AS final_count,
                         CLASSIFIER() AS cls, MATCH_NUMBER() AS mn
                ALL ROWS PER MATCH
                PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)""", rows_of([5, 1, 2, 3, 0, 4]))
    assert out == [
        {"id": 2, "running_b": None, "final_b": 3, "running_count": 1, "final_count": 3, "cls": "A", "mn": 1,
         "price": 1},
        {"id": 3, "running_b": 2, "final_b": 3, "running_count": 2, "final_count": 3, "cls": "B", "mn": 1, "price": 2},
        {"id": 4, "running_b": 3, "final_b": 3, "running_count": 3, "final_count": 3, "cls": "B", "mn": 1, "price": 3},
        {"id": 5, "running_b": None, "final_b": 4, "running_count": 1, "final_count": 2, "cls": "A", "mn": 2,
         "price": 0},
        {"id": 6, "running_b": 4, "final_b": 4, "running_count": 2, "final_count": 2, "cls": "B", "mn": 2, "price": 4},
    ]
    assert list(out[0]) == ["id", "running_b", "final_b", "running_count", "final_count", "cls", "mn", "price"]


def test_all_rows_output_columns_partition_order_measures_rest() -> None:
    spec = parse_clause("PARTITION BY sym ORDER BY id MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A)")
    out = list(match_recognize(spec, [{"price": 1, "id": 1, "sym": "x"}]))
    assert out == [{"sym": "x", "id": 1, "c": "A", "price": 1}]
    assert list(out[0]) == ["sym", "id", "c", "price"]


def test_one_row_per_match_is_partition_columns_then_measures() -> None:
    spec = parse_clause("PARTITION BY sym ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS price > 0")
    rows = [{"sym": s, "id": i, "price": p} for s, i, p in [("x", 2, 1), ("y", 1, 1), ("x", 1, 1), ("x", 3, 0)]]
    assert list(match_recognize(spec, rows)) == [{"sym": "x", "n": 2}, {"sym": "y", "n": 1}]


def test_exclusions_hide_rows_from_all_rows_output_only() -> None:
    out = mr("""MEASURES COUNT(*) AS n, FINAL COUNT(B.*) AS nb ALL ROWS PER MATCH
                PATTERN (A {- B+ -} C) DEFINE B AS B.price < 0, C AS C.price > 0""", rows_of([1, -1, -2, 3]))
    assert project(out, "id", "n", "nb") == [(1, 1, 2), (4, 4, 2)]


def test_empty_matches_in_every_output_mode() -> None:
    rows = rows_of([5, 20, 30, 5])
    pattern = "PATTERN (A*) DEFINE A AS price > 10"
    measures = "MEASURES COUNT(*) AS n, MATCH_NUMBER() AS mn, CLASSIFIER() AS cls"
    # ONE ROW PER MATCH: an empty match is a match (one row, measures over no rows)
    assert project(mr(f"{measures} {pattern}", rows), "n", "mn", "cls") == [(0, 1, None), (2, 2, "A"), (0, 3, None)]
    # ALL ROWS PER MATCH (SHOW EMPTY MATCHES): the empty match shows its starting row
    shown = mr(f"{measures} ALL ROWS PER MATCH {pattern}", rows)
    assert project(shown, "id", "n", "mn", "cls") == [(1, 0, 1, None), (2, 1, 2, "A"), (3, 2, 2, "A"), (4, 0, 3, None)]
    omitted = mr(f"{measures} ALL ROWS PER MATCH OMIT EMPTY MATCHES {pattern}", rows)
    assert project(omitted, "id", "n", "mn") == [(2, 1, 2), (3, 2, 2)]
    with_unmatched = mr(f"{measures} ALL ROWS PER MATCH WITH UNMATCHED ROWS {pattern}", rows)
    assert project(with_unmatched, "id", "n", "mn") == [(1, 0, 1), (2, 1, 2), (3, 2, 2), (4, 0, 3)]


def test_with_unmatched_rows() -> None:
    out = mr("""MEASURES MATCH_NUMBER() AS mn, CLASSIFIER() AS cls ALL ROWS PER MATCH WITH UNMATCHED ROWS
                PATTERN (A+) DEFINE A AS price > 10""", rows_of([5, 20, 30, 5]))
    assert project(out, "id", "mn", "cls") == [(1, None, None), (2, 1, "A"), (3, 1, "A"), (4, None, None)]


def test_unmatched_rows_inside_an_earlier_match_are_not_repeated() -> None:
    # SKIP TO NEXT ROW retries row 2, finds nothing, but row 2 was already output in match 1
    out = mr("""MEASURES MATCH_NUMBER() AS mn ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH SKIP TO NEXT ROW
                PATTERN (A B) DEFINE B AS B.price > A.price""", rows_of([1, 2, 1]))
    assert project(out, "id", "mn") == [(1, 1), (2, 1), (3, None)]


def test_after_match_skip_modes() -> None:
    rows = rows_of([1, 2, 3, 4, 5])
    base = "MEASURES FIRST(A.id) AS first_id, COUNT(*) AS n {skip} PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)"

    def run(skip: str) -> list[tuple[Any, ...]]:
        return project(mr(base.format(skip=skip), rows), "first_id", "n")

    assert run("") == [(1, 5)]  # the standard's default: PAST LAST ROW
    assert run("AFTER MATCH SKIP TO NEXT ROW") == [(1, 5), (2, 4), (3, 3), (4, 2)]
    assert run("AFTER MATCH SKIP TO FIRST B") == [(1, 5), (2, 4), (3, 3), (4, 2)]
    assert run("AFTER MATCH SKIP TO LAST B") == [(1, 5)]


def test_skip_to_a_variable_missing_from_the_match_is_a_runtime_error() -> None:
    with pytest.raises(MatchRuntimeError, match="AFTER MATCH SKIP TO LAST B failed: B is not present in the match"):
        mr("AFTER MATCH SKIP TO LAST B PATTERN (A B? C) DEFINE B AS B.price < 0", rows_of([1, 2]))


def test_skip_to_subset_variable() -> None:
    out = mr("""MEASURES FIRST(A.id) AS first_id AFTER MATCH SKIP TO LAST U PATTERN (A B C) SUBSET U = (A, B)""",
             rows_of([1, 2, 3, 4, 5, 6, 7]))
    assert project(out, "first_id") == [(1,), (2,), (3,), (4,), (5,)]


def test_subsets_in_measures() -> None:
    out = mr("""MEASURES LAST(U.price) AS last_u, COUNT(U.*) AS nu, CLASSIFIER(U) AS cu, SUM(U.price) AS su
                PATTERN (A B C) SUBSET U = (A, B)""", rows_of([1, 2, 3]))
    assert out == [{"last_u": 2, "nu": 2, "cu": "B", "su": 3}]


def test_aggregates_skip_nulls_and_avg_is_double() -> None:
    out = mr("""MEASURES COUNT(*) AS n, COUNT(A.price) AS n_price, SUM(A.price) AS s, AVG(A.price) AS a,
                         MIN(A.price) AS lo, MAX(A.price) AS hi, SUM(A.price * A.qty) AS weighted
                PATTERN (A+)""", rows_of([3, None, 4], qty=[1, 2, 3]))
    assert out == [{"n": 3, "n_price": 2, "s": 7, "a": 3.5, "lo": 3, "hi": 4, "weighted": 15}]
    assert isinstance(out[0]["a"], float)


def test_anchors() -> None:
    assert project(mr("MEASURES A.id AS id PATTERN (^ A)", rows_of([1, 2, 3])), "id") == [(1,)]
    assert project(mr("MEASURES A.id AS id PATTERN (A $)", rows_of([1, 2, 3])), "id") == [(3,)]
    assert project(mr("MEASURES COUNT(*) AS n PATTERN (^ A* $)", rows_of([1, 2, 3])), "n") == [(3,)]


def test_permute_and_alternation_preference() -> None:
    rows = rows_of([1, 2])
    out = mr("MEASURES CLASSIFIER() AS last PATTERN (PERMUTE(A, B)) DEFINE A AS price = 2", rows)
    assert project(out, "last") == [("A",)]  # A B fails on row 1 (price 1); B A matches
    out = mr("MEASURES COUNT(*) AS n PATTERN ((A | A B) C?) DEFINE A AS TRUE, B AS TRUE, C AS TRUE", rows_of([1, 2, 3]))
    assert project(out, "n") == [(2,), (1,)]  # A C, then A on the last row


def test_classifier_and_match_number_in_define() -> None:
    out = mr("""MEASURES COUNT(*) AS n, MATCH_NUMBER() AS mn
                PATTERN ((A | B)+ C)
                DEFINE A AS price > 0, B AS price < 0, C AS PREV(CLASSIFIER()) = 'B' AND MATCH_NUMBER() = 1""",
             rows_of([1, -1, 0, 1, 0]))
    assert out == [{"n": 3, "mn": 1}]


def test_nulls_and_three_valued_logic_in_define() -> None:
    # NULL comparisons are unknown: the row is not matched
    out = mr("MEASURES A.id AS id PATTERN (A) DEFINE A AS A.price > 1 OR A.price < 0", rows_of([None, 2, 0]))
    assert project(out, "id") == [(2,)]
    out = mr("MEASURES A.id AS id PATTERN (A) DEFINE A AS NOT (A.price > 1)", rows_of([None, 2, 0]))
    assert project(out, "id") == [(3,)]
    out = mr("MEASURES A.id AS id PATTERN (A) DEFINE A AS A.price IS NULL", rows_of([None, 2, 0]))
    assert project(out, "id") == [(1,)]


def test_scalar_expressions() -> None:
    out = mr("""MEASURES CASE WHEN A.price BETWEEN 1 AND 2 THEN 'low' ELSE 'high' END AS band,
                         COALESCE(A.note, 'none') AS note, CAST(A.price AS DOUBLE) / 4 AS quarter,
                         A.price / 4 AS int_quarter, A.price IN (1, 3) AS odd, CASE A.price WHEN 3 THEN 'three' END AS c,
                         A.note || '!' AS shout, ABS(-A.price) AS a, NULLIF(A.price, 3) AS n, -A.price % 2 AS m
                PATTERN (A)""", rows_of([3], note=[None]))
    assert out == [{"band": "high", "note": "none", "quarter": 0.75, "int_quarter": 0, "odd": True, "c": "three",
                    "shout": None, "a": 3, "n": None, "m": -1}]


def test_match_rowtime_and_within() -> None:
    start = datetime(2024, 1, 1)
    rows = [{"t": start + timedelta(minutes=m), "v": v} for m, v in [(0, 1), (30, 2), (59, 3), (60, 4), (61, 5)]]
    spec = "ORDER BY t MEASURES MATCH_ROWTIME() AS mt, COUNT(*) AS n PATTERN (A+) WITHIN INTERVAL '1' HOUR"
    # every match spans strictly less than an hour: the 60-minute row starts a new match
    assert mr(spec, rows) == [{"mt": start + timedelta(minutes=59), "n": 3},
                              {"mt": start + timedelta(minutes=61), "n": 2}]


def test_within_on_integer_microseconds() -> None:
    rows = [{"t": t, "v": 1} for t in (0, 500_000, 999_999, 1_000_000)]
    out = mr("ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+) WITHIN INTERVAL '1' SECOND", rows)
    assert project(out, "n") == [(3,), (1,)]


def test_rows_as_tuples() -> None:
    spec = parse_clause("MEASURES LAST(A.p) AS p PATTERN (A+) DEFINE A AS p > 1")
    assert list(match_partition(spec, [(1,), (2,), (3,)], columns=["p"])) == [{"p": 3}]


def test_unknown_column_is_a_positioned_error() -> None:
    with pytest.raises(QuerySyntaxError) as info:
        mr("PATTERN (A) DEFINE A AS A.missing > 1", rows_of([1]))
    assert info.value.col == 25
    assert "column missing not found in the input row (columns: id, price)" in str(info.value)


def test_type_errors_are_runtime_errors() -> None:
    with pytest.raises(MatchRuntimeError, match=r"cannot evaluate A\.price > 'x'"):
        mr("PATTERN (A) DEFINE A AS A.price > 'x'", rows_of([1]))


def test_long_partition_runs_in_linear_time() -> None:
    rows = rows_of(list(range(5_000)))
    out = mr("""MEASURES COUNT(*) AS n, LAST(B.price) AS top
                PATTERN (A B+) DEFINE B AS B.price > PREV(B.price) AND SUM(B.price) > 0""", rows)
    assert out == [{"n": 5_000, "top": 4_999}]


def test_thread_pruning_bounds_ambiguous_patterns_with_running_aggregates() -> None:
    # every row can be A or B, so paths double per row; threads agreeing on SUM(A.v) (the only state
    # the conditions read) are equivalent and the less preferred is dropped: at most 11 per label instruction
    from timeweave.core.pattern.clause import CompiledClause
    from timeweave.core.pattern.expressions import RowSource

    clause = CompiledClause(parse_clause("PATTERN ((A | B)+ C) DEFINE A AS SUM(A.v) < 10, C AS C.v < 0"))
    rows = RowSource()
    rows.rows = [{"v": i % 2} for i in range(400)]
    rows.length = len(rows.rows)
    run = clause.new_run(rows, 0, 1)
    most = 0
    while not run.finished and run.position < rows.length:
        run.step(at_end=run.position == rows.length - 1)
        most = max(most, len(run.threads))
    assert run.match() is None
    assert most <= 3 * 11  # label instructions A, B, C × distinct sums 0..10


def test_numpy_values_behave_like_sql_bigint() -> None:
    # rows handed over from pandas carry numpy scalars: integer division and WITHIN must still work
    np = pytest.importorskip("numpy")
    rows = [{"t": np.int64(i * 1_000_000), "v": np.int64(i)} for i in range(5)]
    out = mr("ORDER BY t MEASURES AVG(A.v) AS a, SUM(A.v) / 2 AS half PATTERN (A+) WITHIN INTERVAL '3' SECOND", rows)
    assert out == [{"a": 1.0, "half": 1}, {"a": 3.5, "half": 3}]
