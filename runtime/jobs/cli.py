"""Command line of the timeweave jobs; spark-submit-able (``spark-submit -m``-free: ``python -m runtime.jobs``).

::

    python -m runtime.jobs streaming --config job.json [--flush | --heartbeat 2020-01-01T12:00] [--timeout 60]
    python -m runtime.jobs backfill  --config job.json --start 2020-01-01T00:00 --end 2020-01-02T00:00 --slices 3

The last line printed is ``TIMEWEAVE_METRICS {json}``: what a scheduler (the Airflow operator) parses.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

METRICS_PREFIX = "TIMEWEAVE_METRICS "


def parser() -> argparse.ArgumentParser:
    """The argument parser (both subcommands).

    >>> parser().parse_args(["streaming", "--config", "job.json", "--flush"]).flush
    True
    """
    p = argparse.ArgumentParser(prog="python -m runtime.jobs", description="timeweave jobs")
    sub = p.add_subparsers(dest="kind", required=True)
    s = sub.add_parser("streaming", help="run the streaming temporal join or MATCH_RECOGNIZE (file sources -> parquet)")
    s.add_argument("--config", required=True, help="job config: a JSON file or a JSON string")
    end = s.add_mutually_exclusive_group()
    end.add_argument("--flush", action="store_true", help="end of input: move the watermark past every row first")
    end.add_argument("--heartbeat", help="move both watermarks to this ISO timestamp (UTC) first")
    s.add_argument("--timeout", type=float, help="processing-time trigger: stop after this many seconds")
    s.add_argument("--no-until-idle", action="store_true", help="processing-time trigger: do not stop when idle")
    b = sub.add_parser("backfill", help="run the sliced backfill")
    b.add_argument("--config", required=True, help="job config: a JSON file or a JSON string")
    b.add_argument("--start", required=True, help="ISO timestamp (UTC), inclusive")
    b.add_argument("--end", required=True, help="ISO timestamp (UTC), exclusive")
    b.add_argument("--slices", type=int, default=1, help="number of slices (default 1)")
    b.add_argument("--only", type=int, nargs="*", help="re-run only these slice indexes")
    b.add_argument(
        "--slices-per-job", type=int,
        help="temporal joins: contiguous slices one Spark job writes (default: all of the run's; 1: one job per slice)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one job from the command line; prints ``TIMEWEAVE_METRICS {json}`` last and returns 0."""
    args = parser().parse_args(argv)
    from runtime.jobs import run

    if args.kind == "streaming":
        metrics = run(
            "streaming", args.config, flush=args.flush, heartbeat=args.heartbeat,
            timeout_seconds=args.timeout, until_idle=not args.no_until_idle,
        )
    else:
        kw = {"start": args.start, "end": args.end, "slices": args.slices}
        if args.only:
            kw["only"] = args.only
        if args.slices_per_job is not None:
            kw["slices_per_job"] = args.slices_per_job
        metrics = run("backfill", args.config, **kw)
    sys.stdout.write(METRICS_PREFIX + json.dumps(metrics, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()
    return 0


__all__ = ["METRICS_PREFIX", "main", "parser"]
