"""Jobs record their runs for the run report (``--run-dir``): one event per micro-batch / slice, the config,
the metrics; the progress listener reports the same per-batch figures; backfills report every slice as
it is written, for both operators (issue 18: "progress and logs", "a run report")."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from timeweave.jobs.backfill import run_backfill
from timeweave.jobs.report import build_report, load_runs
from timeweave.jobs.run_dir import read_events
from timeweave.jobs.streaming import run_streaming
from timeweave.spark.progress import TimeweaveProgressListener

pytestmark = pytest.mark.spark


def _join_config(tmp_path: Path) -> dict[str, Any]:
    """Two left files (one row with a NULL key: output unmatched by the LEFT join), one right file with a
    NULL-time row (a dead letter)."""
    (tmp_path / "left").mkdir()
    (tmp_path / "right").mkdir()
    (tmp_path / "left" / "a.csv").write_text("id,currency,order_time\n" + "".join(
        f"o{i},{'EUR' if i % 2 else 'USD'},2020-01-01 {10 + i:02d}:00:00\n" for i in range(6)))
    (tmp_path / "left" / "b.csv").write_text("id,currency,order_time\nx1,,2020-01-01 12:30:00\n"
                                             "o9,EUR,2020-01-01 20:00:00\n")
    (tmp_path / "right" / "a.csv").write_text("currency,rate,update_time\nEUR,1.1,2020-01-01 09:00:00\n"
                                              "USD,1.0,2020-01-01 09:00:00\nEUR,1.2,2020-01-01 13:00:00\n"
                                              "EUR,1.3,\n")
    return {
        "left": {"path": str(tmp_path / "left"), "format": "csv",
                 "options": {"header": "true", "maxFilesPerTrigger": "1"},
                 "schema": "id STRING, currency STRING, order_time TIMESTAMP"},
        "right": {"path": str(tmp_path / "right"), "format": "csv", "options": {"header": "true"},
                  "schema": "currency STRING, rate DOUBLE, update_time TIMESTAMP"},
        "versioned": {"key": "currency", "time": "update_time"},
        "join": {"left_time": "order_time", "how": "left"},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
        "trigger": {"available_now": True},
    }


def test_streaming_run_dir_and_listener(spark, tmp_path: Path) -> None:
    config = _join_config(tmp_path)
    seen: list[dict] = []
    listener = TimeweaveProgressListener(seen.append)  # a door user's own listener: Spark's figures, no sink counts
    spark.streams.addListener(listener)
    try:
        metrics = run_streaming(config, spark, flush=True, run_dir=tmp_path / "run")
        deadline = time.monotonic() + 20  # Spark delivers listener events asynchronously
        while len({f["batch_id"] for f in seen}) < metrics["batches"] and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        spark.streams.removeListener(listener)
    events = list(read_events(tmp_path / "run"))
    assert events[0]["event"] == "run_started" and events[-1]["event"] == "run_finished"
    assert json.loads((tmp_path / "run" / "config.json").read_text()) == config
    batches = [e for e in events if e["event"] == "batch"]
    counted = [b for b in batches if b["rows_out"] is not None]
    assert len(counted) == metrics["batches"] >= 2  # one event per micro-batch the writer counted, once each
    assert len({(b["run_id"], b["batch_id"]) for b in batches}) == len(batches)
    assert sum(b["rows_out"] for b in counted) == metrics["rows_out"] == 8
    assert sum(b["dead_letter"] for b in counted) == metrics["dead_letter"] == 1
    assert sum(b["rows_in_left"] for b in counted) == metrics["rows_in_left"] == 8
    assert batches[-1]["watermark"] == "+10000-01-01T00:00:00.000Z" and batches[-1]["lag_ms"] is None
    # some batch had a real watermark: its lag is the trigger time minus it (the data is from 2020)
    assert any(b["lag_ms"] and b["lag_ms"] > 5 * 365 * 86_400_000 for b in batches)
    assert any(b["state_rows"] > 0 for b in batches)
    assert events[-1]["metrics"]["rows_out"] == 8
    # the listener saw the same batches with Spark's own figures
    mine = {(f["run_id"], f["batch_id"]): f for f in seen}
    for b in batches:
        f = mine[(b["run_id"], b["batch_id"])]
        assert (f["watermark"], f["state_rows"], f["rows_out"]) == (b["watermark"], b["state_rows"], None)
    # a restart appends a second run to the same file
    run_streaming(config, spark, flush=True, run_dir=tmp_path / "run")
    runs = load_runs(tmp_path / "run")
    assert [r.job for r in runs] == ["streaming", "streaming"] and runs[1].finished is not None
    page = build_report(tmp_path / "run")
    assert 'id="total-rows_out">8<' in page and 'id="total-dead_letter">1<' in page  # the restart added none
    assert page.count("data:image/png;base64,") >= 3  # rows, watermark/lag, the per-key timeline


def _match_config(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "ticks").mkdir()
    rows = [f"{sym},2024-01-01 {h:02d}:{m:02d}:00,{p}" for sym in ("A", "B") for h in range(0, 24, 4)
            for m, p in ((0, 10), (10, 12), (20, 9))]
    (tmp_path / "ticks" / "t.csv").write_text("symbol,rowtime,price\n" + "\n".join(rows) + "\nA,,5\n")
    return {
        "match_recognize": {"clause": "PARTITION BY symbol ORDER BY rowtime MEASURES FIRST(U.rowtime) AS start_at, "
                                      "LAST(U.price) AS top ONE ROW PER MATCH PATTERN (U) DEFINE U AS U.price > 11"},
        "input": {"path": str(tmp_path / "ticks"), "format": "csv", "options": {"header": "true"},
                  "schema": "symbol STRING, rowtime TIMESTAMP, price DOUBLE"},
        "output": {"path": str(tmp_path / "mr")},
    }


@pytest.mark.parametrize("operator", ["temporal_join", "match_recognize"])
def test_backfill_reports_every_slice(spark, tmp_path: Path, operator: str, caplog) -> None:
    if operator == "temporal_join":
        config, start, end = _join_config(tmp_path), "2020-01-01T00:00", "2020-01-02T00:00"
        kw: dict[str, Any] = {"slices_per_job": 1}
    else:
        config, start, end = _match_config(tmp_path), "2024-01-01T00:00", "2024-01-02T00:00"
        kw = {}
    logger = logging.getLogger("timeweave.backfill")
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO, logger="timeweave.backfill"):
            metrics = run_backfill(config, start, end, slices=3, spark=spark, run_dir=tmp_path / "run",
                                   progress_bar=False, **kw)
    finally:
        logger.removeHandler(caplog.handler)
    slices = [e for e in read_events(tmp_path / "run") if e["event"] == "slice"]
    assert [s["slice"] for s in slices] == [0, 1, 2] == [s["slice"] for s in metrics["per_slice"]]
    assert sum(s["rows_out"] for s in slices) == metrics["rows_out"] > 0
    assert all(s["seconds"] > 0 for s in slices)
    lines = {id(r): r.getMessage() for r in caplog.records if r.name == "timeweave.backfill"}.values()
    assert sum(line.startswith("slice ") and " done, " in line for line in lines) == 3
    page = build_report(tmp_path / "run")
    assert f'id="total-rows_out">{metrics["rows_out"]}<' in page
    assert f'id="total-dead_letter">{metrics["dead_letter"]}<' in page and metrics["dead_letter"] == 1
    assert 'id="slices"' in page and 'id="timeline"' in page
    if operator == "match_recognize":
        assert f'id="matches-count">{metrics["rows_out"]}<' in page
    else:
        assert 'id="output-count">8<' in page and 'id="matched-count">7<' in page  # x1 (NULL key): unmatched


def test_streaming_match_recognize_run_dir(spark, tmp_path: Path) -> None:
    config = _match_config(tmp_path)
    metrics = run_streaming(config, spark, flush=True, run_dir=tmp_path / "run")
    batches = [e for e in read_events(tmp_path / "run") if e["event"] == "batch"]
    counted = [b for b in batches if b["rows_out"] is not None]
    assert len(counted) == metrics["batches"]
    assert sum(b["rows_out"] for b in counted) == metrics["rows_out"] == 12  # one match per price peak
    assert sum(b["rows_in"] for b in counted) == metrics["rows_in"] == 37
    assert sum(b["dead_letter"] for b in counted) == metrics["dead_letter"] == 1
    page = build_report(tmp_path / "run")
    assert 'id="matches-count">12<' in page and "in 2 partition(s) (by symbol)" in page
