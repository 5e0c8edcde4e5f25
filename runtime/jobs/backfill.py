"""The backfill job: a time range of file sources through the temporal join in N slices.

``python -m runtime.jobs backfill --config job.json --start 2020-01-01T00:00 --end 2020-01-02T00:00 --slices 3``
or in-process :func:`run_backfill`.  State lives in ``<checkpoint>/backfill_state`` (or
``<output.path>_state``), so a re-run of any slice finds the state at its start edge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from runtime.jobs.config import JobConfig, SourceConfig, parse_utc_timestamp


def read_batch(spark, source: SourceConfig):
    """A file source as a batch DataFrame with the configured schema."""
    return spark.read.format(source.format).schema(source.schema).options(**dict(source.options)).load(source.path)


def _when(value: str | datetime, argument: str) -> datetime:
    return parse_utc_timestamp(value, argument, where="backfill")


def run_backfill(
    config: JobConfig | Mapping[str, Any] | str | Path,
    start: str | datetime,
    end: str | datetime,
    slices: int = 1,
    spark=None,
    only: Sequence[int] | None = None,
) -> dict:
    """Run the backfill of ``config`` over ``[start, end)`` (UTC) in ``slices`` slices; returns metrics.

    Example::

        metrics = run_backfill("job.json", "2020-01-01T00:00", "2020-01-02T00:00", slices=3)
    """
    job = config if isinstance(config, JobConfig) else JobConfig.load(config)
    if spark is None:
        from runtime.jobs.session import get_session

        spark = get_session()
    from runtime.spark.backfill import run_slices

    state = f"{job.checkpoint}/backfill_state" if job.checkpoint else f"{job.output_path}_state"
    metrics = run_slices(
        read_batch(spark, job.left), read_batch(spark, job.right), job.join, _when(start, "start"), _when(end, "end"),
        slices, job.output_path, job.dead_letter_path, state, only=only,
    )
    metrics["kind"] = "backfill"
    return metrics
