"""Layer 1: lexer, parser and validation of the MATCH_RECOGNIZE clause text."""

from __future__ import annotations

from datetime import timedelta

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import PatternValidationError, RowsPerMatch, SkipMode, locate_clauses, parse_clause
from timeweave.core.pattern import expr as E
from timeweave.core.pattern.ir import (
    Anchor,
    Empty,
    alt,
    concat,
    exclude,
    label,
    optional,
    permute,
    plus,
    quantified,
    star,
)
from timeweave.core.pattern.lexer import TokenType, tokenize
from timeweave.core.pattern.parser import parse_expression, parse_pattern

FLINK_INTRO = """
    PARTITION BY symbol
    ORDER BY rowtime
    MEASURES
        START_ROW.rowtime AS start_tstamp,
        LAST(PRICE_DOWN.rowtime) AS bottom_tstamp,
        LAST(PRICE_UP.rowtime) AS end_tstamp
    ONE ROW PER MATCH
    AFTER MATCH SKIP TO LAST PRICE_UP
    PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
    DEFINE
        PRICE_DOWN AS
            (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price) OR
                PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1),
        PRICE_UP AS
            PRICE_UP.price > LAST(PRICE_DOWN.price, 1)
"""


def test_tokens_carry_positions_and_fold_unquoted_words() -> None:
    tokens = tokenize('a."Mixed" -- comment\n >= 1.5e3')
    assert [(t.type, t.value, t.start) for t in tokens] == [
        (TokenType.IDENT, "A", 0),
        (TokenType.OP, ".", 1),
        (TokenType.QUOTED_IDENT, "Mixed", 2),
        (TokenType.OP, ">=", 22),
        (TokenType.NUMBER, "1.5e3", 25),
        (TokenType.EOF, "", 30),
    ]


def test_flink_intro_example_parses_into_every_clause() -> None:
    spec = parse_clause(FLINK_INTRO)
    assert spec.partition_by == ("symbol",)
    assert [k.column for k in spec.order_by] == ["rowtime"]
    assert [m.name for m in spec.measures] == ["start_tstamp", "bottom_tstamp", "end_tstamp"]
    assert spec.measures[1].expr == E.Navigation("LAST", E.Column("PRICE_DOWN", "rowtime"), 0)
    assert spec.rows_per_match is RowsPerMatch.ONE_ROW
    assert (spec.after_match_skip.mode, spec.after_match_skip.var) == (SkipMode.TO_LAST, "PRICE_UP")
    assert spec.pattern == concat(label("START_ROW"), plus(label("PRICE_DOWN")), label("PRICE_UP"))
    assert [d.var for d in spec.definitions] == ["PRICE_DOWN", "PRICE_UP"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A B* C", concat(label("A"), star(label("B")), label("C"))),
        ("A B*? C", concat(label("A"), star(label("B"), greedy=False), label("C"))),
        ("A+? B?? C{3}", concat(plus(label("A"), False), optional(label("B"), False), quantified(label("C"), 3, 3))),
        ("A{2,} B{,4}? C{1,5}", concat(quantified(label("A"), 2, None), quantified(label("B"), 0, 4, False),
                                        quantified(label("C"), 1, 5))),
        ("A | B C | ()", alt(label("A"), concat(label("B"), label("C")), Empty())),
        ("(A B)+ PERMUTE(C, D | E)", concat(plus(concat(label("A"), label("B"))),
                                            permute(label("C"), alt(label("D"), label("E"))))),
        ("^ {- A -} B $", concat(Anchor("^"), exclude(label("A")), label("B"), Anchor("$"))),
        ('"lower" a', concat(label("lower"), label("A"))),
        ("", Empty()),
    ],
)
def test_pattern_syntax(text: str, expected: object) -> None:
    parsed = parse_pattern(text)
    assert parsed == expected
    assert parse_pattern(str(parsed)) == parsed  # __str__ renders pattern syntax that parses back


