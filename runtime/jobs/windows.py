"""Window aggregation's job registration (:mod:`timeweave.jobs.registry`): its source, its streaming query, its
backfill, its one-line description.

Streaming: :func:`timeweave.spark.window_streaming.window_aggregate_stream` over the ``input`` source, its watermark
``input.watermark_delay`` behind the largest event time.  Backfill:
:func:`timeweave.spark.window_backfill.backfill_window_aggregate`, sliced on the event-time column, the open
windows' accumulators under ``<output.path>/_state``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from timeweave.core.durations import parse_duration
from timeweave.jobs.config import SourceConfig, WindowJobConfig

if TYPE_CHECKING:
    from timeweave.jobs.streaming import StreamingRun


def sources(job: WindowJobConfig) -> dict[str, SourceConfig]:
    """The job's file source (side ``input``)."""
    return {"input": job.input}


def describe(job: WindowJobConfig) -> str:
    """One line naming the window, the aggregates, the input and the output.

    >>> from timeweave.jobs.config import WindowJobConfig
    >>> describe(WindowJobConfig.from_dict({"window": {"function": "tumble", "time": "ts", "size": "1 minute",
    ...     "keys": ["k"], "aggregates": {"n": "COUNT(*)"}}, "output": {"path": "out"},
    ...     "input": {"path": "in", "format": "json", "schema": "k STRING, ts TIMESTAMP"}}))
    'window aggregation job: TumbleSpec(size=60000, offset=0) on ts, keys [k], aggregates n = COUNT(*); input in -> output out'
    """
    aggregates = ", ".join(f"{name} = {text}" for name, text in job.aggregates.items())
    if job.grouping is not None:
        keys = "grouping sets " + ", ".join("(" + ", ".join(s) + ")" for s in job.grouping.sets)
    else:
        keys = f"keys [{', '.join(job.keys)}]"
    return (f"window aggregation job: {job.spec} on {job.time}, {keys}, aggregates {aggregates}; "
            f"input {job.input.path} -> output {job.output_path}")


def register_functions(spark: Any, functions: Mapping[str, str]) -> None:
    """Register the job's Python UDFs (name -> ``package.module:attr``, a ``udf`` / ``pandas_udf`` result) under
    their names, for the aggregates to call; errors name the config key."""
    from timeweave.jobs.config import ConfigError

    for name, reference in functions.items():
        module_name, _, attr = reference.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"window.functions.{name}", f"cannot import {module_name!r}: {exc}") from None
        function = getattr(module, attr, None)
        if function is None or not hasattr(function, "evalType"):
            raise ConfigError(f"window.functions.{name}", f"{reference} is not a Python UDF (decorate it with "
                              "pyspark.sql.functions.pandas_udf or udf)")
        spark.udf.register(name, function)


def stream(spark: Any, job: WindowJobConfig, rows: Mapping[str, Any], control: Any) -> StreamingRun:
    """The streaming query over the input's well-formed rows and the heartbeat source ``control``."""
    from timeweave.jobs.streaming import StreamingRun  # the driver (and Spark) only when streaming
    from timeweave.spark import window_streaming as W

    delay = f"{parse_duration(job.input.watermark_delay, 'watermark_delay') // 1000} milliseconds"
    register_functions(spark, job.functions)
    windows = W.window_aggregate_stream(rows["input"], job.aggregates, keys=job.keys, time=job.time, window=job.spec,
                                        watermark=delay, heartbeat=control, grouping_sets=job.grouping)
    return StreamingRun(
        windows, {W.KIND: f"={W.DEAD}", W.SIDE: "side", W.REASON: "reason", W.IN_ROW: "row"},
        {"rows_in": 0, "rows_out": 0, "late": 0, "dead_letter": 0, "batches": 0}, {"kind": "window"},
    )


def backfill(
    spark: Any, job: WindowJobConfig, rows: Mapping[str, Any], start: datetime, end: datetime, slices: int,
    only: Sequence[int] | None, slices_per_job: int | None, on_slice: Callable[[dict], None],
) -> dict[str, Any]:
    """The sliced backfill over the input's well-formed rows (``slices_per_job`` does not apply: the registry says
    so before this is called); its metrics."""
    from timeweave.spark.window_backfill import backfill_window_aggregate

    register_functions(spark, job.functions)
    return backfill_window_aggregate(
        rows["input"], job.aggregates, keys=job.keys, time=job.time, window=job.spec, start=start, end=end,
        slices=slices, output=job.output_path, dead_letter=job.dead_letter_path, only=only, on_slice=on_slice,
        grouping_sets=job.grouping,
    )
