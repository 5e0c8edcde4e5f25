"""Throughput of the streaming job (availableNow + flush) on a temporal-join workload.

    .venv/bin/python bench/bench_streaming.py [--left 200000] [--versions 2000] [--keys 200] [--runs 3] [--format parquet]

Generates left rows (``order_id, price, currency, order_time``, one every 10 ms) and versions
(``currency, rate, update_time``) spread over the same range, round-robin over the keys, into a temp
directory; then runs the streaming job ``--runs`` times on fresh checkpoints in one SparkSession (the
first run is cold: JVM and Python workers start; the JVM's JIT compiler keeps costing CPU into the
second run, so the third is the closest to a long-running query) and prints one JSON line per run:
rows in/out, seconds (query start to stop, all batches, outputs written), input rows per second,
the CPU seconds the run used (driver, JVM, Python workers, also split by kind), which do not depend
on other work on the machine, and the 1-minute load before and after the run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def generate(root: Path, left_rows: int, versions: int, keys: int, fmt: str) -> None:
    """Write the two inputs (two files each) under ``root/left`` and ``root/right``."""
    rng = np.random.default_rng(7)
    start = np.datetime64("2024-01-01T00:00:00", "ms")
    span = left_rows * 10  # ms
    left = pd.DataFrame({
        "order_id": np.arange(left_rows, dtype=np.int64),
        "price": np.round(rng.uniform(1, 1000, left_rows), 2),
        "currency": [f"C{k:03d}" for k in rng.integers(0, keys, left_rows)],
        "order_time": start + np.arange(left_rows, dtype=np.int64) * 10,
    })
    step = span // versions
    right = pd.DataFrame({
        "currency": [f"C{i % keys:03d}" for i in range(versions)],
        "rate": np.round(rng.uniform(0.5, 2.0, versions), 4),
        "update_time": start + np.arange(versions, dtype=np.int64) * step - 1000,
    })
    for name, frame in (("left", left), ("right", right)):
        (root / name).mkdir(parents=True)
        half = len(frame) // 2
        for i, part in enumerate((frame.iloc[:half], frame.iloc[half:])):
            path = root / name / f"part-{i}.{fmt}"
            if fmt == "parquet":
                part.to_parquet(path, index=False, coerce_timestamps="us", allow_truncated_timestamps=True)
            else:
                part.to_csv(path, index=False, header=False, date_format="%Y-%m-%d %H:%M:%S.%f")


def tree_cpu_split(root_pid: int) -> dict[str, float]:
    """CPU seconds (user + system, including reaped children) of a process tree, by kind of process.

    ``driver`` (this process), ``jvm`` (Spark's JVM), ``python`` (the Python workers and their
    daemon).  The machine is often shared: wall time then measures the neighbours too, CPU time does not.
    """
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[list[str], str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        pid = int(entry.name)
        stats[pid] = (fields, "driver" if pid == root_pid else "jvm" if b"java" in command else "python")
        children.setdefault(int(fields[1]), []).append(pid)
    ticks = os.sysconf("SC_CLK_TCK")
    split, todo = {"driver": 0.0, "jvm": 0.0, "python": 0.0}, [root_pid]
    while todo:
        pid = todo.pop()
        if pid in stats:
            fields, kind = stats[pid]
            split[kind] += sum(int(v) for v in fields[11:15]) / ticks  # utime stime cutime cstime
        todo.extend(children.get(pid, []))
    return split


def tree_cpu_seconds(root_pid: int) -> float:
    """CPU seconds of a process and all its descendants (see :func:`tree_cpu_split`)."""
    return sum(tree_cpu_split(root_pid).values())


def config(root: Path, run: int, fmt: str) -> dict:
    options = {} if fmt == "parquet" else {"header": "false"}
    return {
        "left": {"path": str(root / "left"), "format": fmt, "options": options,
                 "schema": "order_id BIGINT, price DOUBLE, currency STRING, order_time TIMESTAMP"},
        "right": {"path": str(root / "right"), "format": fmt, "options": options,
                  "schema": "currency STRING, rate DOUBLE, update_time TIMESTAMP"},
        "versioned": {"key": ["currency"], "time": "update_time"},
        "join": {"left_time": "order_time", "how": "left", "right_columns": ["rate"]},
        "output": {"path": str(root / f"out{run}")},
        "checkpoint": str(root / f"chk{run}"),
        "trigger": {"available_now": True},
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--left", type=int, default=200_000)
    p.add_argument("--versions", type=int, default=2_000)
    p.add_argument("--keys", type=int, default=200)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    p.add_argument("--shuffle-partitions", default="4")
    args = p.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("TIMEWEAVE_SHUFFLE_PARTITIONS", args.shuffle_partitions)
    root = Path(tempfile.mkdtemp(prefix="tw-bench-stream-"))
    generate(root, args.left, args.versions, args.keys, args.format)
    from runtime.jobs.session import get_session
    from runtime.jobs.streaming import run_streaming

    t0 = time.monotonic()
    spark = get_session()
    session_seconds = time.monotonic() - t0
    for run in range(args.runs):
        load_before = os.getloadavg()[0]
        split_before = tree_cpu_split(os.getpid())
        metrics = run_streaming(config(root, run, args.format), spark, flush=True)
        split = {k: v - split_before.get(k, 0.0) for k, v in tree_cpu_split(os.getpid()).items()}
        cpu = sum(split.values())
        load = os.getloadavg()[0]
        print(json.dumps({
            "run": run, "cold": run == 0, "session_start_s": round(session_seconds, 1) if run == 0 else 0,
            "rows_in_left": metrics["rows_in_left"], "rows_in_right": metrics["rows_in_right"],
            "rows_out": metrics["rows_out"], "seconds": metrics["seconds"],
            "left_rows_per_s": round(metrics["rows_in_left"] / metrics["seconds"]),
            # CPU seconds of the driver, JVM and Python workers for this run, and the rate 2 idle cores
            # would give if the run kept both busy (an upper bound for a quiet 2-core machine).
            "cpu_s": round(cpu, 1), "left_rows_per_cpu_s": round(metrics["rows_in_left"] / cpu) if cpu else None,
            "left_rows_per_s_2_idle_cores_bound": round(2 * metrics["rows_in_left"] / cpu) if cpu else None,
            "cpu_split_s": {k: round(v, 1) for k, v in split.items()},
            "batches": metrics["batches"], "load1_before": round(load_before, 1), "load1": round(load, 1),
            "durations_ms": metrics["durations_ms"],
        }), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
