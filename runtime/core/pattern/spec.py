"""The parsed, validated MATCH_RECOGNIZE clause: :class:`ClauseSpec` and its parts (all frozen).

``str(spec)`` prints the clause back in canonical form; ``parse_clause(str(spec)) == spec`` holds
for every spec the parser produces (the parser fuzz test checks this round trip).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum

from timeweave.core.pattern.expr import Expr
from timeweave.core.pattern.ir import Node
from timeweave.core.pattern.lexer import sql_name


class RowsPerMatch(StrEnum):
    ONE_ROW = "ONE ROW PER MATCH"
    ALL_SHOW_EMPTY = "ALL ROWS PER MATCH SHOW EMPTY MATCHES"
    ALL_OMIT_EMPTY = "ALL ROWS PER MATCH OMIT EMPTY MATCHES"
    ALL_WITH_UNMATCHED = "ALL ROWS PER MATCH WITH UNMATCHED ROWS"

    @property
    def all_rows(self) -> bool:
        return self is not RowsPerMatch.ONE_ROW

    @property
    def shows_empty(self) -> bool:
        """Whether an empty match produces an output row (every mode but OMIT EMPTY MATCHES)."""
        return self is not RowsPerMatch.ALL_OMIT_EMPTY


class SkipMode(StrEnum):
    PAST_LAST_ROW = "PAST LAST ROW"
    TO_NEXT_ROW = "TO NEXT ROW"
    TO_FIRST = "TO FIRST"
    TO_LAST = "TO LAST"


@dataclass(frozen=True, slots=True)
class AfterMatchSkip:
    """``AFTER MATCH SKIP ...``; ``var`` is set for TO FIRST / TO LAST (``TO v`` means ``TO LAST v``)."""

    mode: SkipMode = SkipMode.PAST_LAST_ROW
    var: str | None = None
    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        suffix = f" {_var(self.var)}" if self.var else ""
        return f"AFTER MATCH SKIP {self.mode.value}{suffix}"


@dataclass(frozen=True, slots=True)
class SortKey:
    column: str
    descending: bool = False
    nulls_first: bool | None = None  # None: not written (engine default)
    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        text = _ident(self.column) + (" DESC" if self.descending else "")
        if self.nulls_first is not None:
            text += " NULLS FIRST" if self.nulls_first else " NULLS LAST"
        return text


@dataclass(frozen=True, slots=True)
class Measure:
    name: str
    expr: Expr
    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"{self.expr} AS {_ident(self.name)}"


@dataclass(frozen=True, slots=True)
class Subset:
    name: str
    vars: tuple[str, ...]
    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"{_var(self.name)} = ({', '.join(map(_var, self.vars))})"


@dataclass(frozen=True, slots=True)
class Definition:
    var: str
    condition: Expr
    start: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"{_var(self.var)} AS {self.condition}"


@dataclass(frozen=True, slots=True)
class ClauseSpec:
    """Everything between the parentheses of ``MATCH_RECOGNIZE ( ... )``, validated.

    ``after_match_skip`` defaults to the SQL standard's ``PAST LAST ROW`` (Flink defaults to
    ``TO NEXT ROW``; write the clause explicitly to get Flink's behaviour).  ``within`` is Flink's
    ``WITHIN INTERVAL``: a match's last row must be strictly less than ``within`` after its first.
    """

    pattern: Node
    partition_by: tuple[str, ...] = ()
    order_by: tuple[SortKey, ...] = ()
    measures: tuple[Measure, ...] = ()
    rows_per_match: RowsPerMatch = RowsPerMatch.ONE_ROW
    after_match_skip: AfterMatchSkip = AfterMatchSkip()
    subsets: tuple[Subset, ...] = ()
    definitions: tuple[Definition, ...] = ()
    within: timedelta | None = None
    text: str = field(default="", compare=False, repr=False)

    @property
    def labels(self) -> list[str]:
        """Primary pattern variables in order of first appearance in PATTERN."""
        return self.pattern.labels()

    def definition(self, var: str) -> Expr | None:
        for d in self.definitions:
            if d.var == var:
                return d.condition
        return None

    def subset(self, name: str) -> tuple[str, ...] | None:
        for s in self.subsets:
            if s.name == name:
                return s.vars
        return None

    def __str__(self) -> str:
        parts: list[str] = []
        if self.partition_by:
            parts.append("PARTITION BY " + ", ".join(_ident(c) for c in self.partition_by))
        if self.order_by:
            parts.append("ORDER BY " + ", ".join(map(str, self.order_by)))
        if self.measures:
            parts.append("MEASURES " + ", ".join(map(str, self.measures)))
        parts.append(self.rows_per_match.value)
        parts.append(str(self.after_match_skip))
        pattern = f"PATTERN ({self.pattern})"
        if self.within is not None:
            pattern += f" WITHIN INTERVAL '{_interval_text(self.within)}' SECOND"
        parts.append(pattern)
        if self.subsets:
            parts.append("SUBSET " + ", ".join(map(str, self.subsets)))
        if self.definitions:
            parts.append("DEFINE " + ", ".join(map(str, self.definitions)))
        return "\n".join(parts)


def _interval_text(value: timedelta) -> str:
    seconds = value.total_seconds()
    return str(int(seconds)) if seconds == int(seconds) else repr(seconds)


def _ident(name: str) -> str:
    return sql_name(name, folded=False)


def _var(name: str) -> str:
    return sql_name(name, folded=True)
