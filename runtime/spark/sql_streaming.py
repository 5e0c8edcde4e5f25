"""A ``timeweave.sql`` query as a streaming query: what a Flink SQL script's ``INSERT INTO`` runs in streaming mode.

The query's relations are streaming views (a script's ``CREATE TABLE`` statements registered with
``streaming=True``: :func:`timeweave.spark.ddl.create_table`).  Its temporal join (``JOIN r FOR SYSTEM_TIME AS OF
o.t``, also written as Flink's temporal table function ``LATERAL TABLE (Rates(o.t))``) runs as the streaming
operator (:mod:`timeweave.spark.temporal_join_streaming`): rows wait for the watermark, late rows go to the late
output, rows the join cannot use to the dead letter, as in a streaming job.  The query around the join runs per
micro-batch over the join's rows, shaped exactly as the batch door's subquery shapes them
(:func:`timeweave.spark.temporal_join_sql.exposed_spec`: ``o.col`` / ``r.col`` and the flat columns), so the
projection, the filters and the functions are the batch door's, and a flushed stream writes the batch door's rows.

What the query around the join may do: row by row work (projections, filters, any scalar function, ``CASE``,
``explode``).  An aggregate, a sort, a LIMIT, DISTINCT, a window function or another join needs the whole stream
and is refused before any Spark job (run the query in batch mode, or as its own streaming job).  The join's
time: the left table's ``WATERMARK`` column (an event-time join: each side's watermark is its table's ``WATERMARK
FOR ... - INTERVAL``) or a ``PROCTIME()`` column (Flink's processing-time temporal join: each row joins its key's
latest version when it is processed, without waiting).  A query without a temporal join runs row by row too (an
``INSERT INTO sink SELECT ... FROM source WHERE ...``); MATCH_RECOGNIZE and window TVFs in a streaming script are
not supported yet (their streaming jobs run them).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.match_sql import find_match_recognize
from timeweave.core.temporal_sql import TemporalJoinClause, find_temporal_joins
from timeweave.core.windows.legacy_sql import rewrite_group_windows
from timeweave.core.windows.tvf_sql import find_window_tvfs
from timeweave.spark import render
from timeweave.spark.host.stream import BatchOutputs
from timeweave.spark.host.writer import OutputCounts
from timeweave.spark.registration import time_attributes
from timeweave.spark.temp_views import drop_temp_view
from timeweave.spark.temporal_functions import rewrite_temporal_function_joins
from timeweave.spark.temporal_join_sql import bind_clause, exposed_spec, hidden_columns
from timeweave.spark.temporal_join_streaming import SqlExposure, StreamingJoin, temporal_join_stream

_views = itertools.count()

#: Logical plan nodes a query around the operator may hold: they work row by row, so one micro-batch's rows give
#: what the whole stream's would.  Anything else (Aggregate, Sort, Window, Join, Limit, Distinct...) is refused.
ROW_BY_ROW_NODES = frozenset({
    "Project", "Filter", "SubqueryAlias", "View", "LocalRelation", "LogicalRDD", "Generate", "ResolvedHint",
    "Sample", "Expand", "SerializeFromObject", "DeserializeToObject", "MapPartitionsInPandas", "PythonMapInArrow",
    "MapInPandas", "MapInArrow", "Union", "OneRowRelation",
})


@dataclasses.dataclass(frozen=True)
class StreamingSqlQuery:
    """The tagged stream of a streaming SQL query (a ``TaggedStream`` of the host's writer): the operator's
    stream, each micro-batch's main rows put through the query around the operator (and ``finish``).

    ``operator``: the streaming operator's stream (a ``StreamingJoin``), or None for a query without one (then
    :attr:`source` is the query itself, every row is a main row).  ``outer``: the query with the operator's clause
    replaced by ``view``, which each micro-batch's main rows are registered as.
    """

    operator: StreamingJoin | None
    source: DataFrame | None
    outer: str
    view: str
    finish: Callable[[DataFrame], DataFrame] | None = None

    @property
    def stream(self) -> DataFrame:
        return self.operator.stream if self.operator is not None else self.source

    @property
    def compress_cache(self) -> bool:
        return getattr(self.operator, "compress_cache", True)

    def count_columns(self) -> list[Column]:
        if self.operator is not None:
            return self.operator.count_columns()
        return [F.count(F.lit(1)).alias("rows")]

    def counts(self, observed: Mapping[str, Any]) -> OutputCounts:
        if self.operator is not None:
            return self.operator.counts(observed)
        rows = int(observed["rows"])
        return OutputCounts({"rows_in": rows}, main=rows, late=0, dead=0)

    def split(self, batch: DataFrame) -> BatchOutputs:
        """One micro-batch's main (the query's rows), late and dead-letter outputs."""
        if self.operator is None:
            empty = batch.limit(0)
            return BatchOutputs(self._finished(batch), empty, empty)
        outputs = self.operator.split(batch)
        return dataclasses.replace(outputs, main=self.project(outputs.main))

    def project(self, main: DataFrame) -> DataFrame:
        """The query around the operator over ``main`` (one micro-batch's joined rows), then ``finish``."""
        spark = main.sparkSession
        main.createOrReplaceTempView(self.view)
        if not hasattr(spark, "_jsparkSession"):  # Spark Connect resolves the view when the query runs: it stays
            return self._finished(spark.sql(self.outer))
        try:
            rows = spark.sql(self.outer)  # analyzed here: the view's plan is inlined, so the view can go
        finally:
            drop_temp_view(spark, self.view)
        return self._finished(rows)

    def _finished(self, rows: DataFrame) -> DataFrame:
        return self.finish(rows) if self.finish is not None else rows


def streaming_sql(
    spark: Any, query: str, *, heartbeat: DataFrame | None = None,
    finish: Callable[[DataFrame], DataFrame] | None = None,
) -> StreamingSqlQuery:
    """``query`` over streaming views as a tagged stream for the host's writer (see the module docstring).

    ``heartbeat``: the job's control stream (its rows move both sides' watermarks: the end-of-input flush).
    ``finish``: applied to each micro-batch's main rows (a script casts them to its sink's columns).  Raises a
    positioned error for what streaming cannot run, before any Spark job.

    Example::

        timeweave.sql(spark, "CREATE TABLE orders (...) WITH (...)", ...)   # or ddl.create_table(..., streaming=True)
        query = streaming_sql(spark, "SELECT o.id, r.rate FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF "
                                     "o.ts AS r ON o.cur = r.cur")
        query.stream.writeStream.foreachBatch(TaggedWriter(spark, query, paths, metrics)).start()
    """
    query = rewrite_temporal_function_joins(spark, query)  # Flink's LATERAL TABLE form is a temporal join
    _refuse_unsupported(query)
    clauses = find_temporal_joins(query)
    view = f"__tw_streaming_rows_{next(_views)}"
    if not clauses:
        source = spark.sql(query)
        if not source.isStreaming:
            raise QuerySyntaxError("in streaming mode the query must read a streaming table (a CREATE TABLE of the "
                                   "script)", text=query, position=0)
        result = StreamingSqlQuery(None, source, query, view, finish)
        _check_row_by_row(source, query, 0, "the query")
        return result
    if len(clauses) > 1:
        raise QuerySyntaxError(f"in streaming mode a query holds one temporal join (found {len(clauses)}); run "
                               "the others as queries of their own", text=query, position=clauses[1].start)
    clause = clauses[0]
    bound = bind_clause(spark, clause, 1)
    if not (bound.left.isStreaming and bound.right.isStreaming):
        side = "left side" if not bound.left.isStreaming else f"versioned table {clause.right_name}"
        raise QuerySyntaxError(f"in streaming mode both sides of the temporal join are streams; the {side} is not "
                               "(declare it with CREATE TABLE in the script)", text=query, position=clause.start)
    mode, left_delay, right_delay = _join_times(spark, clause)
    joined = temporal_join_stream(
        bound.left, bound.right, bound.spec, left_watermark=f"{left_delay // 1000} milliseconds",
        right_watermark=f"{right_delay // 1000} milliseconds", mode=mode, heartbeat=heartbeat,
        hidden_left=hidden_columns(clause),
    )
    joined = dataclasses.replace(joined, exposure=SqlExposure(exposed_spec(bound), clause.left_alias,
                                                              clause.right_alias))
    outer = _outer_query(clause, view)
    result = StreamingSqlQuery(joined, None, outer, view, finish)
    probe = result.project(joined.split(spark.createDataFrame([], joined.stream.schema)).main)
    _check_row_by_row(probe, query, clause.start, "the query around the temporal join")
    return result


def _outer_query(clause: TemporalJoinClause, view: str) -> str:
    """The query with the join replaced by ``view`` and each bare ``*`` of its block by ``* EXCEPT (aliases)``
    (the rows carry each side as a struct named by its alias, as the batch door's subquery does)."""
    query = clause.query
    hidden = ", ".join(render.quote(alias) for alias in (clause.left_alias, clause.right_alias))
    edits = [(clause.start, clause.end, f"{render.quote(view)} AS __tw_join1")]
    edits += [(star, star + 1, f"* EXCEPT ({hidden})") for star in clause.select_stars]
    for start, end, replacement in sorted(edits, reverse=True):
        query = query[:start] + replacement + query[end:]
    return query


def _join_times(spark: Any, clause: TemporalJoinClause) -> tuple[str, int, int]:
    """``(mode, left delay µs, right delay µs)``: an event-time join on the left table's WATERMARK column, or a
    processing-time join on a PROCTIME() column of it."""
    left_name = clause.left_relation.strip()
    watermark, proctime = time_attributes(spark, left_name)
    if clause.left_time in proctime:
        return "processing_time", 0, 0
    if watermark is None or watermark[0] != clause.left_time:
        attribute = (f"its WATERMARK column is {watermark[0]!r}" if watermark is not None else
                     "it declares no WATERMARK ... AS col - INTERVAL ...")
        raise QuerySyntaxError(
            f"in streaming mode FOR SYSTEM_TIME AS OF {clause.left_alias}.{clause.left_time} needs a time attribute "
            f"of the left table {left_name}: its WATERMARK column (an event-time join) or a PROCTIME() column (a "
            f"processing-time join); {attribute}", text=clause.query, position=clause.start)
    right_watermark, _ = time_attributes(spark, clause.right_name)
    if right_watermark is None:
        raise QuerySyntaxError(
            f"in streaming mode the versioned table {clause.right_name} needs a WATERMARK FOR <time> AS <time> - "
            "INTERVAL ... (its watermark decides when a version is complete)", text=clause.query, position=clause.start)
    return "event_time", watermark[1], right_watermark[1]


def _refuse_unsupported(query: str) -> None:
    clauses = find_match_recognize(query)
    if clauses:
        raise QuerySyntaxError("MATCH_RECOGNIZE in a streaming SQL script is not supported yet: run it as a streaming "
                               "job config (a 'match_recognize' section)", text=query, position=clauses[0].start)
    windows = find_window_tvfs(rewrite_group_windows(query))
    if windows:
        raise QuerySyntaxError("window TVFs and group windows in a streaming SQL script are not supported yet: run "
                               "them as a streaming job config (a 'window' section)", text=query,
                               position=windows[0].start if rewrite_group_windows(query) == query else 0)


def _check_row_by_row(rows: DataFrame, query: str, position: int, what: str) -> None:
    """Refuse ``rows`` (analyzed) when its plan holds a node that needs more than one row at a time."""
    jdf = getattr(rows, "_jdf", None)
    if jdf is None:  # Spark Connect: no plan to walk; Spark's own streaming checks apply
        return
    found: list[str] = []
    pending = [jdf.queryExecution().analyzed()]
    while pending:
        node = pending.pop()
        name = node.nodeName()
        if name not in ROW_BY_ROW_NODES and name not in found and not name.startswith("StreamingRelation"):
            found.append(name)
        children = node.children()
        pending.extend(children.apply(i) for i in range(children.size()))
    if found:
        raise QuerySyntaxError(
            f"in streaming mode {what} runs row by row over each micro-batch; it holds {', '.join(sorted(found))} "
            "(an aggregate, a sort, a LIMIT, DISTINCT, a window function or a join needs the whole stream): run the "
            "script in batch mode, or that step as a streaming job of its own", text=query, position=position)


__all__ = ["ROW_BY_ROW_NODES", "StreamingSqlQuery", "streaming_sql"]
