"""The run directory's events file, the per-batch figures and the per-slice progress, without a JVM."""

from __future__ import annotations

import doctest
import importlib
import json
import logging
import sys
import threading
from pathlib import Path

import pytest

from timeweave.jobs.backfill import SliceProgress, _ConsoleStream
from timeweave.jobs.cli import configure_logging, parser
from timeweave.jobs.report import load_runs
from timeweave.jobs.run_dir import RunRecorder, read_events
from timeweave.spark.progress import batch_figures, format_figures


@pytest.mark.parametrize("name", ["timeweave.spark.progress", "timeweave.jobs.run_dir", "timeweave.jobs.report",
                                  "timeweave.jobs.backfill"])
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_events_from_threads_are_whole_lines_and_a_restart_appends(tmp_path: Path) -> None:
    first = RunRecorder(tmp_path, "streaming", "temporal_join", {"output": {"path": "o"}}, {"main": "o"})

    def batches(offset: int) -> None:
        for i in range(200):
            first.event("slice", slice=offset + i, payload="x" * 500)

    threads = [threading.Thread(target=batches, args=(1000 * t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first.finished({"rows_out": 1})
    second = RunRecorder(tmp_path, "streaming", "temporal_join", {"output": {"path": "o2"}}, {"main": "o2"})
    second.failed(RuntimeError("boom\nsecond line"))
    with (tmp_path / "events.jsonl").open("ab") as f:
        f.write(b'{"event": "batch", "run": ')  # a crash mid-write: the reader skips the partial line
    events = list(read_events(tmp_path))
    assert len(events) == 1 + 800 + 1 + 1 + 1
    assert sorted(e["slice"] for e in events if e["event"] == "slice") == sorted(
        1000 * t + i for t in range(4) for i in range(200))
    runs = load_runs(tmp_path)
    assert [r.run for r in runs] == [first.run, second.run]
    assert runs[0].metrics == {"rows_out": 1} and runs[1].failed["error"] == "RuntimeError: boom"
    assert json.loads((tmp_path / "config.json").read_text()) == {"output": {"path": "o2"}}  # the last run's


def test_a_batch_is_recorded_once(tmp_path: Path) -> None:
    recorder = RunRecorder(tmp_path, "streaming", "match_recognize", {}, {})
    figures = {"batch_id": 3, "run_id": "r1", "rows_out": 2}
    assert recorder.batch(figures) is True
    assert recorder.batch(dict(figures)) is False
    assert recorder.batch({**figures, "run_id": "r2"}) is True  # a restart's run numbers batches on
    assert sum(e["event"] == "batch" for e in read_events(tmp_path)) == 2


def test_figures_of_spark_progress() -> None:
    progress = {
        "batchId": 5, "runId": "abc", "timestamp": "2026-01-01T00:00:10.000Z", "numInputRows": 9,
        "eventTime": {"watermark": "2026-01-01T00:00:00.000Z"},
        "stateOperators": [{"numRowsTotal": 4}, {"numRowsTotal": 6}], "durationMs": {"triggerExecution": 12},
    }
    f = batch_figures(progress, {"rows_in_left": 5, "rows_in_right": 2, "rows_out": 3, "late": 1, "dead_letter": 1})
    assert (f["rows_in"], f["rows_in_left"], f["rows_out"], f["late"], f["dead_letter"]) == (7, 5, 3, 1, 1)
    assert (f["lag_ms"], f["state_rows"], f["duration_ms"], f["batch_id"], f["run_id"]) == (10_000, 10, 12, 5, "abc")
    assert "rows in 5 left / 2 right, out 3, late 1, dead letter 1" in format_figures(f)
    # no watermark yet (Spark reports the epoch) and the flush's end of input: no lag
    start = batch_figures({**progress, "eventTime": {"watermark": "1970-01-01T00:00:00.000Z"}})
    assert (start["watermark"], start["lag_ms"], start["rows_out"], start["rows_in"]) == (None, None, None, 9)
    end = batch_figures({**progress, "eventTime": {"watermark": "9999-12-31T23:59:59.999Z"}})
    assert (end["watermark"], end["lag_ms"]) == ("9999-12-31T23:59:59.999Z", None)


def test_slice_progress_logs_records_and_draws_a_bar(tmp_path: Path, capsys) -> None:
    configure_logging("INFO")
    handler = next(h for h in logging.getLogger("timeweave").handlers if getattr(h, "_timeweave_cli", False))
    # the CLI's handler writes to stderr, where the bar is drawn (set directly: an earlier test's captured
    # stream may be closed, and setStream flushes it)
    saved, handler.stream = handler.stream, sys.stderr
    recorder = RunRecorder(tmp_path, "backfill", "match_recognize", {}, {})
    try:
        for bar in (False, True):
            with SliceProgress(2, recorder, bar=bar) as progress:
                progress({"slice": 0, "label": "a", "rows_in": 3, "rows_out": 1, "state_keys_out": 1, "seconds": 0.1})
                if bar:
                    assert isinstance(handler.stream, _ConsoleStream)  # log lines print above the bar
                progress({"slice": 1, "label": "b", "rows_in": 2, "rows_out": 2, "state_keys_out": 0, "seconds": 0.2})
            assert handler.stream is sys.stderr  # handed back
    finally:
        handler.stream = saved
    err = capsys.readouterr().err
    assert err.count("slice 1 (b) done, 2/2: rows in 2, out 2, state keys out 0; 0.2 s") == 2  # a line in both modes
    assert "2/2 slices" in err  # the bar
    assert [e["slice"] for e in read_events(tmp_path) if e["event"] == "slice"] == [0, 1, 0, 1]


def test_cli_run_dir_and_report_arguments() -> None:
    p = parser()
    assert p.parse_args(["streaming", "--config", "j.json", "--run-dir", "runs/a"]).run_dir == "runs/a"
    assert p.parse_args(["backfill", "--config", "j.json", "--start", "a", "--end", "b", "--run-dir", "r"]).run_dir == "r"
    args = p.parse_args(["report", "runs/a", "--output", "x.html"])
    assert (args.kind, args.run_dir, args.output) == ("report", "runs/a", "x.html")
