"""Throughput of the streaming job (availableNow + flush) on a temporal-join workload.

    .venv/bin/python bench/bench_streaming.py [--left 200000] [--versions 2000] [--keys 200] [--runs 3] [--format parquet]
    .venv/bin/python bench/bench_streaming.py --steady [--left 1000000] [--versions 10000] [--keys 1000] [--files 20]

Generates left rows (``order_id, price, currency, order_time``, one every 10 ms) and versions
(``currency, rate, update_time``) spread over the same range, round-robin over the keys, into a temp
directory; then runs the streaming job ``--runs`` times on fresh checkpoints in one SparkSession (the
first run is cold: JVM and Python workers start; the JVM's JIT compiler keeps costing CPU into the
second run, so the third is the closest to a long-running query) and prints one JSON line per run:
rows in/out, seconds (query start to stop, all batches, outputs written), input rows per second,
the CPU seconds the run used (driver, JVM, Python workers, also split by kind), which do not depend
on other work on the machine, and the 1-minute load before and after the run.

``--steady`` measures the *marginal* rate of a running query instead (the issue's "steady" figure):
the inputs are written as ``--files`` files per side, the query reads one file per side per
micro-batch (``maxFilesPerTrigger=1``, ``availableNow``, no flush: the last file's rows stay
buffered, as in a query that keeps running), and a query listener records every batch's input rows,
``triggerExecution`` time and the process tree's CPU seconds at its end.  The steady rate is the
left rows of the batches after the first ``--skip`` (cold start, JIT warm-up) divided by their
summed trigger time; CPU seconds over the same batches give the load-independent rate.  Defaults in
this mode: 1 M left rows x 10 k versions over 1,000 keys (the issue's Flink comparison), 20 files
(50 k left rows per batch), ``--skip 5``, one run.  One JSON line per batch, then a summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def generate(root: Path, left_rows: int, versions: int, keys: int, fmt: str, files: int = 2) -> None:
    """Write the two inputs (``files`` files each, in time order) under ``root/left`` and ``root/right``."""
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
        edges = [len(frame) * i // files for i in range(files + 1)]
        for i in range(files):
            part = frame.iloc[edges[i] : edges[i + 1]]
            path = root / name / f"part-{i:04d}.{fmt}"
            # Distinct, increasing modification times: the file source reads the oldest files first.
            stamp = 1_700_000_000 + i
            if fmt == "parquet":
                part.to_parquet(path, index=False, coerce_timestamps="us", allow_truncated_timestamps=True)
            else:
                part.to_csv(path, index=False, header=False, date_format="%Y-%m-%d %H:%M:%S.%f")
            os.utime(path, (stamp, stamp))


def tree_cpu_split(root_pid: int) -> dict[str, float]:
    """CPU seconds (user + system, including reaped children) of a process tree, by kind of process.

    ``driver`` (this process), ``jvm`` (Spark's JVM), ``python`` (the Python workers and their
    daemon).  The machine is often shared: wall time then measures the neighbours too, CPU time does not.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    split = {"driver": 0.0, "jvm": 0.0, "python": 0.0}
    for _pid, kind, fields in process_tree(root_pid):
        split[kind] += sum(int(v) for v in fields[11:15]) / ticks  # utime stime cutime cstime
    return split


def process_tree(root_pid: int) -> list[tuple[int, str, list[str]]]:
    """``(pid, kind, /proc stat fields after the command)`` of a process and its descendants (read once from
    /proc); kind is ``driver`` (the root), ``jvm`` (a ``java`` command line) or ``python`` (anything else)."""
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
    out, todo = [], [root_pid]
    while todo:
        pid = todo.pop()
        if pid in stats:
            fields, kind = stats[pid]
            out.append((pid, kind, fields))
        todo.extend(children.get(pid, []))
    return out


def tree_cpu_seconds(root_pid: int) -> float:
    """CPU seconds of a process and all its descendants (see :func:`tree_cpu_split`)."""
    return sum(tree_cpu_split(root_pid).values())


def config(root: Path, run: int, fmt: str, files_per_trigger: int | None = None) -> dict:
    options = {} if fmt == "parquet" else {"header": "false"}
    if files_per_trigger:
        options = {**options, "maxFilesPerTrigger": str(files_per_trigger)}
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


