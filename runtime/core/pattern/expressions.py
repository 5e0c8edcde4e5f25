"""Compile DEFINE and MEASURES expressions into closures, and the contexts they are evaluated in.

Semantics (SQL:2016 / Trino):

* ``A.price`` is ``LAST(A.price, 0)``: the last row matched to A *so far* (RUNNING); a bare
  ``price`` is the current row.  In DEFINE the current row is the one being classified, already
  counted as a row of the candidate variable.
* ``FIRST(x, n)`` / ``LAST(x, n)``: the n-th row from the first / last row matched to the variable
  of ``x``; LAST counts back from the current row (RUNNING) or the match's last row (FINAL, MEASURES
  only); FIRST counts forward over all rows matched so far (as Trino).  Out of range: NULL.
* ``PREV(x, n)`` / ``NEXT(x, n)``: n rows before / after the row ``x`` navigates to (by default
  ``LAST(var, 0)``); may leave the match but not the partition.  In DEFINE, NEXT may read rows
  after the current one: the partition driver waits for them (its ``lookahead``).
* Aggregates run over the variable's rows up to the current row (RUNNING) or the whole match
  (FINAL).  ``COUNT(*)`` counts rows, ``COUNT(x)`` non-NULL values.  ``AVG`` returns DOUBLE
  (Flink returns the argument type for BIGINT: integer division; see the conformance notes).
  In DEFINE the aggregates are kept per thread and updated once per row (O(1) per row).
* ``CLASSIFIER(v)`` is the variable the row ``LAST(v, 0)`` matched; ``MATCH_NUMBER()`` numbers
  matches from 1 per partition; ``MATCH_ROWTIME([c])`` is ``FINAL LAST(c)`` with ``c`` the first
  ORDER BY column by default.

Each expression is compiled once into a closure ``fn(ctx)``; arguments of navigations and
aggregates are compiled in *row mode* ``fn(ctx, position)`` (all their column references read one
row).  Three-valued logic throughout: a DEFINE condition holds only when it is TRUE.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

from timeweave.core.pattern import expr as E
from timeweave.core.pattern.aggregates import AggregateFunction, aggregate_function
from timeweave.core.pattern.errors import MatchRuntimeError, PatternValidationError
from timeweave.core.pattern.functions import SCALAR_FUNCTIONS, cast, sql_arith, sql_compare

LabelSet = frozenset[int] | None  # None: the universal row pattern variable (every row)
Fn = Callable[["Context"], Any]
RowFn = Callable[["Context", int], Any]

_MISSING = object()


class Context:
    """What an expression may read.  Subclasses: :class:`DefineContext`, :class:`MeasureContext`."""

    start: int  # absolute position of the match's first row
    current: int  # RUNNING position
    final_end: int  # FINAL position (last row of the match)
    match_number: int
    rows: RowSource

    def label_at(self, position: int) -> int | None:
        raise NotImplementedError

    def resolve(self, last: bool, labels: LabelSet, offset: int, final: bool) -> int | None:
        """Position of ``FIRST/LAST(labels, offset)``; None if there is no such row.

        LAST searches back from the current row (RUNNING) or the match's last row (FINAL).  FIRST
        searches forward from the match's first row over every row matched so far, even past the
        current row in MEASURES: that is Trino's behaviour (``RUNNING FIRST(value, 2)`` on the first
        row of a 3-row match is the third row's value).  In DEFINE no row past the current one is
        matched yet, so both readings agree there.
        """
        end = self.final_end if (final or not last) else self.current
        if labels is None:
            position = end - offset if last else self.start + offset
            return position if self.start <= position <= end else None
        if last:
            position = end
            while position >= self.start:
                if self.label_at(position) in labels:
                    if offset == 0:
                        return position
                    offset -= 1
                position -= 1
            return None
        position = self.start
        while position <= end:
            if self.label_at(position) in labels:
                if offset == 0:
                    return position
                offset -= 1
            position += 1
        return None

    def aggregate(self, index: int, final: bool) -> Any:
        raise NotImplementedError


class RowSource:
    """The partition's rows by absolute position, as far as they are known."""

    def __init__(self) -> None:
        self.rows: list[Mapping[str, Any]] = []
        self.base = 0  # absolute position of rows[0]; earlier rows were released
        self.length: int | None = None  # partition length once the end is known

    def get(self, position: int) -> Mapping[str, Any] | None:
        index = position - self.base
        if position < 0 or (self.length is not None and position >= self.length):
            return None
        if index < 0 or index >= len(self.rows):
            raise MatchRuntimeError(f"row {position} is not buffered (internal: lookahead/lookbehind too small)")
        return self.rows[index]

    @property
    def available(self) -> int:
        """One past the last buffered absolute position."""
        return self.base + len(self.rows)

    def release_before(self, position: int) -> None:
        drop = min(position - self.base, len(self.rows))
        if drop > 0:
            del self.rows[:drop]
            self.base += drop


