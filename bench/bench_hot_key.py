"""Peak memory and time of the streaming temporal join with one hot key (issue 20's skew case).

    .venv/bin/python bench/bench_hot_key.py [--versions 1000000] [--orders 20000] [--door streaming|dataframe]

Writes ``--versions`` versions of ONE key (``HOT``, one every ms) and ``--orders`` orders (nine in ten on
``HOT``, the rest on a key without versions) as one parquet file per side, so the streaming job reads
everything in one micro-batch, then runs the job (``--flush``, ``availableNow``) on a fresh local session
with Spark's default heap (``spark.driver.memory`` 1g, as the job CLI starts it), or the DataFrame door.
A sampler thread reads the resident memory of the JVM and of every Python worker every 0.2 s; the JVM's
peak is also read from the kernel (``VmHWM``) at the end.  One JSON line: rows, seconds, peaks (MB).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

T0_US = 1_704_067_200_000_000  # 2024-01-01 00:00:00 UTC
LEFT_DDL = "order_id BIGINT, price DOUBLE, currency STRING, order_time TIMESTAMP"
RIGHT_DDL = "currency STRING, rate DOUBLE, update_time TIMESTAMP"


def generate(root: Path, versions: int, orders: int, pad: int = 0) -> None:
    """``root/right/part-0.parquet``: the hot key's versions; ``root/left/part-0.parquet``: the orders.

    ``pad``: each version also gets a ``note`` text of that many characters (a wider versioned row).
    """
    (root / "right").mkdir(parents=True)
    (root / "left").mkdir(parents=True)
    i = np.arange(versions, dtype=np.int64)
    pq.write_table(pa.table({
        "currency": pa.array(np.full(versions, "HOT", dtype=object), pa.string()),
        "rate": pa.array(1.0 + (i % 1000) / 1000.0),
        "update_time": pa.array(T0_US + i * 1000, pa.timestamp("us")),
        **({"note": pa.array(np.char.zfill(i.astype(str), pad).astype(object), pa.string())} if pad else {}),
    }), root / "right" / "part-0.parquet")
    j = np.arange(orders, dtype=np.int64)
    pq.write_table(pa.table({
        "order_id": pa.array(j),
        "price": pa.array(1.0 + (j % 97).astype(np.float64)),
        "currency": pa.array(np.where(j % 10 == 9, "COLD", "HOT").astype(object), pa.string()),
        # spread over the versions' span (and a little past it)
        "order_time": pa.array(T0_US + j * max(versions * 1000 // max(orders, 1), 1) + 500, pa.timestamp("us")),
    }), root / "left" / "part-0.parquet")


def job_config(root: Path, pad: int = 0) -> dict:
    return {
        "left": {"path": str(root / "left"), "format": "parquet", "schema": LEFT_DDL},
        "right": {"path": str(root / "right"), "format": "parquet", "schema": RIGHT_DDL + (", note STRING" if pad else "")},
        "versioned": {"key": ["currency"], "time": "update_time"},
        "join": {"left_time": "order_time", "how": "left", "right_columns": ["rate"]},
        "output": {"path": str(root / "out")},
        "checkpoint": str(root / "chk"),
        "trigger": {"available_now": True},
    }


class Sampler:
    """Peak resident memory (MB) of the JVM and of the largest Python worker under this process."""

    def __init__(self) -> None:
        self.peak = {"jvm": 0.0, "worker": 0.0}
        self.jvm_pid: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.jvm_pid is not None:
            hwm = _status(self.jvm_pid, "VmHWM")
            if hwm:
                self.peak["jvm_hwm"] = hwm

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            for pid, kind in _tree(os.getpid()):
                if kind == "jvm":
                    self.jvm_pid = pid
                rss = _status(pid, "VmRSS")
                if kind != "driver" and rss > self.peak[kind]:
                    self.peak[kind] = rss


def _status(pid: int, field: str) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _tree(root: int) -> list[tuple[int, str]]:
    """``(pid, kind)`` of ``root`` and its descendants: ``driver``, ``jvm`` or ``worker`` (any Python worker)."""
    from bench.bench_streaming import process_tree

    return [(pid, "worker" if kind == "python" else kind) for pid, kind, _ in process_tree(root)]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--versions", type=int, default=1_000_000)
    p.add_argument("--orders", type=int, default=20_000)
    p.add_argument("--pad", type=int, default=0, help="characters of an extra text column per version")
    p.add_argument("--door", choices=("streaming", "dataframe"), default="streaming")
    args = p.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = Path(tempfile.mkdtemp(prefix="tw-bench-hot-"))
    generate(root, args.versions, args.orders, args.pad)
    from timeweave.jobs.session import get_session

    spark = get_session()
    load = os.getloadavg()[0]
    with Sampler() as sampler:
        t0 = time.monotonic()
        if args.door == "streaming":
            from timeweave.jobs.streaming import run_streaming

            metrics = run_streaming(job_config(root, args.pad), spark, flush=True)
            rows_out = metrics["rows_out"]
        else:
            import timeweave

            left = spark.read.schema(LEFT_DDL).parquet(str(root / "left"))
            right = spark.read.schema(RIGHT_DDL + (", note STRING" if args.pad else "")).parquet(str(root / "right"))
            joined = timeweave.temporal_join(left, right, "order_time", key="currency", time="update_time", how="left")
            joined.write.parquet(str(root / "out"))
            rows_out = spark.read.parquet(str(root / "out")).count()
        seconds = time.monotonic() - t0
    print(json.dumps({
        "door": args.door, "versions": args.versions, "orders": args.orders, "pad": args.pad, "rows_out": rows_out,
        "seconds": round(seconds, 1), "peak_mb": {k: round(v) for k, v in sampler.peak.items()},
        "load1_before": round(load, 1), "load1_after": round(os.getloadavg()[0], 1),
    }), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
