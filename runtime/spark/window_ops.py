"""The batch doors of window Top-N, window deduplication and window join (Flink's), on DataFrames and in SQL.

* DataFrame: :func:`window_top_n`, :func:`window_deduplicate`, :func:`window_join` render the window-ops plan
  (``runtime/spark/timeweave_window_ops_sql.sql``, the file dbt's ``window_top_n`` / ``window_deduplicate`` /
  ``window_join`` render too).  Each takes a window TVF's output (or a window aggregate), or the raw input with
  ``time=`` and ``window=`` (a :mod:`timeweave.core.windows` spec), when the TVF runs first.
* SQL: ``timeweave.sql`` runs Flink's query shapes as written (``ROW_NUMBER() OVER (PARTITION BY window_start,
  window_end ...)`` filtered on the rank; ``JOIN ... ON L.window_start = R.window_start AND L.window_end =
  R.window_end``; ``IN`` / ``EXISTS`` subqueries): once the TVF calls are rewritten they are Spark SQL with the
  same rows.  The rewriter registered here (order 4, before the TVFs) refuses what Flink refuses, with the
  position in the query (:mod:`timeweave.core.windows.ops_sql`).

The rules are the core's (:mod:`timeweave.core.windows.ranking`): every check runs before any Spark job.
Batch has no watermark, so no row is late: every windowed row is ranked or joined; rows with a NULL event time
are in no window (:func:`timeweave.window_dead_letters` lists them).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.errors import SpecError
from timeweave.core.windows.ops_sql import check_window_ops
from timeweave.core.windows.ranking import (
    RankRange,
    SortKey,
    check_join_windows,
    check_not_session,
    dedup_order,
    join_type,
    sort_keys,
)
from timeweave.core.windows.spec import WindowSpec
from timeweave.spark import render, sql_rewrite
from timeweave.spark.temp_views import sql_over
from timeweave.spark.window_ops_render import window_join_sql, window_rank_sql
from timeweave.spark.window_render import WINDOW_COLUMNS
from timeweave.spark.windows import window_dead_letters, window_tvf


def _spelled(columns: Sequence[str], name: str, argument: str, where: str) -> str:
    """The input's spelling of column ``name`` (Spark compares names case-insensitively), or a SpecError."""
    exact = [c for c in columns if c == name]
    folded = [c for c in columns if c.lower() == name.lower()]
    if exact or len(folded) == 1:
        return (exact or folded)[0]
    raise SpecError(argument, f"column {name!r} not found; available: {list(columns)}", where=where)


def _names(value: str | Sequence[str], argument: str, where: str) -> list[str]:
    items = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) and v for v in items):
        raise SpecError(argument, f"expected column names, got {value!r}", where=where)
    return items


def _windowed(df: DataFrame, time: str | None, window: WindowSpec | None, where: str, argument: str = "df") -> DataFrame:
    """``df`` windowed by ``window`` on ``time`` (the TVF first), or ``df`` itself when it is a window TVF's
    output or a window aggregate (it has ``window_start`` and ``window_end``)."""
    if window is not None:
        check_not_session(window, where)
        if time is None:
            raise SpecError("time", "window= needs time= (the event-time column)", where=where)
        return window_tvf(df, time, window)
    if time is not None and where != "window deduplication":
        raise SpecError("window", "time= without window=: pass the window spec, or a window TVF's output alone",
                        where=where)
    for name in ("window_start", "window_end"):
        if not any(c.lower() == name for c in df.columns):
            raise SpecError(argument, f"column {name!r} not found; available: {df.columns} (pass window= and "
                            "time=, or a window TVF's output / a window aggregate)", where=where)
    return df