# -- aggregates ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AggregateSpec:
    """One aggregate call: function, the labels it runs over, its row-mode argument (None: count rows).

    ``COUNT/SUM/AVG/MIN/MAX`` are inline here (the hot path); every other aggregate is a fold of
    :data:`~timeweave.core.pattern.aggregates.AGGREGATE_FUNCTIONS` (``function``).
    """

    func: str
    labels: LabelSet
    arg: RowFn | None
    getter: Callable[[Mapping[str, Any]], Any] | None = None  # set when ``arg`` reads one column, no more
    function: AggregateFunction | None = None

    def initial(self) -> Any:
        if self.function is not None:
            return self.function.initial
        return 0 if self.func == "COUNT" else (None, 0) if self.func == "AVG" else None

    def add(self, state: Any, value: Any) -> Any:
        if self.function is not None:
            return self.function.step(state, value)
        func = self.func
        if func == "COUNT":
            return state + 1 if (self.arg is None or value is not None) else state
        if value is None:
            return state
        if func == "SUM":
            return value if state is None else state + value
        if func == "AVG":
            total, count = state
            return (value if total is None else total + value, count + 1)
        if func == "MIN":
            return value if state is None or value < state else state
        return value if state is None or value > state else state  # MAX

    def add_many(self, state: Any, values: list[Any]) -> Any:
        """``add`` of each value in turn (the same additions in the same order), without a call per value."""
        if self.function is not None:
            step = self.function.step
            for value in values:
                state = step(state, value)
            return state
        present = [v for v in values if v is not None]
        func = self.func
        if func == "COUNT":
            return state + len(present)
        if not present:
            return state
        if func == "AVG":
            total, count = state
            for value in present:
                total = value if total is None else total + value
            return (total, count + len(present))
        if func == "SUM":
            for value in present:
                state = value if state is None else state + value
            return state
        if func == "MIN":
            for value in present:
                if state is None or value < state:
                    state = value
            return state
        for value in present:  # MAX
            if state is None or value > state:
                state = value
        return state

    def result(self, state: Any) -> Any:
        if self.function is not None:
            return self.function.result(state)
        if self.func == "AVG":
            total, count = state
            if not count:
                return None
            if total.__class__ is int or isinstance(total, Integral):  # the class test skips the slow ABC check
                return float(total) / count
            return total / count
        return state

    def value_at(self, ctx: Context, position: int) -> Any:
        return None if self.arg is None else self.arg(ctx, position)


