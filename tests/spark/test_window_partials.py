"""Slice partials in the streaming window job (timeweave.spark.window_partials): with the packing step
pre-aggregating rows per key and slice, the job writes exactly the main, late and dead-letter rows and counts it
writes with every row reaching the operator; random rows with out-of-order, late and NULL-time rows, three runs
restarted from the checkpoint, then flushed."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from tests.helpers.window_random import random_rows
from timeweave.jobs.streaming import run_streaming
from timeweave.spark import window_partials as P
from timeweave.spark import window_streaming as W

SCHEMA = "id STRING, k STRING, ts TIMESTAMP, v BIGINT, p DECIMAL(10,2), flag BOOLEAN"
AGGREGATES = {"cnt": "COUNT(*)", "n_p": "COUNT(p)", "total": "SUM(p)", "sum_v": "SUM(v)", "avg_p": "AVG(p)",
              "avg_v": "AVG(v)", "hi": "MAX(v)", "lo_p": "MIN(p)", "lo_ts": "MIN(ts)", "hi_ts": "MAX(ts)"}
WINDOWS = {
    "tumble": {"function": "tumble", "size": "10 minutes"},
    "hop": {"function": "hop", "slide": "5 minutes", "size": "15 minutes"},
    "cumulate": {"function": "cumulate", "step": "5 minutes", "max_size": "20 minutes", "offset": "2 minutes"},
}


def _write_json(path: Path, rows: list[dict[str, Any]], extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)

    def value(v: Any) -> Any:
        return v.isoformat() if isinstance(v, datetime) else str(v) if isinstance(v, Decimal) else v

    path.write_text("".join(json.dumps({k: value(v) for k, v in r.items()}) + "\n" for r in rows) + extra)


def _run(spark, root: Path, window: str, rows: list[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    config = {
        "window": {**WINDOWS[window], "time": "ts", "keys": keys, "aggregates": AGGREGATES},
        "input": {"path": str(root / "in"), "format": "json", "schema": SCHEMA, "watermark_delay": "5 minutes"},
        "output": {"path": str(root / "out")},
        "checkpoint": str(root / "chk"),
    }
    runs = [rows[:25], rows[25:45], rows[45:]]
    metrics = []
    for i, run in enumerate(runs):
        _write_json(root / "in" / f"{i}.json", run, extra='{"id": "bad", "ts": "not a time"}\n' if i == 2 else "")
        metrics.append(run_streaming(config, spark, flush=i == 2))
    out = config["output"]["path"]
    late = spark.read.parquet(f"{out}_late").withColumn("missed_windows", F.to_json("missed_windows"))
    return {
        "main": sorted(map(repr, spark.read.parquet(out).collect())),
        "late": sorted(map(repr, late.collect())),
        "dead": sorted(map(repr, spark.read.parquet(f"{out}_dead_letter").collect())),
        "counts": [(m["rows_in"], m["rows_out"], m["late"], m["dead_letter"]) for m in metrics],
    }


@pytest.mark.spark
@pytest.mark.parametrize(("window", "keys", "seed"), [("tumble", ["k"], 3), ("hop", ["k"], 7), ("cumulate", [], 11)])
def test_partials_write_the_rows_of_the_row_by_row_operator(spark, tmp_path: Path, window: str, keys: list[str],
                                                            seed: int, monkeypatch) -> None:
    rows = random_rows(seed)
    plans: list[Any] = []
    real_plan = W.partial_plan

    def recording(*args: Any) -> Any:
        plans.append(real_plan(*args))
        return plans[-1]

    monkeypatch.setattr(W, "partial_plan", recording)
    with_partials = _run(spark, tmp_path / "partials", window, rows, keys)
    assert plans and all(isinstance(p, P.PartialPlan) for p in plans), "the query must pre-aggregate"
    monkeypatch.setattr(W, "partial_plan", lambda *args: None)
    row_by_row = _run(spark, tmp_path / "rows", window, rows, keys)
    assert with_partials["late"], "the random rows must have late ones"
    assert with_partials["dead"] and with_partials["main"]
    assert with_partials == row_by_row


def test_which_columns_pre_aggregate(spark) -> None:
    from pyspark.sql import types as T

    from timeweave.core.windows import session, tumble
    from timeweave.core.windows.calls import parse_aggregate

    schema = T.StructType.fromDDL("s STRING, d DOUBLE, p DECIMAL(10,2), t TIMESTAMP")
    plan = P.partial_plan(tumble(60_000), [parse_aggregate("m", "MIN(t)"), parse_aggregate("n", "COUNT(s)"),
                                           parse_aggregate("x", "SUM(p)")], schema, None)
    assert plan is not None and plan.decimal == (False, False, True) and plan.functions == ("MIN", "COUNT", "SUM")
    # a DOUBLE sum depends on the order of additions, a string MIN is left to the operator: rows one by one
    assert P.partial_plan(tumble(60_000), [parse_aggregate("x", "SUM(d)")], schema, None) is None
    assert P.partial_plan(tumble(60_000), [parse_aggregate("x", "MIN(s)")], schema, None) is None
    assert P.partial_plan(session(60_000), [parse_aggregate("x", "COUNT(*)")], schema, None) is None
