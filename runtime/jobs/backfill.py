"""The backfill job: a time range of file sources through the temporal join or MATCH_RECOGNIZE in N slices.

``python -m runtime.jobs backfill --config job.json --start 2020-01-01T00:00 --end 2020-01-02T00:00 --slices 3``
or in-process :func:`run_backfill`.  A temporal-join job keeps its state in ``<checkpoint>/backfill_state``
(or ``<output.path>_state``); a MATCH_RECOGNIZE job (a config with a ``match_recognize`` section) keeps
its matcher state under ``<output.path>/_state`` (:mod:`runtime.spark.match_recognize_backfill`).  Either
way a re-run of any slice finds the state at its start edge.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from runtime.core.errors import SpecError
from runtime.jobs.config import JobConfig, MatchRecognizeJobConfig, SourceConfig, load_job_config, parse_utc_timestamp

_log = logging.getLogger("timeweave.backfill")


def read_batch(spark, source: SourceConfig):
    """A file source as a batch DataFrame with the configured schema."""
    return spark.read.format(source.format).schema(source.schema).options(**dict(source.options)).load(source.path)


def _when(value: str | datetime, argument: str) -> datetime:
    return parse_utc_timestamp(value, argument, where="backfill")


def run_backfill(
    config: JobConfig | MatchRecognizeJobConfig | Mapping[str, Any] | str | Path,
    start: str | datetime,
    end: str | datetime,
    slices: int = 1,
    spark=None,
    only: Sequence[int] | None = None,
    slices_per_job: int | None = None,
) -> dict:
    """Run the backfill of ``config`` over ``[start, end)`` (UTC) in ``slices`` slices; returns metrics.

    ``config`` is either job shape (:func:`runtime.jobs.config.load_job_config`): a temporal join, or a
    MATCH_RECOGNIZE sliced on the clause's first ORDER BY column.  ``slices_per_job`` (temporal joins
    only; default: all the run's slices) is how many contiguous slices one Spark job writes
    (:func:`runtime.spark.backfill.run_slices`; 1: one job per slice).

    Example::

        metrics = run_backfill("job.json", "2020-01-01T00:00", "2020-01-02T00:00", slices=3)
    """
    job = load_job_config(config)
    if spark is None:
        from runtime.jobs.session import get_session

        spark = get_session()
    begin, stop = _when(start, "start"), _when(end, "end")
    kind = "MATCH_RECOGNIZE" if isinstance(job, MatchRecognizeJobConfig) else "temporal join"
    _log.info("backfill (%s) [%s, %s) in %d slice(s)%s -> %s", kind, begin.isoformat(), stop.isoformat(), slices,
              f", only {list(only)}" if only else "", job.output_path)
    if isinstance(job, MatchRecognizeJobConfig):
        if slices_per_job not in (None, 1):
            raise SpecError("slices_per_job", "applies to temporal-join backfills only", where="backfill")
        from runtime.spark.match_recognize_backfill import backfill_match_recognize

        metrics = backfill_match_recognize(
            read_batch(spark, job.input), job.clause, begin, stop, slices,
            job.output_path, job.dead_letter_path, only=only, budget=job.budget,
        )
        for i, one in enumerate(metrics.get("per_slice") or []):
            _log.info("slice %s: rows in %s, out %s, state keys out %s, %s s", one.get("slice", i), one.get("rows_in"),
                      one.get("rows_out"), one.get("state_keys_out"), one.get("seconds"))
        _log.info("backfill done: %s slice(s), rows in %s, out %s", metrics.get("slices"), metrics.get("rows_in"),
                  metrics.get("rows_out"))
        return metrics
    from runtime.spark.backfill import run_slices

    state = f"{job.checkpoint}/backfill_state" if job.checkpoint else f"{job.output_path}_state"
    metrics = run_slices(
        read_batch(spark, job.left), read_batch(spark, job.right), job.join, begin, stop,
        slices, job.output_path, job.dead_letter_path, state, only=only, slices_per_job=slices_per_job,
    )
    metrics["kind"] = "backfill"
    _log.info("backfill done: %s slice(s), rows in %s left / %s right, out %s, dead letter %s",
              metrics.get("slices"), metrics.get("rows_in_left"), metrics.get("rows_in_right"),
              metrics.get("rows_out"), metrics.get("dead_letter"))
    return metrics
