"""Temporal table functions: Flink's ``createTemporalTableFunction`` and ``LATERAL TABLE (Rates(o.rowtime))``.

:func:`create_temporal_table_function` registers a history table (append-only: one row per version) with its
time and key columns under a function name; ``timeweave.sql`` then runs Flink's temporal table function join,
``FROM Orders AS o, LATERAL TABLE (Rates(o.rowtime)) AS r WHERE r.currency = o.currency``, as the event-time
temporal join ``JOIN <history> FOR SYSTEM_TIME AS OF o.rowtime AS r ON r.currency = o.currency``
(:mod:`timeweave.core.temporal_function_sql` rewrites the text; the temporal join's rewrite runs it).

The function is session state kept in the SQL conf (``timeweave.temporal_function.<name>``), like a versioned
table's registration, so it works on classic and Spark Connect sessions and in dbt's session.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from timeweave.core.errors import SpecError
from timeweave.core.spec import VersionedTableSpec
from timeweave.core.temporal_function_sql import TemporalFunction, rewrite_temporal_functions
from timeweave.spark import render, sql_rewrite
from timeweave.spark.registration import register_versioned, unregister_versioned

_CONF_PREFIX = "timeweave.temporal_function."


def _view_name(name: str) -> str:
    return f"__tw_ttf_{name.lower()}"


def create_temporal_table_function(spark: Any, name: str, history: Any, *, time: str,
                                   key: str | Sequence[str]) -> None:
    """Register ``name`` as a temporal table function over ``history`` (a table name or a DataFrame: one row
    per version, append-only), versioned by ``time`` and keyed by ``key`` (Flink allows one key column; more
    are accepted here).  Re-registering a name replaces it.

    Example::

        timeweave.create_temporal_table_function(spark, "Rates", "RatesHistory", time="update_time",
                                                 key="currency")
        timeweave.sql(spark, '''
            SELECT o.amount * r.rate AS amount
            FROM Orders AS o, LATERAL TABLE (Rates(o.rowtime)) AS r
            WHERE r.currency = o.currency''')
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise SpecError("name", f"a temporal table function's name is an identifier (letters, digits, _), got {name!r}",
                        where="create_temporal_table_function")
    keys = (key,) if isinstance(key, str) else tuple(key)
    spec = VersionedTableSpec(keys, time, where=f"temporal table function {name}")
    df = spark.table(render.qualified(history, where=f"temporal table function {name}")) \
        if isinstance(history, str) else history
    for column in (*spec.key, spec.time):
        if column.lower() not in {c.lower() for c in df.columns}:
            raise SpecError("key" if column in spec.key else "time",
                            f"column {column!r} not found in the history; available: {df.columns}",
                            where=f"temporal table function {name}")
    register_versioned(spark, _view_name(name), df, spec)
    spark.conf.set(_CONF_PREFIX + name.lower(), json.dumps({"key": list(spec.key)}))


def drop_temporal_table_function(spark: Any, name: str) -> bool:
    """Forget the temporal table function ``name`` (Flink's ``dropTemporarySystemFunction``); whether it existed.

    Example::

        timeweave.spark.temporal_functions.drop_temporal_table_function(spark, "Rates")
    """
    key = _CONF_PREFIX + name.lower()
    if spark.conf.get(key, None) is None:
        return False
    spark.conf.unset(key)
    unregister_versioned(spark, _view_name(name))
    spark.sql(f"DROP VIEW IF EXISTS {render.quote(_view_name(name))}")
    return True


def _functions(spark: Any) -> dict[str, TemporalFunction]:
    found = {}
    for conf_key, value in spark.conf.getAll.items():
        if conf_key.startswith(_CONF_PREFIX):
            name = conf_key[len(_CONF_PREFIX):]
            # a plain identifier (the name is checked to be one): the temporal join looks it up as written
            found[name] = TemporalFunction(_view_name(name), tuple(json.loads(value)["key"]))
    return found


def rewrite_temporal_function_joins(spark: Any, query: str) -> str:
    """``query`` with its ``LATERAL TABLE (F(time))`` joins written as temporal joins (the SQL door's rewriter)."""
    if "lateral" not in query.lower():
        return query
    return rewrite_temporal_functions(query, _functions(spark))


# Before MATCH_RECOGNIZE (10) and the temporal join (20): both see the temporal join form.
sql_rewrite.register(sql_rewrite.ClauseRewriter("temporal table function", 5, rewrite_temporal_function_joins))

__all__ = ["create_temporal_table_function", "rewrite_temporal_function_joins"]
