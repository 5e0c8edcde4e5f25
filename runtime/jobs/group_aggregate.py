"""Continuous GROUP BY's job registration (:mod:`timeweave.jobs.registry`): its source, its streaming query, its
one-line description.

Streaming: :func:`timeweave.spark.group_aggregate_streaming.group_aggregate_stream` over the ``input`` source, its
watermark ``input.watermark_delay`` behind the largest event time; the output (``output.path``) is the result's
changelog with an ``op`` column, in the config's encoding (``retract`` / ``upsert``), which
:func:`timeweave.spark.changelog_sink.apply_changelog` materialises.  No backfill: a bounded input's result is the
batch ``GROUP BY`` itself (or the streaming job run with ``--flush``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from timeweave.core.durations import parse_duration
from timeweave.core.errors import SpecError
from timeweave.jobs.config import GroupAggregateJobConfig, SourceConfig

if TYPE_CHECKING:
    from timeweave.jobs.streaming import StreamingRun


def sources(job: GroupAggregateJobConfig) -> dict[str, SourceConfig]:
    """The job's file source (side ``input``)."""
    return {"input": job.input}


def describe(job: GroupAggregateJobConfig) -> str:
    """One line naming the keys, the aggregates, the changelog encoding, the input and the output.

    >>> describe(GroupAggregateJobConfig.from_dict({"group_aggregate": {"keys": ["user"], "time": "cTime",
    ...     "aggregates": {"cnt": "COUNT(url)"}, "changelog": "upsert"}, "output": {"path": "out"},
    ...     "input": {"path": "in", "format": "json", "schema": "user STRING, cTime TIMESTAMP, url STRING"}}))
    'continuous GROUP BY job: keys [user], aggregates cnt = COUNT(url), upsert changelog (event time cTime); input in -> output out'
    """
    aggregates = ", ".join(f"{name} = {text}" for name, text in job.aggregates.items())
    extra = "" if job.op_column is None else f", updating input (op column {job.op_column})"
    if job.retention is not None:
        extra += f", idle-state retention {job.retention.min_idle // 1000} ms"
    return (f"continuous GROUP BY job: keys [{', '.join(job.keys)}], aggregates {aggregates}, {job.changelog.value} "
            f"changelog (event time {job.time}){extra}; input {job.input.path} -> output {job.output_path}")


def stream(spark: Any, job: GroupAggregateJobConfig, rows: Mapping[str, Any], control: Any) -> StreamingRun:
    """The streaming query over the input's well-formed rows and the heartbeat source ``control``."""
    from timeweave.jobs.streaming import StreamingRun  # the driver (and Spark) only when streaming
    from timeweave.spark import group_aggregate_streaming as G

    delay = f"{parse_duration(job.input.watermark_delay, 'watermark_delay') // 1000} milliseconds"
    agg = G.group_aggregate_stream(rows["input"], job.aggregates, keys=job.keys, time=job.time, watermark=delay,
                                   changelog=job.changelog, op_column=job.op_column, retention=job.retention,
                                   heartbeat=control)
    return StreamingRun(
        agg, {G.KIND: f"={G.DEAD}", G.SIDE: "side", G.REASON: "reason", G.IN_ROW: "row"},
        {"rows_in": 0, "rows_out": 0, "late": 0, "dead_letter": 0, "batches": 0},
        {"kind": "group_aggregate", "changelog": job.changelog.value},
    )


def backfill(
    spark: Any, job: GroupAggregateJobConfig, rows: Mapping[str, Any], start: datetime, end: datetime, slices: int,
    only: Sequence[int] | None, slices_per_job: int | None, on_slice: Callable[[dict], None],
) -> dict[str, Any]:
    """Refused: a continuous GROUP BY has no event-time slices to backfill."""
    raise SpecError("backfill", "a continuous GROUP BY job has no backfill: over a bounded input its result is the "
                    "batch GROUP BY; or run the streaming job with --flush", where="job config")
