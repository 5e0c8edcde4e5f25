"""Rules a parsed clause must satisfy (SQL:2016 row pattern recognition, as Trino enforces them).

Each failure is a :class:`PatternValidationError` pointing at the node at fault:

* DEFINE only defines variables that appear in PATTERN, each once;
* SUBSET names are new, their members are pattern variables;
* every ``v.col``, ``CLASSIFIER(v)``, ``COUNT(v.*)`` and ``AFTER MATCH SKIP TO v`` names a pattern
  variable or a subset;
* the argument of an aggregate or of FIRST/LAST/PREV/NEXT refers to one variable only (all column
  references prefixed by the same ``v``, or none prefixed);
* no aggregate inside an aggregate or a navigation, no navigation inside an aggregate, no
  FIRST/LAST inside FIRST/LAST, no PREV/NEXT inside FIRST/LAST or inside PREV/NEXT;
* FINAL and MATCH_ROWTIME only in MEASURES; measure names are unique and distinct from the
  partition columns (they share the output row);
* the compiled pattern stays below :data:`MAX_PROGRAM_SIZE` instructions (bounded quantifiers
  are unrolled and PERMUTE expands to every order, so ``PERMUTE`` of 10 variables or
  ``(A{1000}){1000}`` would not fit in memory);
* ``WITHIN`` needs ``ORDER BY`` (the interval is measured on its first column);
* ``WITH UNMATCHED ROWS`` cannot be combined with a pattern exclusion ``{- -}``.
"""

from __future__ import annotations

import math

from timeweave.core.pattern import expr as E
from timeweave.core.pattern import ir
from timeweave.core.pattern.errors import PatternValidationError
from timeweave.core.pattern.spec import ClauseSpec, RowsPerMatch

#: Largest program (instruction count) a pattern may compile to.
MAX_PROGRAM_SIZE = 100_000


def program_size(node: ir.Node) -> int:
    """Upper bound of the instruction count :func:`~timeweave.core.pattern.program.compile_pattern` emits.

    >>> from timeweave.core.pattern.parser import parse_pattern
    >>> program_size(parse_pattern("A{2,4}")), program_size(parse_pattern("PERMUTE(A, B, C)"))
    (6, 30)
    """
    if isinstance(node, ir.Label | ir.Anchor):
        return 1
    if isinstance(node, ir.Empty):
        return 0
    if isinstance(node, ir.Exclusion):
        return program_size(node.pattern) + 2
    if isinstance(node, ir.Concatenation):
        return sum(program_size(p) for p in node.patterns)
    if isinstance(node, ir.Alternation):
        return sum(program_size(p) for p in node.patterns) + 2 * (len(node.patterns) - 1)
    if isinstance(node, ir.Permutation):
        orders = math.factorial(len(node.patterns))
        return orders * (sum(program_size(p) for p in node.patterns) + 2)
    assert isinstance(node, ir.Quantified)
    body = program_size(node.pattern)
    if node.max is None:
        return max(node.min, 1) * body + 2
    return node.max * body + (node.max - node.min)


