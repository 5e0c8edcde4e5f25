"""The one place a changing result becomes changelog rows: "the result for key K was X, is now Y (or gone)".

An operator whose results change (a continuous ``GROUP BY``, a window refined by early or late firings) computes
each result and hands it to :meth:`ChangelogEncoder.update`; the encoder compares it with the result it last
emitted for that key and returns the rows that carry the change in the output's :class:`ChangelogMode`:

=================  ======================  ======================  ==========================
the result         retract                 upsert                  append
=================  ======================  ======================  ==========================
first (X)          ``+I X``                ``+I X``                ``+I X``
changed (X -> Y)   ``-U X``, ``+U Y``      ``+U Y``                refused (at construction)
unchanged          nothing (see below)     nothing (see below)     (never asked)
gone               ``-D X``                ``-D X`` (by its key)   refused (at construction)
=================  ======================  ======================  ==========================

The previously emitted result is keyed state of the operator (a :class:`~timeweave.core.operator.MapState`
named :data:`EMITTED`, which the operator puts in its :class:`~timeweave.core.operator.StateLayout`): one entry
per *slot* of the key.  A continuous ``GROUP BY`` has one result per key (slot ``None``); a windowed operator
has one per window (slot = the window), so the rows' unique key is (group key, window).  Flink's operators keep
no such copy (``GroupAggFunction`` recomputes the previous result from the accumulators before adding a row);
keeping it lets one encoder serve every operator, fold a whole step of rows into one change (Flink's
mini-batch aggregation), and makes "unchanged" exact whatever the accumulators are.

**Unchanged results** emit nothing (Flink's ``equaliser.equals(prevAggValue, newAggValue)``).  Flink's nuance:
when idle-state retention is on, its ``GroupAggFunction`` emits the unchanged result again (``-U X``, ``+U X``)
so that a downstream operator with retention sees the key active and does not forget it too early.
``refresh_unchanged=True`` does the same (the continuous ``GROUP BY`` sets it when it has retention).
Equality is strict: same types, a ``Decimal`` with the same digits (``1.0`` is not ``1.00``), NaN equals NaN.

Append mode keeps no state: its producer only emits final results, once each.

>>> from timeweave.core.state import InMemoryKeyContext
>>> enc = ChangelogEncoder("retract", output="clicks_per_user", unique_key=("user",))
>>> ctx = InMemoryKeyContext()
>>> [str(c) for c in enc.update(ctx, ("Mary",), (1,)) + enc.update(ctx, ("Mary",), (2,))]
["+I ('Mary',) (1,)", "-U ('Mary',) (1,)", "+U ('Mary',) (2,)"]
>>> enc.update(ctx, ("Mary",), (2,)), [str(c) for c in enc.update(ctx, ("Mary",), None)], ctx.values
([], ["-D ('Mary',) (2,)"], {})
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from timeweave.core.operator import MapState, RowKind, Tag
from timeweave.core.state import KeyContext
from timeweave.core.updates.modes import ChangelogMode

#: The state name of the previously emitted results (slot -> result tuple).
EMITTED = "emitted-results"


@dataclass(frozen=True, slots=True)
class Change:
    """One changelog row: its kind, the result's unique key values and the result's values.

    ``values`` of a ``-U`` / ``-D`` are the retracted result (an upsert ``-D`` carries the last emitted result
    too; an upsert consumer applies it by the key alone).  ``tag``: :attr:`Tag.CHANGELOG` for an updating output
    (a later row may retract this one), :attr:`Tag.MAIN` for an append-only one (final rows).

    >>> c = Change(RowKind.UPDATE_AFTER, ("Mary",), (2,))
    >>> c.op, c.row(("user",), ("cnt",)), c.tag
    ('+U', {'user': 'Mary', 'cnt': 2, 'op': '+U'}, <Tag.CHANGELOG: 'changelog'>)
    """

    kind: RowKind
    key: tuple[Any, ...]
    values: tuple[Any, ...]
    tag: Tag = Tag.CHANGELOG

    @property
    def op(self) -> str:
        """The op code (``+I``, ``-U``, ``+U``, ``-D``): the ``op`` column of a written changelog."""
        return self.kind.value

    def row(self, key_names: Sequence[str], value_names: Sequence[str], op_column: str = "op") -> dict[str, Any]:
        """The row as written: key columns, value columns, then the op code in ``op_column``."""
        out = dict(zip(key_names, self.key, strict=True))
        out.update(zip(value_names, self.values, strict=True))
        out[op_column] = self.kind.value
        return out

    def __str__(self) -> str:
        return f"{self.kind.value} {self.key} {self.values}"


def same_result(before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
    """Whether two results are the same row (strictly: see the module docstring).

    >>> same_result((1, Decimal("1.0")), (1, Decimal("1.0"))), same_result((1,), (1.0,))
    (True, False)
    >>> same_result((Decimal("1.0"),), (Decimal("1.00"),)), same_result((float("nan"),), (float("nan"),))
    (False, True)
    """
    if len(before) != len(after):
        return False
    for x, y in zip(before, after, strict=True):
        if type(x) is not type(y):
            return False
        if x != y:
            if x == x or y == y:  # NaN is the one value unequal to itself
                return False
        elif isinstance(x, Decimal) and x.as_tuple() != y.as_tuple():
            return False
    return True


@dataclass(frozen=True, slots=True)
class ChangelogEncoder:
    """Turns a key's successive results into changelog rows in one :class:`ChangelogMode` (module docstring).

    ``mode``: the mode or its name.  ``output`` names the output in errors.  ``updating``: whether the producer
    changes results it emitted (an append-only output refuses it).  ``unique_key``: the result's unique key
    columns (upsert needs them).  ``refresh_unchanged``: emit an unchanged result again (Flink's behaviour
    under state retention).  ``state_name``: the name of the emitted-results state (:data:`EMITTED`).
    """

    mode: ChangelogMode | str
    output: str = "changelog"
    updating: bool = True
    unique_key: tuple[str, ...] | None = None
    refresh_unchanged: bool = False
    state_name: str = EMITTED
    state: MapState = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        mode = ChangelogMode.parse(self.mode, where=self.output)
        object.__setattr__(self, "mode", mode)
        if self.unique_key is not None:
            object.__setattr__(self, "unique_key", tuple(self.unique_key))
        mode.check(self.output, updating=self.updating, unique_key=self.unique_key)
        object.__setattr__(self, "state", MapState(
            self.state_name, "the result last emitted, by slot (None: the key's one result; a window)"))

    @property
    def tag(self) -> Tag:
        """Where the rows go: the changelog output for an updating mode, the main output for append."""
        return Tag.MAIN if self.mode is ChangelogMode.APPEND else Tag.CHANGELOG

    def emitted(self, ctx: KeyContext, slot: Hashable = None) -> tuple[Any, ...] | None:
        """The result last emitted for ``slot`` of the context's key (None: none, or it was deleted)."""
        return self.state.of(ctx).get(slot)

    def update(self, ctx: KeyContext, key: tuple[Any, ...], result: tuple[Any, ...] | None,
               slot: Hashable = None) -> list[Change]:
        """The rows that take ``slot``'s output from the result last emitted to ``result`` (None: the result is
        gone); the emitted result is remembered.  ``key``: the result's unique key values, as written."""
        mode = self.mode
        if mode is ChangelogMode.APPEND:
            return [] if result is None else [Change(RowKind.INSERT, key, tuple(result), Tag.MAIN)]
        handle = self.state.of(ctx)
        before = handle.get(slot)
        if result is None:
            if before is None:
                return []
            handle.remove(slot)
            return [Change(RowKind.DELETE, key, before)]
        result = tuple(result)
        if before is None:
            handle.put(slot, result)
            return [Change(RowKind.INSERT, key, result)]
        if not self.refresh_unchanged and same_result(before, result):
            return []
        handle.put(slot, result)
        if mode is ChangelogMode.RETRACT:
            return [Change(RowKind.UPDATE_BEFORE, key, before), Change(RowKind.UPDATE_AFTER, key, result)]
        return [Change(RowKind.UPDATE_AFTER, key, result)]

    def forget(self, ctx: KeyContext, slot: Hashable = None) -> None:
        """Drop ``slot``'s emitted result without emitting anything (a window purged after its lateness: its
        last result stays final downstream, as in Flink)."""
        self.state.of(ctx).remove(slot)


__all__ = ["EMITTED", "Change", "ChangelogEncoder", "same_result"]
