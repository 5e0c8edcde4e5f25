"""A mutation fuzzer for the MATCH_RECOGNIZE clause parser (:func:`timeweave.core.pattern.parse_clause`).

Seeds are the clause bodies of the peer suites in :mod:`tests.helpers.mr_suites` (Trino, Flink, IoTDB
queries: valid clauses and clauses that must fail).  Each input is one seed put through one to four
mutations, chosen by a seeded :class:`random.Random` so that a run is reproducible:

* token level (over the seed's own tokens plus a grammar vocabulary): insert, delete, swap two
  neighbours, duplicate a run, replace;
* huge numbers (hundreds to thousands of digits, exponents, decimal points) where a number may stand;
* deep nesting: a pattern, an expression or a function call wrapped hundreds to thousands of times;
* unicode: letters, digits that are not ASCII (``²``, ``١``, full-width ``１``), combining marks,
  right-to-left text, surrogates, NUL, line and paragraph separators;
* unbalanced quotes, parentheses, braces and comment openers; truncation at a random point.

:func:`check` parses one input and classifies it: accepted, rejected with a positioned
:class:`~timeweave.core.errors.QuerySyntaxError` (the project's error: line, column, offset into the
text), rejected without a usable position, or an internal error (any other exception); with the CPU
seconds it took.  ``bench/fuzz_match_recognize_parser.py`` runs many; the test module a few.
"""

from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass
from functools import cache

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import locate_clauses, parse_clause
from timeweave.core.pattern.lexer import tokenize

VOCABULARY = (
    "PARTITION", "BY", "ORDER", "MEASURES", "ONE", "ROW", "ALL", "ROWS", "PER", "MATCH", "AFTER", "SKIP", "PAST",
    "LAST", "FIRST", "TO", "NEXT", "PREV", "PATTERN", "DEFINE", "SUBSET", "WITHIN", "INTERVAL", "'1'", "HOUR",
    "SECOND", "AS", "AND", "OR", "NOT", "IS", "NULL", "CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "DOUBLE",
    "DECIMAL", "IN", "BETWEEN", "LIKE", "ESCAPE", "COUNT", "SUM", "AVG", "MIN", "MAX", "MAX_BY", "RUNNING", "FINAL",
    "CLASSIFIER", "MATCH_NUMBER", "MATCH_ROWTIME", "PERMUTE", "EMPTY", "SHOW", "OMIT", "WITH", "UNMATCHED",
    "DISTINCT", "FROM", "TRUE", "FALSE", "DATE", "TIMESTAMP", "'2024-01-01'", "ARRAY", "SELECT", "EXISTS",
    "CURRENT_TIMESTAMP", "COALESCE", "ROUND", "SUBSTRING",
    "(", ")", "{", "}", "{-", "-}", ",", ".", "*", "+", "?", "|", "^", "$", "=", "<", ">=", "<>", "-", "/", "%",
    "||", ";", "[", "]", "1", "2", "0", "1.5", "1e3", "'s'", "''", "A", "B", "C", "U", "price", "x", '"x"',
    "`y`", "--", "/*", "*/", '"', "'", "`",
)  # fmt: skip

UNICODE = (
    "é", "ß", "Ω", "字", "²", "١", "１", "Ⅻ", "\u0301", "\u200b", "\u202e", "\u2028", "\u2029", "\x00", "\x0b",
    "\x1c", "\r", "\t", "\ud800", "🙂", "ﬁ", "İ", "ǅ", "ſ", "K",
)  # fmt: skip

MUTATIONS = ("insert", "delete", "swap", "duplicate", "replace", "huge_number", "deep_nesting", "unicode",
             "unbalanced", "truncate")


@cache
def seeds() -> tuple[str, ...]:
    """The clause bodies (text between ``MATCH_RECOGNIZE (`` and ``)``) of every peer-suite query, deduplicated."""
    from tests.helpers.mr_suites import analyzer_errors, flink_itcase, trino_aggregations, trino_row_pattern_matching

    queries: list[str] = []
    for module in (analyzer_errors, flink_itcase, trino_aggregations, trino_row_pattern_matching):
        for name in dir(module):
            value = getattr(module, name)
            if isinstance(value, list):
                queries += [case[1] for case in value if isinstance(case, tuple) and len(case) >= 2
                            and isinstance(case[1], str)]
            elif isinstance(value, dict):
                queries += [case[0] for case in value.values() if isinstance(case, tuple) and case
                            and isinstance(case[0], str)]
    bodies: dict[str, None] = {}
    for query in queries:
        try:
            locations = locate_clauses(query)
        except QuerySyntaxError:
            continue
        for location in locations:
            bodies.setdefault(query[location.body_start:location.body_end].strip())
    return tuple(bodies)


def _pieces(text: str) -> list[str]:
    """``text`` as token texts with the whitespace between them kept on the token (joins back to ``text``)."""
    try:
        tokens = tokenize(text, lenient=True)
    except QuerySyntaxError:
        return list(text)
    pieces, last = [], 0
    for token in tokens[:-1]:
        pieces.append(text[last:token.end])
        last = token.end
    pieces.append(text[last:])
    return pieces


def _huge_number(rng: random.Random) -> str:
    digits = "".join(rng.choice("0123456789") for _ in range(rng.choice((20, 190, 4301, 5000))))
    return rng.choice((digits, "1" + digits, digits + ".5", "1e" + digits[:rng.randint(1, 400)],
                       "9" * 400 + "e-" + "9" * 40, "0." + digits, "-" + digits))


