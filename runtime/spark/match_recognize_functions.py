"""Spark computes MATCH_RECOGNIZE's per-row function calls before matching: the hidden columns of the core's split.

:func:`timeweave.core.pattern.row_functions.split_row_functions` decides which calls of DEFINE and MEASURES
read one row's columns only and names a hidden column for each; :func:`with_row_functions` adds those
columns to the input, each computed by Spark's own function (``F.call_function``), so Spark's whole
function library applies with Spark's semantics.  Every door (DataFrame, SQL, streaming, backfill) calls it
on its input before :func:`timeweave.spark.match_recognize.plan`, which binds the split clause.  The
expression is built as Columns, never as SQL text: no identifier or literal of the clause is spliced.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from timeweave.core.pattern import ClauseSpec, PatternValidationError
from timeweave.core.pattern import expr as E
from timeweave.core.pattern.row_functions import HIDDEN_PREFIX, RowFunction, is_hidden, split_row_functions
from timeweave.spark.schema import column as named

#: The evaluator's names whose Spark function is spelled differently (Trino's ``contains`` of an array).
_SPARK_NAMES = {"CONTAINS": "array_contains"}
_CAST_TYPES = {"BIGINT": "bigint", "DOUBLE": "double", "DECIMAL": "decimal(38,18)", "VARCHAR": "string",
               "BOOLEAN": "boolean", "TIMESTAMP": "timestamp", "DATE": "date"}  # fmt: skip
_COMPARE = {"=": Column.__eq__, "<>": Column.__ne__, "<": Column.__lt__, "<=": Column.__le__, ">": Column.__gt__,
            ">=": Column.__ge__}  # fmt: skip
_ARITHMETIC = {"+": Column.__add__, "-": Column.__sub__, "*": Column.__mul__, "/": Column.__truediv__,
               "%": Column.__mod__, "AND": Column.__and__, "OR": Column.__or__}  # fmt: skip


def spark_column(node: E.Expr) -> Column:
    """The Spark Column computing ``node`` over one row (columns read unqualified, by exact name).

    Example::

        spark_column(parse_expression("array_max(arr) + 1"))   # F.call_function("array_max", col("arr")) + 1
    """
    if isinstance(node, E.Literal):
        return F.lit(node.value)
    if isinstance(node, E.Column):
        return named(node.name)
    if isinstance(node, E.Unary):
        operand = spark_column(node.operand)
        return ~operand if node.op == "NOT" else -operand if node.op == "-" else operand
    if isinstance(node, E.Binary):
        left, right = spark_column(node.left), spark_column(node.right)
        if node.op == "||":
            return F.concat(left, right)
        if node.op in _COMPARE:
            return _COMPARE[node.op](left, right)  # type: ignore[no-any-return,operator]
        return _ARITHMETIC[node.op](left, right)  # type: ignore[no-any-return,operator]
    if isinstance(node, E.IsNull):
        operand = spark_column(node.operand)
        return operand.isNotNull() if node.negated else operand.isNull()
    if isinstance(node, E.Between):
        test = spark_column(node.operand).between(spark_column(node.low), spark_column(node.high))
        return ~test if node.negated else test
    if isinstance(node, E.InList):
        test = spark_column(node.operand).isin(*[spark_column(item) for item in node.items])
        return ~test if node.negated else test
    if isinstance(node, E.Case):
        return _case(node)
    if isinstance(node, E.Cast):
        return spark_column(node.operand).cast(_CAST_TYPES[node.type_name])
    if isinstance(node, E.Func):
        name = _SPARK_NAMES.get(node.name, node.name.lower())
        return F.call_function(name, *[spark_column(a) for a in node.args])
    raise TypeError(f"{node} does not read one row: the core's split never hands it to Spark")


def _case(node: E.Case) -> Column:
    operand = spark_column(node.operand) if node.operand is not None else None
    result: Any = F
    for condition, value in node.whens:
        test = spark_column(condition) if operand is None else operand == spark_column(condition)
        result = result.when(test, spark_column(value))
    return result.otherwise(spark_column(node.default)) if node.default is not None else result  # type: ignore[no-any-return]


def with_row_functions(df: DataFrame, spec: ClauseSpec) -> DataFrame:
    """``df`` with a hidden column for each per-row function call of ``spec`` (none: ``df`` itself).

    Spark resolves each call now; a call it rejects (an unknown function, wrong arguments) raises
    :class:`~timeweave.core.pattern.PatternValidationError` at the call's position in the clause.

    Example::

        spec = parse_clause("ORDER BY t MEASURES array_max(A.arr) AS m PATTERN (A+)")
        with_row_functions(df, spec).columns   # [..., '__tw_fn_0']
    """
    functions = split_row_functions(spec).functions
    if not functions:
        return df
    reserved = [c for c in df.columns if is_hidden(c)]
    if reserved:
        raise PatternValidationError(f"input column {reserved[0]} uses the prefix {HIDDEN_PREFIX} that "
                                     "MATCH_RECOGNIZE reserves for computed functions; rename it",
                                     text=spec.text, position=functions[0].start)
    for function in functions:
        df = _with(df, spec, function)
    return df


def _with(df: DataFrame, spec: ClauseSpec, function: RowFunction) -> DataFrame:
    try:
        out = df.withColumn(function.column, spark_column(function.expr))
        out.schema  # noqa: B018 - Spark analyses the call now (Connect analyses lazily)
    except PatternValidationError:
        raise
    except Exception as error:  # Spark's analysis error: an unknown function, a type mismatch, an arity
        lines = str(error).strip().splitlines()
        first = lines[0] if lines else type(error).__name__
        if _condition(error) == "UNRESOLVED_ROUTINE":  # say what a user looks for first: the name Spark lacks
            name = str(error.getMessageParameters().get("routineName", function.expr.name)).strip("`")
            raise PatternValidationError(f"unknown function {name.upper()} in {function.expr}: neither "
                                         "MATCH_RECOGNIZE nor Spark defines it", text=spec.text,
                                         position=function.start) from None
        raise PatternValidationError(f"Spark cannot compute {function.expr} per row: {first}", text=spec.text,
                                     position=function.start) from None
    return out


def _condition(error: Exception) -> str | None:
    """Spark's error condition (``UNRESOLVED_ROUTINE``, ...) of an analysis error; None for any other exception."""
    get = getattr(error, "getCondition", None)
    return get() if callable(get) else None


def visible_columns(names: list[str]) -> list[str]:
    """The input's own columns: ``names`` without the hidden ones (dead letters and late rows show these)."""
    return [name for name in names if not is_hidden(name)]


__all__ = ["spark_column", "visible_columns", "with_row_functions"]
