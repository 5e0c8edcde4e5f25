"""Continuous GROUP BY's job registration (:mod:`timeweave.jobs.registry`): its source, its streaming query, its
sliced backfill, its one-line description.

The GROUP BY is the config's ``keys`` and ``aggregates``, or its ``query`` (Flink's SQL, with an optional WHERE
applied to the input first: :mod:`timeweave.core.updates.group_sql`); both give the same operator.

Streaming: :func:`timeweave.spark.group_aggregate_streaming.group_aggregate_stream` over the ``input`` source, its
watermark ``input.watermark_delay`` behind the largest event time; the output (``output.path``) is the result's
changelog with an ``op`` column, in the config's encoding (``retract`` / ``upsert``), which
:func:`timeweave.spark.changelog_sink.apply_changelog` materialises.  Backfill:
:func:`timeweave.spark.group_aggregate_backfill.backfill_group_aggregate`, each slice's changelog the one micro-batch
of the slice's rows would write, the keys' state carried across the slice edges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from timeweave.core.durations import parse_duration
from timeweave.jobs.config import GroupAggregateJobConfig, SourceConfig

if TYPE_CHECKING:
    from timeweave.jobs.streaming import StreamingRun

#: The job's name in errors (a WHERE condition Spark cannot resolve).
WHERE = "group_aggregate job"


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
    if job.where is not None:
        aggregates += f", WHERE {job.where}"
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
    agg = G.group_aggregate_stream(G.where_rows(rows["input"], job.where, job.qualifier, WHERE), job.aggregates, keys=job.keys, time=job.time, watermark=delay,
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
    """The sliced backfill over the input's well-formed rows (the query's WHERE applied first): each slice's
    changelog is the micro-batch's a stream reading the slice would write
    (:mod:`timeweave.spark.group_aggregate_backfill`); ``slices_per_job`` does not apply (the registry says so
    before this is called).  Its metrics."""
    from timeweave.spark import group_aggregate_streaming as G
    from timeweave.spark.group_aggregate_backfill import backfill_group_aggregate

    delay = f"{parse_duration(job.input.watermark_delay, 'watermark_delay') // 1000} milliseconds"
    return backfill_group_aggregate(
        G.where_rows(rows["input"], job.where, job.qualifier, WHERE), job.aggregates, keys=job.keys, time=job.time,
        watermark=delay, changelog=job.changelog, op_column=job.op_column, retention=job.retention, start=start,
        end=end, slices=slices, output=job.output_path, dead_letter=job.dead_letter_path, only=only,
        on_slice=on_slice,
    )
