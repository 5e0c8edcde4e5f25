"""Pattern matching over one ordered partition: match attempts, AFTER MATCH SKIP, output rows.

:class:`PartitionMatcher` is the incremental driver (rows pushed one at a time, output as soon as
it is decided); :func:`match_partition` wraps it as a streaming iterator.  The rules follow the SQL
standard as Trino implements them (``PatternRecognitionPartition``):

* a match is attempted from each candidate start row in order; the first (leftmost) start with a
  match wins, and within it the most preferred match (see :mod:`~timeweave.core.pattern.matcher`);
* no match from row r: with ``WITH UNMATCHED ROWS`` the row is output with NULL measures unless an
  earlier match already covered it; the next attempt starts at r + 1;
* an empty match at r: output (measures over no rows, e.g. ``COUNT(*) = 0``) unless ``OMIT EMPTY
  MATCHES``; it takes a match number; the next attempt starts at r + 1;
* a non-empty match: ONE ROW PER MATCH outputs the partition columns and the measures (evaluated at
  the last row, so RUNNING = FINAL); ALL ROWS PER MATCH outputs every matched row outside
  ``{- -}`` exclusions: partition columns, ORDER BY columns, measures (RUNNING up to that row),
  then the remaining input columns;
* after a non-empty match: PAST LAST ROW resumes after its last row (the standard's default),
  TO NEXT ROW at its second row, TO FIRST/LAST v at the first/last row matched to v; the standard's
  runtime errors apply: v matched no row, or the target is the match's first row (an endless loop);
* ``WITHIN`` (Flink): an attempt stops taking rows once a row is ``within`` or more after the
  attempt's first row, so every match spans strictly less than ``within``;
* rows are released once no attempt or navigation (``PREV`` reach) can need them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from numbers import Real
from typing import Any

from timeweave.core.bad_rows import reject_reason
from timeweave.core.errors import SpecError
from timeweave.core.pattern.budget import DEFAULT_BUDGET, WORK_WEIGHTS, MatchBudget, MatchBudgetExceeded
from timeweave.core.pattern.clause import CompiledClause
from timeweave.core.pattern.errors import MatchRuntimeError, PatternValidationError
from timeweave.core.pattern.expressions import RowSource
from timeweave.core.pattern.fast import FastBinding, FastMeasures, FastRun, chain_to_list, dict_rows
from timeweave.core.pattern.matcher import MatchResult, Run
from timeweave.core.pattern.spec import ClauseSpec, RowsPerMatch, SkipMode
from timeweave.core.pattern.subqueries import reject as reject_subqueries


def compile_clause(spec: ClauseSpec) -> CompiledClause:
    """Compile ``spec`` once per process (specs are frozen and hashable).

    The text is part of the key: equal specs parsed from different texts must report errors
    against their own text.
    """
    return _compile(spec, spec.text)


@lru_cache(maxsize=64)
def _compile(spec: ClauseSpec, text: str) -> CompiledClause:
    reject_subqueries(spec, "the row-pattern core")  # once per clause, not on every call (compile_clause is hot)
    return CompiledClause(spec)


@lru_cache(maxsize=64)
def _fast_measures(spec: ClauseSpec, text: str) -> FastMeasures | None:
    """The clause's compiled ONE ROW PER MATCH measures (None: the general evaluator); once per process."""
    clause = compile_clause(spec)
    return FastMeasures.build(spec, clause.label_sets, clause.label_names,
                              spec.order_by[0].column if spec.order_by else None)


def elapsed(later: Any, earlier: Any) -> timedelta:
    """Time between two ORDER BY values: datetimes, or integers counted in microseconds."""
    if isinstance(later, datetime) or isinstance(later, timedelta):
        return later - earlier
    if isinstance(later, Real):  # integers (numpy ones too) count microseconds
        return timedelta(microseconds=float(later - earlier))
    raise MatchRuntimeError(f"WITHIN needs a timestamp (or integer microseconds) ORDER BY column, got {later!r}")


class WorkMeter:
    """The work a partition's matching has spent, against its :class:`~timeweave.core.pattern.budget.MatchBudget`.

    ``work`` counts units (see :mod:`~timeweave.core.pattern.budget`), ``reached`` is one past the furthest
    row an attempt has read; ``exhausted`` is set by a fast run that stopped at a spent budget.
    """

    __slots__ = ("budget", "exhausted", "reached", "work")

    def __init__(self, budget: MatchBudget, work: int = 0, reached: int = 0) -> None:
        self.budget = budget
        self.work = work
        self.reached = reached
        self.exhausted = False


