"""One scan per source (runtime/jobs/streaming.py, spark/host/stream.keyed_packs, the temporal join's input
projection): an operator's CSV / JSON source is read once per micro-batch, its malformed records riding in the
operator's input as dead letters; a checkpoint written by a query that scanned the source twice keeps that plan
(Spark refuses a changed number of sources), and both give the same outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.streaming import StreamingQueryListener

from timeweave.jobs import streaming as S
from timeweave.jobs.streaming import ONE_SCAN_MARK, run_streaming

pytestmark = pytest.mark.spark

SCHEMA = "id STRING, k STRING, ts TIMESTAMP, v BIGINT"


class _InputRows(StreamingQueryListener):
    """Spark's numInputRows of every micro-batch (a source scanned twice counts its rows twice)."""

    def __init__(self) -> None:
        self.rows: list[int] = []

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        self.rows.append(event.progress.numInputRows)

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass


def _write(path: Path, first: int, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": f"r{i}", "k": "ab"[i % 2], "ts": f"2024-01-01T00:{i:02d}:00", "v": i})
             for i in range(first, first + n)]
    lines.append(json.dumps({"id": f"bad{first}", "k": "a", "ts": "not a time", "v": 1}))  # malformed
    lines.append(json.dumps({"id": f"null{first}", "k": "a", "ts": None, "v": 1}))  # a NULL event time
    path.write_text("\n".join(lines) + "\n")


def _config(root: Path) -> dict[str, Any]:
    return {
        "window": {"function": "tumble", "size": "10 minutes", "time": "ts", "keys": ["k"],
                   "aggregates": {"cnt": "COUNT(*)", "total": "SUM(v)"}},
        "input": {"path": str(root / "in"), "format": "json", "schema": SCHEMA, "watermark_delay": "1 minute"},
        "output": {"path": str(root / "out")},
        "checkpoint": str(root / "chk"),
    }


def _outputs(spark, root: Path) -> tuple[list[str], list[str]]:
    out = str(root / "out")
    main = sorted(map(repr, spark.read.parquet(out).collect()))
    dead = sorted(map(repr, spark.read.parquet(f"{out}_dead_letter").select("side", "reason", "row").collect()))
    return main, dead


def _two_runs(spark, root: Path, listener: _InputRows) -> list[dict[str, Any]]:
    config = _config(root)
    _write(root / "in" / "a.json", 0, 20)
    first = run_streaming(config, spark)
    _write(root / "in" / "b.json", 20, 20)
    second = run_streaming(config, spark, flush=True)  # restarted from the checkpoint
    return [first, second]


def test_one_scan_and_a_two_scan_checkpoint_give_the_same_rows(spark, tmp_path: Path, monkeypatch) -> None:
    listener = _InputRows()
    spark.streams.addListener(listener)
    try:
        metrics = _two_runs(spark, tmp_path / "one", listener)
        spark.sparkContext._jvm.java.lang.Thread.sleep(500)  # the listener bus drains
        one_scan_rows = list(listener.rows)
        assert (tmp_path / "one" / "chk" / ONE_SCAN_MARK).is_dir()

        # a checkpoint of the earlier plan: its first run scanned the source twice and left no mark
        listener.rows.clear()
        real = S._one_scan
        monkeypatch.setattr(S, "_one_scan", lambda spark, checkpoint, name=ONE_SCAN_MARK: False)
        config = _config(tmp_path / "two")
        _write(tmp_path / "two" / "in" / "a.json", 0, 20)
        older = [run_streaming(config, spark)]
        monkeypatch.setattr(S, "_one_scan", real)
        _write(tmp_path / "two" / "in" / "b.json", 20, 20)
        older.append(run_streaming(config, spark, flush=True))  # resumes with its own plan
        spark.sparkContext._jvm.java.lang.Thread.sleep(500)
        two_scan_rows = list(listener.rows)
    finally:
        spark.streams.removeListener(listener)
    assert not (tmp_path / "two" / "chk" / ONE_SCAN_MARK).exists()
    # 22 records per file (20 rows, one malformed, one NULL time), the control source's end-of-input mark once
    assert sum(one_scan_rows) == 2 * 22 + 1
    assert sum(two_scan_rows) == 2 * 2 * 22 + 1
    assert _outputs(spark, tmp_path / "one") == _outputs(spark, tmp_path / "two")
    main, dead = _outputs(spark, tmp_path / "one")
    assert len(main) == 8 and len(dead) == 4  # 4 windows x 2 keys; 2 malformed records, 2 NULL times
    assert sum("bad" in d and "NULL event time" not in d for d in dead) == 2
    assert sum("NULL event time" in d for d in dead) == 2
    counts = [(m["rows_in"], m["dead_letter"]) for m in metrics]
    assert counts == [(m["rows_in"], m["dead_letter"]) for m in older] == [(22, 2), (22, 2)]


