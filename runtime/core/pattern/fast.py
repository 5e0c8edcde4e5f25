"""A fast path for programs whose threads never meet: no thread equivalence, no per-row objects.

The general Pike VM (:mod:`.matcher`) compares every new thread with the threads that reached the
same instruction in the same step (rule 2), which costs a signature per instruction per thread.
For many real patterns (``A+ B``, ``START DOWN+ UP``, ``A B{2,} C?``) two threads can never reach
the same instruction in one step, so rule 2 never fires and the signatures are pure cost.
:func:`collision_free_targets` proves that statically, from the program alone:

* every ``label`` instruction (and the start) has a fixed *successor list*: the ``label``/``done``
  instructions its epsilon closure reaches, in preference order (the same depth-first order, with
  the same cut of revisits, as :meth:`Run._advance <timeweave.core.pattern.matcher.Run._advance>`);
* the thread set after each step is contained in the successor lists of the set before, so the
  sequence of *largest possible* thread sets is deterministic; walking it until it repeats, no two
  members' successor lists may share a ``label`` instruction.  Then no two threads ever meet and
  rule 2 is vacuous (a shared ``done`` is harmless: the first ``done`` ends the step, rule 3).

Programs with ``^``, ``$`` or ``{- -}`` (anchors and saves), and DEFINE conditions reading
``CLASSIFIER`` (label history), use the general VM.  For the others, :class:`FastRun` replaces
:class:`~timeweave.core.pattern.matcher.Run`: a thread is a ``(pc, state)`` pair and a state is the
tuple ``(labels, aggregates, navigation)`` — labels a cons list of nested pairs, aggregates the
running DEFINE aggregate states, navigation the positions ``FIRST/LAST(v, k)`` may read (so a
condition never walks the label history).  DEFINE conditions are compiled per label: the
candidate label is known at compile time, so ``A.price`` in A's condition *is* the current row.

:meth:`FastRun.advance` consumes many rows in one call and, when allowed, rolls forward over
attempts that end without a match (the driver would only start the next one at ``start + 1``).
With ``matches`` given (the driver does so for ONE ROW PER MATCH with SKIP PAST LAST ROW or TO
NEXT ROW, whose next start cannot fail), it also rolls past non-empty matches, collecting
``(start, labels)``; the driver then evaluates the measures compiled by :class:`MeasureCompiler`
(:class:`FastMeasures`: at the match's last row RUNNING = FINAL, so a navigation is an index into
the match's offsets of its label set and an aggregate one pass over them) instead of building a
``MeasureContext`` per match.  Measures it does not compile (PREV/NEXT, expression arguments) keep
the general evaluator for the whole clause.

The differential test runs the fast and the general VM on random patterns and data and requires
identical output rows.

>>> from timeweave.core.pattern.parser import parse_pattern
>>> from timeweave.core.pattern.program import compile_pattern
>>> collision_free_targets(compile_pattern(parse_pattern("A+ B"))) is not None
True
>>> collision_free_targets(compile_pattern(parse_pattern("A* A* B"))) is None
True
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache, partial
from itertools import compress, count
from numbers import Integral
from typing import Any

from timeweave.core.pattern import expr as E
from timeweave.core.pattern.aggregates import CORE_AGGREGATES
from timeweave.core.pattern.budget import WORK_WEIGHTS
from timeweave.core.pattern.errors import MatchRuntimeError
from timeweave.core.pattern.expressions import ExpressionCompiler, LabelSet, RowSource, sql_and, sql_or
from timeweave.core.pattern.matcher import MatchResult
from timeweave.core.pattern.program import Done, Jump, MatchLabel, Program, Split

#: Successors of one instruction: the label pcs before the first ``done``, and whether ``done`` follows.
Targets = tuple[tuple[int, ...], bool]

_MAX_THREAD_SETS = 4096  # the largest-thread-set walk is cut (general VM) beyond this many distinct sets


def _closure(program: Program, pointer: int) -> list[int]:
    """Label/done pcs reached from ``pointer`` without consuming a row, in preference order."""
    out: list[int] = []
    seen: set[int] = set()
    stack = [pointer]
    while stack:
        pc = stack.pop()
        if pc in seen:
            continue  # an empty loop, or a second path to the same instruction: the VM cuts it too
        seen.add(pc)
        instruction = program.at(pc)
        if isinstance(instruction, Split):
            stack.append(instruction.second)
            stack.append(instruction.first)
        elif isinstance(instruction, Jump):
            stack.append(instruction.target)
        else:
            out.append(pc)
    return out


def _targets(program: Program, closure: list[int]) -> Targets:
    labels: list[int] = []
    for pc in closure:
        if isinstance(program.at(pc), Done):
            return tuple(labels), True
        labels.append(pc)
    return tuple(labels), False


def collision_free_targets(program: Program) -> tuple[Targets, dict[int, Targets]] | None:
    """(start targets, targets per label pc) if no two threads of ``program`` can ever meet, else None."""
    if any(not isinstance(i, MatchLabel | Split | Jump | Done) for i in program.instructions):
        return None  # anchors and exclusions: the general VM
    closures = {pc: _closure(program, pc + 1) for pc, i in enumerate(program.instructions) if isinstance(i, MatchLabel)}
    start = _closure(program, 0)
    labels_of = {pc: frozenset(p for p in closure if isinstance(program.at(p), MatchLabel))
                 for pc, closure in closures.items()}
    current = tuple(p for p in start if isinstance(program.at(p), MatchLabel))
    seen: set[tuple[int, ...]] = set()
    while current not in seen:
        if len(seen) >= _MAX_THREAD_SETS:
            return None
        seen.add(current)
        taken: set[int] = set()
        following: list[int] = []
        for pc in current:
            reached = labels_of[pc]
            if reached & taken:
                return None  # two threads could meet: rule 2 needs signatures
            taken |= reached
            following.extend(p for p in closures[pc] if isinstance(program.at(p), MatchLabel))
        current = tuple(following)
    return _targets(program, start), {pc: _targets(program, closure) for pc, closure in closures.items()}


def resolved_key(get: Callable[[Mapping[str, Any]], Any]) -> str | None:
    """The key a column getter made by ``ExpressionCompiler._column_getter`` reads (None: not known yet).

    The getter finds the row's spelling of its column on the first row it reads and is exactly
    ``row.get(key)`` from then on: hot loops inline that read (a Python call per value saved).

    >>> from timeweave.core.pattern.expressions import ExpressionCompiler
    >>> get = ExpressionCompiler("", {None: None}, [], clause="MEASURES", order_column=None)._column_getter(E.Column(None, "P", 0))
    >>> resolved_key(get), get({"p": 1}), resolved_key(get)
    (None, 1, 'p')
    """
    resolved = getattr(get, "resolved", None)
    return resolved() if resolved is not None else None  # type: ignore[no-any-return]


class Unsupported(Exception):
    """An expression the fast compiler does not handle: the clause runs on the general VM."""


class Frame:
    """The evaluation context of one fast DEFINE call (one per matcher, reused for every call)."""

    __slots__ = ("aggs", "match_number", "nav", "pos", "rows", "start")

    def __init__(self, rows: RowSource) -> None:
        self.rows = rows
        self.start = 0
        self.pos = 0
        self.aggs: tuple[Any, ...] = ()
        self.nav: tuple[tuple[int, ...], ...] = ()
        self.match_number = 1


FastFn = Callable[[Frame], Any]
FastRowFn = Callable[[Frame, int], Any]


@dataclass(frozen=True, slots=True)
class FastAggregate:
    """A DEFINE aggregate on the fast path: function, labels (None: all rows), row-mode argument."""

    func: str
    labels: LabelSet
    arg: FastRowFn | None
    getter: Callable[[Mapping[str, Any]], Any] | None = None  # set when ``arg`` reads one column, no more

    def initial(self) -> Any:
        return 0 if self.func == "COUNT" else (None, 0) if self.func == "AVG" else None


class FastCompiler(ExpressionCompiler):
    """Compiles DEFINE conditions for one candidate label at a time into ``fn(frame)`` closures.

    Navigation reads positions from the thread's navigation slots (``frame.nav``); the slots are
    registered here (``slots``: (last?, labels) -> index, ``widths``: positions each keeps).
    Raises :class:`Unsupported` for CLASSIFIER (it needs the label history).
    """

    def __init__(self, text: str, label_sets: Mapping[str | None, LabelSet], label_names: list[str],
                 *, order_column: str | None) -> None:
        super().__init__(text, label_sets, label_names, clause="DEFINE", order_column=order_column)
        self.candidate = 0
        self.slots: dict[tuple[bool, frozenset[int]], int] = {}
        self.widths: list[int] = []
        self.fast_aggregates: list[FastAggregate] = []

    def compile_for(self, label: int, node: E.Expr) -> FastFn:
        self.candidate = label
        return self._top(node)

    def _slot(self, last: bool, labels: frozenset[int], offset: int) -> int:
        key = (last, labels)
        index = self.slots.get(key)
        if index is None:
            index = self.slots[key] = len(self.widths)
            self.widths.append(0)
        self.widths[index] = max(self.widths[index], offset + 1)
        return index

    def _position(self, last: bool, labels: LabelSet, offset: int) -> Callable[[Frame], int | None]:
        """``fn(frame)``: the position of FIRST/LAST(labels, offset) for the candidate row (None: none)."""
        if labels is None:  # the universal variable: every row of the match so far
            if last:
                return lambda f: p if (p := f.pos - offset) >= f.start else None
            return lambda f: p if (p := f.start + offset) <= f.pos else None
        stored = self._stored(last, labels, offset)
        if stored is not None:
            slot, index = stored
            return lambda f: s[index] if len(s := f.nav[slot]) > index else None
        slot = self._slot(last, labels, offset)
        if last:  # the candidate's own label, offset 0: the current row
            return lambda f: f.pos
        return lambda f: s[offset] if len(s := f.nav[slot]) > offset else (f.pos if len(s) == offset else None)

    def _stored(self, last: bool, labels: LabelSet, offset: int) -> tuple[int, int] | None:
        """(slot, index) when FIRST/LAST(labels, offset) is ``frame.nav[slot][index]`` if present, else None.

        That is the case unless the position may be the candidate row itself (LAST with offset 0 of
        a set holding the candidate, FIRST of such a set) or the set is the universal variable.
        """
        if labels is None:
            return None
        candidate_in = self.candidate in labels
        if last and candidate_in:
            return (self._slot(last, labels, offset), offset - 1) if offset else None
        return None if candidate_in else (self._slot(last, labels, offset), offset)

    def _column_at(self, last: bool, labels: LabelSet, offset: int, column: E.Column) -> FastFn | None:
        """``column`` at FIRST/LAST(labels, offset) in one closure, when the position is a stored one
        (see :meth:`_stored`): the same read as ``_position`` then the column's row function."""
        stored = self._stored(last, labels, offset)
        if stored is None:
            return None
        slot, index = stored
        get = self._column_getter(column)

        def read(f: Frame) -> Any:
            s = f.nav[slot]
            return get(f.rows.rows[s[index] - f.rows.base]) if len(s) > index else None

        return read

    # top mode ---------------------------------------------------------------------------------------
    def _top(self, node: E.Expr) -> FastFn:  # type: ignore[override]
        if isinstance(node, E.Column):
            get = self._column_getter(node)
            labels = self.label_sets[node.var]
            if labels is None or (self.candidate in labels):
                return lambda f: get(f.rows.rows[f.pos - f.rows.base])
            fused = self._column_at(True, labels, 0, node)
            if fused is not None:
                return fused
            where = self._position(True, labels, 0)

            def column(f: Frame) -> Any:
                position = where(f)
                return None if position is None else get(f.rows.rows[position - f.rows.base])

            return column
        if isinstance(node, E.Navigation):
            return self._navigation(node)
        if isinstance(node, E.Aggregate):
            return self._aggregate(node)
        if isinstance(node, E.Classifier | E.MatchRowtime):
            raise Unsupported(str(node))
        if isinstance(node, E.Binary) and node.op in ("<", "<=", ">", ">=", "=", "<>") and isinstance(
                node.right, E.Literal) and node.right.value is not None:
            return self._compare_literal(node.op, self._top(node.left), node.right.value)
        if isinstance(node, E.Binary) and node.op in _COMPARE:
            return _compare(_COMPARE[node.op], self._top(node.left), self._top(node.right))
        if isinstance(node, E.Binary) and node.op in ("AND", "OR"):
            left, right = self._top(node.left), self._top(node.right)
            # a partial calls the one AND/OR rule with no Python frame of its own
            return partial(sql_and if node.op == "AND" else sql_or, left, right)
        return self._generic(node, self._top)  # type: ignore[arg-type]

    def _compare_literal(self, op: str, left: FastFn, value: Any) -> FastFn:
        # the benchmark's shape (AVG(A.price) < 15): one closure instead of sql_compare's dispatch
        compare = _COMPARE[op]
        average = getattr(left, "average_of", None)
        if average is not None:  # AVG(...) <op> literal: the average computed inline
            def compare_average(f: Frame) -> Any:
                total, count = f.aggs[average]
                if not count:
                    return None
                if total.__class__ is int or isinstance(total, Integral):
                    return compare(float(total) / count, value)
                return compare(total / count, value)

            compare_average.average_compared = (average, compare, value)  # type: ignore[attr-defined]
            return compare_average
        if op == "<":
            return lambda f: None if (v := left(f)) is None else v < value
        if op == "<=":
            return lambda f: None if (v := left(f)) is None else v <= value
        if op == ">":
            return lambda f: None if (v := left(f)) is None else v > value
        if op == ">=":
            return lambda f: None if (v := left(f)) is None else v >= value
        if op == "=":
            return lambda f: None if (v := left(f)) is None else v == value
        return lambda f: None if (v := left(f)) is None else v != value

    def _navigation(self, node: E.Navigation) -> FastFn:  # type: ignore[override]
        if node.kind in ("FIRST", "LAST"):
            if isinstance(node.arg, E.Column):
                fused = self._column_at(node.kind == "LAST", self._arg_labels(node.arg), node.offset, node.arg)
                if fused is not None:
                    return fused
            where = self._position(node.kind == "LAST", self._arg_labels(node.arg), node.offset)
            arg = self._row(node.arg)

            def logical(f: Frame) -> Any:
                position = where(f)
                return None if position is None else arg(f, position)

            return logical
        inner = node.arg
        if isinstance(inner, E.Navigation):
            where = self._position(inner.kind == "LAST", self._arg_labels(inner.arg), inner.offset)
            arg = self._row(inner.arg)
        else:
            where = self._position(True, self._arg_labels(inner), 0)
            arg = self._row(inner)
        step = -node.offset if node.kind == "PREV" else node.offset
        if step < 0:
            self.max_prev = max(self.max_prev, -step)
        else:
            self.max_next = max(self.max_next, step)

        def physical(f: Frame) -> Any:
            base = where(f)
            if base is None:
                return None
            position = base + step
            return None if f.rows.get(position) is None else arg(f, position)  # None: outside the partition

        return physical

    def _aggregate(self, node: E.Aggregate) -> FastFn:  # type: ignore[override]
        if node.func not in CORE_AGGREGATES or node.parameters:  # the other folds (aggregates.py) run in the general evaluator
            raise Unsupported(str(node))
        if node.arg is None:
            labels = self.label_sets[node.star_var] if node.star_var else None
            arg = None
        else:
            labels = self._arg_labels(node.arg)
            arg = self._row(node.arg)
        index = len(self.fast_aggregates)
        getter = self._column_getter(node.arg) if isinstance(node.arg, E.Column) else None
        self.fast_aggregates.append(FastAggregate(node.func, labels, arg, getter))
        func = node.func
        if func == "AVG":
            def average(f: Frame) -> Any:
                total, count = f.aggs[index]
                if not count:
                    return None
                if total.__class__ is int or isinstance(total, Integral):  # the class test skips the slow ABC check
                    return float(total) / count
                return total / count

            average.average_of = index  # type: ignore[attr-defined]  # lets a comparison inline it
            return average
        return lambda f: f.aggs[index]

    # row mode ---------------------------------------------------------------------------------------
    def _row(self, node: E.Expr) -> FastRowFn:  # type: ignore[override]
        if isinstance(node, E.Column):
            get = self._column_getter(node)
            return lambda f, position: get(f.rows.rows[position - f.rows.base])
        if isinstance(node, E.Classifier):
            raise Unsupported(str(node))
        return super()._row(node)  # type: ignore[arg-type,return-value]


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "=": operator.eq, "<>": operator.ne,
    "!=": operator.ne,
}


