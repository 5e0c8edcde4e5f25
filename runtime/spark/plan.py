"""Plan pieces shared by the batch doors and the streaming adapter (all rendered from the one macro file).

The streaming adapter produces a ``matched`` DataFrame (``__tw_l``, ``__tw_v``) from the core operator
and calls :func:`finalize`, the same step the batch plan ends with, so join type, predicate and
projection are decided once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from runtime.core.spec import TemporalJoinSpec
from runtime.spark import render

_counter = iter(range(1, 1 << 62))


def deleted_expression(spec: TemporalJoinSpec) -> str:
    """SQL boolean over a right row: is it a delete?  (NULL: an unknown op — such rows are dead letters.)"""
    return render.deleted_expression(spec.versioned)


def reject_reason(spec: TemporalJoinSpec, side: str) -> str:
    """SQL string expression over one side's row: why it goes to the dead letter, NULL when it is fine."""
    if side == "left":
        return render.reject_reason_expression("left", spec.left_key, spec.left_time)
    if side == "right":
        return render.reject_reason_expression("right", spec.versioned.key, spec.versioned.time, spec.versioned)
    raise ValueError(f"side must be 'left' or 'right', got {side!r}")


def split_rejects(df: DataFrame, spec: TemporalJoinSpec, side: str) -> tuple[DataFrame, DataFrame]:
    """(rows that can take part, dead-letter rows with ``reason`` and ``side``).  Pure filters: works on streams.

    Example::

        valid, rejected = split_rejects(orders, spec, "left")
    """
    tagged = df.withColumn("__tw_reason", F.expr(reject_reason(spec, side)))
    valid = tagged.where(F.col("__tw_reason").isNull()).drop("__tw_reason")
    rejected = (
        tagged.where(F.col("__tw_reason").isNotNull())
        .withColumnRenamed("__tw_reason", "reason")
        .withColumn("side", F.lit(side))
    )
    return valid, rejected


def finalize(
    matched: DataFrame,
    spec: TemporalJoinSpec,
    left_columns: Sequence[str],
    right_columns: Sequence[str],
    left_alias: str = "l",
    right_alias: str = "r",
) -> DataFrame:
    """Apply join type, extra predicate, projection and validity columns to ``matched`` (batch or stream).

    ``matched`` has the columns ``__tw_l`` (struct of all left columns) and ``__tw_v`` (struct
    ``deleted, valid_from, valid_to, p`` with ``p`` the struct of all right columns; NULL when the key
    had no event at or before the left row's time).
    """
    view = f"__tw_matched_{next(_counter)}"
    matched.createOrReplaceTempView(view)
    sql = render.finalize_sql(spec, view, left_columns, right_columns, left_alias=left_alias, right_alias=right_alias)
    spark = matched.sparkSession
    result = spark.sql(sql)
    if hasattr(spark, "_jsparkSession"):
        # A classic session has analyzed the query, so the view can go: a streaming job calls this
        # once per micro-batch and would otherwise keep every batch's view (and plan) for its lifetime.
        # A Spark Connect DataFrame resolves the view when it runs, so there it stays (uniquely named).
        spark.catalog.dropTempView(view)
    return result


class Finalizer:
    """:func:`finalize` for many ``matched`` DataFrames of one schema (a stream's micro-batches), parsed once.

    :func:`finalize` renders and parses its SQL on every call.  A streaming job calls it once per
    micro-batch, and the parse kept the JVM's JIT compiling ANTLR's parser into the later batches
    (C2 compiles of ``ParserATNSimulator.closure_``, ``PredictionContext.mergeArrays``), besides the parse
    itself.  A Finalizer renders the same SQL once, parses it once (a classic session's parser gives an
    unresolved plan reading one temp view by name) and per call binds the view to ``matched`` and
    analyzes that plan: the rows are :func:`finalize`'s.  On Spark Connect (no JVM handle) it calls
    :func:`finalize`.

    Example::

        finalizer = Finalizer(spec, left_columns, right_columns)
        main = finalizer(matched_batch)   # == finalize(matched_batch, spec, left_columns, right_columns)
    """

    def __init__(
        self,
        spec: TemporalJoinSpec,
        left_columns: Sequence[str],
        right_columns: Sequence[str],
        left_alias: str = "l",
        right_alias: str = "r",
    ) -> None:
        self._spec = spec
        self._columns = (list(left_columns), list(right_columns))
        self._aliases = (left_alias, right_alias)
        self._view = f"__tw_matched_{next(_counter)}"
        self._sql = render.finalize_sql(
            spec, self._view, *self._columns, left_alias=left_alias, right_alias=right_alias
        )
        self._parsed: Any = None  # the JVM's unresolved plan of self._sql, parsed on the first classic call

    def __call__(self, matched: DataFrame) -> DataFrame:
        """``finalize(matched, ...)`` with this Finalizer's spec and columns."""
        spark = matched.sparkSession
        if not hasattr(spark, "_jsparkSession"):
            return finalize(matched, self._spec, *self._columns, *self._aliases)
        jsession = spark._jsparkSession
        if self._parsed is None:
            self._parsed = jsession.sessionState().sqlParser().parsePlan(self._sql)
        matched.createOrReplaceTempView(self._view)
        try:
            # ofRows analyzes eagerly: the view's plan (this batch's) is inlined, so the view can go.
            jdf = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(jsession, self._parsed)
        finally:
            spark.catalog.dropTempView(self._view)
        return DataFrame(jdf, spark)
