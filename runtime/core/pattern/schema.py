"""The output columns of a MATCH_RECOGNIZE clause and their SQL types: the one typer every door uses.

An adapter must declare the output schema before any row is matched (Spark's ``mapInArrow``, UDTFs,
``transformWithState``), so the types come from the input columns' types, never from the values.  Types are
Spark SQL type names, lower case as Spark's ``simpleString`` writes them: an input column's own type string
passes through unchanged for column references (``"timestamp"``, ``"decimal(10,2)"``, ``"struct<a:int>"``),
and computed values get ``bigint``, ``double``, ``decimal(p,s)``, ``string``, ``boolean``, ``timestamp``,
``date``, ``interval day to second``, ``array<T>`` or ``void`` (an untyped NULL).  An engine adapter only maps
these names onto its own types (:func:`timeweave.spark.match_recognize.plan` for Spark).

The rules follow the evaluator (:mod:`timeweave.core.pattern.expressions`):

* COUNT, MATCH_NUMBER() and ``count_if`` are ``bigint``; CLASSIFIER() is ``string``; navigation, MIN/MAX and
  MATCH_ROWTIME keep their argument's type;
* integer arithmetic stays ``bigint`` (``/`` divides integers as integers); any DOUBLE makes ``double``; DECIMALs
  give ``decimal(38, s)`` with the largest scale ``s``;
* ``SUM`` of integers is ``bigint``, of ``decimal(p,s)`` is ``decimal(min(p+10, 38), s)``; ``AVG`` of
  ``decimal(p,s)`` is ``decimal(min(p+4, 38), min(s+4, 38))`` (both as Spark types them: its ``Sum`` and
  ``Average``), of anything else ``double``.

>>> from timeweave.core.pattern.parser import parse_clause
>>> spec = parse_clause("PARTITION BY sym ORDER BY t MEASURES AVG(A.price) AS a, AVG(A.amount) AS b, "
...                     "SUM(A.amount) AS s, CLASSIFIER() AS c, LAST(A.t) AS last_t PATTERN (A+)")
>>> output_columns(spec, {"sym": "string", "t": "timestamp", "price": "bigint", "amount": "decimal(10,2)"})
[('sym', 'string'), ('a', 'double'), ('b', 'decimal(14,6)'), ('s', 'decimal(20,2)'), ('c', 'string'), ('last_t', 'timestamp')]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from timeweave.core.pattern import expr as E
from timeweave.core.pattern.aggregates import aggregate_function
from timeweave.core.pattern.errors import PatternValidationError
from timeweave.core.pattern.functions import SCALAR_FUNCTIONS
from timeweave.core.pattern.row_functions import is_hidden
from timeweave.core.pattern.spec import ClauseSpec

#: Spark's widest DECIMAL (``DecimalType.MAX_PRECISION`` / ``MAX_SCALE``).
MAX_PRECISION = 38
NULL_TYPE = "void"  # Spark's NullType
INTERVAL = "interval day to second"  # Spark's DayTimeIntervalType()
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_ALIASES = {"byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint", "real": "float"}
_FLOATS = ("float", "double")
_TIMES = ("timestamp", "timestamp_ntz", "date")
_DECIMAL = re.compile(r"^(?:decimal|numeric)\s*(?:\(\s*(\d+)\s*,\s*(\d+)\s*\))?$")
_CAST = {"BIGINT": "bigint", "DOUBLE": "double", "DECIMAL": f"decimal({MAX_PRECISION},18)", "VARCHAR": "string",
         "BOOLEAN": "boolean", "TIMESTAMP": "timestamp", "DATE": "date"}  # fmt: skip
_FIXED = ("string", "bigint", "double", "boolean")  # result types of function and aggregate rules


def normalize(type_name: str) -> str:
    """A type name as this module compares it: lower case, aliases resolved, a bare DECIMAL as Spark's (10,0).

    >>> normalize("INTEGER"), normalize("Decimal(10, 2)"), normalize("decimal"), normalize("struct<a:int>")
    ('int', 'decimal(10,2)', 'decimal(10,0)', 'struct<a:int>')
    """
    name = type_name.strip().lower()
    decimal = _DECIMAL.match(name)
    if decimal:
        precision, scale = decimal.groups()
        return f"decimal({precision or 10},{scale or 0})"
    return _ALIASES.get(name, name)


def decimal_precision(type_name: str) -> tuple[int, int] | None:
    """(precision, scale) of a DECIMAL type name; None for any other type.

    >>> decimal_precision("decimal(10,2)"), decimal_precision("bigint")
    ((10, 2), None)
    """
    decimal = _DECIMAL.match(normalize(type_name))
    return (int(decimal.group(1)), int(decimal.group(2))) if decimal else None


def _decimal(precision: int, scale: int) -> str:
    """Spark's ``DecimalType.bounded``: precision and scale capped at 38."""
    return f"decimal({min(precision, MAX_PRECISION)},{min(scale, MAX_PRECISION)})"