def test_rows_per_match_and_skip_variants() -> None:
    def clause(rows: str, skip: str) -> tuple[RowsPerMatch, SkipMode, str | None]:
        spec = parse_clause(f"{rows} {skip} PATTERN (A B)")
        return spec.rows_per_match, spec.after_match_skip.mode, spec.after_match_skip.var

    assert clause("ALL ROWS PER MATCH", "AFTER MATCH SKIP TO NEXT ROW") == (
        RowsPerMatch.ALL_SHOW_EMPTY, SkipMode.TO_NEXT_ROW, None)
    assert clause("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "AFTER MATCH SKIP TO FIRST B") == (
        RowsPerMatch.ALL_OMIT_EMPTY, SkipMode.TO_FIRST, "B")
    assert clause("ALL ROWS PER MATCH WITH UNMATCHED ROWS", "AFTER MATCH SKIP TO B") == (
        RowsPerMatch.ALL_WITH_UNMATCHED, SkipMode.TO_LAST, "B")
    assert clause("ALL ROWS PER MATCH SHOW EMPTY MATCHES", "AFTER MATCH SKIP PAST LAST ROW") == (
        RowsPerMatch.ALL_SHOW_EMPTY, SkipMode.PAST_LAST_ROW, None)
    # the standard's default is PAST LAST ROW (Flink's is TO NEXT ROW)
    assert parse_clause("PATTERN (A)").after_match_skip.mode is SkipMode.PAST_LAST_ROW


def test_order_by_subset_within() -> None:
    spec = parse_clause("ORDER BY t DESC NULLS FIRST, u ASC PATTERN (A B) WITHIN INTERVAL '90' MINUTE "
                        "SUBSET U = (A, B) DEFINE A AS COUNT(U.*) < 3")
    assert [(k.column, k.descending, k.nulls_first) for k in spec.order_by] == [("t", True, True), ("u", False, None)]
    assert spec.within == timedelta(minutes=90)
    assert spec.subset("U") == ("A", "B")
    assert spec.definition("A") == E.Binary("<", E.Aggregate("COUNT", None, "U"), E.Literal(3))


@pytest.mark.parametrize(
    "text",
    [
        "CASE WHEN A.x > 1 THEN 'big' WHEN A.x IS NULL THEN NULL ELSE 'small' END",
        "CASE A.x WHEN 1 THEN TRUE ELSE FALSE END",
        "COALESCE(A.x, 0) + CAST(A.y AS DOUBLE) * -2 / 3 % 4",
        "A.x BETWEEN 1 AND 2 AND A.y NOT IN (1, 2, 3) OR NOT A.z IS NOT NULL",
        "PREV(LAST(A.x, 2), 3) + NEXT(A.x) - FIRST(A.x * A.y)",
        "RUNNING LAST(A.x) + FINAL COUNT(*) + SUM(A.x) + AVG(A.x) + MIN(x) + MAX(A.x)",
        "CLASSIFIER() || CLASSIFIER(A) || CAST(MATCH_NUMBER() AS VARCHAR)",
        "MATCH_ROWTIME() + INTERVAL '1' HOUR",
        "TIMESTAMP '2024-01-01 00:00:00' < x AND DATE '2024-01-01' IS NOT NULL",
    ],
)
def test_expression_round_trip(text: str) -> None:
    parsed = parse_expression(text)
    assert parse_expression(str(parsed)) == parsed


def test_precedence() -> None:
    assert parse_expression("a OR b AND NOT c = 1 + 2 * 3") == E.Binary(
        "OR",
        E.Column(None, "a"),
        E.Binary("AND", E.Column(None, "b"), E.Unary("NOT", E.Binary(
            "=", E.Column(None, "c"),
            E.Binary("+", E.Literal(1), E.Binary("*", E.Literal(2), E.Literal(3))),
        ))),
    )


def test_navigation_defaults() -> None:
    assert parse_expression("PREV(A.x)") == E.Navigation("PREV", E.Column("A", "x"), 1)
    assert parse_expression("FIRST(A.x)") == E.Navigation("FIRST", E.Column("A", "x"), 0)
    assert parse_expression("FINAL LAST(A.x, 2)") == E.Navigation("LAST", E.Column("A", "x"), 2, "FINAL")


