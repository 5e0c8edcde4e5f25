"""A ``timeweave.sql`` query as a streaming query: what a Flink SQL script's ``INSERT INTO`` runs in streaming mode.

The query's relations are streaming views (a script's ``CREATE TABLE`` statements registered with
``streaming=True``: :func:`timeweave.spark.ddl.create_table`).  Its one operator runs as that operator's streaming
registration, so rows wait for the watermark, late rows go to the late output and rows the operator cannot use
to the dead letter, as in the operator's streaming job:

* a temporal join (``JOIN r FOR SYSTEM_TIME AS OF o.t``, also Flink's temporal table function form ``LATERAL
  TABLE (Rates(o.t))``): :mod:`timeweave.spark.temporal_join_streaming`, its rows shaped exactly as the batch
  door's subquery shapes them (:func:`timeweave.spark.temporal_join_sql.exposed_spec`: ``o.col`` / ``r.col`` and
  the flat columns).  The time is the left table's ``WATERMARK`` column (an event-time join: each side's watermark
  is its table's ``WATERMARK FOR ... - INTERVAL``) or a ``PROCTIME()`` column (Flink's processing-time temporal
  join: each row joins its key's latest version when it is processed, without waiting);
* a window aggregation over one TUMBLE / HOP / CUMULATE call (also Flink's legacy ``GROUP BY TUMBLE(...)``) of
  the shape :mod:`timeweave.core.windows.aggregate_sql` reads: :mod:`timeweave.spark.window_streaming`, the
  SELECT block a projection of its rows under the batch door's output names.  Over a SESSION call too; its
  GROUP BY keys are exactly the call's PARTITION BY columns, Flink's rule, which the batch door checks too
  (:func:`timeweave.core.windows.aggregate_sql.check_session_keys`);
* a window Top-N or window deduplication (``ROW_NUMBER() / RANK() / DENSE_RANK() OVER (PARTITION BY window_start,
  window_end ...)`` over one TUMBLE / HOP / CUMULATE call, its rank bounded by the outer WHERE) of the shape
  :mod:`timeweave.core.windows.rank_sql` reads: :mod:`timeweave.spark.window_rank_streaming`, the ranked block
  reading its rows with the operator's rank column in place of the ranking (the outer query, its WHERE included,
  stays as written);
* a window join of two TUMBLE / HOP / CUMULATE calls (INNER / LEFT / RIGHT / FULL, ``ON L.window_start =
  R.window_start AND L.window_end = R.window_end`` and key equalities) of the shape
  :mod:`timeweave.core.windows.join_sql` reads: :mod:`timeweave.spark.window_join_streaming` (one watermark: both
  tables declare the same delay), the join replaced by its rows with each side a struct named by its alias (``L.col``
  reads as over the batch door's sides; a bare ``*`` lists ``L.*, R.*``);
* MATCH_RECOGNIZE over a table, ordered by its WATERMARK column first: :mod:`timeweave.spark.match_recognize_streaming`.

The query around the operator runs per micro-batch over the operator's rows, so the projection, the filters and
the functions are the batch door's, and a flushed stream writes the batch door's rows.  It must work row by row
(projections, filters, any scalar function, ``CASE``, ``explode``): an aggregate, a sort, a LIMIT, DISTINCT, a
window function or another join needs the whole stream and is refused before any Spark job (run the query in
batch mode, or as a streaming job config).  A query without an operator runs row by row too (``INSERT INTO sink
SELECT ... FROM source WHERE ...``).  A shape the readers decline
(:class:`~timeweave.core.windows.aggregate_sql.Declined`) is refused, positioned.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.match_sql import MatchRecognizeClause, find_match_recognize
from timeweave.core.sql_tokens import split_qualified_name
from timeweave.core.temporal_sql import TemporalJoinClause, find_temporal_joins
from timeweave.core.windows.aggregate_sql import Declined, check_session_keys, window_aggregate_query
from timeweave.core.windows.join_sql import WindowJoinQuery, window_join_queries
from timeweave.core.windows.legacy_sql import rewrite_group_windows
from timeweave.core.windows.ops_sql import check_window_ops
from timeweave.core.windows.rank_sql import WindowRankQuery, window_rank_query
from timeweave.core.windows.tvf_sql import WindowTvf, find_window_tvfs
from timeweave.spark import render
from timeweave.spark.host.stream import BatchOutputs
from timeweave.spark.host.writer import OutputCounts
from timeweave.spark.registration import time_attributes
from timeweave.spark.temp_views import drop_temp_view
from timeweave.spark.temporal_functions import rewrite_temporal_function_joins
from timeweave.spark.temporal_join_sql import bind_clause, exposed_spec, hidden_columns, star_edits
from timeweave.spark.temporal_join_streaming import SqlExposure, temporal_join_stream
from timeweave.spark.window_render import window_tvf_sql

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

    ``operator``: the streaming operator's stream (a ``StreamingJoin``, ``StreamingWindows``, ``StreamingMatch``),
    or None for a query without one (then
    :attr:`source` is the query itself, every row is a main row).  ``outer``: the query with the operator's clause
    replaced by ``view``, which each micro-batch's main rows are registered as.
    """

    operator: Any
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

    ``heartbeat``: the job's control stream (its rows move the watermarks: the end-of-input flush).  ``finish``:
    applied to each micro-batch's main rows (a script casts them to its sink's columns).  Raises a positioned
    error for what streaming cannot run, before any Spark job.

    Example::

        timeweave.sql(spark, "CREATE TABLE orders (...) WITH (...)", ...)   # or ddl.create_table(..., streaming=True)
        query = streaming_sql(spark, "SELECT o.id, r.rate FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF "
                                     "o.ts AS r ON o.cur = r.cur")
        query.stream.writeStream.foreachBatch(TaggedWriter(spark, query, paths, metrics)).start()
    """
    query = rewrite_temporal_function_joins(spark, query)  # Flink's LATERAL TABLE form is a temporal join
    query = rewrite_group_windows(query)  # Flink's legacy group windows are window TVF calls
    view = f"__tw_streaming_rows_{next(_views)}"
    check_window_ops(query)  # Flink's refusals first, as the batch door checks them (a SESSION ranked directly...)
    found = [(c.start, "MATCH_RECOGNIZE", c) for c in find_match_recognize(query)]
    joins = _window_joins(query)
    joined = {call.start for join in joins for call in join.calls}
    found += [(c.start, "window TVF", c) for c in find_window_tvfs(query) if c.start not in joined]
    found += [(join.start, "window join", join) for join in joins]
    found += [(c.start, "temporal join", c) for c in find_temporal_joins(query)]
    found.sort(key=lambda f: f[0])
    if not found:
        source = spark.sql(query)
        if not source.isStreaming:
            raise QuerySyntaxError("in streaming mode the query must read a streaming table (a CREATE TABLE of the "
                                   "script)", text=query, position=0)
        _check_row_by_row(source, query, 0, "the query")
        return StreamingSqlQuery(None, source, query, view, finish)
    if len(found) > 1:
        raise QuerySyntaxError(
            f"in streaming mode a query runs one operator (found {', '.join(kind for _, kind, _ in found)}); run each "
            "as the query of an INSERT of its own", text=query, position=found[1][0])
    _, kind, clause = found[0]
    build = {"MATCH_RECOGNIZE": _match_recognize, "window TVF": _window_query, "window join": _window_join,
             "temporal join": _temporal_join}
    operator, outer, position = build[kind](spark, query, clause, view, heartbeat)
    result = StreamingSqlQuery(operator, None, outer, view, finish)
    probe = result.project(operator.split(spark.createDataFrame([], operator.stream.schema)).main)
    _check_row_by_row(probe, query, position, f"the query around the {kind}")
    return result


def _streaming_table(spark: Any, query: str, relation: str, position: int, what: str) -> tuple[str, DataFrame]:
    """The streaming table named ``relation`` (its name and DataFrame); a positioned error for anything else."""
    name = relation.strip()
    try:
        parts = split_qualified_name(name)
    except QuerySyntaxError:
        parts = []
    if len(parts) != 1:
        raise QuerySyntaxError(f"in streaming mode the input of {what} is a table the script declares (CREATE TABLE "
                               f"... WITH a WATERMARK), not {name[:40]!r}", text=query, position=position)
    df = spark.table(render.quote(parts[0]))
    if not df.isStreaming:
        raise QuerySyntaxError(f"in streaming mode the input of {what}, {name}, must be a stream (declare it with "
                               "CREATE TABLE in the script)", text=query, position=position)
    return parts[0], df


def _event_time_delay(spark: Any, query: str, name: str, column: str, position: int, what: str) -> int:
    """The watermark delay (µs) of table ``name``, whose WATERMARK must be on ``column``."""
    watermark, _ = time_attributes(spark, name)
    if watermark is None or watermark[0].lower() != column.lower():
        found = f"its WATERMARK is on {watermark[0]!r}" if watermark else "it declares no WATERMARK FOR ... AS col - INTERVAL ..."
        raise QuerySyntaxError(f"in streaming mode {what} runs on the event time of {name}: {column!r} must be its "
                               f"WATERMARK column; {found}", text=query, position=position)
    return watermark[1]


#: The rank column of a streaming window Top-N's rows, which the ranked block reads in place of its ranking.
RANK_COLUMN = "__tw_rownum"


def _window_query(spark: Any, query: str, call: WindowTvf, view: str, heartbeat: DataFrame | None):
    """A window TVF call: the window Top-N / deduplication ranking its rows, or else the window aggregation
    grouping them."""
    ranked = window_rank_query(query, call)
    if isinstance(ranked, Declined):
        raise QuerySyntaxError(f"in streaming mode a window ranking runs as the window Top-N operator: {ranked.reason}",
                               text=query, position=ranked.position)
    if ranked is not None:
        return _window_rank(spark, query, ranked, view, heartbeat)
    return _window_aggregation(spark, query, call, view, heartbeat)


def _window_source(spark: Any, query: str, call: WindowTvf) -> tuple[str, DataFrame, str]:
    """The call's streaming table (name, DataFrame) and its watermark delay as the operators take it."""
    name, df = _streaming_table(spark, query, call.relation, call.relation_start, f"{call.function}")
    delay = _event_time_delay(spark, query, name, call.time_column, call.start, f"{call.function}")
    return name, df, f"{delay // 1000} milliseconds"


