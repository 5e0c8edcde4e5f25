"""Output columns of a clause and their SQL types, from the input columns' types (for engine adapters).

An adapter must declare the output schema before any row is matched (Spark UDTFs, applyInPandas).
Types are lower-case SQL names: the input's own type strings pass through unchanged for column
references (so ``"timestamp"``, ``"decimal(10,2)"`` survive), and computed values get
``bigint``, ``double``, ``decimal``, ``string``, ``boolean``, ``timestamp``, ``date`` or
``interval``.  The rules follow the evaluator: integer ``/`` stays integer, ``AVG`` is ``double``,
``COUNT`` and ``MATCH_NUMBER`` are ``bigint``, ``CLASSIFIER`` is ``string``.

>>> from timeweave.core.pattern.parser import parse_clause
>>> spec = parse_clause("PARTITION BY sym ORDER BY t MEASURES AVG(A.price) AS a, CLASSIFIER() AS c, "
...                     "LAST(A.t) AS last_t PATTERN (A+)")
>>> output_columns(spec, {"sym": "string", "t": "timestamp", "price": "bigint"})
[('sym', 'string'), ('a', 'double'), ('c', 'string'), ('last_t', 'timestamp')]
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from decimal import Decimal

from timeweave.core.errors import SpecError
from timeweave.core.pattern import expr as E
from timeweave.core.pattern.aggregates import AGGREGATE_FUNCTIONS
from timeweave.core.pattern.functions import SCALAR_FUNCTIONS
from timeweave.core.pattern.spec import ClauseSpec

_INTEGERS = {"bigint", "int", "integer", "smallint", "tinyint", "long", "short", "byte"}
_FLOATS = {"double", "float", "real"}
_CAST = {"BIGINT": "bigint", "DOUBLE": "double", "DECIMAL": "decimal", "VARCHAR": "string", "BOOLEAN": "boolean",
         "TIMESTAMP": "timestamp", "DATE": "date"}  # fmt: skip


def _kind(type_name: str) -> str:
    base = type_name.lower().split("(")[0].strip()
    if base in _INTEGERS:
        return "integer"
    if base in _FLOATS:
        return "float"
    if base in ("decimal", "numeric"):
        return "decimal"
    return base


def _numeric(left: str, right: str) -> str:
    kinds = {_kind(left), _kind(right)}
    if "float" in kinds:
        return "double"
    if "decimal" in kinds:
        return "decimal"
    if kinds == {"integer"}:
        return "bigint"
    if "timestamp" in kinds:
        return "timestamp"
    if "interval" in kinds:
        return "interval"
    return "double"


class _Typer:
    def __init__(self, spec: ClauseSpec, inputs: Mapping[str, str]) -> None:
        self.spec = spec
        self.inputs = dict(inputs)
        self.folded = {name.lower(): name for name in inputs}

    def column(self, name: str, argument: str) -> str:
        key = name if name in self.inputs else self.folded.get(name.lower())
        if key is None:
            raise SpecError(argument, f"column {name} not found; available: {sorted(self.inputs)}", where="match_recognize")
        return self.inputs[key]

    def type_of(self, node: E.Expr) -> str:
        if isinstance(node, E.Literal):
            value = node.value
            if value is None:
                return "string"  # an untyped NULL: adapters may widen it
            if isinstance(value, bool):
                return "boolean"
            if isinstance(value, int):
                return "bigint"
            if isinstance(value, float):
                return "double"
            if isinstance(value, Decimal):
                return "decimal"
            if isinstance(value, datetime):
                return "timestamp"
            if isinstance(value, date):
                return "date"
            if isinstance(value, timedelta):
                return "interval"
            return "string"
        if isinstance(node, E.Column):
            return self.column(node.name, "measures")
        if isinstance(node, E.Navigation):
            return self.type_of(node.arg.arg if isinstance(node.arg, E.Navigation) else node.arg)
        if isinstance(node, E.Aggregate):
            function = AGGREGATE_FUNCTIONS.get(node.func)
            if function is not None:
                if function.result_type not in ("argument", "array"):
                    return function.result_type
                assert node.arg is not None
                argument = self.type_of(node.arg)
                return argument if function.result_type == "argument" else f"array<{argument}>"
            if node.func == "COUNT":
                return "bigint"
            if node.func == "AVG":
                argument = self.type_of(node.arg) if node.arg is not None else "bigint"
                return "decimal" if _kind(argument) == "decimal" else "double"
            assert node.arg is not None
            argument = self.type_of(node.arg)
            return "bigint" if node.func == "SUM" and _kind(argument) == "integer" else argument
        if isinstance(node, E.Classifier):
            return "string"
        if isinstance(node, E.MatchNumber):
            return "bigint"
        if isinstance(node, E.MatchRowtime):
            column = node.column.name if node.column is not None else self.spec.order_by[0].column
            return self.column(column, "order_by")
        if isinstance(node, E.Unary):
            return "boolean" if node.op == "NOT" else self.type_of(node.operand)
        if isinstance(node, E.Binary):
            if node.op in ("AND", "OR", "=", "<>", "<", "<=", ">", ">="):
                return "boolean"
            if node.op == "||":
                return "string"
            return _numeric(self.type_of(node.left), self.type_of(node.right))
        if isinstance(node, E.IsNull | E.Between | E.InList):
            return "boolean"
        if isinstance(node, E.Case):
            for _, result in node.whens:
                if not (isinstance(result, E.Literal) and result.value is None):
                    return self.type_of(result)
            return self.type_of(node.default) if node.default is not None else "string"
        if isinstance(node, E.Cast):
            return _CAST[node.type_name]
        if isinstance(node, E.Func):
            rule = SCALAR_FUNCTIONS[node.name].returns
            if rule in ("string", "bigint", "double", "boolean"):
                return rule
            values = node.args[1:] if rule == "branches" else node.args
            typed = [self.type_of(a) for a in values if not (isinstance(a, E.Literal) and a.value is None)]
            first = typed[0] if typed else "string"
            if rule == "array":
                return f"array<{first}>"
            if rule == "element":
                return first[len("array<"):-1] if first.startswith("array<") else "string"
            return first
        raise TypeError(f"no type rule for {type(node).__name__}")


def output_columns(spec: ClauseSpec, input_types: Mapping[str, str]) -> list[tuple[str, str]]:
    """(name, type) of every output column, in output order, for input columns typed ``input_types``.

    ONE ROW PER MATCH: PARTITION BY columns, then measures.  ALL ROWS PER MATCH: PARTITION BY
    columns, ORDER BY columns, measures, then the remaining input columns in input order.
    Raises :class:`SpecError` naming a column the input lacks.

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> output_columns(parse_clause("ORDER BY t MEASURES COUNT(*) AS n ALL ROWS PER MATCH PATTERN (A)"),
    ...                {"v": "double", "t": "timestamp"})
    [('t', 'timestamp'), ('n', 'bigint'), ('v', 'double')]
    """
    typer = _Typer(spec, input_types)
    columns: list[tuple[str, str]] = [(c, typer.column(c, "partition_by")) for c in spec.partition_by]
    if spec.rows_per_match.all_rows:
        for key in spec.order_by:
            if key.column not in dict(columns):
                columns.append((key.column, typer.column(key.column, "order_by")))
    columns += [(m.name, typer.type_of(m.expr)) for m in spec.measures]
    if spec.rows_per_match.all_rows:
        for measure in spec.measures:
            if measure.name in input_types:
                raise SpecError("measures", f"measure {measure.name} has the name of an input column; ALL ROWS PER "
                                "MATCH outputs both", where="match_recognize")
        taken = {name for name, _ in columns}
        columns += [(name, kind) for name, kind in input_types.items() if name not in taken]
    return columns