def _kind(type_name: str) -> str:
    name = normalize(type_name)
    if name in _INTEGRAL:
        return "integral"
    if name in _FLOATS:
        return "float"
    if decimal_precision(name) is not None:
        return "decimal"
    return name


def _numeric(type_name: str) -> bool:
    return _kind(type_name) in ("integral", "float", "decimal")


def common_type(types: Sequence[str]) -> str:
    """The type of a value that may come from any of ``types`` (CASE branches, COALESCE, arithmetic).

    >>> common_type(["void", "int", "int"]), common_type(["int", "bigint"]), common_type(["decimal(10,2)", "int"])
    ('int', 'bigint', 'decimal(38,2)')
    """
    known = [t for t in types if normalize(t) != NULL_TYPE]
    if not known:
        return NULL_TYPE
    if all(_numeric(t) for t in known):
        if any(_kind(t) == "float" for t in known):
            return "double"
        decimals = [p for t in known if (p := decimal_precision(t)) is not None]
        if decimals:
            return _decimal(MAX_PRECISION, max(scale for _, scale in decimals))
        if len({normalize(t) for t in known}) == 1:
            return known[0]
        return "bigint"
    return known[0]


def _literal_type(value: Any) -> str:
    if value is None:
        return NULL_TYPE
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "bigint"
    if isinstance(value, float):
        return "double"
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        scale = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        return _decimal(MAX_PRECISION, min(scale, 18))
    if isinstance(value, datetime):
        return "timestamp"
    if isinstance(value, date):
        return "date"
    if isinstance(value, timedelta):
        return INTERVAL
    return "string"


def _nullable(type_name: str) -> str:
    # A NULL literal measure: an engine needs a concrete type for the column; STRING holds NULL.
    return "string" if normalize(type_name) == NULL_TYPE else type_name


def _element(type_name: str) -> str | None:
    name = type_name.strip()
    return name[len("array<"):-1] if name.lower().startswith("array<") and name.endswith(">") else None


def _map_value(type_name: str) -> str | None:
    """The value type of ``map<k,v>`` (the comma after the key at nesting depth zero)."""
    name = type_name.strip()
    if not (name.lower().startswith("map<") and name.endswith(">")):
        return None
    inner, depth = name[len("map<"):-1], 0
    for i, char in enumerate(inner):
        depth += char == "<"
        depth -= char == ">"
        if char == "," and depth == 0:
            return inner[i + 1:]
    return None


def _fail(spec: ClauseSpec, message: str, position: int) -> PatternValidationError:
    return PatternValidationError(message, text=spec.text, position=max(position, 0))


