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

from timeweave.core.spec import TemporalJoinSpec
from timeweave.spark import render
from timeweave.spark.temp_views import drop_temp_view

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
    had no event at or before the left row's time).  A one-call :class:`Finalizer`.

    Example::

        main = finalize(matched, spec, ["order_id", "currency", "order_time"], ["currency", "rate", "update_time"])
    """
    return Finalizer(spec, left_columns, right_columns, left_alias, right_alias)(matched)


class Finalizer:
    """:func:`finalize` for many ``matched`` DataFrames of one schema (a stream's micro-batches), parsed once.

    A streaming job finalizes every micro-batch, and parsing the SQL per batch kept the JVM's JIT
    compiling ANTLR's parser into the later batches (C2 compiles of ``ParserATNSimulator.closure_``,
    ``PredictionContext.mergeArrays``), besides the parse itself.  A Finalizer renders its SQL once,
    parses it once (a classic session's parser gives an unresolved plan reading one temp view by name)
    and per call binds the view to ``matched`` and analyzes that plan.  Analysis inlines the view's
    plan, so the view is dropped again: a streaming job would otherwise keep every batch's view (and
    plan) for its lifetime.  Spark Connect has no JVM handle and resolves a view only when the query
    runs, so there each call renders the SQL over a view of its own, which stays (uniquely named).
    Classic calls go through Spark's classic ``Dataset.ofRows`` (py4j), an internal API: a Spark upgrade
    must re-check it (``tests/spark/test_finalizer.py``).

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
        nested: bool = False,
    ) -> None:
        self._spec = spec
        self._columns = (list(left_columns), list(right_columns))
        self._aliases = {"left_alias": left_alias, "right_alias": right_alias, "nested": nested}
        self._view = f"__tw_matched_{next(_counter)}"
        self._parsed: Any = None  # the JVM's unresolved plan of the SQL over self._view, parsed on the first classic call

    def _sql(self, view: str) -> str:
        return render.finalize_sql(self._spec, view, *self._columns, **self._aliases)

    def __call__(self, matched: DataFrame) -> DataFrame:
        """``finalize(matched, ...)`` with this Finalizer's spec and columns."""
        spark = matched.sparkSession
        if not hasattr(spark, "_jsparkSession"):  # Spark Connect
            view = f"__tw_matched_{next(_counter)}"
            matched.createOrReplaceTempView(view)
            return spark.sql(self._sql(view))
        jsession = spark._jsparkSession
        if self._parsed is None:
            self._parsed = jsession.sessionState().sqlParser().parsePlan(self._sql(self._view))
        matched.createOrReplaceTempView(self._view)
        try:
            # ofRows analyzes eagerly: the view's plan (this batch's) is inlined, so the view can go.
            jdf = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(jsession, self._parsed)
        finally:
            drop_temp_view(spark, self._view)  # keeps a cached plan equal to the batch's cached
        return DataFrame(jdf, spark)
