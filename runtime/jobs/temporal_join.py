"""The temporal join's job registration (:mod:`timeweave.jobs.registry`): its sources, its streaming query,
its backfill, its one-line description.

Streaming: :func:`timeweave.spark.temporal_join_streaming.temporal_join_stream` over the ``left`` and ``right`` sources.
Backfill: :func:`timeweave.spark.temporal_join_backfill.run_slices`, its state in ``<checkpoint>/backfill_state``
(or ``<output.path>_state``) so a re-run of any slice finds the state at its start edge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from timeweave.core.durations import parse_duration
from timeweave.jobs.config import JobConfig, SourceConfig

if TYPE_CHECKING:
    from timeweave.jobs.streaming import StreamingRun


def sources(job: JobConfig) -> dict[str, SourceConfig]:
    """The job's file sources by side."""
    return {"left": job.left, "right": job.right}


def describe(job: JobConfig) -> str:
    """One line naming the job's inputs and output."""
    return f"temporal-join job: left {job.left.path}, right {job.right.path} -> output {job.output_path}"


def backfill_state(job: JobConfig) -> str:
    """Where the backfill keeps the state at its slice edges."""
    return f"{job.checkpoint}/backfill_state" if job.checkpoint else f"{job.output_path}_state"


#: The temporal join's one-scan mark (see ``timeweave.jobs.streaming.ONE_SCAN_MARK``): its input projection takes
#: the sources' malformed records since 2026-12-07; a checkpoint written before keeps the two-scan plan.
ONE_SCAN_MARK = "one-scan-sources-temporal-join"


def stream(spark: Any, job: JobConfig, rows: Mapping[str, Any], control: Any) -> StreamingRun:
    """The streaming query over the sides' well-formed rows and the heartbeat source ``control``."""
    from timeweave.jobs.streaming import StreamingRun  # the driver (and Spark) only when streaming
    from timeweave.spark import temporal_join_streaming as S

    joined = S.temporal_join_stream(
        rows["left"], rows["right"], job.join,
        left_watermark=_delay(job.left.watermark_delay), right_watermark=_delay(job.right.watermark_delay),
        mode=job.mode, retention=job.retention, heartbeat=control,
    )
    return StreamingRun(
        joined, {S.KIND: f"={S.DEAD}", S.OUT_SIDE: "side", S.REASON: "reason", S.L_ROW: "row"},
        {"rows_in_left": 0, "rows_in_right": 0, "rows_out": 0, "late": 0, "dead_letter": 0, "batches": 0},
    )


def backfill(
    spark: Any, job: JobConfig, rows: Mapping[str, Any], start: datetime, end: datetime, slices: int,
    only: Sequence[int] | None, slices_per_job: int | None, on_slice: Callable[[dict], None],
) -> dict[str, Any]:
    """The sliced backfill over the sides' well-formed rows; its metrics (``per_slice``: what ``on_slice`` got)."""
    from timeweave.spark.temporal_join_backfill import run_slices

    reported: list[dict] = []

    def report(one: dict) -> None:
        reported.append(dict(one))
        on_slice(one)

    metrics = run_slices(
        rows["left"], rows["right"], job.join, start, end, slices, job.output_path, job.dead_letter_path,
        backfill_state(job), only=only, slices_per_job=slices_per_job, on_slice=report,
    )
    metrics["kind"] = "backfill"
    metrics["per_slice"] = reported
    return metrics


def _delay(text: str) -> str:
    return f"{parse_duration(text, 'watermark_delay') // 1000} milliseconds"