class _Checker:
    def __init__(self, spec: ClauseSpec) -> None:
        self.spec = spec
        self.labels = set(spec.labels)
        self.names = self.labels | {s.name for s in spec.subsets}

    def fail(self, message: str, position: int) -> PatternValidationError:
        return PatternValidationError(message, text=self.spec.text, position=position)

    def check(self) -> None:
        spec = self.spec
        size = program_size(spec.pattern)
        if size > MAX_PROGRAM_SIZE:
            raise self.fail(f"pattern too large: it compiles to about {size} instructions (limit "
                            f"{MAX_PROGRAM_SIZE}); reduce PERMUTE arguments or bounded repetitions",
                            spec.pattern.start)
        seen: set[str] = set()
        for subset in spec.subsets:
            if subset.name in self.labels:
                raise self.fail(f"SUBSET name {subset.name} is already a pattern variable", subset.start)
            if subset.name in seen:
                raise self.fail(f"SUBSET {subset.name} is defined twice", subset.start)
            seen.add(subset.name)
            for var in subset.vars:
                if var not in self.labels:
                    raise self.fail(f"SUBSET {subset.name} lists {var}, which is not a pattern variable in PATTERN",
                                    subset.start)
        defined: set[str] = set()
        for definition in spec.definitions:
            if definition.var not in self.labels:
                raise self.fail(f"DEFINE of variable {definition.var}, which does not appear in PATTERN "
                                f"(pattern variables: {', '.join(spec.labels) or 'none'})", definition.start)
            if definition.var in defined:
                raise self.fail(f"variable {definition.var} is defined twice", definition.start)
            defined.add(definition.var)
            self.expression(definition.condition, "DEFINE", ())
        names: set[str] = set(spec.partition_by)
        for measure in spec.measures:
            if measure.name in names:
                raise self.fail(f"output column {measure.name} appears twice (measure names must be unique "
                                f"and differ from the PARTITION BY columns)", measure.start)
            names.add(measure.name)
            self.expression(measure.expr, "MEASURES", ())
        skip = spec.after_match_skip
        if skip.var is not None and skip.var not in self.names:
            raise self.fail(f"AFTER MATCH SKIP TO {skip.var}: not a pattern variable or subset", skip.start)
        if spec.within is not None and not spec.order_by:
            raise self.fail("WITHIN needs ORDER BY <time column> (the interval is measured on it)",
                            spec.text.upper().find("WITHIN"))
        if spec.rows_per_match is RowsPerMatch.ALL_WITH_UNMATCHED:
            for node in spec.pattern.walk():
                if isinstance(node, ir.Exclusion):
                    raise self.fail("pattern exclusion {- -} cannot be used with ALL ROWS PER MATCH WITH UNMATCHED ROWS",
                                    node.start)

    def var(self, name: str, position: int) -> None:
        if name not in self.names:
            known = ", ".join(sorted(self.names)) or "none"
            raise self.fail(f"unknown pattern variable {name} (pattern variables and subsets: {known})", position)

    def expression(self, node: E.Expr, clause: str, inside: tuple[E.Expr, ...]) -> None:
        if isinstance(node, E.Column) and node.var is not None:
            self.var(node.var, node.start)
        elif isinstance(node, E.Classifier) and node.var is not None:
            self.var(node.var, node.start)
        elif isinstance(node, E.Aggregate):
            if node.star_var is not None:
                self.var(node.star_var, node.start)
            for outer in inside:
                kind = "an aggregate" if isinstance(outer, E.Aggregate) else outer.kind  # type: ignore[attr-defined]
                raise self.fail(f"{node.func} cannot be nested inside {kind}", node.start)
            self.semantics(node.semantics, clause, node.start)
            if node.arg is not None:
                self.single_variable(node.children(), node.func, node.start)
        elif isinstance(node, E.Navigation):
            logical = node.kind in ("FIRST", "LAST")
            for outer in inside:
                if isinstance(outer, E.Aggregate):
                    raise self.fail(f"{node.kind} cannot be used inside an aggregate", node.start)
                assert isinstance(outer, E.Navigation)
                outer_logical = outer.kind in ("FIRST", "LAST")
                if outer_logical or not logical:
                    raise self.fail(f"{node.kind} cannot be nested inside {outer.kind}"
                                    + (" (only FIRST/LAST may be nested inside PREV/NEXT)" if not outer_logical else ""),
                                    node.start)
            self.semantics(node.semantics, clause, node.start)
            self.single_variable((node.arg,), node.kind, node.start)
        elif isinstance(node, E.MatchRowtime):
            if clause != "MEASURES":
                raise self.fail("MATCH_ROWTIME() is only allowed in MEASURES", node.start)
            if node.column is None and not self.spec.order_by:
                raise self.fail("MATCH_ROWTIME() needs ORDER BY <time column>", node.start)
            if node.column is not None and node.column.var is not None:
                raise self.fail("MATCH_ROWTIME takes a plain column name", node.column.start)
            return
        if isinstance(node, E.Aggregate | E.Navigation):
            inside = (*inside, node)
        for child in node.children():
            self.expression(child, clause, inside)

    def semantics(self, semantics: str | None, clause: str, position: int) -> None:
        if semantics == "FINAL" and clause == "DEFINE":
            raise self.fail("FINAL is not allowed in DEFINE (conditions see the match only up to the current row)",
                            position)

    def single_variable(self, args: tuple[E.Expr, ...], function: str, position: int) -> None:
        """Raise unless every column/CLASSIFIER reference in ``args`` uses the same variable (or none)."""
        seen: set[str | None] = set()
        for node in (sub for arg in args for sub in arg.walk()):
            if isinstance(node, E.Column):
                seen.add(node.var)
            elif isinstance(node, E.Classifier):
                seen.add(node.var)
            elif isinstance(node, E.Aggregate) and node.star_var is not None:
                seen.add(node.star_var)
            if len(seen) > 1:
                shown = ", ".join(v or "(no variable)" for v in sorted(seen, key=lambda v: v or ""))
                raise self.fail(f"the argument of {function} must refer to a single pattern variable, found {shown}",
                                position)


def validate(spec: ClauseSpec) -> None:
    """Raise :class:`PatternValidationError` if ``spec`` breaks a rule listed in the module docstring.

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> parse_clause("PATTERN (A B) DEFINE C AS C.x > 0")
    Traceback (most recent call last):
    ...
    timeweave.core.pattern.errors.PatternValidationError: DEFINE of variable C, which does not appear in PATTERN (pattern variables: A, B) (line 1, col 22)
    PATTERN (A B) DEFINE C AS C.x > 0
                         ^
    """
    _Checker(spec).check()
