"""Row-pattern aggregates beyond ``COUNT/SUM/AVG/MIN/MAX``: one definition each (state, step, result, type).

Trino's row-pattern suite (``TestAggregationsInRowPatternMatching``) uses these; the names are Trino's,
with Spark's spellings as aliases.  Each function is a fold: ``initial`` state, ``step(state, value)``
returning a *new* state (states are shared between the matcher's alternative threads, so a step never
mutates one), ``result(state)``.  Every step is O(1), so running aggregates in DEFINE stay O(1) per row.

NULL handling and ties (where Trino says "arbitrary", we pick the first row in match order, so every
door and every run gives the same value):

* ``COUNT_IF(b)``: rows where ``b`` is TRUE (bigint; 0 over no rows).
* ``BOOL_AND(b)`` / ``EVERY(b)``, ``BOOL_OR(b)``: NULLs ignored; NULL over no non-NULL values.
* ``ARBITRARY(x)`` / ``ANY_VALUE(x)``: the first non-NULL ``x``.
* ``MAX_BY(x, y)`` / ``MIN_BY(x, y)``: ``x`` of the first row with the greatest / least non-NULL ``y``.
* ``STDDEV``/``STDDEV_SAMP``, ``STDDEV_POP``, ``VARIANCE``/``VAR_SAMP``, ``VAR_POP``: DOUBLE, NULLs ignored,
  Welford's update; the sample forms are NULL below two values (as Trino and Spark).
* ``ARRAY_AGG(x)``: every row's ``x`` in match order, NULLs kept (SQL standard and Trino; Spark's
  ``collect_list`` drops NULLs); NULL over no rows.  The state is a linked chain (:class:`ArrayChain`),
  so a step is O(1) and alternative threads share their common prefix.  Reading it builds the array,
  O(length): in DEFINE that is per row and thread.  Threads whose arrays differ are never merged, so
  ``ARRAY_AGG`` in a DEFINE under an alternation that stays open over many rows (``(A | B)+``) keeps one
  thread per distinct label history, exponentially many.  Use it in MEASURES, or in DEFINE
  only where the alternatives close quickly.

>>> f = AGGREGATE_FUNCTIONS["MAX_BY"]
>>> f.result(f.step(f.step(f.initial, ("p", 1)), ("q", 3)))
'q'
>>> g = AGGREGATE_FUNCTIONS["ARRAY_AGG"]
>>> g.result(g.step(g.step(g.initial, "a"), None))
['a', None]
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

#: The aggregates the parser knows and the evaluators implement inline (hot paths).
CORE_AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX")


@dataclass(frozen=True, slots=True)
class AggregateFunction:
    """One aggregate: a fold over the rows of its variable.

    ``arity`` 2 passes ``(x, y)`` tuples to ``step``.  ``result_type`` is ``"bigint"``, ``"boolean"``,
    ``"double"``, ``"argument"`` (the type of the first argument) or ``"array"`` (an array of it).
    """

    name: str
    arity: int
    initial: Any
    step: Callable[[Any, Any], Any]
    result: Callable[[Any], Any]
    result_type: str


def _count_if(state: int, value: Any) -> int:
    return state + 1 if value is True else state


def _bool_fold(combine: Callable[[bool, bool], bool]) -> Callable[[bool | None, Any], bool | None]:
    """The step of ``BOOL_AND`` / ``BOOL_OR``: NULLs skipped, the first value taken as is, then ``combine``."""

    def step(state: bool | None, value: Any) -> bool | None:
        if value is None:
            return state
        return bool(value) if state is None else combine(state, bool(value))

    return step


def _first_present(state: Any, value: Any) -> Any:
    return value if state is None else state


def _by(better: Callable[[Any, Any], bool]) -> Callable[[tuple[Any, Any] | None, tuple[Any, Any]], tuple[Any, Any] | None]:
    """The step of ``MAX_BY`` / ``MIN_BY``: rows with a NULL key skipped; a tie keeps the earlier row."""

    def step(state: tuple[Any, Any] | None, value: tuple[Any, Any]) -> tuple[Any, Any] | None:
        if value[1] is None:
            return state
        return value if state is None or better(value[1], state[1]) else state

    return step


def _by_result(state: tuple[Any, Any] | None) -> Any:
    return None if state is None else state[0]


_NO_MOMENTS = (0, 0.0, 0.0)


def _moments(state: tuple[int, float, float], value: Any) -> tuple[int, float, float]:
    """Welford's update of (count, mean, sum of squared deviations): stable, O(1), no list kept."""
    if value is None:
        return state
    x = float(value) if isinstance(value, Decimal | int) else value
    count, mean, m2 = state
    count += 1
    delta = x - mean
    mean += delta / count
    return count, mean, m2 + delta * (x - mean)


