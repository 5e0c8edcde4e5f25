"""The temporal join's job registration (:mod:`timeweave.jobs.registry`): its sources, its streaming query,
its backfill, its one-line description.

Streaming: :func:`timeweave.spark.temporal_join_streaming.temporal_join_stream` over the ``left`` and ``right`` sources.
Backfill: :func:`timeweave.spark.temporal_join_backfill.run_slices`, its state in ``<checkpoint>/backfill_state``
(or ``<output.path>_state``) so a re-run of any slice finds the state at its start edge; its bounds in the
time columns' own domain (:func:`time_bounds`: timestamps, dates, integers or numbers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from timeweave.core.durations import parse_duration
from timeweave.core.time import Edge
from timeweave.jobs.config import JobConfig, SourceConfig

if TYPE_CHECKING:
    from timeweave.jobs.streaming import StreamingRun


def sources(job: JobConfig) -> dict[str, SourceConfig]:
    """The job's file sources by side."""
    return {"left": job.left, "right": job.right}


def describe(job: JobConfig) -> str:
    """One line naming the job's inputs and output."""
    return f"temporal-join job: left {job.left.path}, right {job.right.path} -> output {job.output_path}"


def time_bounds(job: JobConfig) -> tuple[str | None, str | None]:
    """The form of the backfill's bounds (:func:`timeweave.core.time.bound_form`) and the time columns deciding it,
    read from the sources' schemas before Spark starts.

    The join slices on both time columns (``join.left_time`` of the left rows, ``versioned.time`` of the
    versions): timestamps take timestamps, DATEs dates, integral columns integers, other numbers numbers.  Time
    columns the schema texts do not name give ``(None, None)`` (the bounds keep their own form; the run's own
    checks name the column).

    >>> from timeweave.jobs.config import JobConfig
    >>> time_bounds(JobConfig.from_dict({"left": {"path": "l", "format": "json", "schema": "k STRING, t BIGINT"},
    ...     "right": {"path": "r", "format": "json", "schema": "k STRING, v DOUBLE, t BIGINT"},
    ...     "versioned": {"key": ["k"], "time": "t"}, "join": {"left_time": "t"}, "output": {"path": "o"}}))
    ('integer', 'the time columns left.t (BIGINT) and right.t (BIGINT)')
    """
    from timeweave.core.time import bound_form
    from timeweave.jobs.config import type_kind

    left_time, right_time = job.join.left_time, job.join.versioned.time
    left, right = job.left.column_types(), job.right.column_types()
    if left_time not in left or right_time not in right:
        return None, None
    left_kinds, right_kinds = {left_time: type_kind(left[left_time])}, {right_time: type_kind(right[right_time])}
    job.join.time_domain(left_kinds, right_kinds)  # an error naming both columns when they cannot be compared
    column = f"the time columns left.{left_time} ({left[left_time]}) and right.{right_time} ({right[right_time]})"
    return bound_form([left_kinds[left_time], right_kinds[right_time]]), column


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
    spark: Any, job: JobConfig, rows: Mapping[str, Any], start: Edge, end: Edge, slices: int,
    only: Sequence[int] | None, slices_per_job: int | None, on_slice: Callable[[dict], None],
) -> dict[str, Any]:
    """The sliced backfill over the sides' well-formed rows; its metrics (``per_slice``: what ``on_slice`` got).

    ``start`` / ``end`` are of the time columns' domain (:func:`time_bounds`)."""
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
