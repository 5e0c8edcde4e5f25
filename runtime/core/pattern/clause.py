"""A :class:`ClauseSpec` compiled for execution: program, DEFINE evaluator, thread signatures, MEASURES.

Built once per query (pure data + closures, cheap to rebuild after unpickling a running state).

>>> from timeweave.core.pattern.parser import parse_clause
>>> compiled = CompiledClause(parse_clause("MEASURES NEXT(B.x, 2) AS n PATTERN (A B+) DEFINE B AS PREV(B.x, 3) < B.x"))
>>> compiled.lookahead, compiled.lookbehind
(2, 3)
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from timeweave.core.pattern.budget import WORK_WEIGHTS
from timeweave.core.pattern.equivalence import Equivalence
from timeweave.core.pattern.errors import MatchRuntimeError
from timeweave.core.pattern.expressions import (
    AggregateSpec,
    DefineContext,
    Dependencies,
    ExpressionCompiler,
    Fn,
    LabelSet,
    MeasureContext,
    RowSource,
)
from timeweave.core.pattern.fast import FastBinding, FastProgram, FastRun
from timeweave.core.pattern.matcher import MatchResult, Run, RunCosts, Thread
from timeweave.core.pattern.program import Split, compile_pattern
from timeweave.core.pattern.spec import ClauseSpec, RowsPerMatch, SkipMode


class CompiledClause:
    """Everything the partition driver needs to run one clause."""

    def __init__(self, spec: ClauseSpec) -> None:
        self.spec = spec
        self.label_names = spec.labels
        self.program = compile_pattern(spec.pattern, self.label_names)
        ids = {name: i for i, name in enumerate(self.label_names)}
        label_sets: dict[str | None, LabelSet] = {None: None}
        label_sets.update({name: frozenset((i,)) for name, i in ids.items()})
        for subset in spec.subsets:
            label_sets[subset.name] = frozenset(ids[v] for v in subset.vars)
        self.label_sets = label_sets
        order_column = spec.order_by[0].column if spec.order_by else None

        # DEFINE: one compiler so all conditions share one aggregate-state tuple per thread
        define = ExpressionCompiler(spec.text, label_sets, self.label_names, clause="DEFINE", order_column=order_column)
        self.conditions: list[Fn | None] = [None] * len(self.label_names)
        dependencies: list[Dependencies | None] = [None] * len(self.label_names)
        for definition in spec.definitions:
            define.deps = Dependencies()
            self.conditions[ids[definition.var]] = define.compile(definition.condition)
            dependencies[ids[definition.var]] = define.deps
        self.define_aggregates: list[AggregateSpec] = define.aggregates
        self.initial_aggregates = tuple(a.initial() for a in self.define_aggregates)
        # per label: which DEFINE aggregates a row of this label feeds
        self._feeds = [
            tuple(i for i, a in enumerate(self.define_aggregates) if a.labels is None or label in a.labels)
            for label in range(len(self.label_names))
        ]
        self.equivalence = Equivalence(self.program, dependencies)

        measures = ExpressionCompiler(spec.text, label_sets, self.label_names, clause="MEASURES",
                                      order_column=order_column)
        self.measures: list[tuple[str, Fn, str]] = [
            (m.name, measures.compile_unguarded(m.expr), str(m.expr)) for m in spec.measures]
        self.measure_aggregates = measures.aggregates

        # rows the driver must keep before a run's start / have after a row before consuming it
        self.lookbehind = max(define.max_prev, measures.max_prev)
        self.lookahead = max(define.max_next, measures.max_next, 1 if self.program.has_end_anchor else 0)
        skip = spec.after_match_skip
        self.skip_labels: LabelSet = label_sets[skip.var] if skip.var is not None else None
        self.past_last_row = skip.mode is SkipMode.PAST_LAST_ROW
        self.within: timedelta | None = spec.within
        # the fast path (None: this clause needs the general VM; see timeweave.core.pattern.fast)
        self.fast: FastProgram | None = FastProgram.build(self.program, spec, label_sets, self.label_names,
                                                          order_column)
        # a fast run may move on from a failed attempt by itself unless failed attempts output rows
        self.rolling = spec.rows_per_match is not RowsPerMatch.ALL_WITH_UNMATCHED
        self.run_costs = self._run_costs(spec, ids)

    def _run_costs(self, spec: ClauseSpec, ids: dict[str, int]) -> RunCosts:
        """The general VM's work units per operation for this clause (:class:`~timeweave.core.pattern.budget.WorkWeights`)."""
        weights = WORK_WEIGHTS
        nodes = [0] * len(self.label_names)
        for definition in spec.definitions:
            nodes[ids[definition.var]] = sum(1 for _ in definition.condition.walk())
        # an evaluation updates the label's aggregates and then reads every DEFINE aggregate's result
        read_back = len(self.define_aggregates)
        label = tuple(weights.evaluation + weights.per_nodes(nodes[i])
                      + (weights.aggregate * (len(self._feeds[i]) + read_back) if read_back else 0)
                      for i in range(len(self.label_names)))
        visit = tuple(weights.visit + weights.signature_part * self.equivalence.classifier_parts(pc)
                      + (weights.split if isinstance(self.program.at(pc), Split) else 0)
                      for pc in range(len(self.program)))
        return RunCosts(weights.attempt, weights.step, label, visit)

    # -- the matcher's LabelEvaluator ------------------------------------------------------------------
    def bind(self, rows: RowSource) -> _Evaluator:
        return _Evaluator(self, rows)

    def new_run(self, rows: RowSource, start: int, match_number: int,
                fast: FastBinding | None = None) -> Run | FastRun:
        """A match attempt from ``start``: a :class:`FastRun` on ``fast`` when given, else the general VM."""
        if fast is not None:
            return FastRun(fast, start, match_number, rolling=self.rolling)
        evaluator = self.bind(rows)
        return Run(
            self.program,
            start,
            evaluator,
            signature=self.equivalence.signature,
            at_partition_start=start == 0,
            match_number=match_number,
            initial_aggregates=self.initial_aggregates,
            at_end=rows.length is not None and start >= rows.length,
            costs=self.run_costs,
        )

    # -- MEASURES ---------------------------------------------------------------------------------------
    def measure_context(self, rows: RowSource, match: MatchResult, match_number: int) -> MeasureContext:
        return MeasureContext(rows, match.start, match.labels, match_number, self.measure_aggregates)

    def evaluate_measures(self, ctx: MeasureContext, current: int) -> dict[str, Any]:
        ctx.current = current
        out: dict[str, Any] = {}
        for name, fn, source in self.measures:
            try:
                out[name] = fn(ctx)
            except TypeError as error:  # e.g. comparing a string with a number
                raise MatchRuntimeError(f"cannot evaluate {source}: {error}", match_number=ctx.match_number) from None
        return out

    def skip_target(self, match: MatchResult) -> int | None:
        """Position AFTER MATCH SKIP TO FIRST/LAST v lands on (None: v matched no row)."""
        mode = self.spec.after_match_skip.mode
        wanted = self.skip_labels
        positions = [match.start + i for i, label in enumerate(match.labels) if wanted is None or label in wanted]
        if not positions:
            return None
        return positions[0] if mode is SkipMode.TO_FIRST else positions[-1]