# ---------------------------------------------------------------------------------------------------------------
# The temporal join: both sides' malformed records in its one input projection
# ---------------------------------------------------------------------------------------------------------------
def _write_join(root: Path, name: str, first: int, n: int) -> int:
    """Orders ``first..first+n`` (one malformed, one NULL time) and two rate versions per key (one malformed
    rate); the number of records written."""
    orders = [json.dumps({"id": f"o{i}", "k": "ab"[i % 2], "ts": f"2024-01-01T00:{i:02d}:30"}) for i in range(first, first + n)]
    orders += [json.dumps({"id": f"bad{first}", "k": "a", "ts": "soon"}), json.dumps({"id": f"null{first}", "k": "b", "ts": None})]
    rates = [json.dumps({"k": k, "rate": first + j, "u": f"2024-01-01T00:{first + 10 * j:02d}:00"}) for k in "ab" for j in range(2)]
    rates.append(json.dumps({"k": "a", "rate": "high", "u": f"2024-01-01T00:{first:02d}:05"}))
    for side, lines in (("orders", orders), ("rates", rates)):
        (root / side).mkdir(parents=True, exist_ok=True)
        (root / side / name).write_text("\n".join(lines) + "\n")
    return len(orders) + len(rates)


def _join_config(root: Path) -> dict[str, Any]:
    return {
        "left": {"path": str(root / "orders"), "format": "json", "schema": "id STRING, k STRING, ts TIMESTAMP",
                 "watermark_delay": "1 minute"},
        "right": {"path": str(root / "rates"), "format": "json", "schema": "k STRING, rate BIGINT, u TIMESTAMP",
                  "watermark_delay": "1 minute"},
        "versioned": {"key": ["k"], "time": "u"},
        "join": {"left_time": "ts", "left_key": ["k"]},
        "output": {"path": str(root / "out")},
        "checkpoint": str(root / "chk"),
    }


def _join_runs(spark, root: Path) -> tuple[list[dict[str, Any]], int]:
    written = _write_join(root, "a.json", 0, 20)
    first = run_streaming(_join_config(root), spark)
    written += _write_join(root, "b.json", 20, 20)
    return [first, run_streaming(_join_config(root), spark, flush=True)], written


def _join_outputs(spark, root: Path) -> tuple[list[str], list[str]]:
    main, dead = _outputs(spark, root)
    assert len(main) == 40 and len(dead) == 6  # 2 x 20 orders joined; 4 malformed records, 2 NULL times
    assert sum("bad" in d or "high" in d for d in dead) == 4
    return main, dead


def test_the_temporal_join_scans_each_source_once(spark, tmp_path: Path, monkeypatch) -> None:
    from timeweave.jobs import temporal_join

    listener = _InputRows()
    spark.streams.addListener(listener)
    try:
        metrics, written = _join_runs(spark, tmp_path / "one")
        spark.sparkContext._jvm.java.lang.Thread.sleep(500)
        one_scan_rows = list(listener.rows)

        # a checkpoint of the earlier plan: both sources scanned twice
        listener.rows.clear()
        monkeypatch.setattr(S, "_one_scan", lambda spark, checkpoint, name=ONE_SCAN_MARK: False)
        older, _ = _join_runs(spark, tmp_path / "two")
        spark.sparkContext._jvm.java.lang.Thread.sleep(500)
        two_scan_rows = list(listener.rows)
    finally:
        spark.streams.removeListener(listener)
    assert (tmp_path / "one" / "chk" / temporal_join.ONE_SCAN_MARK).is_dir()
    # the control source's end-of-input mark: once in each side's branch (it moves both watermarks)
    assert sum(one_scan_rows) == written + 2
    assert sum(two_scan_rows) == 2 * written + 2
    assert _join_outputs(spark, tmp_path / "one") == _join_outputs(spark, tmp_path / "two")
    counts = [(m["rows_in_left"], m["rows_in_right"], m["dead_letter"]) for m in metrics]
    assert counts == [(m["rows_in_left"], m["rows_in_right"], m["dead_letter"]) for m in older] == [(22, 5, 3)] * 2


def test_a_temporal_join_checkpoint_of_the_one_input_mark_keeps_its_two_scan_plan(spark, tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """Before the temporal join took its sources' malformed records, its new checkpoints carried the one-input
    operators' mark with a two-scan plan: such a checkpoint resumes with that plan."""
    from timeweave.jobs import temporal_join
    from timeweave.spark import temporal_join_streaming

    root = tmp_path / "old"
    _write_join(root, "a.json", 0, 20)
    with monkeypatch.context() as old_build:
        old_build.delattr(temporal_join, "ONE_SCAN_MARK")
        old_build.setattr(temporal_join_streaming, "take_malformed", lambda df: (df, None, None))
        run_streaming(_join_config(root), spark)
    assert (root / "chk" / ONE_SCAN_MARK).is_dir()
    _write_join(root, "b.json", 20, 20)
    run_streaming(_join_config(root), spark, flush=True)  # would fail on a changed number of sources
    assert not (root / "chk" / temporal_join.ONE_SCAN_MARK).exists()
    _join_outputs(spark, root)
