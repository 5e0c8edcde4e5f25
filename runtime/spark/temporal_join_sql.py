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
from timeweave.spark.registration import versioned_relation, versioned_spec
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
    right_keys = [r for _, r in clause.key_pairs]
    if sorted(right_keys) != sorted(versioned.key):
        raise SpecError(
            "ON",
            f"the equalities join on {right_keys}, but the versioned table's key is {list(versioned.key)} "
            "(a temporal join must equate the whole key, as in Flink)",
            where=where,
        )
    by_right = {r: left for left, r in clause.key_pairs}
    spec = TemporalJoinSpec(
        versioned, left_time=clause.left_time, left_key=[by_right[k] for k in versioned.key], how=clause.how,
        predicate=clause.predicate, where=where,
    )
    left_df = spark.sql(f"SELECT * FROM {clause.left_relation} AS __tw_probe")
    right_df = spark.table(_versions_of(spark, clause))
    spec.bind(schema_kinds(left_df.schema), schema_kinds(right_df.schema))
    return spec, left_df, right_df


def _versions_of(spark: Any, clause: TemporalJoinClause) -> str:
    """The relation holding the right side's versions: a versioned view's history, else the table as written."""
    history = versioned_relation(spark, clause.right_name)
    return render.quote(history) if history else clause.right_name


def _render_clause(spark: Any, clause: TemporalJoinClause, n: int) -> str:
    spec, left_df, right_df = bind_clause(spark, clause, n)
    versioned, where = spec.versioned, spec.where
    right_columns = right_df.columns
    # Flat right columns only where the name is free, so unqualified references keep one meaning.
    flat_right = [c for c in right_columns if c not in left_df.columns and c not in versioned.meta_columns]
    spec = TemporalJoinSpec(
        versioned, left_time=spec.left_time, left_key=spec.left_key, how=spec.how, right_columns=flat_right,
        predicate=spec.predicate, where=where,
    )
    body = render.temporal_join_sql(
        spec, f"{clause.left_relation} AS __tw_left{n}", _versions_of(spark, clause), left_df.columns, right_columns,
        left_alias=clause.left_alias, right_alias=clause.right_alias, nested=True,
    )
    return f"({body}) AS __tw_join{n}"


sql_rewrite.register(sql_rewrite.ClauseRewriter("temporal join", 20, rewrite_temporal_joins))

__all__ = ["bind_clause", "rewrite_temporal_joins"]