def _window_rank(spark: Any, query: str, shape: WindowRankQuery, view: str, heartbeat: DataFrame | None):
    """A window Top-N (or deduplication) as the streaming rank operator; the ranked block reads its rows (the
    TVF's columns and the rank, :data:`RANK_COLUMN`, in place of the ranking), the outer query stays."""
    from timeweave.spark.window_rank_streaming import window_deduplicate_stream, window_top_n_stream
    from timeweave.spark.windows import bind

    call = shape.call
    _, df, watermark = _window_source(spark, query, call)
    time, _, spec = bind(df.schema, call.time_column, call.spec)
    try:
        if shape.keep is not None:  # Flink's window deduplication: the rank operator's Top-1 on the time
            ranks = window_deduplicate_stream(df, time=time, keys=shape.keys, keep=shape.keep, window=spec,
                                              rank_column=RANK_COLUMN, watermark=watermark, heartbeat=heartbeat)
        else:
            ranks = window_top_n_stream(df, order_by=shape.order, partition_by=shape.keys, ranks=shape.ranks,
                                        rank_column=RANK_COLUMN, time=time, window=spec, watermark=watermark,
                                        heartbeat=heartbeat)
    except SpecError as error:  # a PARTITION BY / ORDER BY column the table lacks...
        raise QuerySyntaxError(f"in streaming mode the window Top-N: {error.message}", text=query,
                               position=shape.ranking[0]) from None
    hidden = f"* EXCEPT ({render.quote(RANK_COLUMN)})"
    edits = [(call.start, call.end, render.quote(view)), (*shape.ranking, render.quote(RANK_COLUMN)),
             *((start, end, query[start : end - 1] + hidden) for start, end in shape.stars)]
    outer = query
    for start, end, text in sorted(edits, reverse=True):
        outer = outer[:start] + text + outer[end:]
    return ranks, outer, shape.ranking[0]