def _compare(compare: Callable[[Any, Any], Any], left: FastFn, right: FastFn) -> FastFn:
    """SQL comparison (NULL on either side: NULL); both sides are evaluated, as in sql_compare."""

    def comparison(f: Frame) -> Any:
        a = left(f)
        b = right(f)
        return None if a is None or b is None else compare(a, b)

    return comparison


def _add(func: str, counts_rows: bool) -> Callable[[Any, Any], Any]:
    """The running-aggregate step for ``func`` (same rules as AggregateSpec.add)."""
    if func == "COUNT":
        if counts_rows:
            return lambda state, value: state + 1
        return lambda state, value: state if value is None else state + 1
    if func == "SUM":
        return lambda state, value: state if value is None else value if state is None else state + value
    if func == "AVG":
        return lambda state, value: state if value is None else (
            value if state[0] is None else state[0] + value, state[1] + 1)
    if func == "MIN":
        return lambda state, value: state if value is None else value if state is None or value < state else state
    return lambda state, value: state if value is None else value if state is None or value > state else state


class FastProgram:
    """The per-clause part of the fast path: targets, compiled conditions, aggregate and navigation plan.

    Built by :meth:`build`, which returns None when the clause needs the general VM.
    """

    def __init__(self, program: Program, start: Targets, targets: dict[int, Targets], conditions: list[FastFn | None],
                 sources: list[str], aggregates: list[FastAggregate], slots: dict[tuple[bool, frozenset[int]], int],
                 widths: list[int]) -> None:
        self.program = program
        self.start_targets = start
        self.targets = targets
        self.conditions = conditions
        self.sources = sources
        self.aggregates = aggregates
        self.initial_aggregates = tuple(a.initial() for a in aggregates)
        self.initial_nav: tuple[tuple[int, ...], ...] = tuple(() for _ in widths)
        self.slots = tuple(sorted(slots.items(), key=lambda item: item[1]))
        self.widths = tuple(widths)
        self.label_of = {pc: i.label for pc, i in enumerate(program.instructions) if isinstance(i, MatchLabel)}
        state = (None, self.initial_aggregates, self.initial_nav)
        self.initial_threads: tuple[list[tuple[int, tuple[Any, ...]]], tuple[Any, ...] | None] = (
            [(pc, state) for pc in start[0]], state if start[1] else None)
        self.row_cost = WORK_WEIGHTS.fast_row  # work units of a row an attempt steps over (build() prices it)

    @staticmethod
    def build(program: Program, spec: Any, label_sets: Mapping[str | None, LabelSet], label_names: list[str],
              order_column: str | None) -> FastProgram | None:
        found = collision_free_targets(program)
        if found is None:
            return None
        start, targets = found
        ids = {name: i for i, name in enumerate(label_names)}
        compiler = FastCompiler(spec.text, label_sets, label_names, order_column=order_column)
        conditions: list[FastFn | None] = [None] * len(label_names)
        sources = [""] * len(label_names)
        try:
            for definition in spec.definitions:
                label = ids[definition.var]
                conditions[label] = compiler.compile_for(label, definition.condition)
                sources[label] = str(definition.condition)
        except Unsupported:
            return None
        fast = FastProgram(program, start, targets, conditions, sources, compiler.fast_aggregates,
                           compiler.slots, compiler.widths)
        # the budget's units per row stepped: the dearest label's condition sets the price (one consume per row)
        nodes = max((sum(1 for _ in d.condition.walk()) for d in spec.definitions), default=0)
        fast.row_cost = WORK_WEIGHTS.fast_row + WORK_WEIGHTS.per_nodes(nodes)
        return fast

    def bind(self, rows: RowSource) -> FastBinding:
        return FastBinding(self, rows)