# -- contexts -----------------------------------------------------------------------------------------
class DefineContext(Context):
    """Evaluating a label for one thread at one row: the thread's labels plus the candidate label."""

    __slots__ = ("_labels", "aggregates", "candidate", "chain", "current", "final_end", "match_number", "rows",
                 "start")

    def __init__(self, rows: RowSource, start: int, position: int, chain: Any, candidate: int,
                 aggregates: tuple[Any, ...], match_number: int) -> None:
        self.rows = rows
        self.start = start
        self.current = position
        self.final_end = position
        self.chain = chain  # matcher.Labels | None: labels of start .. position-1
        self.candidate = candidate
        self.aggregates = aggregates  # tentative: already include the current row
        self.match_number = match_number
        self._labels: list[int] | None = None

    def label_at(self, position: int) -> int | None:
        if position == self.current:
            return self.candidate
        if position < self.start or position > self.current:
            return None
        if self._labels is not None:
            return self._labels[position - self.start]
        distance = self.current - position
        if distance <= 16:  # the common case (PREV(CLASSIFIER()), ...): walk back a few cells
            node = self.chain
            for _ in range(distance - 1):
                node = node.prev
            return node.label
        self._labels = self.chain.to_list()
        return self._labels[position - self.start]

    def resolve(self, last: bool, labels: LabelSet, offset: int, final: bool) -> int | None:
        if labels is None:
            return super().resolve(last, labels, offset, final)
        if not last:
            # FIRST(v, k): the chain's memoized first positions, then the candidate row
            found = self.chain.first_positions(labels, offset + 1) if self.chain is not None else ()
            if len(found) > offset:
                return self.start + found[offset]
            return self.current if len(found) == offset and self.candidate in labels else None
        # LAST(v, k): the candidate row first, then the chain's memoized last positions
        if self.candidate in labels:
            if offset == 0:
                return self.current
            offset -= 1
        found = self.chain.last_positions(labels, offset + 1) if self.chain is not None else ()
        return self.start + found[offset] if len(found) > offset else None

    def aggregate(self, index: int, final: bool) -> Any:
        return self.aggregates[index]


class MeasureContext(Context):
    """Evaluating MEASURES for one match at one output row (``current``)."""

    def __init__(self, rows: RowSource, start: int, labels: tuple[int, ...], match_number: int,
                 specs: list[AggregateSpec]) -> None:
        self.rows = rows
        self.start = start
        self.labels = labels
        self.final_end = start + len(labels) - 1
        self.current = self.final_end
        self.match_number = match_number
        self.specs = specs
        self._cache: dict[tuple[int, bool], tuple[int, Any]] = {}
        self._positions: dict[frozenset[int], list[int]] = {}

    def label_at(self, position: int) -> int | None:
        index = position - self.start
        return self.labels[index] if 0 <= index < len(self.labels) else None

    def positions(self, labels: frozenset[int]) -> list[int]:
        """Absolute positions of the match's rows with a label in ``labels`` (computed once per match)."""
        positions = self._positions.get(labels)
        if positions is None:  # once per label set and match: then O(log n) per navigation
            positions = [self.start + i for i, label in enumerate(self.labels) if label in labels]
            self._positions[labels] = positions
        return positions

    def resolve(self, last: bool, labels: LabelSet, offset: int, final: bool) -> int | None:
        if labels is None:
            return super().resolve(last, labels, offset, final)
        positions = self.positions(labels)
        end = self.final_end if (final or not last) else self.current
        count = len(positions) if end == self.final_end else bisect_right(positions, end)
        if offset >= count:
            return None
        return positions[count - 1 - offset] if last else positions[offset]

    def aggregate(self, index: int, final: bool) -> Any:
        spec = self.specs[index]
        limit = self.final_end if final else self.current
        done, state = self._cache.get((index, final), (self.start - 1, spec.initial()))
        if done > limit:  # went backwards (not in the usual row order): recompute
            done, state = self.start - 1, spec.initial()
        if limit > done:
            start = self.start
            offsets: range | list[int] = range(done + 1 - start, limit + 1 - start)
            if spec.labels is not None:
                wanted, labels = spec.labels, self.labels
                offsets = [i for i in offsets if labels[i] in wanted]
            if spec.arg is None:  # COUNT(*): every row counts
                state += len(offsets)
            elif spec.getter is not None:  # a plain column: read the rows directly (all inside the match)
                rows, shift, get = self.rows.rows, start - self.rows.base, spec.getter
                state = spec.add_many(state, [get(rows[shift + i]) for i in offsets])
            else:
                state = spec.add_many(state, [spec.value_at(self, start + i) for i in offsets])
        self._cache[(index, final)] = (limit, state)
        return spec.result(state)