def _window_joins(query: str) -> list[WindowJoinQuery]:
    """The query's window joins (:mod:`timeweave.core.windows.join_sql`); a shape the reader declines is refused."""
    joins = []
    for join in window_join_queries(query):
        if isinstance(join, Declined):
            raise QuerySyntaxError(f"in streaming mode a window join runs as the window join operator: {join.reason}",
                                   text=query, position=join.position)
        joins.append(join)
    return joins


#: The prefixes of each side's columns in a streaming window join's rows (the ON's aliases become structs of them).
_JOIN_PREFIXES = ("__tw_l_", "__tw_r_")


def _window_join(spark: Any, query: str, shape: WindowJoinQuery, view: str, heartbeat: DataFrame | None):
    """A window join as the streaming window join operator; the join becomes its rows with each side as a struct
    named by the side's alias (NULL where the side has no row), as the batch door's sides are (``L.col``)."""
    from timeweave.spark.window_join_streaming import window_join_stream
    from timeweave.spark.windows import bind

    sides = [_window_source(spark, query, call) for call in shape.calls]
    if sides[0][2] != sides[1][2]:
        raise QuerySyntaxError(
            f"in streaming mode a window join waits on one watermark: the WATERMARK delays of {sides[0][0]} and "
            f"{sides[1][0]} must be equal ({sides[0][2]}, {sides[1][2]})", text=query, position=shape.calls[1].start)
    bound = [bind(df.schema, call.time_column, call.spec) for (_, df, _), call in zip(sides, shape.calls, strict=True)]
    try:
        joined = window_join_stream(
            sides[0][1], sides[1][1], on=list(shape.on), how=shape.how.lower(), time=(bound[0][0], bound[1][0]),
            window=(bound[0][2], bound[1][2]), watermark=sides[0][2], left_prefix=_JOIN_PREFIXES[0],
            right_prefix=_JOIN_PREFIXES[1], heartbeat=heartbeat)
    except SpecError as error:  # an ON column a table lacks...
        raise QuerySyntaxError(f"in streaming mode the window join: {error.message}", text=query,
                               position=shape.start) from None
    structs = [_side_struct(df.columns, time, prefix)
               for (_, df, _), (time, _, _), prefix in zip(sides, bound, _JOIN_PREFIXES, strict=True)]
    rows = (f"(SELECT {structs[0]} AS {render.quote(shape.aliases[0])}, {structs[1]} AS "
            f"{render.quote(shape.aliases[1])} FROM {render.quote(view)}) AS __tw_wjoin")
    stars = ", ".join(f"{render.quote(alias)}.*" for alias in shape.aliases)  # a bare * lists each side's columns
    edits = [(shape.start, shape.end, rows), *((start, end, stars) for start, end in shape.stars)]
    outer = query
    for start, end, text in sorted(edits, reverse=True):
        outer = outer[:start] + text + outer[end:]
    return joined, outer, shape.start