Consume = Callable[[int, tuple[Any, ...]], tuple[Any, ...] | None]


class FastBinding:
    """A :class:`FastProgram` bound to one partition's rows: one ``consume(pos, state)`` per label pc."""

    def __init__(self, fast: FastProgram, rows: RowSource) -> None:
        self.fast = fast
        self.rows = rows
        self.frame = Frame(rows)
        self.row_cost = fast.row_cost  # work units of a row an attempt steps over (the budget's meter)
        per_label = [self._consumer(label) for label in range(len(fast.program.label_names))]
        self.consume: dict[int, Consume] = {pc: per_label[label] for pc, label in fast.label_of.items()}
        # One entry per label pc, [consume, successor entries, reaches done?, pc]: a thread is
        # (entry, state), so a step needs no lookup by pc (entries refer to each other: loops).
        # The fifth item is the label id when the label has no condition, aggregate or navigation
        # slot (B in A+ B): advance() then extends the thread's state inline, without a call.
        # The sixth is the "loop tail" of a label X whose successors are exactly [X, T], X not
        # reaching done and T trivial, reaching done with no successors (A in A+ B): the thread
        # set [(X, s), (T, s)] then repeats while X accepts rows, and advance() steps it in a
        # tight loop (see FastRun._loop).
        self.entries: dict[int, list[Any]] = {pc: [self.consume[pc], [], fast.targets[pc][1], pc,
                                                   label if self._trivial(label) else None, None]
                                              for pc, label in fast.label_of.items()}
        for pc, entry in self.entries.items():
            entry[1].extend(self.entries[target] for target in fast.targets[pc][0])
        for entry in self.entries.values():
            successors = entry[1]
            if (len(successors) == 2 and successors[0] is entry and not entry[2]
                    and successors[1][4] is not None and successors[1][2] and not successors[1][1]):
                entry[5] = successors[1]
        threads, result = fast.initial_threads
        self.initial_threads: tuple[list[tuple[list[Any], tuple[Any, ...]]], tuple[Any, ...] | None] = (
            [(self.entries[pc], state) for pc, state in threads], result)

    def _trivial(self, label: int) -> bool:
        """True when a row of ``label`` is always accepted and changes no aggregate or navigation slot."""
        fast = self.fast
        return (fast.conditions[label] is None
                and not any(a.labels is None or label in a.labels for a in fast.aggregates)
                and not any(label in labels for (_, labels), _ in fast.slots))

    def _consumer(self, label: int) -> Consume:
        fast = self.fast
        frame = self.frame
        rows = self.rows
        condition = fast.conditions[label]
        source = fast.sources[label]
        feeds = [(i, a, _add(a.func, a.arg is None)) for i, a in enumerate(fast.aggregates)
                 if a.labels is None or label in a.labels]
        updates = [(slot, last, width) for (last, labels), slot in fast.slots
                   if label in labels for width in (fast.widths[slot],)]

        def update_aggregates(aggs: tuple[Any, ...], position: int) -> tuple[Any, ...]:
            try:
                if len(feeds) == 1 and len(aggs) == 1:
                    _, spec, add = feeds[0]
                    return (add(aggs[0], None if spec.arg is None else spec.arg(frame, position)),)
                updated = list(aggs)
                for index, spec, add in feeds:
                    updated[index] = add(updated[index], None if spec.arg is None else spec.arg(frame, position))
                return tuple(updated)
            except TypeError as error:  # e.g. SUM or AVG over strings, MIN over mixed types
                raise MatchRuntimeError(f"cannot aggregate in DEFINE: {error}",
                                        match_number=frame.match_number) from None

        def update_nav(nav: tuple[tuple[int, ...], ...], position: int) -> tuple[tuple[int, ...], ...]:
            updated = list(nav)
            for slot, last, width in updates:
                positions = updated[slot]
                if last:
                    updated[slot] = (position, *positions[: width - 1])
                elif len(positions) < width:
                    updated[slot] = (*positions, position)
            return tuple(updated)

        if len(updates) == 1:  # the usual case (LAST(v, k) of one variable): no list round trip
            only_slot, only_last, only_width = updates[0]
            keep = only_width - 1

            def update_nav(nav: tuple[tuple[int, ...], ...], position: int) -> tuple[tuple[int, ...], ...]:
                positions = nav[only_slot]
                if only_last:
                    positions = (position, *positions[:keep])
                elif len(positions) < only_width:
                    positions = (*positions, position)
                return (*nav[:only_slot], positions, *nav[only_slot + 1:])

        if condition is None and not feeds and not updates:
            return lambda position, state: ((label, state[0]), state[1], state[2])
        if len(feeds) == 1 and len(fast.aggregates) == 1 and feeds[0][1].getter is not None and not updates:
            if feeds[0][1].func == "AVG" and hasattr(condition, "average_compared"):
                _, compare, literal = condition.average_compared  # type: ignore[union-attr]
                return _average_compared(self, label, feeds[0][1], compare, literal, source)
            return _one_column_aggregate(self, label, feeds[0][1], feeds[0][2], condition, source)

        def consume(position: int, state: tuple[Any, ...]) -> tuple[Any, ...] | None:
            chain, aggs, nav = state
            frame.pos = position
            if feeds:
                aggs = update_aggregates(aggs, position)
            if condition is not None:
                frame.aggs = aggs
                frame.nav = nav
                try:
                    if condition(frame) is not True:
                        return None
                except TypeError as error:  # e.g. comparing a string with a number
                    raise MatchRuntimeError(f"cannot evaluate {source}: {error}",
                                            match_number=frame.match_number) from None
            if updates:
                nav = update_nav(nav, position)
            return ((label, chain), aggs, nav)

        del rows
        return consume