def _nested(rng: random.Random, text: str) -> str:
    depth = rng.choice((70, 200, 1000, 5000))
    shape = rng.randrange(6)
    if shape == 0 and "PATTERN (" in text:  # the pattern's first element in `depth` groups
        opening = text.index("PATTERN (") + len("PATTERN (")
        closing = text.find(")", opening)
        closing = len(text) if closing < 0 else closing
        return text[:opening] + "(" * depth + text[opening:closing] + ")" * depth + text[closing:]
    if shape == 1:  # an expression in `depth` parentheses
        return f"PATTERN (A) DEFINE A AS {'(' * depth}A.x > 1{')' * depth}"
    if shape == 2:  # calls nested in calls
        return f"MEASURES {'ABS(' * depth}A.x{')' * depth} AS m PATTERN (A) DEFINE A AS true"
    if shape == 3:  # prefix operators
        op = rng.choice(("NOT ", "-", "+", "- -"))
        return f"PATTERN (A) DEFINE A AS {op * depth}A.x"
    if shape == 4:  # a long flat chain: parsed by loops, walked by recursion afterwards
        op = rng.choice((" + ", " AND ", " || ", " * ", " | "))
        if op == " | ":
            return "PATTERN (" + " | ".join(["A"] * depth) + ")"
        return f"PATTERN (A) DEFINE A AS {op.join(['A.x'] * depth)}"
    return f"PATTERN ({'PERMUTE(' * depth}A{')' * depth})"


def mutate(rng: random.Random, text: str) -> str:
    """``text`` after one to four random mutations (see the module docstring)."""
    for _ in range(rng.randint(1, 4)):
        pieces = _pieces(text)
        at = rng.randrange(len(pieces) + 1)
        kind = rng.choice(MUTATIONS)
        if kind == "insert":
            word = rng.choice(VOCABULARY + tuple(p.strip() for p in pieces if p.strip()))
            pieces.insert(at, " " + word + " ")
        elif kind == "delete" and pieces:
            del pieces[min(at, len(pieces) - 1):min(at, len(pieces) - 1) + rng.randint(1, 3)]
        elif kind == "swap" and len(pieces) > 1:
            i = min(at, len(pieces) - 2)
            pieces[i], pieces[i + 1] = pieces[i + 1], pieces[i]
        elif kind == "duplicate" and pieces:
            i = min(at, len(pieces) - 1)
            run = pieces[i:i + rng.randint(1, 6)]
            pieces[i:i] = run * rng.choice((1, 2, 50))
        elif kind == "replace" and pieces:
            pieces[min(at, len(pieces) - 1)] = " " + rng.choice(VOCABULARY) + " "
        elif kind == "huge_number":
            numbers = [i for i, p in enumerate(pieces) if p.strip()[:1].isdigit()]
            i = rng.choice(numbers) if numbers and rng.random() < 0.7 else min(at, len(pieces))
            pieces[i:i + (1 if numbers and i in numbers else 0)] = [" " + _huge_number(rng) + " "]
        elif kind == "deep_nesting":
            return _nested(rng, text) if rng.random() < 0.5 else mutate(rng, _nested(rng, text))
        elif kind == "unicode":
            pieces.insert(at, "".join(rng.choice(UNICODE) for _ in range(rng.randint(1, 3))))
        elif kind == "unbalanced":
            pieces.insert(at, rng.choice(("(", ")", "{", "}", "'", '"', "`", "/*", "{-", "-}", "[", "]", "((((")))
        else:  # truncate
            pieces = pieces[:at]
        text = "".join(pieces)
    return text


@dataclass(frozen=True, slots=True)
class Outcome:
    """What parsing one input gave: ``kind`` is accepted / rejected / unpositioned / internal."""

    kind: str
    cpu_seconds: float
    detail: str = ""


def check(text: str) -> Outcome:
    """Parse ``text`` and classify the result (never raises).

    >>> check("PATTERN (A) DEFINE A AS A.x > 1").kind, check("PATTERN (A").kind
    ('accepted', 'rejected')
    """
    started = time.thread_time()
    try:
        parse_clause(text)
    except QuerySyntaxError as error:
        spent = time.thread_time() - started
        if not positioned(error, text):
            return Outcome("unpositioned", spent, f"{error.description} @ {error.position}")
        return Outcome("rejected", spent)
    except RecursionError:  # kept apart: the message says nothing, the frame does
        return Outcome("internal", time.thread_time() - started, "RecursionError " + _where())
    except Exception as error:  # the fuzzer's whole point: any other exception is a finding
        return Outcome("internal", time.thread_time() - started, f"{type(error).__name__}: {str(error)[:120]} "
                       + _where())
    return Outcome("accepted", time.thread_time() - started)


def positioned(error: QuerySyntaxError, text: str) -> bool:
    """Whether ``error`` points into ``text``: an offset within it, the line/column of that offset, a highlight."""
    position = error.position
    if not isinstance(position, int) or not 0 <= position <= len(text):
        return False
    before = text[:position]
    return (error.line == before.count("\n") + 1 and error.col == position - (before.rfind("\n") + 1) + 1
            and error.highlight.endswith("^") and f"line {error.line}, col {error.col}" in str(error))


def _where() -> str:
    frames = traceback.extract_tb(__import__("sys").exc_info()[2])
    last = frames[-1]
    return f"at {last.filename.rsplit('/', 1)[-1]}:{last.lineno}"


def inputs(seed: int, count: int) -> list[str]:
    """``count`` mutated clauses, reproducibly from ``seed``."""
    rng = random.Random(seed)
    pool = seeds()
    return [mutate(rng, rng.choice(pool)) for _ in range(count)]