def _side_struct(columns: list[str], time: str, prefix: str) -> str:
    """One side of a window join's rows as the struct of its TVF's columns (NULL when the row has no such side:
    its event time, never NULL in a joined row, is NULL then)."""
    fields = [f"{render.sql_string(c)}, {render.quote(prefix + c)}" for c in columns]
    fields += [f"{render.sql_string(w)}, {render.quote(w)}" for w in ("window_start", "window_end", "window_time")]
    return f"CASE WHEN {render.quote(prefix + time)} IS NULL THEN NULL ELSE named_struct({', '.join(fields)}) END"


def _window_aggregation(spark: Any, query: str, call: WindowTvf, view: str, heartbeat: DataFrame | None):
    """A window aggregation over one TUMBLE / HOP / CUMULATE / SESSION call as the streaming window operator; the
    SELECT block becomes a projection of its rows (the batch door's output names, from Spark's analysis)."""
    from timeweave.spark.window_streaming import window_aggregate_stream
    from timeweave.spark.windows import bind, block_aggregates, block_names, block_select, session_zone

    shape = window_aggregate_query(query, call, sessions=True)
    if isinstance(shape, Declined):
        raise QuerySyntaxError(
            "in streaming mode a window TVF runs as a window aggregation (SELECT the window columns, GROUP BY keys "
            f"and COUNT / SUM / MIN / MAX / AVG of a column, GROUP BY window_start, window_end, keys): {shape.reason}",
            text=query, position=shape.position)
    check_session_keys(query, call)
    name, df, watermark = _window_source(spark, query, call)
    time, kind, spec = bind(df.schema, call.time_column, call.spec)
    tvf = window_tvf_sql(spec, render.quote(name), df.columns, time, kind=kind, zone=session_zone(spark, kind))
    windows = window_aggregate_stream(df, block_aggregates(shape), keys=shape.keys, time=time, window=call.spec,
                                      watermark=watermark, heartbeat=heartbeat)
    select = block_select(shape, block_names(spark, query, shape, tvf), render.quote(view) + " __tw_windows")
    return windows, query[: shape.start] + select + query[shape.end :], call.start


