"""Window functions of Flink's DataStream windows: what a firing window emits.

* :func:`reduce` (``ReduceFunction``): two elements -> one, applied as elements arrive (the window keeps one
  value) and, when windows merge, to their values in window order;
* :func:`aggregate` (``AggregateFunction``: :class:`AggregateFunction` ``create`` / ``add`` / ``merge`` /
  ``result``): the window keeps one accumulator; merging windows merge accumulators;
* :func:`process` (``ProcessWindowFunction``): all the window's elements and a :class:`ProcessContext` (the key,
  the window, the watermark, the processing time, per-window state and the key's global state), giving any
  number of results;
* ``reduce(fn, process=...)`` / ``aggregate(agg, process=...)``: incremental aggregation, then ``process`` with
  the one result (Flink's ``reduce(reduceFunction, windowFunction)``).

With an evictor the window keeps every element and the incremental part runs over the survivors at each firing,
as in Flink.  Kept values (reduce values, accumulators, elements, the process states) must be plain data the state
codec stores (dicts, lists, numbers, strings, datetimes, decimals...): the operator's first snapshot says which
value is not.

>>> class Average(AggregateFunction):
...     def create(self): return [0, 0]
...     def add(self, value, acc): return [acc[0] + value, acc[1] + 1]
...     def merge(self, a, b): return [a[0] + b[0], a[1] + b[1]]
...     def result(self, acc): return acc[0] / acc[1]
>>> f = aggregate(Average())
>>> f.emit(f.incremental([1, 2, 3, 6]), None)
(3.0,)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from timeweave.core.errors import SpecError
from timeweave.core.windows.spec import Window


class AggregateFunction:
    """Flink's ``AggregateFunction``: subclass it.  ``add`` and ``merge`` return the accumulator (they may
    change and return the one given)."""

    def create(self) -> Any:
        raise NotImplementedError

    def add(self, value: Any, accumulator: Any) -> Any:
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def result(self, accumulator: Any) -> Any:
        return accumulator


@dataclass
class ProcessContext:
    """What a process function sees of a firing (Flink's ``ProcessWindowFunction.Context``).

    ``window_state`` is kept per window (dropped with the window), ``global_state`` per key: plain dicts the
    function may change.  Times are ms.
    """

    key: Any
    window: Window
    current_watermark: int
    current_processing_time: int | None
    window_state: dict[str, Any]
    global_state: dict[str, Any]


ProcessFn = Callable[[Any, ProcessContext, list[Any]], Iterable[Any]]


class ProcessWindowFunction:
    """Flink's ``ProcessWindowFunction``: subclass it (or pass a plain function to :func:`process`).

    ``process(key, context, elements)`` returns (or yields) the window's results; ``clear(context)`` runs when
    the window goes (Flink's ``clear``).
    """

    def process(self, key: Any, context: ProcessContext, elements: list[Any]) -> Iterable[Any]:
        raise NotImplementedError

    def clear(self, context: ProcessContext) -> None:
        return None


@dataclass(frozen=True)
class WindowFunction:
    """A window's function: ``kind`` is ``"reduce"``, ``"aggregate"`` or ``"process"`` (all elements kept);
    ``then`` an optional process function applied to the incremental result.  Build with :func:`reduce`,
    :func:`aggregate` or :func:`process`."""

    kind: str
    reduce_function: Callable[[Any, Any], Any] | None = None
    aggregate_function: AggregateFunction | None = None
    process_function: ProcessWindowFunction | ProcessFn | None = None

    @property
    def keeps_elements(self) -> bool:
        """Whether the window keeps its elements (a plain process function) rather than one value."""
        return self.kind == "process"

    # -- the incremental part (one kept value per window) ----------------------------------------------
    def create(self, value: Any) -> Any:
        """The kept value of a window's first element."""
        if self.kind == "reduce":
            return value
        assert self.aggregate_function is not None
        return self.aggregate_function.add(value, self.aggregate_function.create())

    def add(self, kept: Any, value: Any) -> Any:
        if self.kind == "reduce":
            assert self.reduce_function is not None
            return self.reduce_function(kept, value)
        assert self.aggregate_function is not None
        return self.aggregate_function.add(value, kept)

    def merge(self, a: Any, b: Any) -> Any:
        """Two windows' kept values as one (windows merging)."""
        if self.kind == "reduce":
            assert self.reduce_function is not None
            return self.reduce_function(a, b)
        assert self.aggregate_function is not None
        return self.aggregate_function.merge(a, b)

    def incremental(self, values: list[Any]) -> Any:
        """The kept value of ``values`` (an evictor's survivors); None when there are none and the function is
        a reduce (Flink would hand ``null`` on)."""
        if self.kind == "reduce":
            if not values:
                return None
            kept = values[0]
            for v in values[1:]:
                kept = self.add(kept, v)
            return kept
        assert self.aggregate_function is not None
        acc = self.aggregate_function.create()
        for v in values:
            acc = self.aggregate_function.add(v, acc)
        return acc

    @property
    def add_step(self) -> str:
        """The step a failing ``create`` / ``add`` is reported as (dead letters)."""
        return "reduce function" if self.kind == "reduce" else "aggregate add"

    @property
    def merge_step(self) -> str:
        """The step a failing ``merge`` is reported as (dead letters)."""
        return "reduce function" if self.kind == "reduce" else "aggregate merge"

    # -- the firing ----------------------------------------------------------------------------------------
    def emit(self, contents: Any, context: ProcessContext | None, *, key: Any = None) -> tuple[Any, ...]:
        """The results of a firing: ``contents`` is the kept value (reduce, aggregate) or the element list."""
        if self.kind == "process":
            return self._process(key, context, contents)
        result = contents if self.kind == "reduce" else self._result(contents)
        if self.process_function is None:
            return (result,)
        return self._process(key, context, [result])

    def _result(self, acc: Any) -> Any:
        assert self.aggregate_function is not None
        return self.aggregate_function.result(acc)

    def _process(self, key: Any, context: ProcessContext | None, elements: list[Any]) -> tuple[Any, ...]:
        fn = self.process_function
        produced = fn.process(key, context, elements) if isinstance(fn, ProcessWindowFunction) else fn(
            key, context, elements)
        return () if produced is None else tuple(produced)

    def clear(self, context: ProcessContext) -> None:
        """The process function's ``clear`` (when the window goes)."""
        if isinstance(self.process_function, ProcessWindowFunction):
            self.process_function.clear(context)

    @property
    def emit_step(self) -> str:
        if self.process_function is not None:
            return "process function"
        return "reduce function" if self.kind == "reduce" else "aggregate result"


def _check_process(fn: Any) -> None:
    if fn is not None and not isinstance(fn, ProcessWindowFunction) and not callable(fn):
        raise SpecError("process", f"expected a ProcessWindowFunction or a function (key, context, elements), got "
                        f"{fn!r}", where="DataStream window")


def reduce(fn: Callable[[Any, Any], Any], process: ProcessWindowFunction | ProcessFn | None = None) -> WindowFunction:
    """A reduce window function (then ``process`` with the reduced value, if given).

    >>> f = reduce(lambda a, b: (a[0], a[1] + b[1]))   # seed 002's ReduceFunction: sum of the second field
    >>> f.emit(f.incremental([("k", 1), ("k", 2)]), None)
    (('k', 3),)
    """
    if not callable(fn):
        raise SpecError("reduce", f"expected a function of two elements, got {fn!r}", where="DataStream window")
    _check_process(process)
    return WindowFunction("reduce", reduce_function=fn, process_function=process)


def aggregate(agg: AggregateFunction, process: ProcessWindowFunction | ProcessFn | None = None) -> WindowFunction:
    """An aggregate window function (then ``process`` with the result, if given).

    >>> class Count(AggregateFunction):
    ...     def create(self): return 0
    ...     def add(self, value, acc): return acc + 1
    ...     def merge(self, a, b): return a + b
    >>> f = aggregate(Count(), process=lambda key, ctx, counts: [(key, counts[0])])
    >>> f.emit(f.merge(f.create("x"), f.create("y")), None, key="k")
    (('k', 2),)
    """
    missing = [m for m in ("create", "add", "merge", "result") if not callable(getattr(agg, m, None))]
    if missing:
        raise SpecError("aggregate", f"{agg!r:.60} lacks {', '.join(missing)}: an AggregateFunction has create, add, "
                        "merge and result", where="DataStream window")
    _check_process(process)
    return WindowFunction("aggregate", aggregate_function=agg, process_function=process)


def process(fn: ProcessWindowFunction | ProcessFn) -> WindowFunction:
    """A process window function over all the window's elements.

    >>> f = process(lambda key, ctx, elements: [f"count: {len(elements)}"])
    >>> f.emit(["a", "b"], None)
    ('count: 2',)
    """
    if fn is None:
        raise SpecError("process", "expected a ProcessWindowFunction or a function, got None", where="DataStream window")
    _check_process(fn)
    return WindowFunction("process", process_function=fn)


__all__ = ["AggregateFunction", "ProcessContext", "ProcessWindowFunction", "WindowFunction", "aggregate", "process",
           "reduce"]
