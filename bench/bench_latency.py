"""End-to-end latency at a steady offered rate, timeweave against Flink (issue 19): p50 / p95 / p99 / max from an input
row's arrival in the source directory to its output row being committed (visible in the output directory).

    .venv/bin/python bench/bench_latency.py [--queries tj_pk,tumble_1s] [--engines flink,timeweave] [--rounds 2]
        [--rate 10000] [--duration 60] [--warmup 15] [--trigger "1 second"] [--checkpoint-ms 1000] [--json out.json]

Input: ``../shared/bench/gen_data.py``'s orders, rates and bids (``--rate * --duration`` rows each, rates: the
generator's 10,000 versions over the orders' range), their event times compressed 100x (the generator's 10 ms
per row becomes 0.1 ms, ms precision kept) and shifted so that a row's event time is the wall-clock time
(UTC) at which the feeder is due to write it.  A feeder thread of this process writes every ``--tick`` (100 ms) one
CSV file per source holding the rows of the tick just ended (10 k rows/s offered: 1,000 orders, and ~17 rates
for ``tj_pk``), written as a dot-file and renamed into the source directory; a file's arrival is the wall clock
right after its rename.  A poller thread lists the output directory every ``--poll-ms`` (20 ms) and records
when each data file first appears: a row's commit time is its file's first sighting (readers see the rows from
then on).  Latency = commit time - arrival time of the input file holding the row (``tj_pk``: the order; a
window of ``tumble_1s``: the file holding the window's last row, which is also the file that moves the
watermark, ``time - 0 s``, to the window's last millisecond).  ``from emittable`` measures from the arrival of
the first input file whose event times let the watermark reach the row (the temporal join's order at ``t``:
both sides' largest event time >= ``t``), what no engine can beat with that watermark.

Queries (watermark delay 0 on both engines):

* ``tj_pk``: the event-time temporal join of orders with the rates' primary-key versioned table (the throughput
  benchmark's ``tj_pk``): an order's row is emitted once both inputs' watermarks pass its ``order_time``;
* ``tumble_1s``: ``COUNT(*)`` per 1-second TUMBLE window of bids (one row per window, fired once the watermark
  passes its end).

Engines, each in its own process started per run (fresh directories), the feeder starting once it runs:

* timeweave: ``run_streaming`` with a processing-time trigger (``--trigger``; ``0 seconds``: one micro-batch
  after another), file sources on the directories, parquet out through the job's exactly-once writer (a batch's
  files are renamed from ``_tw_staging/`` into the output directory: that rename is the commit a reader sees;
  Spark's ``commits/<batch>`` log entry follows it), 2 shuffle partitions; a query listener records every
  micro-batch's ``durationMs`` phases (``--worker timeweave``: the driver starts it);
* Flink: ``bench/flink_latency.py`` in the PyFlink venv (streaming, parallelism 2, filesystem CSV sources with
  ``source.monitor-interval`` ``--monitor-ms``, CSV sink committed on checkpoints every ``--checkpoint-ms``, part
  files rolled every ``--roll-ms``); its rows also carry ``NOW()`` at emission, reported as ``emitted``
  (before the commit: what a sink without transactions could show).

Rows arriving in the first ``--warmup`` seconds (the engines' first micro-batches / JIT) are left out of the
percentiles (their largest latency is reported as ``startup_max_s``).  Each round runs every engine once per
query (the engines' order alternates round by round: the machine is shared and its speed drifts); every figure
comes with the 1-minute load before and after.
"""

from __future__ import annotations

import argparse
import bisect
import csv
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GEN_DATA = ROOT.parent / "shared" / "bench" / "gen_data.py"
FLINK_LATENCY = ROOT / "bench" / "flink_latency.py"
FLINK_PYTHON = "/work/pyflink-venv/bin/python"
ORDERS_SCHEMA = "order_id BIGINT, price DECIMAL(10, 2), currency STRING, order_time TIMESTAMP"
RATES_SCHEMA = "currency STRING, conversion_rate DECIMAL(10, 4), update_time TIMESTAMP"
BIDS_SCHEMA = "bidtime TIMESTAMP, price DECIMAL(10, 2), item STRING, supplier_id STRING"
#: The input directories of each query, and the column holding each row's event time (its index).
SOURCES: Mapping[str, Mapping[str, int]] = {"tj_pk": {"orders": 3, "rates": 2}, "tumble_1s": {"bids": 0}}
WINDOW_MS = 1000