def _match_recognize(spark: Any, query: str, clause: MatchRecognizeClause, view: str, heartbeat: DataFrame | None):
    """MATCH_RECOGNIZE over a streaming table as the streaming matcher; the clause becomes its rows' view."""
    from timeweave.core.match_sql import reposition
    from timeweave.spark.match_recognize_streaming import match_recognize_stream

    name, df = _streaming_table(spark, query, clause.relation, clause.start, "MATCH_RECOGNIZE")
    spec = clause.spec
    first = spec.order_by[0].column if spec.order_by else None
    if first is None or spec.order_by[0].descending:
        raise QuerySyntaxError("in streaming mode MATCH_RECOGNIZE needs ORDER BY <event time> (ascending) first",
                               text=query, position=clause.clause_start)
    delay = _event_time_delay(spark, query, name, first, clause.clause_start, "MATCH_RECOGNIZE")
    try:
        matched = match_recognize_stream(df, spec, watermark=f"{delay // 1000} milliseconds", heartbeat=heartbeat)
    except QuerySyntaxError as error:  # positioned in the clause: moved into the query
        raise reposition(error, query, clause.clause_start) from None
    replacement = render.quote(view)
    if clause.alias is not None:
        replacement += f" AS {render.quote(clause.alias)}{clause.alias_columns or ''}"
    return matched, query[: clause.start] + replacement + query[clause.end :], clause.start


def _temporal_join(spark: Any, query: str, clause: TemporalJoinClause, view: str, heartbeat: DataFrame | None):
    """The temporal join as the streaming join; its rows shaped as the batch door's subquery."""
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
    return joined, _outer_query(clause, view), clause.start


def _outer_query(clause: TemporalJoinClause, view: str) -> str:
    """The query with the join replaced by ``view`` and each bare ``*`` of its block by ``* EXCEPT (aliases)``
    (the rows carry each side as a struct named by its alias, as the batch door's subquery does)."""
    query = clause.query
    edits = [(clause.start, clause.end, f"{render.quote(view)} AS __tw_join1"), *star_edits(clause)]
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
