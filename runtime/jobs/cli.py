"""Command line of the timeweave jobs (``timeweave-job``, or ``python -m timeweave.jobs``; spark-submit-able).

::

    timeweave-job streaming --config job.json [--flush | --heartbeat 2020-01-01T12:00] [--timeout 60]
    timeweave-job backfill  --config job.json --start 2020-01-01T00:00 --end 2020-01-02T00:00 --slices 3
    timeweave-job backfill  --config lsn_job.json --start 0 --end 3000000 --slices 3   # a BIGINT time column
    timeweave-job validate  job.json
    timeweave-job report    RUN_DIR [--output report.html]

A backfill's ``--start`` / ``--end`` are in the domain of the time column it slices on
(:func:`timeweave.jobs.backfill.backfill_bounds`): ISO timestamps (UTC); for a temporal join over DATE time
columns dates (``2024-01-31``), over integral ones (BIGINT epoch millis, sequence numbers) integers, over DECIMAL /
DOUBLE ones numbers.  A bound of the wrong form is an error naming ``--start`` / ``--end`` before Spark starts.

``--run-dir DIR`` (streaming, backfill) records the run in DIR (``events.jsonl``, ``config.json``:
:mod:`timeweave.jobs.run_dir`); ``report`` turns it into one self-contained HTML page.

The last line a job prints is ``TIMEWEAVE_METRICS {json}``.  With ``--metrics-file PATH_OR_URI`` the job
also keeps a status file there (:mod:`timeweave.jobs.metrics_file`: ``running`` at the start and after every
streaming micro-batch, then ``succeeded`` with the metrics or ``failed`` with the error), which a scheduler
reads when the driver's stdout does not reach it (cluster deploy mode, a deferred Airflow task).
A bad config or argument prints one line on stderr (no traceback) and exits 2; ``validate`` checks a
config without starting Spark (exit 0 or 2).  A streaming job stopped by SIGTERM or SIGINT finishes
its current micro-batch, stops, prints its metrics and exits 0 (:func:`timeweave.jobs.streaming.request_stop`).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any

METRICS_PREFIX = "TIMEWEAVE_METRICS "
#: Exit code of a bad config or argument (argparse's own usage errors exit 2 as well).
EXIT_USAGE = 2

_DESCRIPTION = """\
Run a timeweave job -- a streaming temporal join or MATCH_RECOGNIZE over file sources, or its sliced
backfill -- from one JSON job config, or check such a config.  The config's keys are checked before
Spark starts: an unknown or missing key is an error naming its path."""

_EXAMPLES = """\
examples:
  timeweave-job validate job.json
  timeweave-job streaming --config job.json --flush --run-dir runs/orders
  timeweave-job report runs/orders            # writes runs/orders/report.html
  timeweave-job backfill --config job.json --start 2020-01-01T00:00 --end 2020-01-02T00:00 --slices 3
  spark-submit --master 'local[2]' -m timeweave.jobs streaming --config job.json

The last line of a job's output is TIMEWEAVE_METRICS {json}.  Exit codes: 0 done (also after SIGTERM /
SIGINT on a streaming job: it stops after the current micro-batch), 2 bad config or argument."""

_STREAMING = """\
Run the streaming job of the config: file sources -> temporal join or MATCH_RECOGNIZE -> parquet main,
late and dead-letter outputs, exactly once, restartable from the checkpoint.  A config with a
'match_recognize' section runs MATCH_RECOGNIZE, else the temporal join."""

_STREAMING_EXAMPLES = """\
examples:
  timeweave-job streaming --config job.json                 # read what is there, keep rows in state
  timeweave-job streaming --config job.json --flush         # bounded input: read all, then emit everything
  timeweave-job streaming --config job.json --heartbeat 2020-01-01T12:00   # an idle source: move the watermark
  timeweave-job streaming --config '{"left": ...}' --timeout 600 --no-until-idle
  timeweave-job streaming --config job.json --metrics-file s3a://bucket/runs/orders.json   # status for a scheduler