def _rank(df: DataFrame, partition_by: str | Sequence[str], order: Sequence[SortKey], ranks: RankRange,
          rank_column: str | None, where: str) -> DataFrame:
    keys = [_spelled(df.columns, k, "partition_by", where) for k in _names(partition_by, "partition_by", where)]
    spelled = [SortKey(_spelled(df.columns, k.column, "order_by", where), k.descending, k.nulls_first) for k in order]
    if rank_column is not None:
        if not isinstance(rank_column, str) or not rank_column:
            raise SpecError("rank_column", f"expected a column name or None, got {rank_column!r}", where=where)
        if any(c.lower() == rank_column.lower() for c in df.columns):
            raise SpecError("rank_column", f"the input already has a column {rank_column!r}; name the rank "
                            "otherwise (or None to leave it out)", where=where)
    sql = window_rank_sql(render.relation("source"), df.columns, keys, spelled, ranks, rank_column)
    return sql_over(df.sparkSession, render.formattable(sql), source=df)


def window_top_n(df: DataFrame, n: int | None = None, *, order_by: str | SortKey | Sequence[str | SortKey],
                 partition_by: str | Sequence[str] = (), function: str = "ROW_NUMBER",
                 ranks: RankRange | tuple[int, int] | None = None, rank_column: str | None = "rownum",
                 time: str | None = None, window: WindowSpec | None = None) -> DataFrame:
    """Window Top-N: the rows ranked ``1..n`` (or ``ranks=(lower, upper)``, Flink's ``rownum BETWEEN``) in
    each window (``window_start``, ``window_end``) and ``partition_by`` value, by ``order_by`` (``"price
    DESC"``, ``["price DESC", "item"]``; NULLs smallest unless ``NULLS FIRST|LAST`` says otherwise).

    ``function`` is ``ROW_NUMBER`` (default), ``RANK`` or ``DENSE_RANK``; the rank is the column
    ``rank_column`` (None: left out).  ``df`` is a window TVF's output or a window aggregate; or pass the raw
    input with ``time=`` and ``window=`` (TUMBLE, HOP or CUMULATE: Flink ranks no SESSION TVF directly).

    Example::

        from timeweave.core.windows import tumble as tumble_spec
        top3 = timeweave.window_top_n(bids, 3, order_by="price DESC", time="bidtime", window=tumble_spec("10 minutes"))
        per_window = timeweave.window_aggregate(bids, {"price": "SUM(price)"}, keys="supplier_id", time="bidtime",
                                                window=tumble_spec("10 minutes"))
        timeweave.window_top_n(per_window, 3, order_by="price DESC")   # Top-N after a window aggregation
    """
    where = "window Top-N"
    if (n is None) == (ranks is None):
        raise SpecError("n", "pass exactly one of n (ranks 1..n) and ranks=(lower, upper)", where=where)
    if ranks is None:
        if isinstance(n, bool) or not isinstance(n, int):
            raise SpecError("n", f"expected an integer >= 1, got {n!r}", where=where)
        if n < 1:
            raise SpecError("n", f"must be at least 1, got {n}", where=where)
        ranks = RankRange.top(n, function)
    elif not isinstance(ranks, RankRange):
        try:
            lower, upper = ranks
        except (TypeError, ValueError):
            raise SpecError("ranks", f"expected (lower, upper), got {ranks!r}", where=where) from None
        ranks = RankRange(function, lower, upper)
    elif function.upper() != ranks.function and function != "ROW_NUMBER":
        raise SpecError("function", f"{function!r} differs from ranks.function {ranks.function!r}", where=where)
    order = sort_keys(order_by)
    df = _windowed(df, time, window, where)
    return _rank(df, partition_by, order, ranks, rank_column, where)


