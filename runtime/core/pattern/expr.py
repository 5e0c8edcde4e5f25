"""Expression AST of DEFINE conditions and MEASURES: frozen nodes, positions excluded from equality.

``str`` prints SQL back (used in error messages and in :class:`ClauseSpec` rendering).  Pattern
variables are stored upper-cased (SQL folds unquoted names); column names are kept as written.

>>> from timeweave.core.pattern.parser import parse_expression
>>> str(parse_expression("PREV(LAST(A.price, 1), 2) > 10 AND (classifier() = 'A' OR x - (y - z) > 0)"))
"PREV(LAST(A.price, 1), 2) > 10 AND (CLASSIFIER() = 'A' OR x - (y - z) > 0)"
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from timeweave.core.pattern.lexer import sql_name


class Expr:
    """Base of all expression nodes."""

    __slots__ = ()

    def children(self) -> tuple[Expr, ...]:
        return ()

    def walk(self) -> Iterator[Expr]:
        yield self
        for child in self.children():
            yield from child.walk()


def _sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, Decimal):  # no exact-decimal literal syntax in the clause grammar
        return f"CAST('{value}' AS DECIMAL)"
    if isinstance(value, timedelta):
        micros = value // timedelta(microseconds=1)
        return f"INTERVAL '{micros / 1_000_000 if micros % 1_000_000 else micros // 1_000_000}' SECOND"
    return repr(value)


_COMPARISON = 4


def _precedence(node: Expr) -> int:
    """Binding strength when printing (higher binds tighter), mirroring the parser's grammar levels."""
    if isinstance(node, Binary):
        if node.op == "OR":
            return 1
        if node.op == "AND":
            return 2
        if node.op in ("+", "-", "||"):
            return 5
        if node.op in ("*", "/", "%"):
            return 6
        return _COMPARISON
    if isinstance(node, Unary) and node.op == "NOT":
        return 3
    if isinstance(node, IsNull | Between | InList | InSubquery):
        return _COMPARISON
    return 10


def _wrap(node: Expr) -> str:
    """Parenthesize an operand that is itself an operator expression, so printing round-trips."""
    composite = isinstance(node, Binary | Between | InList | InSubquery | IsNull) or (isinstance(node, Unary) and node.op == "NOT")
    return f"({node})" if composite else str(node)


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    value: Any
    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return _sql_literal(self.value)


@dataclass(frozen=True, slots=True)
class Column(Expr):
    """``var.name`` or a bare ``name`` (var None: the universal row pattern variable)."""

    var: str | None
    name: str
    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        name = sql_name(self.name, folded=False)
        return f"{sql_name(self.var, folded=True)}.{name}" if self.var else name


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    op: str  # '-', '+', 'NOT'
    operand: Expr
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def __str__(self) -> str:
        inner = _precedence(self.operand)
        if self.op == "NOT":  # NOT binds looser than comparisons: NOT a = 1 is NOT (a = 1)
            return f"NOT {self.operand}" if inner >= 3 else f"NOT ({self.operand})"
        text = str(self.operand)
        if inner < 10:
            return f"{self.op}({text})"
        # a space keeps "- -x" from reading as a "--" comment
        return f"{self.op} {text}" if text.startswith(("-", "+")) else f"{self.op}{text}"


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    """Arithmetic, comparison, ``||``, ``AND`` and ``OR``."""

    op: str
    left: Expr
    right: Expr
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)

    def __str__(self) -> str:
        # Parentheses only where precedence needs them: left-deep chains such as a + b + c print
        # flat (so printing never adds nesting the parser would count), right operands of equal
        # precedence keep theirs (a - (b - c)), comparisons never chain.
        mine = _precedence(self)
        left = _precedence(self.left)
        right = _precedence(self.right)
        comparison = mine == _COMPARISON
        left_text = f"({self.left})" if left < mine or (comparison and left == mine) else str(self.left)
        right_text = f"({self.right})" if right <= mine else str(self.right)
        return f"{left_text} {self.op} {right_text}"


@dataclass(frozen=True, slots=True)
class IsNull(Expr):
    operand: Expr
    negated: bool = False
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def __str__(self) -> str:
        return f"{_wrap(self.operand)} IS {'NOT ' if self.negated else ''}NULL"


@dataclass(frozen=True, slots=True)
class Between(Expr):
    operand: Expr
    low: Expr
    high: Expr
    negated: bool = False
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        return (self.operand, self.low, self.high)

    def __str__(self) -> str:
        return f"{_wrap(self.operand)} {'NOT ' if self.negated else ''}BETWEEN {_wrap(self.low)} AND {_wrap(self.high)}"


@dataclass(frozen=True, slots=True)
class InList(Expr):
    operand: Expr
    items: tuple[Expr, ...]
    negated: bool = False
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        return (self.operand, *self.items)

    def __str__(self) -> str:
        return f"{_wrap(self.operand)} {'NOT ' if self.negated else ''}IN ({', '.join(map(str, self.items))})"


