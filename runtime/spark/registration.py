"""Session registration of versioned tables known to ``timeweave.sql`` (the SQL functions the doors call are
registered by :func:`timeweave.spark.sql_door.register`, above every operator's module).

A versioned table's spec is stored in the session's SQL conf (``timeweave.versioned.<name>``), so it
works identically on classic and Spark Connect sessions and is visible to dbt's session.  Catalog
tables can declare the same through table properties ``timeweave.key`` (comma-separated; empty for a keyless
table),
``timeweave.time``, ``timeweave.format``, ``timeweave.op``, ``timeweave.delete_flag``,
``timeweave.sequence``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from timeweave.core.errors import SpecError
from timeweave.core.spec import VersionedTableSpec
from timeweave.spark import render

_CONF_PREFIX = "timeweave.versioned."
#: A DDL table's time attributes (its WATERMARK and its PROCTIME() columns), read by the streaming SQL door.
_TIME_PREFIX = "timeweave.time_attributes."


def _spec_to_json(spec: VersionedTableSpec, relation: str | None = None) -> str:
    data = {
        "key": list(spec.key), "time": spec.time, "format": spec.format.value, "op": spec.op,
        "delete_flag": spec.delete_flag, "sequence": spec.sequence,
    }
    if relation:
        data["relation"] = relation
    return json.dumps(data)


def _spec_from_mapping(data: dict[str, Any], where: str) -> VersionedTableSpec:
    key = data.get("key")
    if isinstance(key, str):
        key = [k.strip() for k in key.split(",") if k.strip()]
    return VersionedTableSpec(
        key, data.get("time"), data.get("format") or "append", op=data.get("op"),
        delete_flag=data.get("delete_flag"), sequence=data.get("sequence"), where=where,
    )


def register_versioned(spark, name: str, df, spec: VersionedTableSpec) -> None:
    """Make ``name`` usable as ``JOIN name FOR SYSTEM_TIME AS OF ...`` in :func:`timeweave.sql`.

    Creates (or replaces) the temporary view ``name`` over ``df`` and remembers its spec in the session.

    Example::

        timeweave.register_versioned(spark, "currency_rates", rates_df,
                                   VersionedTableSpec("currency", "update_time"))
    """
    df.createOrReplaceTempView(name)
    spark.conf.set(_CONF_PREFIX + name.lower(), _spec_to_json(spec))


def register_versioned_view(spark, name: str, view, history, spec: VersionedTableSpec) -> str:
    """Register ``name`` as a versioned view: ``SELECT * FROM name`` reads ``view`` (what Flink's view shows,
    e.g. each key's latest row), ``FOR SYSTEM_TIME AS OF`` joins read the versions in ``history``.

    The history is the temporary view :func:`history_view_name` of ``name``; returns that name.

    Example::

        register_versioned_view(spark, "versioned_rates", latest_df, every_row_df,
                                VersionedTableSpec("currency", "update_time"))
    """
    hidden = history_view_name(name)
    history.createOrReplaceTempView(hidden)
    view.createOrReplaceTempView(name)
    spark.conf.set(_CONF_PREFIX + name.lower(), _spec_to_json(spec, relation=hidden))
    return hidden


def history_view_name(name: str) -> str:
    """The temporary view holding the versions of versioned view ``name`` (a name of letters, digits and ``_``).

    >>> history_view_name("versioned_rates") == history_view_name("VERSIONED_RATES")
    True
    """
    return "__tw_versions_" + hashlib.sha256(name.lower().encode()).hexdigest()[:16]


def unregister_versioned(spark, name: str) -> None:
    """Forget the versioned spec of ``name`` (a view re-created as a plain view); nothing if it had none.

    Example::

        unregister_versioned(spark, "rates")
    """
    spark.conf.unset(_CONF_PREFIX + name.lower())


def versioned_relation(spark, name: str) -> str | None:
    """The relation holding the versions of versioned table ``name``: a versioned view's history view, or None
    (the table itself holds them).

    Example::

        versioned_relation(spark, "versioned_rates")   # '__tw_versions_...'
    """
    stored = spark.conf.get(_CONF_PREFIX + name.lower(), None)
    return json.loads(stored).get("relation") if stored else None


def versioned_spec(spark, name: str) -> VersionedTableSpec | None:
    """The spec registered for ``name`` (session conf, then table properties), or None.

    ``name`` is a table name as written in SQL (``db.rates``, ```odd``name```); for the table properties each
    of its parts is quoted (:func:`timeweave.spark.render.qualified`), and text that is not a name raises
    :class:`SpecError`.

    Example::

        spec = versioned_spec(spark, "analytics.`currency rates`")
    """
    stored = spark.conf.get(_CONF_PREFIX + name.lower(), None)
    if stored:
        return _spec_from_mapping(json.loads(stored), where=name)
    # Each part of the name quoted (text that is not a table name raises here): a name is never SQL.
    statement = f"SHOW TBLPROPERTIES {render.qualified(name, where=name)}"
    try:
        props = {r["key"]: r["value"] for r in spark.sql(statement).collect()}
    except Exception:  # not a catalog table (or no such table): the caller reports it
        return None
    if "timeweave.time" not in props:
        return None
    data = {k.removeprefix("timeweave."): v for k, v in props.items() if k.startswith("timeweave.")}
    if "key" not in data:  # an empty value is a keyless table (one history)
        raise SpecError("key", "table property timeweave.key is missing (an empty value: a keyless table)", where=name)
    return _spec_from_mapping(data, where=name)


def register_time_attributes(spark, name: str, watermark: tuple[str, int] | None, proctime: tuple[str, ...]) -> None:
    """Remember ``name``'s time attributes: ``watermark`` (its event-time column and the delay in µs behind the
    largest time seen) and its processing-time (``PROCTIME()``) columns; with neither, an earlier registration of
    ``name`` is forgotten.

    Example::

        register_time_attributes(spark, "orders", ("order_time", 5_000_000), ("proc",))
        time_attributes(spark, "orders")   # (('order_time', 5000000), ('proc',))
    """
    if watermark is None and not proctime:
        spark.conf.unset(_TIME_PREFIX + name.lower())
        return
    spark.conf.set(_TIME_PREFIX + name.lower(), json.dumps({"watermark": list(watermark) if watermark else None,
                                                            "proctime": list(proctime)}))


def time_attributes(spark, name: str) -> tuple[tuple[str, int] | None, tuple[str, ...]]:
    """``(watermark, proctime columns)`` registered for ``name`` (:func:`register_time_attributes`); ``(None, ())``
    for a relation without any."""
    stored = spark.conf.get(_TIME_PREFIX + name.lower(), None)
    if not stored:
        return None, ()
    data = json.loads(stored)
    watermark = data.get("watermark")
    return (watermark[0], int(watermark[1])) if watermark else None, tuple(data.get("proctime") or ())


__all__ = [
    "history_view_name",
    "register_time_attributes",
    "register_versioned",
    "register_versioned_view",
    "time_attributes",
    "unregister_versioned",
    "versioned_relation",
    "versioned_spec",
]
