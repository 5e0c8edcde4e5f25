"""A work budget per MATCH_RECOGNIZE partition, so that no pattern can stall a query.

Row pattern matching is exponential in the worst case (``(A|B){1000}`` with an ``AVG`` in DEFINE keeps a
thread per path, since no two paths have equal aggregates) and quadratic for any pattern that can fail
late (``A+ B`` with B never true: the standard tries one match attempt per start row, each running to
the end of the A run).  :class:`MatchBudget` bounds both, per partition:

* ``max_threads``: the general VM's live threads in one attempt after one row;
* work: ``base_work + work_per_row * rows_reached`` (``rows_reached``: one past the furthest row any
  attempt has read).  Work units are weighted by what each operation costs (:class:`WorkWeights`: a row
  step of an attempt, a thread evaluated with its DEFINE aggregates, an instruction followed, a thread
  signature computed, a fast-path row, an output row and its measures), so that a unit is about a
  microsecond of CPU whatever the pattern (``bench/match_budget.py --calibrate``).

Linear matching (every row read by a bounded number of attempts) never comes near the limit; the default
(:data:`DEFAULT_BUDGET`: 200,000 + 700 per row, ~0.9 CPU-s for 1,000 rows) leaves ordinary queries alone
(the dearest one measured, ``(A | B)+ C`` with SUM in DEFINE and SKIP TO NEXT ROW, spends ~600 units per
row) and stops a pathological partition before it costs a CPU second per 1,000 rows.

When the budget runs out, :class:`~timeweave.core.pattern.PartitionMatcher` raises
:class:`MatchBudgetExceeded` (the core iterators), or, in the doors with a dead letter, keeps the matches
concluded so far and sends the partition's other rows (from the start of the attempt in progress, and
every later row of the partition or streaming key) to the dead letter with :meth:`MatchBudgetExceeded.reason`.
The check is made at points fixed by the rows alone (each general-VM row step, each new attempt that
re-reads rows), never by how the rows were batched, so every door dead-letters the same rows.

>>> MatchBudget.from_mapping({"work_per_row": 50})
MatchBudget(max_threads=10000, work_per_row=50, base_work=200000)
>>> MatchBudget.from_mapping({"max_thread": 5})
Traceback (most recent call last):
...
timeweave.core.errors.SpecError: match_recognize: argument 'match_recognize.budget.max_thread': unknown key; did you mean 'max_threads'?
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from timeweave.core.errors import SpecError, TimeweaveError

#: The dead-letter reason code of rows of a partition whose matching ran out of budget (a constant: the
#: variable parts, pattern and row, follow it in the reason text built by :meth:`MatchBudgetExceeded.reason`).
BUDGET_REASON_CODE = "MATCH_BUDGET_EXCEEDED"


@dataclass(frozen=True, slots=True)
class MatchBudget:
    """Per-partition limits of MATCH_RECOGNIZE matching (see the module docstring); all must be positive.

    >>> MatchBudget(max_threads=0)
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: match_recognize: argument 'match_recognize.budget.max_threads': must be a positive integer, got 0
    >>> MatchBudget().allowance(1_000)
    900000
    """

    max_threads: int = 10_000
    work_per_row: int = 700
    base_work: int = 200_000

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if type(value) is not int or value <= 0:
                raise SpecError(f"match_recognize.budget.{item.name}", f"must be a positive integer, got {value!r}",
                                where="match_recognize")

    def allowance(self, rows_reached: int) -> int:
        """The work units a partition may spend once its attempts have read ``rows_reached`` rows."""
        return self.base_work + self.work_per_row * rows_reached

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | MatchBudget | None, path: str = "match_recognize.budget"
                     ) -> MatchBudget:
        """A budget from a JSON-like mapping (job configs, keyword options); missing keys keep the default.

        ``None`` is the default budget; unknown keys are errors with a did-you-mean, naming ``path``.
        """
        if data is None:
            return DEFAULT_BUDGET
        if isinstance(data, MatchBudget):
            return data
        if not isinstance(data, Mapping):
            raise SpecError(path, f"expected a map of {', '.join(_KEYS)}, got {data!r:.80}", where="match_recognize")
        for key in data:
            if key not in _KEYS:
                close = difflib.get_close_matches(str(key), _KEYS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(_KEYS)})"
                raise SpecError(f"{path}.{key}", f"unknown key{hint}", where="match_recognize")
        try:
            return cls(**{key: data[key] for key in _KEYS if key in data and data[key] is not None})
        except SpecError as error:
            name = error.argument.rsplit(".", 1)[-1]
            raise SpecError(f"{path}.{name}", error.message, where="match_recognize") from None


_KEYS = tuple(item.name for item in fields(MatchBudget))


@dataclass(frozen=True, slots=True)
class WorkWeights:
    """Work units of the matcher's operations, so that a unit costs about the same CPU time whatever the pattern.

    Calibrated with ``bench/match_budget.py --calibrate`` (CPU time of the fuzzed corpus against the
    operation counts, 2026-11-26): one unit is about a microsecond of CPU on the reference machine.
    Counting the operations, not timing them, keeps the budget deterministic: every door and every
    batching of the rows spends the same units.

    General VM (:class:`~timeweave.core.pattern.matcher.Run`, weights per operation):

    * ``attempt``: starting a match attempt; ``step``: one attempt stepping over one row (fixed part);
    * ``evaluation``: one thread evaluated on one row, plus ``aggregate`` per DEFINE aggregate it updates
      or reads back and one per ``nodes_per_unit`` expression nodes of its label's condition;
    * ``visit``: one instruction followed, plus ``split`` at a split (it forks the thread); ``signature`` plus ``signature_part`` per part for each thread
      signature computed (:mod:`~timeweave.core.pattern.equivalence` memoizes them per step; a signature of
      the whole history, for DEFINEs reading CLASSIFIER, is hashed at every visit: its parts are charged there).

    Fast path (:class:`~timeweave.core.pattern.fast.FastRun`): ``fast_row`` per row an attempt steps over,
    plus one per ``nodes_per_unit`` expression nodes of the clause's largest DEFINE condition.  Output: ``output_row`` per row, ``measure`` per measure
    evaluated in it, ``matched_row`` per row of a match read back for its measures.
    """

    attempt: int = 5
    step: int = 5
    evaluation: int = 3
    aggregate: int = 1
    nodes_per_unit: int = 3
    visit: int = 1
    split: int = 1
    signature: int = 2
    signature_part: int = 1
    fast_row: int = 1
    output_row: int = 4
    measure: int = 2
    matched_row: int = 1

    def per_nodes(self, nodes: int) -> int:
        """Units of evaluating a condition of ``nodes`` expression nodes: one per ``nodes_per_unit``, rounded up.

        >>> WORK_WEIGHTS.per_nodes(3), WORK_WEIGHTS.per_nodes(6), WORK_WEIGHTS.per_nodes(7)
        (1, 2, 3)
        """
        return -(-nodes // self.nodes_per_unit)


#: The calibrated weights every matcher uses.
WORK_WEIGHTS = WorkWeights()

#: The budget every door uses unless told otherwise.
DEFAULT_BUDGET = MatchBudget()


class MatchBudgetExceeded(TimeweaveError, RuntimeError):
    """A partition's matching ran out of its :class:`MatchBudget` at row ``position`` (0-based in the partition).

    >>> error = MatchBudgetExceeded("(A|B)* C", 41, "2026-11-26 10:00:00", "work 1,100,500 > 1,100,000")
    >>> error.reason
    'MATCH_BUDGET_EXCEEDED: pattern (A|B)* C ran out of its match budget at row 41 (time 2026-11-26 10:00:00): work 1,100,500 > 1,100,000'
    """

    def __init__(self, pattern: str, position: int, time: Any, detail: str) -> None:
        self.pattern = pattern
        self.position = position
        self.time = time
        self.detail = detail
        super().__init__(self.reason + " (raise the limit with the match_recognize budget option; see README)")

    @property
    def reason(self) -> str:
        """The dead-letter reason: the code, the pattern, the row (position and event time) and the limit hit."""
        at = f"row {self.position}" + ("" if self.time is None else f" (time {self.time})")
        return f"{BUDGET_REASON_CODE}: pattern {self.pattern} ran out of its match budget at {at}: {self.detail}"
