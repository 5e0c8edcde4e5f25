"""Throughput of the streaming MATCH_RECOGNIZE job (availableNow + flush) on ticker-like data.

    .venv/bin/python bench/bench_match_recognize_streaming.py [--rows 100000] [--symbols 100] [--runs 2]
        [--files 2] [--price-max 40] [--batch-door]

Generates ``../shared/bench/gen_data.py``-shaped ticker rows (``symbol, rowtime, price, tax``; symbols
round-robin, one row every 10 ms, uniform prices, seed 42) as parquet files in a temp directory, then
runs the streaming job ``--runs`` times on fresh checkpoints in one SparkSession (the first run is
cold) with the Flink benchmark's query (``PATTERN (A+ B) DEFINE A AS AVG(A.price) < 15``) and prints
one JSON line per run: rows in/out, seconds (query start to stop, outputs written), rows/s, the CPU
seconds of the driver, JVM and Python workers (independent of other work on a shared machine) and the
load average.  ``--batch-door`` also times the batch DataFrame door on the same files and checks that
both produced the same number of rows.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_match_recognize import CLAUSE
from bench.bench_streaming import tree_cpu_seconds

SCHEMA = "symbol STRING, rowtime TIMESTAMP, price BIGINT, tax BIGINT"


def generate(root: Path, rows: int, symbols: int, price_max: int, files: int) -> None:
    """Ticker rows as gen_data.py writes them, split round-robin into ``files`` parquet files."""
    rnd = random.Random(42)
    prices, taxes = [], []
    for _ in range(rows):
        prices.append(rnd.randint(1, price_max))
        taxes.append(rnd.randint(1, 3))
    index = np.arange(rows, dtype=np.int64)
    frame = pd.DataFrame({
        "symbol": [f"S{i % symbols:02d}" for i in range(rows)],
        "rowtime": np.datetime64("2024-01-01T00:00:00", "ms") + index * 10,
        "price": np.array(prices, dtype=np.int64),
        "tax": np.array(taxes, dtype=np.int64),
    })
    (root / "ticker").mkdir(parents=True)
    for i in range(files):
        frame.iloc[i::files].to_parquet(root / "ticker" / f"part-{i}.parquet", index=False,
                                        coerce_timestamps="us", allow_truncated_timestamps=True)


def config(root: Path, run: int) -> dict:
    return {
        "match_recognize": {"clause": CLAUSE},
        "input": {"path": str(root / "ticker"), "format": "parquet", "schema": SCHEMA},
        "output": {"path": str(root / f"out{run}")},
        "checkpoint": str(root / f"chk{run}"),
        "trigger": {"available_now": True},
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--symbols", type=int, default=100)
    p.add_argument("--price-max", type=int, default=40)
    p.add_argument("--files", type=int, default=2)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--shuffle-partitions", default="4")
    p.add_argument("--batch-door", action="store_true", help="also time the batch DataFrame door")
    args = p.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("TIMEWEAVE_SHUFFLE_PARTITIONS", args.shuffle_partitions)
    root = Path(tempfile.mkdtemp(prefix="tw-bench-mr-stream-"))
    generate(root, args.rows, args.symbols, args.price_max, args.files)
    from runtime.jobs.session import get_session
    from runtime.jobs.streaming import run_streaming

    t0 = time.monotonic()
    spark = get_session()
    session_seconds = time.monotonic() - t0
    for run in range(args.runs):
        cpu_before = tree_cpu_seconds(os.getpid())
        load_before = os.getloadavg()[0]
        metrics = run_streaming(config(root, run), spark, flush=True)
        cpu = tree_cpu_seconds(os.getpid()) - cpu_before
        print(json.dumps({
            "run": run, "cold": run == 0, "session_start_s": round(session_seconds, 1) if run == 0 else 0,
            "rows_in": metrics["rows_in"], "rows_out": metrics["rows_out"], "late": metrics["late"],
            "seconds": metrics["seconds"], "rows_per_s": round(metrics["rows_in"] / metrics["seconds"]),
            "cpu_s": round(cpu, 1), "rows_per_cpu_s": round(metrics["rows_in"] / cpu) if cpu else None,
            "batches": metrics["batches"], "load1_before": round(load_before, 1),
            "load1_after": round(os.getloadavg()[0], 1), "durations_ms": metrics["durations_ms"],
        }), flush=True)
    if args.batch_door:
        from runtime.spark.match_recognize import match_recognize

        ticker = spark.read.schema(SCHEMA).parquet(str(root / "ticker"))
        cpu_before = tree_cpu_seconds(os.getpid())
        start = time.monotonic()
        matches = match_recognize(ticker, CLAUSE).count()
        seconds = time.monotonic() - start
        cpu = tree_cpu_seconds(os.getpid()) - cpu_before
        streamed = spark.read.parquet(str(root / "out0")).count()
        print(json.dumps({
            "door": "batch", "rows": args.rows, "rows_out": matches, "same_count_as_stream": matches == streamed,
            "seconds": round(seconds, 1), "rows_per_s": round(args.rows / seconds), "cpu_s": round(cpu, 1),
            "load1": round(os.getloadavg()[0], 1),
        }), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
