"""Which function calls Spark computes per row before matching (core.pattern.row_functions), without a JVM."""

from __future__ import annotations

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import match_partition, output_columns, parse_clause
from timeweave.core.pattern.errors import PatternValidationError
from timeweave.core.pattern.row_functions import HIDDEN_PREFIX, split_row_functions


def _split(clause: str) -> tuple[list[tuple[str, str]], list[str]]:
    split = split_row_functions(parse_clause(clause))
    expressions = [str(m.expr) for m in split.spec.measures] + [str(d.condition) for d in split.spec.definitions]
    return [(f.column, str(f.expr)) for f in split.functions], expressions


def test_a_call_over_one_rows_columns_becomes_a_hidden_column_of_that_variable() -> None:
    functions, expressions = _split("MEASURES array_max(A.arr) AS m, sha2(B.s, 256) AS h PATTERN (A B) "
                                    "DEFINE B AS div(b.x, 2) > A.x")
    assert functions == [("__tw_fn_0", "ARRAY_MAX(arr)"), ("__tw_fn_1", "SHA2(s, 256)"), ("__tw_fn_2", "DIV(x, 2)")]
    assert expressions == ["A.__tw_fn_0", "B.__tw_fn_1", "B.__tw_fn_2 > A.x"]


def test_equal_calls_share_a_column_whatever_their_variable() -> None:
    functions, expressions = _split("MEASURES array_max(A.arr) AS a, array_max(B.arr) AS b, "
                                    "array_max(arr) AS c PATTERN (A B)")
    assert functions == [("__tw_fn_0", "ARRAY_MAX(arr)")]
    assert expressions == ["A.__tw_fn_0", "B.__tw_fn_0", "__tw_fn_0"]


def test_the_outermost_call_goes_whole_with_the_functions_inside_it() -> None:
    functions, expressions = _split("MEASURES upper(array_join(array_distinct(A.tags), ',')) AS t PATTERN (A)")
    assert functions == [("__tw_fn_0", "ARRAY_DISTINCT(tags)")]  # UPPER and ARRAY_JOIN stay Python's
    assert expressions == ["UPPER(ARRAY_JOIN(A.__tw_fn_0, ','))"]
    functions, _ = _split("MEASURES sha2(upper(A.s), 256) AS t PATTERN (A)")
    assert functions == [("__tw_fn_0", "SHA2(UPPER(s), 256)")]


@pytest.mark.parametrize("call", [
    "array_max(LAST(A.arr))", "div(A.x, PREV(A.x))", "array_max(collect_list(A.x))", "div(A.x, B.x)",
    "nvl(A.x, MATCH_NUMBER())", "ifnull(CLASSIFIER(), 'z')",
])
def test_calls_reading_several_rows_stay_in_python(call: str) -> None:
    functions, expressions = _split(f"MEASURES {call} AS m PATTERN (A B)")
    assert functions == []
    assert HIDDEN_PREFIX not in expressions[0]


def test_python_evaluates_spark_functions_over_navigated_values() -> None:
    spec = parse_clause("ORDER BY t MEASURES array_max(LAST(A.arr)) AS m, div(LAST(A.x), FIRST(A.x)) AS d, "
                        "try_element_at(LAST(A.arr), 5) AS e, array_position(FIRST(A.arr), 2) AS p PATTERN (A+)")
    rows = [{"t": 0, "arr": [1, 2], "x": -7}, {"t": 1, "arr": [4, None, 3], "x": 20}]
    assert list(match_partition(spec, rows)) == [{"m": 4, "d": -2, "e": None, "p": 2}]


def test_the_hidden_column_is_read_like_a_column() -> None:
    """What the Spark doors hand in: the rows with the computed column; never output with ALL ROWS."""
    split = split_row_functions(parse_clause("ORDER BY t MEASURES array_max(A.arr) AS m "
                                             "ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS array_max(A.arr) > 1"))
    rows = [{"t": i, "arr": [i, i + 1], "__tw_fn_0": i + 1} for i in range(3)]
    out = list(match_partition(split.spec, rows))
    assert [r["m"] for r in out] == [2, 3]  # row 0's maximum, 1, is not above 1
    columns = output_columns(split.spec, {"t": "bigint", "arr": "array<int>", "__tw_fn_0": "int"})
    assert [name for name, _ in columns] == ["t", "m", "arr"]


def test_the_engine_free_doors_name_the_function_they_cannot_compute() -> None:
    spec = parse_clause("ORDER BY t MEASURES sha2(A.s, 256) AS h PATTERN (A)")
    with pytest.raises(PatternValidationError, match=r"SHA2\(A.s, 256\) has no engine-free implementation") as caught:
        list(match_partition(spec, [{"t": 0, "s": "x"}]))
    assert "col 21" in str(caught.value)
    split = split_row_functions(spec)
    with pytest.raises(PatternValidationError, match=r"sha2\(A.s, 256\) is computed by Spark for each input row") as caught:
        split.check_input(["t", "s"], "the UDTF")
    assert "col 21" in str(caught.value)


def test_a_call_over_navigations_without_a_python_implementation_is_an_error_at_parse() -> None:
    with pytest.raises(PatternValidationError, match="SHA2 has no implementation over such values") as caught:
        parse_clause("MEASURES x AS x PATTERN (A) DEFINE A AS sha2(PREV(A.s) || A.s, 256) = 'x'")
    assert "col 41" in str(caught.value)


@pytest.mark.parametrize(("call", "column", "measure"), [
    ("sha2(LAST(A.s), 256)", "SHA2(s, 256)", "LAST(A.__tw_fn_0, 0)"),
    ("levenshtein(PREV(A.s, 2), PREV(A.t, 2))", "LEVENSHTEIN(s, t)", "PREV(A.__tw_fn_0, 2)"),
    ("bit_count(FINAL FIRST(A.x, 1))", "BIT_COUNT(x)", "FINAL FIRST(A.__tw_fn_0, 1)"),
])
def test_a_call_over_one_navigated_row_navigates_the_per_row_call(call: str, column: str, measure: str) -> None:
    functions, expressions = _split(f"MEASURES {call} AS m PATTERN (A+)")
    assert (functions, expressions) == ([("__tw_fn_0", column)], [measure])


@pytest.mark.parametrize("call", ["sha2(PREV(A.s), A.s)", "levenshtein(PREV(A.s), LAST(A.s))",
                                  "levenshtein(LAST(A.s), LAST(B.s))", "levenshtein(PREV(LAST(A.s)), 'x')"])
def test_navigations_of_different_rows_are_refused(call: str) -> None:
    with pytest.raises(PatternValidationError, match="has no implementation over such values"):
        parse_clause(f"MEASURES {call} AS m PATTERN (A B)")


def test_aggregates_window_and_generator_functions_are_refused_by_name() -> None:
    for name in ("percentile_approx(A.x, 0.5)", "lag(A.x)", "explode(A.arr)", "rand()"):
        with pytest.raises(QuerySyntaxError, match="is not supported in MATCH_RECOGNIZE"):
            parse_clause(f"MEASURES {name} AS m PATTERN (A)")


def test_printing_keeps_the_call_as_written_so_a_printed_clause_splits_the_same() -> None:
    spec = parse_clause("MEASURES try_element_at(A.m, 'k') AS v PATTERN (A) DEFINE A AS bit_count(A.x) > 1")
    again = parse_clause(str(spec))
    def calls(clause: object) -> list[tuple[str, object]]:
        return [(f.column, f.expr) for f in split_row_functions(clause).functions]  # type: ignore[arg-type]

    assert calls(again) == calls(spec)