# -- compilation ----------------------------------------------------------------------------------------
@dataclass(slots=True)
class Dependencies:
    """What a compiled DEFINE condition reads, for thread equivalence and row retention."""

    logical: set[tuple[bool, LabelSet, int]] = field(default_factory=set)  # (last?, labels, offset)
    aggregates: set[int] = field(default_factory=set)
    classifier: bool = False  # reads labels of rows (CLASSIFIER): compare label sequences


class ExpressionCompiler:
    """Compiles the expressions of one clause part (all DEFINEs share one, MEASURES another)."""

    def __init__(self, text: str, label_sets: Mapping[str | None, LabelSet], label_names: list[str],
                 *, clause: str, order_column: str | None) -> None:
        self.text = text
        self.label_sets = label_sets
        self.label_names = label_names
        self.clause = clause
        self.order_column = order_column
        self.aggregates: list[AggregateSpec] = []
        self.max_prev = 0
        self.max_next = 0
        self.deps = Dependencies()

    def compile_unguarded(self, node: E.Expr) -> Fn:
        """Like :meth:`compile`, without the TypeError translation (the caller does it, once per loop)."""
        return self._top(node)

    def compile(self, node: E.Expr) -> Fn:
        """Compile a top-level expression (records its dependencies in ``self.deps``)."""
        fn = self._top(node)
        source = str(node)

        def guarded(ctx: Context) -> Any:
            try:
                return fn(ctx)
            except TypeError as error:  # e.g. comparing a string with a number
                raise MatchRuntimeError(f"cannot evaluate {source}: {error}", match_number=ctx.match_number) from None

        return guarded

    # top mode ---------------------------------------------------------------------------------------
    def _top(self, node: E.Expr) -> Fn:
        if isinstance(node, E.Column):
            labels = self.label_sets[node.var]
            getter = self._column_getter(node)
            if labels is not None:
                self.deps.logical.add((True, labels, 0))
            if labels is not None and self.clause == "MEASURES":
                return _measure_read(True, labels, 0, False, getter)
            return _logical_read(lambda ctx: ctx.resolve(True, labels, 0, False), getter)
        if isinstance(node, E.Navigation):
            return self._navigation(node)
        if isinstance(node, E.Aggregate):
            return self._aggregate(node)
        if isinstance(node, E.Classifier):
            labels = self.label_sets[node.var]
            self.deps.classifier = True
            names = self.label_names

            def classifier(ctx: Context) -> Any:
                position = ctx.resolve(True, labels, 0, False)
                return None if position is None else _name(names, ctx.label_at(position))

            return classifier
        if isinstance(node, E.MatchRowtime):
            column = node.column or E.Column(None, self.order_column or "", node.start)
            getter = self._column_getter(column)
            return lambda ctx: _read(ctx, ctx.resolve(True, None, 0, True), getter)
        return self._generic(node, self._top)

    def _navigation(self, node: E.Navigation) -> Fn:
        if node.kind in ("FIRST", "LAST"):
            labels = self._arg_labels(node.arg)
            last, offset, final = node.kind == "LAST", node.offset, node.semantics == "FINAL"
            arg = self._row(node.arg)
            if labels is not None and not final:
                self.deps.logical.add((last, labels, offset))
            if isinstance(node.arg, E.Column) and labels is not None and self.clause == "MEASURES":
                return _measure_read(last, labels, offset, final, self._column_getter(node.arg))
            if isinstance(node.arg, E.Column):  # the common FIRST/LAST(v.col): no row-mode call
                return _logical_read(lambda ctx: ctx.resolve(last, labels, offset, final),
                                     self._column_getter(node.arg))
            return lambda ctx: _at(ctx, ctx.resolve(last, labels, offset, final), arg)
        # PREV / NEXT: physical offset from a logical position (by default LAST(var, 0))
        inner = node.arg
        if isinstance(inner, E.Navigation):
            base_last, base_offset = inner.kind == "LAST", inner.offset
            final = (inner.semantics or node.semantics) == "FINAL"
            labels = self._arg_labels(inner.arg)
            arg = self._row(inner.arg)
        else:
            base_last, base_offset, final = True, 0, node.semantics == "FINAL"
            labels = self._arg_labels(inner)
            arg = self._row(inner)
        if labels is not None and not final:
            self.deps.logical.add((base_last, labels, base_offset))
        step = -node.offset if node.kind == "PREV" else node.offset
        if step < 0:
            self.max_prev = max(self.max_prev, -step)
        else:
            self.max_next = max(self.max_next, step)

        def physical(ctx: Context) -> Any:
            base = ctx.resolve(base_last, labels, base_offset, final)
            return None if base is None else _at(ctx, base + step, arg, physical=True)

        return physical

    def _aggregate(self, node: E.Aggregate) -> Fn:
        if node.arg is None:
            labels = self.label_sets[node.star_var] if node.star_var else None
            arg = None
        else:
            labels = self._arg_labels(node.arg)
            arg = self._row(node.arg)
            if node.key is not None:  # MAX_BY(x, key): the fold reads (x, key) pairs
                if labels is None:
                    labels = self._arg_labels(node.key)
                value_fn, key_fn = arg, self._row(node.key)

                def arg(ctx: Context, position: int) -> Any:
                    return (value_fn(ctx, position), key_fn(ctx, position))
        plain = isinstance(node.arg, E.Column) and node.key is None
        getter = self._column_getter(node.arg) if plain else None  # type: ignore[arg-type]
        index = len(self.aggregates)
        self.aggregates.append(AggregateSpec(node.func, labels, arg, getter,
                                             aggregate_function(node.func, node.parameters)))
        self.deps.aggregates.add(index)
        final = node.semantics == "FINAL"
        return lambda ctx: ctx.aggregate(index, final)

    def _arg_labels(self, arg: E.Expr) -> LabelSet:
        for sub in arg.walk():
            if isinstance(sub, E.Column | E.Classifier) and sub.var is not None:
                return self.label_sets[sub.var]
        return None

    # row mode ---------------------------------------------------------------------------------------
    def _row(self, node: E.Expr) -> RowFn:
        if isinstance(node, E.Column):
            getter = self._column_getter(node)
            return lambda ctx, position: _read(ctx, position, getter)
        if isinstance(node, E.Classifier):
            self.deps.classifier = True
            names = self.label_names
            return lambda ctx, position: _name(names, ctx.label_at(position))
        if isinstance(node, E.Navigation):
            # FIRST/LAST inside PREV/NEXT is handled by _navigation; anything else was rejected by validate
            raise PatternValidationError(f"{node.kind} is not allowed here", text=self.text, position=node.start)
        if isinstance(node, E.Aggregate | E.MatchRowtime):
            raise PatternValidationError(f"{node} is not allowed inside a navigation or aggregate argument",
                                         text=self.text, position=node.start)
        return self._generic_row(node)

    def _generic_row(self, node: E.Expr) -> RowFn:
        # Reuse the generic combinators by threading the position through a tiny adapter context.
        children = {id(child): self._row(child) for child in node.children()}

        def compile_child(child: E.Expr) -> Fn:
            row_fn = children[id(child)]
            return lambda ctx: row_fn(ctx.outer, ctx.position)  # type: ignore[attr-defined]

        fn = self._generic(node, compile_child)
        return lambda ctx, position: fn(_RowFocus(ctx, position))

    # shared ------------------------------------------------------------------------------------------
    def _column_getter(self, node: E.Column) -> Callable[[Mapping[str, Any]], Any]:
        name = node.name
        key: str | None = None  # the row's spelling of the column, found on the first row
        text = self.text

        def get(row: Mapping[str, Any]) -> Any:
            nonlocal key
            if key is not None:
                return row.get(key)
            if name in row:
                key = name
            else:
                folded = [k for k in row if isinstance(k, str) and k.lower() == name.lower()]
                if len(folded) != 1:
                    raise PatternValidationError(
                        f"column {name} not found in the input row (columns: {', '.join(map(str, row))})",
                        text=text, position=node.start)
                key = folded[0]
            return row.get(key)

        get.resolved = lambda: key  # type: ignore[attr-defined]  # see fast.resolved_key
        return get

    def _generic(self, node: E.Expr, sub: Callable[[E.Expr], Fn]) -> Fn:
        if isinstance(node, E.Literal):
            value = node.value
            return lambda ctx: value
        if isinstance(node, E.MatchNumber):
            return lambda ctx: ctx.match_number
        if isinstance(node, E.Unary):
            operand = sub(node.operand)
            if node.op == "NOT":
                return lambda ctx: _not(operand(ctx))
            if node.op == "-":
                return lambda ctx: None if (v := operand(ctx)) is None else -v
            return operand
        if isinstance(node, E.Binary):
            left, right = sub(node.left), sub(node.right)
            op = node.op
            if op == "AND":
                return lambda ctx: sql_and(left, right, ctx)
            if op == "OR":
                return lambda ctx: sql_or(left, right, ctx)
            if op in ("=", "<>", "<", "<=", ">", ">="):
                return lambda ctx: sql_compare(op, left(ctx), right(ctx))
            return lambda ctx: sql_arith(op, left(ctx), right(ctx))
        if isinstance(node, E.IsNull):
            operand = sub(node.operand)
            negated = node.negated
            return lambda ctx: (operand(ctx) is None) != negated
        if isinstance(node, E.Between):
            operand, low, high = sub(node.operand), sub(node.low), sub(node.high)
            negated = node.negated

            def between(ctx: Context) -> Any:
                value = operand(ctx)
                result = _and_values(sql_compare(">=", value, low(ctx)), sql_compare("<=", value, high(ctx)))
                return _not(result) if negated else result

            return between
        if isinstance(node, E.InList):
            operand = sub(node.operand)
            items = [sub(item) for item in node.items]
            negated = node.negated

            def in_list(ctx: Context) -> Any:
                value = operand(ctx)
                if value is None:
                    return None
                saw_null = False
                for item in items:
                    candidate = item(ctx)
                    if candidate is None:
                        saw_null = True
                    elif candidate == value:
                        return not negated
                return None if saw_null else negated

            return in_list
        if isinstance(node, E.Case):
            operand = sub(node.operand) if node.operand is not None else None
            whens = [(sub(c), sub(r)) for c, r in node.whens]
            default = sub(node.default) if node.default is not None else (lambda ctx: None)

            def case(ctx: Context) -> Any:
                subject = operand(ctx) if operand is not None else _MISSING
                for condition, result in whens:
                    value = condition(ctx)
                    matched = value is True if subject is _MISSING else sql_compare("=", subject, value) is True
                    if matched:
                        return result(ctx)
                return default(ctx)

            return case
        if isinstance(node, E.Cast):
            operand = sub(node.operand)
            type_name = node.type_name
            source = str(node)

            def do_cast(ctx: Context) -> Any:
                try:
                    return cast(operand(ctx), type_name)
                except (ValueError, ArithmeticError) as error:
                    raise MatchRuntimeError(f"{source}: {error}", match_number=ctx.match_number) from None

            return do_cast
        if isinstance(node, E.Func):
            function = SCALAR_FUNCTIONS.get(node.name)
            if function is None:  # an engine function: only the engine computes it (row_functions)
                raise PatternValidationError(
                    f"{node} has no engine-free implementation: Spark computes it for each input row before "
                    "matching (timeweave.match_recognize, timeweave.sql, streaming, backfill)", text=self.text,
                    position=node.start)
            args = [sub(a) for a in node.args]
            impl = function.impl
            source = str(node)

            def call(ctx: Context) -> Any:
                try:
                    return impl(*(a(ctx) for a in args))
                except (ValueError, ArithmeticError) as error:  # e.g. element_at(arr, 0)
                    raise MatchRuntimeError(f"{source}: {error}", match_number=ctx.match_number) from None

            return call
        raise PatternValidationError(f"unsupported expression {node}", text=self.text, position=getattr(node, "start", 0))