def resolve_column(spec: ClauseSpec, names: Sequence[str], name: str, position: int) -> str:
    """The input column ``name`` names, as the input spells it: exact, else case-insensitive (as Spark resolves).

    Raises :class:`PatternValidationError` at ``position`` of the clause when no column or several match.
    """
    exact = [n for n in names if n == name]
    folded = exact or [n for n in names if n.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    columns = ", ".join(names)
    if not folded:
        raise _fail(spec, f"column {name} not found in the input (columns: {columns})", position)
    raise _fail(spec, f"column {name} is ambiguous in the input (columns: {columns})", position)


def name_position(spec: ClauseSpec, keyword: str, name: str) -> int:
    """Best position of ``name`` after ``keyword`` in the clause text (names without a stored position)."""
    upper = spec.text.upper()
    after = upper.find(keyword)
    found = upper.find(name.upper(), after if after >= 0 else 0)
    return found if found >= 0 else max(after, 0)


class _Typer:
    """The type of each clause expression over typed input columns; also checks every column exists."""

    def __init__(self, spec: ClauseSpec, inputs: Sequence[tuple[str, str]]) -> None:
        self.spec = spec
        self.names = [name for name, _ in inputs]
        self.types = dict(inputs)

    def column(self, name: str, position: int) -> str:
        return self.types[resolve_column(self.spec, self.names, name, position)]

    def type_of(self, node: E.Expr) -> str:  # one case per node kind
        if isinstance(node, E.Literal):
            return _literal_type(node.value)
        if isinstance(node, E.Column):
            return self.column(node.name, node.start)
        if isinstance(node, E.Unary):
            operand = self.type_of(node.operand)
            return "boolean" if node.op == "NOT" else operand
        if isinstance(node, E.Binary):
            left, right = self.type_of(node.left), self.type_of(node.right)
            if node.op in ("AND", "OR", "=", "<>", "!=", "<", "<=", ">", ">="):
                return "boolean"
            if node.op == "||":
                return "string"
            return self._arith(node.op, left, right)
        if isinstance(node, (E.IsNull, E.Between, E.InList)):
            for child in node.children():
                self.type_of(child)
            return "boolean"
        if isinstance(node, E.Case):
            if node.operand is not None:
                self.type_of(node.operand)
            for condition, _ in node.whens:
                self.type_of(condition)
            results = [r for _, r in node.whens] + ([node.default] if node.default is not None else [])
            return common_type([self.type_of(r) for r in results])
        if isinstance(node, E.Cast):
            self.type_of(node.operand)
            return _CAST.get(node.type_name, "string")
        if isinstance(node, E.Func):
            return self._function(node)
        if isinstance(node, E.Navigation):
            return self.type_of(node.arg)
        if isinstance(node, E.Aggregate):
            return self._aggregate(node)
        if isinstance(node, E.Classifier):
            return "string"
        if isinstance(node, E.MatchNumber):
            return "bigint"
        if isinstance(node, E.MatchRowtime):
            if node.column is not None:
                return self.type_of(node.column)
            if not self.spec.order_by:
                raise _fail(self.spec, "MATCH_ROWTIME() needs ORDER BY <time column>", node.start)
            first = self.spec.order_by[0]
            return self.column(first.column, first.start)
        raise _fail(self.spec, f"cannot type expression {node}", getattr(node, "start", 0))

    def _function(self, node: E.Func) -> str:
        args = [self.type_of(a) for a in node.args]
        if node.name not in SCALAR_FUNCTIONS:  # parse_clause refused the others: a per-row call, not split
            raise _fail(self.spec, f"{node} has no engine-free implementation: Spark computes it for each input "
                        "row before matching (split_row_functions gives the column it reads)", node.start)
        rule = SCALAR_FUNCTIONS[node.name].returns
        if rule in _FIXED:
            return rule
        if node.name == "MOD":
            return self._arith("%", args[0], args[1])
        if rule == "argument":
            return args[0]
        if rule == "array":
            return f"array<{_nullable(common_type(args))}>"
        if rule == "element":  # of an array, or a map's value (TRY_ELEMENT_AT)
            return _element(args[0]) or _map_value(args[0]) or "string"
        if rule == "branches":
            return common_type(args[1:])  # IF
        return common_type(args)  # COALESCE, GREATEST, LEAST

    def _aggregate(self, node: E.Aggregate) -> str:
        arg = self.type_of(node.arg) if node.arg is not None else None
        key = self.type_of(node.key) if node.key is not None else None
        function = aggregate_function(node.func, node.parameters)
        if function is not None:
            rule = function.result_type
            if rule in _FIXED:
                return rule
            assert arg is not None
            if rule == "map":  # MAP_AGG(k, v)
                return f"map<{arg},{_nullable(key or NULL_TYPE)}>"
            if rule == "multimap":  # MULTIMAP_AGG(k, v)
                return f"map<{arg},array<{_nullable(key or NULL_TYPE)}>>"
            return arg if rule == "argument" else f"array<{_nullable(arg)}>"  # array, by_array: of x
        if node.func == "COUNT":
            return "bigint"
        decimal = decimal_precision(arg) if arg is not None else None
        if node.func == "AVG":  # Spark's Average: DecimalType.bounded(p + 4, s + 4), else DOUBLE
            return _decimal(decimal[0] + 4, decimal[1] + 4) if decimal else "double"
        if node.func == "SUM" and arg is not None:  # Spark's Sum: DecimalType.bounded(p + 10, s)
            if decimal:
                return _decimal(decimal[0] + 10, decimal[1])
            if _kind(arg) == "integral":
                return "bigint"
            if _kind(arg) == "float":
                return "double"
        return arg if arg is not None else "bigint"

    def _arith(self, op: str, left: str, right: str) -> str:
        if normalize(left) in _TIMES:
            return INTERVAL if op == "-" and normalize(right) in _TIMES else left
        if normalize(right) in _TIMES:
            return right
        if _kind(left) == "integral" and _kind(right) == "integral":
            return "bigint"  # the core computes on Python ints
        return common_type([left, right])


@dataclass(frozen=True)
class OutputSchema:
    """A clause bound to typed input columns: the output columns and what an adapter sorts by.

    ``keys[i]`` is the key under which the matcher's output dict holds output column ``columns[i]``;
    ``partition_columns`` and ``order_columns`` (column, descending, nulls first) are spelled as the input spells them.
    """

    columns: tuple[tuple[str, str], ...]
    keys: tuple[str, ...]
    partition_columns: tuple[str, ...]
    order_columns: tuple[tuple[str, bool, bool], ...]


def output_schema(spec: ClauseSpec, input_types: Mapping[str, str] | Sequence[tuple[str, str]]) -> OutputSchema:
    """Bind ``spec`` to input columns typed ``input_types`` (name -> type, in input order).

    Checks every column the clause names and that each DEFINE condition is boolean; raises
    :class:`PatternValidationError` positioned in the clause text.

    ONE ROW PER MATCH: PARTITION BY columns, then measures.  ALL ROWS PER MATCH: PARTITION BY columns,
    ORDER BY columns, measures, then the remaining input columns in input order.

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> schema = output_schema(parse_clause("PARTITION BY K ORDER BY t MEASURES COUNT(*) AS n PATTERN (A)"),
    ...                        {"k": "string", "t": "timestamp"})
    >>> schema.columns, schema.keys, schema.order_columns
    ((('k', 'string'), ('n', 'bigint')), ('K', 'n'), (('t', False, False),))
    """
    inputs = list(input_types.items()) if isinstance(input_types, Mapping) else list(input_types)
    typer = _Typer(spec, inputs)
    names = typer.names
    partition = [resolve_column(spec, names, c, name_position(spec, "PARTITION", c)) for c in spec.partition_by]
    order = [resolve_column(spec, names, k.column, k.start) for k in spec.order_by]
    for definition in spec.definitions:
        condition = typer.type_of(definition.condition)
        if normalize(condition) not in ("boolean", NULL_TYPE):  # Trino / the standard: a predicate, not a value
            raise _fail(spec, f"the condition defining {definition.var} must be boolean, not {condition}",
                        definition.condition.start)
    measure_types = [_nullable(typer.type_of(m.expr)) for m in spec.measures]
    columns: list[tuple[str, str]] = []
    keys: list[str] = []
    taken: set[str] = set()

    def add(name: str, type_name: str, key: str) -> None:
        taken.add(name.lower())
        columns.append((name, type_name))
        keys.append(key)

    for spelled, name in zip(spec.partition_by, partition, strict=True):
        if name.lower() not in taken:
            add(name, typer.types[name], spelled)
    if spec.rows_per_match.all_rows:
        for key, name in zip(spec.order_by, order, strict=True):
            if name.lower() not in taken:
                add(name, typer.types[name], key.column)
        input_names = {n.lower() for n in names}
        for measure in spec.measures:
            if measure.name.lower() in input_names:
                raise _fail(spec, f"measure {measure.name} has the name of an input column; "
                                  "ALL ROWS PER MATCH outputs both", measure.start)
    for measure, type_name in zip(spec.measures, measure_types, strict=True):
        if measure.name.lower() in taken:
            raise _fail(spec, f"output column {measure.name} appears twice", measure.start)
        add(measure.name, type_name, measure.name)
    if spec.rows_per_match.all_rows:
        for name, type_name in inputs:
            if name.lower() not in taken and not is_hidden(name):  # computed functions are never output
                add(name, type_name, name)
    order_columns = tuple(
        (name, k.descending, k.nulls_first if k.nulls_first is not None else k.descending)
        for k, name in zip(spec.order_by, order, strict=True)
    )
    return OutputSchema(tuple(columns), tuple(keys), tuple(partition), order_columns)


def output_columns(spec: ClauseSpec, input_types: Mapping[str, str] | Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(name, type) of every output column, in output order (:func:`output_schema`'s columns).

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> output_columns(parse_clause("ORDER BY t MEASURES COUNT(*) AS n ALL ROWS PER MATCH PATTERN (A)"),
    ...                {"v": "double", "t": "timestamp"})
    [('t', 'timestamp'), ('n', 'bigint'), ('v', 'double')]
    """
    return list(output_schema(spec, input_types).columns)


__all__ = ["INTERVAL", "MAX_PRECISION", "NULL_TYPE", "OutputSchema", "common_type", "decimal_precision", "name_position",
           "normalize", "output_columns", "output_schema", "resolve_column"]