def window_deduplicate(df: DataFrame, *, time: str, keys: str | Sequence[str] = (), keep: str = "first",
                       window: WindowSpec | None = None, rank_column: str | None = None) -> DataFrame:
    """Window deduplication: per window and ``keys`` value, the first (``keep="first"``) or last (``"last"``)
    row by the time column ``time`` (Flink's ``ROW_NUMBER() OVER (PARTITION BY window_start, window_end, keys
    ORDER BY time ASC|DESC) = 1``).  Rows tied on the time are kept one of them, as in Flink.

    ``df`` is a window TVF's output (``time`` one of its timestamp columns, e.g. the event time or
    ``window_time``); or pass the raw input with ``window=`` (TUMBLE, HOP or CUMULATE) and the TVF runs on
    ``time`` first.  ``rank_column`` adds the row number (always 1), as Flink's selected ``rownum``.

    Example::

        from timeweave.core.windows import tumble as tumble_spec
        last = timeweave.window_deduplicate(bids, time="bidtime", keep="last", window=tumble_spec("10 minutes"))
    """
    where = "window deduplication"
    order = dedup_order(time, keep)
    df = _windowed(df, time, window, where)
    spelled = _spelled(df.columns, time, "time", where)
    data_type = df.schema[spelled].dataType
    if not isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        raise SpecError("time", f"Flink deduplicates on a time attribute: column {spelled!r} is a "
                        f"{data_type.simpleString()}, not a TIMESTAMP (use window_top_n to keep one row by another "
                        "order)", where=where)
    return _rank(df, keys, [order], RankRange.top(1), rank_column, where)


def _pairs(on: str | Sequence[str] | Sequence[tuple[str, str]], where: str) -> list[tuple[str, str]]:
    items = [on] if isinstance(on, str) else list(on)
    pairs = []
    for item in items:
        if isinstance(item, str):
            pairs.append((item, item))
        elif isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(x, str) for x in item):
            pairs.append((item[0], item[1]))
        else:
            raise SpecError("on", f"expected a column name or a (left, right) pair, got {item!r}", where=where)
    return pairs


def window_join(left: DataFrame, right: DataFrame, *, on: str | Sequence[str] | Sequence[tuple[str, str]] = (),
                how: str = "inner", time: str | tuple[str, str] | None = None,
                window: WindowSpec | tuple[WindowSpec, WindowSpec] | None = None, left_prefix: str = "",
                right_prefix: str = "") -> DataFrame:
    """Window join: the rows of ``left`` and ``right`` in the same window (equal ``window_start`` and
    ``window_end``) with equal ``on`` keys (a name, names, or ``(left, right)`` pairs; a NULL key joins
    nothing, as SQL's ``=``).  ``how``: ``inner``, ``left``, ``right``, ``full``, ``semi`` (Flink's ``IN`` /
    ``EXISTS``: the left rows with a match) or ``anti`` (``NOT EXISTS``: those without).

    Output of inner/outer joins: ``window_start``, ``window_end``, ``window_time`` (the matched side's), then the
    left's other columns prefixed by ``left_prefix`` and the right's by ``right_prefix`` (a name clash is an
    error: give prefixes, e.g. ``"L_"``, ``"R_"``); semi and anti return the left's rows as they are.

    The inputs are window TVF outputs (or window aggregates); or pass the raw inputs with ``time=`` (one name or
    a ``(left, right)`` pair) and ``window=`` (one spec, or a pair: Flink's rule, both sides the same TVF and
    sizes, TUMBLE, HOP or CUMULATE, is checked).

    Example::

        from timeweave.core.windows import tumble as tumble_spec
        joined = timeweave.window_join(left, right, on="num", how="full", time="row_time",
                                       window=tumble_spec("5 minutes"), left_prefix="L_", right_prefix="R_")
    """
    where = "window join"
    kind = join_type(how)
    pairs = _pairs(on, where)
    if window is not None:
        left_window, right_window = window if isinstance(window, tuple) else (window, window)
        check_join_windows(left_window, right_window)
        if time is None:
            raise SpecError("time", "window= needs time= (the event-time column, or a (left, right) pair)",
                            where=where)
        left_time, right_time = time if isinstance(time, tuple) else (time, time)
        left = _windowed(left, left_time, left_window, where, "left")
        right = _windowed(right, right_time, right_window, where, "right")
    else:
        if time is not None:
            raise SpecError("window", "time= without window=: pass the window spec, or window TVF outputs alone",
                            where=where)
        left = _windowed(left, None, None, where, "left")
        right = _windowed(right, None, None, where, "right")
    on_pairs = [(_spelled(left.columns, lk, "on", f"{where} (left)"), _spelled(right.columns, rk, "on", f"{where} (right)"))
                for lk, rk in pairs]
    windows = {w.lower() for w in WINDOW_COLUMNS}
    if kind in ("SEMI", "ANTI"):
        sql = window_join_sql(render.relation("left"), left.columns, render.relation("right"), right.columns,
                              on_pairs, kind)
        return sql_over(left.sparkSession, render.formattable(sql), left=left, right=right)
    left_columns = [c for c in left.columns if c.lower() not in windows]
    right_columns = [c for c in right.columns if c.lower() not in windows]
    left_names = [left_prefix + c for c in left_columns]
    right_names = [right_prefix + c for c in right_columns]
    seen: dict[str, str] = {w: "window" for w in windows}
    for side, names in (("left", left_names), ("right", right_names)):
        for name in names:
            clash = seen.get(name.lower())
            if clash is not None:
                raise SpecError(f"{side}_prefix", f"the output would have two columns named {name!r} ({clash} and "
                                f"{side}); give left_prefix= / right_prefix= (e.g. 'L_', 'R_')", where=where)
            seen[name.lower()] = side
    sql = window_join_sql(render.relation("left"), left_columns, render.relation("right"), right_columns, on_pairs,
                          kind, left_names, right_names)
    return sql_over(left.sparkSession, render.formattable(sql), left=left, right=right)


