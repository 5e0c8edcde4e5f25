"""IR passes run before compilation (Trino's ``IrRowPatternFlattener``).

:func:`flatten` rewrites a pattern into an equivalent one the compiler can rely on:

* nested concatenations and alternations are spliced into their parent (order, and therefore
  preference, is unchanged);
* ``()`` inside a concatenation is dropped; a concatenation of nothing becomes ``()``;
* ``PERMUTE(x)`` becomes ``x``; ``x{1}`` becomes ``x``; any quantifier over ``()`` becomes ``()``;
* an exclusion inside an exclusion is unwrapped (its rows are excluded already), so exclusion
  captures always come in non-overlapping start/end pairs.

>>> from timeweave.core.pattern.parser import parse_pattern
>>> str(flatten(parse_pattern("(A (B C)) | (D | ()) | PERMUTE(E{1}) {- F {- G -} -}")))
'A B C | D | () | E {- F G -}'
"""

from __future__ import annotations

from timeweave.core.pattern import ir


class _Flattener(ir.Visitor[ir.Node]):
    def __init__(self) -> None:
        self.in_exclusion = 0

    def visit_label(self, node: ir.Label) -> ir.Node:
        return node

    def visit_empty(self, node: ir.Empty) -> ir.Node:
        return node

    def visit_anchor(self, node: ir.Anchor) -> ir.Node:
        return node

    def visit_concatenation(self, node: ir.Concatenation) -> ir.Node:
        parts: list[ir.Node] = []
        for child in node.patterns:
            flat = self.visit(child)
            if isinstance(flat, ir.Concatenation):
                parts.extend(flat.patterns)
            elif not isinstance(flat, ir.Empty):
                parts.append(flat)
        if not parts:
            return ir.Empty(node.start)
        return parts[0] if len(parts) == 1 else ir.Concatenation(tuple(parts), node.start)

    def visit_alternation(self, node: ir.Alternation) -> ir.Node:
        parts: list[ir.Node] = []
        for child in node.patterns:
            flat = self.visit(child)
            parts.extend(flat.patterns if isinstance(flat, ir.Alternation) else (flat,))
        return ir.Alternation(tuple(parts), node.start)

    def visit_permutation(self, node: ir.Permutation) -> ir.Node:
        parts = tuple(self.visit(child) for child in node.patterns)
        return parts[0] if len(parts) == 1 else ir.Permutation(parts, node.start)

    def visit_exclusion(self, node: ir.Exclusion) -> ir.Node:
        self.in_exclusion += 1
        inner = self.visit(node.pattern)
        self.in_exclusion -= 1
        return inner if self.in_exclusion else ir.Exclusion(inner, node.start)

    def visit_quantified(self, node: ir.Quantified) -> ir.Node:
        inner = self.visit(node.pattern)
        if isinstance(inner, ir.Empty):
            return inner
        if (node.min, node.max) == (1, 1):
            return inner
        return ir.Quantified(inner, node.min, node.max, node.greedy, node.start)


def flatten(node: ir.Node) -> ir.Node:
    """Return the flattened equivalent of ``node`` (see the module docstring).

    >>> from timeweave.core.pattern.parser import parse_pattern
    >>> str(flatten(parse_pattern("((A B) C)+")))
    '(A B C)+'
    """
    return _Flattener().visit(node)
