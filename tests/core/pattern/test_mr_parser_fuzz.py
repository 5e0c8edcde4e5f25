"""Parser fuzzing: generated and mutated clauses either parse (and print back to an equal spec) or fail
with a positioned QuerySyntaxError; never another exception, never a hang.

Two generators: hypothesis strategies over the grammar (below), and the mutation fuzzer of
:mod:`tests.helpers.mr_parser_fuzz` over the peer suites' clauses (token insertions, deletions, swaps,
duplications, huge numbers, deep nesting, unicode, unbalanced quotes and parentheses), at a fixed seed;
``bench/fuzz_match_recognize_parser.py`` runs the latter at 10 000 inputs.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import mr_parser_fuzz
from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import MatchRuntimeError, match_partition, parse_clause, parse_pattern
from timeweave.core.pattern.lexer import sql_name

VARIABLES = ["A", "B", "C", "PRICE_UP", '"x"']
COLUMNS = ["price", "tax", "rowtime", '"Mixed Case"', "first"]

VOCABULARY = [
    "PARTITION", "BY", "ORDER", "MEASURES", "ONE", "ROW", "ALL", "ROWS", "PER", "MATCH", "AFTER", "SKIP", "PAST",
    "LAST", "FIRST", "TO", "NEXT", "PREV", "PATTERN", "DEFINE", "SUBSET", "WITHIN", "INTERVAL", "'1'", "HOUR",
    "AS", "AND", "OR", "NOT", "IS", "NULL", "CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "DOUBLE", "IN",
    "BETWEEN", "COUNT", "SUM", "AVG", "RUNNING", "FINAL", "CLASSIFIER", "MATCH_NUMBER", "PERMUTE", "EMPTY",
    "(", ")", "{", "}", "{-", "-}", ",", ".", "*", "+", "?", "|", "^", "$", "=", "<", ">=", "-", "/", "||",
    "1", "2", "0", "'s'", "A", "B", "C", "price", "x", "--", "/*", "*/", '"', "'",
]  # fmt: skip


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0, variables: tuple[str, ...] = tuple(VARIABLES)) -> str:
    var = draw(st.sampled_from(variables))
    column = draw(st.sampled_from(COLUMNS))
    atom = draw(st.sampled_from([
        f"{var}.{column}", column, "1", "2.5", "'text'", "NULL", "TRUE",
        f"LAST({var}.{column}, 1)", f"FIRST({var}.{column})", f"PREV({var}.{column}, 2)",
        f"NEXT(LAST({var}.{column}), 1)", f"COUNT({var}.*)", f"SUM({var}.{column})", f"AVG({column})",
        "CLASSIFIER()", "MATCH_NUMBER()", f"CAST({var}.{column} AS DOUBLE)", f"RUNNING LAST({var}.{column})",
    ]))  # fmt: skip
    if depth >= 2 or draw(st.booleans()):
        return atom
    other = draw(expressions(depth + 1, variables))
    return draw(st.sampled_from([
        f"{atom} > ({other})", f"{atom} + ({other})", f"({atom} = ({other})) AND ({other}) IS NOT NULL",
        f"NOT {atom} < ({other}) OR {atom} BETWEEN 1 AND 2", f"COALESCE({atom}, {other})",
        f"CASE WHEN {atom} > 1 THEN {other} ELSE 0 END", f"{atom} IN (1, 2, {other})",
    ]))  # fmt: skip


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from([*VARIABLES[:4], "()", "^", "$"]))
    parts = [draw(patterns(depth + 1)) for _ in range(draw(st.integers(1, 3)))]
    shape = draw(st.sampled_from(["concat", "alt", "group", "permute", "exclude"]))
    quantifier = draw(st.sampled_from(["", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,}", "{1,3}", "{,2}?"]))
    if shape == "concat":
        return " ".join(parts)
    if shape == "alt":
        return "(" + " | ".join(parts) + ")" + quantifier
    if shape == "permute":
        return "PERMUTE(" + ", ".join(parts) + ")"
    if shape == "exclude":
        return "{- " + " ".join(parts) + " -}"
    return "(" + " ".join(parts) + ")" + quantifier


@st.composite
def clauses(draw: st.DrawFn) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append("PARTITION BY symbol")
    if draw(st.booleans()):
        parts.append("ORDER BY rowtime DESC NULLS LAST")
    measures = draw(st.lists(expressions(), max_size=2))
    if measures:
        parts.append("MEASURES " + ", ".join(f"{m} AS m{i}" for i, m in enumerate(measures)))
    parts.append(draw(st.sampled_from(["", "ONE ROW PER MATCH", "ALL ROWS PER MATCH OMIT EMPTY MATCHES",
                                        "ALL ROWS PER MATCH WITH UNMATCHED ROWS"])))
    parts.append(draw(st.sampled_from(["", "AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW",
                                        "AFTER MATCH SKIP TO FIRST A", "AFTER MATCH SKIP TO B"])))
    parts.append(f"PATTERN ({draw(patterns())})")
    if draw(st.booleans()):
        parts.append("WITHIN INTERVAL '10' SECOND")
    if draw(st.booleans()):
        parts.append("SUBSET U = (A, B)")
    definitions = draw(st.lists(st.tuples(st.sampled_from(VARIABLES[:4]), expressions()), max_size=3))
    if definitions:
        parts.append("DEFINE " + ", ".join(f"{v} AS {e}" for v, e in definitions))
    return "\n".join(p for p in parts if p)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(clauses())
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["delete", "insert", "replace"]))
        if action == "delete":
            text = text[:position] + text[position + draw(st.integers(1, 6)):]
        elif action == "insert":
            text = text[:position] + " " + draw(st.sampled_from(VOCABULARY)) + " " + text[position:]
        else:
            text = text[:position] + draw(st.sampled_from(VOCABULARY)) + text[position + 1:]
    return text


token_soup = st.lists(st.sampled_from(VOCABULARY), max_size=30).map(" ".join)


def check(text: str) -> None:
    started = time.perf_counter()
    try:
        spec = parse_clause(text)
    except QuerySyntaxError as error:
        assert 1 <= error.line <= text.count("\n") + 1
        assert 0 <= error.position <= len(text)
        assert error.highlight.endswith("^")
        assert str(error)
    else:
        # a parsed spec prints back to text that parses to an equal spec (sqlglot's identity check)
        assert parse_clause(str(spec)) == spec
    assert time.perf_counter() - started < 5.0, text  # a hang guard: generous, the machine may be loaded


# Example counts keep the file at a few seconds: generating structured clauses dominates the cost.
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clauses())
def test_generated_clauses(text: str) -> None:
    check(text)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_clauses(text: str) -> None:
    check(text)


@settings(max_examples=250, deadline=None)
@given(token_soup)
def test_token_soup(text: str) -> None:
    check(text)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text(text: str) -> None:
    check(text)


# -- the mutation fuzzer (issue 20: 17 internal exceptions, 124 unpositioned errors, 4.3 CPU-s rejections) --

def test_mutation_fuzzer_seeds_are_the_peer_suites() -> None:
    seeds = mr_parser_fuzz.seeds()
    assert len(seeds) > 200
    accepted = sum(mr_parser_fuzz.check(seed).kind == "accepted" for seed in seeds)
    assert accepted > len(seeds) // 2  # most seeds are valid clauses, some are the suites' must-fail cases


@pytest.mark.parametrize("seed", [20, 21])
def test_mutated_peer_clauses_parse_or_fail_positioned_within_a_cpu_second(seed: int) -> None:
    kinds: dict[str, int] = {}
    for text in mr_parser_fuzz.inputs(seed, 150):
        outcome = mr_parser_fuzz.check(text)
        kinds[outcome.kind] = kinds.get(outcome.kind, 0) + 1
        assert outcome.kind in ("accepted", "rejected"), (outcome, text[:300])
        assert outcome.cpu_seconds < 1.0, (outcome, text[:300])
        if outcome.kind == "accepted":
            spec = parse_clause(text)
            assert parse_clause(str(spec)) == spec
    assert kinds.get("accepted", 0) > 0 and kinds.get("rejected", 0) > 0, kinds


@pytest.mark.parametrize(("text", "message", "column"), [
    # int() refuses more than 4300 digits (Python's conversion limit): was ValueError from the parser
    ("PATTERN (A) DEFINE A AS A.x > " + "9" * 5000, "integer literal of 5000 digits is out of range", 31),
    ("PATTERN (A) DEFINE A AS A.x > " + "1" * 190, "integer literal of 190 digits is out of range", 31),
    ("PATTERN (A{" + "9" * 5000 + "})", "a quantifier bound 9", 12),
    ("MEASURES PREV(A.x, " + "1" * 4400 + ") AS m PATTERN (A)", "a navigation offset 1", 20),
    ("PATTERN (A) DEFINE A AS A.x > 1e999", "numeric literal 1e999 is out of the DOUBLE range", 31),
    # '²' is str.isdigit() but no SQL digit (int('²') raised ValueError)
    ("PATTERN (A) DEFINE A AS A.x > ²", "unexpected character '²'", 31),
    ("PATTERN (A) DEFINE A AS A.x > 1²", "unexpected character '²'", 32),
    # a chain of operators is rejected at the operator past the limit, without parsing the rest
    ("PATTERN (A) DEFINE A AS " + " + ".join(["A.x"] * 20000), "a chain of more than 150 + operators", 25 + 151 * 6 - 2),
])  # fmt: skip
def test_bad_literals_and_long_chains_are_positioned_errors(text: str, message: str, column: int) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        parse_clause(text)
    assert message in caught.value.description
    assert (caught.value.line, caught.value.col) == (1, column)
    assert mr_parser_fuzz.positioned(caught.value, text)


def test_leading_zeros_do_not_count_as_digits() -> None:
    spec = parse_clause("PATTERN (A{" + "0" * 50 + "2}) DEFINE A AS A.x > " + "0" * 60 + "1")
    assert str(spec.pattern) == "A{2}"


row_values = st.fixed_dictionaries({
    "price": st.one_of(st.none(), st.integers(-3, 3)),
    "tax": st.one_of(st.none(), st.integers(0, 2), st.floats(0, 2, allow_nan=False)),
    "Mixed Case": st.sampled_from(["a", "b"]),
    "first": st.integers(0, 1),
    "symbol": st.just("s"),
})


@st.composite
def valid_clauses(draw: st.DrawFn) -> str:
    """Clauses whose every reference is to a variable of their own pattern (so they pass validation)."""
    pattern = draw(patterns())
    names = tuple(sql_name(n, folded=True) for n in parse_pattern(pattern).labels()) or ("A",)
    if not parse_pattern(pattern).labels():
        pattern = f"{pattern} A"
    measures = draw(st.lists(expressions(variables=names), max_size=2))
    parts = ["PARTITION BY symbol", "ORDER BY rowtime"]
    if measures:
        parts.append("MEASURES " + ", ".join(f"{m} AS m{i}" for i, m in enumerate(measures)))
    parts.append(draw(st.sampled_from(["", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH OMIT EMPTY MATCHES"])))
    parts.append(draw(st.sampled_from(["", "AFTER MATCH SKIP TO NEXT ROW", f"AFTER MATCH SKIP TO FIRST {names[0]}",
                                        f"AFTER MATCH SKIP TO {names[-1]}"])))
    parts.append(f"PATTERN ({pattern})")
    if draw(st.booleans()):
        parts.append("WITHIN INTERVAL '3' SECOND")
    definitions = draw(st.dictionaries(st.sampled_from(names), expressions(variables=names), max_size=3))
    if definitions:
        parts.append("DEFINE " + ", ".join(f"{v} AS {e}" for v, e in definitions.items()))
    return "\n".join(p for p in parts if p)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_clauses(), st.lists(row_values, max_size=6))
def test_generated_clauses_run_end_to_end(text: str, values: list[dict[str, object]]) -> None:
    """Whatever parses also runs: output rows or a timeweave error (type mismatch, skip error), nothing else."""
    spec = parse_clause(text)
    rows = [{**row, "rowtime": i * 1_000_000} for i, row in enumerate(values)]
    started = time.perf_counter()
    try:
        for output in match_partition(spec, rows):
            assert isinstance(output, dict)
    except (MatchRuntimeError, QuerySyntaxError):
        pass  # data-dependent errors the standard defines (or a column the rows lack)
    assert time.perf_counter() - started < 10.0, text  # a hang guard: generous, the machine may be loaded
