"""The continuous GROUP BY at the SQL door: ``timeweave.sql`` over a *streaming* relation refuses it, pointing to the
job; over a batch relation the query is Spark's batch GROUP BY, as written.

``timeweave.sql`` returns a DataFrame and starts no streaming query (no door does: the streaming operators run
from their jobs and their ``*_stream`` functions, which own the checkpoint, the watermark and the tagged outputs).
Handed to Spark as it is, a GROUP BY over a streaming view would become Spark's own streaming aggregation (its
output modes, no retract / upsert changelog, no dead letters, no idle-state retention): not Flink's continuous
query.  So the door recognises the query the job takes (:func:`timeweave.core.updates.group_sql.
parse_group_aggregate_query`: the one reading of the SQL form, shared with the job config) and, when its FROM
relation is streaming, raises a :class:`~timeweave.core.errors.SpecError` naming the job section and the function
that run it.  Any other query passes unchanged (the registry's order 1: before every rewriter).

>>> from timeweave.spark import sql_rewrite
>>> [r.order for r in sql_rewrite.rewriters() if r.name == "continuous GROUP BY check"]
[1]
"""

from __future__ import annotations

from typing import Any

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.updates.group_sql import parse_group_aggregate_query
from timeweave.spark import sql_rewrite
from timeweave.spark.render import qualified

WHERE = "timeweave.sql"


def check_streaming_group_by(spark: Any, query: str) -> str:
    """``query`` unchanged, unless it is a continuous GROUP BY over a streaming relation: then a
    :class:`~timeweave.core.errors.SpecError` that points to the job.

    Example::

        spark.readStream.schema(schema).json("clicks/").createOrReplaceTempView("clicks")
        timeweave.sql(spark, "SELECT user, COUNT(url) FROM clicks GROUP BY user")  # SpecError: run the job
    """
    try:
        parsed = parse_group_aggregate_query(query)
    except QuerySyntaxError:
        return query  # not the continuous GROUP BY's shape: Spark's (or another rewriter's) query
    try:
        streaming = spark.table(qualified(parsed.relation)).isStreaming
    except Exception:  # not a table or view of the session (a CTE name...): Spark reports it as it does
        return query
    if not streaming:
        return query
    raise SpecError("query", f"{parsed.relation} is a streaming relation: a continuous GROUP BY over it runs as a "
                    "streaming job, which timeweave.sql does not start. Run the group_aggregate job with this query "
                    "({\"group_aggregate\": {\"query\": ..., \"time\": <event-time column>, \"changelog\": \"retract\" | "
                    "\"upsert\"}}), or timeweave.spark.group_aggregate_streaming.group_aggregate_stream over the "
                    "streaming DataFrame; its changelog is applied with timeweave.spark.changelog_sink.apply_changelog",
                    where=WHERE)


sql_rewrite.register(sql_rewrite.ClauseRewriter("continuous GROUP BY check", 1, check_streaming_group_by))


__all__ = ["check_streaming_group_by"]
