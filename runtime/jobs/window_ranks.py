"""Window Top-N's and window deduplication's job registrations (:mod:`timeweave.jobs.registry`): their source,
their streaming query, their backfill, their one-line description.

Streaming: :func:`timeweave.spark.window_rank_streaming.window_top_n_stream` (or ``window_deduplicate_stream``)
over the ``input`` source, its watermark ``input.watermark_delay`` behind the largest event time.  Backfill:
:func:`timeweave.spark.window_rank_backfill.backfill_window_top_n` (or ``backfill_window_deduplicate``), sliced on
the event-time column, the open windows' candidate rows under ``<output.path>/_state``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from timeweave.core.durations import parse_duration
from timeweave.jobs.config import SourceConfig, WindowRankJobConfig

if TYPE_CHECKING:
    from timeweave.jobs.streaming import StreamingRun


def sources(job: WindowRankJobConfig) -> dict[str, SourceConfig]:
    """The job's file source (side ``input``)."""
    return {"input": job.input}


def describe(job: WindowRankJobConfig) -> str:
    """One line naming the operation, the window, the keys, the order and ranks, the input and the output.

    >>> from timeweave.jobs.config import WindowDeduplicateJobConfig, WindowTopNJobConfig
    >>> describe(WindowTopNJobConfig.from_dict({"window_top_n": {"function": "hop", "time": "ts", "slide": "5 minutes",
    ...     "size": "10 minutes", "keys": ["k"], "order_by": ["price DESC"], "ranks": [2, 3], "rank_function": "rank"},
    ...     "output": {"path": "out"}, "input": {"path": "in", "format": "json", "schema": "k STRING, ts TIMESTAMP, price INT"}}))
    'window Top-N job: HopSpec(slide=300000, size=600000, offset=0) on ts, keys [k], RANK in [2, 3] by price DESC as rownum; input in -> output out'
    >>> describe(WindowDeduplicateJobConfig.from_dict({"window_deduplicate": {"function": "tumble", "time": "ts",
    ...     "size": "1 minute"}, "output": {"path": "out"}, "input": {"path": "in", "format": "json", "schema": "ts TIMESTAMP"}}))
    'window deduplication job: TumbleSpec(size=60000, offset=0) on ts, keys [], keep the first row by ts; input in -> output out'
    """
    head = f"{job.spec} on {job.time}, keys [{', '.join(job.keys)}]"
    if job.keep is not None:
        what = f"window deduplication job: {head}, keep the {job.keep} row by {job.time}"
    else:
        r = job.ranks
        shown = "no rank column" if job.rank_column is None else job.rank_column
        what = (f"window Top-N job: {head}, {r.function} in [{r.lower}, {r.upper}] by {', '.join(job.order_by)} as "
                f"{shown}")
    return f"{what}; input {job.input.path} -> output {job.output_path}"


def stream(spark: Any, job: WindowRankJobConfig, rows: Mapping[str, Any], control: Any) -> StreamingRun:
    """The streaming query over the input's well-formed rows and the heartbeat source ``control``."""
    from timeweave.jobs.streaming import StreamingRun  # the driver (and Spark) only when streaming
    from timeweave.spark import window_rank_streaming as R
    from timeweave.spark import window_tagged as W

    delay = f"{parse_duration(job.input.watermark_delay, 'watermark_delay') // 1000} milliseconds"
    if job.keep is not None:
        ranked = R.window_deduplicate_stream(rows["input"], time=job.time, keys=job.keys, keep=job.keep,
                                             window=job.spec, rank_column=job.rank_column, watermark=delay,
                                             heartbeat=control)
    else:
        ranked = R.window_top_n_stream(rows["input"], order_by=list(job.order_by), partition_by=job.keys,
                                       ranks=job.ranks, rank_column=job.rank_column, time=job.time, window=job.spec,
                                       watermark=delay, heartbeat=control)
    return StreamingRun(
        ranked, {W.KIND: f"={W.DEAD}", W.SIDE: "side", W.REASON: "reason", W.IN_ROW: "row"},
        {"rows_in": 0, "rows_out": 0, "late": 0, "dead_letter": 0, "batches": 0},
        {"kind": "window_deduplicate" if job.keep is not None else "window_top_n"},
    )


def backfill(
    spark: Any, job: WindowRankJobConfig, rows: Mapping[str, Any], start: datetime, end: datetime, slices: int,
    only: Sequence[int] | None, slices_per_job: int | None, on_slice: Callable[[dict], None],
) -> dict[str, Any]:
    """The sliced backfill over the input's well-formed rows; its metrics."""
    from timeweave.spark import window_rank_backfill as B

    common = dict(time=job.time, window=job.spec, rank_column=job.rank_column, start=start, end=end, slices=slices,
                  output=job.output_path, dead_letter=job.dead_letter_path, only=only, on_slice=on_slice)
    if job.keep is not None:
        return B.backfill_window_deduplicate(rows["input"], keys=job.keys, keep=job.keep, **common)
    return B.backfill_window_top_n(rows["input"], order_by=list(job.order_by), partition_by=job.keys, ranks=job.ranks,
                                   **common)
