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

Collected aggregates keep every row's value in an :class:`ArrayChain` (O(1) a step, shared between
threads) and compute their result when read, O(length), so in DEFINE they cost what ``ARRAY_AGG`` costs:

* ``MAP_AGG(k, v)``: a map of each non-NULL ``k`` to the ``v`` of its first row (Trino keeps one value per
  key); ``MULTIMAP_AGG(k, v)``: each non-NULL ``k`` to the array of its rows' ``v``, in match order;
  ``MAP_UNION(m)``: the union of the non-NULL maps, a key's value from the first map holding it.  NULL over
  no rows (no non-NULL key).
* ``APPROX_DISTINCT(x[, e])``: the exact number of distinct non-NULL ``x`` (within any error bound ``e``).
* ``LISTAGG(x[, sep])`` / ``STRING_AGG(x[, sep])``: the non-NULL ``x`` as text joined by ``sep`` (default
  empty), in match order; NULL over no non-NULL values (Trino and Spark).
* ``MIN(x, n)`` / ``MAX(x, n)``: the ``n`` smallest / greatest non-NULL ``x``, ascending / descending
  (Trino); ``MIN_BY(x, y, n)`` / ``MAX_BY(x, y, n)``: the ``x`` of the ``n`` rows with the least / greatest
  non-NULL ``y``, in that order of ``y``, ties in match order.  NULL over no values; ``n`` a positive
  integer constant.
* ``COLLECT_LIST(x)`` (NULLs dropped) and ``COLLECT_SET(x)`` (distinct, in order of first appearance):
  Spark's, an empty array over no rows.
* ``BIT_AND`` / ``BIT_OR`` / ``BIT_XOR`` (integers, NULLs ignored, NULL over none), ``SOME`` / ``ANY``
  (``BOOL_OR``), ``PRODUCT`` (DOUBLE), ``MEDIAN`` (DOUBLE, Spark's ``median``: the middle value, or the
  mean of the two middle ones), ``MODE`` (the most frequent non-NULL value, the first in match order on a
  tie), ``COVAR_POP`` / ``COVAR_SAMP`` / ``CORR`` (pairs with both values non-NULL; DOUBLE).

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
    ``"double"``, ``"string"``, ``"argument"`` (the type of the first argument), ``"array"`` (an array of
    it), ``"map"`` (a map of the first argument to the second), ``"multimap"`` (a map of the first to
    arrays of the second) or ``"by_array"`` (an array of the first argument: ``MAX_BY(x, y, n)``).
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


def _collected(compute: Callable[[list[Any]], Any]) -> Callable[[ArrayChain | None], Any]:
    """The result of a collected aggregate: ``compute`` over the values in match order."""

    def result(state: ArrayChain | None) -> Any:
        return compute([] if state is None else state.values())

    return result


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # Spark's CAST(boolean AS STRING)
    return str(value)


def _hashable(value: Any) -> Any:
    """A map key or set member: arrays (lists) as tuples, so equal arrays are one key."""
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


def _map_agg(pairs: list[tuple[Any, Any]]) -> dict[Any, Any] | None:
    out: dict[Any, Any] = {}
    for key, value in pairs:
        if key is not None:
            out.setdefault(_hashable(key), value)
    return out or None


def _multimap_agg(pairs: list[tuple[Any, Any]]) -> dict[Any, list[Any]] | None:
    out: dict[Any, list[Any]] = {}
    for key, value in pairs:
        if key is not None:
            out.setdefault(_hashable(key), []).append(value)
    return out or None


def _map_union(maps: list[Any]) -> dict[Any, Any] | None:
    out: dict[Any, Any] = {}
    present = False
    for mapping in maps:
        if mapping is None:
            continue
        present = True
        # a map column arrives from Arrow as a list of (key, value) pairs
        for key, value in (mapping.items() if isinstance(mapping, dict) else mapping):
            out.setdefault(_hashable(key), value)
    return out if present else None


