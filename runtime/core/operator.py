"""The keyed-operator contract: what every timeweave operator is, whatever runs it (Flink's keyed operator, small).

An operator handles one key at a time through a :class:`~timeweave.core.state.KeyContext`: the key's state,
its event-time timers and the current watermark.  This module names the rest of the contract, so that a host
(the in-memory reference, Spark's ``transformWithState`` host in :mod:`timeweave.spark.host`, the backfill
driver) can run any operator without knowing which one it is:

* **State declared up front.**  An operator lists its per-key state in a :class:`StateLayout`: typed
  :class:`ValueState`, :class:`ListState` and :class:`MapState` descriptors and a layout version.  A host
  stores the key's state as one cell (:mod:`timeweave.core.state_codec`); :meth:`StateLayout.snapshot` and
  :meth:`StateLayout.restore` carry a key's state between hosts (a backfill slice edge) and refuse names the
  layout does not declare, so state of another operator or layout is an error, never a silent mix.
* **Elements.**  ``process_elements(ctx, elements)``: a key's elements of one step (a micro-batch), in arrival
  order.  Handlers buffer; what they return is only what is decided at once (late rows).
* **Watermark and timers.**  ``on_watermark(ctx)`` emits what the watermark (``ctx.watermark``) decides.  Timers
  are the :class:`TimerService` part of the context: event-time instants (µs) the host wakes the key at, once the
  watermark reaches them.  A watermark of :data:`~timeweave.core.state.END_OF_TIME` is the end of input.
* **Tagged outputs.**  Every output object carries a :class:`Tag` (main, late, dead letter, changelog) and a
  :class:`RowKind` (Flink's ``+I``, ``-U``, ``+U``, ``-D``; append-only operators emit inserts): the host routes
  outputs by tag, and counts them, without knowing the operator's output classes.

Example (the temporal join through the contract only)::

    >>> from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
    >>> from timeweave.core.state import InMemoryKeyContext
    >>> from timeweave.core.temporal_join import EventTimeTemporalJoin, LeftRow
    >>> from timeweave.core.versioned import VersionEvent
    >>> op = EventTimeTemporalJoin(TemporalJoinSpec(VersionedTableSpec("k", "t"), left_time="t"))
    >>> ctx = InMemoryKeyContext(current_watermark=10)
    >>> [tag_of(o) for o in op.process_elements(ctx, [VersionEvent(11, 0, False, "v"), LeftRow(12, 1, "a"),
    ...                                               LeftRow(5, 2, "late")])]
    [<Tag.LATE: 'late'>]
    >>> ctx.current_watermark = 12
    >>> [(tag_of(o), kind_of(o)) for o in op.on_watermark(ctx)]
    [(<Tag.MAIN: 'main'>, <RowKind.INSERT: '+I'>)]
    >>> sorted(op.layout.snapshot(ctx))
    ['right']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Protocol, runtime_checkable

from timeweave.core.errors import StateFormatError
from timeweave.core.state import KeyContext


class Tag(StrEnum):
    """Which output an operator's output row goes to (the job's output paths use these names)."""

    MAIN = "main"
    LATE = "late"
    DEAD_LETTER = "dead_letter"
    CHANGELOG = "changelog"


class RowKind(StrEnum):
    """What an output row does to the result (Flink's ``RowKind``): append-only operators emit ``INSERT``."""

    INSERT = "+I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "+U"
    DELETE = "-D"


def tag_of(output: Any) -> Tag:
    """The :class:`Tag` of an operator's output (its class's ``tag``).

    >>> from timeweave.core.pattern.operator import LateRow
    >>> tag_of(LateRow(1, {}, 2))
    <Tag.LATE: 'late'>
    """
    tag = getattr(output, "tag", None)
    if not isinstance(tag, Tag):
        raise TypeError(f"{type(output).__name__} is no operator output: it has no Tag (see timeweave.core.operator)")
    return tag


def kind_of(output: Any) -> RowKind:
    """The :class:`RowKind` of an operator's output (``INSERT`` unless its class says otherwise)."""
    return getattr(output, "kind", RowKind.INSERT)


# -- typed state ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StateDescriptor:
    """One named piece of per-key state.  ``doc`` says what it holds (the layout is documentation too)."""

    name: str
    doc: str = ""
    kind: ClassVar[str] = "value"

    def of(self, ctx: KeyContext) -> Any:
        """The typed handle of this state in ``ctx``."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class ValueState(StateDescriptor):
    """A single value per key.

    >>> from timeweave.core.state import InMemoryKeyContext
    >>> ctx = InMemoryKeyContext(); count = ValueState("count").of(ctx)
    >>> count.value(), count.update(3), count.value()
    (None, None, 3)
    """

    kind: ClassVar[str] = "value"

    def of(self, ctx: KeyContext) -> ValueHandle:
        return ValueHandle(ctx, self.name)


@dataclass(frozen=True, slots=True)
class ListState(StateDescriptor):
    """A list per key (an absent list reads as empty; an emptied one is cleared).

    >>> from timeweave.core.state import InMemoryKeyContext
    >>> ctx = InMemoryKeyContext(); rows = ListState("rows").of(ctx)
    >>> rows.add("a"); rows.add_all(["b", "c"]); rows.get(), ctx.values
    (['a', 'b', 'c'], {'rows': ['a', 'b', 'c']})
    >>> rows.update([]); ctx.values
    {}
    """

    kind: ClassVar[str] = "list"

    def of(self, ctx: KeyContext) -> ListHandle:
        return ListHandle(ctx, self.name)


@dataclass(frozen=True, slots=True)
class MapState(StateDescriptor):
    """A map per key (keys and values: data the state codec stores).

    >>> from timeweave.core.state import InMemoryKeyContext
    >>> ctx = InMemoryKeyContext(); seen = MapState("seen").of(ctx)
    >>> seen.put("a", 1); seen.get("a"), seen.contains("b"), seen.items()
    (1, False, [('a', 1)])
    >>> seen.remove("a"); ctx.values
    {}
    """

    kind: ClassVar[str] = "map"

    def of(self, ctx: KeyContext) -> MapHandle:
        return MapHandle(ctx, self.name)


class ValueHandle:
    """A :class:`ValueState` of one key (Flink's ``ValueState``)."""

    __slots__ = ("_ctx", "_name")

    def __init__(self, ctx: KeyContext, name: str) -> None:
        self._ctx, self._name = ctx, name

    def value(self) -> Any | None:
        return self._ctx.get(self._name)

    def update(self, value: Any) -> None:
        if value is None:
            self._ctx.clear(self._name)
        else:
            self._ctx.put(self._name, value)

    def clear(self) -> None:
        self._ctx.clear(self._name)


class ListHandle:
    """A :class:`ListState` of one key (Flink's ``ListState``)."""

    __slots__ = ("_ctx", "_name")

    def __init__(self, ctx: KeyContext, name: str) -> None:
        self._ctx, self._name = ctx, name

    def get(self) -> list[Any]:
        return list(self._ctx.get(self._name) or ())

    def add(self, value: Any) -> None:
        self.add_all((value,))

    def add_all(self, values: Iterable[Any]) -> None:
        current = list(self._ctx.get(self._name) or ())
        current.extend(values)
        self.update(current)

    def update(self, values: list[Any]) -> None:
        if values:
            self._ctx.put(self._name, list(values))
        else:
            self._ctx.clear(self._name)

    def clear(self) -> None:
        self._ctx.clear(self._name)


class MapHandle:
    """A :class:`MapState` of one key (Flink's ``MapState``)."""

    __slots__ = ("_ctx", "_name")

    def __init__(self, ctx: KeyContext, name: str) -> None:
        self._ctx, self._name = ctx, name

    def _map(self) -> dict[Any, Any]:
        return dict(self._ctx.get(self._name) or {})

    def get(self, key: Any) -> Any | None:
        return (self._ctx.get(self._name) or {}).get(key)

    def contains(self, key: Any) -> bool:
        return key in (self._ctx.get(self._name) or {})

    def put(self, key: Any, value: Any) -> None:
        current = self._map()
        current[key] = value
        self._ctx.put(self._name, current)

    def remove(self, key: Any) -> None:
        current = self._map()
        current.pop(key, None)
        if current:
            self._ctx.put(self._name, current)
        else:
            self._ctx.clear(self._name)

    def items(self) -> list[tuple[Any, Any]]:
        return list((self._ctx.get(self._name) or {}).items())

    def clear(self) -> None:
        self._ctx.clear(self._name)


@dataclass(frozen=True, slots=True)
class StateLayout:
    """An operator's per-key state, declared up front: its descriptors and the layout's version.

    The version names the *meaning* of the stored values: a host stores it beside the state it writes (the
    Spark host keeps it in the names of its state variables), and a change to what a name holds bumps it.
    Names are unique.

    >>> layout = StateLayout(1, (ValueState("n"), ListState("rows")))
    >>> from timeweave.core.state import InMemoryKeyContext
    >>> ctx = InMemoryKeyContext({"n": 2})
    >>> layout.snapshot(ctx), layout.holds_state(ctx)
    ({'n': 2}, True)
    >>> other = InMemoryKeyContext(); layout.restore(other, {"n": 2}); other.values
    {'n': 2}
    >>> layout.restore(other, {"x": 1})
    Traceback (most recent call last):
    ...
    timeweave.core.errors.StateFormatError: malformed state: 'x' is not declared by the operator's state layout 1 (declared: n, rows)
    """

    version: int
    states: tuple[StateDescriptor, ...]

    def __post_init__(self) -> None:
        names = [s.name for s in self.states]
        if len(set(names)) != len(names):
            raise ValueError(f"state names must be unique, found {names}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.states)

    def holds_state(self, ctx: KeyContext) -> bool:
        """Whether the key holds any declared state."""
        return any(ctx.get(name) is not None for name in self.names)

    def snapshot(self, ctx: KeyContext) -> dict[str, Any]:
        """The key's declared state as a dict (absent values left out): what :meth:`restore` takes back."""
        out = {}
        for name in self.names:
            value = ctx.get(name)
            if value is not None:
                out[name] = value
        return out

    def restore(self, ctx: KeyContext, snapshot: Mapping[str, Any]) -> None:
        """Put a :meth:`snapshot` into ``ctx`` (a fresh key's context); undeclared names are refused."""
        declared = self.names
        for name in snapshot:
            if name not in declared:
                raise StateFormatError(
                    f"malformed state: {name!r} is not declared by the operator's state layout {self.version} "
                    f"(declared: {', '.join(declared)})")
        for name, value in snapshot.items():
            ctx.put(name, value)

    def clear(self, ctx: KeyContext) -> None:
        """Drop the key's declared state and every timer it holds."""
        for name in self.names:
            ctx.clear(name)
        for timer in ctx.timers():
            ctx.delete_timer(timer)


# -- the operator ---------------------------------------------------------------------------------------
class TimerService(Protocol):
    """The timer part of a :class:`~timeweave.core.state.KeyContext`: event-time timers (µs) and the watermark."""

    def register_timer(self, time: int) -> None: ...

    def delete_timer(self, time: int) -> None: ...

    def timers(self) -> list[int]: ...

    @property
    def watermark(self) -> int: ...


@runtime_checkable
class KeyedOperator(Protocol):
    """What a host needs of an operator (see the module docstring).

    ``layout``: the declared state.  ``process_elements``: buffer a key's elements of one step, return what is
    decided at once (late rows, dead letters).  ``on_watermark``: emit what ``ctx.watermark`` decides, keep
    the key's timers at the times it wants to be woken at.  Outputs carry a :class:`Tag` (:func:`tag_of`).
    """

    layout: StateLayout

    def process_elements(self, ctx: KeyContext, elements: Iterable[Any]) -> list[Any]: ...

    def on_watermark(self, ctx: KeyContext) -> Iterator[Any]: ...


def run_keyed(operator: KeyedOperator, elements: Iterable[tuple[Any, Any]], watermarks: Iterable[int]
              ) -> dict[Tag, list[Any]]:
    """The reference host: feed ``(key, element)`` pairs, then each watermark to every key; outputs by tag.

    Elements all arrive before the first watermark (a bounded input read in one step); a watermark reaches
    every key holding state or a timer, as a host's timers would wake them.

    >>> from timeweave.core.pattern import MatchRecognizeOperator, parse_clause
    >>> from timeweave.core.state import END_OF_TIME
    >>> op = MatchRecognizeOperator(parse_clause("ORDER BY t MEASURES A.t AS s PATTERN (A) DEFINE A AS A.v > 0"))
    >>> out = run_keyed(op, [("k", {"t": 1, "v": 1}), ("k", {"t": 2, "v": 0})], [END_OF_TIME])
    >>> [o.row for o in out[Tag.MAIN]]
    [{'s': 1}]
    """
    from timeweave.core.state import InMemoryKeyContext

    contexts: dict[Any, InMemoryKeyContext] = {}
    by_key: dict[Any, list[Any]] = {}
    for key, element in elements:
        by_key.setdefault(key, []).append(element)
    out: dict[Tag, list[Any]] = {tag: [] for tag in Tag}
    for key, key_elements in by_key.items():
        ctx = contexts.setdefault(key, InMemoryKeyContext())
        for output in operator.process_elements(ctx, key_elements):
            out[tag_of(output)].append(output)
    for watermark in watermarks:
        for ctx in contexts.values():
            ctx.current_watermark = watermark
            for output in operator.on_watermark(ctx):
                out[tag_of(output)].append(output)
    return out


__all__ = [
    "KeyedOperator",
    "ListState",
    "MapState",
    "RowKind",
    "StateDescriptor",
    "StateLayout",
    "Tag",
    "TimerService",
    "ValueState",
    "kind_of",
    "run_keyed",
    "tag_of",
]