SIGTERM / SIGINT stop the job after its current micro-batch: the checkpoint stays valid, the metrics line
is printed, the exit code is 0; run again to go on."""

_BACKFILL = """\
Run the config's operator (a temporal join, MATCH_RECOGNIZE, a window...) over [start, end) of its
sources in slices; each slice can be re-run alone (--only), its state at its start edge is kept.
The bounds are in the domain of the time column the operator slices on: ISO timestamps (UTC); for a
temporal join over DATE time columns dates, over BIGINT / INT ones integers (epoch millis, sequence
numbers: 1.5 is refused), over DECIMAL / DOUBLE ones numbers."""

_BACKFILL_EXAMPLES = """\
examples:
  timeweave-job backfill --config job.json --start 2020-01-01T00:00 --end 2020-01-02T00:00 --slices 3
  timeweave-job backfill --config job.json --start 2020-01-01 --end 2020-01-02 --slices 3 --only 1
  timeweave-job backfill --config lsn_job.json --start 0 --end 3000000 --slices 3      # BIGINT time columns
  timeweave-job backfill --config daily_job.json --start 2024-01-01 --end 2024-02-01 --slices 3   # DATE ones"""

_VALIDATE = """\
Check a job config -- every key, the types, the durations, the MATCH_RECOGNIZE clause -- without
starting Spark.  Prints what the config runs and exits 0, or one error line on stderr and exits 2."""

_VALIDATE_EXAMPLES = """\
examples:
  timeweave-job validate job.json
  timeweave-job validate '{"match_recognize": {"clause": "..."}, "input": {...}, "output": {...}}'"""

_REPORT = """\
Write the run report of a run directory (what jobs run with --run-dir DIR recorded there): one
self-contained HTML page with rows in/out, late and dead-letter counts, reasons and samples, the
watermark and lag over time, per-slice timings, and a timeline of the output per key (temporal join)
or per partition (MATCH_RECOGNIZE).  Needs no Spark."""

_REPORT_EXAMPLES = """\
examples:
  timeweave-job streaming --config job.json --flush --run-dir runs/orders
  timeweave-job report runs/orders                       # -> runs/orders/report.html
  timeweave-job report runs/orders --output /tmp/orders.html"""

_HELP_FORMAT = argparse.RawDescriptionHelpFormatter
_RUN_DIR_HELP = "record the run in this local directory (events.jsonl, config.json) for 'timeweave-job report'"
_METRICS_FILE_HELP = ("keep a JSON status file here (a path or a URI Spark can write): state running / succeeded / "
                      "failed, the metrics, the error; replaced whole at the start, per micro-batch and at the end")


