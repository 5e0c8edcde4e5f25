"""Recursive-descent parser: clause text → :class:`~timeweave.core.pattern.spec.ClauseSpec`.

The grammar follows SQL:2016's ``<row pattern recognition clause>`` in its fixed clause order, plus
Flink's ``WITHIN INTERVAL`` after ``PATTERN``::

    [PARTITION BY c, ...] [ORDER BY c [ASC|DESC] [NULLS FIRST|LAST], ...]
    [MEASURES expr AS name, ...]
    [ONE ROW PER MATCH | ALL ROWS PER MATCH [SHOW EMPTY MATCHES | OMIT EMPTY MATCHES | WITH UNMATCHED ROWS]]
    [AFTER MATCH SKIP {PAST LAST ROW | TO NEXT ROW | TO FIRST v | TO LAST v | TO v}]
    PATTERN ( pattern ) [WITHIN INTERVAL 'n' unit]
    [SUBSET u = (v, ...), ...]
    [DEFINE v AS condition, ...]

Pattern precedence, loosest first: ``|``, concatenation, quantifier; primaries are variables,
``( ... )``, ``()``, ``PERMUTE(...)``, ``{- ... -}``, ``^`` and ``$``.  Every syntax error is a
:class:`QuerySyntaxError` pointing at the token where parsing stopped; the rules checked after
parsing live in :mod:`timeweave.core.pattern.validate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import expr as E
from timeweave.core.pattern import ir
from timeweave.core.pattern.aggregates import AGGREGATE_FUNCTIONS, ALL_AGGREGATES, PARAMETERIZED
from timeweave.core.pattern.functions import SCALAR_FUNCTIONS, TYPE_NAMES
from timeweave.core.pattern.lexer import Token, TokenType, tokenize
from timeweave.core.pattern.row_functions import NOT_ROW_FUNCTIONS, check_computable
from timeweave.core.pattern.spec import (
    AfterMatchSkip,
    ClauseSpec,
    Definition,
    Measure,
    RowsPerMatch,
    SkipMode,
    SortKey,
    Subset,
)

#: Largest quantifier bound accepted; bounded quantifiers are unrolled into the program.
MAX_QUANTIFIER_BOUND = 1000
#: Deepest nesting of parentheses / sub-patterns accepted: each level costs the recursive-descent
#: parser about ten Python frames, and the default recursion limit is 1000.
MAX_DEPTH = 64
#: Deepest expression tree accepted (``a + a + ... + a`` is parsed by a loop but walked recursively
#: by validation, compilation and printing).
MAX_EXPRESSION_DEPTH = 150

_NAVIGATIONS = ("PREV", "NEXT", "FIRST", "LAST")
_MAX_OFFSET = 2**31 - 1
#: Digits of an integer literal: DECIMAL(38)'s precision, Spark's and Trino's limit for exact numbers.
_MAX_LITERAL_DIGITS = 38
#: Digits of a bound or offset (quantifier, navigation offset, type parameter): more exceed every limit.
_MAX_INTEGER_DIGITS = 18
_AGGREGATES = tuple(sorted(ALL_AGGREGATES))
_COMPARISONS = ("=", "<>", "!=", "<", "<=", ">", ">=")
_INTERVAL_UNITS = {
    "DAY": timedelta(days=1), "HOUR": timedelta(hours=1), "MINUTE": timedelta(minutes=1),
    "SECOND": timedelta(seconds=1), "MILLISECOND": timedelta(milliseconds=1),
}  # fmt: skip
# Clause keywords: never pattern variables unless quoted (so a missing ')' is reported where it is).
_CLAUSE_WORDS = frozenset("PARTITION ORDER MEASURES ONE ALL AFTER PATTERN WITHIN SUBSET DEFINE".split())
# Words that end an expression or cannot start one; a bare column must not be one of these.
_NOT_A_COLUMN = frozenset(
    "AND OR NOT IS NULL BETWEEN IN CASE WHEN THEN ELSE END AS ASC DESC NULLS PARTITION ORDER MEASURES ONE "
    "ALL AFTER PATTERN SUBSET DEFINE WITHIN".split()
)


class Parser:
    """One parse of one text.  Use :func:`parse_clause` / :func:`parse_expression` instead."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0

    # -- token helpers -------------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.tokens[self.i]
        if token.type is not TokenType.EOF:
            self.i += 1
        return token

    def error(self, message: str, token: Token | None = None) -> QuerySyntaxError:
        token = token or self.tok
        found = "end of input" if token.type is TokenType.EOF else repr(token.text)
        return QuerySyntaxError(f"{message}, found {found}", text=self.text, position=token.start)

    def accept_word(self, *words: str) -> Token | None:
        if self.tok.is_word(*words):
            return self.advance()
        return None

    def expect_word(self, *words: str) -> Token:
        token = self.accept_word(*words)
        if token is None:
            raise self.error("expected " + " or ".join(words))
        return token

    def accept_op(self, *ops: str) -> Token | None:
        if self.tok.is_op(*ops):
            return self.advance()
        return None

    def expect_op(self, op: str) -> Token:
        token = self.accept_op(op)
        if token is None:
            raise self.error(f"expected '{op}'")
        return token

    def expect_eof(self) -> None:
        if self.tok.type is not TokenType.EOF:
            raise self.error("unexpected text after the end of the clause")

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nesting deeper than {MAX_DEPTH} levels")

    def name(self, what: str, *, folded: bool) -> tuple[str, int]:
        """An identifier; ``folded`` names (pattern variables) are upper-cased when unquoted."""
        token = self.tok
        if token.type is TokenType.IDENT:
            self.advance()
            return (token.value if folded else token.text), token.start
        if token.type is TokenType.QUOTED_IDENT:
            self.advance()
            return token.value, token.start
        raise self.error(f"expected {what}")

    # -- the clause ------------------------------------------------------------------------------
    def clause(self) -> ClauseSpec:
        partition_by: list[str] = []
        order_by: list[SortKey] = []
        measures: list[Measure] = []
        rows_per_match = RowsPerMatch.ONE_ROW
        skip = AfterMatchSkip()
        if self.accept_word("PARTITION"):
            self.expect_word("BY")
            partition_by.append(self.name("a column name", folded=False)[0])
            while self.accept_op(","):
                partition_by.append(self.name("a column name", folded=False)[0])
        if self.accept_word("ORDER"):
            self.expect_word("BY")
            order_by.append(self.sort_key())
            while self.accept_op(","):
                order_by.append(self.sort_key())
        if self.accept_word("MEASURES"):
            measures.append(self.measure())
            while self.accept_op(","):
                measures.append(self.measure())
        if self.tok.is_word("ONE", "ALL"):
            rows_per_match = self.rows_per_match()
        if self.tok.is_word("AFTER"):
            skip = self.after_match_skip()
        if not self.tok.is_word("PATTERN"):
            raise self.error("expected PATTERN (clauses must come in the standard order: PARTITION BY, "
                             "ORDER BY, MEASURES, rows per match, AFTER MATCH SKIP, PATTERN, SUBSET, DEFINE)")
        self.advance()
        self.expect_op("(")
        if self.tok.is_op(")"):
            pattern: ir.Node = ir.Empty(self.tok.start)
        else:
            pattern = self.alternation()
        self.expect_op(")")
        within = None
        if self.accept_word("WITHIN"):
            within = self.interval_literal()
            if within <= timedelta(0):
                raise QuerySyntaxError("WITHIN interval must be positive", text=self.text, position=self.tokens[self.i - 1].start)
        subsets: list[Subset] = []
        if self.accept_word("SUBSET"):
            subsets.append(self.subset())
            while self.accept_op(","):
                subsets.append(self.subset())
        definitions: list[Definition] = []
        if self.accept_word("DEFINE"):
            definitions.append(self.definition())
            while self.accept_op(","):
                definitions.append(self.definition())
        self.expect_eof()
        return ClauseSpec(
            pattern=pattern,
            partition_by=tuple(partition_by),
            order_by=tuple(order_by),
            measures=tuple(measures),
            rows_per_match=rows_per_match,
            after_match_skip=skip,
            subsets=tuple(subsets),
            definitions=tuple(definitions),
            within=within,
            text=self.text,
        )

    def sort_key(self) -> SortKey:
        start = self.tok.start
        column = self.name("a column name", folded=False)[0]
        descending = False
        if self.accept_word("DESC"):
            descending = True
        else:
            self.accept_word("ASC")
        nulls_first = None
        if self.accept_word("NULLS"):
            nulls_first = self.expect_word("FIRST", "LAST").value == "FIRST"
        return SortKey(column, descending, nulls_first, start)

    def measure(self) -> Measure:
        start = self.tok.start
        expression = self.expression()
        if not self.accept_word("AS"):
            raise self.error("expected AS <name> after the measure expression (every measure needs a name)")
        return Measure(self.name("a measure name", folded=False)[0], expression, start)

    def rows_per_match(self) -> RowsPerMatch:
        if self.accept_word("ONE"):
            self.expect_word("ROW")
            self.expect_word("PER")
            self.expect_word("MATCH")
            return RowsPerMatch.ONE_ROW
        self.expect_word("ALL")
        self.expect_word("ROWS")
        self.expect_word("PER")
        self.expect_word("MATCH")
        if self.accept_word("SHOW"):
            self.expect_word("EMPTY")
            self.expect_word("MATCHES")
            return RowsPerMatch.ALL_SHOW_EMPTY
        if self.accept_word("OMIT"):
            self.expect_word("EMPTY")
            self.expect_word("MATCHES")
            return RowsPerMatch.ALL_OMIT_EMPTY
        if self.accept_word("WITH"):
            self.expect_word("UNMATCHED")
            self.expect_word("ROWS")
            return RowsPerMatch.ALL_WITH_UNMATCHED
        return RowsPerMatch.ALL_SHOW_EMPTY

    def after_match_skip(self) -> AfterMatchSkip:
        start = self.expect_word("AFTER").start
        self.expect_word("MATCH")
        self.expect_word("SKIP")
        if self.accept_word("PAST"):
            self.expect_word("LAST")
            self.expect_word("ROW")
            return AfterMatchSkip(SkipMode.PAST_LAST_ROW, None, start)
        self.expect_word("TO")
        if self.tok.is_word("NEXT") and self.peek().is_word("ROW"):
            self.advance()
            self.advance()
            return AfterMatchSkip(SkipMode.TO_NEXT_ROW, None, start)
        mode = SkipMode.TO_LAST
        # "TO FIRST x" / "TO LAST x"; a variable itself named FIRST/LAST is "TO LAST FIRST"
        if self.tok.is_word("FIRST", "LAST") and self.peek().type in (TokenType.IDENT, TokenType.QUOTED_IDENT):
            mode = SkipMode.TO_FIRST if self.advance().value == "FIRST" else SkipMode.TO_LAST
        var = self.name("a pattern variable after AFTER MATCH SKIP TO", folded=True)[0]
        return AfterMatchSkip(mode, var, start)

    def subset(self) -> Subset:
        name, start = self.name("a subset name", folded=True)
        self.expect_op("=")
        self.expect_op("(")
        names = [self.name("a pattern variable", folded=True)[0]]
        while self.accept_op(","):
            names.append(self.name("a pattern variable", folded=True)[0])
        self.expect_op(")")
        return Subset(name, tuple(names), start)

    def definition(self) -> Definition:
        var, start = self.name("a pattern variable to DEFINE", folded=True)
        self.expect_word("AS")
        return Definition(var, self.expression(), start)

    def interval_literal(self) -> timedelta:
        """``INTERVAL [-]'n' unit`` (the INTERVAL keyword is optional after WITHIN)."""
        self.accept_word("INTERVAL")
        negative = self.accept_op("-") is not None
        token = self.tok
        if token.type not in (TokenType.STRING, TokenType.NUMBER):
            raise self.error("expected an interval value such as '1'")
        self.advance()
        raw = token.value.strip()
        if raw.startswith("-"):
            negative, raw = not negative, raw[1:]
        try:
            amount = Decimal(raw)
        except ArithmeticError:
            raise QuerySyntaxError(f"invalid interval value {token.text}", text=self.text, position=token.start) from None
        if not amount.is_finite():
            raise QuerySyntaxError(f"invalid interval value {token.text}", text=self.text, position=token.start)
        unit_token = self.tok
        unit = unit_token.value.rstrip("S") if unit_token.type is TokenType.IDENT else ""
        if unit not in _INTERVAL_UNITS:
            raise self.error("expected an interval unit (DAY, HOUR, MINUTE, SECOND, MILLISECOND)")
        self.advance()
        if self.tok.is_op("(") and unit == "SECOND":  # SECOND(3): precision, irrelevant here
            self.advance()
            self.integer("a precision")
            self.expect_op(")")
        if amount > 10**9:
            raise QuerySyntaxError("interval too large", text=self.text, position=token.start)
        micros = int(amount * int(_INTERVAL_UNITS[unit] / timedelta(microseconds=1)))
        return timedelta(microseconds=-micros if negative else micros)

    def integer(self, what: str) -> int:
        token = self.tok
        if token.type is not TokenType.NUMBER or not token.value.isdigit():
            raise self.error(f"expected {what} (a non-negative integer)")
        digits = token.value.lstrip("0")
        if len(digits) > _MAX_INTEGER_DIGITS:  # past every bound; int() of >4300 digits would even raise
            raise QuerySyntaxError(f"{what} {token.text[:20]}... ({len(digits)} digits) is too large",
                                   text=self.text, position=token.start)
        self.advance()
        return int(token.value)

    # -- PATTERN ---------------------------------------------------------------------------------
    def alternation(self) -> ir.Node:
        self.nest()
        start = self.tok.start
        parts = [self.concatenation()]
        while self.accept_op("|"):
            parts.append(self.concatenation())
        self.depth -= 1
        return parts[0] if len(parts) == 1 else ir.Alternation(tuple(parts), start)

    def concatenation(self) -> ir.Node:
        start = self.tok.start
        parts = [self.quantified()]
        while not self.tok.is_op(")", "|", ",", "-}") and self.tok.type is not TokenType.EOF \
                and not self.tok.is_word(*_CLAUSE_WORDS):
            parts.append(self.quantified())
        return parts[0] if len(parts) == 1 else ir.Concatenation(tuple(parts), start)

    def quantified(self) -> ir.Node:
        start = self.tok.start
        primary = self.primary()
        quantifier = self.quantifier()
        if quantifier is None:
            return primary
        low, high, _ = quantifier
        greedy = self.accept_op("?") is None
        if self.tok.is_op("*", "+", "?") or (self.tok.is_op("{") and not self.peek().is_op("-")):
            raise self.error("a quantifier cannot follow a quantifier; add parentheses, e.g. (A*)+")
        return ir.Quantified(primary, low, high, greedy, start)

    def quantifier(self) -> tuple[int, int | None, Token] | None:
        token = self.tok
        if self.accept_op("*"):
            return 0, None, token
        if self.accept_op("+"):
            return 1, None, token
        if self.accept_op("?"):
            return 0, 1, token
        if not self.tok.is_op("{"):
            return None
        self.advance()
        high: int | None
        if self.accept_op(","):  # {,m} and {,} (Trino: zero or more)
            low = 0
            high = None if self.tok.is_op("}") else self.integer("a quantifier upper bound")
        else:
            low = self.integer("a quantifier bound")
            if self.accept_op(","):
                high = None if self.tok.is_op("}") else self.integer("a quantifier upper bound")
            else:
                high = low
        self.expect_op("}")
        for bound in (low, high):
            if bound is not None and bound > MAX_QUANTIFIER_BOUND:
                raise QuerySyntaxError(f"quantifier bound {bound} exceeds the limit {MAX_QUANTIFIER_BOUND}",
                                       text=self.text, position=token.start)
        if high is not None and high == 0:
            raise QuerySyntaxError("quantifier upper bound must be greater than 0", text=self.text, position=token.start)
        if high is not None and high < low:
            raise QuerySyntaxError(f"quantifier upper bound {high} is below the lower bound {low}",
                                   text=self.text, position=token.start)
        return low, high, token

    def primary(self) -> ir.Node:
        token = self.tok
        if token.is_op("("):
            self.advance()
            if self.accept_op(")"):
                return ir.Empty(token.start)
            inner = self.alternation()
            self.expect_op(")")
            return inner
        if token.is_op("{-"):
            self.advance()
            inner = self.alternation()
            self.expect_op("-}")
            return ir.Exclusion(inner, token.start)
        if token.is_op("^", "$"):
            self.advance()
            return ir.Anchor(token.value, token.start)
        if token.is_word("PERMUTE") and self.peek().is_op("("):
            self.advance()
            self.advance()
            parts = [self.alternation()]
            while self.accept_op(","):
                parts.append(self.alternation())
            self.expect_op(")")
            return ir.Permutation(tuple(parts), token.start)
        if token.type is TokenType.QUOTED_IDENT or (token.type is TokenType.IDENT and token.value not in _CLAUSE_WORDS):
            self.advance()
            return ir.Label(token.value, token.start)
        raise self.error("expected a pattern variable, '(', PERMUTE, '{-', '^' or '$'")

    # -- expressions -----------------------------------------------------------------------------
    def expression(self) -> E.Expr:
        self.nest()
        result = self.disjunction()
        self.depth -= 1
        if self.depth == 0:
            self.check_depth(result)
        return result

    def check_depth(self, root: E.Expr) -> None:
        """Reject expression trees deeper than MAX_EXPRESSION_DEPTH (walked iteratively here)."""
        stack = [(root, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > MAX_EXPRESSION_DEPTH:
                raise QuerySyntaxError(f"expression nested deeper than {MAX_EXPRESSION_DEPTH} levels",
                                       text=self.text, position=getattr(node, "start", 0))
            stack.extend((child, depth + 1) for child in node.children())

    def chain(self, length: int, token: Token) -> None:
        """A left-deep operator chain is as deep as it is long: stop at the limit, not after the whole text."""
        if length > MAX_EXPRESSION_DEPTH:
            raise QuerySyntaxError(f"expression nested deeper than {MAX_EXPRESSION_DEPTH} levels (a chain of "
                                   f"more than {MAX_EXPRESSION_DEPTH} {token.value} operators)",
                                   text=self.text, position=token.start)

    def disjunction(self) -> E.Expr:
        left = self.conjunction()
        length = 0
        while (token := self.accept_word("OR")) is not None:
            length += 1
            self.chain(length, token)
            left = E.Binary("OR", left, self.conjunction(), token.start)
        return left

    def conjunction(self) -> E.Expr:
        left = self.negation()
        length = 0
        while (token := self.accept_word("AND")) is not None:
            length += 1
            self.chain(length, token)
            left = E.Binary("AND", left, self.negation(), token.start)
        return left

    def negation(self) -> E.Expr:
        token = self.accept_word("NOT")
        if token is not None:
            self.nest()
            operand = self.negation()
            self.depth -= 1
            return E.Unary("NOT", operand, token.start)
        return self.predicate()

    def predicate(self) -> E.Expr:
        left = self.additive()
        token = self.tok
        if token.is_op(*_COMPARISONS):
            self.advance()
            result: E.Expr = E.Binary("<>" if token.value == "!=" else token.value, left, self.additive(), token.start)
            if self.tok.is_op(*_COMPARISONS):
                raise self.error("comparisons cannot be chained; use AND")
            if self.tok.is_word("IS"):  # a > 1 IS TRUE: the boolean test applies to the comparison (SQL)
                return self.is_test(result, self.tok)
            return result
        if token.is_word("IS"):
            return self.is_test(left, token)
        negated = False
        if token.is_word("NOT") and self.peek().is_word("BETWEEN", "IN", "LIKE"):
            self.advance()
            negated = True
        if self.accept_word("LIKE"):
            args = [left, self.additive()]
            if self.accept_word("ESCAPE"):
                args.append(self.additive())
            like = E.Func("LIKE", tuple(args), token.start)
            return E.Unary("NOT", like, token.start) if negated else like
        if self.accept_word("BETWEEN"):
            low = self.additive()
            self.expect_word("AND")
            return E.Between(left, low, self.additive(), negated, token.start)
        if self.accept_word("IN"):
            if self.at_subquery():
                return E.InSubquery(left, self.subquery_text(), negated, token.start)
            self.expect_op("(")
            items = [self.expression()]
            while self.accept_op(","):
                items.append(self.expression())
            self.expect_op(")")
            return E.InList(left, tuple(items), negated, token.start)
        return left

    def is_test(self, left: E.Expr, token: Token) -> E.Expr:
        """``left IS [NOT] NULL | TRUE | FALSE | DISTINCT FROM x`` (``token`` is IS)."""
        self.advance()
        negated = self.accept_word("NOT") is not None
        if self.accept_word("DISTINCT"):  # null-safe (in)equality
            self.expect_word("FROM")
            same = E.Func("EQUAL_NULL", (left, self.additive()), token.start)
            return same if negated else E.Unary("NOT", same, token.start)
        truth = self.accept_word("TRUE", "FALSE")
        if truth is not None:  # x IS TRUE: never NULL
            value = E.Literal(truth.value == "TRUE", truth.start)
            test = E.Func("COALESCE", (E.Binary("=", left, value, token.start), E.Literal(False, token.start)),
                          token.start)
            return E.Unary("NOT", test, token.start) if negated else test
        self.expect_word("NULL")
        return E.IsNull(left, negated, token.start)

    def additive(self) -> E.Expr:
        left = self.multiplicative()
        length = 0
        while (token := self.accept_op("+", "-", "||")) is not None:
            length += 1
            self.chain(length, token)
            left = E.Binary(token.value, left, self.multiplicative(), token.start)
        return left

    def multiplicative(self) -> E.Expr:
        left = self.unary()
        length = 0
        while (token := self.accept_op("*", "/", "%")) is not None:
            length += 1
            self.chain(length, token)
            left = E.Binary(token.value, left, self.unary(), token.start)
        return left

    def unary(self) -> E.Expr:
        token = self.accept_op("-", "+")
        if token is not None:
            self.nest()
            operand = self.unary()
            self.depth -= 1
            if token.value == "-" and isinstance(operand, E.Literal) and isinstance(operand.value, int | float | Decimal) \
                    and not isinstance(operand.value, bool):
                return E.Literal(-operand.value, token.start)
            return E.Unary(token.value, operand, token.start)
        return self.primary_expression()

    def primary_expression(self) -> E.Expr:
        token = self.tok
        if token.type is TokenType.NUMBER:
            self.advance()
            text = token.value
            # Exact integers stay int (BIGINT); anything with a point or exponent is DOUBLE.
            if text.isdigit():
                if len(text.lstrip("0")) > _MAX_LITERAL_DIGITS:  # Spark's and Trino's limit (DECIMAL(38))
                    raise QuerySyntaxError(f"integer literal of {len(text.lstrip('0'))} digits is out of range "
                                           f"(at most {_MAX_LITERAL_DIGITS} digits)", text=self.text, position=token.start)
                return E.Literal(int(text), token.start)
            value = float(text)
            if not math.isfinite(value):
                raise QuerySyntaxError(f"numeric literal {text[:20]}{'...' if len(text) > 20 else ''} is out of the "
                                       "DOUBLE range", text=self.text, position=token.start)
            return E.Literal(value, token.start)
        if token.type is TokenType.STRING:
            self.advance()
            return E.Literal(token.value, token.start)
        if self.at_subquery():
            return E.Subquery("scalar", self.subquery_text(), token.start)
        if token.is_op("("):
            self.advance()
            inner = self.expression()
            self.expect_op(")")
            return inner
        if token.type is TokenType.QUOTED_IDENT:
            return self.column_reference()
        if token.type is not TokenType.IDENT:
            raise self.error("expected an expression")
        word = token.value
        following = self.peek()
        if word in ("TRUE", "FALSE", "NULL"):
            self.advance()
            return E.Literal({"TRUE": True, "FALSE": False, "NULL": None}[word], token.start)
        if (word == "INTERVAL" and following.type in (TokenType.STRING, TokenType.NUMBER)) or (
            word == "INTERVAL" and following.is_op("-")
        ):
            return E.Literal(self.interval_literal(), token.start)
        if word in ("DATE", "TIMESTAMP") and following.type is TokenType.STRING:
            self.advance()
            self.advance()
            try:
                literal = date.fromisoformat(following.value) if word == "DATE" else datetime.fromisoformat(following.value)
            except ValueError:
                raise QuerySyntaxError(f"invalid {word} literal {following.text}", text=self.text,
                                       position=following.start) from None
            return E.Literal(literal, token.start)
        if word == "EXISTS" and following.is_op("("):
            self.advance()
            if not self.at_subquery():
                raise self.error("EXISTS needs a subquery: EXISTS (SELECT ...)")
            return E.Subquery("exists", self.subquery_text(), token.start)
        if word == "CASE":
            return self.case()
        if word in ("CURRENT_TIMESTAMP", "CURRENT_DATE") and not following.is_op("."):
            # the standard's datetime value functions are one value per query (Spark, Trino): read as the
            # uncorrelated subquery they equal, so every door that runs subqueries evaluates them once
            self.advance()
            if self.tok.is_op("(") and self.peek().is_op(")"):  # Spark's spelling current_timestamp()
                self.advance()
                self.advance()
            return E.Subquery("scalar", f"SELECT {word.lower()}()", token.start)
        if word in ("RUNNING", "FINAL") and following.type is TokenType.IDENT and self.peek(2).is_op("("):
            self.advance()
            inner_token = self.tok
            if inner_token.value not in _NAVIGATIONS + _AGGREGATES:
                raise self.error(f"{word} applies only to FIRST, LAST, PREV, NEXT and aggregates", inner_token)
            if word == "FINAL" and inner_token.value in ("PREV", "NEXT"):
                # the standard (and Trino) give FINAL to the logical navigation inside, not to the physical offset
                raise self.error(f"FINAL cannot apply to {inner_token.value}; write "
                                 f"{inner_token.value}(FINAL LAST(...)) instead", inner_token)
            return self.call(semantics=word, start=token.start)
        if word == "ARRAY" and following.is_op("["):
            return self.array_constructor()
        if following.is_op("("):
            return self.call(semantics=None)
        if word in _NOT_A_COLUMN:
            raise self.error("expected an expression")
        return self.column_reference()

    def at_subquery(self) -> bool:
        """Whether the parser stands at ``(SELECT ...`` / ``(WITH ...`` (an uncorrelated subquery)."""
        return self.tok.is_op("(") and self.peek().is_word("SELECT", "WITH")

    def subquery_text(self) -> str:
        """Consume ``( query )`` and return the query's text as written (Spark parses it, not us)."""
        opening = self.advance()
        depth = 1
        while depth:
            token = self.advance()
            if token.type is TokenType.EOF:
                raise QuerySyntaxError("subquery ( is never closed", text=self.text, position=opening.start)
            depth += 1 if token.is_op("(") else -1 if token.is_op(")") else 0
        return self.text[opening.end : self.tokens[self.i - 1].start].strip()

    def column_reference(self) -> E.Expr:
        first, start = self.name("a column name", folded=False)
        first_token = self.tokens[self.i - 1]
        if self.accept_op("."):
            var = first_token.value if first_token.type is TokenType.QUOTED_IDENT else first_token.value.upper()
            if self.tok.is_op("*"):
                raise self.error(f"{var}.* is only allowed inside COUNT")
            column = self.name("a column name after '.'", folded=False)[0]
            return E.Column(var, column, start)
        return E.Column(None, first, start)

    def array_constructor(self) -> E.Expr:
        """``ARRAY[a, b, ...]`` (SQL standard, Trino): the same node as ``ARRAY(a, b, ...)`` (Spark)."""
        start = self.advance().start
        self.expect_op("[")
        self.nest()
        try:
            args: list[E.Expr] = []
            if not self.tok.is_op("]"):
                args.append(self.expression())
                while self.accept_op(","):
                    args.append(self.expression())
            self.expect_op("]")
        finally:
            self.depth -= 1
        return E.Func("ARRAY", tuple(args), start)

    def case(self) -> E.Expr:
        start = self.expect_word("CASE").start
        operand = None if self.tok.is_word("WHEN") else self.expression()
        whens: list[tuple[E.Expr, E.Expr]] = []
        while self.accept_word("WHEN"):
            condition = self.expression()
            self.expect_word("THEN")
            whens.append((condition, self.expression()))
        if not whens:
            raise self.error("expected WHEN")
        default = self.expression() if self.accept_word("ELSE") else None
        self.expect_word("END")
        return E.Case(operand, tuple(whens), default, start)

    def call(self, semantics: str | None, start: int | None = None) -> E.Expr:
        token = self.advance()
        begin = token.start if start is None else start
        name = token.value
        self.expect_op("(")
        self.nest()
        try:
            if name in _NAVIGATIONS:
                return self.navigation(token, semantics, begin)
            if name in _AGGREGATES:
                return self.aggregate(token, semantics, begin)
            if name == "CLASSIFIER":
                var = None
                if not self.tok.is_op(")"):
                    var = self.name("a pattern variable", folded=True)[0]
                if not self.tok.is_op(")"):
                    raise self.error("CLASSIFIER takes no argument or one pattern variable or subset name")
                self.expect_op(")")
                return E.Classifier(var, token.start)
            if name == "MATCH_NUMBER":
                if not self.tok.is_op(")"):
                    raise self.error("MATCH_NUMBER takes no arguments")
                self.expect_op(")")
                return E.MatchNumber(token.start)
            if name == "MATCH_ROWTIME":
                column = None
                if not self.tok.is_op(")"):
                    reference = self.column_reference()
                    assert isinstance(reference, E.Column)
                    column = reference
                self.expect_op(")")
                return E.MatchRowtime(column, token.start)
            if name == "CAST":
                operand = self.expression()
                self.expect_word("AS")
                type_token = self.tok
                type_name = TYPE_NAMES.get(type_token.value) if type_token.type is TokenType.IDENT else None
                if type_name is None:
                    raise self.error("expected a type name (" + ", ".join(sorted(TYPE_NAMES)) + ")")
                self.advance()
                if type_name == "DOUBLE":
                    self.accept_word("PRECISION")
                if self.accept_op("("):  # VARCHAR(10), DECIMAL(10, 2), TIMESTAMP(3): precision is irrelevant
                    self.integer("a type parameter")
                    if self.accept_op(","):
                        self.integer("a type parameter")
                    self.expect_op(")")
                self.expect_op(")")
                return E.Cast(operand, type_name, token.start)
            function = SCALAR_FUNCTIONS.get(name)
            if function is None and name in NOT_ROW_FUNCTIONS:
                raise QuerySyntaxError(
                    f"{token.text} is not supported in MATCH_RECOGNIZE: an aggregate without a fold over a match, a "
                    "window or generator function, or a nondeterministic one (see the README's list of aggregates)",
                    text=self.text, position=token.start)
            args: list[E.Expr] = []
            if not self.tok.is_op(")"):
                args.append(self.expression())
                while self.accept_op(","):
                    args.append(self.expression())
            close = self.expect_op(")")
            if function is None:  # any other Spark function: the engine computes it (row_functions)
                return E.Func(name, tuple(args), token.start)
            if len(args) < function.min_args or (function.max_args is not None and len(args) > function.max_args):
                expected = str(function.min_args) if function.max_args == function.min_args else (
                    f"{function.min_args} or more" if function.max_args is None
                    else f"{function.min_args} to {function.max_args}")
                raise QuerySyntaxError(f"{name} takes {expected} arguments, got {len(args)}", text=self.text,
                                       position=close.start)
            return E.Func(name, tuple(args), token.start)
        finally:
            self.depth -= 1

    def navigation(self, token: Token, semantics: str | None, start: int) -> E.Expr:
        if self.tok.is_op(")"):
            raise self.error(f"{token.value} takes 1 or 2 arguments (a value and an optional offset), got none")
        arg = self.expression()
        offset, written = (1 if token.value in ("PREV", "NEXT") else 0), False
        if self.accept_op(","):
            offset_token = self.tok
            offset, written = self.integer("a navigation offset"), True
            if offset > _MAX_OFFSET:  # Trino's bound (a 32-bit row offset); no partition reaches past it
                raise self.error(f"the offset of {token.value} must not exceed {_MAX_OFFSET}", offset_token)
        self.expect_op(")")
        return E.Navigation(token.value, arg, offset, semantics, written, start)

    def aggregate(self, token: Token, semantics: str | None, start: int) -> E.Expr:
        if self.tok.is_word("DISTINCT"):
            raise self.error("DISTINCT aggregates are not supported in MATCH_RECOGNIZE")
        if token.value == "COUNT":
            if self.accept_op(")"):  # COUNT() is COUNT(*) (Trino)
                return E.Aggregate("COUNT", None, None, semantics, start)
            if self.accept_op("*"):
                self.expect_op(")")
                return E.Aggregate("COUNT", None, None, semantics, start)
            if self.tok.type in (TokenType.IDENT, TokenType.QUOTED_IDENT) and self.peek().is_op(".") \
                    and self.peek(2).is_op("*"):
                var = self.name("a pattern variable", folded=True)[0]
                self.advance()
                self.advance()
                self.expect_op(")")
                return E.Aggregate("COUNT", None, var, semantics, start)
        arg = self.expression()
        function = AGGREGATE_FUNCTIONS.get(token.value)
        key = None
        if function is not None and function.arity == 2:
            self.expect_op(",")
            key = self.expression()
        parameterized = PARAMETERIZED.get(token.value)
        parameters: list[Any] = []
        while parameterized is not None and len(parameters) < len(parameterized.kinds) and self.accept_op(","):
            parameters.append(self.aggregate_parameter(token.value, parameterized.kinds[len(parameters)]))
        if self.tok.is_op(","):
            most = 1 + (key is not None) + (len(parameterized.kinds) if parameterized else 0)
            counts = {1: "one argument", 2: "two arguments"}
            raise self.error(f"{token.value} takes {'at most ' if parameterized else ''}"
                             f"{counts.get(most, f'{most} arguments')}")
        self.expect_op(")")
        return E.Aggregate(token.value, arg, None, semantics, start, key, tuple(parameters))

    def aggregate_parameter(self, name: str, kind: str) -> Any:
        """A constant argument of an aggregate (``n`` of ``MAX_BY(x, y, n)``, the separator of ``LISTAGG``)."""
        token = self.tok
        value = self.expression()
        constant = value.value if isinstance(value, E.Literal) else None
        if kind == "count" and not (isinstance(constant, int) and not isinstance(constant, bool) and constant > 0):
            raise self.error(f"the count argument of {name} must be a positive integer constant", token)
        if kind == "text" and not isinstance(constant, str):
            raise self.error(f"the separator of {name} must be a string constant", token)
        if kind == "number" and not (isinstance(constant, int | float | Decimal) and not isinstance(constant, bool)):
            raise self.error(f"the error bound of {name} must be a number constant", token)
        return constant


def parse_clause(text: str) -> ClauseSpec:
    """Parse and validate the text between the parentheses of ``MATCH_RECOGNIZE ( ... )``.

    >>> spec = parse_clause("PARTITION BY symbol ORDER BY rowtime MEASURES LAST(B.price) AS p "
    ...                     "PATTERN (A B+?) DEFINE B AS B.price < PREV(B.price)")
    >>> str(spec.pattern), spec.partition_by, spec.measures[0].name
    ('A B+?', ('symbol',), 'p')
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_clause expects the clause text as str, got {type(text).__name__}")
    from timeweave.core.pattern.validate import validate

    spec = Parser(text).clause()
    validate(spec)
    check_computable(spec)
    return spec


def parse_expression(text: str) -> E.Expr:
    """Parse one expression (tests and tools; no validation against a pattern).

    >>> str(parse_expression("a.price BETWEEN 1 AND 2 OR x IN (1, 2)"))
    'A.price BETWEEN 1 AND 2 OR x IN (1, 2)'
    """
    parser = Parser(text)
    result = parser.expression()
    parser.expect_eof()
    return result


def parse_pattern(text: str) -> ir.Node:
    """Parse a row pattern alone, e.g. ``"A B+ (C | D)*?"``.

    >>> str(parse_pattern("PERMUTE(A, B) {- C -} D{2,}?"))
    'PERMUTE(A, B) {- C -} D{2,}?'
    """
    parser = Parser(text)
    result: ir.Node = ir.Empty(0) if parser.tok.type is TokenType.EOF else parser.alternation()
    parser.expect_eof()
    return result


@dataclass(frozen=True, slots=True)
class ClauseLocation:
    """Where one ``MATCH_RECOGNIZE ( ... )`` sits in a query: ``sql[start:end]`` is the whole clause,
    ``sql[body_start:body_end]`` the text between its parentheses (what :func:`parse_clause` takes)."""

    start: int
    body_start: int
    body_end: int
    end: int


def locate_clauses(sql: str) -> list[ClauseLocation]:
    """Find every ``MATCH_RECOGNIZE ( ... )`` in a SQL text, skipping strings, quoted names and comments.

    >>> sql = "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS x = ')') AS m"
    >>> [sql[loc.body_start:loc.body_end] for loc in locate_clauses(sql)]
    ["PATTERN (A) DEFINE A AS x = ')'"]
    """
    tokens = tokenize(sql, lenient=True)
    found: list[ClauseLocation] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.is_word("MATCH_RECOGNIZE") and tokens[index + 1].is_op("("):
            depth = 0
            for close in range(index + 1, len(tokens)):
                if tokens[close].is_op("("):
                    depth += 1
                elif tokens[close].is_op(")"):
                    depth -= 1
                    if depth == 0:
                        open_paren = tokens[index + 1]
                        found.append(ClauseLocation(token.start, open_paren.end, tokens[close].start, tokens[close].end))
                        index = close
                        break
            else:
                raise QuerySyntaxError("MATCH_RECOGNIZE ( is never closed", text=sql, position=token.start)
        index += 1
    return found