def _one_column_aggregate(binding: FastBinding, label: int, spec: FastAggregate, add: Callable[[Any, Any], Any],
                          condition: FastFn | None, source: str) -> Consume:
    """``consume`` for the common shape: one DEFINE aggregate over one column (``AVG(A.price) < 15``)."""
    frame = binding.frame
    rows = binding.rows
    buffered = rows.rows  # the list object stays the same: rows are appended and released in place
    get = spec.getter
    assert get is not None
    key = resolved_key(get)  # known once a partition has been read: the read is inlined

    def consume(position: int, state: tuple[Any, ...]) -> tuple[Any, ...] | None:
        try:
            row = buffered[position - rows.base]
            aggs = (add(state[1][0], row.get(key) if key is not None else get(row)),)
        except TypeError as error:
            raise MatchRuntimeError(f"cannot aggregate in DEFINE: {error}", match_number=frame.match_number) from None
        if condition is not None:
            frame.pos = position
            frame.aggs = aggs
            try:
                if condition(frame) is not True:
                    return None
            except TypeError as error:
                raise MatchRuntimeError(f"cannot evaluate {source}: {error}", match_number=frame.match_number) from None
        return ((label, state[0]), aggs, state[2])

    return consume


def _average_compared(binding: FastBinding, label: int, spec: FastAggregate, compare: Callable[[Any, Any], Any],
                      literal: Any, source: str) -> Consume:
    """``consume`` for ``AVG(v.col) <op> literal``, the only aggregate: one call per row, all inline.

    The same steps as the general path (AggregateSpec.add, then .result, then the comparison).
    """
    frame = binding.frame
    rows = binding.rows
    buffered = rows.rows
    get = spec.getter
    assert get is not None
    key = resolved_key(get)  # known once a partition has been read: the read is inlined

    def consume(position: int, state: tuple[Any, ...]) -> tuple[Any, ...] | None:
        row = buffered[position - rows.base]
        value = row.get(key) if key is not None else get(row)
        total, count = state[1][0]
        if value is not None:
            try:
                total = value if total is None else total + value
            except TypeError as error:
                raise MatchRuntimeError(f"cannot aggregate in DEFINE: {error}",
                                        match_number=frame.match_number) from None
            count += 1
        if not count:
            return None  # AVG over no rows is NULL: the condition is not TRUE
        try:
            if total.__class__ is int or isinstance(total, Integral):
                if compare(float(total) / count, literal) is not True:
                    return None
            elif compare(total / count, literal) is not True:
                return None
        except TypeError as error:
            raise MatchRuntimeError(f"cannot evaluate {source}: {error}", match_number=frame.match_number) from None
        return ((label, state[0]), ((total, count),), state[2])

    def roll(position: int, limit: int, tail: int, nav: tuple[Any, ...], matches: list[tuple[int, list[int]]],
             past_last_row: bool) -> tuple[int, int, tuple[Any, ...] | None, tuple[Any, ...] | None]:
        """:meth:`FastRun.advance` over rows ``position .. limit - 1`` for ``X+ T`` (X this label, T ``tail``).

        Called between attempts (no thread, the next attempt starts at ``position``) when the
        thread set is ``[(X, s), (T, s)]`` while X accepts rows (``FastBinding``'s loop tail: T
        accepts every row, changes no aggregate or navigation slot and reaches done).  The steps
        are those of the scan, :meth:`FastRun._loop` and the collection of matches in ``advance``,
        with the attempt's state kept in locals: the scan is the attempt's first row (X from the
        initial state; rejected: the next attempt starts at the next row), each further row X
        accepts extends it, the first it rejects is T's and ends the match ``X^depth T``.

        Returns the position reached (``limit``), the start of the attempt in progress, its state
        (None: it has not begun) and its match so far (T's extension of the state before its last
        row; None after one row, as the scan leaves it).  ``frame.match_number`` counts the matches.
        """
        base = rows.base  # fixed during one advance(): rows are released between calls only
        index = begin = position - base
        end = limit - base
        chain: Any = None
        total: Any = None
        count = depth = 0
        before: tuple[Any, Any, int] | None = None
        while index < end:
            value = buffered[index].get(key)
            index += 1
            new_total = total
            new_count = count
            if value is not None:
                try:
                    new_total = value if total is None else total + value
                except TypeError as error:
                    raise MatchRuntimeError(f"cannot aggregate in DEFINE: {error}",
                                            match_number=frame.match_number) from None
                new_count = count + 1
            try:
                if not new_count:
                    accepted = False  # AVG over no rows is NULL: the condition is not TRUE
                elif new_total.__class__ is int or isinstance(new_total, Integral):
                    accepted = compare(float(new_total) / new_count, literal) is True
                else:
                    accepted = compare(new_total / new_count, literal) is True
            except TypeError as error:
                raise MatchRuntimeError(f"cannot evaluate {source}: {error}", match_number=frame.match_number) from None
            if accepted:
                before = (chain, total, count)
                chain = (label, chain)
                total = new_total
                count = new_count
                depth += 1
                continue
            if not depth:  # the attempt's first row is rejected: the next attempt starts at the next row
                begin = index
                continue
            # X rejects the row: T takes it and the attempt ends with the match X^depth T
            labels = [label] * depth
            labels.append(tail)
            matches.append((begin + base, labels))
            frame.match_number += 1
            if past_last_row:
                begin = index
            else:  # SKIP TO NEXT ROW
                begin += 1
                index = begin
            chain = total = None
            count = depth = 0
        if not depth:
            return index + base, begin + base, None, None
        state = (chain, ((total, count),), nav)
        matched = None
        if depth > 1:
            assert before is not None
            matched = ((tail, before[0]), ((before[1], before[2]),), nav)
        return index + base, begin + base, state, matched

    if key is not None:  # the first partition of a process resolves the spelling: row by row there
        consume.roll = roll  # type: ignore[attr-defined]  # see FastRun.advance
    return consume