def _csv(path: Path, schema: str) -> dict[str, Any]:
    return {"path": str(path), "format": "csv", "schema": schema, "options": {"header": "false"},
            "watermark_delay": "0 seconds"}


def job_config(query: str, src: Path, out: Path, trigger: str) -> dict[str, Any]:
    """The timeweave streaming job of ``query`` over ``src``'s directories (watermarks 0 s), outputs under ``out``."""
    common = {"output": {"path": str(out / "out")}, "checkpoint": str(out / "chk"),
              "trigger": {"processing_time": trigger}}
    if query == "tj_pk":
        return {"left": _csv(src / "orders", ORDERS_SCHEMA), "right": _csv(src / "rates", RATES_SCHEMA),
                "versioned": {"key": ["currency"], "time": "update_time"},
                "join": {"left_time": "order_time", "left_key": ["currency"], "how": "inner"}, **common}
    if query == "tumble_1s":
        return {"window": {"function": "tumble", "time": "bidtime", "size": "1 second",
                           "aggregates": {"cnt": "COUNT(*)"}},
                "input": _csv(src / "bids", BIDS_SCHEMA), **common}
    raise ValueError(f"unknown query {query!r}")


# -- the timeweave worker ---------------------------------------------------------------------------------------
def timeweave_worker(query: str, scratch: Path, trigger: str) -> int:
    """One timeweave process: the streaming job until SIGTERM; every micro-batch's progress to ``progress.jsonl``."""
    from tests.helpers.checkout_path import ensure

    ensure()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("TIMEWEAVE_SHUFFLE_PARTITIONS", "2")
    from pyspark.sql.streaming import StreamingQueryListener

    from timeweave.jobs.session import get_session
    from timeweave.jobs.streaming import request_stop, run_streaming

    spark = get_session()
    progress_file = (scratch / "progress.jsonl").open("a")

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            progress_file.write(event.progress.json.replace("\n", " ") + "\n")
            progress_file.flush()

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    spark.streams.addListener(Progress())
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: request_stop("SIGTERM"))

    def announce() -> None:
        while not spark.streams.active:
            time.sleep(0.05)
        ready = scratch / "ready"
        (scratch / ".ready").write_text(json.dumps({"running_at": time.time(), "pid": os.getpid()}))
        (scratch / ".ready").rename(ready)

    threading.Thread(target=announce, daemon=True).start()
    metrics = run_streaming(job_config(query, scratch / "src", scratch, trigger), spark, until_idle=False)
    print(json.dumps({"metrics": metrics}, default=str), flush=True)
    progress_file.close()
    return 0


# -- the input: gen_data.py's rows on a wall-clock event time ----------------------------------------------------
def generate(rows: int, into: Path) -> dict[str, list[list[str]]]:
    """gen_data.py's orders, rates and bids for ``rows`` rows, each data set's lines in their generated order."""
    subprocess.run([sys.executable, str(GEN_DATA), str(into), "--rows", str(rows)], check=True)
    data = {}
    for name in ("orders", "rates", "bids"):
        parts = [(into / name / f"part-{i}.csv").read_text().splitlines() for i in range(2)]
        merged = [line for pair in zip(*parts, strict=False) for line in pair]
        merged += parts[0][len(parts[1]):]  # round-robin split: part-0 may hold one more line
        data[name] = [line.split(",") for line in merged]
    return data


GEN_BASE = datetime(2024, 1, 1)