def parser() -> argparse.ArgumentParser:
    """The argument parser (every subcommand).

    >>> parser().parse_args(["streaming", "--config", "job.json", "--flush"]).flush
    True
    >>> parser().parse_args(["validate", "job.json"]).config
    'job.json'
    """
    p = argparse.ArgumentParser(prog="timeweave-job", description=_DESCRIPTION, epilog=_EXAMPLES,
                                formatter_class=_HELP_FORMAT)
    p.add_argument("--log-level", default="INFO", type=str.upper,
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="level of the 'timeweave' logger on stderr (default INFO: one line per micro-batch / slice)")
    sub = p.add_subparsers(dest="kind", required=True, metavar="{streaming,backfill,validate,report,sql}")
    s = sub.add_parser("streaming", help="run the streaming temporal join or MATCH_RECOGNIZE (file sources -> parquet)",
                       description=_STREAMING, epilog=_STREAMING_EXAMPLES, formatter_class=_HELP_FORMAT)
    s.add_argument("--config", required=True, help="job config: a JSON file or a JSON string")
    end = s.add_mutually_exclusive_group()
    end.add_argument("--flush", action="store_true",
                     help="end of input: once all available input is read, move the watermark past every row")
    end.add_argument("--heartbeat",
                     help="once all available input is read, move both watermarks to this ISO timestamp (UTC)")
    s.add_argument("--timeout", type=float, help="processing-time trigger: stop after this many seconds")
    s.add_argument("--no-until-idle", action="store_true", help="processing-time trigger: do not stop when idle")
    s.add_argument("--run-dir", help=_RUN_DIR_HELP)
    s.add_argument("--metrics-file", metavar="PATH_OR_URI", help=_METRICS_FILE_HELP)
    b = sub.add_parser("backfill", help="run the sliced backfill", description=_BACKFILL, epilog=_BACKFILL_EXAMPLES,
                       formatter_class=_HELP_FORMAT)
    b.add_argument("--config", required=True, help="job config: a JSON file or a JSON string")
    b.add_argument("--start", required=True, help="inclusive; in the time column's domain: an ISO timestamp (UTC), "
                   "a date (DATE times) or a number (numeric times: an integer for BIGINT / INT)")
    b.add_argument("--end", required=True, help="exclusive; the same form as --start")
    b.add_argument("--slices", type=int, default=1, help="number of slices (default 1)")
    b.add_argument("--only", type=int, nargs="*", help="re-run only these slice indexes")
    b.add_argument(
        "--slices-per-job", type=int,
        help="temporal joins: contiguous slices one Spark job writes (default: all of the run's; 1: one job per slice)",
    )
    b.add_argument("--run-dir", help=_RUN_DIR_HELP)
    b.add_argument("--metrics-file", metavar="PATH_OR_URI", help=_METRICS_FILE_HELP)
    v = sub.add_parser("validate", help="check a job config without starting Spark", description=_VALIDATE,
                       epilog=_VALIDATE_EXAMPLES, formatter_class=_HELP_FORMAT)
    v.add_argument("config", help="job config: a JSON file or a JSON string")
    r = sub.add_parser("report", help="write the HTML run report of a run directory", description=_REPORT,
                       epilog=_REPORT_EXAMPLES, formatter_class=_HELP_FORMAT)
    r.add_argument("run_dir", metavar="RUN_DIR", help="a directory a job wrote with --run-dir")
    r.add_argument("--output", help="the HTML file to write (default RUN_DIR/report.html)")
    q = sub.add_parser("sql", help="run a Flink SQL script (CREATE TABLE / VIEW, INSERT INTO) as a batch or streaming job",
                       description=_SQL, epilog=_SQL_EXAMPLES, formatter_class=_HELP_FORMAT)
    given = q.add_mutually_exclusive_group(required=True)
    given.add_argument("--file", help="the script: ;-separated statements")
    given.add_argument("--script", metavar="TEXT", help="the script itself (what the Airflow operator passes a "
                       "driver on another machine)")
    q.add_argument("--mode", choices=["batch", "streaming"], default="batch",
                   help="batch (default): every INSERT writes its sink once; streaming: every INSERT runs as a "
                   "checkpointed streaming query over the script's tables read as streams")
    q.add_argument("--checkpoint", metavar="DIR", help="streaming: the checkpoints' directory (insert n keeps its "
                   "own in DIR/<n>-<sink>; default <sink path>_checkpoint); a re-run resumes from it")
    q.add_argument("--flush", action="store_true", help="streaming: the input is complete; emit every row still "
                   "waiting for the watermark (Flink's end of a bounded source)")
    q.add_argument("--processing-time", metavar="INTERVAL", help="streaming: run a micro-batch every INTERVAL "
                   "(e.g. '10 seconds') until --timeout instead of reading what is there and stopping (one INSERT)")
    q.add_argument("--timeout", type=float, metavar="SECONDS", help="streaming: stop after this many seconds")
    q.add_argument("--metrics-file", metavar="PATH_OR_URI", help=_METRICS_FILE_HELP)
    return p


