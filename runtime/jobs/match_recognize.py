"""MATCH_RECOGNIZE's job registration (:mod:`timeweave.jobs.registry`): its source, its streaming query, its
backfill, its one-line description.

Streaming: :func:`timeweave.spark.match_recognize_streaming.match_recognize_stream` over the ``input`` source.
Backfill: :func:`timeweave.spark.match_recognize_backfill.backfill_match_recognize`, sliced on the clause's first
ORDER BY column, its matcher state under ``<output.path>/_state``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from timeweave.core.durations import parse_duration
from timeweave.jobs.config import MatchRecognizeJobConfig, SourceConfig

if TYPE_CHECKING:
    from timeweave.jobs.streaming import StreamingRun


def sources(job: MatchRecognizeJobConfig) -> dict[str, SourceConfig]:
    """The job's file source (side ``input``)."""
    return {"input": job.input}


def describe(job: MatchRecognizeJobConfig) -> str:
    """One line naming the job's input and output."""
    return f"MATCH_RECOGNIZE job: input {job.input.path} -> output {job.output_path}"


def stream(spark: Any, job: MatchRecognizeJobConfig, rows: Mapping[str, Any], control: Any) -> StreamingRun:
    """The streaming query over the input's well-formed rows and the heartbeat source ``control``."""
    from timeweave.jobs.streaming import StreamingRun  # the driver (and Spark) only when streaming
    from timeweave.spark import match_recognize_streaming as M

    delay = f"{parse_duration(job.input.watermark_delay, 'watermark_delay') // 1000} milliseconds"
    matched = M.match_recognize_stream(rows["input"], job.spec, watermark=delay, heartbeat=control, budget=job.budget)
    return StreamingRun(
        matched, {M.KIND: f"={M.DEAD}", M.SIDE: "side", M.REASON: "reason", M.IN_ROW: "row"},
        {"rows_in": 0, "rows_out": 0, "late": 0, "dead_letter": 0, "batches": 0}, {"kind": "match_recognize"},
    )


def backfill(
    spark: Any, job: MatchRecognizeJobConfig, rows: Mapping[str, Any], start: datetime, end: datetime, slices: int,
    only: Sequence[int] | None, slices_per_job: int | None, on_slice: Callable[[dict], None],
) -> dict[str, Any]:
    """The sliced backfill over the input's well-formed rows (``slices_per_job`` does not apply: the registry
    says so before this is called); its metrics."""
    from timeweave.spark.match_recognize_backfill import backfill_match_recognize

    return backfill_match_recognize(
        rows["input"], job.clause, start, end, slices, job.output_path, job.dead_letter_path, only=only,
        on_slice=on_slice, budget=job.budget,
    )
