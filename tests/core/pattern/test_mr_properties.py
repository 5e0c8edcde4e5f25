"""Property test: the Pike VM (with thread pruning) against an exhaustive backtracking reference.

The reference below is written independently of the product: it walks the pattern tree
depth first, trying alternatives in the standard's preference order (greedy: one more iteration
first; reluctant: one fewer; alternation: left first; PERMUTE: orders in lexicographic order of
argument positions), and the first complete path is the match.  Its DEFINE conditions are Python
functions over the labels chosen so far, not the product's evaluator.

One rule needs stating because the standard leaves it to implementations and Trino fixes it: an
iteration of an unbounded loop that matched no row ends the loop (it is not followed by another
iteration); iterations up to the minimum count, and iterations of bounded quantifiers, may be
empty.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeweave.core.pattern import ir, match_partition, parse_clause

LABELS = ("A", "B", "C")
Row = dict[str, Any]
# (labels so far in this match, current row, all rows before it in the match) -> condition holds
Condition = Callable[[tuple[str, ...], Row, list[Row]], bool]

# DEFINE menu: SQL text for the product, an independent Python condition for the reference.
DEFINES: dict[str, list[tuple[str, Condition]]] = {
    "A": [
        ("a", lambda labels, row, prior: row["a"]),
        ("a AND COUNT(A.*) <= 2", lambda labels, row, prior: row["a"] and labels.count("A") + 1 <= 2),
        ("a AND A.v >= FIRST(A.v)", lambda labels, row, prior: row["a"] and row["v"] >= next(
            (r["v"] for r, lab in zip(prior, labels, strict=True) if lab == "A"), row["v"])),
    ],
    "B": [
        ("b", lambda labels, row, prior: row["b"]),
        ("b AND (PREV(CLASSIFIER()) IS NULL OR PREV(CLASSIFIER()) <> 'B')",
         lambda labels, row, prior: row["b"] and (not labels or labels[-1] != "B")),
        ("b AND SUM(B.v) < 4", lambda labels, row, prior: row["b"] and sum(
            r["v"] for r, lab in zip(prior, labels, strict=True) if lab == "B") + row["v"] < 4),
    ],
    "C": [
        ("c", lambda labels, row, prior: row["c"]),
        ("c AND (LAST(A.v) IS NULL OR C.v >= LAST(A.v))", lambda labels, row, prior: row["c"] and (
            (last := [r["v"] for r, lab in zip(prior, labels, strict=True) if lab == "A"]) == [] or row["v"] >= last[-1])),
    ],
}


# -- the reference matcher -------------------------------------------------------------------------
State = tuple[int, tuple[str, ...], tuple[bool, ...]]  # next row, labels, excluded flags


def reference_match(pattern: ir.Node, rows: list[Row], start: int,
                    conditions: dict[str, Condition]) -> tuple[tuple[str, ...], tuple[bool, ...]] | None:
    n = len(rows)

    def walk(node: ir.Node, state: State, excluded: bool) -> Iterator[State]:
        pos, labels, flags = state
        if isinstance(node, ir.Label):
            if pos < n and conditions[node.name](labels, rows[pos], rows[start:pos]):
                yield pos + 1, (*labels, node.name), (*flags, excluded)
        elif isinstance(node, ir.Empty):
            yield state
        elif isinstance(node, ir.Anchor):
            if (node.kind == "^" and pos == 0) or (node.kind == "$" and pos == n):
                yield state
        elif isinstance(node, ir.Concatenation):
            yield from sequence(node.patterns, state, excluded)
        elif isinstance(node, ir.Alternation):
            for part in node.patterns:
                yield from walk(part, state, excluded)
        elif isinstance(node, ir.Permutation):
            for order in itertools.permutations(node.patterns):
                yield from sequence(order, state, excluded)
        elif isinstance(node, ir.Exclusion):
            yield from walk(node.pattern, state, True)
        elif isinstance(node, ir.Quantified):
            yield from repeat(node, 0, state, excluded, False)
        else:
            raise AssertionError(node)

    def sequence(parts: tuple[ir.Node, ...], state: State, excluded: bool) -> Iterator[State]:
        if not parts:
            yield state
            return
        for middle in walk(parts[0], state, excluded):
            yield from sequence(parts[1:], middle, excluded)

    def repeat(node: ir.Quantified, done: int, state: State, excluded: bool, last_empty: bool) -> Iterator[State]:
        blocked = node.max is None and done + 1 > max(node.min, 1) and last_empty
        may_continue = (node.max is None or done < node.max) and not blocked
        may_stop = done >= node.min

        def more() -> Iterator[State]:
            for after in walk(node.pattern, state, excluded):
                yield from repeat(node, done + 1, after, excluded, after[0] == state[0])

        if node.greedy:
            if may_continue:
                yield from more()
            if may_stop:
                yield state
        else:
            if may_stop:
                yield state
            if may_continue:
                yield from more()

    for _, labels, flags in walk(pattern, (start, (), ()), False):
        return labels, flags
    return None


def reference_partition(pattern: ir.Node, rows: list[Row], conditions: dict[str, Condition],
                        skip_to_next: bool) -> list[tuple[int, int | None, str | None]]:
    """(id, match number, classifier) per output row of ALL ROWS PER MATCH (SHOW EMPTY MATCHES)."""
    out: list[tuple[int, int | None, str | None]] = []
    position, number = 0, 1
    while position < len(rows):
        found = reference_match(pattern, rows, position, conditions)
        if found is None:
            position += 1
            continue
        labels, flags = found
        if not labels:
            out.append((rows[position]["id"], number, None))
            position += 1
        else:
            out.extend((rows[position + i]["id"], number, label)
                       for i, (label, hidden) in enumerate(zip(labels, flags, strict=True)) if not hidden)
            position = position + 1 if skip_to_next else position + len(labels)
        number += 1
    return out


# -- strategies --------------------------------------------------------------------------------------
def patterns() -> st.SearchStrategy[ir.Node]:
    # mostly variables: empty patterns and anchors are rare in real queries and make most matches empty
    leaves = st.sampled_from([*LABELS * 4, "()", "^", "$"]).map(
        lambda s: ir.Empty() if s == "()" else ir.Anchor(s) if s in "^$" else ir.Label(s))

    def extend(children: st.SearchStrategy[ir.Node]) -> st.SearchStrategy[ir.Node]:
        bounds = st.sampled_from([(0, None), (1, None), (0, 1), (2, None), (1, 2), (0, 2), (2, 3), (3, 3)])
        concatenation = st.lists(children, min_size=2, max_size=3).map(lambda ps: ir.Concatenation(tuple(ps)))
        quantified = st.tuples(children.filter(lambda c: not isinstance(c, ir.Anchor)), bounds, st.booleans()).map(
            lambda t: ir.Quantified(t[0], t[1][0], t[1][1], t[2]))
        return st.one_of(  # weighted by repetition: exclusions and PERMUTE are the rarer constructs
            concatenation,
            concatenation,
            quantified,
            quantified,
            st.lists(children, min_size=2, max_size=3).map(lambda ps: ir.Alternation(tuple(ps))),
            st.lists(children, min_size=2, max_size=3).map(lambda ps: ir.Permutation(tuple(ps))),
            children.map(ir.Exclusion),
        )

    return st.recursive(leaves, extend, max_leaves=6)


likely = st.sampled_from([True, True, True, False])  # rows satisfy most variables: longer, ambiguous matches
rows_strategy = st.lists(
    st.fixed_dictionaries({"a": likely, "b": likely, "c": likely, "v": st.integers(0, 3)}),
    min_size=1,
    max_size=8,
).map(lambda rows: [{"id": i + 1, **row} for i, row in enumerate(rows)])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns(), rows=rows_strategy, choice=st.integers(0, 5), skip_to_next=st.booleans())
def test_matcher_agrees_with_backtracking_reference(pattern: ir.Node, rows: list[Row], choice: int,
                                                    skip_to_next: bool) -> None:
    used = pattern.labels()
    definitions = {}
    for name in used:
        sql, condition = DEFINES[name][choice % len(DEFINES[name])]
        if "A." in sql and "A" not in used:  # a condition may only name variables of the pattern
            sql, condition = DEFINES[name][0]
        definitions[name] = (sql, condition)
    define = ", ".join(f"{name} AS {sql}" for name, (sql, _) in definitions.items())
    skip = "AFTER MATCH SKIP TO NEXT ROW" if skip_to_next else ""
    clause = (f"MEASURES MATCH_NUMBER() AS mn, CLASSIFIER() AS cls ALL ROWS PER MATCH {skip} "
              f"PATTERN ({pattern})" + (f" DEFINE {define}" if define else ""))
    spec = parse_clause(clause)
    assert spec.pattern == pattern  # printing the generated IR gives text that parses back to it
    ours = [(r["id"], r["mn"], r["cls"]) for r in match_partition(spec, rows)]
    conditions = {name: condition for name, (_, condition) in definitions.items()}
    assert ours == reference_partition(pattern, rows, conditions, skip_to_next), clause