def window_top_n_with_rejects(df: DataFrame, n: int | None = None, *, time: str, window: WindowSpec,
                              **options) -> tuple[DataFrame, DataFrame]:
    """:func:`window_top_n` of the raw input ``df`` plus its dead letter (the rows with a NULL ``time``, in no
    window: :func:`timeweave.window_dead_letters`).

    Example::

        top3, rejected = timeweave.window_top_n_with_rejects(bids, 3, order_by="price DESC", time="bidtime",
                                                             window=tumble_spec("10 minutes"))
    """
    return window_top_n(df, n, time=time, window=window, **options), window_dead_letters(df, time)


def window_deduplicate_with_rejects(df: DataFrame, *, time: str, window: WindowSpec,
                                    **options) -> tuple[DataFrame, DataFrame]:
    """:func:`window_deduplicate` of the raw input ``df`` plus its dead letter (NULL ``time`` rows).

    Example::

        latest, rejected = timeweave.window_deduplicate_with_rejects(bids, time="bidtime", keep="last",
                                                                     window=tumble_spec("10 minutes"))
    """
    return window_deduplicate(df, time=time, window=window, **options), window_dead_letters(df, time)


def window_join_with_rejects(left: DataFrame, right: DataFrame, *, time: str | tuple[str, str],
                             window: WindowSpec | tuple[WindowSpec, WindowSpec],
                             **options) -> tuple[DataFrame, DataFrame]:
    """:func:`window_join` of the raw inputs plus both inputs' dead letters (NULL event times), ``side``
    ``left`` or ``right``.

    Example::

        joined, rejected = timeweave.window_join_with_rejects(left, right, on="num", time="row_time",
                                                              window=tumble_spec("5 minutes"))
    """
    joined = window_join(left, right, time=time, window=window, **options)
    left_time, right_time = time if isinstance(time, tuple) else (time, time)
    rejected = window_dead_letters(left, left_time).withColumn("side", F.lit("left")).unionByName(
        window_dead_letters(right, right_time).withColumn("side", F.lit("right")))
    return joined, rejected


def _check(spark, query: str) -> str:
    check_window_ops(query)
    return query


# Before the window TVFs (order 5) rewrite their calls away: the checks read the calls in the query's text.
sql_rewrite.register(sql_rewrite.ClauseRewriter("window ops check", 4, _check))

__all__ = [
    "window_deduplicate",
    "window_deduplicate_with_rejects",
    "window_join",
    "window_join_with_rejects",
    "window_top_n",
    "window_top_n_with_rejects",
]