@lru_cache(maxsize=64)
def dict_rows(names: tuple[str, ...]) -> Callable[[list[list[Any]]], list[dict[str, Any]]]:
    """``build(columns)``: rows as dicts ``{names[i]: columns[i][j]}``, by one comprehension with a dict display.

    A display is ~3x faster than ``dict(zip(names, values))`` (a repeated name keeps its first
    position and its last value, as the display does).  The source is generated from the column
    *count* only; the names are bound as values (``_n0``, ``_n1``, ...), never spliced in.

    >>> dict_rows(("a", "b"))([[1, 2], ["x", "y"]])
    [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'y'}]
    """
    width = len(names)
    if width == 0:
        return lambda columns: []
    values = ", ".join(f"_v{i}" for i in range(width))
    display = ", ".join(f"_n{i}: _v{i}" for i in range(width))
    source = f"def build(columns):\n    return [{{{display}}} for {values}, in zip(*columns)]\n"
    namespace: dict[str, Any] = {f"_n{i}": name for i, name in enumerate(names)}
    exec(compile(source, "<dict rows>", "exec"), namespace)  # generated from a count, no user text
    return namespace["build"]  # type: ignore[no-any-return]


def chain_to_list(chain: Any) -> list[int]:
    """The label ids of a label chain (nested ``(label, previous)`` pairs), first row first."""
    out: list[int] = []
    while chain is not None:
        out.append(chain[0])
        chain = chain[1]
    out.reverse()
    return out


def _chain_from_list(labels: list[int]) -> Any:
    chain = None
    for label in labels:
        chain = (label, chain)
    return chain