class BatchRecorder:
    """Every progress event of a bench query: batch id, rows read from ``path``, durations, CPU and load at its end.

    Shared by the streaming benches (temporal join here, MATCH_RECOGNIZE in
    ``bench_match_recognize_streaming.py``).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.batches: list[dict[str, Any]] = []

    def listener(self) -> Any:
        """A ``StreamingQueryListener`` for ``spark.streams.addListener`` that records every progress event.

        PySpark's own listener bridge converts each event field by field and looks up a JVM class by
        name for each observed metric (``_jvm.PythonSQLUtils``): py4j tries the name in every imported
        package, and each miss scans the whole class path.  The streaming writers observe two metrics
        per micro-batch, so that bridge cost ~0.5 JVM CPU-s per batch (JFR: ~6 % of the JVM's samples),
        charged to the query being measured.  This listener's bridge makes one py4j call per event
        (the progress as JSON) instead.
        """
        from pyspark import SparkContext
        from pyspark.sql.streaming import StreamingQueryListener

        recorder = self

        class Bridge:
            """The Java-side listener (py4j callback): one call per event, the progress as JSON."""

            def onQueryStarted(self, jevent: Any) -> None:
                pass

            def onQueryProgress(self, jevent: Any) -> None:
                recorder.progress(json.loads(jevent.progress().json()))

            def onQueryIdle(self, jevent: Any) -> None:
                pass

            def onQueryTerminated(self, jevent: Any) -> None:
                pass

            class Java:
                implements = ("org.apache.spark.sql.streaming.PythonStreamingQueryListener",)

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                pass

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

            @property
            def _jlistener(self) -> Any:
                if not hasattr(self, "_bridge"):
                    self._bridge = SparkContext._jvm.PythonStreamingQueryListenerWrapper(Bridge())
                return self._bridge

        return Listener()

    def progress(self, progress: dict[str, Any]) -> None:
        """Record one progress event (Spark's ``StreamingQueryProgress`` JSON), the CPU and load now."""
        # Summed over the plan's sources reading `path`: a plan that scans an input twice (the MATCH_RECOGNIZE
        # job's operator and dead-letter branches; the temporal join's before 996cbc1) counts every row twice.
        durations = progress.get("durationMs") or {}
        self.batches.append({
            "batch": progress["batchId"],
            "source_rows": sum(int(s.get("numInputRows") or 0) for s in progress.get("sources") or []
                               if self.path in s.get("description", "")),
            "input_rows": int(progress.get("numInputRows") or 0),
            "trigger_ms": durations.get("triggerExecution", 0),
            "planning_ms": durations.get("queryPlanning", 0),
            "add_batch_ms": durations.get("addBatch", 0),
            "state_ms": sum(int(o.get("allUpdatesTimeMs") or 0) for o in progress.get("stateOperators") or []),
            "cpu": tree_cpu_split(os.getpid()), "load1": round(os.getloadavg()[0], 1),
        })

    def record(self, spark: Any, run: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], float, dict[str, float]]:
        """Run ``run()`` (a streaming job returning its metrics) under the listener.

        Returns the metrics, the 1-minute load and the process tree's CPU split before the run;
        :attr:`batches` then holds every batch, in batch order.
        """
        listener = self.listener()
        spark.streams.addListener(listener)
        try:
            load_before = os.getloadavg()[0]
            cpu_before = tree_cpu_split(os.getpid())
            metrics = run()
            # Listener events are delivered asynchronously: wait until every batch has reported.
            deadline = time.monotonic() + 30
            while len(self.batches) < metrics["batches"] and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            spark.streams.removeListener(listener)
        self.batches.sort(key=lambda b: b["batch"])
        return metrics, load_before, cpu_before


def steady_rate(batches: list[dict[str, Any]], cpu_before: dict[str, float], rows: str, skip: int) -> dict[str, Any] | None:
    """Print one JSON line per batch; the marginal rate over the data batches after the first ``skip``.

    ``rows`` names the per-batch row count (``left_rows``, ``rows``); ``None`` (after printing why)
    when fewer data batches ran than ``skip``.
    """
    previous = cpu_before
    for b in batches:
        cpu = {k: round(v - previous.get(k, 0.0), 2) for k, v in b["cpu"].items()}
        previous = b["cpu"]
        print(json.dumps({**{k: v for k, v in b.items() if k != "cpu"}, "cpu_s": cpu,
                          f"{rows}_per_s": round(b[rows] * 1000 / b["trigger_ms"]) if b["trigger_ms"] else None}),
              flush=True)
    data = [b for b in batches if b[rows] > 0]
    measured = data[skip:]
    if not measured:
        print(json.dumps({"error": f"only {len(data)} data batches; lower --skip or raise --files"}))
        return None
    first, end = batches.index(measured[0]), batches.index(measured[-1])
    start_cpu = batches[first - 1]["cpu"] if first > 0 else cpu_before
    count = sum(b[rows] for b in batches[first : end + 1])
    ms = sum(b["trigger_ms"] for b in batches[first : end + 1])
    planning_ms = sum(b["planning_ms"] for b in batches[first : end + 1])
    cpu = {k: batches[end]["cpu"][k] - start_cpu.get(k, 0.0) for k in batches[end]["cpu"]}
    cpu_total = sum(cpu.values())
    return {
        "batches": len(batches), "measured_batches": f"{measured[0]['batch']}..{measured[-1]['batch']}",
        f"measured_{rows}": count, "measured_seconds": round(ms / 1000, 2),
        "planning_seconds": round(planning_ms / 1000, 2),
        f"steady_{rows}_per_s": round(count * 1000 / ms) if ms else None,
        "cpu_s": round(cpu_total, 1), "cpu_split_s": {k: round(v, 1) for k, v in cpu.items()},
        f"{rows}_per_cpu_s": round(count / cpu_total) if cpu_total else None,
        f"{rows}_per_s_2_idle_cores_bound": round(2 * count / cpu_total) if cpu_total else None,
    }


def steady(spark: Any, root: Path, args: argparse.Namespace) -> None:
    """The ``--steady`` run: one file per side per batch, per-batch figures and the marginal rate."""
    from timeweave.jobs.streaming import run_streaming

    # A long-running query's JVM has compiled its hot code long ago; a fresh one spends most of its first
    # minutes compiling (C2 threads were a third of the JVM's CPU over batches 3..7 of a cold query).
    # --warmup runs the same workload that many times first, on fresh checkpoints, unmeasured.
    for run in range(args.warmup):
        run_streaming(config(root, run, args.format, files_per_trigger=1), spark)
    recorder = BatchRecorder(str(root / "left"))
    metrics, load_before, cpu_before = recorder.record(
        spark, lambda: run_streaming(config(root, args.warmup, args.format, files_per_trigger=1), spark))
    for b in recorder.batches:
        b["left_rows"] = b["source_rows"]  # the plan scans the left input once
    summary = steady_rate(recorder.batches, cpu_before, "left_rows", args.skip)
    if summary is None:
        return
    print(json.dumps({
        "steady": True, "warmup_runs": args.warmup, "left": args.left, "versions": args.versions, "keys": args.keys, "files": args.files,
        **summary,
        "run_seconds": metrics["seconds"], "rows_out": metrics["rows_out"], "late": metrics["late"],
        "load1_before": round(load_before, 1), "load1": round(os.getloadavg()[0], 1),
    }), flush=True)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steady", action="store_true", help="marginal rate of a running query (see the docstring)")
    p.add_argument("--left", type=int, default=None, help="left rows (200 k; --steady: 1 M)")
    p.add_argument("--versions", type=int, default=None, help="versions (2 k; --steady: 10 k)")
    p.add_argument("--keys", type=int, default=None, help="join keys (200; --steady: 1,000)")
    p.add_argument("--files", type=int, default=None, help="files per side (2; --steady: 20)")
    p.add_argument("--skip", type=int, default=5, help="--steady: data batches left out of the rate")
    p.add_argument("--warmup", type=int, default=0,
                   help="--steady: unmeasured runs of the same workload first, in the same JVM (a warm, long-running JVM)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    p.add_argument("--shuffle-partitions", default="2", help="the local job session's default: one per core")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark SQL conf set on the session before the runs (repeatable)")
    args = p.parse_args()
    defaults = (1_000_000, 10_000, 1_000, 20) if args.steady else (200_000, 2_000, 200, 2)
    for name, default in zip(("left", "versions", "keys", "files"), defaults, strict=True):
        if getattr(args, name) is None:
            setattr(args, name, default)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("TIMEWEAVE_SHUFFLE_PARTITIONS", args.shuffle_partitions)
    root = Path(tempfile.mkdtemp(prefix="tw-bench-stream-"))
    generate(root, args.left, args.versions, args.keys, args.format, args.files)
    from timeweave.jobs.session import get_session
    from timeweave.jobs.streaming import run_streaming

    t0 = time.monotonic()
    spark = get_session()
    session_seconds = time.monotonic() - t0
    for item in args.conf:
        key, _, value = item.partition("=")
        spark.conf.set(key, value)
    if args.steady:
        steady(spark, root, args)
        return 0
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
