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

import json
from typing import Any

from timeweave.core.errors import SpecError
from timeweave.core.spec import VersionedTableSpec
from timeweave.spark import render

_CONF_PREFIX = "timeweave.versioned."


def _spec_to_json(spec: VersionedTableSpec) -> str:
    return json.dumps({
        "key": list(spec.key), "time": spec.time, "format": spec.format.value, "op": spec.op,
        "delete_flag": spec.delete_flag, "sequence": spec.sequence,
    })


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


__all__ = ["register_versioned", "versioned_spec"]
