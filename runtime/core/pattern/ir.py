"""Row pattern IR: one frozen dataclass per node, printed back as pattern syntax by ``str``.

The nodes mirror Trino's ``Ir…`` classes: :class:`Label`, :class:`Empty`, :class:`Anchor`,
:class:`Concatenation`, :class:`Alternation`, :class:`Permutation`, :class:`Exclusion` and
:class:`Quantified`.  Constructors validate their arguments; equality is structural.  Positions
(``start``) are kept for error messages but excluded from equality, so tests can build IR with the
small DSL at the bottom of this module and compare it with parsed IR.

>>> str(concat(label("A"), star(label("B"), greedy=False), alt(label("C"), label("D"))))
'A B*? (C | D)'
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from timeweave.core.pattern.lexer import sql_name

T = TypeVar("T")


class Node:
    """Base of all pattern nodes."""

    __slots__ = ()

    def children(self) -> tuple[Node, ...]:
        return ()

    def walk(self) -> Iterator[Node]:
        """This node and all descendants, depth first, left to right."""
        yield self
        for child in self.children():
            yield from child.walk()

    def labels(self) -> list[str]:
        """Primary pattern variables in order of first appearance."""
        seen: dict[str, None] = {}
        for node in self.walk():
            if isinstance(node, Label):
                seen.setdefault(node.name)
        return list(seen)


# Binding strength when printing: a child whose strength is below what its parent needs gets
# parentheses.  Nested concatenations/alternations keep theirs so that printing round-trips.
_ALT, _CONCAT, _QUANT, _ATOM = 1, 2, 3, 4


def _strength(node: Node) -> int:
    if isinstance(node, Alternation):
        return _ALT
    if isinstance(node, Concatenation):
        return _CONCAT
    if isinstance(node, Quantified):
        return _QUANT
    return _ATOM


def _render(node: Node, needed: int) -> str:
    return f"({node})" if _strength(node) < needed else str(node)


@dataclass(frozen=True, slots=True)
class Label(Node):
    """A primary pattern variable: one row the variable's DEFINE condition accepts."""

    name: str
    start: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("label name must be non-empty")

    def __str__(self) -> str:
        return sql_name(self.name, folded=True)


@dataclass(frozen=True, slots=True)
class Empty(Node):
    """The empty pattern ``()``: matches without consuming a row."""

    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return "()"


@dataclass(frozen=True, slots=True)
class Anchor(Node):
    """``^`` (partition start) or ``$`` (partition end)."""

    kind: str
    start: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in ("^", "$"):
            raise ValueError(f"anchor must be '^' or '$', got {self.kind!r}")

    def __str__(self) -> str:
        return self.kind


@dataclass(frozen=True, slots=True)
class Concatenation(Node):
    patterns: tuple[Node, ...]
    start: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if len(self.patterns) < 2:
            raise ValueError("concatenation needs at least two parts")

    def children(self) -> tuple[Node, ...]:
        return self.patterns

    def __str__(self) -> str:
        return " ".join(_render(p, _QUANT) for p in self.patterns)


@dataclass(frozen=True, slots=True)
class Alternation(Node):
    """``a | b | c``: preference goes to the leftmost alternative that leads to a match."""

    patterns: tuple[Node, ...]
    start: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if len(self.patterns) < 2:
            raise ValueError("alternation needs at least two alternatives")

    def children(self) -> tuple[Node, ...]:
        return self.patterns

    def __str__(self) -> str:
        return " | ".join(_render(p, _CONCAT) for p in self.patterns)


@dataclass(frozen=True, slots=True)
class Permutation(Node):
    """``PERMUTE(a, b, c)``: every order, preferred in lexicographic order of the argument positions."""

    patterns: tuple[Node, ...]
    start: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if not self.patterns:
            raise ValueError("PERMUTE needs at least one argument")

    def children(self) -> tuple[Node, ...]:
        return self.patterns

    def __str__(self) -> str:
        return "PERMUTE(" + ", ".join(str(p) for p in self.patterns) + ")"


@dataclass(frozen=True, slots=True)
class Exclusion(Node):
    """``{- p -}``: rows matched by ``p`` belong to the match but are left out of ALL ROWS PER MATCH output."""

    pattern: Node
    start: int = field(default=0, compare=False)

    def children(self) -> tuple[Node, ...]:
        return (self.pattern,)

    def __str__(self) -> str:
        return f"{{- {self.pattern} -}}"


@dataclass(frozen=True, slots=True)
class Quantified(Node):
    """``p{min,max}`` (``max`` None: unbounded); ``greedy`` False for the reluctant ``?`` suffix."""

    pattern: Node
    min: int
    max: int | None
    greedy: bool = True
    start: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if self.min < 0:
            raise ValueError(f"quantifier minimum must be >= 0, got {self.min}")
        if self.max is not None and self.max < self.min:
            raise ValueError(f"quantifier maximum {self.max} is below minimum {self.min}")
        if self.max == 0:
            raise ValueError("quantifier maximum must be > 0")

    def children(self) -> tuple[Node, ...]:
        return (self.pattern,)

    def quantifier(self) -> str:
        if (self.min, self.max) == (0, None):
            text = "*"
        elif (self.min, self.max) == (1, None):
            text = "+"
        elif (self.min, self.max) == (0, 1):
            text = "?"
        elif self.max is None:
            text = f"{{{self.min},}}"
        elif self.min == self.max:
            text = f"{{{self.min}}}"
        else:
            text = f"{{{self.min},{self.max}}}"
        return text if self.greedy else text + "?"

    def __str__(self) -> str:
        return _render(self.pattern, _ATOM) + self.quantifier()


class Visitor(Generic[T]):
    """Dispatch on node type to ``visit_<lowercase class name>`` (Trino's IrRowPatternVisitor)."""

    def visit(self, node: Node) -> T:
        method = getattr(self, "visit_" + type(node).__name__.lower(), None)
        if method is None:
            raise TypeError(f"{type(self).__name__} does not handle {type(node).__name__}")
        return method(node)


# -- a small DSL for tests and passes (Trino's test helpers: label("A"), starQuantified(...)) -------
def label(name: str) -> Label:
    return Label(name)


def concat(*patterns: Node) -> Concatenation:
    return Concatenation(tuple(patterns))


def alt(*patterns: Node) -> Alternation:
    return Alternation(tuple(patterns))


def permute(*patterns: Node) -> Permutation:
    return Permutation(tuple(patterns))


def exclude(pattern: Node) -> Exclusion:
    return Exclusion(pattern)


def star(pattern: Node, greedy: bool = True) -> Quantified:
    return Quantified(pattern, 0, None, greedy)


def plus(pattern: Node, greedy: bool = True) -> Quantified:
    return Quantified(pattern, 1, None, greedy)


def optional(pattern: Node, greedy: bool = True) -> Quantified:
    return Quantified(pattern, 0, 1, greedy)


def quantified(pattern: Node, min: int, max: int | None, greedy: bool = True) -> Quantified:  # noqa: A002
    return Quantified(pattern, min, max, greedy)
