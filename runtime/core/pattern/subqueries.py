"""Uncorrelated subqueries in MEASURES and DEFINE: found and replaced here, run by an adapter.

Trino (and the standard) allow uncorrelated subqueries in row-pattern expressions: ``(SELECT 1000)``,
``x IN (SELECT code FROM codes)``, ``EXISTS (SELECT ...)``.  Their value does not depend on the row,
so a door that can run queries evaluates each one once, before matching, and the matcher sees a
constant (:func:`inline`), exactly as a query engine folds them.  The core itself runs no queries: a
clause that still holds a subquery when it is compiled fails with a positioned error
(:func:`reject`), which names the doors that can run it.

>>> from timeweave.core.pattern import parse_clause
>>> spec = parse_clause("MEASURES LAST(A.v) + (SELECT 1000) AS m PATTERN (A+) DEFINE A AS A.v IN (SELECT v FROM t)")
>>> [str(s) for s in find(spec)]
['A.v IN (SELECT v FROM t)', '(SELECT 1000)']
>>> str(inline(spec, {"SELECT 1000": [(1000,)], "SELECT v FROM t": [(1,), (2,)]}))
'MEASURES LAST(A.v, 0) + 1000 AS m\\nONE ROW PER MATCH\\nAFTER MATCH SKIP PAST LAST ROW\\nPATTERN (A+)\\nDEFINE A AS A.v IN (1, 2)'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from timeweave.core.pattern import expr as E
from timeweave.core.pattern.errors import PatternValidationError
from timeweave.core.pattern.spec import ClauseSpec

SubqueryNode = E.Subquery | E.InSubquery


def _expressions(spec: ClauseSpec) -> Iterator[E.Expr]:
    for definition in spec.definitions:
        yield definition.condition
    for measure in spec.measures:
        yield measure.expr


def find(spec: ClauseSpec) -> list[SubqueryNode]:
    """The clause's subqueries, in DEFINE-then-MEASURES order (outermost first within an expression)."""
    return [node for root in _expressions(spec) for node in root.walk() if isinstance(node, SubqueryNode)]


def reject(spec: ClauseSpec, door: str) -> None:
    """Raise a positioned error when ``spec`` still holds a subquery (``door`` cannot run queries)."""
    found = find(spec)
    if found:
        raise PatternValidationError(
            f"{door} cannot run the subquery {found[0]}: subqueries in MATCH_RECOGNIZE are evaluated by "
            "timeweave.sql and timeweave.match_recognize (once, before matching); here, compute the value in "
            "the input relation instead",
            text=spec.text, position=found[0].start,
        )


def inline(spec: ClauseSpec, results: Mapping[str, Sequence[tuple[Any, ...]]],
           typed: Callable[[Any, str], E.Expr] | None = None) -> ClauseSpec:
    """``spec`` with each subquery replaced by its value; ``results`` maps a subquery's text to its rows.

    Scalar: no row is NULL, more than one row is an error (as in SQL).  ``EXISTS``: whether there is a
    row.  ``x [NOT] IN (subquery)``: ``x [NOT] IN (v1, v2, ...)``, or FALSE (TRUE for NOT IN) when
    the subquery is empty, whatever ``x`` is.  ``typed(value, query)`` builds a value's expression
    (an adapter passes one that keeps the subquery's column type, e.g. for a NULL); default a literal.
    The result's text is the printed clause (errors from here on point into it).
    """
    make = typed or (lambda value, _query: E.Literal(value))

    def value_of(node: SubqueryNode) -> E.Expr:
        rows = results[node.query]
        if isinstance(node, E.InSubquery):
            if not rows:
                return E.Literal(node.negated, node.start)
            items = tuple(make(value, node.query) for value in dict.fromkeys(row[0] for row in rows))
            return E.InList(node.operand, items, node.negated, node.start)
        if node.kind == "exists":
            return E.Literal(bool(rows), node.start)
        if len(rows) > 1:
            raise PatternValidationError(f"the scalar subquery {node} returned more than one row",
                                         text=spec.text, position=node.start)
        return make(rows[0][0] if rows else None, node.query)

    def rewrite(node: E.Expr) -> E.Expr:
        if isinstance(node, E.InSubquery):
            return value_of(dataclasses.replace(node, operand=rewrite(node.operand)))
        if isinstance(node, E.Subquery):
            return value_of(node)
        changed = {f.name: _rewrite_field(getattr(node, f.name), rewrite) for f in dataclasses.fields(node)}
        changed = {k: v for k, v in changed.items() if v is not getattr(node, k)}
        return dataclasses.replace(node, **changed) if changed else node

    measures = tuple(dataclasses.replace(m, expr=rewrite(m.expr)) for m in spec.measures)
    definitions = tuple(dataclasses.replace(d, condition=rewrite(d.condition)) for d in spec.definitions)
    from timeweave.core.pattern.parser import parse_clause  # the printed clause, parsed and validated again

    return parse_clause(str(dataclasses.replace(spec, measures=measures, definitions=definitions)))


def _rewrite_field(value: Any, rewrite: Callable[[E.Expr], E.Expr]) -> Any:
    """A node field with every expression in it rewritten (fields hold nodes, tuples of nodes, or pairs)."""
    if isinstance(value, E.Expr):
        new = rewrite(value)
        return value if new is value else new
    if isinstance(value, tuple) and value:
        items = tuple(_rewrite_field(item, rewrite) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


__all__ = ["SubqueryNode", "find", "inline", "reject"]
