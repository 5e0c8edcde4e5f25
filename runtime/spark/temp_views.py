"""Dropping the temporary views the doors create without uncaching the caller's data.

The doors name a caller's DataFrame in generated SQL through a uniquely named temp view and drop the view once
the query is analysed.  PySpark's ``spark.catalog.dropTempView`` (and SQL ``DROP VIEW``) also uncaches any cached
data whose plan equals the view's -- which is the caller's own ``df.cache()``: a user who cached a DataFrame and
called ``timeweave.window_aggregate(df, ...)`` or ``timeweave.sql(spark, "... {df} ...", df=df)`` silently lost the
cache and paid the scan again on every later query.  :func:`drop_temp_view` removes only the name, through the
session catalog, as ``Dataset.createOrReplaceTempView``'s own replacement does; :func:`sql_over` is
``spark.sql(text, name=df)`` (which drops its views the uncaching way) for the doors' generated SQL.
"""

from __future__ import annotations

import string
import uuid
from collections.abc import Mapping, Sequence
from typing import Any


def drop_temp_view(spark: Any, name: str) -> None:
    """Remove the session's temp view ``name``, leaving whatever it pointed to cached.

    Classic sessions only (a Spark Connect DataFrame resolves its views when it runs, so the doors keep them).

    Example::

        df.cache()
        df.createOrReplaceTempView("__tw_arg_1")
        drop_temp_view(spark, "__tw_arg_1")
        assert df.is_cached and df.storageLevel.useMemory
    """
    spark._jsparkSession.sessionState().catalog().dropTempView(name)


def sql_over(spark: Any, text: str, **frames: Any) -> Any:
    """``spark.sql(text, **frames)`` for generated SQL whose only format fields are DataFrames (``{source}``):
    each is named by a temporary view for the analysis, which is then dropped without uncaching the DataFrame.

    Example::

        bids.cache()
        counts = sql_over(spark, "SELECT item, COUNT(*) AS n FROM {source} GROUP BY item", source=bids)
        assert bids.is_cached
    """
    if not hasattr(spark, "_jsparkSession"):  # Spark Connect sends the DataFrames' plans; no views are made
        return spark.sql(text, **frames)
    formatter = _FrameViews()
    query = formatter.format(text, **frames)
    try:
        return spark.sql(query)  # a classic session analyses now: the views' plans are inlined
    finally:
        for name in formatter.views.values():
            drop_temp_view(spark, name)


class _FrameViews(string.Formatter):
    """Replaces each ``{name}`` field (a DataFrame) by a uniquely named temp view of it."""

    def __init__(self) -> None:
        self.views: dict[int, str] = {}

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        value, first = super().get_field(field_name, args, kwargs)
        if not hasattr(value, "createOrReplaceTempView"):
            raise TypeError(f"sql_over: field {{{field_name}}} is {type(value).__name__}, not a DataFrame")
        name = self.views.get(id(value))
        if name is None:
            name = self.views[id(value)] = f"__tw_frame_{uuid.uuid4().hex}"
            value.createOrReplaceTempView(name)
        return name, first


__all__ = ["drop_temp_view", "sql_over"]
