"""A continuous ``GROUP BY`` (no window): a keyed operator whose result per key updates (seed 003's first query).

``SELECT user, COUNT(url) FROM clicks GROUP BY user`` over a stream: every row of a user changes that user's
count, and the output is the changelog of the result table (never a final row: a later row may change it).
The host keys the operator by the GROUP BY values (a NULL value is a group of its own, as in SQL); per key it
holds one accumulator row ``[row_count, acc_1, ..., acc_n]`` (Flink's ``GroupAggFunction`` and its
``recordCounter``) and the result last emitted (:class:`~timeweave.core.updates.encoder.ChangelogEncoder`).

**Input.**  Append-only rows (every row is added), or an updating input: ``op_column`` names the column holding
each row's op code (``+I`` / ``+U`` accumulate, ``-U`` / ``-D`` retract: :func:`~timeweave.core.changelog.
direction_of`).  Retraction needs accumulators that can take a value back: ``SUM``, ``MIN``, ``MAX`` and
``COUNT(DISTINCT)`` switch to their retracting twins (MIN/MAX keep the multiset of values, as Flink's
``MinWithRetractAggFunction``); a user accumulator without ``retract`` is refused for an updating input.

**Output** (tag :attr:`~timeweave.core.operator.Tag.CHANGELOG`: the result is updating, so its rows are
changes to apply, never final rows to append; the main output stays append-only for every operator).  A step's
rows of a key are folded, then the key's new result goes through the encoder once (Flink's mini-batch
aggregation, ``MiniBatchGroupAggFunction``); ``per_row=True`` emits after every row instead (Flink's
``GroupAggFunction`` without mini-batch).  First result ``+I``; a changed one ``-U``/``+U`` (retract) or
``+U`` (upsert); an unchanged one nothing; when retractions bring the key's row count to 0 the result is
deleted (``-D``) and the key's state dropped, so a later row starts the group over with ``+I``.

**Idle-state retention** (``retention``, seed 003's "idle state retention time", on the event-time clock:
:class:`~timeweave.core.retention.IdleRetention`).  A key idle for between ``min_idle`` and ``max_idle`` of
watermark time is forgotten: its accumulators and emitted result are dropped *without* any output.  A key seen
again afterwards starts over, as in Flink: its first result is ``+I`` again (its count starts from 0), and in
retract mode no ``-U`` retracts the forgotten result, so a retract table downstream then holds both rows; an
upsert table is overwritten by key.  A retraction for a key the operator no longer holds goes to the dead
letter (Flink drops it silently).  With retention on, an unchanged result is emitted again (``-U X``, ``+U X``)
as Flink does, so downstream operators with retention see the key active (``refresh_unchanged``).

**Bad rows** go to the dead letter with the reason, counted by the host: a missing GROUP BY column, an unknown
or NULL op code, a value an aggregate cannot read or take (``SUM`` of a text): such a row changes nothing (the
aggregates it had already reached are undone).

>>> from timeweave.core.operator import run_keyed
>>> from timeweave.core.windows.accumulators import AggregateCall, Count
>>> spec = GroupAggregateSpec(("user",), (AggregateCall(Count(), "url", name="cnt"),))
>>> op = GroupAggregateOperator(spec)
>>> clicks = [{"user": "Mary", "url": "./home"}, {"user": "Bob", "url": "./cart"}]
>>> [str(c) for c in run_keyed(op, [(r["user"], r) for r in clicks], [])[Tag.CHANGELOG]]
["+I ('Mary',) (1,)", "+I ('Bob',) (1,)"]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from numbers import Number
from typing import Any, ClassVar

from timeweave.core.bad_rows import reject_reason
from timeweave.core.changelog import ACCUMULATE_OPS, RETRACT_OPS, UPSERT_ONLY_OPS, Direction, direction_of
from timeweave.core.errors import SpecError
from timeweave.core.operator import StateLayout, Tag, ValueState
from timeweave.core.retention import CLEANUP, IdleRetention
from timeweave.core.spec import StateRetention
from timeweave.core.state import KeyContext
from timeweave.core.updates.encoder import Change, ChangelogEncoder
from timeweave.core.updates.modes import ChangelogMode
from timeweave.core.windows.accumulators import (
    AggregateCall,
    Avg,
    CountDistinct,
    Sum,
    SumWithRetract,
    can_retract,
    with_retraction,
)

#: The state name of the key's accumulator row ``[row_count, acc_1, ..., acc_n]``.
ACCUMULATORS = "group-accumulators"


@dataclass(frozen=True, slots=True)
class Rejected:
    """An input row the aggregate cannot use, with the reason (the dead-letter output)."""

    row: Any
    reason: str
    tag: ClassVar[Tag] = Tag.DEAD_LETTER


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return f"column {exc.args[0]!r} is missing"
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class GroupAggregateSpec:
    """A continuous ``GROUP BY`` (see the module docstring).

    ``group_by``: the GROUP BY columns (the result's unique key, at least one).  ``aggregates``: the aggregate
    calls (:class:`~timeweave.core.windows.accumulators.AggregateCall`, each with an output name).
    ``changelog``: ``"retract"`` (default) or ``"upsert"``; ``"append"`` is refused (the result updates).
    ``op_column``: the op-code column of an updating input (None: append-only input).  ``retention``: idle-state
    retention (None: keys are kept forever).  ``per_row``: emit after every row, not once per step.
    ``refresh_unchanged``: emit an unchanged result again (None: when ``retention`` is set, as Flink does).
    ``output``: the output's name in errors.

    >>> GroupAggregateSpec(("user",), (AggregateCall(CountDistinct(), "url", name="n"),), changelog="append",
    ...                    output="clicks_per_user")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: clicks_per_user: argument 'changelog': an append-only output cannot carry updates: ask for changelog='retract' or 'upsert'
    """

    group_by: tuple[str, ...]
    aggregates: tuple[AggregateCall, ...]
    changelog: ChangelogMode | str = ChangelogMode.RETRACT
    op_column: str | None = None
    retention: StateRetention | None = None
    per_row: bool = False
    refresh_unchanged: bool | None = None
    output: str = "group_aggregate"
    value_names: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = self.output
        group_by = (self.group_by,) if isinstance(self.group_by, str) else tuple(self.group_by)
        if not group_by or not all(isinstance(c, str) and c for c in group_by):
            raise SpecError("group_by", f"expected one or more column names, got {self.group_by!r} (a global "
                            "aggregate without GROUP BY columns is not supported)", where=where)
        if len(set(group_by)) != len(group_by):
            raise SpecError("group_by", f"a column is named twice in {list(group_by)}", where=where)
        object.__setattr__(self, "group_by", group_by)
        calls = tuple(self.aggregates)
        if not calls or not all(isinstance(c, AggregateCall) for c in calls):
            raise SpecError("aggregates", f"expected one or more AggregateCall values, got {self.aggregates!r}",
                            where=where)
        names = tuple(c.name or f"agg_{i}" for i, c in enumerate(calls))
        if len(set(names)) != len(names) or set(names) & set(group_by):
            raise SpecError("aggregates", f"output names must be unique and differ from the GROUP BY columns: "
                            f"{list(group_by)} + {list(names)}", where=where)
        object.__setattr__(self, "aggregates", calls)
        object.__setattr__(self, "value_names", names)
        changelog = ChangelogMode.parse(self.changelog, where=where)
        changelog.check(where, updating=True, unique_key=group_by)  # a GROUP BY result updates its rows
        object.__setattr__(self, "changelog", changelog)
        if self.op_column is not None and (not isinstance(self.op_column, str) or not self.op_column
                                           or self.op_column in group_by):
            raise SpecError("op_column", f"expected the op-code column's name (not a GROUP BY column), got "
                            f"{self.op_column!r}", where=where)
        if self.retention is not None and not isinstance(self.retention, StateRetention):
            raise SpecError("retention", f"expected a StateRetention, got {self.retention!r}", where=where)
        if self.updating_input:
            for name, call in zip(names, calls, strict=True):
                if not can_retract(with_retraction(call.accumulator)):
                    raise SpecError("aggregates", f"aggregate {name} cannot take values back (its accumulator "
                                    "has no retract), and the input is updating (op_column "
                                    f"{self.op_column!r})", where=where)

    @property
    def updating_input(self) -> bool:
        """Whether the input carries retractions (an op column)."""
        return self.op_column is not None


class GroupAggregateOperator:
    """The keyed operator of a :class:`GroupAggregateSpec` (the keyed-operator contract; module docstring).

    >>> from timeweave.core.windows.accumulators import CountStar
    >>> GroupAggregateOperator(GroupAggregateSpec(("user",), (AggregateCall(CountStar(), name="n"),))).layout.names
    ('group-accumulators', 'emitted-results', 'cleanup-timestamp')
    """

    def __init__(self, spec: GroupAggregateSpec) -> None:
        if not isinstance(spec, GroupAggregateSpec):
            raise SpecError("spec", f"expected a GroupAggregateSpec, got {spec!r}")
        self.spec = spec
        refresh = spec.retention is not None if spec.refresh_unchanged is None else spec.refresh_unchanged
        self.encoder = ChangelogEncoder(spec.changelog, output=spec.output, unique_key=spec.group_by,
                                        refresh_unchanged=refresh)
        self.retention = None if spec.retention is None else IdleRetention(spec.retention)
        #: the declared per-key state, version 1
        self.layout = StateLayout(1, (
            ValueState(ACCUMULATORS, "the key's accumulator row [row_count, acc_1, ..., acc_n]"),
            self.encoder.state,
            ValueState(CLEANUP, "idle-state retention: the watermark (µs) at which the key is forgotten"),
        ))
        updating = spec.updating_input
        # Retracting twins for an updating input; COUNT(DISTINCT) always (its set cannot undo a half-applied row).
        self.accumulators = tuple(
            with_retraction(c.accumulator) if updating or isinstance(c.accumulator, CountDistinct) else c.accumulator
            for c in spec.aggregates)
        # (position, add, retract, value reader, filter, name, numeric) per call: the hot loop reads no attributes
        self._plan = tuple(
            (i + 1, acc.add, getattr(acc, "retract", None) if can_retract(acc) else None, c._value, c._filter, name,
             isinstance(acc, _NUMERIC))
            for i, (acc, c, name) in enumerate(zip(self.accumulators, spec.aggregates, spec.value_names, strict=True)))

    # -- the aggregate --------------------------------------------------------------------------------
    def create(self) -> list[Any]:
        """A fresh accumulator row (no rows)."""
        return [0, *(a.create() for a in self.accumulators)]

    def results(self, accs: list[Any]) -> tuple[Any, ...]:
        """The aggregates' results of an accumulator row, in the aggregates' order."""
        return tuple(a.result(accs[i]) for i, a in enumerate(self.accumulators, 1))

    def _direction(self, row: Any) -> Direction | str:
        """ACCUMULATE / RETRACT, or the dead-letter reason."""
        column = self.spec.op_column
        if column is None:
            return Direction.ACCUMULATE
        try:
            op = row[column]
        except Exception as exc:  # any unreadable row is a dead letter, named
            return f"cannot read the op code: {_describe(exc)}"
        direction = direction_of(op)
        if direction is not None:
            return direction
        if isinstance(op, str) and op.strip() in UPSERT_ONLY_OPS:
            return (f"op {op.strip()} in column {column} is an upsert without its previous row: an aggregate "
                    "can only take back rows it is sent as -U / -D")
        return reject_reason("unknown_op", column, op=op)

    def _apply(self, accs: list[Any], row: Any, retract: bool) -> str | None:
        """Add (or take back) ``row`` in ``accs``; on a failure undo what was done and return the reason.

        One pass, reading and applying each aggregate in turn (the hot loop: no list of values is built); the
        undo, rare, reads the values of the aggregates already applied again."""
        before = accs[:]  # the old references, for the undo
        applied = 0
        reading = True
        try:
            for position, add, take_back, value, condition, _, numeric in self._plan:
                reading = True
                if condition is not None:
                    passed = condition(row)
                    if passed is None or not passed:
                        applied += 1
                        continue
                v = row if value is None else value(row)
                if numeric and v is not None and v.__class__ not in _PLAIN_NUMBERS \
                        and (not isinstance(v, Number) or isinstance(v, bool)):
                    raise _NotANumber(v)
                reading = False
                accs[position] = take_back(accs[position], v) if retract else add(accs[position], v)
                applied += 1
        except Exception as exc:  # undo, then dead-letter the row with the reason
            self._undo(accs, before, row, retract, applied)
            name = self._plan[applied][5]
            if isinstance(exc, _NotANumber):
                # SQL types SUM / AVG over numbers; a first text value would otherwise become the sum
                v = exc.args[0]
                return f"aggregate {name} sums numbers, got {v!r} ({type(v).__name__})"
            if reading:
                return f"cannot read the value of aggregate {name}: {_describe(exc)}"
            v = self._plan[applied][3](row) if self._plan[applied][3] is not None else row
            return f"cannot {'retract' if retract else 'aggregate'} {v!r} in aggregate {name}: {_describe(exc)}"
        accs[0] += -1 if retract else 1
        return None

    def _undo(self, accs: list[Any], before: list[Any], row: Any, retract: bool, applied: int) -> None:
        """Take the first ``applied`` aggregates of ``row`` back out of ``accs``: an accumulator that returned a
        new value gets its old one back; one changed in place gets the inverse operation (its values read
        again: they were read once without error)."""
        for position, add, take_back, value, condition, _, _ in reversed(self._plan[:applied]):
            if accs[position] is not before[position]:
                accs[position] = before[position]
                continue
            inverse = add if retract else take_back
            if inverse is None:
                continue  # an immutable value left as it was (an in-place user accumulator needs retract)
            if condition is not None:
                passed = condition(row)
                if passed is None or not passed:
                    continue
            accs[position] = inverse(accs[position], row if value is None else value(row))

    # -- the keyed-operator contract ------------------------------------------------------------------
    def process_elements(self, ctx: KeyContext, rows: Iterable[Any]) -> list[Rejected | Change]:
        """Fold a key's rows of one step (arrival order) into its accumulators; return the dead letters and the
        changelog rows of the key's result (once, or after each row with ``per_row``)."""
        accs: list[Any] | None = ctx.get(ACCUMULATORS)
        out: list[Rejected | Change] = []
        key: tuple[Any, ...] | None = None
        changed = False
        group_by, per_row, encoder, op_column = self.spec.group_by, self.spec.per_row, self.encoder, self.spec.op_column
        apply = self._apply
        for row in rows:
            if key is None:
                try:
                    key = tuple(row[c] for c in group_by)
                except Exception as exc:
                    out.append(Rejected(row, f"cannot read the GROUP BY key: {_describe(exc)}"))
                    continue
            if op_column is None:
                retract = False
            else:
                try:  # the common op codes by a dict lookup; anything else through _direction (and its reasons)
                    op = row[op_column]
                    direction = _DIRECTIONS.get(op) if op.__class__ is str else None
                except Exception:
                    direction = None
                if direction is None:
                    direction = self._direction(row)
                    if direction.__class__ is not Direction:
                        out.append(Rejected(row, direction))
                        continue
                retract = direction is Direction.RETRACT
            fresh = accs is None
            if fresh:
                if retract:  # Flink's GroupAggFunction drops it silently; timeweave says so
                    out.append(Rejected(row, "retraction of a row of a group that holds no rows (none was "
                                        "accumulated, or idle-state retention dropped the group): nothing to take back"))
                    continue
                accs = self.create()
            reason = apply(accs, row, retract)
            if reason is not None:
                out.append(Rejected(row, reason))
                if fresh:
                    accs = None  # the group was created for this row only
                continue
            changed = True
            if accs[0] == 0:
                accs = None  # the last row was taken back: the group is gone (Flink clears its state)
            if per_row:
                out.extend(encoder.update(ctx, key, None if accs is None else self.results(accs)))
        if not changed:
            return out
        assert key is not None
        if not per_row:
            out.extend(encoder.update(ctx, key, None if accs is None else self.results(accs)))
        if accs is None:
            self.layout.clear(ctx)  # nothing left of the key: no state, no cleanup timer
        else:
            ctx.put(ACCUMULATORS, accs)
            if self.retention is not None:
                self.retention.touch(ctx)
        return out

    def on_watermark(self, ctx: KeyContext) -> Iterator[Any]:
        """Idle-state retention only: a key whose cleanup time the watermark reached is forgotten (no output);
        a key that holds state from before the first watermark gets its cleanup time now."""
        retention = self.retention
        if retention is not None and ctx.get(ACCUMULATORS) is not None and not self.forget_idle(ctx) \
                and ctx.get(CLEANUP) is None:
            retention.touch(ctx)
        return iter(())

    def forget_idle(self, ctx: KeyContext) -> bool:
        """Forget the key (no output) when idle-state retention's cleanup time has come (the watermark reached
        it); whether it was.  What a stream's timers did before a step, for a host that runs no timers between
        steps (the backfill: :mod:`timeweave.spark.group_aggregate_backfill`)."""
        retention = self.retention
        if retention is None or ctx.get(ACCUMULATORS) is None or not retention.due(ctx):
            return False
        retention.expire(ctx, self.layout.names, busy=False)
        return True


class _NotANumber(Exception):
    """A SUM / AVG value that is no number (the row's dead-letter reason names it)."""


#: The op codes as written (no blanks), looked up at once; others go through :func:`direction_of`.
_DIRECTIONS = {**dict.fromkeys(ACCUMULATE_OPS, Direction.ACCUMULATE), **dict.fromkeys(RETRACT_OPS, Direction.RETRACT)}
#: The number types checked without the ABC (the common case, fast); others go through ``numbers.Number``.
_PLAIN_NUMBERS = frozenset((int, float, Decimal))
#: Accumulators over numbers only (their values are checked before any is added).
_NUMERIC = (Sum, SumWithRetract, Avg)


__all__ = ["ACCUMULATORS", "GroupAggregateOperator", "GroupAggregateSpec", "Rejected"]