def test_column_named_like_a_function_word_is_a_column() -> None:
    assert parse_expression("last + first") == E.Binary("+", E.Column(None, "last"), E.Column(None, "first"))


def _error(text: str) -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as info:
        parse_clause(text)
    return info.value


def test_syntax_error_points_at_the_token() -> None:
    error = _error("PATTERN (A B\n  DEFINE A AS x > 1")
    assert (error.line, error.col) == (2, 3)
    assert error.description == "expected ')', found 'DEFINE'"
    assert error.highlight == "  DEFINE A AS x > 1\n  ^"
    assert type(error) is QuerySyntaxError


@pytest.mark.parametrize(
    ("text", "message", "col"),
    [
        ("PATTERN (A**)", "a quantifier cannot follow a quantifier; add parentheses, e.g. (A*)+, found '*'", 12),
        ("PATTERN (A{3,2})", "quantifier upper bound 2 is below the lower bound 3", 11),
        ("PATTERN (A{0})", "quantifier upper bound must be greater than 0", 11),
        ("PATTERN (A) DEFINE A AS PREV(A.x, -1) > 0", "expected a navigation offset (a non-negative integer), found '-'",
         35),
        ("PATTERN (A) DEFINE A AS PERCENTILE_APPROX(A.x, 0.5)", "PERCENTILE_APPROX is not supported in MATCH_RECOGNIZE: an aggregate without a fold over a match, "
         "a window or generator function, or a nondeterministic one (see the README's list of aggregates)", 25),
        ("MEASURES A.x PATTERN (A)", "expected AS <name> after the measure expression (every measure needs a name), "
                                     "found 'PATTERN'", 14),
        ("PATTERN (A) DEFINE A AS a < b < c", "comparisons cannot be chained; use AND, found '<'", 31),
        ("DEFINE A AS TRUE PATTERN (A)", "expected PATTERN (clauses must come in the standard order: PARTITION BY, "
                                         "ORDER BY, MEASURES, rows per match, AFTER MATCH SKIP, PATTERN, SUBSET, "
                                         "DEFINE), found 'DEFINE'", 1),
        ("PATTERN (A) DEFINE A AS COUNT(DISTINCT A.x) > 1",
         "DISTINCT aggregates are not supported in MATCH_RECOGNIZE, found 'DISTINCT'", 31),
    ],
)
def test_syntax_errors(text: str, message: str, col: int) -> None:
    error = _error(text)
    assert (error.description, error.line, error.col) == (message, 1, col)