class _Evaluator:
    """Binds a compiled clause to a partition's rows; implements the matcher's LabelEvaluator."""

    def __init__(self, clause: CompiledClause, rows: RowSource) -> None:
        self.clause = clause
        self.rows = rows

    def evaluate(self, thread: Thread, label: int, position: int, run: Run) -> tuple[Any, ...] | None:
        clause = self.clause
        aggregates = thread.aggregates
        ctx = DefineContext(self.rows, run.start, position, thread.labels, label, aggregates, run.match_number)
        if aggregates:
            try:
                aggregates = self._running(aggregates, clause._feeds[label], ctx, position)
                ctx.aggregates = tuple(
                    spec.result(state) for spec, state in zip(clause.define_aggregates, aggregates, strict=True)
                )
            except TypeError as error:  # e.g. SUM or AVG over strings, MIN over mixed types
                raise MatchRuntimeError(f"cannot aggregate in DEFINE: {error}", match_number=run.match_number) from None
        condition = clause.conditions[label]
        if condition is not None and condition(ctx) is not True:
            return None
        return aggregates

    def _running(self, states: tuple[Any, ...], feeds: tuple[int, ...], ctx: DefineContext,
                 position: int) -> tuple[Any, ...]:
        """Aggregate states after adding the current row: it already counts for the candidate label."""
        if not feeds:
            return states
        updated = list(states)
        for index in feeds:
            spec = self.clause.define_aggregates[index]
            updated[index] = spec.add(updated[index], spec.value_at(ctx, position))
        return tuple(updated)
