"""Output columns and types an adapter declares before matching (timeweave.core.pattern.schema)."""

from __future__ import annotations

import pytest

from timeweave.core.pattern import PatternValidationError, match_recognize, output_columns, parse_clause

INPUT = {"sym": "string", "t": "timestamp", "price": "bigint", "ratio": "double", "amount": "decimal(10,2)",
         "wide": "decimal(36,4)"}


@pytest.mark.parametrize(
    ("measure", "kind"),
    [
        ("A.price", "bigint"), ("LAST(A.amount)", "decimal(10,2)"), ("PREV(FIRST(A.t), 2)", "timestamp"),
        ("COUNT(*)", "bigint"), ("SUM(A.price)", "bigint"), ("SUM(A.ratio)", "double"), ("AVG(A.price)", "double"),
        ("AVG(A.amount)", "decimal(14,6)"), ("SUM(A.amount)", "decimal(20,2)"), ("AVG(A.wide)", "decimal(38,8)"),
        ("SUM(A.wide)", "decimal(38,4)"), ("MIN(A.sym)", "string"), ("MAX(A.t)", "timestamp"),
        ("A.price / 2", "bigint"), ("A.price / 2.0", "double"), ("A.price * A.amount", "decimal(38,2)"),
        ("A.price > 1", "boolean"), ("A.sym || 'x'", "string"), ("CLASSIFIER()", "string"),
        ("MATCH_NUMBER()", "bigint"), ("MATCH_ROWTIME()", "timestamp"), ("CAST(A.price AS DOUBLE)", "double"),
        ("CASE WHEN A.price > 1 THEN NULL ELSE A.ratio END", "double"), ("COALESCE(NULL, A.price)", "bigint"),
        ("A.t + INTERVAL '1' HOUR", "timestamp"), ("A.price IS NULL", "boolean"), ("-A.ratio", "double"),
    ],
)
def test_measure_types(measure: str, kind: str) -> None:
    spec = parse_clause(f"ORDER BY t MEASURES {measure} AS m PATTERN (A+)")
    assert output_columns(spec, INPUT) == [("m", kind)]


def test_layouts_match_the_rows_produced() -> None:
    row = {"sym": "x", "t": 1, "price": 5, "ratio": 0.5, "amount": 1, "wide": 2}
    for rows in ("ONE ROW PER MATCH", "ALL ROWS PER MATCH"):
        spec = parse_clause(f"PARTITION BY sym ORDER BY t MEASURES COUNT(*) AS n {rows} PATTERN (A)")
        produced = list(match_recognize(spec, [row]))
        assert [name for name, _ in output_columns(spec, INPUT)] == list(produced[0])


def test_unknown_columns_and_clashes_are_positioned_errors() -> None:
    # The errors every door raises (the one typer): positioned in the clause text.
    with pytest.raises(PatternValidationError, match="column missing not found in the input") as caught:
        output_columns(parse_clause("MEASURES LAST(A.missing) AS m PATTERN (A)"), INPUT)
    assert caught.value.position == len("MEASURES LAST(")
    with pytest.raises(PatternValidationError, match="measure price has the name of an input column"):
        output_columns(parse_clause("MEASURES 1 AS price ALL ROWS PER MATCH PATTERN (A)"), INPUT)
    with pytest.raises(PatternValidationError, match="the condition defining A must be boolean, not bigint"):
        output_columns(parse_clause("MEASURES 1 AS n PATTERN (A) DEFINE A AS A.price + 1"), INPUT)
