"""timeweave: Flink SQL's event-time semantics on Spark.

The public API is importable from here; Spark-dependent parts load lazily so that
``runtime.core`` (the engine-free operator core) never pulls in pyspark.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "versioned_table": "runtime.spark.dataframe",
    "temporal_join": "runtime.spark.dataframe",
    "temporal_join_with_rejects": "runtime.spark.dataframe",
    "dead_letters": "runtime.spark.sql_door",
    "match_recognize": "runtime.spark.match_recognize",
    "match_recognize_with_rejects": "runtime.spark.match_recognize",
    "sql": "runtime.spark.sql_door",
    "register": "runtime.spark.registration",
    "register_versioned": "runtime.spark.registration",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'runtime' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