def _variance(sample: bool) -> Callable[[tuple[int, float, float]], float | None]:
    def result(state: tuple[int, float, float]) -> float | None:
        count, _, m2 = state
        if count == 0 or (sample and count < 2):
            return None
        return m2 / (count - 1 if sample else count)

    return result


def _stddev(sample: bool) -> Callable[[tuple[int, float, float]], float | None]:
    variance = _variance(sample)

    def result(state: tuple[int, float, float]) -> float | None:
        value = variance(state)
        return None if value is None else math.sqrt(value)

    return result


class ArrayChain:
    """An ``ARRAY_AGG`` state: an immutable linked list, newest value first.

    Appending is O(1) and alternative threads share their common prefix.  Equality is by value (the
    matcher merges threads with equal states) and never recursive: the hash is built as values are
    appended, and pickling (streaming and backfill carry matcher state) writes a flat list, because a
    recursive pickle or comparison of a long chain would exceed Python's recursion limit.

    >>> chain = ArrayChain.of(["a", None])
    >>> chain.values(), chain == ArrayChain.of(["a", None]), chain == ArrayChain.of(["a"])
    (['a', None], True, False)
    """

    __slots__ = ("_hash", "prev", "size", "value")

    def __init__(self, value: Any, prev: ArrayChain | None) -> None:
        self.value = value
        self.prev = prev
        self.size = 1 if prev is None else prev.size + 1
        try:
            value_hash = hash(value)
        except TypeError:  # an array-typed input column: lists do not hash
            value_hash = hash(repr(value))
        self._hash = hash((value_hash, None if prev is None else prev._hash))

    @classmethod
    def of(cls, values: list[Any]) -> ArrayChain | None:
        chain = None
        for value in values:
            chain = cls(value, chain)
        return chain

    def values(self) -> list[Any]:
        out = []
        node: ArrayChain | None = self
        while node is not None:
            out.append(node.value)
            node = node.prev
        out.reverse()
        return out

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArrayChain):
            return NotImplemented
        a: ArrayChain | None = self
        b: ArrayChain | None = other
        if self.size != other.size or self._hash != other._hash:
            return False
        while a is not None and b is not None:
            if a is b:  # a shared prefix
                return True
            if a.value != b.value:  # None == None: equal NULL elements compare equal
                return False
            a, b = a.prev, b.prev
        return a is None and b is None

    def __reduce__(self) -> tuple[Any, ...]:
        return (ArrayChain.of, (self.values(),))

    def __repr__(self) -> str:
        return f"ArrayChain({self.values()!r})"


def _append(state: ArrayChain | None, value: Any) -> ArrayChain:
    return ArrayChain(value, state)


def _array(state: ArrayChain | None) -> list[Any] | None:
    return None if state is None else state.values()


def _functions() -> dict[str, AggregateFunction]:
    table: dict[str, AggregateFunction] = {}

    def add(names: tuple[str, ...], arity: int, initial: Any, step: Callable[[Any, Any], Any],
            result: Callable[[Any], Any], result_type: str) -> None:
        for name in names:
            table[name] = AggregateFunction(name, arity, initial, step, result, result_type)

    add(("COUNT_IF",), 1, 0, _count_if, lambda s: s, "bigint")
    add(("BOOL_AND", "EVERY"), 1, None, _bool_fold(operator.and_), lambda s: s, "boolean")
    add(("BOOL_OR",), 1, None, _bool_fold(operator.or_), lambda s: s, "boolean")
    add(("ARBITRARY", "ANY_VALUE"), 1, None, _first_present, lambda s: s, "argument")
    add(("MAX_BY",), 2, None, _by(operator.gt), _by_result, "argument")
    add(("MIN_BY",), 2, None, _by(operator.lt), _by_result, "argument")
    add(("STDDEV", "STDDEV_SAMP"), 1, _NO_MOMENTS, _moments, _stddev(True), "double")
    add(("STDDEV_POP",), 1, _NO_MOMENTS, _moments, _stddev(False), "double")
    add(("VARIANCE", "VAR_SAMP"), 1, _NO_MOMENTS, _moments, _variance(True), "double")
    add(("VAR_POP",), 1, _NO_MOMENTS, _moments, _variance(False), "double")
    add(("ARRAY_AGG",), 1, None, _append, _array, "array")
    return table


#: Name (upper case, aliases included) -> definition, for every aggregate outside :data:`CORE_AGGREGATES`.
AGGREGATE_FUNCTIONS: dict[str, AggregateFunction] = _functions()

#: Every aggregate name the parser accepts.
ALL_AGGREGATES = frozenset(CORE_AGGREGATES) | frozenset(AGGREGATE_FUNCTIONS)