class _RowFocus:
    """Adapter: lets the generic combinators run in row mode (position fixed by the enclosing call)."""

    __slots__ = ("match_number", "outer", "position")

    def __init__(self, outer: Context, position: int) -> None:
        self.outer = outer
        self.position = position
        self.match_number = outer.match_number


def _name(names: list[str], label: int | None) -> str | None:
    return None if label is None else names[label]


def _read(ctx: Context, position: int | None, getter: Callable[[Mapping[str, Any]], Any]) -> Any:
    if position is None:
        return None
    row = ctx.rows.get(position)
    return None if row is None else getter(row)


def _logical_read(resolve: Callable[[Context], int | None], getter: Callable[[Mapping[str, Any]], Any]) -> Fn:
    """``fn(ctx)`` reading one column at a logical position (FIRST/LAST, ``v.col``).

    Logical positions lie inside the match, so the row is buffered: it is read directly.
    """

    def read(ctx: Context) -> Any:
        position = resolve(ctx)
        if position is None:
            return None
        rows = ctx.rows
        return getter(rows.rows[position - rows.base])

    return read


def _measure_read(last: bool, labels: frozenset[int], offset: int, final: bool,
                  getter: Callable[[Mapping[str, Any]], Any]) -> Fn:
    """:func:`_logical_read` for MEASURES: ``MeasureContext.resolve`` inlined (the per-match hot path)."""

    def read(ctx: MeasureContext) -> Any:
        positions = ctx._positions.get(labels)
        if positions is None:
            positions = ctx.positions(labels)
        end = ctx.final_end if (final or not last) else ctx.current
        count = len(positions) if end == ctx.final_end else bisect_right(positions, end)
        if offset >= count:
            return None
        position = positions[count - 1 - offset] if last else positions[offset]
        rows = ctx.rows
        return getter(rows.rows[position - rows.base])

    return read  # type: ignore[return-value]


