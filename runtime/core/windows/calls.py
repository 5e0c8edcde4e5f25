"""Window aggregates written as SQL text (``"SUM(price)"``), read into the core's :class:`AggregateCall` values.

The streaming and backfill doors run the core operator, which computes aggregates with accumulators
(:mod:`~timeweave.core.windows.accumulators`); the DataFrame door hands the same text to Spark.  One mapping of
output name -> text therefore configures every door (the job config's ``window.aggregates``).  The text is one
built-in aggregate over one column: ``COUNT(*)``, ``COUNT(x)``, ``COUNT(DISTINCT x)``, ``SUM(x)``, ``MIN(x)``,
``MAX(x)``, ``AVG(x)``, optionally followed by ``FILTER (WHERE c)`` with ``c`` a BOOLEAN column (SQL's rule: a
NULL condition does not pass).  Names may be back-quoted (``SUM(`unit price`)``).  Anything else is a
:class:`~timeweave.core.errors.SpecError` naming the aggregate and what is supported: no expression is ever
evaluated.

>>> calls = parse_aggregates({"cnt": "COUNT(*)", "total": "sum(price) FILTER (WHERE big)", "n": "COUNT(DISTINCT `item id`)"})
>>> [(c.name, type(c.accumulator).__name__, c.argument, c.filter) for c in calls]
[('cnt', 'CountStar', None, None), ('total', 'Sum', 'price', 'big'), ('n', 'CountDistinct', 'item id', None)]
>>> parse_aggregates({"x": "SUM(price * 2)"})
Traceback (most recent call last):
...
timeweave.core.errors.SpecError: window aggregate 'x': argument 'aggregates': cannot read 'SUM(price * 2)': expected FUNCTION(column) [FILTER (WHERE column)] with FUNCTION one of COUNT, SUM, MIN, MAX, AVG (COUNT(*), COUNT(DISTINCT column)); compute expressions in a column first
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from timeweave.core.errors import SpecError
from timeweave.core.windows.accumulators import BUILT_IN, AggregateCall

_NAME = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)"
_CALL = re.compile(
    rf"\s*(?P<function>[A-Za-z]+)\s*\(\s*(?:(?P<star>\*)|(?P<distinct>DISTINCT\s+)?(?P<column>{_NAME}))\s*\)"
    rf"(?:\s*FILTER\s*\(\s*WHERE\s+(?P<filter>{_NAME})\s*\))?\s*",
    re.IGNORECASE,
)
_FUNCTIONS = ("COUNT", "SUM", "MIN", "MAX", "AVG")


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


@dataclass(frozen=True, slots=True)
class AggregateText:
    """One parsed aggregate: output ``name``, ``function`` (``COUNT(*)``, ``COUNT``, ``COUNT(DISTINCT)``, ``SUM``,
    ``MIN``, ``MAX``, ``AVG``: a :data:`~timeweave.core.windows.accumulators.BUILT_IN` name), its ``column`` (None
    for ``COUNT(*)``) and ``filter`` column (or None), and the ``text`` as written."""

    name: str
    function: str
    column: str | None
    filter: str | None
    text: str

    def call(self) -> AggregateCall:
        """The core's aggregate call (reads ``column`` and ``filter`` from a row mapping)."""
        return AggregateCall(BUILT_IN[self.function](), self.column, filter=self.filter, name=self.name)


def parse_aggregate(name: str, text: str) -> AggregateText:
    """Read one aggregate's text (see the module docstring).

    >>> parse_aggregate("m", " max( ts ) ")
    AggregateText(name='m', function='MAX', column='ts', filter=None, text=' max( ts ) ')
    """
    where = f"window aggregate {name!r}"
    if not isinstance(name, str) or not name:
        raise SpecError("aggregates", f"an output name must be a non-empty string, got {name!r}", where="window aggregate")
    if not isinstance(text, str):
        raise SpecError("aggregates", f"expected the aggregate as SQL text such as 'SUM(price)', got {text!r}", where=where)
    found = _CALL.fullmatch(text)
    function = found.group("function").upper() if found else None
    if found is None or function not in _FUNCTIONS or (found.group("star") and function != "COUNT") or (
            found.group("distinct") and function != "COUNT"):
        raise SpecError("aggregates", f"cannot read {text!r}: expected FUNCTION(column) [FILTER (WHERE column)] with "
                        f"FUNCTION one of {', '.join(_FUNCTIONS)} (COUNT(*), COUNT(DISTINCT column)); compute "
                        "expressions in a column first", where=where)
    if found.group("star"):
        function = "COUNT(*)"
    elif found.group("distinct"):
        function = "COUNT(DISTINCT)"
    column = None if found.group("star") else _unquote(found.group("column"))
    condition = found.group("filter")
    return AggregateText(name, function, column, None if condition is None else _unquote(condition), text)


def accumulates(text: object) -> bool:
    """Whether ``text`` is an aggregate the core computes with an accumulator (:func:`parse_aggregate` reads it).
    The streaming and backfill window doors keep one accumulator row per slice for those; any other aggregate
    (an engine function, an expression, a user's UDAF) makes them keep the window's rows and aggregate a fired
    window's rows in the engine.

    >>> accumulates("SUM(price)"), accumulates("count(DISTINCT `item id`)"), accumulates("SUM(price * 2)")
    (True, True, False)
    >>> accumulates("STDDEV(price)"), accumulates("COUNT(*) FILTER (WHERE price > 3)")
    (False, False)
    """
    if not isinstance(text, str):
        return False
    found = _CALL.fullmatch(text)
    if found is None:
        return False
    function = found.group("function").upper()
    return function in _FUNCTIONS and (function == "COUNT" or not (found.group("star") or found.group("distinct")))


def parse_aggregates(aggregates: Mapping[str, str]) -> tuple[AggregateCall, ...]:
    """The core's aggregate calls of a mapping output name -> aggregate text, in the mapping's order."""
    return tuple(a.call() for a in read_aggregates(aggregates))


def read_aggregates(aggregates: Mapping[str, str]) -> tuple[AggregateText, ...]:
    """:func:`parse_aggregate` over a mapping output name -> text (at least one; names unique ignoring case).

    >>> read_aggregates({})
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: window aggregate: argument 'aggregates': expected a mapping of output name -> aggregate text (at least one), got {}
    """
    if not isinstance(aggregates, Mapping) or not aggregates:
        raise SpecError("aggregates", "expected a mapping of output name -> aggregate text (at least one), got "
                        f"{aggregates!r}", where="window aggregate")
    out = tuple(parse_aggregate(name, text) for name, text in aggregates.items())
    folded = [a.name.lower() for a in out]
    if len(set(folded)) != len(folded):
        raise SpecError("aggregates", f"two aggregates share an output name in {[a.name for a in out]}",
                        where="window aggregate")
    return out


__all__ = ["AggregateText", "accumulates", "parse_aggregate", "parse_aggregates", "read_aggregates"]
