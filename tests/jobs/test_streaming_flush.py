"""``--flush`` / ``heartbeat`` on a bounded streaming run read every available file before the watermark moves.

Regression (issue 20): with ``maxFilesPerTrigger`` 1 the end-of-input heartbeat was read in the first
micro-batch, its watermark passed every row, and the files read in later micro-batches went to the late
output (190,000 of 200,020 rows in the probe).  Several small files per side make several micro-batches.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from timeweave.jobs.streaming import run_streaming

pytestmark = pytest.mark.spark

ONE_FILE = {"header": "true", "maxFilesPerTrigger": "1"}


_MTIME = itertools.count(1_600_000_000, 60)


def _in_order(path: Path) -> None:
    """Give ``path`` a modification time after every file written before it.

    The file source reads the oldest files first (``maxFilesPerTrigger``); files written within one
    clock tick share a time and are read in any order, and a later hour's file read first would make
    the earlier one late by the data's own watermark, which is not what these tests are about.
    """
    when = next(_MTIME)
    os.utime(path, (when, when))


def _write(path: Path, header: str, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([header, *lines]) + "\n")
    _in_order(path)


def _join_config(tmp_path: Path, trigger: dict[str, Any]) -> dict[str, Any]:
    """Four left files and two right files over one day; every left row has a version to join."""
    for f in range(4):
        _write(tmp_path / "left" / f"part-{f}.csv", "id,currency,order_time",
               [f"o{f}{i},{'EUR' if i % 2 else 'USD'},2020-01-01 {10 + f:02d}:{i * 5:02d}:00" for i in range(6)])
    _write(tmp_path / "right" / "part-0.csv", "currency,rate,update_time",
           ["EUR,1.1,2020-01-01 09:00:00", "USD,1.0,2020-01-01 09:00:00"])
    _write(tmp_path / "right" / "part-1.csv", "currency,rate,update_time",
           ["EUR,1.2,2020-01-01 11:30:00", "USD,0.9,2020-01-01 12:10:00"])
    return {
        "left": {"path": str(tmp_path / "left"), "format": "csv", "options": ONE_FILE,
                 "schema": "id STRING, currency STRING, order_time TIMESTAMP"},
        "right": {"path": str(tmp_path / "right"), "format": "csv", "options": ONE_FILE,
                  "schema": "currency STRING, rate DOUBLE, update_time TIMESTAMP"},
        "versioned": {"key": "currency", "time": "update_time"},
        "join": {"left_time": "order_time", "how": "left"},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
        "trigger": trigger,
    }


def _door_rows(spark, config: dict[str, Any]) -> list[tuple]:
    from timeweave import temporal_join

    left = spark.read.schema(config["left"]["schema"]).option("header", "true").csv(config["left"]["path"])
    right = spark.read.schema(config["right"]["schema"]).option("header", "true").csv(config["right"]["path"])
    batch = temporal_join(left, right, "order_time", key="currency", time="update_time", how="left", validity=False)
    return sorted((r["id"], r["rate"]) for r in batch.collect())


@pytest.mark.parametrize("trigger", [{"available_now": True}, {"processing_time": "1 second"}],
                         ids=["available_now", "processing_time"])
def test_flush_reads_every_file_before_the_end_of_input(spark, tmp_path: Path, trigger: dict, caplog) -> None:
    config = _join_config(tmp_path, trigger)
    logger = logging.getLogger("timeweave.streaming")
    logger.addHandler(caplog.handler)  # the CLI's 'timeweave' logger does not propagate to the root
    try:
        with caplog.at_level(logging.INFO, logger="timeweave.streaming"):
            metrics = run_streaming(config, spark, flush=True)
    finally:
        logger.removeHandler(caplog.handler)
    # One log line per micro-batch: the data batches with their counts, the no-data ones with the watermark.
    # A record reaches caplog twice when the logger also propagates (no CLI configured it in this process).
    records = {id(r): r for r in caplog.records if r.name == "timeweave.streaming"}.values()
    lines = [r.getMessage() for r in records]
    assert sum(" rows in " in line for line in lines) == metrics["batches"] >= 4
    assert lines[-1].startswith("batch ") and "watermark +10000-01-01" in lines[-1]
    assert metrics["late"] == 0 and metrics["dead_letter"] == 0
    assert (metrics["rows_in_left"], metrics["rows_in_right"]) == (24, 4)
    main = sorted((r["id"], r["rate"]) for r in spark.read.parquet(config["output"]["path"]).collect())
    assert main == _door_rows(spark, config)  # the DataFrame door's rows: none lost, none doubled
    assert metrics["rows_out"] == 24 and metrics["flushed"] is True
    assert metrics["watermark"] == "+10000-01-01T00:00:00.000Z"  # the end of input: past every TIMESTAMP


def test_heartbeat_applies_after_the_available_files(spark, tmp_path: Path) -> None:
    """A heartbeat moves the watermark after the files there are read: rows before it are joined, not late."""
    config = _join_config(tmp_path, {"available_now": True})
    metrics = run_streaming(config, spark, heartbeat="2020-01-01T14:00:00")
    assert metrics["late"] == 0
    assert metrics["watermark"] == "2020-01-01T14:00:00.000Z"
    assert metrics["rows_out"] == 24  # every left row is before 14:00: all emitted


def test_match_recognize_flush_reads_every_file(spark, tmp_path: Path) -> None:
    from tests.helpers.mr_random import CLAUSES, SCHEMA, canonical, random_events
    from timeweave.spark.match_recognize import match_recognize

    rows = random_events(21, n=60)
    rows.sort(key=lambda r: r["t"])  # in time order across files: no row is late by itself
    for f in range(4):
        path = tmp_path / "in" / f"part-{f}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, default=lambda v: v.isoformat()) + "\n" for r in rows[f * 15:(f + 1) * 15]))
        _in_order(path)
    clause = CLAUSES["one-row-greedy-avg"]
    config = {
        "match_recognize": {"clause": clause},
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": SCHEMA,
                  "options": {"maxFilesPerTrigger": "1"}},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
    }
    metrics = run_streaming(config, spark, flush=True)
    assert metrics["late"] == 0 and metrics["rows_in"] == 60
    batch = match_recognize(spark.read.schema(SCHEMA).json(str(tmp_path / "in")), clause)
    main = spark.read.parquet(config["output"]["path"])
    assert canonical(main.collect(), batch.columns) == canonical(batch.collect(), batch.columns)
