"""The backfill job: a time range of file sources through any registered operator in N slices.

``python -m timeweave.jobs backfill --config job.json --start 2020-01-01T00:00 --end 2020-01-02T00:00 --slices 3``
or in-process :func:`run_backfill`; the bounds are in the time column's own domain (:func:`backfill_bounds`:
``--start 0 --end 3000000`` for a temporal join over BIGINT times, ``--start 2024-01-01`` over DATE ones).  The config selects the operator (:mod:`timeweave.jobs.registry`); its
backfill registration runs the slices and keeps the state at their edges: a temporal-join job in
``<checkpoint>/backfill_state`` (or ``<output.path>_state``, :mod:`timeweave.jobs.temporal_join`); a
MATCH_RECOGNIZE job (a config with a ``match_recognize`` section) under ``<output.path>/_state``
(:mod:`timeweave.spark.match_recognize_backfill`); a window job (a ``window`` section) under
``<output.path>/_state`` too (:mod:`timeweave.spark.window_backfill`), and so does a DataStream window job (a
``datastream`` section: :mod:`timeweave.spark.datastream_backfill`, late rows under ``<output.late_path>``).  Either way a re-run of any slice finds the state at its
start edge.  This driver reads the operator's sources, runs its registration and writes the malformed records.

CSV / JSON records that do not fit the source's schema (:mod:`timeweave.spark.sources`) belong to no slice:
every run rewrites them under ``<dead_letter>/slice=malformed`` (``side``, ``reason``, ``row``: the reason
names the column and type, or the wrong field count; ``row`` holds the text read and the raw record) and
counts them in ``malformed`` and ``dead_letter`` (and, as the streaming job does, in the rows in).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from timeweave.core.errors import SpecError
from timeweave.core.time import Edge, bound_text, edge_domain, edge_text, parse_bound
from timeweave.jobs.config import SourceConfig, load_job_config
from timeweave.jobs.registry import OPERATORS, operator_of
from timeweave.jobs.run_dir import run_recorded

_log = logging.getLogger("timeweave.backfill")


#: The dead-letter directory of the sources' malformed records (they have no trustworthy time: no slice).
MALFORMED_SLICE = "malformed"


def read_batch(spark, source: SourceConfig):
    """A file source as a batch DataFrame with the configured schema; CSV / JSON records tagged malformed or
    not (:func:`timeweave.spark.sources.read_source`)."""
    from timeweave.spark.sources import read_source

    return read_source(spark.read, source.format, source.schema, source.options, source.path)


def _sources(spark, sources: Mapping[str, SourceConfig]) -> tuple[dict[str, Any], Any, list[Any]]:
    """Each side's well-formed rows, the malformed records of all sides (None when no source is CSV / JSON),
    and the parsed CSV / JSON sources to unpersist once the run is done.

    A CSV / JSON source is parsed once: its tagged rows are persisted, and the operator's reads (a temporal
    join reads each side several times) and the dead letter's all read that one parse.  Unpersisted, each
    read parsed the text again, the dead letter's included: every typed column of every record is converted
    to find the malformed ones (:mod:`timeweave.spark.sources`).
    """
    from pyspark import StorageLevel

    from timeweave.spark.sources import is_tagged, split_malformed

    rows, dead, parsed = {}, None, []
    for side, source in sources.items():
        df = read_batch(spark, source)
        if is_tagged(df):
            df = df.persist(StorageLevel.MEMORY_AND_DISK)
            parsed.append(df)
        rows[side], malformed = split_malformed(df, side)
        if is_tagged(df):
            dead = malformed if dead is None else dead.unionByName(malformed)
    return rows, dead, parsed


def _write_malformed(spark, dead, dead_letter: str) -> dict[str, int]:
    """Replace ``<dead_letter>/slice=malformed`` with ``dead``; the count per side."""
    if dead is None:
        return {}
    path = f"{dead_letter}/slice={MALFORMED_SLICE}"
    dead.write.mode("overwrite").parquet(path)
    return {r["side"]: r["count"] for r in spark.read.parquet(path).groupBy("side").count().collect()}


def backfill_bounds(
    config: Any | Mapping[str, Any] | str | Path, start: Any, end: Any, names: tuple[str, str] = ("start", "end"),
) -> tuple[Edge, Edge]:
    """``start`` and ``end`` of a backfill of ``config``, read in the domain of the time column it slices on; no Spark.

    The operator's job module decides the form (its ``time_bounds(job)``, :mod:`timeweave.jobs.registry`): a
    temporal join's time columns in the sources' schemas give timestamps (ISO, UTC), dates (``2024-01-31``),
    integers (BIGINT epoch millis, sequence numbers: ``1.5`` is refused) or numbers (DECIMAL, DOUBLE); every
    other operator's backfill slices on timestamps.  Text (a command line's, a template's) and Python values
    (datetime, date, int, Decimal, float) are read alike (:func:`timeweave.core.time.parse_bound`).  An error
    names the argument as ``names`` gives it (the CLI's ``--start`` / ``--end``), the value and the form
    expected; ``end`` must be after ``start``.

    >>> job = {"left": {"path": "l", "format": "json", "schema": "k STRING, seq BIGINT"},
    ...        "right": {"path": "r", "format": "json", "schema": "k STRING, v DOUBLE, seq BIGINT"},
    ...        "versioned": {"key": ["k"], "time": "seq"}, "join": {"left_time": "seq"}, "output": {"path": "o"}}
    >>> backfill_bounds(job, "0", "300")
    (0, 300)
    >>> backfill_bounds(job, "0", "2024-01-31", names=("--start", "--end"))
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: backfill: argument '--end': expected an integer, e.g. 1706659200000 (the time columns left.seq (BIGINT) and right.seq (BIGINT) are integral), got '2024-01-31': a date or timestamp does not slice a numeric time: give numbers in the column's own unit
    """
    job = load_job_config(config)
    operator = operator_of(job)
    timing = getattr(operator.module(), "time_bounds", None)
    form, column = timing(job) if timing is not None else ("timestamp", f"the {operator.label} backfill's bounds")
    begin = parse_bound(start, form, names[0], where="backfill", column=column)
    stop = parse_bound(end, form, names[1], where="backfill", column=column)
    if edge_domain(begin) != edge_domain(stop):  # bounds of their own form (a schema text naming no time column)
        raise SpecError(names[1], f"{end!r} is not of the time domain of {names[0]} {start!r}", where="backfill")
    if stop <= begin:
        raise SpecError(names[1], f"end {bound_text(stop)} must be after start {bound_text(begin)}", where="backfill")
    return begin, stop


def run_backfill(
    config: Any | Mapping[str, Any] | str | Path,
    start: Any,
    end: Any,
    slices: int = 1,
    spark=None,
    only: Sequence[int] | None = None,
    slices_per_job: int | None = None,
    run_dir: str | Path | None = None,
    progress_bar: bool | None = None,
) -> dict:
    """Run the backfill of ``config`` over ``[start, end)`` in ``slices`` slices; returns metrics.

    ``start`` / ``end`` are in the domain of the time column the operator slices on (:func:`backfill_bounds`):
    timestamps (UTC), or for a temporal join over DATE time columns dates, over integral ones integers (epoch
    millis, sequence numbers), over other numeric ones numbers; as text or as Python values.  They are
    checked before Spark starts; the run directory records them as the metrics do (ISO text, numbers).

    ``config`` is any operator's job shape (:func:`timeweave.jobs.config.load_job_config`): a temporal join,
    or a MATCH_RECOGNIZE sliced on the clause's first ORDER BY column.  ``slices_per_job`` (operators whose
    registry entry takes it: the temporal join; default: all the run's slices) is how many contiguous slices
    one Spark job writes (:func:`timeweave.spark.temporal_join_backfill.run_slices`; 1: one job per slice).

    Each slice is reported as it is written: a log line (rows, seconds), a progress bar on a terminal
    (``progress_bar``: default when stderr is a terminal and ``rich`` is installed) and, with ``run_dir``,
    a ``slice`` event there for the run report (:mod:`timeweave.jobs.run_dir`).  The metrics' ``per_slice``
    lists the same figures.

    Example::

        metrics = run_backfill("job.json", "2020-01-01T00:00", "2020-01-02T00:00", slices=3)
        metrics = run_backfill("lsn_job.json", 0, 3_000_000, slices=3)   # a BIGINT time column (an LSN)
    """
    job = load_job_config(config)
    begin, stop = backfill_bounds(job, start, end)
    recorder = None
    if run_dir is not None:
        from timeweave.jobs.run_dir import RunRecorder

        recorder = RunRecorder(
            run_dir, "backfill", operator_of(job).name, job.raw,
            {"main": job.output_path, "late": job.late_path, "dead_letter": job.dead_letter_path},
            {"start": edge_text(begin), "end": edge_text(stop), "slices": slices,
             "only": list(only) if only else None, "slices_per_job": slices_per_job},
        )
    total = len(set(only)) if only else slices

    def run() -> dict:
        with SliceProgress(total, recorder, bar=progress_bar) as progress:
            return _run_backfill(job, begin, stop, slices, spark, only, slices_per_job, progress)

    return run_recorded(recorder, run)


def _run_backfill(
    job: Any, begin: Edge, stop: Edge, slices: int, spark: Any,
    only: Sequence[int] | None, slices_per_job: int | None, progress: SliceProgress,
) -> dict:
    if spark is None:
        from timeweave.jobs.session import get_session

        spark = get_session()
    operator = operator_of(job)
    if slices_per_job not in (None, 1) and not operator.slices_per_job:
        takers = ", ".join(op.label for op in OPERATORS if op.slices_per_job)
        raise SpecError("slices_per_job", f"applies to {takers} backfills only, not {operator.label}", where="backfill")
    _log.info("backfill (%s) [%s, %s) in %d slice(s)%s -> %s", operator.label, bound_text(begin), bound_text(stop),
              slices, f", only {list(only)}" if only else "", job.output_path)
    jobs = operator.module()
    rows, dead, parsed = _sources(spark, jobs.sources(job))
    try:
        metrics = jobs.backfill(spark, job, rows, begin, stop, slices, only, slices_per_job, progress)
        malformed = _write_malformed(spark, dead, job.dead_letter_path)
    finally:
        for df in parsed:
            df.unpersist()
    metrics["malformed"] = sum(malformed.values())
    metrics["dead_letter"] += metrics["malformed"]
    for side, count in malformed.items():  # a side counted on its own (rows_in_left...) counts its records read
        if metrics.get(f"rows_in_{side}") is not None:
            metrics[f"rows_in_{side}"] += count
    _log.info("backfill done: %s slice(s), rows in %s, out %s, dead letter %s", metrics.get("slices"),
              _rows_in(metrics), metrics.get("rows_out"), metrics.get("dead_letter"))
    return metrics


def _rows_in(metrics: Mapping[str, Any]) -> str:
    """The rows in, as the log line gives them: one count, or one per side.

    >>> _rows_in({"rows_in": 4}), _rows_in({"rows_in_left": 3, "rows_in_right": 2})
    ('4', '3 left / 2 right')
    """
    if "rows_in" in metrics:
        return str(metrics["rows_in"])
    return " / ".join(f"{value} {name[len('rows_in_'):]}" for name, value in metrics.items() if name.startswith("rows_in_"))


def format_slice(one: Mapping[str, Any], done: int, total: int) -> str:
    """The log line of one finished slice.

    >>> format_slice({"slice": 1, "label": "20200101T08", "rows_in": 5, "rows_out": 2, "state_keys_out": 1,
    ...               "seconds": 0.5}, 2, 3)
    'slice 1 (20200101T08) done, 2/3: rows in 5, out 2, state keys out 1; 0.5 s'
    >>> format_slice({"slice": 0, "label": "a", "rows_out": 4, "seconds": 1.25, "job": [0, 1]}, 1, 2)
    'slice 0 (a) done, 1/2: rows out 4; 1.25 s (one Spark job wrote slices 0-1)'
    """
    parts = []
    if "rows_in" in one:
        parts.append(f"rows in {one['rows_in']}, out {one.get('rows_out')}")
    else:
        parts.append(f"rows out {one.get('rows_out')}")
    if "state_keys_out" in one:
        parts.append(f", state keys out {one['state_keys_out']}")
    text = f"slice {one.get('slice')} ({one.get('label')}) done, {done}/{total}: {''.join(parts)}; {one.get('seconds')} s"
    job = one.get("job") or []
    if len(job) > 1:
        text += f" (one Spark job wrote slices {job[0]}-{job[-1]})"
    return text


class _ConsoleStream:
    """A file-like object printing through a rich console (log lines above a live progress bar)."""

    def __init__(self, console: Any) -> None:
        self._console = console

    def write(self, text: str) -> int:
        self._console.print(text, end="", markup=False, highlight=False, soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        pass


class SliceProgress:
    """A backfill's per-slice progress: one log line per slice, a ``slice`` event in the run directory, and
    on a terminal a progress bar (``rich``, when installed; ``bar`` forces it on or off).

    Called with each slice's figures as it is written (the ``on_slice`` of the backfill functions).

    Example::

        with SliceProgress(3, recorder=None, bar=False) as progress:
            backfill_match_recognize(df, clause, start, end, 3, "out", on_slice=progress)
    """

    def __init__(self, total: int, recorder: Any = None, bar: bool | None = None) -> None:
        self.total = total
        self.done = 0
        #: The figures of the slices reported so far, in order.
        self.slices: list[dict[str, Any]] = []
        self._recorder = recorder
        self._want_bar = sys.stderr.isatty() if bar is None else bar
        self._progress: Any = None
        self._task: Any = None
        self._swapped: list[tuple[logging.StreamHandler, Any]] = []

    def __enter__(self) -> SliceProgress:
        if self._want_bar:
            try:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            except ImportError:  # no bar without rich: the log lines say the same
                return self
            console = Console(file=sys.stderr)
            self._progress = Progress(TextColumn("backfill"), BarColumn(), MofNCompleteColumn(), TextColumn("slices"),
                                      TimeElapsedColumn(), console=console, transient=False,
                                      redirect_stdout=False, redirect_stderr=False)
            self._task = self._progress.add_task("backfill", total=self.total)
            # the 'timeweave' log lines print above the bar instead of through it
            for handler in logging.getLogger("timeweave").handlers:
                if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stderr, sys.__stderr__):
                    self._swapped.append((handler, handler.setStream(_ConsoleStream(console))))
            self._progress.start()
        return self

    def __call__(self, one: Mapping[str, Any]) -> None:
        self.done += 1
        self.slices.append(dict(one))
        _log.info("%s", format_slice(one, self.done, self.total))
        if self._recorder is not None:
            self._recorder.event("slice", **dict(one))
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()
            for handler, stream in self._swapped:
                handler.setStream(stream)
            self._swapped.clear()
