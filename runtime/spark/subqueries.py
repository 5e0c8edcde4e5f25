"""Run the uncorrelated subqueries of a MATCH_RECOGNIZE clause on Spark, once, and inline their values.

The rules (scalar, ``EXISTS``, ``[NOT] IN``) are the core's (:mod:`timeweave.core.pattern.subqueries`);
this module only runs each query (through :func:`timeweave.sql`, so a subquery may use timeweave's own
syntax) and turns the rows into clause literals of the subquery column's type.  ``timeweave.sql`` and
``timeweave.match_recognize`` call it before planning, so every executor sees plain constants.
"""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import types as T

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import ClauseSpec, PatternValidationError, parse_clause, subqueries
from timeweave.core.pattern import expr as E
from timeweave.spark import sql_rewrite
from timeweave.spark import temporal_join_sql as _temporal_join_sql  # noqa: F401 - its rewriter: a subquery may join

#: ``x IN (subquery)`` becomes a list of constants; beyond this many, joining the input is the better plan.
MAX_IN_VALUES = 100_000

_CAST_TYPES: tuple[tuple[type[T.DataType], str], ...] = (
    (T.BooleanType, "BOOLEAN"), (T.ByteType, "BIGINT"), (T.ShortType, "BIGINT"), (T.IntegerType, "BIGINT"),
    (T.LongType, "BIGINT"), (T.FloatType, "DOUBLE"), (T.DoubleType, "DOUBLE"), (T.DecimalType, "DECIMAL"),
    (T.StringType, "VARCHAR"), (T.TimestampType, "TIMESTAMP"), (T.TimestampNTZType, "TIMESTAMP"),
    (T.DateType, "DATE"), (T.NullType, ""),
)  # fmt: skip


def inline_subqueries(spark: Any, clause: str | ClauseSpec) -> ClauseSpec:
    """``clause`` parsed, with each uncorrelated subquery run on ``spark`` and replaced by its value.

    A clause without subqueries comes back unchanged (errors keep pointing into the caller's text).

    >>> spec = inline_subqueries(spark, "MEASURES LAST(A.v) AS v PATTERN (A+) DEFINE A AS A.v > (SELECT 10)")  # doctest: +SKIP
    >>> str(spec.definitions[0].condition)  # doctest: +SKIP
    'A.v > 10'
    """
    spec = clause if isinstance(clause, ClauseSpec) else parse_clause(clause)
    found = subqueries.find(spec)
    if not found:
        return spec
    results: dict[str, list[tuple[Any, ...]]] = {}
    types: dict[str, str] = {}
    for node in found:
        if node.query in results:
            continue
        try:
            df = sql_rewrite.run(spark, node.query)  # as the SQL door runs it
            fields = df.schema.fields
        except QuerySyntaxError as error:
            raise PatternValidationError(f"in the subquery ({node.query}): {error.description}",
                                         text=spec.text, position=node.start) from None
        except Exception as error:  # Spark's analysis error: an unknown table, or a reference to the input
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise PatternValidationError(
                f"the subquery ({node.query}) failed: {first} (subqueries must be uncorrelated: they cannot "
                "read the input rows)", text=spec.text, position=node.start) from None
        if len(fields) != 1:
            raise PatternValidationError(f"the subquery ({node.query}) must return one column, not {len(fields)}",
                                         text=spec.text, position=node.start)
        cast = next((name for kind, name in _CAST_TYPES if isinstance(fields[0].dataType, kind)), None)
        if cast is None:
            raise PatternValidationError(
                f"the subquery ({node.query}) returns {fields[0].dataType.simpleString()}: only numbers, strings, "
                "booleans, dates and timestamps can be used as constants in MATCH_RECOGNIZE",
                text=spec.text, position=node.start)
        types[node.query] = cast
        if isinstance(node, E.InSubquery):
            rows = df.distinct().limit(MAX_IN_VALUES + 1).collect()
            if len(rows) > MAX_IN_VALUES:
                raise PatternValidationError(
                    f"the subquery ({node.query}) returned more than {MAX_IN_VALUES} distinct values: join the "
                    "input with it instead", text=spec.text, position=node.start)
        else:
            rows = df.limit(1 if node.kind == "exists" else 2).collect()
        results[node.query] = [tuple(row) for row in rows]

    def typed(value: Any, query: str) -> E.Expr:
        cast = types[query]
        if value is None:
            return E.Cast(E.Literal(None), cast) if cast else E.Literal(None)
        if isinstance(value, float) and not math.isfinite(value):  # no literal syntax for NaN / infinity
            return E.Cast(E.Literal(str(value)), "DOUBLE")
        return E.Literal(value)

    return subqueries.inline(spec, results, typed)


__all__ = ["MAX_IN_VALUES", "inline_subqueries"]
