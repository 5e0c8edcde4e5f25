"""The DataFrame door: ``versioned_table`` and ``temporal_join`` as DataFrame -> DataFrame calls.

Both render the shared plan (``timeweave/spark/timeweave_sql.sql``) and run it with
``spark.sql(query, left=df, right=df)``, which works on classic and Spark Connect sessions alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame

from timeweave.core.errors import SpecError
from timeweave.core.spec import TemporalJoinSpec, ValidityColumns, VersionedTableSpec, time_domain_of
from timeweave.spark import render
from timeweave.spark.plan import reject_reason
from timeweave.spark.registration import register_versioned
from timeweave.spark.schema import schema_kinds
from timeweave.spark.temp_views import sql_over

_SOURCE_ATTR = "_timeweave_versioned_source"


@dataclass(frozen=True)
class VersionedSource:
    """A versioned table's source rows and their spec, remembered on the DataFrame ``versioned_table`` returns."""

    df: DataFrame
    spec: VersionedTableSpec


def _session(df: DataFrame):
    return df.sparkSession


def versioned_table(
    df: DataFrame,
    key: str | Sequence[str] | None,
    time: str,
    format: str = "append",  # noqa: A002 - the user-facing name
    op: str | None = None,
    delete_flag: str | None = None,
    sequence: str | None = None,
    valid_from: str = "valid_from",
    valid_to: str = "valid_to",
    name: str | None = None,
) -> DataFrame:
    """A versioned table's history: one row per version with ``[valid_from, valid_to)``.

    Deletes end a version and do not appear; ties at one time keep the last row in input order (or the
    highest ``sequence``).  The returned DataFrame remembers its source, so it can be passed as the
    right side of :func:`temporal_join`; with ``name`` it is also registered for ``timeweave.sql``'s
    ``FOR SYSTEM_TIME AS OF``.  ``key=None`` (or ``[]``) makes the whole table one history (a price index);
    ``time`` is any timestamp, date or number column.

    Example (``spark`` is a SparkSession)::

        rates = timeweave.versioned_table(rates_changelog, key="currency", time="update_time",
                                        format="changelog", op="op", name="currency_rates")
        rates.show()
    """
    kinds = schema_kinds(df.schema)
    spec = VersionedTableSpec(key, time, format, op=op, delete_flag=delete_flag, sequence=sequence).bind(kinds)
    domain = time_domain_of(kinds, spec.time, "time", spec.where)
    sql = render.versioned_view_sql(
        spec, render.relation("source"), df.columns, valid_from=valid_from, valid_to=valid_to, time_domain=domain)
    history = sql_over(_session(df), render.formattable(sql), source=df)
    setattr(history, _SOURCE_ATTR, VersionedSource(df, spec))
    if name:
        register_versioned(_session(df), name, df, spec)
    return history


def _resolve_right(right: DataFrame, key, time, format, op, delete_flag, sequence) -> VersionedSource:  # noqa: A002
    source = getattr(right, _SOURCE_ATTR, None)
    if source is not None and key is None and time is None:
        return source
    if time is None:
        raise TypeError("temporal_join: pass time= (the versioned side's version-time column) or a DataFrame from versioned_table()")
    if key is None:  # a forgotten key must not silently join every row against one history
        raise SpecError("key", "pass the versioned side's key columns, or key=[] for a keyless table (one history)",
                        where="temporal_join")
    return VersionedSource(right, VersionedTableSpec(key, time, format, op=op, delete_flag=delete_flag, sequence=sequence))


def _spec_and_sides(
    left: DataFrame, right: DataFrame, left_time: str, left_key, key, time, format, op, delete_flag, sequence,  # noqa: A002
    how: str, right_columns, right_prefix: str, validity, predicate: str | None,
) -> tuple[TemporalJoinSpec, VersionedSource]:
    source = _resolve_right(right, key, time, format, op, delete_flag, sequence)
    key = source.spec.key
    spec = TemporalJoinSpec(
        source.spec, left_time=left_time, left_key=left_key if left_key is not None else key, how=how,
        right_columns=right_columns, right_prefix=right_prefix, validity=validity, predicate=predicate,
    )
    spec.bind(schema_kinds(left.schema), schema_kinds(source.df.schema))
    return spec, source