class FastRun:
    """One match attempt on the fast path; the same interface as :class:`~timeweave.core.pattern.matcher.Run`.

    With ``rolling`` set, :meth:`advance` moves on to ``start + 1`` by itself when the attempt ends
    without a match (only when the driver would do nothing else: no WITH UNMATCHED ROWS output).
    State is plain data (label chains pickle flat); :meth:`rebind` reattaches the compiled part.
    """

    def __init__(self, binding: FastBinding, start: int, match_number: int, *, rolling: bool) -> None:
        self.start = start
        self.position = start
        self.match_number = match_number
        self.rolling = rolling
        self.binding = binding
        # the same start threads for every attempt: advance never mutates a thread list in place
        self.threads: list[tuple[list[Any], tuple[Any, ...]]]
        self.result: tuple[Any, ...] | None
        self.threads, self.result = binding.initial_threads

    @property
    def finished(self) -> bool:
        return not self.threads

    def step(self, *, at_end: bool = False) -> None:
        """Consume the row at ``self.position`` (never rolls: the driver concludes the attempt)."""
        if not self.threads:
            raise RuntimeError("step() on a finished run")
        rolling = self.rolling
        self.rolling = False
        try:
            self.advance(self.position + 1)
        finally:
            self.rolling = rolling

    def advance(self, limit: int, matches: list[tuple[int, list[int]]] | None = None, *,
                past_last_row: bool = True, skip_to: Callable[[int, list[int]], int | None] | None = None,
                meter: Any = None) -> None:
        """Consume rows ``position .. limit - 1`` (fewer if the attempt ends; rolling continues it).

        With ``meter`` (the driver's :class:`~timeweave.core.pattern.partition.WorkMeter`), the rows stepped
        are added to ``meter.work`` and the furthest row read to ``meter.reached``; a new attempt that
        re-reads rows (its start before ``meter.reached``) first checks the budget, and when it is spent
        the call ends there with that attempt not begun and ``meter.exhausted`` set.

        With ``matches`` (a list; only with ``rolling``), a non-empty match does not end the call
        either: its ``(start, labels)`` is appended, the match number advances, and the next attempt
        starts after its last row (``past_last_row``) or at its second row (SKIP TO NEXT ROW), as
        the driver would do; the driver then outputs the collected matches in order.  With ``skip_to``
        (AFTER MATCH SKIP TO FIRST/LAST v), ``skip_to(start, labels)`` gives the next start instead;
        None (the skip fails) ends the call with that match for the driver to conclude.
        """
        frame = self.binding.frame
        start = frame.start = self.start
        frame.match_number = self.match_number
        initial_threads, initial_result = initial = self.binding.initial_threads
        # One start thread and no empty match (A+ B, S D+ U, ...): failed attempts are skipped by a
        # tight scan for the next row the first label accepts.
        scan = self.rolling and len(initial_threads) == 1 and initial_result is None
        roll = None
        if scan:
            (first_consume, first_successors, first_done, _, _, _), first_state = initial_threads[0]
            first_entry = initial_threads[0][0]
            # (not for SKIP TO NEXT ROW: its roll re-reads rows inside, where the budget is not checked)
            if matches is not None and skip_to is None and past_last_row and first_entry[5] is not None:
                roll = getattr(first_consume, "roll", None)
                tail_label = first_entry[5][4]
        threads = self.threads
        position = self.position
        result = self.result
        if meter is not None:  # rows stepped = position - first + rewound (position only moves back at a new attempt)
            first = position
            rewound = 0
            work, reached, budget = meter.work, meter.reached, meter.budget
            unit = self.binding.row_cost  # work units per row stepped
            if position > reached:
                reached = position
        while position < limit:
            if not threads:
                if result is not None:
                    if matches is None or result[0] is None:
                        break  # the driver concludes it (empty matches always)
                    labels = chain_to_list(result[0])
                    if skip_to is not None:
                        following = skip_to(start, labels)
                        if following is None:
                            break  # the skip fails: the driver concludes the match and raises its error
                    matches.append((start, labels))
                    self.match_number += 1
                    frame.match_number = self.match_number
                    if skip_to is not None:
                        start = following
                    else:
                        start = start + len(labels) if past_last_row else start + 1
                elif self.rolling:
                    start += 1  # the next attempt, as the driver would
                else:
                    break
                if meter is not None:
                    if position > reached:
                        reached = position
                    if start < reached and work + (position - first + rewound) * unit > budget.allowance(reached):
                        meter.exhausted = True  # checked where the rows alone decide, so every batching agrees
                        rewound += position - start
                        frame.start = position = start
                        threads, result = initial
                        break
                    rewound += position - start
                frame.start = position = start
                threads, result = initial
                if not scan:
                    continue
                if roll is not None:  # X+ T: the whole scan / loop / collect cycle in one call
                    position, start, state, result = roll(position, limit, tail_label, first_state[2], matches,
                                                          past_last_row)
                    frame.start = start
                    self.match_number = frame.match_number
                    if state is None:
                        threads, result = initial
                        break  # out of rows: the attempt at `start` has not begun
                    threads = [(first_entry, state), (first_entry[5], state)]
                    break
                after = None
                while position < limit:
                    after = first_consume(position, first_state)
                    if after is not None:
                        break
                    start = frame.start = position = position + 1
                if after is None:
                    break  # out of rows: the attempt at `start` has not begun
                threads = [(successor, after) for successor in first_successors]
                if first_done:
                    result = after
                position += 1
                continue
            if len(threads) == 2:
                (loop, state), (tail, tail_state) = threads
                if loop[5] is tail and state is tail_state:  # [(X, s), (T, s)]: the tight loop
                    position, threads, result = self._loop(loop, tail, state, position, limit, result)
                    continue
            advanced: list[tuple[list[Any], tuple[Any, ...]]] = []
            for entry, state in threads:
                consume, successors, done, _, trivial, _ = entry
                if trivial is None:
                    after = consume(position, state)
                    if after is None:
                        continue  # the row does not satisfy the label: the thread dies
                else:  # consume(position, state) of a label that accepts every row, inline
                    after = ((trivial, state[0]), state[1], state[2])
                for successor in successors:
                    advanced.append((successor, after))
                if done:  # rule 3: a match; the less preferred threads behind it are dropped
                    result = after
                    break
            threads = advanced
            position += 1
        if meter is not None:
            meter.work = work + (position - first + rewound) * unit
            meter.reached = max(reached, position)
        self.start = start
        self.threads = threads
        self.position = position
        self.result = result

    @staticmethod
    def _loop(loop: list[Any], tail: list[Any], state: tuple[Any, ...], position: int, limit: int,
              result: tuple[Any, ...] | None) -> tuple[int, list[tuple[list[Any], tuple[Any, ...]]], tuple[Any, ...] | None]:
        """Steps of the thread set ``[(X, state), (T, state)]`` (X = ``loop``, T = ``tail``) from ``position``.

        The general step does the same: X consumes the row first; T (which accepts every row and
        reaches done) then matches with the state X had before the row, so the result is T's
        extension of that state; the new threads are [(X, after), (T, after)] if X accepted the
        row, none otherwise.  Here T's extension is built once, for the last row stepped.
        Returns the new position, threads and result.
        """
        consume = loop[0]
        before = state
        while position < limit:
            after = consume(position, state)
            before = state
            position += 1
            if after is None:  # X rejects the row: T ends the attempt with its match
                return position, [], ((tail[4], before[0]), before[1], before[2])
            state = after
        if before is state:
            return position, [(loop, state), (tail, state)], result  # no row stepped
        return position, [(loop, state), (tail, state)], ((tail[4], before[0]), before[1], before[2])

    def stop(self) -> None:
        self.threads = []

    def match(self) -> MatchResult | None:
        if self.result is None:
            return None
        return MatchResult(self.start, tuple(chain_to_list(self.result[0])))

    def rebind(self, evaluator: Any, signature: Any) -> None:
        """Reattach the compiled part after unpickling (the arguments are the general VM's; unused)."""
        del evaluator, signature

    def __getstate__(self) -> dict[str, Any]:
        return {
            "start": self.start, "position": self.position, "match_number": self.match_number,
            "rolling": self.rolling,
            "threads": [(entry[3], (chain_to_list(s[0]), s[1], s[2])) for entry, s in self.threads],
            "result": None if self.result is None else (chain_to_list(self.result[0]), self.result[1], self.result[2]),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.start = state["start"]
        self.position = state["position"]
        self.match_number = state["match_number"]
        self.rolling = state["rolling"]
        self._pcs = [(pc, (_chain_from_list(s[0]), s[1], s[2])) for pc, s in state["threads"]]
        self.threads = []  # filled by attach()
        result = state["result"]
        self.result = None if result is None else (_chain_from_list(result[0]), result[1], result[2])
        self.binding = None  # type: ignore[assignment]

    def to_state(self) -> dict[str, Any]:
        """The attempt as plain data (:mod:`timeweave.core.state_codec`): positions, and each thread as
        ``[pc, label ids, aggregate states, navigation state]``; :meth:`from_state` rebuilds it."""
        return {
            "kind": "fast", "start": self.start, "position": self.position, "match_number": self.match_number,
            "rolling": self.rolling,
            "threads": [[entry[3], chain_to_list(s[0]), s[1], s[2]] for entry, s in self.threads],
            "result": None if self.result is None else [chain_to_list(self.result[0]), self.result[1], self.result[2]],
        }

    @classmethod
    def from_state(cls, data: dict[str, Any]) -> FastRun:
        """The attempt :meth:`to_state` gave, without its compiled part (:meth:`attach` adds it)."""
        from timeweave.core.state_data import expect

        def labels(value: Any) -> Any:
            expect(isinstance(value, list) and all(type(x) is int for x in value), "match attempt: bad label ids")
            return _chain_from_list(value)

        run = cls.__new__(cls)
        run.start, run.position, run.match_number = data["start"], data["position"], data["match_number"]
        run.rolling = bool(data["rolling"])
        expect(all(type(v) is int for v in (run.start, run.position, run.match_number)),
               "match attempt: start, position and match number must be integers")
        pcs = []
        for item in data["threads"]:
            expect(isinstance(item, list) and len(item) == 4 and type(item[0]) is int,
                   "match attempt: a thread is [pc, labels, aggregates, navigation]")
            pcs.append((item[0], (labels(item[1]), item[2], item[3])))
        run._pcs = pcs
        run.threads = []  # filled by attach()
        result = data["result"]
        expect(result is None or (isinstance(result, list) and len(result) == 3), "match attempt: bad result")
        run.result = None if result is None else (labels(result[0]), result[1], result[2])
        run.binding = None  # type: ignore[assignment]
        return run

    def attach(self, binding: FastBinding) -> None:
        """Reattach the compiled part (after unpickling)."""
        self.binding = binding
        unknown = [pc for pc, _ in self._pcs if pc not in binding.entries]
        if unknown:
            from timeweave.core.state_data import expect

            expect(False, f"match attempt: instructions {unknown} are not in the compiled pattern")
        self.threads = [(binding.entries[pc], state) for pc, state in self._pcs]
        del self._pcs


# -- ONE ROW PER MATCH measures, compiled ---------------------------------------------------------------
class MatchView:
    """One finished, non-empty match as compiled measures read it (one per clause, refilled per match).

    ``rows`` is the partition's buffered row list and ``shift`` the index in it of the match's first
    row; ``labels`` holds one label id per matched row; ``offsets[k]`` lists the match-relative
    offsets of the rows whose label is in the k-th label set the measures navigate over.
    """

    __slots__ = ("labels", "match_number", "offsets", "rows", "shift")

    def __init__(self) -> None:
        self.rows: list[Mapping[str, Any]] = []
        self.shift = 0
        self.labels: list[int] = []
        self.match_number = 1
        self.offsets: list[list[int]] = []


MeasureFn = Callable[[MatchView], Any]


class MeasureCompiler(ExpressionCompiler):
    """Compiles ONE ROW PER MATCH measures into ``fn(view)`` closures over a :class:`MatchView`.

    In ONE ROW PER MATCH every measure is evaluated at the match's last row, so RUNNING and FINAL
    agree and a navigation is an index into the offsets of its label set.  Supported: column
    references, FIRST/LAST of a column, aggregates of a column or ``COUNT(*)``, CLASSIFIER,
    MATCH_NUMBER, MATCH_ROWTIME and the scalar operators over them; anything else (PREV/NEXT,
    navigation or aggregate arguments that are expressions) raises :class:`Unsupported` and the
    clause keeps the general :class:`~timeweave.core.pattern.expressions.MeasureContext` evaluator.
    """

    def __init__(self, text: str, label_sets: Mapping[str | None, LabelSet], label_names: list[str],
                 *, order_column: str | None) -> None:
        super().__init__(text, label_sets, label_names, clause="MEASURES", order_column=order_column)
        self.offset_sets: list[frozenset[int]] = []  # the label sets whose offsets a match view carries

    def _offsets(self, labels: frozenset[int]) -> int:
        if labels not in self.offset_sets:
            self.offset_sets.append(labels)
        return self.offset_sets.index(labels)

    def _top(self, node: E.Expr) -> MeasureFn:  # type: ignore[override]
        if isinstance(node, E.Column):
            return self._read(True, self.label_sets[node.var], 0, node)
        if isinstance(node, E.Navigation):
            if node.kind not in ("FIRST", "LAST") or not isinstance(node.arg, E.Column):
                raise Unsupported(str(node))
            return self._read(node.kind == "LAST", self.label_sets[node.arg.var], node.offset, node.arg)
        if isinstance(node, E.Aggregate):
            return self._aggregate(node)
        if isinstance(node, E.Classifier):
            names = self.label_names
            labels = self.label_sets[node.var]
            if labels is None:
                return lambda v: names[v.labels[-1]]
            slot = self._offsets(labels)
            return lambda v: names[v.labels[o[-1]]] if (o := v.offsets[slot]) else None
        if isinstance(node, E.MatchRowtime):  # FINAL LAST(column) over every row: the match's last row
            get = self._column_getter(node.column or E.Column(None, self.order_column or "", node.start))
            return lambda v: get(v.rows[v.shift + len(v.labels) - 1])
        return self._generic(node, self._top)  # type: ignore[arg-type,return-value]

    def _read(self, last: bool, labels: LabelSet, offset: int, column: E.Column) -> MeasureFn:
        """FIRST/LAST(labels.column, offset): the same rows as MeasureContext.resolve at the last row."""
        get = self._column_getter(column)
        if labels is None:  # every row of the match
            if last:
                return lambda v: get(v.rows[v.shift + n - 1 - offset]) if (n := len(v.labels)) > offset else None
            return lambda v: get(v.rows[v.shift + offset]) if len(v.labels) > offset else None
        slot = self._offsets(labels)
        if last:
            back = -1 - offset
            return lambda v: get(v.rows[v.shift + o[back]]) if len(o := v.offsets[slot]) > offset else None
        return lambda v: get(v.rows[v.shift + o[offset]]) if len(o := v.offsets[slot]) > offset else None

    def _aggregate(self, node: E.Aggregate) -> MeasureFn:  # type: ignore[override]
        if node.func not in CORE_AGGREGATES or node.parameters:  # the other folds (aggregates.py) run in the general evaluator
            raise Unsupported(str(node))
        if node.arg is None:  # COUNT(*) / COUNT(v.*)
            labels = self.label_sets[node.star_var] if node.star_var else None
            if labels is None:
                return lambda v: len(v.labels)
            slot = self._offsets(labels)
            return lambda v: len(v.offsets[slot])
        if not isinstance(node.arg, E.Column):
            raise Unsupported(str(node))
        labels = self.label_sets[node.arg.var]
        get = self._column_getter(node.arg)
        if labels is None:
            def values(v: MatchView) -> list[Any]:
                return [x for row in v.rows[v.shift: v.shift + len(v.labels)] if (x := get(row)) is not None]
        else:
            slot = self._offsets(labels)

            def values(v: MatchView) -> list[Any]:
                rows, shift = v.rows, v.shift
                return [x for i in v.offsets[slot] if (x := get(rows[shift + i])) is not None]

        return _FINAL_AGGREGATES[node.func](values)

    # batch mode: one call per measure for many matches ---------------------------------------------
    def batch(self, node: E.Expr) -> BatchFn | None:
        """``fn(batch)``: the measure's value for every match of a :class:`MatchBatch` (None: per match).

        Only the common shapes (a column, FIRST/LAST of a column, an aggregate of a column or
        ``COUNT(*)``) have a batch form; they read the same rows as their ``fn(view)`` forms.
        """
        if isinstance(node, E.Column):
            return self._batch_read(True, self.label_sets[node.var], 0, node)
        if isinstance(node, E.Navigation) and node.kind in ("FIRST", "LAST") and isinstance(node.arg, E.Column):
            return self._batch_read(node.kind == "LAST", self.label_sets[node.arg.var], node.offset, node.arg)
        if isinstance(node, E.Aggregate) and node.func in _REDUCE and not node.parameters:
            if node.arg is None:  # COUNT(*) / COUNT(v.*)
                labels = self.label_sets[node.star_var] if node.star_var else None
                if labels is None:
                    return lambda b: [len(ids) for ids in b.labels]
                slot = self._offsets(labels)
                return lambda b: [len(o) for o in b.offsets[slot]]
            if isinstance(node.arg, E.Column):
                return self._batch_aggregate(_REDUCE[node.func], self.label_sets[node.arg.var], node.arg)
        return None

    def _batch_read(self, last: bool, labels: LabelSet, offset: int, column: E.Column) -> BatchFn:
        get = self._column_getter(column)
        # per match, the index in b.rows of the row read (None: no such row), then one read per row
        if labels is None:  # every row of the match
            if last:
                def where(b: MatchBatch) -> list[int | None]:
                    return [shift + n - 1 - offset if (n := len(ids)) > offset else None
                            for shift, ids in zip(b.shifts, b.labels, strict=True)]
            else:
                def where(b: MatchBatch) -> list[int | None]:
                    return [shift + offset if len(ids) > offset else None for shift, ids in zip(b.shifts, b.labels, strict=True)]
        else:
            slot = self._offsets(labels)
            index = -1 - offset if last else offset

            def where(b: MatchBatch) -> list[int | None]:
                return [shift + o[index] if len(o) > offset else None for shift, o in zip(b.shifts, b.offsets[slot], strict=True)]

        def read(b: MatchBatch) -> list[Any]:
            rows = b.rows
            key = resolved_key(get)
            if key is None:
                return [None if i is None else get(rows[i]) for i in where(b)]
            return [None if i is None else rows[i].get(key) for i in where(b)]

        return read

    def _batch_aggregate(self, reduce: Callable[[list[Any]], Any], labels: LabelSet, column: E.Column) -> BatchFn:
        get = self._column_getter(column)
        if labels is None:
            def over_all(b: MatchBatch) -> list[Any]:
                rows = b.rows
                key = resolved_key(get)
                if key is None:
                    return [reduce([x for row in rows[shift: shift + len(ids)] if (x := get(row)) is not None])
                            for shift, ids in zip(b.shifts, b.labels, strict=True)]
                return [reduce([x for row in rows[shift: shift + len(ids)] if (x := row.get(key)) is not None])
                        for shift, ids in zip(b.shifts, b.labels, strict=True)]

            return over_all
        slot = self._offsets(labels)

        def over_set(b: MatchBatch) -> list[Any]:
            rows = b.rows
            key = resolved_key(get)
            if key is None:
                return [reduce([x for i in o if (x := get(rows[shift + i])) is not None])
                        for shift, o in zip(b.shifts, b.offsets[slot], strict=True)]
            return [reduce([x for i in o if (x := rows[shift + i].get(key)) is not None])
                    for shift, o in zip(b.shifts, b.offsets[slot], strict=True)]

        return over_set


class MatchBatch:
    """Many finished, non-empty matches of one partition, as batched measures read them.

    ``rows`` is the partition's buffered row list; per match (in match order) ``shifts`` holds the
    index in it of the match's first row and ``labels`` its label ids; ``offsets[k]`` holds, per
    match, the offsets of the rows in the k-th label set (as :attr:`MatchView.offsets`).
    """

    __slots__ = ("labels", "offsets", "rows", "shifts")

    def __init__(self, rows: list[Mapping[str, Any]], shifts: list[int], labels: list[list[int]],
                 offsets: list[list[list[int]]]) -> None:
        self.rows = rows
        self.shifts = shifts
        self.labels = labels
        self.offsets = offsets


BatchFn = Callable[[MatchBatch], list[Any]]


def _reduce_avg(present: list[Any]) -> Any:
    if not present:
        return None
    total = _sum(present)
    if total.__class__ is int or isinstance(total, Integral):  # AggregateSpec.result's rule
        return float(total) / len(present)
    return total / len(present)


#: FINAL aggregates over the non-NULL values of a match (the batched measures and :data:`_FINAL_AGGREGATES`).
_REDUCE: dict[str, Callable[[list[Any]], Any]] = {
    "COUNT": len,
    "SUM": lambda present: _sum(present) if present else None,
    "AVG": _reduce_avg,
    # builtin min compares ``value < best`` left to right and keeps the first of equals: AggregateSpec.add
    "MIN": lambda present: min(present) if present else None,
    "MAX": lambda present: max(present) if present else None,
}


def _final(reduce: Callable[[list[Any]], Any]) -> Callable[[Callable[[MatchView], list[Any]]], MeasureFn]:
    """A per-match FINAL aggregate: ``reduce`` of the values ``values(view)`` collects."""
    return lambda values: lambda v: reduce(values(v))


def _sum(present: list[Any]) -> Any:
    """``v1 + v2 + ...`` left to right, as AggregateSpec.add_many adds (``present`` is not empty)."""
    first = present[0]
    if first.__class__ is int:  # integers are exact: builtin sum is the same additions, in C
        return sum(present[1:], first) if len(present) > 1 else first
    total = first
    for value in present[1:]:  # floats (3.12's sum compensates rounding), decimals, intervals: plain +
        total = total + value
    return total


_FINAL_AGGREGATES: dict[str, Callable[[Callable[[MatchView], list[Any]]], MeasureFn]] = {
    name: _final(reduce) for name, reduce in _REDUCE.items()
}


class FastMeasures:
    """ONE ROW PER MATCH measures compiled for :class:`MatchView` (None from :meth:`build`: not supported).

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> spec = parse_clause("MEASURES FIRST(A.p) AS f, AVG(A.p) AS a, COUNT(*) AS n PATTERN (A+ B) DEFINE A AS A.p < 3")
    >>> measures = FastMeasures.build(spec, {None: None, "A": frozenset({0}), "B": frozenset({1})}, ["A", "B"])
    >>> measures.evaluate([{"p": 1}, {"p": 2}, {"p": 7}], 0, [0, 0, 1], 1)
    {'f': 1, 'a': 1.5, 'n': 3}
    """

    def __init__(self, measures: list[tuple[str, MeasureFn, str]], offset_sets: list[frozenset[int]],
                 batched: list[BatchFn | None] | None = None) -> None:
        self.measures = measures
        self.offset_sets = offset_sets
        self.names = [name for name, _, _ in measures]
        self.batched: list[BatchFn | None] = batched if batched is not None else [None] * len(measures)
        # per label set: the membership test of one label id (a single label: int equality)
        self._tests: list[Callable[[int], bool]] = [
            next(iter(s)).__eq__ if len(s) == 1 else s.__contains__ for s in offset_sets]
        self.view = MatchView()

    @staticmethod
    def build(spec: Any, label_sets: Mapping[str | None, LabelSet], label_names: list[str],
              order_column: str | None = None) -> FastMeasures | None:
        if spec.rows_per_match.all_rows:
            return None
        compiler = MeasureCompiler(spec.text, label_sets, label_names, order_column=order_column)
        try:
            measures = [(m.name, compiler._top(m.expr), str(m.expr)) for m in spec.measures]
        except Unsupported:
            return None
        batched = [compiler.batch(m.expr) for m in spec.measures]
        return FastMeasures(measures, compiler.offset_sets, batched)

    def evaluate(self, rows: list[Mapping[str, Any]], shift: int, labels: list[int],
                 match_number: int) -> dict[str, Any]:
        """The measures of the non-empty match whose first row is ``rows[shift]``, labelled ``labels``."""
        view = self.view
        view.rows = rows
        view.shift = shift
        view.labels = labels
        view.match_number = match_number
        # offsets by C-level iteration (compress over a membership test per label): no Python loop per row
        view.offsets = [list(compress(count(), map(test, labels))) for test in self._tests]
        out: dict[str, Any] = {}
        for name, fn, source in self.measures:
            try:
                out[name] = fn(view)
            except TypeError as error:  # e.g. comparing a string with a number: as CompiledClause words it
                raise MatchRuntimeError(f"cannot evaluate {source}: {error}", match_number=match_number) from None
        return out

    def evaluate_many(self, rows: list[Mapping[str, Any]], base: int, matches: list[tuple[int, list[int]]],
                      first_number: int) -> list[list[Any]]:
        """Per measure, its values for ``matches`` (``(start, labels)`` numbered from ``first_number``).

        The same values (and errors) as :meth:`evaluate` per match, with one call per measure for
        all of them where the measure has a batch form.  ``rows[0]`` is at absolute position ``base``.

        >>> from timeweave.core.pattern.parser import parse_clause
        >>> spec = parse_clause("MEASURES LAST(A.p) AS l, MATCH_NUMBER() AS m PATTERN (A+ B) DEFINE A AS A.p < 3")
        >>> measures = FastMeasures.build(spec, {None: None, "A": frozenset({0}), "B": frozenset({1})}, ["A", "B"])
        >>> measures.evaluate_many([{"p": 1}, {"p": 7}, {"p": 2}, {"p": 9}], 0, [(0, [0, 1]), (2, [0, 1])], 4)
        [[1, 2], [4, 5]]
        """
        shifts = [start - base for start, _ in matches]
        labels = [labels for _, labels in matches]
        batch = MatchBatch(rows, shifts, labels,
                           [[list(compress(count(), map(test, ids))) for ids in labels] for test in self._tests])
        try:
            columns: list[list[Any]] = []
            view = self.view
            view.rows = rows
            for (_, fn, _), batched in zip(self.measures, self.batched, strict=True):
                if batched is not None:
                    columns.append(batched(batch))
                    continue
                values = []  # no batch form: per match, over the view
                for index, shift in enumerate(shifts):
                    view.shift = shift
                    view.labels = labels[index]
                    view.match_number = first_number + index
                    view.offsets = [offsets[index] for offsets in batch.offsets]
                    values.append(fn(view))
                columns.append(values)
            return columns
        except Exception:
            # measures run column by column here: redo match by match so that the error raised is
            # the one evaluate() raises first (the earliest match, then the first measure in it)
            for index, (start, ids) in enumerate(matches):
                self.evaluate(rows, start - base, ids, first_number + index)
            raise