_SQL = """Run a Flink SQL script as a batch job: its CREATE TABLE / CREATE VIEW statements declare tables (a
PRIMARY KEY and a WATERMARK make a versioned table), and each INSERT INTO / INSERT OVERWRITE (alone or in
EXECUTE STATEMENT SET BEGIN ... END) writes its query's rows into a filesystem sink the script declares (csv,
json or parquet) or a catalog table; the query's dead letters go to <sink path>_dead_letter.  With --mode
streaming the tables are read as streams and each INSERT INTO runs as a checkpointed streaming query into a
parquet sink, its late rows in <sink path>_late.  The script is checked before Spark starts."""

_SQL_EXAMPLES = """examples:
  timeweave-job sql --file job.sql
  timeweave-job sql --file job.sql --metrics-file status.json
  timeweave-job sql --script 'CREATE TABLE s (...) WITH (...); INSERT INTO s SELECT ...'
  timeweave-job sql --file job.sql --mode streaming --checkpoint chk/job --flush"""


def _sql(args: argparse.Namespace) -> int:
    """``timeweave-job sql``: check the script (no JVM for a bad one), run it, print the metrics line."""
    from pathlib import Path

    from timeweave.core.errors import TimeweaveError
    from timeweave.jobs.sql_script import check_script, run_sql_script

    status = _status_writer(args)
    where = args.file or "--script"  # the name errors start with
    try:
        script = args.script if args.script is not None else Path(args.file).read_text(encoding="utf-8")
        check_script(script, args.mode)
    except (OSError, TimeweaveError, ValueError) as error:
        message = f"{where}: {str(error).splitlines()[0]}"
        _final_status(status, message)
        return _error(message)
    from timeweave.jobs.session import get_session

    if status is not None:
        status.running()
    try:
        metrics = run_sql_script(get_session(), script, mode=args.mode, checkpoint=args.checkpoint, flush=args.flush,
                                 processing_time=args.processing_time, timeout_seconds=args.timeout)
    except TimeweaveError as error:
        _final_status(status, f"{where}: {error}")
        return _error(f"{where}: {error}")
    except BaseException as error:
        _final_status(status, f"{type(error).__name__}: {error}")
        raise
    if status is not None:
        status.succeeded(json.loads(json.dumps(metrics, default=str)))
    sys.stdout.write(METRICS_PREFIX + json.dumps(metrics, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()
    return 0


def _error(message: str) -> int:
    """One line on stderr, exit code :data:`EXIT_USAGE`."""
    first = str(message).splitlines()[0] if str(message).strip() else repr(message)
    sys.stderr.write(f"timeweave-job: error: {first}\n")
    sys.stderr.flush()
    return EXIT_USAGE


def _describe(job: Any) -> str:
    from timeweave.jobs.registry import operator_of

    return operator_of(job).module().describe(job)


def _install_stop_handlers() -> None:
    """SIGTERM / SIGINT ask the streaming job to stop after its current micro-batch (instead of killing
    the driver mid-batch, which left Spark's state store errors and a NullPointerException on stderr)."""
    from timeweave.jobs.streaming import request_stop

    def handler(signum: int, _frame: Any) -> None:
        request_stop(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)


def configure_logging(level: str) -> None:
    """The ``timeweave`` logger's lines on stderr (``time level message``) at ``level``."""
    logger = logging.getLogger("timeweave")
    logger.setLevel(level)
    if not any(getattr(h, "_timeweave_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler._timeweave_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    """Run one job (or ``validate``) from the command line; a job prints ``TIMEWEAVE_METRICS {json}`` last.

    Returns 0, or :data:`EXIT_USAGE` after one error line on stderr for a bad config or argument.

    >>> main(["validate", '{"output": {"path": "out"}}'])
    2
    """
    args = parser().parse_args(argv)
    configure_logging(args.log_level)
    if args.kind == "report":
        return _report(args.run_dir, args.output)
    if args.kind == "sql":
        return _sql(args)
    from timeweave.core.errors import TimeweaveError
    from timeweave.jobs.config import load_job_config

    status = _status_writer(args)
    # The config (and a backfill's bounds) are read and checked before Spark starts: a bad one costs no JVM.
    try:
        job = load_job_config(args.config)
        if args.kind == "backfill":
            from timeweave.jobs.backfill import backfill_bounds

            bounds = backfill_bounds(job, args.start, args.end, names=("--start", "--end"))
    except (TimeweaveError, ValueError) as error:
        message = _config_message(error)
        _final_status(status, message)
        return _error(message)
    if args.kind == "validate":
        sys.stdout.write(f"{args.config}: valid {_describe(job)}\n")
        return 0

    from timeweave.jobs import run

    if status is not None:
        status.running()
    try:
        if args.kind == "streaming":
            _install_stop_handlers()
            extra: dict[str, Any] = {"on_batch": status.running} if status is not None else {}
            metrics = run(
                "streaming", job, flush=args.flush, heartbeat=args.heartbeat,
                timeout_seconds=args.timeout, until_idle=not args.no_until_idle, run_dir=args.run_dir,
                **extra,
            )
        else:
            kw: dict[str, Any] = {"start": bounds[0], "end": bounds[1], "slices": args.slices, "run_dir": args.run_dir}
            if args.only:
                kw["only"] = args.only
            if args.slices_per_job is not None:
                kw["slices_per_job"] = args.slices_per_job
            metrics = run("backfill", job, **kw)
    except TimeweaveError as error:  # bad input found once Spark knows the sources (a column, a type)
        _final_status(status, str(error))
        return _error(str(error))
    except BaseException as error:  # Spark's own failures keep their traceback; the status file names them
        _final_status(status, f"{type(error).__name__}: {error}")
        raise
    if status is not None:
        status.succeeded(json.loads(json.dumps(metrics, default=str)))
    sys.stdout.write(METRICS_PREFIX + json.dumps(metrics, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()
    return 0


def _report(run_dir: str, output: str | None) -> int:
    """``timeweave-job report``: write the page, print its path; a run directory without events is an error line."""
    from timeweave.jobs.report import write_report

    try:
        path = write_report(run_dir, output)
    except (FileNotFoundError, ValueError) as error:
        return _error(str(error))
    sys.stdout.write(f"run report: {path}\n")
    return 0


def _status_writer(args: argparse.Namespace) -> Any:
    """The job's :class:`~timeweave.jobs.metrics_file.StatusWriter` (``--metrics-file``), or None."""
    target = getattr(args, "metrics_file", None)
    if not target:
        return None
    from timeweave.jobs.metrics_file import StatusWriter

    def session() -> Any:
        from timeweave.jobs.session import get_session

        return get_session()

    return StatusWriter(target, args.kind, spark=session)


def _final_status(status: Any, error: str) -> None:
    """Record ``error`` as the job's final state; a status file that cannot be written is reported, not raised
    (the job's own error is what the caller must see)."""
    if status is None:
        return
    first = error.strip().splitlines()[0] if error.strip() else error
    try:
        status.failed(first)
    except Exception as write_error:  # the job's own error matters more
        sys.stderr.write(f"timeweave-job: cannot write the metrics file {status.target}: {write_error}\n")


def _config_message(error: BaseException) -> str:
    """One line for a config error; a clause syntax error is located in the clause."""
    from timeweave.core.errors import QuerySyntaxError

    text = str(error).splitlines()[0]
    if isinstance(error, QuerySyntaxError) and not text.startswith("job config"):
        return f"job config: match_recognize.clause: {text}"
    return text


__all__ = ["EXIT_USAGE", "METRICS_PREFIX", "configure_logging", "main", "parser"]
