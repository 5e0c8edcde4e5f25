"""Job entry points: the streaming job and the backfill job, one JSON config (:mod:`timeweave.jobs.config`).

The config decides what runs: the operator whose section it has (:mod:`timeweave.jobs.registry`): a temporal
join, or a MATCH_RECOGNIZE when it has a ``match_recognize`` section (:func:`timeweave.jobs.config.load_job_config`).

``python -m timeweave.jobs streaming --config job.json`` / ``python -m timeweave.jobs backfill ...`` on the
command line (spark-submit-able), :func:`run` in-process.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from timeweave.core.errors import SpecError

KINDS = ("streaming", "backfill", "sql")


def run(kind: str, config: Any | Mapping[str, Any] | str | Path, spark=None, **kw: Any) -> dict:
    """Run a job of ``kind`` (``streaming``, ``backfill`` or ``sql``) on ``config``; returns its metrics.

    ``kw`` goes to :func:`timeweave.jobs.streaming.run_streaming` (``flush``, ``heartbeat``,
    ``timeout_seconds``, ``until_idle``) or :func:`timeweave.jobs.backfill.run_backfill` (``start``,
    ``end``, ``slices``, ``only``); both take ``run_dir`` (:mod:`timeweave.jobs.run_dir`, for the run report).
    A ``sql`` job's config is ``{"script": text}`` (:func:`timeweave.jobs.sql_script.run_sql_script`).

    >>> run("nightly", {})
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: jobs: argument 'kind': unknown job kind 'nightly'; use one of ['streaming', 'backfill', 'sql']
    """
    if kind == "streaming":
        from timeweave.jobs.streaming import run_streaming

        return run_streaming(config, spark=spark, **kw)
    if kind == "backfill":
        from timeweave.jobs.backfill import run_backfill

        return run_backfill(config, spark=spark, **kw)
    if kind == "sql":
        from timeweave.jobs.sql_script import run_sql_script

        if spark is None:
            from timeweave.jobs.session import get_session

            spark = get_session()
        return run_sql_script(spark, config["script"], **kw)
    raise SpecError("kind", f"unknown job kind {kind!r}; use one of {list(KINDS)}", where="jobs")


__all__ = ["KINDS", "run"]