def _at(ctx: Context, position: int | None, arg: RowFn, physical: bool = False) -> Any:
    if position is None:
        return None
    if physical and ctx.rows.get(position) is None:
        return None  # outside the partition
    return arg(ctx, position)


def _not(value: Any) -> Any:
    return None if value is None else not value


def _and_values(a: Any, b: Any) -> Any:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def sql_and(left: Callable[[Any], Any], right: Callable[[Any], Any], ctx: Any) -> Any:
    """Three-valued ``left AND right`` on ``ctx`` (FALSE wins, then NULL), short-circuiting on FALSE.

    The one AND rule: the general evaluator and the fast path (:mod:`.fast`) both call it.

    >>> sql_and(lambda c: None, lambda c: False, None), sql_and(lambda c: None, lambda c: True, None)
    (False, None)
    """
    a = left(ctx)
    if a is False:
        return False
    return _and_values(a, right(ctx))


def sql_or(left: Callable[[Any], Any], right: Callable[[Any], Any], ctx: Any) -> Any:
    """Three-valued ``left OR right`` on ``ctx`` (TRUE wins, then NULL), short-circuiting on TRUE.

    The one OR rule: the general evaluator and the fast path (:mod:`.fast`) both call it.

    >>> sql_or(lambda c: None, lambda c: True, None), sql_or(lambda c: None, lambda c: False, None)
    (True, None)
    """
    a = left(ctx)
    if a is True:
        return True
    b = right(ctx)
    if b is True:
        return True
    if a is None or b is None:
        return None
    return False