class PartitionMatcher:
    """Incremental matcher for one partition: :meth:`push` rows in order, then :meth:`finish`.

    The state (rows still needed, the running attempt, counters) is plain data and pickles; the
    compiled clause is re-attached on unpickling by :meth:`rebind`.

    Matching is bounded by ``budget`` (:class:`~timeweave.core.pattern.budget.MatchBudget`; None: the
    default).  When it runs out, :class:`~timeweave.core.pattern.budget.MatchBudgetExceeded` is raised; with
    ``dead_letter=True`` the matcher instead keeps the output decided so far, moves the rows from the start
    of the attempt in progress to :attr:`rejected` (every later row goes there too) and records the error
    in :attr:`exceeded`; the caller takes them with :meth:`take_rejected`.

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> matcher = PartitionMatcher(parse_clause("MEASURES COUNT(*) AS n PATTERN (A B+) DEFINE B AS B.x > PREV(B.x)"))
    >>> [out for x in (1, 2, 3, 1) for out in matcher.push({"x": x})] + matcher.finish()
    [{'n': 3}]
    """

    def __init__(self, spec: ClauseSpec, *, fast: bool = True, budget: MatchBudget | None = None,
                 dead_letter: bool = False, time_text: Callable[[Any], str] | None = None) -> None:
        self.spec = spec
        # how the budget's reason shows the event time (a door that carries timestamps as integers says so)
        self.time_text = time_text
        self.meter = WorkMeter(budget or DEFAULT_BUDGET)
        self.dead_letter = dead_letter
        self.exceeded: MatchBudgetExceeded | None = None
        self.rejected: list[Mapping[str, Any]] = []
        self.clause = compile_clause(spec)
        self.rows = RowSource()
        self.next_start = 0
        self.use_fast = fast  # False: always the general VM (the differential tests compare both)
        self._fast: FastBinding | None = None
        self._measures: FastMeasures | None = None  # compiled ONE ROW PER MATCH measures (fast path only)
        self.run: Run | FastRun | None = None
        self.match_number = 1
        self.last_matched = -1  # last row covered by an output match (WITH UNMATCHED ROWS)
        self.ended = False
        self._time_column = spec.order_by[0].column if spec.order_by else None
        self._checked_columns = False

    # -- input -------------------------------------------------------------------------------------
    def push(self, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Add the partition's next row (in ORDER BY order); returns the rows now decided."""
        if self.ended:
            raise RuntimeError("push() after finish()")
        if self.exceeded is not None:
            self.rejected.append(row)
            return []
        self.rows.rows.append(row)
        return as_dicts(self._drive())

    def push_many(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Add the partition's next rows (in ORDER BY order); returns the rows now decided.

        The same output as pushing them one by one, with one drive of the matcher for all.
        """
        return as_dicts(self.push_many_blocks(rows))

    def push_many_blocks(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any] | OutputBlock]:
        """:meth:`push_many`, with runs of output rows possibly given as :class:`OutputBlock` columns.

        For callers that want columns (the Arrow door): no dict per row is built for them.
        :func:`as_dicts` turns the list into :meth:`push_many`'s.
        """
        if self.ended:
            raise RuntimeError("push_many() after finish()")
        if self.exceeded is not None:
            self.rejected.extend(rows)
            return []
        self.rows.rows.extend(rows)
        return self._drive()

    def finish(self) -> list[dict[str, Any]]:
        """Declare the end of the partition; returns the remaining output."""
        return as_dicts(self.finish_blocks())

    def finish_blocks(self) -> list[dict[str, Any] | OutputBlock]:
        """:meth:`finish`, with runs of output rows possibly given as :class:`OutputBlock` columns."""
        if not self.ended:
            self.ended = True
            self.rows.length = self.rows.available
        if self.exceeded is not None:
            return []
        return self._drive()

    def close_attempt(self) -> list[dict[str, Any]]:
        """Conclude the attempt in progress with what it matched so far (no later row can join it).

        The streaming operator calls this when the watermark passes the attempt's WITHIN deadline.
        """
        if self.run is None or self.exceeded is not None:
            return []
        self.run.stop()
        return as_dicts(self._drive())

    def take_rejected(self) -> list[Mapping[str, Any]]:
        """The rows sent to the dead letter since the last call (all with the reason ``exceeded.reason``).

        >>> from timeweave.core.pattern.budget import MatchBudget
        >>> from timeweave.core.pattern.parser import parse_clause
        >>> spec = parse_clause("ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+ B) DEFINE A AS A.v > 0, B AS B.v < 0")
        >>> matcher = PartitionMatcher(spec, budget=MatchBudget(base_work=10, work_per_row=1), dead_letter=True)
        >>> matcher.push_many([{"t": t, "v": 1} for t in range(20)]) + matcher.finish()
        []
        >>> [row["t"] for row in matcher.take_rejected()][:3], matcher.exceeded.position
        ([1, 2, 3], 19)
        """
        rejected, self.rejected = self.rejected, []
        return rejected

    def __getstate__(self) -> dict[str, Any]:
        state = dict(vars(self))
        del state["clause"]
        del state["_fast"]
        state.pop("time_text", None)
        state.pop("_measures", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("use_fast", True)  # states pickled before the fast path existed
        state.setdefault("_fast", None)
        state.setdefault("_measures", None)
        state.setdefault("meter", WorkMeter(DEFAULT_BUDGET))
        state.setdefault("dead_letter", False)
        state.setdefault("exceeded", None)
        state.setdefault("rejected", [])
        state.setdefault("time_text", None)
        vars(self).update(state)
        self.rebind()

    def to_state(self) -> dict[str, Any]:
        """The matcher as plain data (:mod:`timeweave.core.state_codec`), without its clause (:meth:`from_state`
        takes it): the rows still needed, the attempt in progress, the counters.

        >>> from timeweave.core.pattern.parser import parse_clause
        >>> spec = parse_clause("MEASURES COUNT(*) AS n PATTERN (A B+) DEFINE B AS B.x > PREV(B.x)")
        >>> matcher = PartitionMatcher(spec); matcher.push_many([{"x": 1}, {"x": 2}])
        []
        >>> again = PartitionMatcher.from_state(matcher.to_state(), spec)
        >>> again.push({"x": 3}) + again.push({"x": 1}) + again.finish()
        [{'n': 3}]
        """
        rows = self.rows
        return {
            "rows": rows.rows if rows.rows.__class__ is list else list(rows.rows), "base": rows.base,
            "length": rows.length, "next_start": self.next_start, "use_fast": self.use_fast,
            "run": None if self.run is None else self.run.to_state(), "match_number": self.match_number,
            "last_matched": self.last_matched, "ended": self.ended, "time_column": self._time_column,
            "checked_columns": self._checked_columns,
            "work": self.meter.work, "reached": self.meter.reached,
            "exceeded": None if self.exceeded is None else [
                    self.exceeded.pattern, self.exceeded.position, self.exceeded.time, self.exceeded.detail],
            "rejected": list(self.rejected),
        }

    @classmethod
    def from_state(cls, data: Any, spec: ClauseSpec, *, budget: MatchBudget | None = None,
                   dead_letter: bool = False) -> PartitionMatcher:
        """The matcher :meth:`to_state` gave, bound to ``spec`` (the clause it was created with).

        ``budget`` and ``dead_letter`` are the caller's (configuration, not state); the work spent is state.
        """
        from timeweave.core.state_data import expect

        expect(isinstance(data, dict), "matcher state: expected a map")
        matcher = cls.__new__(cls)
        matcher.spec = spec
        work, reached = data.get("work", 0), data.get("reached", 0)  # states written before the budget: none spent
        expect(type(work) is int and type(reached) is int, "matcher state: work and reached must be integers")
        matcher.meter = WorkMeter(budget or DEFAULT_BUDGET, work, reached)
        matcher.dead_letter = dead_letter
        matcher.time_text = None
        exceeded = data.get("exceeded")
        expect(exceeded is None or (isinstance(exceeded, list) and len(exceeded) == 4
                                    and isinstance(exceeded[0], str) and type(exceeded[1]) is int
                                    and isinstance(exceeded[3], str)), "matcher state: bad budget record")
        matcher.exceeded = None if exceeded is None else MatchBudgetExceeded(*exceeded)
        rejected = data.get("rejected", [])
        expect(isinstance(rejected, list) and all(isinstance(row, dict) for row in rejected),
               "matcher state: rejected rows must be maps")
        matcher.rejected = rejected
        rows = RowSource()
        rows.rows, rows.base, rows.length = data["rows"], data["base"], data["length"]
        expect(isinstance(rows.rows, list) and type(rows.base) is int
               and (rows.length is None or type(rows.length) is int), "matcher state: bad rows")
        expect(all(isinstance(row, dict) for row in rows.rows), "matcher state: rows must be maps")
        matcher.rows = rows
        matcher.next_start, matcher.match_number = data["next_start"], data["match_number"]
        matcher.last_matched = data["last_matched"]
        expect(all(type(v) is int for v in (matcher.next_start, matcher.match_number, matcher.last_matched)),
               "matcher state: counters must be integers")
        matcher.use_fast, matcher.ended = bool(data["use_fast"]), bool(data["ended"])
        matcher._time_column, matcher._checked_columns = data["time_column"], bool(data["checked_columns"])
        run = data["run"]
        expect(run is None or (isinstance(run, dict) and run.get("kind") in ("vm", "fast")),
               "matcher state: bad match attempt")
        if run is None:
            matcher.run = None
        elif run["kind"] == "fast":
            matcher.run = FastRun.from_state(run)
        else:
            matcher.run = Run.from_state(run, compile_clause(spec).program)
        matcher._fast = None
        matcher._measures = None
        if isinstance(matcher.run, FastRun):
            expect(matcher.use_fast and compile_clause(spec).fast is not None,
                   "matcher state: a fast-path attempt for a clause without a fast path")
        matcher.rebind()
        return matcher

    def rebind(self) -> None:
        self.clause = compile_clause(self.spec)
        self._fast = None
        fast = self._fast_binding()
        if isinstance(self.run, FastRun):
            assert fast is not None  # the same spec compiles to the same fast program
            self.run.attach(fast)
        elif self.run is not None:
            self.run.rebind(self.clause.bind(self.rows), self.clause.equivalence.signature, self.clause.run_costs)

    def _fast_binding(self) -> FastBinding | None:
        if self._fast is None and self.use_fast and self.clause.fast is not None:
            self._fast = self.clause.fast.bind(self.rows)
            self._measures = _fast_measures(self.spec, self.spec.text)
        return self._fast

    # -- the loop ------------------------------------------------------------------------------------
    def _drive(self) -> list[dict[str, Any] | OutputBlock]:
        out: list[dict[str, Any] | OutputBlock] = []
        clause = self.clause
        rows = self.rows
        fast = self._fast_binding()
        bulk = fast is not None and clause.within is None  # WITHIN is checked row by row below
        # a bulk run may also roll past matches when their output needs no more than compiled measures
        # (SKIP TO FIRST/LAST v: the run asks _skip_to per match and stops at one whose skip fails)
        collect = bulk and clause.rolling and self._measures is not None
        skip_to = None if self.spec.after_match_skip.mode in (SkipMode.PAST_LAST_ROW, SkipMode.TO_NEXT_ROW) \
            else self._skip_to
        meter = self.meter
        budget = meter.budget
        while True:
            if self.run is None:
                if self.next_start >= rows.available:
                    break  # the next attempt needs its first row
                # an attempt that re-reads rows checks the budget first (FastRun.advance does the same)
                if self.next_start < meter.reached and meter.work > budget.allowance(meter.reached):
                    return self._exhaust(out, self.next_start, self._work_detail())
                self.run = clause.new_run(rows, self.next_start, self.match_number, fast)
                if self.run.__class__ is Run:
                    # the attempt's first closure (the instructions followed before its first row) is work
                    # too, also when the attempt ends at once (an empty match: no step would charge it); it
                    # is at row next_start, which counts as read
                    meter.work += self.run.work  # type: ignore[union-attr]
                    self.run.work = 0  # type: ignore[union-attr]
                    if self.next_start >= meter.reached:
                        meter.reached = self.next_start + 1
                    if meter.work > budget.allowance(meter.reached):
                        return self._exhaust(out, self.next_start, self._work_detail())
            run = self.run
            if bulk:
                assert isinstance(run, FastRun)
                limit = rows.available if self.ended else rows.available - clause.lookahead
                if collect:
                    matches: list[tuple[int, list[int]]] = []
                    run.advance(limit, matches, past_last_row=clause.past_last_row, skip_to=skip_to, meter=meter)
                    if matches:
                        out.append(self._collected(matches))
                else:
                    run.advance(limit, meter=meter)
                if meter.exhausted:
                    meter.exhausted = False
                    return self._exhaust(out, run.start, self._work_detail())
                if not run.finished:
                    if not self.ended or run.position < rows.available:
                        if run.position == run.start:  # rolled on to an attempt that has not begun
                            self.next_start = run.start
                            self.run = None
                        rows.release_before(run.start - clause.lookbehind)
                        return out
                    run.stop()
            while not run.finished:
                position = run.position
                if self.ended and position >= rows.available:
                    run.stop()
                    break
                if not self.ended and position + clause.lookahead >= rows.available:
                    return out  # wait: DEFINE may read rows up to `lookahead` ahead, `$` needs to know the end
                if clause.within is not None and position > run.start:
                    start_time = self._time(run.start)
                    if elapsed(self._time(position), start_time) >= clause.within:
                        run.stop()
                        break
                threads = len(run.threads)
                run.step(at_end=self.ended and position == rows.available - 1)
                # checked after every row: a single attempt of the general VM can grow without bound
                # ((A|B){1000} with AVG in DEFINE); the run counts its units (budget.WorkWeights: a row step,
                # each thread evaluated, each instruction followed, each signature computed), the fast path
                # its row price per thread stepped
                if run.__class__ is Run:
                    meter.work += run.work  # type: ignore[union-attr]
                    run.work = 0  # type: ignore[union-attr]
                else:
                    meter.work += threads * run.binding.row_cost  # type: ignore[union-attr]
                if position >= meter.reached:
                    meter.reached = position + 1
                if len(run.threads) > budget.max_threads:
                    return self._exhaust(out, run.start, f"{len(run.threads):,} live threads > max_threads "
                                                         f"{budget.max_threads:,}")
                if meter.work > budget.allowance(meter.reached):
                    return self._exhaust(out, run.start, self._work_detail())
            self.run = None
            concluded = self._conclude(run)
            if not collect:
                # output rows are work too (ALL ROWS PER MATCH with SKIP TO NEXT ROW outputs O(n^2) rows).  Not
                # when a fast run collects matches: it concludes them inside advance() or here depending on
                # where a call ends, and a count must not depend on the batching (one row per match there)
                # ... and so is reading the match back for its measures (its label list, its MeasureContext)
                meter.work += len(concluded) * self._row_cost + self._matched_rows * WORK_WEIGHTS.matched_row
            out.extend(concluded)
            rows.release_before(self.next_start - clause.lookbehind)
        return out

    @property
    def _row_cost(self) -> int:
        """Work units of one output row: building it and each measure."""
        return WORK_WEIGHTS.output_row + WORK_WEIGHTS.measure * len(self.spec.measures)

    def _work_detail(self) -> str:
        meter, budget = self.meter, self.meter.budget
        return (f"work {meter.work:,} > {budget.allowance(meter.reached):,} units (base_work {budget.base_work:,} "
                f"+ work_per_row {budget.work_per_row:,} x {meter.reached:,} rows read)")

    def _exhaust(self, out: list[dict[str, Any] | OutputBlock], first: int, detail: str
                 ) -> list[dict[str, Any] | OutputBlock]:
        """The budget ran out with the attempt from row ``first`` in progress: raise, or dead-letter the rest.

        The row named is the furthest one read (where the work was spent); its event time is named too.
        """
        position = self.meter.reached - 1
        time = None
        if self._time_column is not None and self.rows.get(position) is not None:
            value = _column(self.rows.get(position), self._time_column)  # type: ignore[arg-type]
            time = None if value is None else (self.time_text or str)(value)
        error = MatchBudgetExceeded(str(self.spec.pattern), position, time, detail)
        if not self.dead_letter:
            raise error
        self.exceeded = error
        self.run = None
        rows = self.rows
        self.rejected.extend(rows.rows[max(first - rows.base, 0):])
        rows.release_before(rows.available)
        self.next_start = rows.available
        return out

    def _time(self, position: int) -> Any:
        row = self.rows.get(position)
        assert row is not None and self._time_column is not None  # validate: WITHIN needs ORDER BY
        return _column(row, self._time_column)

    def _conclude(self, run: Run | FastRun) -> list[dict[str, Any]]:
        """Output for one finished attempt, and where the next one starts (``_matched_rows``: its match's length)."""
        self._matched_rows = 0
        measures = self._measures
        if measures is not None and isinstance(run, FastRun) and run.result is not None and run.result[0] is not None:
            # a non-empty fast-path match, ONE ROW PER MATCH: the compiled measures, no MeasureContext
            start = run.start
            labels = chain_to_list(run.result[0])
            self._matched_rows = len(labels)
            number = self.match_number
            self.match_number += 1
            rows = self.rows
            out = [self._one_row(start, measures.evaluate(rows.rows, start - rows.base, labels, number))]
            end = start + len(labels) - 1
            if end > self.last_matched:
                self.last_matched = end
            self.next_start = (end + 1 if self.clause.past_last_row
                               else self._skip(MatchResult(start, tuple(labels)), number))
            return out
        spec = self.spec
        match = run.match()
        start = run.start
        if match is None:
            self.next_start = start + 1
            if spec.rows_per_match is RowsPerMatch.ALL_WITH_UNMATCHED and start > self.last_matched:
                return [self._all_rows_row(start, None)]
            return []
        number = self.match_number
        self.match_number += 1
        if match.empty:
            self.next_start = start + 1
            if not spec.rows_per_match.shows_empty:
                return []
            ctx = self.clause.measure_context(self.rows, match, number)
            measures = self.clause.evaluate_measures(ctx, start - 1)
            if spec.rows_per_match.all_rows:
                return [self._all_rows_row(start, measures)]
            return [self._one_row(start, measures)]
        self._matched_rows = len(match.labels)
        out = self._match_rows(match, number)
        end = start + len(match.labels) - 1
        if end > self.last_matched:
            self.last_matched = end
        self.next_start = end + 1 if self.clause.past_last_row else self._skip(match, number)
        return out

    def _collected(self, matches: list[tuple[int, list[int]]]) -> OutputBlock:
        """Output rows of matches a fast run rolled past (non-empty, ONE ROW PER MATCH, compiled measures).

        The measures are evaluated for all the matches at once (one call per measure); the rows are
        the partition columns of each match's first row, then the measures, by column.
        """
        measures = self._measures
        assert measures is not None
        rows = self.rows
        buffered, base = rows.rows, rows.base
        values = measures.evaluate_many(buffered, base, matches, self.match_number)
        self.match_number += len(matches)
        partition_by = self.spec.partition_by
        firsts = [buffered[start - base] for start, _ in matches]
        keys = [[first[column] if column in first else _column(first, column) for first in firsts]
                for column in partition_by]
        out = OutputBlock((*partition_by, *measures.names), [*keys, *values], len(matches))
        end = max(start + len(labels) for start, labels in matches) - 1
        if end > self.last_matched:
            self.last_matched = end
        start, labels = matches[-1]
        mode = self.spec.after_match_skip.mode
        if mode in (SkipMode.PAST_LAST_ROW, SkipMode.TO_NEXT_ROW):
            self.next_start = start + len(labels) if self.clause.past_last_row else start + 1
        else:
            self.next_start = self._skip(MatchResult(start, tuple(labels)), self.match_number - 1)
        return out

    def _skip_to(self, start: int, labels: list[int]) -> int | None:
        """The next start after the match ``labels`` from ``start`` for SKIP TO FIRST/LAST v (None: the
        skip fails, and :meth:`_skip` raises its error when the driver concludes the match)."""
        target = self.clause.skip_target(MatchResult(start, tuple(labels)))
        return None if target is None or target == start else target

    def _skip(self, match: MatchResult, number: int) -> int:
        skip = self.spec.after_match_skip
        if skip.mode is SkipMode.PAST_LAST_ROW:
            return match.end + 1
        if skip.mode is SkipMode.TO_NEXT_ROW:
            return match.start + 1
        target = self.clause.skip_target(match)
        where = f"AFTER MATCH SKIP {skip.mode.value} {skip.var}"
        if target is None:
            raise MatchRuntimeError(f"{where} failed: {skip.var} is not present in the match", match_number=number)
        if target == match.start:
            raise MatchRuntimeError(f"{where} failed: cannot skip to the first row of the match "
                                    "(the next attempt would find the same match forever)", match_number=number)
        return target

    # -- output rows ----------------------------------------------------------------------------------
    def _match_rows(self, match: MatchResult, number: int) -> list[dict[str, Any]]:
        ctx = self.clause.measure_context(self.rows, match, number)
        if not self.spec.rows_per_match.all_rows:
            return [self._one_row(match.start, self.clause.evaluate_measures(ctx, ctx.final_end))]
        excluded: set[int] = set()
        for first, end in match.exclusions:
            excluded.update(range(first, end))
        out = []
        for offset in range(len(match.labels)):
            if offset in excluded:
                continue
            position = match.start + offset
            out.append(self._all_rows_row(position, self.clause.evaluate_measures(ctx, position)))
        return out

    def _one_row(self, start: int, measures: dict[str, Any]) -> dict[str, Any]:
        row = self.rows.get(start)
        assert row is not None
        result = {column: _column(row, column) for column in self.spec.partition_by}
        result.update(measures)
        return result

    def _all_rows_row(self, position: int, measures: dict[str, Any] | None) -> dict[str, Any]:
        row = self.rows.get(position)
        assert row is not None
        spec = self.spec
        if measures is None:  # unmatched row: NULL measures
            measures = {m.name: None for m in spec.measures}
        if not self._checked_columns:
            clash = [m.name for m in spec.measures if m.name in row]
            if clash:
                raise PatternValidationError(
                    f"measure {clash[0]} has the name of an input column; ALL ROWS PER MATCH outputs both",
                    text=spec.text, position=next(m.start for m in spec.measures if m.name == clash[0]))
            self._checked_columns = True
        result = {column: _column(row, column) for column in spec.partition_by}
        for key in spec.order_by:
            result[key.column] = _column(row, key.column)
        result.update(measures)
        for column, value in row.items():
            result.setdefault(column, value)
        return result


class OutputBlock:
    """Consecutive output rows by column: ``columns[i][j]`` is row j's value of ``names[i]``.

    A name may repeat (a measure named like a partition column): as in a dict built in column
    order, the row's value is the last column's and its place the first's.  The row count is
    stored, not read off a column: a clause with no PARTITION BY and no MEASURES outputs rows of
    zero columns (one per match, as Trino does), and a block of those has no column to count.

    >>> as_dicts([{"k": 0}, OutputBlock(("k", "n", "k"), [[1, 2], [10, 20], [5, 6]], 2)])
    [{'k': 0}, {'k': 5, 'n': 10}, {'k': 6, 'n': 20}]
    >>> as_dicts([OutputBlock((), [], 3)])
    [{}, {}, {}]
    """

    __slots__ = ("columns", "count", "names")

    def __init__(self, names: tuple[str, ...], columns: list[list[Any]], count: int) -> None:
        self.names = names
        self.columns = columns
        self.count = count

    def __len__(self) -> int:
        return self.count

    def column(self, name: str) -> list[Any] | None:
        """The values of ``name`` (its last column), None when the block has no such column."""
        for index in range(len(self.names) - 1, -1, -1):
            if self.names[index] == name:
                return self.columns[index]
        return None


def as_dicts(out: list[dict[str, Any] | OutputBlock]) -> list[dict[str, Any]]:
    """Output rows as dicts, blocks expanded in place (the list itself when it holds no block)."""
    if not any(item.__class__ is OutputBlock for item in out):
        return out  # type: ignore[return-value]
    rows: list[dict[str, Any]] = []
    for item in out:
        if item.__class__ is OutputBlock:
            if item.names:  # type: ignore[union-attr]
                rows.extend(dict_rows(item.names)(item.columns))  # type: ignore[union-attr]
            else:  # zero-column rows: the count is all there is
                rows.extend({} for _ in range(len(item)))  # type: ignore[arg-type]
        else:
            rows.append(item)  # type: ignore[arg-type]
    return rows


def _column(row: Mapping[str, Any], name: str) -> Any:
    if name in row:
        return row[name]
    folded = [key for key in row if isinstance(key, str) and key.lower() == name.lower()]
    if len(folded) != 1:
        raise SpecError("partition_by/order_by", f"column {name} not found in the input row "
                        f"(columns: {', '.join(map(str, row))})", where="match_recognize")
    return row[folded[0]]


_CHUNK_ROWS = 256  # rows match_partition pushes at once (output stays lazy, a chunk at a time)


def match_partition(
    spec: ClauseSpec, rows: Iterable[Mapping[str, Any] | Sequence[Any]], *, columns: Sequence[str] | None = None,
    budget: MatchBudget | None = None,
) -> Iterator[dict[str, Any]]:
    """Run ``spec`` over one partition whose rows come in ORDER BY order; yields output rows lazily.

    Rows are mappings, or sequences with ``columns`` naming their fields.  Matching is bounded by
    ``budget`` (None: the default); :class:`~timeweave.core.pattern.budget.MatchBudgetExceeded` when it runs out.

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> spec = parse_clause("MEASURES FIRST(A.p) AS lo, LAST(A.p) AS hi PATTERN (A{2,}) DEFINE A AS A.p >= PREV(A.p, 1)")
    >>> list(match_partition(spec, [(3,), (1,), (2,), (5,), (4,)], columns=["p"]))
    [{'lo': 2, 'hi': 5}]
    """
    matcher = PartitionMatcher(spec, budget=budget)
    # An iterator is consumed row by row (output is decided as early as possible); rows already in
    # a list go in chunks: one drive per chunk, as the per-row driver overhead is most of the cost.
    chunk_rows = _CHUNK_ROWS if isinstance(rows, Sequence) else 1
    chunk: list[Mapping[str, Any]] = []
    for row in rows:
        if not isinstance(row, Mapping):
            if columns is None:
                raise TypeError("rows given as sequences need columns=[...] naming their fields")
            row = dict(zip(columns, row, strict=True))
        chunk.append(row)
        if len(chunk) >= chunk_rows:
            yield from matcher.push_many(chunk)
            chunk = []
    if chunk:
        yield from matcher.push_many(chunk)
    yield from matcher.finish()


def sort_key(spec: ClauseSpec) -> Any:
    """A sort key function for ORDER BY (ASC NULLS LAST / DESC NULLS FIRST unless written)."""

    def key(row: Mapping[str, Any]) -> tuple[Any, ...]:
        parts: list[Any] = []
        for item in spec.order_by:
            value = _column(row, item.column)
            nulls_first = item.nulls_first if item.nulls_first is not None else item.descending
            is_null = value is None
            parts.append((not is_null) if nulls_first else is_null)
            parts.append(_Reverse(value) if item.descending and not is_null else value if not is_null else 0)
        return tuple(parts)

    return key


class _Reverse:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Reverse) -> bool:
        return bool(other.value < self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reverse) and other.value == self.value

    __hash__ = None  # type: ignore[assignment]


def event_time_column(spec: ClauseSpec) -> str | None:
    """The clause's event time: its first ORDER BY column as written (None without ORDER BY).

    A row whose event time is NULL has no place in event time: the streaming door cannot order it against
    the watermark and the backfill puts it in no slice.  So that every door gives the same rows, no door
    matches it: the doors with a dead-letter output (streaming, backfill, DataFrame
    ``match_recognize_with_rejects``, SQL ``timeweave.dead_letters``) list it there with the reason
    :func:`null_event_time_reason`; the SQL function (so dbt), which has one output only, leaves it out
    (its rows are ``WHERE <event time> IS NULL`` of the input).  Trino and the standard would sort it
    last (first for DESC) and match it: a deliberate difference.

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> event_time_column(parse_clause("ORDER BY t, seq MEASURES COUNT(*) AS n PATTERN (A) DEFINE A AS true"))
    't'
    """
    return spec.order_by[0].column if spec.order_by else None


def null_event_time_reason(column: str) -> str:
    """The dead-letter reason of a row whose event time (``column``, as the input spells it) is NULL.

    >>> null_event_time_reason("rowtime")
    'NULL event time column rowtime'
    """
    return reject_reason("null_event_time", column)


def match_recognize(
    spec: ClauseSpec, rows: Iterable[Mapping[str, Any]], *, budget: MatchBudget | None = None
) -> Iterator[dict[str, Any]]:
    """Batch MATCH_RECOGNIZE over a whole table: partition, sort (stable), match each partition.

    Partitions are processed in order of first appearance.  Rows with a NULL event time
    (:func:`event_time_column`) are not matched, as in every door.

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> spec = parse_clause("PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS A.v > 0")
    >>> list(match_recognize(spec, [{"k": 1, "t": 2, "v": 1}, {"k": 2, "t": 1, "v": 1}, {"k": 1, "t": 1, "v": 1}]))
    [{'k': 1, 'n': 2}, {'k': 2, 'n': 1}]
    """
    partitions: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    time = event_time_column(spec)
    for row in rows:
        if time is not None and _column(row, time) is None:
            continue
        partitions.setdefault(tuple(_column(row, c) for c in spec.partition_by), []).append(row)
    key = sort_key(spec)
    for members in partitions.values():
        yield from match_partition(spec, sorted(members, key=key) if spec.order_by else members, budget=budget)
