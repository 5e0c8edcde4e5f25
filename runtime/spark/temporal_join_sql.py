"""The temporal join's SQL syntax: ``JOIN r FOR SYSTEM_TIME AS OF l.t ON ...`` rewritten to the batch plan.

Each clause (found by :mod:`timeweave.core.temporal_sql`) is replaced by the shared batch plan as a
subquery.  The subquery exposes the left and right columns flat (where unambiguous) and as struct columns
named by the aliases, so ``l.col`` / ``r.col`` in the outer query keep working; a bare ``SELECT *`` of that
query block becomes ``SELECT * EXCEPT (l, r)``, so it lists the left columns then the right columns whose
names the left side does not already use (Flink would list both, which Spark cannot name apart).

Importing this module registers the rewriter with the SQL door (:mod:`timeweave.spark.sql_rewrite`).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from timeweave.core.errors import SpecError
from timeweave.core.spec import TemporalJoinSpec
from timeweave.core.temporal_sql import TemporalJoinClause, find_temporal_joins
from timeweave.spark import render, sql_rewrite
from timeweave.spark.registration import versioned_spec
from timeweave.spark.schema import schema_kinds


def rewrite_temporal_joins(spark: Any, query: str) -> str:
    """``query`` with each ``JOIN r FOR SYSTEM_TIME AS OF ...`` replaced by the batch plan (a subquery).

    Example::

        print(rewrite_temporal_joins(spark, "SELECT ... JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON ..."))
    """
    edits: list[tuple[int, int, str]] = []
    for n, clause in enumerate(find_temporal_joins(query), start=1):
        edits.append((clause.start, clause.end, _render_clause(spark, clause, n)))
        # The rewritten join also exposes the aliases as struct columns (so `o.col` keeps working); a bare
        # `*` must not list them.
        hidden = ", ".join(render.quote(alias) for alias in (clause.left_alias, clause.right_alias))
        edits.extend((star, star + 1, f"* EXCEPT ({hidden})") for star in clause.select_stars)
    for start, end, replacement in sorted(edits, reverse=True):
        query = query[:start] + replacement + query[end:]
    return query


def bind_clause(spark: Any, clause: TemporalJoinClause, n: int) -> tuple[TemporalJoinSpec, DataFrame, DataFrame]:
    """The spec of join #``n`` of a query (checked against both sides) and its two sides as DataFrames."""
    where = f"temporal join #{n} ({clause.right_name} AS {clause.right_alias})"
    versioned = versioned_spec(spark, clause.right_name)
    if versioned is None:
        raise SpecError(
            "versioned",
            f"'{clause.right_name}' is not a versioned table: register it with timeweave.versioned_table(..., name=...) "
            "or timeweave.register_versioned(...), or set timeweave.key / timeweave.time table properties",
            where=where,
        )
    left_key, predicate = clause.join_keys(versioned.key, where)
    left_df = spark.sql(f"SELECT * FROM {clause.left_relation} AS __tw_probe")
    right_df = spark.table(clause.right_name)
    # Flat right columns only where the name is free, so unqualified references keep one meaning; the others
    # are read through the alias (`r.col`).
    flat_right = [c for c in right_df.columns if c not in left_df.columns and c not in versioned.meta_columns]
    spec = TemporalJoinSpec(
        versioned, left_time=clause.left_time, left_key=left_key, how=clause.how, right_columns=flat_right,
        predicate=predicate, where=where,
    )
    spec.bind(schema_kinds(left_df.schema), schema_kinds(right_df.schema))
    return spec, left_df, right_df


def _render_clause(spark: Any, clause: TemporalJoinClause, n: int) -> str:
    spec, left_df, right_df = bind_clause(spark, clause, n)
    right_columns = right_df.columns
    body = render.temporal_join_sql(
        spec, f"{clause.left_relation} AS __tw_left{n}", clause.right_name, left_df.columns, right_columns,
        left_alias=clause.left_alias, right_alias=clause.right_alias, nested=True,
        time_domain=spec.time_domain(schema_kinds(left_df.schema), schema_kinds(right_df.schema)),
    )
    return f"({body}) AS __tw_join{n}"


sql_rewrite.register(sql_rewrite.ClauseRewriter("temporal join", 20, rewrite_temporal_joins))

__all__ = ["bind_clause", "rewrite_temporal_joins"]