def _orig_ms(text: str) -> int:
    return int((datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f") - GEN_BASE).total_seconds() * 1000 + 0.5)


def _fmt(epoch_ms: int) -> str:
    t = datetime.fromtimestamp(epoch_ms / 1000, UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{epoch_ms % 1000:03d}"


@dataclass
class Feed:
    """What the feeder wrote: per source its files' (arrival wall seconds, largest event ms, rows) and per tick of
    each source the rows' event ms; ``t0_ms``: the event (= wall-clock) ms of the first tick's start."""

    t0_ms: int
    tick_ms: int
    files: dict[str, list[tuple[float, int, int]]] = field(default_factory=dict)
    #: orders: per order id, (its file's arrival, its event ms); bids: per window start ms, its last file's arrival
    orders: dict[int, tuple[float, int]] = field(default_factory=dict)
    windows: dict[int, float] = field(default_factory=dict)
    window_rows: dict[int, int] = field(default_factory=dict)
    behind_s: float = 0.0


def ticks(query: str, data: Mapping[str, list[list[str]]], ticks_n: int, tick_ms: int, rate: int
          ) -> list[dict[str, list[list[str]]]]:
    """Each tick's rows per source (event times relative to the feed's start, ms), the generator's order kept: its
    10 ms per row become ``1000 / rate`` ms (0.1 ms at 10 k rows/s)."""
    out: list[dict[str, list[list[str]]]] = [{name: [] for name in SOURCES[query]} for _ in range(ticks_n)]
    for name, column in SOURCES[query].items():
        for row in data[name]:
            rel = _orig_ms(row[column]) * 100 // rate
            n = rel // tick_ms
            if n >= ticks_n:
                break
            new = list(row)
            new[column] = str(rel)
            out[n][name].append(new)
    return out


def feed(query: str, plan: Sequence[Mapping[str, list[list[str]]]], src: Path, tick_ms: int, t0_ms: int) -> Feed:
    """Write each tick's files once the tick has ended (wall clock), atomically (dot-file, then rename)."""
    columns = SOURCES[query]
    record = Feed(t0_ms, tick_ms, {name: [] for name in columns})
    for n, tick in enumerate(plan):
        due = (t0_ms + (n + 1) * tick_ms) / 1000
        wait = due - time.time()
        if wait > 0:
            time.sleep(wait)
        else:
            record.behind_s = max(record.behind_s, -wait)
        for name, rows in tick.items():
            if not rows:
                continue
            column = columns[name]
            lines = []
            largest = 0
            for row in rows:
                ms = t0_ms + int(row[column])
                largest = max(largest, ms)
                lines.append(",".join([*row[:column], _fmt(ms), *row[column + 1:]]))
            tmp = src / name / f".tick-{n:06d}.csv"
            tmp.write_text("\n".join(lines) + "\n")
            tmp.rename(src / name / f"tick-{n:06d}.csv")
            arrival = time.time()
            record.files[name].append((arrival, largest, len(rows)))
            if name == "orders":
                for row in rows:
                    record.orders[int(row[0])] = (arrival, t0_ms + int(row[column]))
            elif name == "bids":
                for row in rows:
                    start = (t0_ms + int(row[column])) // WINDOW_MS * WINDOW_MS
                    record.windows[start] = arrival  # the window's last row's file (files arrive in order)
                    record.window_rows[start] = record.window_rows.get(start, 0) + 1
    return record


def seed(query: str, plan: Sequence[Mapping[str, list[list[str]]]], src: Path, t_seed_ms: int) -> None:
    """Write the first ticks' rows again at event times from ``t_seed_ms`` on (order ids negated: ``-1 - id``), enough
    to produce output (a closed 1-second window; joined orders): the engine's first micro-batches (query planning,
    Python workers, JIT) run on them before the measured feed starts, as a running job's would have long before."""
    columns = SOURCES[query]
    n_ticks = (WINDOW_MS + 200) // 100 if query == "tumble_1s" else 3
    for name, column in columns.items():
        lines = []
        for tick in plan[:n_ticks]:
            for row in tick[name]:
                new = list(row)
                new[column] = _fmt(t_seed_ms + int(row[column]))
                if name == "orders":
                    new[0] = str(-1 - int(row[0]))
                lines.append(",".join(new))
        for i in range(2):  # two files: each of Flink's two source readers gets one (a reader without any holds
            tmp = src / name / f".seed-{i}.csv"  # its watermark back, and the join's or the window's with it)
            tmp.write_text("\n".join(lines[i::2]) + "\n")
            tmp.rename(src / name / f"seed-{i}.csv")


def emittable_orders(record: Feed) -> dict[int, float]:
    """Per order id, the arrival of the first file after which both sides' largest event time >= its time."""
    firsts = {}
    for name in ("orders", "rates"):
        arrivals, running, best = [], [], -math.inf
        for arrival, largest, _ in record.files[name]:
            best = max(best, largest)
            arrivals.append(arrival)
            running.append(best)
        firsts[name] = (arrivals, running)
    out = {}
    for order_id, (arrival, t) in record.orders.items():
        at = arrival
        for arrivals, running in firsts.values():
            i = bisect.bisect_left(running, t)
            at = max(at, arrivals[i]) if i < len(arrivals) else math.inf
        out[order_id] = at
    return out


# -- the output -------------------------------------------------------------------------------------------------
class Poller(threading.Thread):
    """Lists ``directories`` every ``interval`` s: the wall time each visible file (no ``.``/``_`` prefix) is first seen."""

    def __init__(self, directories: Sequence[Path], interval: float) -> None:
        super().__init__(daemon=True)
        self.directories = list(directories)
        self.interval = interval
        self.seen: dict[Path, float] = {}
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            now = time.time()
            for directory in self.directories:
                try:
                    entries = list(os.scandir(directory))
                except FileNotFoundError:
                    continue
                for entry in entries:
                    if entry.name[0] in "._" or not entry.is_file():
                        continue
                    path = Path(entry.path)
                    if path not in self.seen:
                        self.seen[path] = now
            self.halt.wait(self.interval)


def _epoch_ms(text: str) -> int:
    text = text.strip().rstrip("Z").replace("T", " ")
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
    return int(datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp() * 1000 + 0.5)


def read_rows(engine: str, query: str, files: Mapping[Path, float]) -> list[tuple[int, float, float | None]]:
    """Each output row as ``(order id or window start ms, commit time, emitted time or None)``."""
    rows: list[tuple[int, float, float | None]] = []
    for path, seen in files.items():
        if engine == "timeweave":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            if query == "tj_pk":
                rows += [(int(v), seen, None) for v in table.column("order_id").to_pylist()]
            else:
                rows += [(int(v.timestamp() * 1000 + 0.5), seen, None) for v in table.column("window_start").to_pylist()]
        else:
            for fields in csv.reader(path.read_text().splitlines()):
                if not fields:
                    continue
                emitted = _epoch_ms(fields[-1]) / 1000
                key = int(fields[0]) if query == "tj_pk" else _epoch_ms(fields[0])
                rows.append((key, seen, emitted))
    return rows


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "p99": None, "max": None}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)], 3)

    return {"n": len(ordered), "p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "max": round(ordered[-1], 3)}


def measure(engine: str, query: str, record: Feed, poller: Poller, warmup: float, started: float) -> dict[str, Any]:
    """Latencies of one run (see the module docstring) and the rows offered vs out."""
    out_files = {p: t for p, t in poller.seen.items() if p.parent.name == "out"}
    rows = read_rows(engine, query, out_files)
    after = started + warmup
    keys = [key for key, _, _ in rows]
    commit, emitted, from_emittable, startup = [], [], [], []
    if query == "tj_pk":
        emittable = emittable_orders(record)
        arrivals = record.orders
        offered = len(record.orders) + sum(n for _, _, n in record.files["rates"])
        could = sum(1 for at in emittable.values() if at < math.inf)
    else:
        emittable = record.windows
        arrivals = {start: (at, start) for start, at in record.windows.items()}
        offered = sum(record.window_rows.values())
        # a window is emittable once a row at (or past) its last millisecond has arrived: its own last row's file
        last = max(largest for _, largest, _ in record.files["bids"])
        could = sum(1 for start in record.windows if start + WINDOW_MS - 1 <= last)
    unknown = seeded = 0
    for key, seen, emit in rows:
        if key not in arrivals:
            if (query == "tj_pk" and key < 0) or (query == "tumble_1s" and key < record.t0_ms):
                seeded += 1
            else:
                unknown += 1
            continue
        arrival = arrivals[key][0]
        if arrival < after:
            startup.append(seen - arrival)
            continue
        commit.append(seen - arrival)
        if emittable.get(key, math.inf) < math.inf:
            from_emittable.append(seen - emittable[key])
        if emit is not None:
            emitted.append(emit - arrival)
    result = {
        "rows_offered": offered, "output_rows": len(rows) - seeded, "distinct_keys_out": len({k for k in keys if k in arrivals}),
        "emittable": could, "seed_rows_out": seeded, "unknown_keys": unknown, "measured": len(commit),
        "commit_s": percentiles(commit), "from_emittable_s": percentiles(from_emittable),
        "startup_max_s": round(max(startup), 3) if startup else None, "output_files": len(out_files),
    }
    if emitted:
        result["emitted_s"] = percentiles(emitted)
    # emittable rows never written: how long before the feed's last file they arrived (the feed's tail: a
    # watermark that stays one file behind, e.g. the minimum over Flink's two source readers)
    fed_end = max(a for files in record.files.values() for a, _, _ in files)
    out_keys = set(keys)
    missing = [fed_end - arrivals[k][0] for k, at in emittable.items() if at < math.inf and k not in out_keys]
    result["missing_emittable"] = len(missing)
    if missing:
        result["missing_arrived_before_end_s"] = [round(min(missing), 3), round(max(missing), 3)]
    if query == "tumble_1s":
        counts: dict[int, int] = {}
        for key, _, _ in rows:
            if key in arrivals:
                counts[key] = counts.get(key, 0) + 1
        result["windows_out"] = len(counts)
    return result


def batch_figures(progress_path: Path, warmup_after: float) -> dict[str, Any]:
    """timeweave's micro-batches after the warm-up: count, rows, triggerExecution and phase medians (ms)."""
    if not progress_path.exists():
        return {}
    batches = [json.loads(line) for line in progress_path.read_text().splitlines() if line.strip()]
    steady = [b for b in batches
              if datetime.fromisoformat(b["timestamp"].replace("Z", "+00:00")).timestamp() >= warmup_after]
    phases: dict[str, list[int]] = {}
    for b in steady:
        for name, ms in (b.get("durationMs") or {}).items():
            phases.setdefault(name, []).append(int(ms))
    data = [b for b in steady if b.get("numInputRows")]
    return {
        "batches": len(batches), "steady_batches": len(steady), "steady_data_batches": len(data),
        "rows_per_data_batch_median": statistics.median([b["numInputRows"] for b in data]) if data else None,
        "phase_ms_median": {k: statistics.median(v) for k, v in sorted(phases.items())},
        "trigger_ms_p90": sorted(phases.get("triggerExecution", [0]))[int(0.9 * (len(phases.get("triggerExecution", [0])) - 1))],
        "first_batches_trigger_ms": [(b.get("durationMs") or {}).get("triggerExecution") for b in batches[:3]],
        # every steady batch: rows in, Spark's phases, the state operator's update and commit times (ms)
        "steady": [{"id": b["batchId"], "rows": b.get("numInputRows"), "ms": b.get("durationMs"),
                    "state_ms": [(op.get("allUpdatesTimeMs"), op.get("commitTimeMs")) for op in b.get("stateOperators") or []]}
                   for b in steady],
    }


# -- one run ----------------------------------------------------------------------------------------------------
def _wait_for(done: Callable[[], bool], proc: subprocess.Popen, deadline: float, exited: Callable[[int], str],
              late: str) -> None:
    """Poll until ``done()``; raise ``exited(exit code)`` if the engine process ends first, ``late`` once the wall
    clock passes ``deadline``."""
    while not done():
        if proc.poll() is not None:
            raise RuntimeError(exited(proc.returncode))
        if time.time() > deadline:
            raise RuntimeError(late)
        time.sleep(0.05)


def run_once(engine: str, query: str, plan: Sequence[Mapping[str, list[list[str]]]], args: argparse.Namespace,
             trigger: str) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix=f"tw-lat-{engine}-"))
    src = scratch / "src"
    for name in SOURCES[query]:
        (src / name).mkdir(parents=True)
    (scratch / "out").mkdir()
    ready = scratch / "ready"
    log = (scratch / "engine.log").open("w")
    if engine == "timeweave":
        from tests.helpers.checkout_path import ensure

        env = dict(os.environ, PYTHONPATH=ensure())
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", "timeweave", "--query", query,
                "--scratch", str(scratch), "--trigger", trigger]
    else:
        env = dict(os.environ)
        env["PATH"] = f"{Path(args.flink_python).parent}:{env.get('PATH', '')}"
        env.pop("PYTHONPATH", None)
        argv = [args.flink_python, str(FLINK_LATENCY), query, str(src), str(scratch / "out"), str(ready),
                "--checkpoint-ms", str(args.checkpoint_ms), "--monitor-ms", str(args.monitor_ms),
                "--roll-ms", str(args.roll_ms), "--watermark-interval-ms", str(args.watermark_interval_ms)]
    load_before = os.getloadavg()[0]
    t_start = time.time()
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_for(ready.exists, proc, t_start + 180, lambda rc: f"{engine} exited {rc} before running: {scratch / 'engine.log'}",
                  f"{engine} not running after 180 s")
        running_s = time.time() - t_start
        poller = Poller([scratch / "out", scratch / "chk" / "query" / "commits"], args.poll_ms / 1000)
        poller.start()
        # the seed: the engine's first output before the feed starts (a job that has been running a while)
        seed(query, plan, src, (int(time.time() * 1000) // 1000 - 30) * 1000)
        _wait_for(lambda: any(p.parent.name == "out" for p in list(poller.seen)), proc, t_start + 300,
                  lambda rc: f"{engine} exited {rc} on the seed: {scratch / 'engine.log'}",
                  f"{engine}: no output for the seed after 300 s")
        seeded_s = time.time() - t_start
        time.sleep(2.0)  # the seed's last batches (the no-data batch after it)
        t0_ms = (int(time.time() * 1000) // 1000 + 1) * 1000  # the next whole second: windows start on ticks
        record = feed(query, plan, src, args.tick_ms, t0_ms)
        fed_at = time.time()
        # drain: until no new output file for --quiet s (at most --drain s)
        while time.time() - fed_at < args.drain:
            newest = max((t for p, t in poller.seen.items() if p.parent.name == "out"), default=fed_at)
            if time.time() - max(newest, fed_at) >= args.quiet:
                break
            time.sleep(0.1)
        poller.halt.set()
        poller.join()
        load_after = os.getloadavg()[0]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
    result = {"engine": engine, "query": query, "trigger": trigger if engine == "timeweave" else None,
              "checkpoint_ms": args.checkpoint_ms if engine == "flink" else None,
              "started_utc": datetime.fromtimestamp(t_start, UTC).strftime("%H:%M:%S"),
              "engine_running_s": round(running_s, 1), "seed_output_s": round(seeded_s, 1), "feeder_behind_max_s": round(record.behind_s, 3),
              "loadavg_before": round(load_before, 2), "loadavg_after": round(load_after, 2),
              **measure(engine, query, record, poller, args.warmup, t0_ms / 1000)}
    if engine == "timeweave":
        result["batches"] = batch_figures(scratch / "progress.jsonl", t0_ms / 1000 + args.warmup)
        commits = {int(p.name): t for p, t in poller.seen.items() if p.parent.name == "commits" and p.name.isdigit()}
        result["commit_log_entries"] = len(commits)
        # a batch's first output file seen -> its commits/<batch> log entry seen (Spark's commit, after the files)
        first_file: dict[int, float] = {}
        for path, t in poller.seen.items():
            if path.parent.name == "out" and path.name.startswith("part-b"):
                batch = int(path.name[6:18])
                first_file[batch] = min(t, first_file.get(batch, t))
        gaps = [commits[b] - t for b, t in first_file.items() if b in commits]
        result["files_to_commit_log_s_median"] = round(statistics.median(gaps), 3) if gaps else None
    if args.keep:
        result["scratch"] = str(scratch)
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def row_line(r: Mapping[str, Any]) -> str:
    c, e = r["commit_s"], r["from_emittable_s"]
    if not c["n"]:
        return f"| {r['query']} | {r['engine']} | {r['started_utc']} | no rows measured: {json.dumps(r)} |"
    name = r["engine"] + (f" (trigger {r['trigger']})" if r.get("trigger") else f" (checkpoint {r['checkpoint_ms']} ms)")
    emitted = r.get("emitted_s")
    em = f"{emitted['p50']:.3f} / {emitted['p99']:.3f}" if emitted else "-"
    return (f"| {r['query']} | {name} | {r['started_utc']} | {c['p50']:.3f} | {c['p95']:.3f} | {c['p99']:.3f} | "
            f"{c['max']:.3f} | {e['p50']:.3f} / {e['p99']:.3f} | {em} | {r['rows_offered']:,} | {r['output_rows']:,} | "
            f"{c['n']:,} | {r['loadavg_before']:.1f}–{r['loadavg_after']:.1f} |")


HEADER = ("| query | engine | start UTC | p50 s | p95 s | p99 s | max s | from emittable p50 / p99 s | emitted p50 / p99 s "
          "| rows offered | rows out | measured | load 1 min |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", default="tj_pk,tumble_1s")
    p.add_argument("--engines", default="flink,timeweave")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--rate", type=int, default=10_000, help="rows per second offered (per source: orders / bids)")
    p.add_argument("--duration", type=float, default=60.0, help="seconds of input fed")
    p.add_argument("--warmup", type=float, default=15.0, help="seconds at the feed's start left out of the percentiles")
    p.add_argument("--tick-ms", type=int, default=100, help="one file per source every this many ms")
    p.add_argument("--trigger", default="1 second", help="timeweave's processing-time trigger(s), comma-separated")
    p.add_argument("--checkpoint-ms", type=int, default=1000)
    p.add_argument("--monitor-ms", type=int, default=100)
    p.add_argument("--roll-ms", type=int, default=100)
    p.add_argument("--watermark-interval-ms", type=int, default=200)
    p.add_argument("--poll-ms", type=int, default=20)
    p.add_argument("--drain", type=float, default=30.0, help="at most this long for the last outputs after the feed")
    p.add_argument("--quiet", type=float, default=5.0, help="the drain ends after this long without a new output file")
    p.add_argument("--flink-python", default=FLINK_PYTHON)
    p.add_argument("--keep", action="store_true", help="keep each run's directories")
    p.add_argument("--json", type=Path)
    p.add_argument("--worker", choices=("timeweave",), help=argparse.SUPPRESS)
    p.add_argument("--query", help=argparse.SUPPRESS)
    p.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return timeweave_worker(args.query, args.scratch, args.trigger)
    rows = int(args.rate * args.duration)
    gen_dir = Path(tempfile.mkdtemp(prefix="tw-lat-gen-"))
    try:
        data = generate(rows, gen_dir)
    finally:
        shutil.rmtree(gen_dir, ignore_errors=True)
    ticks_n = int(args.duration * 1000 / args.tick_ms)
    report: dict[str, Any] = {"started_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S"), "args": vars(args) | {
        "json": str(args.json) if args.json else None}, "runs": []}
    plans = {}
    for query in args.queries.split(","):
        plans[query] = ticks(query, data, ticks_n, args.tick_ms, args.rate)
    engines = args.engines.split(",")
    print(HEADER, flush=True)
    for r in range(args.rounds):
        for engine in engines if r % 2 == 0 else engines[::-1]:
            for query in args.queries.split(","):
                for trigger in (args.trigger.split(",") if engine == "timeweave" else [None]):
                    try:
                        result = run_once(engine, query, plans[query], args, trigger or "")
                    except Exception as error:  # one failed run: report it, go on
                        result = {"engine": engine, "query": query, "trigger": trigger, "failed": repr(error)}
                        print(json.dumps(result), flush=True)
                        report["runs"].append(result)
                        continue
                    result["round"] = r
                    report["runs"].append(result)
                    print(row_line(result), flush=True)
                    print(json.dumps(result), file=sys.stderr, flush=True)
                    if args.json:
                        args.json.write_text(json.dumps(report, indent=1))
    report["ended_utc"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
