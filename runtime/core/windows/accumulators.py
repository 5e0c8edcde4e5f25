"""Accumulators: the create / add / merge / result interface window aggregates are computed with.

One interface for SQL aggregates (COUNT(*), COUNT, SUM, MIN, MAX, AVG, COUNT(DISTINCT)) and user
functions (:class:`FunctionAccumulator`), usable by any windowed operator: a slice or window holds one
accumulator per aggregate, rows are *added*, slices are *merged* into windows (HOP, CUMULATE) and
sessions into each other, and the *result* is read when the window fires.

Retraction (an updating input: a continuous ``GROUP BY`` over ``+I/-U/+U/-D`` rows, :mod:`timeweave.core.updates`):
an accumulator that can take a value back has ``retract(acc, value)``, the exact inverse of ``add`` (Flink's
``retract`` of an ``AggregateFunction``).  ``COUNT(*)``, ``COUNT`` and ``AVG`` retract on their own
accumulators; ``SUM``, ``MIN``, ``MAX`` and ``COUNT(DISTINCT)`` need more state to take a value back (SUM must
know when no value is left, MIN/MAX the values under the extreme), so they have retracting twins
(:class:`SumWithRetract`, :class:`MinWithRetract`, :class:`MaxWithRetract`, :class:`CountDistinctWithRetract`,
Flink's ``*WithRetractAggFunction``); :func:`with_retraction` picks the twin.  A retraction of a value never
added leaves a negative count behind, as in Flink, and the result ignores it.  Integer and ``Decimal`` sums
taken back are exact; a ``float`` sum may differ from a fresh sum of the values held in its last bits
(floating-point addition is not associative), as in Flink.

Contract (what makes slice sharing correct): ``add(acc, value)`` and ``merge(acc, other)`` may modify
``acc`` and return it (or return a new value), and never modify ``other`` (a HOP slice is merged into
several windows).  Accumulators are plain data :mod:`timeweave.core.state_codec` stores: ``None``, numbers,
``Decimal``, strings, datetimes, lists, sets (never objects needing pickle).

SQL's NULL rules: COUNT(x), SUM, MIN, MAX, AVG and COUNT(DISTINCT x) ignore NULL values; SUM, MIN, MAX
and AVG of no value are NULL; COUNT is 0.

>>> calls = Aggregates((AggregateCall(CountStar(), name="cnt"), AggregateCall(Sum(), "price", name="total"),
...                     AggregateCall(Max(), "price", filter="big", name="max_big")))
>>> a = calls.add(calls.create(), {"price": 4, "big": False})
>>> b = calls.add(calls.create(), {"price": 7, "big": True})
>>> calls.results(calls.merge(a, b)), calls.names
((2, 11, 7), ('cnt', 'total', 'max_big'))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from operator import itemgetter
from typing import Any, ClassVar, Protocol, runtime_checkable

from timeweave.core.errors import SpecError


@runtime_checkable
class Accumulator(Protocol):
    """What a window aggregate is computed with (see the module docstring for the contract)."""

    def create(self) -> Any: ...

    def add(self, acc: Any, value: Any) -> Any: ...

    def merge(self, acc: Any, other: Any) -> Any: ...

    def result(self, acc: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class CountStar:
    """``COUNT(*)``: every row, NULLs included.

    >>> c = CountStar(); c.result(c.add(c.add(c.create(), None), 1))
    2
    """

    def create(self) -> int:
        return 0

    def add(self, acc: int, value: Any) -> int:
        return acc + 1

    def retract(self, acc: int, value: Any) -> int:
        return acc - 1

    def merge(self, acc: int, other: int) -> int:
        return acc + other

    def result(self, acc: int) -> int:
        return acc


@dataclass(frozen=True, slots=True)
class Count:
    """``COUNT(x)``: the non-NULL values.

    >>> c = Count(); c.result(c.add(c.add(c.create(), None), 1))
    1
    """

    def create(self) -> int:
        return 0

    def add(self, acc: int, value: Any) -> int:
        return acc if value is None else acc + 1

    def retract(self, acc: int, value: Any) -> int:
        return acc if value is None else acc - 1

    def merge(self, acc: int, other: int) -> int:
        return acc + other

    def result(self, acc: int) -> int:
        return acc


@dataclass(frozen=True, slots=True)
class Sum:
    """``SUM(x)``: NULL when no value is non-NULL.

    >>> s = Sum(); s.result(s.create()), s.result(s.add(s.add(s.create(), Decimal("1.50")), Decimal("2.00")))
    (None, Decimal('3.50'))
    """

    def create(self) -> Any:
        return None

    def add(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        return value if acc is None else acc + value

    def merge(self, acc: Any, other: Any) -> Any:
        if other is None:
            return acc
        return other if acc is None else acc + other

    def result(self, acc: Any) -> Any:
        return acc


@dataclass(frozen=True, slots=True)
class Min:
    """``MIN(x)`` over the non-NULL values.

    >>> m = Min(); m.result(m.add(m.add(m.create(), 3), 1))
    1
    """

    def create(self) -> Any:
        return None

    def add(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        return value if acc is None or value < acc else acc

    def merge(self, acc: Any, other: Any) -> Any:
        return self.add(acc, other)

    def result(self, acc: Any) -> Any:
        return acc


@dataclass(frozen=True, slots=True)
class Max:
    """``MAX(x)`` over the non-NULL values.

    >>> m = Max(); m.result(m.add(m.add(m.create(), 3), 1))
    3
    """

    def create(self) -> Any:
        return None

    def add(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        return value if acc is None or value > acc else acc

    def merge(self, acc: Any, other: Any) -> Any:
        return self.add(acc, other)

    def result(self, acc: Any) -> Any:
        return acc


@dataclass(frozen=True, slots=True)
class Avg:
    """``AVG(x)`` over the non-NULL values: a ``Decimal`` for decimals, else a float (Spark's AVG type; the
    doors cast to the output type); NULL when there is none.  The accumulator is ``[sum, count]``.

    >>> a = Avg(); a.result(a.add(a.add(a.create(), 1), 2)), a.result(a.create())
    (1.5, None)
    """

    def create(self) -> list[Any]:
        return [None, 0]

    def add(self, acc: list[Any], value: Any) -> list[Any]:
        if value is not None:
            acc[0] = value if acc[0] is None else acc[0] + value
            acc[1] += 1
        return acc

    def merge(self, acc: list[Any], other: list[Any]) -> list[Any]:
        if other[1]:
            acc[0] = other[0] if acc[0] is None else acc[0] + other[0]
            acc[1] += other[1]
        return acc

    def retract(self, acc: list[Any], value: Any) -> list[Any]:
        """Take ``value`` back; with no value left the sum starts over (so a later value's type wins, as in a
        fresh accumulator, and ``Decimal`` keeps its scale)."""
        if value is not None:
            total = (0 if acc[0] is None else acc[0]) - value
            acc[1] -= 1
            acc[0] = None if acc[1] == 0 else total
        return acc

    def result(self, acc: list[Any]) -> Any:
        total, count = acc
        if not count:
            return None
        if isinstance(total, Decimal):
            return total / Decimal(count)
        return total / count


@dataclass(frozen=True, slots=True)
class CountDistinct:
    """``COUNT(DISTINCT x)``: the distinct non-NULL values (kept as a set: values must be hashable).

    >>> c = CountDistinct(); acc = c.create()
    >>> for v in ("a", "b", "a", None):
    ...     acc = c.add(acc, v)
    >>> c.result(acc)
    2
    """

    def create(self) -> set[Any]:
        return set()

    def add(self, acc: set[Any], value: Any) -> set[Any]:
        if value is not None:
            acc.add(value)
        return acc

    def merge(self, acc: set[Any], other: set[Any]) -> set[Any]:
        acc |= other
        return acc

    def result(self, acc: set[Any]) -> int:
        return len(acc)


@dataclass(frozen=True, slots=True)
class FunctionAccumulator:
    """A user aggregate from four functions (the same contract; its state must be plain data).

    >>> concat = FunctionAccumulator(create=list, add=lambda acc, v: [*acc, v], merge=lambda a, b: a + b,
    ...                              result=lambda acc: ",".join(sorted(acc)))
    >>> concat.result(concat.merge(concat.add(concat.create(), "b"), concat.add(concat.create(), "a")))
    'a,b'
    """

    create: Callable[[], Any]
    add: Callable[[Any, Any], Any]
    merge: Callable[[Any, Any], Any]
    result: Callable[[Any], Any]
    #: the inverse of ``add``, for an updating input (optional: without it the aggregate takes no retraction)
    retract: Callable[[Any, Any], Any] | None = None


@dataclass(frozen=True, slots=True)
class SumWithRetract:
    """``SUM(x)`` that takes values back: the accumulator is ``[sum, count of non-NULL values]`` and the result
    is NULL when the count is 0 (Flink's ``SumWithRetractAggFunction``).

    >>> s = SumWithRetract(); acc = s.add(s.add(s.create(), 3), 4)
    >>> s.result(acc), s.result(s.retract(acc, 3)), s.result(s.retract(acc, 4))
    (7, 4, None)
    """

    def create(self) -> list[Any]:
        return [None, 0]

    def add(self, acc: list[Any], value: Any) -> list[Any]:
        if value is not None:
            acc[0] = value if acc[0] is None else acc[0] + value  # raises before any change on a bad value
            acc[1] += 1
        return acc

    def retract(self, acc: list[Any], value: Any) -> list[Any]:
        if value is not None:
            total = (0 if acc[0] is None else acc[0]) - value
            acc[1] -= 1
            acc[0] = None if acc[1] == 0 else total  # no value left: start over (NULL, and no stale scale)
        return acc

    def merge(self, acc: list[Any], other: list[Any]) -> list[Any]:
        if other[1]:
            acc[0] = other[0] if acc[0] is None else acc[0] + other[0]
            acc[1] += other[1]
            if acc[1] == 0:
                acc[0] = None
        return acc

    def result(self, acc: list[Any]) -> Any:
        return None if acc[1] == 0 else acc[0]


def _extreme_after_retract(counts: dict[Any, int], lowest: bool) -> Any:
    """The extreme of the values still held (positive count), None when there is none."""
    held = [value for value, count in counts.items() if count > 0]
    if not held:
        return None
    return min(held) if lowest else max(held)


@dataclass(frozen=True, slots=True)
class _ExtremeWithRetract:
    """MIN or MAX over a multiset that takes values back: the accumulator is ``[extreme, {value: count}]``
    (``lowest`` says which extreme; :class:`MinWithRetract` and :class:`MaxWithRetract` are its two kinds)."""

    lowest: ClassVar[bool] = True

    def create(self) -> list[Any]:
        return [None, {}]

    def add(self, acc: list[Any], value: Any) -> list[Any]:
        if value is not None:
            # compares first: a value that cannot compare changes nothing
            better = acc[0] is None or (value < acc[0] if self.lowest else value > acc[0])
            counts = acc[1]
            count = counts.get(value, 0) + 1
            if count:
                counts[value] = count
            else:
                del counts[value]
            if better and count > 0:
                acc[0] = value
        return acc

    def retract(self, acc: list[Any], value: Any) -> list[Any]:
        if value is not None:
            counts = acc[1]
            count = counts.get(value, 0) - 1
            if count:
                counts[value] = count
            else:
                del counts[value]
            if count <= 0 and acc[0] is not None and value == acc[0]:
                acc[0] = _extreme_after_retract(counts, self.lowest)
        return acc

    def merge(self, acc: list[Any], other: list[Any]) -> list[Any]:
        counts = acc[1]
        for value, count in other[1].items():
            total = counts.get(value, 0) + count
            if total:
                counts[value] = total
            else:
                counts.pop(value, None)
        acc[0] = _extreme_after_retract(counts, self.lowest)
        return acc

    def result(self, acc: list[Any]) -> Any:
        return acc[0]


@dataclass(frozen=True, slots=True)
class MinWithRetract(_ExtremeWithRetract):
    """``MIN(x)`` that takes values back: the accumulator is ``[min, {value: count}]``, the multiset of the
    non-NULL values and the cached minimum (Flink's ``MinWithRetractAggFunction``: retracting the minimum
    rescans the multiset).

    >>> m = MinWithRetract(); acc = m.add(m.add(m.add(m.create(), 3), 1), 1)
    >>> m.result(m.retract(acc, 1)), m.result(m.retract(acc, 1)), m.result(m.retract(acc, 3))
    (1, 3, None)
    """

    lowest: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class MaxWithRetract(_ExtremeWithRetract):
    """``MAX(x)`` that takes values back (the twin of :class:`MinWithRetract`, Flink's
    ``MaxWithRetractAggFunction``).

    >>> m = MaxWithRetract(); acc = m.add(m.add(m.create(), 3), 1)
    >>> m.result(acc), m.result(m.retract(acc, 3))
    (3, 1)
    """

    lowest: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class CountDistinctWithRetract:
    """``COUNT(DISTINCT x)`` that takes values back: the accumulator is ``[distinct, {value: count}]`` (a value
    counts while it is held at least once; Flink's distinct ``MapView`` of value to count).

    >>> c = CountDistinctWithRetract(); acc = c.create()
    >>> for v in ("a", "b", "a", None):
    ...     acc = c.add(acc, v)
    >>> c.result(acc), c.result(c.retract(acc, "a")), c.result(c.retract(acc, "a"))
    (2, 2, 1)
    """

    def create(self) -> list[Any]:
        return [0, {}]

    def _shift(self, acc: list[Any], value: Any, step: int) -> list[Any]:
        if value is not None:
            counts = acc[1]
            before = counts.get(value, 0)  # hashes first: an unhashable value changes nothing
            after = before + step
            if after:
                counts[value] = after
            else:
                del counts[value]
            acc[0] += (after > 0) - (before > 0)
        return acc

    def add(self, acc: list[Any], value: Any) -> list[Any]:
        return self._shift(acc, value, 1)

    def retract(self, acc: list[Any], value: Any) -> list[Any]:
        return self._shift(acc, value, -1)

    def merge(self, acc: list[Any], other: list[Any]) -> list[Any]:
        for value, count in other[1].items():
            self._shift(acc, value, count)
        return acc

    def result(self, acc: list[Any]) -> int:
        return acc[0]


class Collect:
    """The values themselves, in arrival order (slices merged in window order): what a window keeps when its
    aggregate is not one an accumulator computes (any engine aggregate, a user's pandas UDAF, an expression), so
    that the engine aggregates the fired window's rows; the windows, the late rule and session merging stay the
    operator's.  Values must be plain data (the state codec stores them), e.g. a row's wire text.

    >>> c = Collect(); a = c.add(c.create(), "r1"); b = c.add(c.create(), "r2")
    >>> c.result(c.merge(a, b)), b
    (['r1', 'r2'], ['r2'])
    """

    def create(self) -> list[Any]:
        return []

    def add(self, acc: list[Any], value: Any) -> list[Any]:
        acc.append(value)
        return acc

    def merge(self, acc: list[Any], other: list[Any]) -> list[Any]:
        acc.extend(other)  # never modifies `other`: a HOP slice is merged into several windows
        return acc

    def result(self, acc: list[Any]) -> list[Any]:
        # A copy: a CUMULATE window's accumulator goes on into the period's next window after this one fired.
        return list(acc)


#: The retracting twin of a built-in accumulator whose own state cannot take a value back.
_RETRACTING: dict[type, Callable[[], Accumulator]] = {
    Sum: SumWithRetract, Min: MinWithRetract, Max: MaxWithRetract, CountDistinct: CountDistinctWithRetract,
}  # fmt: skip


def can_retract(accumulator: Any) -> bool:
    """Whether ``accumulator`` takes values back (has a callable ``retract``)."""
    return callable(getattr(accumulator, "retract", None))


def with_retraction(accumulator: Accumulator) -> Accumulator:
    """``accumulator`` if it can retract, else its retracting twin; a user accumulator without ``retract`` is
    returned as it is (the caller decides whether it needs one).

    >>> with_retraction(Min()), with_retraction(Count())
    (MinWithRetract(), Count())
    """
    if can_retract(accumulator):
        return accumulator
    twin = _RETRACTING.get(type(accumulator))
    return accumulator if twin is None else twin()


#: SQL names of the built-in accumulators (what a door maps an aggregate call to).
BUILT_IN: dict[str, Callable[[], Accumulator]] = {
    "COUNT(*)": CountStar, "COUNT": Count, "SUM": Sum, "MIN": Min, "MAX": Max, "AVG": Avg,
    "COUNT(DISTINCT)": CountDistinct,
}  # fmt: skip


def _reader(value: str | Callable[[Any], Any] | None, argument: str) -> Callable[[Any], Any] | None:
    if value is None or callable(value):
        return value
    if isinstance(value, str) and value:
        return itemgetter(value)
    raise SpecError(argument, f"expected a column name or a function of the row, got {value!r}")


@dataclass(frozen=True)
class AggregateCall:
    """One aggregate of a window aggregation: its accumulator, the value it reads from a row (a column name,
    a function of the row, or None: the row itself, as COUNT(*) wants), an optional ``FILTER (WHERE ...)``
    (a column holding the condition's value, or a function of the row: only rows where it is true are
    added) and the output name.

    >>> call = AggregateCall(Sum(), "price", filter=lambda row: row["item"] != "X", name="total")
    >>> call.value_of({"price": 2, "item": "A"}), call.passes({"price": 2, "item": "X"})
    (2, False)
    """

    accumulator: Accumulator
    argument: str | Callable[[Any], Any] | None = None
    filter: str | Callable[[Any], Any] | None = None
    name: str | None = None
    _value: Callable[[Any], Any] | None = field(init=False, repr=False, compare=False)
    _filter: Callable[[Any], Any] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.accumulator, Accumulator):
            raise SpecError("accumulator", f"{self.accumulator!r} has no create/add/merge/result",
                            where=self.name)
        object.__setattr__(self, "_value", _reader(self.argument, "argument"))
        object.__setattr__(self, "_filter", _reader(self.filter, "filter"))

    def value_of(self, row: Any) -> Any:
        return row if self._value is None else self._value(row)

    def passes(self, row: Any) -> bool:
        """Whether ``row`` passes the FILTER (a NULL condition does not, as in SQL)."""
        if self._filter is None:
            return True
        passed = self._filter(row)
        return passed is not None and bool(passed)


class Aggregates:
    """The aggregates of one window aggregation, over one accumulator row per slice or window:
    ``[row_count, acc_1, ..., acc_n]``.  ``row_count`` counts every row added (Flink's hidden ``COUNT(*)``):
    a window with none is empty and never emitted.

    >>> aggs = Aggregates((AggregateCall(Count(), "x"),))
    >>> acc = aggs.add(aggs.create(), {"x": None})
    >>> acc, aggs.results(acc), Aggregates.is_empty(aggs.create())
    ([1, 0], (0,), True)
    """

    __slots__ = ("_accumulators", "_plan", "calls", "names")

    def __init__(self, calls: Sequence[AggregateCall]) -> None:
        self.calls = tuple(calls)
        if not all(isinstance(c, AggregateCall) for c in self.calls):
            raise SpecError("aggregates", "expected AggregateCall values")
        self.names = tuple(c.name or f"agg_{i}" for i, c in enumerate(self.calls))
        if len(set(self.names)) != len(self.names):
            raise SpecError("aggregates", f"two aggregates share an output name in {list(self.names)}")
        self._accumulators = tuple(c.accumulator for c in self.calls)
        # (position, add, value reader, filter) per call: the hot loop reads no attributes
        self._plan = tuple((i + 1, c.accumulator.add, c._value, c._filter) for i, c in enumerate(self.calls))

    def create(self) -> list[Any]:
        return [0, *(a.create() for a in self._accumulators)]

    def add(self, accs: list[Any], row: Any) -> list[Any]:
        """Add ``row`` to ``accs`` (modified and returned)."""
        accs[0] += 1
        for position, add, value, condition in self._plan:
            if condition is not None:
                passed = condition(row)
                if passed is None or not passed:
                    continue
            accs[position] = add(accs[position], row if value is None else value(row))
        return accs

    def merge(self, accs: list[Any], other: list[Any]) -> list[Any]:
        """Merge ``other`` into ``accs`` (modified and returned; ``other`` is left as it was)."""
        accs[0] += other[0]
        for i, accumulator in enumerate(self._accumulators, 1):
            accs[i] = accumulator.merge(accs[i], other[i])
        return accs

    def results(self, accs: list[Any]) -> tuple[Any, ...]:
        return tuple(a.result(accs[i]) for i, a in enumerate(self._accumulators, 1))

    @staticmethod
    def is_empty(accs: list[Any] | None) -> bool:
        return accs is None or accs[0] == 0

    @staticmethod
    def rows(accs: Mapping[int, list[Any]] | None) -> int:
        """How many rows the accumulator rows of a mapping counted (slices of a key)."""
        return sum(a[0] for a in accs.values()) if accs else 0


__all__ = [
    "BUILT_IN",
    "Accumulator",
    "AggregateCall",
    "Aggregates",
    "Avg",
    "Collect",
    "Count",
    "CountDistinct",
    "CountDistinctWithRetract",
    "CountStar",
    "FunctionAccumulator",
    "Max",
    "MaxWithRetract",
    "Min",
    "MinWithRetract",
    "Sum",
    "SumWithRetract",
    "can_retract",
    "with_retraction",
]
