"""A Pike VM over a compiled :class:`Program`: one match attempt from one start row (Trino's Matcher).

All threads advance together, one input row at a time, and are kept in *preference order*: the
order in which a backtracking matcher would try them (split ``first`` before ``second``, so greedy
before reluctant alternatives, left alternatives before right ones, PERMUTE orders
lexicographically).  The rules, each applied where marked in the code:

1. ``advance`` follows control instructions (split/jump/save/anchors) depth first, preferred branch
   first, until the thread parks at a ``label`` (needs the next row) or reaches ``done``.
2. A thread reaching an instruction already reached in this step by an *equivalent* thread is
   dropped: the earlier one is on a more preferred path and will do everything the later one could
   do (see :mod:`~timeweave.core.pattern.equivalence`).  This also cuts loops that match nothing, and
   keeps the thread count bounded by the program size times the number of distinct signatures.
3. When a thread reaches ``done`` it is a match; every thread behind it in the list is less
   preferred and is dropped.  Threads ahead of it keep running: they may still produce a more
   preferred (e.g. longer greedy) match, which replaces this one.
4. The attempt ends when no thread is left; its result is the last match recorded.

The run is incremental (:meth:`Run.step` per row) so a streaming operator can feed rows as the
watermark releases them; the state is plain data and pickles (long label chains are flattened).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from timeweave.core.pattern.program import Done, Jump, MatchEnd, MatchLabel, MatchStart, Program, Save, Split


class Labels:
    """An immutable, shared-prefix list of matched label ids (a cons list; forking is O(1))."""

    __slots__ = ("_firsts", "_lasts", "label", "length", "prev")

    def __init__(self, label: int, prev: Labels | None) -> None:
        self.label = label
        self.prev = prev
        self.length = 1 if prev is None else prev.length + 1
        self._firsts: dict[tuple[frozenset[int], int], tuple[int, ...]] | None = None
        self._lasts: dict[tuple[frozenset[int], int], tuple[int, ...]] | None = None

    def last_positions(self, labels: frozenset[int], count: int) -> tuple[int, ...]:
        """Indexes (from the match start) of the last ``count`` rows whose label is in ``labels``, latest first.

        Memoized per cell like :meth:`first_positions` (LAST(v, k) of a rare ``v`` would otherwise walk
        back over the whole match at every row).
        """
        key = (labels, count)
        pending: list[Labels] = []
        node: Labels | None = self
        while node is not None and (node._lasts is None or key not in node._lasts):
            pending.append(node)
            node = node.prev
        found = () if node is None else node._lasts[key]  # type: ignore[index]
        for cell in reversed(pending):
            if cell.label in labels:
                found = (cell.length - 1, *found[: count - 1])
            if cell._lasts is None:
                cell._lasts = {}
            cell._lasts[key] = found
        return found

    def first_positions(self, labels: frozenset[int], count: int) -> tuple[int, ...]:
        """Indexes (from the match start) of the first ``count`` rows whose label is in ``labels``.

        Memoized per cell: the answer for a chain extends its predecessor's, so answering for every
        new head costs O(1) amortized instead of a walk from the start (FIRST(v, k) in DEFINE and in
        thread signatures would otherwise make long matches quadratic).
        """
        key = (labels, count)
        pending: list[Labels] = []
        node: Labels | None = self
        while node is not None and (node._firsts is None or key not in node._firsts):
            pending.append(node)
            node = node.prev
        found = () if node is None else node._firsts[key]  # type: ignore[index]
        for cell in reversed(pending):
            if len(found) < count and cell.label in labels:
                found = (*found, cell.length - 1)
            if cell._firsts is None:
                cell._firsts = {}
            cell._firsts[key] = found
        return found

    def to_list(self) -> list[int]:
        out: list[int] = []
        node: Labels | None = self
        while node is not None:
            out.append(node.label)
            node = node.prev
        out.reverse()
        return out

    @staticmethod
    def from_list(labels: list[int]) -> Labels | None:
        node: Labels | None = None
        for label in labels:
            node = Labels(label, node)
        return node

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle flat: a recursive pickle of a long chain would exceed the recursion limit.
        return (_labels_from_list, (self.to_list(),))


def _labels_from_list(labels: list[int]) -> Labels | None:
    return Labels.from_list(labels)


def labels_to_list(labels: Labels | None) -> list[int]:
    return [] if labels is None else labels.to_list()


@dataclass(slots=True)
class Thread:
    """One path through the program: where it is, what it matched, its exclusion marks and aggregates."""

    pc: int
    labels: Labels | None = None
    saves: tuple[int, ...] = ()
    aggregates: tuple[Any, ...] = ()

    @property
    def length(self) -> int:
        return 0 if self.labels is None else self.labels.length

    def fork(self) -> Thread:
        return Thread(self.pc, self.labels, self.saves, self.aggregates)


class LabelEvaluator(Protocol):
    """Decides whether the row at ``position`` can be matched to ``label`` by ``thread``.

    Returns None (no) or the thread's aggregate state after consuming the row (yes).
    """

    def evaluate(self, thread: Thread, label: int, position: int, run: Run) -> tuple[Any, ...] | None: ...


#: Signature of a thread's future behaviour at an instruction: equal signatures ⇒ equivalent threads.
SignatureFn = Callable[[Thread, int, "Run"], Hashable]


def full_signature(thread: Thread, pointer: int, run: Run) -> Hashable:
    """The always-sound signature: the complete matched label sequence plus aggregate states.

    Label chains are interned per run, so the chain object itself stands for its content.
    """
    return (thread.labels, thread.aggregates)


@dataclass(frozen=True, slots=True)
class MatchResult:
    """A match: the start row, its label ids (one per matched row) and exclusion (start, end) pairs.

    Positions in ``exclusions`` are relative to ``start``; an empty match has no labels.
    """

    start: int
    labels: tuple[int, ...]
    exclusions: tuple[tuple[int, int], ...] = ()

    @property
    def end(self) -> int:
        """Absolute position of the last matched row (``start - 1`` for an empty match)."""
        return self.start + len(self.labels) - 1

    @property
    def empty(self) -> bool:
        return not self.labels


@dataclass(frozen=True, slots=True)
class RunCosts:
    """Work units of one clause's general-VM operations (:mod:`timeweave.core.pattern.budget` calibrates them).

    ``attempt``: starting an attempt; ``step``: one row step of an attempt, whatever its threads;
    ``label[i]``: evaluating one thread on one row for label id ``i`` (its DEFINE condition and the
    aggregates it updates and reads); ``visit[pc]``: following instruction ``pc`` once (its thread
    signature and the seen-set test of rule 2).  Without costs a :class:`Run` counts one unit per thread
    evaluated and per instruction followed.
    """

    attempt: int
    step: int
    label: tuple[int, ...]
    visit: tuple[int, ...]


class Run:
    """One match attempt starting at absolute row ``start``; feed rows in order with :meth:`step`."""

    def __init__(
        self,
        program: Program,
        start: int,
        evaluator: LabelEvaluator,
        *,
        signature: SignatureFn = full_signature,
        at_partition_start: bool = False,
        match_number: int = 1,
        initial_aggregates: tuple[Any, ...] = (),
        at_end: bool = False,
        costs: RunCosts | None = None,
    ) -> None:
        self.program = program
        self.start = start
        self.evaluator = evaluator
        self.signature = signature
        self.at_partition_start = at_partition_start
        self.match_number = match_number
        self.position = start  # absolute index of the next row to consume
        self.result: Thread | None = None
        self.threads: list[Thread] = []
        self._visited: dict[int, set[Hashable]] = {}
        # per step: a signature function may memoize here (threads keep their state within a step)
        self.signature_cache: dict[Hashable, Hashable] = {}
        self._cells: dict[tuple[int, int], Labels] = {}
        self._at_end = at_end
        # work units spent (the partition's MatchBudget meters them): see RunCosts
        self.work = 0 if costs is None else costs.attempt
        self.costs = costs
        self._advance(self.threads, Thread(0, None, (), initial_aggregates))
        self._settle()

    @property
    def finished(self) -> bool:
        return not self.threads

    def step(self, *, at_end: bool = False) -> None:
        """Consume the row at ``self.position``; ``at_end`` says it is the partition's last row."""
        if self.finished:
            raise RuntimeError("step() on a finished run")
        position = self.position
        self.position = position + 1  # saves and anchors below see the index after this row
        self._visited = {}
        self.signature_cache: dict[Hashable, Hashable] = {}
        self._at_end = at_end
        advanced: list[Thread] = []
        costs = self.costs
        # a row step's fixed cost, plus each thread's evaluation (its label's DEFINE and aggregates)
        label_costs = None if costs is None else costs.label
        work = 0 if costs is None else costs.step
        for thread in self.threads:
            instruction = self.program.at(thread.pc)
            assert isinstance(instruction, MatchLabel)
            work += 1 if label_costs is None else label_costs[instruction.label]
            aggregates = self.evaluator.evaluate(thread, instruction.label, position, self)
            if aggregates is None:
                continue  # the row does not satisfy the label: the thread dies
            thread.labels = self._cons(instruction.label, thread.labels)
            thread.aggregates = aggregates
            self._advance(advanced, thread, thread.pc + 1)
        self.work += work
        self.threads = advanced
        self._settle()

    def stop(self) -> None:
        """End the attempt now (no more rows can join it: end of input or WITHIN exceeded)."""
        self.threads = []

    def match(self) -> MatchResult | None:
        """The most preferred match found so far (final once :attr:`finished`)."""
        if self.result is None:
            return None
        saves = self.result.saves
        pairs = tuple((saves[i] - self.start, saves[i + 1] - self.start) for i in range(0, len(saves) - 1, 2))
        return MatchResult(self.start, tuple(labels_to_list(self.result.labels)), pairs)

    def _cons(self, label: int, prev: Labels | None) -> Labels:
        """Interned cons: equal label sequences are the same object, so signatures can use identity."""
        key = (label, id(prev))
        cell = self._cells.get(key)
        if cell is None:
            cell = self._cells[key] = Labels(label, prev)
        return cell

    # -- rule 3: a match drops the less preferred threads behind it --------------------------------
    def _settle(self) -> None:
        for index, thread in enumerate(self.threads):
            if isinstance(self.program.at(thread.pc), Done):
                self.result = thread
                self.threads = self.threads[:index]
                return

    # -- rules 1 and 2 ------------------------------------------------------------------------------
    def _advance(self, out: list[Thread], thread: Thread, pointer: int = 0) -> None:
        # Explicit stack instead of recursion: deep unrolled quantifiers must not hit the recursion limit.
        stack: list[tuple[Thread, int]] = [(thread, pointer)]
        visits = 0
        visit_costs = None if self.costs is None else self.costs.visit
        while stack:
            thread, pointer = stack.pop()
            visits += 1 if visit_costs is None else visit_costs[pointer]  # the signature and the seen-set test
            signature = self.signature(thread, pointer, self)
            seen = self._visited.setdefault(pointer, set())
            if signature in seen:
                continue  # rule 2: an equivalent, more preferred thread already got here
            seen.add(signature)
            instruction = self.program.at(pointer)
            if isinstance(instruction, Split):
                # push the less preferred branch first so the preferred one is processed first
                stack.append((thread.fork(), instruction.second))
                stack.append((thread, instruction.first))
            elif isinstance(instruction, Jump):
                stack.append((thread, instruction.target))
            elif isinstance(instruction, Save):
                thread.saves = (*thread.saves, self.position)
                stack.append((thread, pointer + 1))
            elif isinstance(instruction, MatchStart):
                if self.position == self.start and self.at_partition_start:
                    stack.append((thread, pointer + 1))
            elif isinstance(instruction, MatchEnd):
                if self._at_end:
                    stack.append((thread, pointer + 1))
            else:  # MatchLabel or Done: park
                thread.pc = pointer
                out.append(thread)
        self.work += visits

    def __getstate__(self) -> dict[str, Any]:
        state = dict(vars(self))
        for transient in ("evaluator", "signature", "_cells", "_visited", "signature_cache", "costs"):
            state.pop(transient)
        threads = [*self.threads, *([self.result] if self.result is not None else [])]
        state["_chains"] = [labels_to_list(t.labels) for t in threads]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        chains = state.pop("_chains")
        vars(self).update(state)
        self._visited = {}
        self.signature_cache = {}
        self._cells = {}
        self.work = state.get("work", 0)
        self.costs = None  # rebind() attaches the clause's
        threads = [*self.threads, *([self.result] if self.result is not None else [])]
        for thread, chain in zip(threads, chains, strict=True):
            labels: Labels | None = None
            for label in chain:
                labels = self._cons(label, labels)
            thread.labels = labels

    def to_state(self) -> dict[str, Any]:
        """The attempt as plain data (:mod:`timeweave.core.state_codec`): positions and threads, no compiled part.

        Each thread is ``[pc, label ids, saves, aggregate states]``; :meth:`from_state` rebuilds it.
        """
        def thread(t: Thread) -> list[Any]:
            return [t.pc, labels_to_list(t.labels), list(t.saves), t.aggregates]

        return {
            "kind": "vm", "start": self.start, "position": self.position, "match_number": self.match_number,
            "at_partition_start": self.at_partition_start, "at_end": self._at_end,
            "threads": [thread(t) for t in self.threads],
            "result": None if self.result is None else thread(self.result),
        }

    @classmethod
    def from_state(cls, data: dict[str, Any], program: Program) -> Run:
        """The attempt :meth:`to_state` gave, on ``program`` (the clause's); :meth:`rebind` attaches the rest."""
        from timeweave.core.state_data import expect

        run = cls.__new__(cls)
        run.program = program
        run.start, run.position, run.match_number = data["start"], data["position"], data["match_number"]
        run.at_partition_start, run._at_end = bool(data["at_partition_start"]), bool(data["at_end"])
        expect(all(type(v) is int for v in (run.start, run.position, run.match_number)),
               "match attempt: start, position and match number must be integers")
        run._visited, run.signature_cache, run._cells = {}, {}, {}
        run.work = 0
        run.costs = None  # rebind() attaches the clause's
        size = len(program.instructions)

        def thread(item: Any) -> Thread:
            expect(isinstance(item, list) and len(item) == 4, "match attempt: a thread is [pc, labels, saves, aggregates]")
            pc, labels, saves, aggregates = item
            expect(type(pc) is int and 0 <= pc < size, f"match attempt: instruction {pc!r} is not in the program")
            expect(isinstance(labels, list) and all(type(x) is int for x in labels)
                   and isinstance(saves, list) and all(type(x) is int for x in saves)
                   and isinstance(aggregates, tuple), "match attempt: bad labels, saves or aggregates")
            chain: Labels | None = None
            for label in labels:
                chain = run._cons(label, chain)
            return Thread(pc, chain, tuple(saves), aggregates)

        run.threads = [thread(t) for t in data["threads"]]
        run.result = None if data["result"] is None else thread(data["result"])
        return run

    def rebind(self, evaluator: LabelEvaluator, signature: SignatureFn, costs: RunCosts | None = None) -> None:
        """Reattach the (unpicklable) evaluator, signature function and work costs after unpickling."""
        self.evaluator = evaluator
        self.signature = signature
        self.costs = costs
