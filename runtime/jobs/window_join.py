"""The window join's job registration (:mod:`timeweave.jobs.registry`): its sources, its streaming query, its
backfill, its one-line description.

Streaming: :func:`timeweave.spark.window_join_streaming.window_join_stream` over the ``left`` and ``right`` sources.
Backfill: :func:`timeweave.spark.window_join_backfill.backfill_window_join`, sliced on the event time, each join
key's open slices' rows under ``<output.path>/_state``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from timeweave.core.durations import parse_duration
from timeweave.jobs.config import SourceConfig, WindowJoinJobConfig

if TYPE_CHECKING:
    from timeweave.jobs.streaming import StreamingRun


def sources(job: WindowJoinJobConfig) -> dict[str, SourceConfig]:
    """The job's file sources by side."""
    return {"left": job.left, "right": job.right}


def describe(job: WindowJoinJobConfig) -> str:
    """One line naming the join, the window, the keys, the inputs and the output.

    >>> from timeweave.jobs.config import WindowJoinJobConfig
    >>> describe(WindowJoinJobConfig.from_dict({"window_join": {"function": "tumble", "time": "t", "size": "5 minutes",
    ...     "on": "num", "how": "semi"}, "left": {"path": "l", "format": "json", "schema": "t TIMESTAMP, num INT"},
    ...     "right": {"path": "r", "format": "json", "schema": "t TIMESTAMP, num INT"}, "output": {"path": "out"}}))
    'window join job: SEMI on TumbleSpec(size=300000, offset=0), left.t / right.t, on num = num; left l, right r -> output out'
    """
    on = ", ".join(f"{a} = {b}" for a, b in job.on) or "the window only"
    return (f"window join job: {job.how} on {job.spec}, left.{job.times[0]} / right.{job.times[1]}, on {on}; "
            f"left {job.left.path}, right {job.right.path} -> output {job.output_path}")


def stream(spark: Any, job: WindowJoinJobConfig, rows: Mapping[str, Any], control: Any) -> StreamingRun:
    """The streaming query over the sides' well-formed rows and the heartbeat source ``control``."""
    from timeweave.jobs.streaming import StreamingRun  # the driver (and Spark) only when streaming
    from timeweave.spark import window_join_streaming as J

    delay_us = max(parse_duration(s.watermark_delay, f"{side}.watermark_delay")
                   for side, s in (("left", job.left), ("right", job.right)))
    joined = J.window_join_stream(rows["left"], rows["right"], on=list(job.on), how=job.how, time=job.times,
                                  window=job.spec, watermark=f"{delay_us // 1000} milliseconds",
                                  left_prefix=job.left_prefix, right_prefix=job.right_prefix, heartbeat=control)
    return StreamingRun(
        joined, {J.KIND: f"={J.DEAD}", J.SIDE: "side", J.REASON: "reason", J.IN_ROW: "row"},
        {"rows_in": 0, "rows_out": 0, "late": 0, "dead_letter": 0, "batches": 0}, {"kind": "window_join"},
    )


def backfill(
    spark: Any, job: WindowJoinJobConfig, rows: Mapping[str, Any], start: datetime, end: datetime, slices: int,
    only: Sequence[int] | None, slices_per_job: int | None, on_slice: Callable[[dict], None],
) -> dict[str, Any]:
    """The sliced backfill over the sides' well-formed rows; its metrics."""
    from timeweave.spark.window_join_backfill import backfill_window_join

    return backfill_window_join(
        rows["left"], rows["right"], on=list(job.on), how=job.how, time=job.times, window=job.spec,
        left_prefix=job.left_prefix, right_prefix=job.right_prefix, start=start, end=end, slices=slices,
        output=job.output_path, dead_letter=job.dead_letter_path, only=only, on_slice=on_slice,
    )