def _distinct(values: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for value in values:
        key = _hashable(value)
        if value is not None and key not in seen:
            seen.add(key)
            out.append(value)
    return out


def _bits(combine: Callable[[int, int], int]) -> Callable[[list[Any]], int | None]:
    def compute(values: list[Any]) -> int | None:
        present = [int(v) for v in values if v is not None]
        if not present:
            return None
        result = present[0]
        for value in present[1:]:
            result = combine(result, value)
        return result

    return compute


def _product(values: list[Any]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return math.prod(present) if present else None


def _median(values: list[Any]) -> float | None:
    present = sorted(float(v) for v in values if v is not None)
    if not present:
        return None
    middle = len(present) // 2
    return present[middle] if len(present) % 2 else (present[middle - 1] + present[middle]) / 2


def _mode(values: list[Any]) -> Any:
    counts: dict[Any, int] = {}
    first: dict[Any, Any] = {}
    for value in values:
        if value is not None:
            key = _hashable(value)
            counts[key] = counts.get(key, 0) + 1
            first.setdefault(key, value)
    if not counts:
        return None
    best = max(counts.values())
    return first[next(key for key, count in counts.items() if count == best)]  # dicts keep match order


def _pairs(values: list[tuple[Any, Any]]) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in values if x is not None and y is not None]


def _covariance(sample: bool) -> Callable[[list[tuple[Any, Any]]], float | None]:
    def compute(values: list[tuple[Any, Any]]) -> float | None:
        pairs = _pairs(values)
        n = len(pairs)
        if n == 0 or (sample and n < 2):
            return None
        mean_x = sum(x for x, _ in pairs) / n
        mean_y = sum(y for _, y in pairs) / n
        return sum((x - mean_x) * (y - mean_y) for x, y in pairs) / (n - 1 if sample else n)

    return compute


def _corr(values: list[tuple[Any, Any]]) -> float | None:
    pairs = _pairs(values)
    n = len(pairs)
    if n == 0:
        return None
    mean_x = sum(x for x, _ in pairs) / n
    mean_y = sum(y for _, y in pairs) / n
    cxy = sum((x - mean_x) * (y - mean_y) for x, y in pairs)
    sx = math.sqrt(sum((x - mean_x) ** 2 for x, _ in pairs))
    sy = math.sqrt(sum((y - mean_y) ** 2 for _, y in pairs))
    return None if sx == 0 or sy == 0 else cxy / (sx * sy)  # Spark: NULL when a variance is zero


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
    add(("SOME", "ANY"), 1, None, _bool_fold(operator.or_), lambda s: s, "boolean")
    add(("MAP_AGG",), 2, None, _append, _collected(_map_agg), "map")
    add(("MULTIMAP_AGG",), 2, None, _append, _collected(_multimap_agg), "multimap")
    add(("MAP_UNION",), 1, None, _append, _collected(_map_union), "argument")
    add(("APPROX_DISTINCT",), 1, None, _append, _collected(lambda values: len(_distinct(values))), "bigint")
    add(("LISTAGG",), 1, None, _append, _collected(lambda v: "".join(map(_text, p)) if (p := [x for x in v if x is not None])
                                                   else None), "string")
    table["STRING_AGG"] = AggregateFunction("STRING_AGG", 1, None, _append, table["LISTAGG"].result, "string")
    add(("COLLECT_LIST",), 1, None, _append, _collected(lambda values: [v for v in values if v is not None]), "array")
    add(("COLLECT_SET",), 1, None, _append, _collected(_distinct), "array")
    add(("BIT_AND",), 1, None, _append, _collected(_bits(operator.and_)), "argument")
    add(("BIT_OR",), 1, None, _append, _collected(_bits(operator.or_)), "argument")
    add(("BIT_XOR",), 1, None, _append, _collected(_bits(operator.xor)), "argument")
    add(("PRODUCT",), 1, None, _append, _collected(_product), "double")
    add(("MEDIAN",), 1, None, _append, _collected(_median), "double")
    add(("MODE",), 1, None, _append, _collected(_mode), "argument")
    add(("COVAR_POP",), 2, None, _append, _collected(_covariance(False)), "double")
    add(("COVAR_SAMP",), 2, None, _append, _collected(_covariance(True)), "double")
    add(("CORR",), 2, None, _append, _collected(_corr), "double")
    return table


#: Name (upper case, aliases included) -> definition, for every aggregate outside :data:`CORE_AGGREGATES`.
AGGREGATE_FUNCTIONS: dict[str, AggregateFunction] = _functions()


@dataclass(frozen=True, slots=True)
class Parameterized:
    """An aggregate with constant arguments after its value (and key): ``MIN(x, n)``, ``LISTAGG(x, sep)``.

    ``kinds`` names each constant's kind (``"count"``: a positive integer, ``"text"``: a string,
    ``"number"``: any number); each is optional (without it, the plain aggregate).  ``make(*values)``
    builds the fold.
    """

    kinds: tuple[str, ...]
    make: Callable[..., AggregateFunction]


def _top(name: str, by: bool, largest: bool) -> Callable[[int], AggregateFunction]:
    """Trino's ``MIN/MAX(x, n)`` and ``MIN_BY/MAX_BY(x, y, n)``: the n best rows, ties in match order."""

    def make(n: int) -> AggregateFunction:
        def result(state: ArrayChain | None) -> list[Any] | None:
            rows = [] if state is None else state.values()
            keyed = [(row[1], row[0]) for row in rows if row[1] is not None] if by else \
                [(row, row) for row in rows if row is not None]
            if not keyed:
                return None
            # sorted is stable: equal keys keep match order, the first rows win (Trino: arbitrary)
            best = sorted(keyed, key=lambda pair: pair[0], reverse=largest)[:n]
            return [value for _, value in best]

        return AggregateFunction(name, 2 if by else 1, None, _append, result, "by_array" if by else "array")

    return make


def _listagg(name: str) -> Callable[..., AggregateFunction]:
    def make(separator: str = "") -> AggregateFunction:
        def result(state: ArrayChain | None) -> str | None:
            values = [] if state is None else [_text(v) for v in state.values() if v is not None]
            return separator.join(values) if values else None

        return AggregateFunction(name, 1, None, _append, result, "string")

    return make


def _approx_distinct(error: Any = None) -> AggregateFunction:
    return AGGREGATE_FUNCTIONS["APPROX_DISTINCT"]


#: Aggregates taking constant arguments (see :class:`Parameterized`); without them, their plain form is used.
PARAMETERIZED: dict[str, Parameterized] = {
    "MIN": Parameterized(("count",), _top("MIN", by=False, largest=False)),
    "MAX": Parameterized(("count",), _top("MAX", by=False, largest=True)),
    "MIN_BY": Parameterized(("count",), _top("MIN_BY", by=True, largest=False)),
    "MAX_BY": Parameterized(("count",), _top("MAX_BY", by=True, largest=True)),
    "LISTAGG": Parameterized(("text",), _listagg("LISTAGG")),
    "STRING_AGG": Parameterized(("text",), _listagg("STRING_AGG")),
    "APPROX_DISTINCT": Parameterized(("number",), _approx_distinct),
}


def aggregate_function(name: str, parameters: tuple[Any, ...] = ()) -> AggregateFunction | None:
    """The fold of aggregate ``name`` with its constant ``parameters``; None for an inline core aggregate.

    >>> top = aggregate_function("MAX", (2,))
    >>> top.result(top.step(top.step(top.step(top.initial, 3), None), 5))
    [5, 3]
    """
    if parameters:
        return PARAMETERIZED[name].make(*parameters)
    return AGGREGATE_FUNCTIONS.get(name)


#: Every aggregate name the parser accepts.
ALL_AGGREGATES = frozenset(CORE_AGGREGATES) | frozenset(AGGREGATE_FUNCTIONS)
