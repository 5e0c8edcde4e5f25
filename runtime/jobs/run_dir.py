"""A job's run directory: what a run did, recorded for the run report (``timeweave-job report RUN_DIR``).

A job given a run directory (``--run-dir DIR``, or ``run_dir=`` of :func:`timeweave.jobs.run`) writes there::

    <run_dir>/events.jsonl   one JSON object per line, appended (a restarted or repeated run appends)
    <run_dir>/config.json    the job config of the last run (rewritten whole)

Events (every one has ``event``, ``at`` -- the wall-clock time, ISO UTC -- and ``run``, an id per run)::

    run_started    job (streaming | backfill), operator (temporal_join | match_recognize), outputs {main, late,
                   dead_letter}, config, args (flush, heartbeat / start, end, slices, only)
    batch          a streaming micro-batch: timeweave.spark.progress.batch_figures (rows in/out, late,
                   dead_letter, watermark, lag_ms, state_rows, duration_ms)
    slice          a backfill slice: slice, label, start, end, rows_out, seconds (rows_in, state_keys_out
                   for MATCH_RECOGNIZE; job: the slices written by one Spark job, for temporal joins)
    run_finished   metrics (the job's TIMEWEAVE_METRICS)
    run_failed     error (one line)

Each event is one ``write`` of one line on a file opened in append mode (``O_APPEND``): lines of
concurrent writers never interleave, and a crash leaves at most a last partial line, which the
reader skips.  The run directory is a local path (the report reads it with the standard library and
pyarrow; no Spark).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EVENTS = "events.jsonl"
CONFIG = "config.json"

_log = logging.getLogger("timeweave.run_dir")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class RunRecorder:
    """Appends one run's events to ``<run_dir>/events.jsonl`` (thread-safe: listener threads record too).

    Example::

        recorder = RunRecorder("runs/orders", "streaming", "temporal_join", config, outputs)
        recorder.event("batch", batch_id=0, rows_in=10, rows_out=9)
        recorder.finished({"rows_out": 9})
    """

    def __init__(self, run_dir: str | Path, job: str, operator: str, config: Mapping[str, Any],
                 outputs: Mapping[str, str], args: Mapping[str, Any] | None = None) -> None:
        self.path = Path(run_dir)
        if "://" in str(run_dir) and not str(run_dir).startswith("file:"):
            raise ValueError(f"run dir {run_dir!r}: must be a local directory (the report reads it without Spark)")
        self.path.mkdir(parents=True, exist_ok=True)
        self.run = uuid.uuid4().hex[:12]
        self._lock = threading.Lock()
        self._seen_batches: set[tuple[Any, int]] = set()
        config_text = json.dumps(config, indent=2, sort_keys=True, default=str)
        tmp = self.path / f".{CONFIG}.{self.run}.tmp"
        tmp.write_text(config_text + "\n", encoding="utf-8")
        os.replace(tmp, self.path / CONFIG)  # whole or not at all
        self.event("run_started", job=job, operator=operator, outputs=dict(outputs), config=config,
                   args=dict(args or {}))

    def event(self, kind: str, **fields: Any) -> None:
        """Append one event (one line, one ``write``)."""
        record = {"event": kind, "at": _now(), "run": self.run, **fields}
        line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path / EVENTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)

    def batch(self, figures: Mapping[str, Any]) -> bool:
        """Record a micro-batch's figures once (the listener and the final sweep may both report it); True if new."""
        key = (figures.get("run_id"), int(figures["batch_id"]))
        with self._lock:
            if key in self._seen_batches:
                return False
            self._seen_batches.add(key)
        self.event("batch", **figures)
        return True

    def finished(self, metrics: Mapping[str, Any]) -> None:
        self.event("run_finished", metrics=dict(metrics))

    def failed(self, error: BaseException) -> None:
        text = str(error).strip().splitlines()
        self.event("run_failed", error=f"{type(error).__name__}: {text[0] if text else ''}")


def run_recorded(recorder: RunRecorder | None, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``'s metrics, recorded as ``run_finished`` (or its error as ``run_failed``, then re-raised).

    With no recorder (no ``--run-dir``) it only runs ``run``:

    >>> run_recorded(None, lambda: {"rows_out": 3})
    {'rows_out': 3}
    """
    try:
        metrics = run()
    except BaseException as error:
        if recorder is not None:
            recorder.failed(error)
        raise
    if recorder is not None:
        recorder.finished(metrics)
    return metrics


def read_events(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    """The events of ``<run_dir>/events.jsonl`` in order; a partial or unreadable line (a crash mid-write) is skipped.

    Raises FileNotFoundError naming the file when the run directory has none.
    """
    path = Path(run_dir) / EVENTS
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no events file (run the job with --run-dir {run_dir})")
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                _log.warning("%s line %d: not JSON (a run stopped mid-write?), skipped", path, number)
                continue
            if isinstance(record, dict) and "event" in record:
                yield record


__all__ = ["CONFIG", "EVENTS", "RunRecorder", "read_events"]
