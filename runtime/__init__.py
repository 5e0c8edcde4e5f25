"""timeweave: Flink SQL's event-time semantics on Spark.

The public API is importable from here; Spark-dependent parts load lazily so that
``timeweave.core`` (the engine-free operator core) never pulls in pyspark.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.2.0"

_LAZY = {
    "versioned_table": "timeweave.spark.dataframe",
    "temporal_join": "timeweave.spark.dataframe",
    "temporal_join_with_rejects": "timeweave.spark.dataframe",
    "dead_letters": "timeweave.spark.sql_door",
    "match_recognize": "timeweave.spark.match_recognize",
    "match_recognize_with_rejects": "timeweave.spark.match_recognize",
    "sql": "timeweave.spark.sql_door",
    "register": "timeweave.spark.sql_door",
    "register_versioned": "timeweave.spark.registration",
    "create_temporal_table_function": "timeweave.spark.temporal_functions",
    "tumble": "timeweave.spark.windows",
    "hop": "timeweave.spark.windows",
    "cumulate": "timeweave.spark.windows",
    "session": "timeweave.spark.windows",
    "window_aggregate": "timeweave.spark.windows",
    "window_aggregate_with_rejects": "timeweave.spark.windows",
    "window_dead_letters": "timeweave.spark.windows",
    "window_top_n": "timeweave.spark.window_ops",
    "window_deduplicate": "timeweave.spark.window_ops",
    "window_join": "timeweave.spark.window_ops",
    "window_top_n_with_rejects": "timeweave.spark.window_ops",
    "window_deduplicate_with_rejects": "timeweave.spark.window_ops",
    "window_join_with_rejects": "timeweave.spark.window_ops",
    "stream": "timeweave.spark.datastream",
    "apply_changelog": "timeweave.spark.changelog_sink",
    "read_changelog_table": "timeweave.spark.changelog_sink",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'timeweave' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