def temporal_join(
    left: DataFrame,
    right: DataFrame,
    left_time: str,
    *,
    left_key: str | Sequence[str] | None = None,
    key: str | Sequence[str] | None = None,
    time: str | None = None,
    format: str = "append",  # noqa: A002 - the user-facing name
    op: str | None = None,
    delete_flag: str | None = None,
    sequence: str | None = None,
    how: str = "inner",
    right_columns: Sequence[str] | None = None,
    right_prefix: str = "",
    validity: ValidityColumns | bool | None = None,
    predicate: str | None = None,
    left_alias: str = "l",
    right_alias: str = "r",
) -> DataFrame:
    """Event-time temporal join: each left row with the version of its key valid at ``left_time``.

    ``right`` is either a DataFrame returned by :func:`versioned_table` or the raw versioned source with
    ``key``/``time``/``format`` (and ``op``, ``delete_flag``, ``sequence``) describing it.  ``predicate``
    is a SQL condition over ``l.<left column>`` and ``r.<right column>`` (change the names with
    ``left_alias``/``right_alias``) applied to the matched version: failing it gives NULLs (LEFT) or no
    row (INNER).  Output: the left columns, then the right columns (all but key and change metadata
    unless ``right_columns`` is given, prefixed by ``right_prefix``), then validity columns if asked.
    A left row with a NULL key or NULL time can never match: a LEFT join outputs it unmatched (right
    columns NULL), so every left row is in the output; an INNER join drops it and
    :func:`temporal_join_with_rejects`'s dead letter lists it with the reason.

    As-of joins without a key: ``right`` from ``versioned_table(df, key=None, ...)`` (or ``key=None`` with
    ``key=[]`` and ``time=`` here) is one history, and each left row gets the version valid at its time (the largest
    version time at or before it, as ``pandas.merge_asof`` without ``by``).  The times may be any
    timestamp, date or number columns, both of one kind (numbers with numbers...).

    Example::

        enriched = timeweave.temporal_join(orders, rates, "order_time", key="currency",
                                         time="update_time", how="left")
        indexed = timeweave.temporal_join(trades, price_index, "trade_seq", key=[], time="index_seq")
    """
    spec, source = _spec_and_sides(
        left, right, left_time, left_key, key, time, format, op, delete_flag, sequence,
        how, right_columns, right_prefix, validity, predicate,
    )
    sql = render.temporal_join_sql(
        spec, render.relation("left"), render.relation("right"), left.columns, source.df.columns,
        left_alias=left_alias, right_alias=right_alias,
        time_domain=spec.time_domain(schema_kinds(left.schema), schema_kinds(source.df.schema)),
    )
    return sql_over(_session(left), render.formattable(sql), left=left, right=source.df)


def temporal_join_with_rejects(left: DataFrame, right: DataFrame, left_time: str, **kwargs) -> tuple[DataFrame, DataFrame]:
    """:func:`temporal_join` plus the dead letter: rows of either side that could not take part, with a reason.

    The dead-letter DataFrame has columns ``side`` (``left``/``right``), ``reason`` and ``row`` (the
    original row as JSON).  A LEFT join's left rows are all in the joined output (a NULL key or time
    gives NULLs on the right), so its dead letter lists right rows only; an INNER join's lists the left
    rows it dropped for a NULL key or time too.

    Example::

        joined, rejected = timeweave.temporal_join_with_rejects(orders, rates, "order_time", key="currency",
                                                              time="update_time", how="inner")
        rejected.groupBy("side", "reason").count().show()
    """
    joined = temporal_join(left, right, left_time, **kwargs)
    keys = {k: kwargs.get(k) for k in ("left_key", "key", "time", "format", "op", "delete_flag", "sequence")}
    spec, source = _spec_and_sides(
        left, right, left_time, keys["left_key"], keys["key"], keys["time"], keys["format"] or "append", keys["op"],
        keys["delete_flag"], keys["sequence"], kwargs.get("how", "inner"), None, "", None, None,
    )
    return joined, dead_letters(left, source.df, spec)


def dead_letters(
    left: DataFrame, right: DataFrame, spec: TemporalJoinSpec, carry: str | None = None, hidden: Sequence[str] = (),
) -> DataFrame:
    """Rows of both sides that cannot take part in ``spec``'s join: ``side``, ``reason``, ``row`` (JSON).

    ``carry`` names a column both sides have that stays a column of its own instead of going into
    ``row`` (the backfill's slice label); ``hidden`` names computed key columns of ``left`` the reason may
    name but the row leaves out (the SQL door's key expressions).  Left rows only for an INNER join: a LEFT join outputs them
    (:attr:`TemporalJoinSpec.keeps_unmatchable_left`).
    """
    session = _session(left)
    # Names are quoted and the side is a constant rendered by the plan's rule (render.sql_string); the
    # reason expression renders column names as constants whose SQL text holds none of their characters.
    # The row lists the input's columns by name (named_struct), so a user column named `reason` stays in
    # the row (`struct(* EXCEPT (reason))` dropped it, and `reason` was ambiguous beside it).
    kept = f", {render.quote(carry)}" if carry else ""
    parts = []
    for side, df in (("left", left), ("right", right)):
        reason = reject_reason(spec, side)
        fields = ", ".join(
            f"{render.sql_string(c)}, {render.quote(c)}" for c in df.columns
            if c != carry and not (side == "left" and c in hidden)
        )
        # A constant false filter for a LEFT join's left side: Spark plans an empty relation, reading nothing.
        output = " AND false" if side == "left" and spec.keeps_unmatchable_left else ""
        parts.append(sql_over(session, render.formattable(
            f"SELECT {render.sql_string(side)} AS side, __tw_reason AS reason, to_json(named_struct({fields})) AS row"
            f"{kept} FROM (SELECT *, {reason} AS __tw_reason FROM {render.relation('df')}) "
            f"WHERE __tw_reason IS NOT NULL{output}"),
            df=df,
        ))
    return parts[0].unionByName(parts[1])