@pytest.mark.parametrize(
    ("text", "message", "col"),
    [
        ("PATTERN (A B) DEFINE C AS C.x > 0", "DEFINE of variable C, which does not appear in PATTERN "
                                              "(pattern variables: A, B)", 22),
        ("PATTERN (A) DEFINE A AS B.x > 0", "unknown pattern variable B (pattern variables and subsets: A)", 25),
        ("MEASURES AVG(A.x * B.y) AS m PATTERN (A B)", "the argument of AVG must refer to a single pattern variable, "
                                                       "found A, B", 10),
        ("MEASURES LAST(A.x * y) AS m PATTERN (A B)", "the argument of LAST must refer to a single pattern variable, "
                                                      "found (no variable), A", 10),
        ("MEASURES SUM(COUNT(A.x)) AS m PATTERN (A)", "COUNT cannot be nested inside an aggregate", 14),
        ("MEASURES FIRST(LAST(A.x)) AS m PATTERN (A)", "LAST cannot be nested inside FIRST", 16),
        ("MEASURES LAST(PREV(A.x)) AS m PATTERN (A)", "PREV cannot be nested inside LAST", 15),
        ("MEASURES PREV(NEXT(A.x)) AS m PATTERN (A)", "NEXT cannot be nested inside PREV "
                                                      "(only FIRST/LAST may be nested inside PREV/NEXT)", 15),
        ("MEASURES SUM(PREV(A.x)) AS m PATTERN (A)", "PREV cannot be used inside an aggregate", 14),
        ("PATTERN (A) DEFINE A AS FINAL LAST(A.x) > 0", "FINAL is not allowed in DEFINE (conditions see the match "
                                                        "only up to the current row)", 25),
        ("PATTERN (A) DEFINE A AS MATCH_ROWTIME() IS NULL", "MATCH_ROWTIME() is only allowed in MEASURES", 25),
        ("PATTERN (A) SUBSET A = (A)", "SUBSET name A is already a pattern variable", 20),
        ("PATTERN (A) SUBSET U = (B)", "SUBSET U lists B, which is not a pattern variable in PATTERN", 20),
        ("AFTER MATCH SKIP TO LAST B PATTERN (A)", "AFTER MATCH SKIP TO B: not a pattern variable or subset", 1),
        ("PATTERN (A) DEFINE A AS TRUE, A AS FALSE", "variable A is defined twice", 31),
        ("PARTITION BY k MEASURES 1 AS k PATTERN (A)", "output column k appears twice (measure names must be unique "
                                                       "and differ from the PARTITION BY columns)", 25),
        ("PATTERN (A) WITHIN INTERVAL '1' SECOND", "WITHIN needs ORDER BY <time column> (the interval is measured "
                                                   "on it)", 13),
        ("ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A {- B -})", "pattern exclusion {- -} cannot be used with "
                                                                       "ALL ROWS PER MATCH WITH UNMATCHED ROWS", 51),
    ],
)
def test_validation_errors(text: str, message: str, col: int) -> None:
    error = _error(text)
    assert isinstance(error, PatternValidationError)
    assert (error.description, error.line, error.col) == (message, 1, col)


def test_deep_nesting_is_a_positioned_error_not_a_crash() -> None:
    error = _error("PATTERN (" + "(" * 500 + "A" + ")" * 500 + ")")
    assert "nesting deeper than" in error.description


def test_locate_clauses_in_a_query() -> None:
    sql = ("SELECT m.*, arr[0], x::int FROM a MATCH_RECOGNIZE (PATTERN ((A)) DEFINE A AS x = ')' -- ) comment\n) AS m "
           "JOIN b match_recognize ( MEASURES COUNT(*) AS n PATTERN (B) ) n ON TRUE /* MATCH_RECOGNIZE ( */")
    bodies = [sql[loc.body_start:loc.body_end] for loc in locate_clauses(sql)]
    assert bodies == ["PATTERN ((A)) DEFINE A AS x = ')' -- ) comment\n", " MEASURES COUNT(*) AS n PATTERN (B) "]
    assert [str(parse_clause(b).pattern) for b in bodies] == ["A", "B"]
    first = locate_clauses(sql)[0]
    assert sql[first.start:first.end].startswith("MATCH_RECOGNIZE (") and sql[first.end - 1] == ")"
    with pytest.raises(QuerySyntaxError, match="never closed"):
        locate_clauses("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)")


@pytest.mark.parametrize("pattern", ["PERMUTE(A, B, C, D, E, F, G, H, I)", "(A{1000}){1000}", "((A{,100}){,100}){,100}"])
def test_patterns_that_would_not_fit_in_memory_are_rejected(pattern: str) -> None:
    error = _error(f"PATTERN ({pattern})")
    assert isinstance(error, PatternValidationError)
    assert error.description.startswith("pattern too large: it compiles to about")
    assert error.col == 10


def test_deep_expressions_are_positioned_errors_not_recursion_errors() -> None:
    assert "nesting deeper than 64 levels" in _error("PATTERN (A) DEFINE A AS " + "(" * 150 + "1" + ")" * 150).description
    assert "nesting deeper than 64 levels" in _error("PATTERN (A) DEFINE A AS " + "NOT " * 150 + "TRUE").description
    chain = _error("MEASURES " + " + ".join(["A.x"] * 5000) + " AS m PATTERN (A)")
    assert chain.description.startswith("expression nested deeper than 150 levels")
    spec = parse_clause("MEASURES " + " + ".join(["A.x"] * 140) + " AS m PATTERN (A)")  # long but allowed
    assert parse_clause(str(spec)) == spec
