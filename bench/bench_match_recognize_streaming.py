"""Throughput of the streaming MATCH_RECOGNIZE job (availableNow + flush) on ticker-like data.

    .venv/bin/python bench/bench_match_recognize_streaming.py [--rows 100000] [--symbols 100] [--runs 2]
        [--files 2] [--price-max 40] [--batch-door] [--conf KEY=VALUE ...]
    .venv/bin/python bench/bench_match_recognize_streaming.py --steady [--rows 1000000] [--files 20] [--skip 5]

Generates ``../shared/bench/gen_data.py``-shaped ticker rows (``symbol, rowtime, price, tax``; symbols
round-robin, one row every 10 ms, uniform prices, seed 42) as parquet files in a temp directory, then
runs the streaming job ``--runs`` times on fresh checkpoints in one SparkSession (the first run is
cold) with the Flink benchmark's query (``PATTERN (A+ B) DEFINE A AS AVG(A.price) < 15``) and prints
one JSON line per run: rows in/out, seconds (query start to stop, outputs written), rows/s, the CPU
seconds of the driver, JVM and Python workers (independent of other work on a shared machine) and the
load average.  ``--batch-door`` also times the batch DataFrame door on the same files and checks that
both produced the same number of rows.

``--steady`` measures the *marginal* rate of a running query instead (the issue's "streaming" figure):
the rows are written as ``--files`` files of consecutive time ranges (file i holds the i-th slice of
the timeline, so each micro-batch moves the watermark and releases the previous batch's rows to
matching, as a live ticker would), the query reads one file per micro-batch (``maxFilesPerTrigger=1``,
``availableNow``, no flush: the last file's rows stay buffered, as in a query that keeps running), and
a query listener records every batch's input rows, ``triggerExecution`` time and the process tree's
CPU seconds at its end.  The steady rate is the rows of the data batches after the first ``--skip``
(cold start, JIT warm-up) divided by their summed trigger time; CPU seconds over the same batches give
the load-independent rate.  Defaults in this mode: 1 M rows, 20 files (50 k rows per batch), ``--skip
5``.  One JSON line per batch, then a summary line.
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
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_match_recognize import CLAUSE
from bench.bench_streaming import BatchRecorder, steady_rate, tree_cpu_split

SCHEMA = "symbol STRING, rowtime TIMESTAMP, price BIGINT, tax BIGINT"


def generate(root: Path, rows: int, symbols: int, price_max: int, files: int, by_time: bool = False) -> None:
    """Ticker rows as gen_data.py writes them, split round-robin into ``files`` parquet files (``by_time``:
    file i holds the i-th consecutive slice of the rows, i.e. of the timeline)."""
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
        part = frame.iloc[i * rows // files : (i + 1) * rows // files] if by_time else frame.iloc[i::files]
        part.to_parquet(root / "ticker" / f"part-{i}.parquet", index=False,
                                        coerce_timestamps="us", allow_truncated_timestamps=True)


def config(root: Path, run: int, files_per_trigger: int | None = None) -> dict:
    options = {"maxFilesPerTrigger": str(files_per_trigger)} if files_per_trigger else {}
    return {
        "match_recognize": {"clause": CLAUSE},
        "input": {"path": str(root / "ticker"), "format": "parquet", "schema": SCHEMA, "options": options},
        "output": {"path": str(root / f"out{run}")},
        "checkpoint": str(root / f"chk{run}"),
        "trigger": {"available_now": True},
    }


def steady(spark: Any, root: Path, args: argparse.Namespace) -> None:
    """The ``--steady`` run: one file per micro-batch, per-batch figures and the marginal rate."""
    from timeweave.jobs.streaming import run_streaming

    recorder = BatchRecorder(str(root / "ticker"))
    metrics, load_before, cpu_before = recorder.record(
        spark, lambda: run_streaming(config(root, 0, files_per_trigger=1), spark))
    per_file = args.rows // args.files  # every file has this many rows; a data batch reads one file
    for b in recorder.batches:
        # The plan scans the input once (dead letters travel through the operator), so source_rows is
        # the file's rows; count them from the file size anyway (the figure does not depend on the plan).
        b["rows"] = per_file if b["source_rows"] else 0
    summary = steady_rate(recorder.batches, cpu_before, "rows", args.skip)
    if summary is None:
        return
    print(json.dumps({
        "steady": True, "rows": args.rows, "symbols": args.symbols, "files": args.files, **summary,
        "run_seconds": metrics["seconds"], "rows_out": metrics["rows_out"], "late": metrics["late"],
        "load1_before": round(load_before, 1), "load1": round(os.getloadavg()[0], 1),
    }), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steady", action="store_true", help="marginal rate of a running query (see the docstring)")
    p.add_argument("--rows", type=int, default=None, help="input rows (100 k; --steady: 1 M)")
    p.add_argument("--symbols", type=int, default=100)
    p.add_argument("--price-max", type=int, default=40)
    p.add_argument("--files", type=int, default=None, help="input files (2; --steady: 20)")
    p.add_argument("--skip", type=int, default=5, help="--steady: data batches left out of the rate")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--shuffle-partitions", default="2", help="the local job session's default: one per core")
    p.add_argument("--batch-door", action="store_true", help="also time the batch DataFrame door")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark SQL conf set on the session before the runs (repeatable; an experiment's knob)")
    args = p.parse_args()
    if args.rows is None:
        args.rows = 1_000_000 if args.steady else 100_000
    if args.files is None:
        args.files = 20 if args.steady else 2
    if args.steady and args.rows % args.files:
        p.error("--steady needs --rows divisible by --files (every micro-batch reads one file of equal size)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("TIMEWEAVE_SHUFFLE_PARTITIONS", args.shuffle_partitions)
    root = Path(tempfile.mkdtemp(prefix="tw-bench-mr-stream-"))
    generate(root, args.rows, args.symbols, args.price_max, args.files, by_time=args.steady)
    from timeweave.jobs.session import get_session
    from timeweave.jobs.streaming import run_streaming

    t0 = time.monotonic()
    spark = get_session()
    session_seconds = time.monotonic() - t0
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep:
            p.error(f"--conf {item!r}: expected KEY=VALUE")
        spark.conf.set(key, value)
    if args.steady:
        steady(spark, root, args)
        return 0
    for run in range(args.runs):
        split_before = tree_cpu_split(os.getpid())
        load_before = os.getloadavg()[0]
        metrics = run_streaming(config(root, run), spark, flush=True)
        split = {k: v - split_before.get(k, 0.0) for k, v in tree_cpu_split(os.getpid()).items()}
        cpu = sum(split.values())
        print(json.dumps({
            "run": run, "cold": run == 0, "session_start_s": round(session_seconds, 1) if run == 0 else 0,
            "rows_in": metrics["rows_in"], "rows_out": metrics["rows_out"], "late": metrics["late"],
            "seconds": metrics["seconds"], "rows_per_s": round(metrics["rows_in"] / metrics["seconds"]),
            "cpu_s": round(cpu, 1), "rows_per_cpu_s": round(metrics["rows_in"] / cpu) if cpu else None,
            "cpu_split_s": {k: round(v, 1) for k, v in split.items()},
            "batches": metrics["batches"], "load1_before": round(load_before, 1),
            "load1_after": round(os.getloadavg()[0], 1), "durations_ms": metrics["durations_ms"],
        }), flush=True)
    if args.batch_door:
        from timeweave.spark.match_recognize import match_recognize

        ticker = spark.read.schema(SCHEMA).parquet(str(root / "ticker"))
        cpu_before = sum(tree_cpu_split(os.getpid()).values())
        start = time.monotonic()
        matches = match_recognize(ticker, CLAUSE).count()
        seconds = time.monotonic() - start
        cpu = sum(tree_cpu_split(os.getpid()).values()) - cpu_before
        streamed = spark.read.parquet(str(root / "out0")).count()
        print(json.dumps({
            "door": "batch", "rows": args.rows, "rows_out": matches, "same_count_as_stream": matches == streamed,
            "seconds": round(seconds, 1), "rows_per_s": round(args.rows / seconds), "cpu_s": round(cpu, 1),
            "load1": round(os.getloadavg()[0], 1),
        }), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
