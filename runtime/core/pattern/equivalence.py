"""Thread equivalence: when may the matcher drop a thread because an earlier one does the same?

Two threads compared here have matched the same rows (same start, same current row) and reached
the same instruction.  They will see the same future rows, so they behave identically from now on
if every DEFINE condition they may still evaluate reads the same values for both.  The signature
of a thread at an instruction is built so that equal signatures imply that (Trino's
``ThreadEquivalence``, computed as a hashable key instead of pairwise):

1. take the labels reachable from the instruction (``Program.reachable_labels``); no reachable
   label means only ``done`` is ahead: every thread is equivalent;
2. for every ``FIRST(v, k)`` / ``LAST(v, k)`` (including the implicit ``LAST(v, 0)`` of ``v.col``
   and the base of ``PREV/NEXT``) in those labels' conditions, the positions of the first / last
   ``k + 1`` rows matched to ``v`` (future rows shift LAST offsets back, so all of ``0..k`` matter).
   Navigations over the universal variable resolve to the same rows for every thread: skipped;
3. if any of those conditions reads CLASSIFIER, the whole label sequence (no pruning beyond
   identical histories);
4. the running aggregate states those conditions read.

Dropping the later thread is safe because it is on a less preferred path: whatever match it would
reach, the earlier thread reaches the same way, first.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from timeweave.core.pattern.budget import WORK_WEIGHTS
from timeweave.core.pattern.expressions import Dependencies
from timeweave.core.pattern.matcher import Run, Thread
from timeweave.core.pattern.program import Program


class Equivalence:
    """Per-instruction signature function for one compiled clause (see the module docstring)."""

    def __init__(self, program: Program, label_dependencies: Sequence[Dependencies | None]) -> None:
        self.reachable = program.reachable_labels()
        self._per_pointer: list[tuple[bool, tuple[tuple[bool, frozenset[int], int], ...], tuple[int, ...]] | None] = [
            None
        ] * len(program)
        self.label_dependencies = label_dependencies

    def _dependencies(self, pointer: int) -> tuple[bool, tuple[tuple[bool, frozenset[int], int], ...], tuple[int, ...]]:
        cached = self._per_pointer[pointer]
        if cached is None:
            classifier = False
            logical: set[tuple[bool, frozenset[int], int]] = set()
            aggregates: set[int] = set()
            for label in self.reachable[pointer]:
                deps = self.label_dependencies[label]
                if deps is None:
                    continue
                classifier |= deps.classifier
                logical |= {d for d in deps.logical if d[1] is not None}  # type: ignore[misc]
                aggregates |= deps.aggregates
            # LAST(v, k) and LAST(v, j<k) need the same walk: keep the largest k per (kind, labels)
            widest: dict[tuple[bool, frozenset[int]], int] = {}
            for last, labels, offset in logical:
                key = (last, labels)
                widest[key] = max(widest.get(key, 0), offset)
            ordered = tuple(sorted(((k[0], k[1], v) for k, v in widest.items()), key=repr))
            cached = (classifier, ordered, tuple(sorted(aggregates)))
            self._per_pointer[pointer] = cached
        return cached

    def classifier_parts(self, pointer: int) -> int:
        """Parts hashed by every visit of ``pointer`` when its signature is the whole history (CLASSIFIER), else 0.

        The other signatures are memoized per step; :meth:`signature` charges their work when it computes one.
        """
        if not self.reachable[pointer]:
            return 0
        classifier, _, aggregates = self._dependencies(pointer)
        return 1 + len(aggregates) if classifier else 0

    def signature(self, thread: Thread, pointer: int, run: Run) -> Hashable:
        if thread.labels is None or not self.reachable[pointer]:
            return None
        dependencies = self._dependencies(pointer)
        classifier, logical, aggregates = dependencies
        if classifier:
            return (thread.labels, thread.aggregates)
        # a thread visits several instructions per step with the same state; most share dependencies
        key = (id(thread.labels), thread.aggregates, id(dependencies))
        cached = run.signature_cache.get(key)
        if cached is not None:
            return cached
        parts: list[tuple[int, ...]] = []
        for last, labels, offset in logical:
            wanted = offset + 1
            if last:
                parts.append(thread.labels.last_positions(labels, wanted))
            else:
                parts.append(thread.labels.first_positions(labels, wanted))
        signature = (tuple(parts), tuple(thread.aggregates[i] for i in aggregates))
        run.signature_cache[key] = signature
        # computing it is the expensive part of a visit: a walk per navigation, a hash per part (the memo is
        # per step, so which visits compute one is fixed by the rows alone)
        run.work += WORK_WEIGHTS.signature + WORK_WEIGHTS.signature_part * (len(logical) + len(aggregates))
        return signature