@dataclass(frozen=True, slots=True)
class Case(Expr):
    """``CASE [operand] WHEN .. THEN .. [ELSE ..] END``."""

    operand: Expr | None
    whens: tuple[tuple[Expr, Expr], ...]
    default: Expr | None
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        parts: list[Expr] = [] if self.operand is None else [self.operand]
        for cond, result in self.whens:
            parts += [cond, result]
        if self.default is not None:
            parts.append(self.default)
        return tuple(parts)

    def __str__(self) -> str:
        head = "CASE" if self.operand is None else f"CASE {self.operand}"
        whens = " ".join(f"WHEN {c} THEN {r}" for c, r in self.whens)
        tail = f" ELSE {self.default}" if self.default is not None else ""
        return f"{head} {whens}{tail} END"


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    operand: Expr
    type_name: str  # normalized: BIGINT, DOUBLE, DECIMAL, VARCHAR, BOOLEAN, TIMESTAMP, DATE
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def __str__(self) -> str:
        return f"CAST({self.operand} AS {self.type_name})"


@dataclass(frozen=True, slots=True)
class Subquery(Expr):
    """An uncorrelated subquery: ``(SELECT ...)`` (``kind`` scalar) or ``EXISTS (SELECT ...)`` (exists).

    The core runs no queries: the Spark doors replace each subquery by its value before matching
    (:mod:`timeweave.spark.subqueries`), as Trino evaluates uncorrelated subqueries once per query.
    ``query`` is the text between the parentheses, as written.
    """

    kind: str  # 'scalar' | 'exists'
    query: str
    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"({self.query})" if self.kind == "scalar" else f"EXISTS ({self.query})"


@dataclass(frozen=True, slots=True)
class InSubquery(Expr):
    """``operand [NOT] IN (SELECT ...)`` with an uncorrelated subquery (replaced like :class:`Subquery`)."""

    operand: Expr
    query: str
    negated: bool = False
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def __str__(self) -> str:
        return f"{_wrap(self.operand)} {'NOT ' if self.negated else ''}IN ({self.query})"


@dataclass(frozen=True, slots=True)
class Func(Expr):
    """A scalar function from the evaluator's registry (COALESCE, NULLIF, ABS, ...)."""

    name: str
    args: tuple[Expr, ...]
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


@dataclass(frozen=True, slots=True)
class Navigation(Expr):
    """``PREV/NEXT`` (physical offset) or ``FIRST/LAST`` (logical offset) of ``arg``.

    ``semantics`` is ``RUNNING``/``FINAL`` when written, else None (RUNNING, the default).
    """

    kind: str
    arg: Expr
    offset: int
    semantics: str | None = None
    offset_written: bool = field(default=True, compare=False)
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        return (self.arg,)

    def __str__(self) -> str:
        prefix = f"{self.semantics} " if self.semantics else ""
        return f"{prefix}{self.kind}({self.arg}, {self.offset})"


@dataclass(frozen=True, slots=True)
class Aggregate(Expr):
    """An aggregate (``COUNT``, ``SUM``, ``ARRAY_AGG``, ... see ``aggregates``) over the rows of one variable (or all rows).

    ``arg`` None is ``COUNT(*)`` / ``COUNT(A.*)``; ``star_var`` names the variable of ``A.*``.
    ``key`` is the second argument of a two-argument aggregate (``MAX_BY(x, key)``); ``parameters`` are
    the constant arguments after those (``MAX_BY(x, key, n)``, ``MIN(x, n)``, ``LISTAGG(x, ', ')``), as values.
    """

    func: str
    arg: Expr | None
    star_var: str | None = None
    semantics: str | None = None
    start: int = field(default=0, compare=False)
    key: Expr | None = None
    parameters: tuple[Any, ...] = ()

    def children(self) -> tuple[Expr, ...]:
        return tuple(child for child in (self.arg, self.key) if child is not None)

    def __str__(self) -> str:
        prefix = f"{self.semantics} " if self.semantics else ""
        star = f"{sql_name(self.star_var, folded=True)}.*" if self.star_var else "*"
        inner = str(self.arg) if self.arg is not None else star
        if self.key is not None:
            inner += f", {self.key}"
        for parameter in self.parameters:
            inner += f", {_sql_literal(parameter)}"
        return f"{prefix}{self.func}({inner})"


@dataclass(frozen=True, slots=True)
class Classifier(Expr):
    """``CLASSIFIER([var])``: the primary variable the row was matched to."""

    var: str | None
    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"CLASSIFIER({sql_name(self.var, folded=True) if self.var else ''})"


@dataclass(frozen=True, slots=True)
class MatchNumber(Expr):
    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return "MATCH_NUMBER()"


@dataclass(frozen=True, slots=True)
class MatchRowtime(Expr):
    """Flink's ``MATCH_ROWTIME([col])``: the time column of the match's last row (FINAL)."""

    column: Column | None
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Expr, ...]:
        return () if self.column is None else (self.column,)

    def __str__(self) -> str:
        return f"MATCH_ROWTIME({self.column or ''})"
