"""Streaming doors, timeweave against Flink (issues 19, 22): TUMBLE 1 minute over 1 M bids (also ``mr``, the
MATCH_RECOGNIZE ticker query, and ``tj_pk``, the temporal join of 1 M orders with 10 k rate versions), interleaved runs.

    .venv/bin/python bench/bench_windows_streaming.py DATADIR [--queries tumble,tumble_keyed] [--rounds 3]
        [--repeat 3] [--flink-python /work/pyflink-venv/bin/python] [--json results.json]

``DATADIR`` is ``../shared/bench/gen_data.py DATADIR --rows 1000000``'s output (its ``bids/``: ``bidtime,
price, item, supplier_id``, one row every 10 ms, 100 items).  The queries are the Flink benchmark's
(``../shared/conformance/flink/bench/flink_bench.py``: ``tumble`` = ``COUNT(*)`` per 1-minute window, ``tumble_keyed``
= ``COUNT(*), SUM(price)`` per window and item), watermark ``bidtime - 1 s`` on both engines:

* Flink: ``flink_bench.py DATADIR QUERY --repeat N`` in the PyFlink venv (streaming, parallelism 2, CSV in and
  out), one JVM per process;
* timeweave: ``python -m timeweave.jobs streaming``'s ``run_streaming`` (availableNow, ``--flush``: the bounded
  input's last windows fire, as Flink's end of input fires them) with a window job config over the same CSV
  files, one SparkSession per process, parquet out, 2 shuffle partitions (one per core).

Each round starts one process per engine and query (the engines' order alternates round by round: the
machine is shared and its speed drifts); each process runs the query ``--repeat`` times on fresh outputs
(and checkpoints).  Per run: job seconds (query submitted to results written), input rows/s, the engine's
CPU seconds (Flink: its JVM; timeweave: driver + JVM + Python workers) and rows per CPU-second, the
1-minute load before and after.  ``cold`` is the process's first run including its start (Python, the JVM,
the session); ``warm`` the later runs.  The summary gives medians over all rounds and the ratio
timeweave / Flink, and each engine's result row counts side by side (they must agree: 167 windows for
``tumble``).

``--worker timeweave`` is the timeweave side of one process (the driver starts it); it prints one JSON line
per run and a summary line, as ``flink_bench.py`` does.
"""

from __future__ import annotations

import time

T_START = time.time()  # the cold figure counts from here, as flink_bench.py's does

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Callable, Mapping, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FLINK_BENCH = ROOT.parent / "shared" / "conformance" / "flink" / "bench" / "flink_bench.py"
FLINK_PYTHON = "/work/pyflink-venv/bin/python"
BIDS_SCHEMA = "bidtime TIMESTAMP, price DECIMAL(10, 2), item STRING, supplier_id STRING"

#: The window job's ``window`` section for each of the Flink benchmark's queries.
WINDOW_QUERIES: Mapping[str, dict[str, Any]] = {
    "tumble": {"function": "tumble", "time": "bidtime", "size": "1 minute", "aggregates": {"cnt": "COUNT(*)"}},
    "tumble_keyed": {"function": "tumble", "time": "bidtime", "size": "1 minute", "keys": ["item"],
                     "aggregates": {"cnt": "COUNT(*)", "total": "SUM(price)"}},
}


def count_lines(directory: Path) -> int:
    """Rows of the headerless CSV files of ``directory``."""
    total = 0
    for path in sorted(directory.iterdir()):
        if path.is_file() and not path.name.startswith("."):
            with path.open("rb") as fh:
                total += sum(1 for _ in fh)
    return total


#: The other streaming doors' jobs for flink_bench.py's ``mr`` and ``tj_pk`` (the same queries, watermark 1 s).
TICKER_SCHEMA = "symbol STRING, rowtime TIMESTAMP, price BIGINT, tax BIGINT"
ORDERS_SCHEMA = "order_id BIGINT, price DECIMAL(10, 2), currency STRING, order_time TIMESTAMP"
RATES_SCHEMA = "currency STRING, conversion_rate DECIMAL(10, 4), update_time TIMESTAMP"
MR_CLAUSE = ("PARTITION BY symbol ORDER BY rowtime MEASURES FIRST(A.rowtime) AS start_tstamp, LAST(A.rowtime) AS "
             "end_tstamp, AVG(A.price) AS avgPrice ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B) "
             "DEFINE A AS AVG(A.price) < 15")
OTHER_QUERIES = ("mr", "tj_pk")
#: The input directories each query reads (its input rows are theirs).
INPUTS = {"tumble": ("bids",), "tumble_keyed": ("bids",), "mr": ("ticker",), "tj_pk": ("orders", "rates")}


def _csv(datadir: Path, name: str, schema: str) -> dict[str, Any]:
    return {"path": str(datadir / name), "format": "csv", "schema": schema, "options": {"header": "false"},
            "watermark_delay": "1 second"}


def job_config(datadir: Path, query: str, out: Path) -> dict[str, Any]:
    """The timeweave streaming job of ``query`` over ``datadir`` (watermarks 1 s), outputs and checkpoint under ``out``."""
    if query in WINDOW_QUERIES:
        return window_config(datadir, query, out)
    common = {"output": {"path": str(out / "out")}, "checkpoint": str(out / "chk")}
    if query == "mr":
        return {"match_recognize": {"clause": MR_CLAUSE}, "input": _csv(datadir, "ticker", TICKER_SCHEMA), **common}
    if query == "tj_pk":
        return {"left": _csv(datadir, "orders", ORDERS_SCHEMA), "right": _csv(datadir, "rates", RATES_SCHEMA),
                "versioned": {"key": ["currency"], "time": "update_time"},
                "join": {"left_time": "order_time", "left_key": ["currency"], "how": "inner"}, **common}
    raise ValueError(f"unknown query {query!r}")


def window_config(datadir: Path, query: str, out: Path) -> dict[str, Any]:
    """The timeweave window job over ``datadir/bids`` (watermark 1 s), outputs and checkpoint under ``out``."""
    return {
        "window": dict(WINDOW_QUERIES[query]),
        "input": {"path": str(datadir / "bids"), "format": "csv", "schema": BIDS_SCHEMA,
                  "options": {"header": "false"}, "watermark_delay": "1 second"},
        "output": {"path": str(out / "out")},
        "checkpoint": str(out / "chk"),
        "trigger": {"available_now": True},
    }


def timed_runs(input_rows: int, repeat: int, run: Callable[[int], dict[str, Any]], engine: str, query: str) -> None:
    """Call ``run(i)`` ``repeat`` times under the process tree's CPU clock; print a JSON line per run and a summary.

    ``run`` returns ``{"output_rows": ...}`` plus anything to report; the first run's end is the cold figure's.
    """
    from bench.bench_streaming import tree_cpu_split

    runs = []
    first_end = None
    for i in range(repeat):
        load_before = os.getloadavg()[0]
        split_before = tree_cpu_split(os.getpid())
        start = time.time()
        extra = run(i)
        job_s = time.time() - start
        split = {k: v - split_before.get(k, 0.0) for k, v in tree_cpu_split(os.getpid()).items()}
        cpu = sum(split.values())
        if first_end is None:
            first_end = time.time()
        record = {"engine": engine, "query": query, "run": i, "job_s": round(job_s, 2),
                  "rows_per_s_job": round(input_rows / job_s), "cpu_s": round(cpu, 1),
                  "rows_per_cpu_s": round(input_rows / cpu) if cpu else None,
                  # where the CPU went: this process (the driver), the JVM(s), the other (Python worker) processes
                  "cpu_split_s": {k: round(v, 1) for k, v in split.items()},
                  "loadavg_before": round(load_before, 2), "loadavg_after": round(os.getloadavg()[0], 2), **extra}
        runs.append(record)
        print(json.dumps(record), flush=True)
    cold = first_end - T_START
    print(json.dumps({"engine": engine, "bench": query, "input_rows": input_rows, "runs": runs,
                      "cold_incl_jvm_s": round(cold, 2), "rows_per_s_cold_incl_jvm": round(input_rows / cold)}),
          flush=True)


def timeweave_worker(datadir: Path, query: str, repeat: int) -> None:
    """One timeweave process: a SparkSession, then the window job ``repeat`` times on fresh outputs."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("TIMEWEAVE_SHUFFLE_PARTITIONS", "2")
    from timeweave.jobs.session import get_session
    from timeweave.jobs.streaming import run_streaming

    rows = sum(count_lines(datadir / name) for name in INPUTS[query])
    spark = get_session()
    scratch = Path(tempfile.mkdtemp(prefix="tw-bench-win-"))

    def run(i: int) -> dict[str, Any]:
        metrics = run_streaming(job_config(datadir, query, scratch / f"run{i}"), spark, flush=True)
        return {"output_rows": metrics["rows_out"], "late": metrics["late"], "batches": metrics["batches"],
                "query_s": metrics["seconds"]}

    try:
        timed_runs(rows, repeat, run, "timeweave", query)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# -- the driver: both engines, interleaved ---------------------------------------------------------------------
def run_process(argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 1800) -> dict[str, Any]:
    """Run one engine process; its summary (the last JSON line with ``runs``) with the process's wall seconds, or
    ``{"failed": exit code, "causes": [the exception lines], ...}``."""
    start = time.time()
    done = subprocess.run(list(argv), capture_output=True, text=True, env=dict(env) if env else None,
                          timeout=timeout, check=False)
    wall = time.time() - start
    summary = None
    for line in done.stdout.splitlines():
        if line.startswith("{") and '"runs"' in line:
            summary = json.loads(line)
    if done.returncode != 0 or summary is None:
        # Spark's plan dumps bury the cause: keep the Python and Java exception lines.
        causes = [line for line in done.stderr.splitlines()
                  if ("Error" in line or "Exception" in line) and not line.lstrip().startswith("at ")]
        return {"failed": done.returncode, "argv": list(argv), "stdout": done.stdout[-3000:],
                "causes": causes[-20:], "process_wall_s": round(wall, 1)}
    summary["process_wall_s"] = round(wall, 1)
    for run in summary["runs"]:
        if "rows_per_cpu_s" not in run and run.get("jvm_cpu_s"):  # flink_bench.py reports its JVM's CPU seconds
            run["cpu_s"] = run["jvm_cpu_s"]
            run["rows_per_cpu_s"] = round(summary["input_rows"] / run["jvm_cpu_s"])
    return summary


def flink_env(flink_python: str) -> dict[str, str]:
    """The environment of a PyFlink process: its venv's ``bin`` first on PATH (flink_bench.py's set-up)."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(flink_python).parent}:{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    return env


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize(summaries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Medians of one engine and query's processes: cold rows/s, warm rows/s and rows per CPU-second, loads."""
    warm = [r for s in summaries for r in s["runs"][1:]]
    cold_cpu = [s["runs"][0] for s in summaries]
    return {
        "processes": len(summaries), "warm_runs": len(warm),
        "cold_rows_per_s": median([s["rows_per_s_cold_incl_jvm"] for s in summaries]),
        "cold_job_rows_per_s": median([r["rows_per_s_job"] for r in cold_cpu]),
        "warm_rows_per_s": median([r["rows_per_s_job"] for r in warm]),
        "warm_rows_per_s_min": min((r["rows_per_s_job"] for r in warm), default=None),
        "warm_rows_per_s_max": max((r["rows_per_s_job"] for r in warm), default=None),
        "warm_job_s": median([r["job_s"] for r in warm]),
        "warm_rows_per_cpu_s": median([r["rows_per_cpu_s"] for r in warm if r["rows_per_cpu_s"]]),
        "load_min": min(r["loadavg_before"] for s in summaries for r in s["runs"]),
        "load_max": max(r["loadavg_after"] for s in summaries for r in s["runs"]),
        "output_rows": sorted({r.get("output_rows") for s in summaries for r in s["runs"]} - {None}),
    }


def interleave(rounds: int, commands: Mapping[str, tuple[Sequence[str], Mapping[str, str] | None]],
               log: Callable[[str], None] = lambda text: print(text, flush=True)) -> dict[str, list[dict[str, Any]]]:
    """Run every engine's command once per round, the engines' order reversed every other round."""
    names = list(commands)
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            argv, env = commands[name]
            summary = run_process(argv, env)
            if "failed" in summary:
                log(json.dumps({"round": r, "engine": name, "failure": summary}))
                continue
            out[name].append(summary)
            warm = [x["rows_per_s_job"] for x in summary["runs"][1:]]
            # The whole summary, so that an interrupted comparison keeps every finished process's figures.
            log(json.dumps({"round": r, "engine": name, "cold_rows_per_s": summary["rows_per_s_cold_incl_jvm"],
                            "warm_rows_per_s": warm, "loads": [x["loadavg_before"] for x in summary["runs"]],
                            "summary": summary}))
    return out


def table(results: Mapping[str, dict[str, Any]], reference: str) -> str:
    """A markdown table of the summaries, with each engine's warm rows/s over ``reference``'s."""
    ref = results[reference]
    lines = ["| engine | cold rows/s (incl. start) | warm rows/s, median (min–max) | warm job s | warm rows/CPU-s | "
             f"warm vs {reference} | load 1 min | result rows |", "|---|---|---|---|---|---|---|---|"]
    for name, s in results.items():
        ratio = s["warm_rows_per_s"] / ref["warm_rows_per_s"] if ref["warm_rows_per_s"] else float("nan")
        lines.append(
            f"| {name} | {s['cold_rows_per_s']:,.0f} | {s['warm_rows_per_s']:,.0f} ({s['warm_rows_per_s_min']:,}–"
            f"{s['warm_rows_per_s_max']:,}) | {s['warm_job_s']:.2f} | {s['warm_rows_per_cpu_s']:,.0f} | {ratio:.2f}x | "
            f"{s['load_min']:.1f}–{s['load_max']:.1f} | {', '.join(f'{n:,}' for n in s['output_rows'])} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("datadir", type=Path, help="gen_data.py's output directory (its bids/)")
    p.add_argument("--queries", default="tumble,tumble_keyed", help="comma-separated: " + ", ".join([*WINDOW_QUERIES, *OTHER_QUERIES]))
    p.add_argument("--rounds", type=int, default=3, help="processes per engine and query")
    p.add_argument("--repeat", type=int, default=3, help="runs per process (the first is cold)")
    p.add_argument("--engines", default="flink,timeweave")
    p.add_argument("--flink-python", default=FLINK_PYTHON)
    p.add_argument("--json", type=Path, help="write every process's summary and the medians here")
    p.add_argument("--worker", choices=("timeweave",), help=argparse.SUPPRESS)
    p.add_argument("--query", help=argparse.SUPPRESS)
    args = p.parse_args()
    datadir = args.datadir.resolve()
    if args.worker:
        timeweave_worker(datadir, args.query, args.repeat)
        return 0
    out_dir = Path(tempfile.mkdtemp(prefix="tw-bench-flink-out-"))
    env = flink_env(args.flink_python)
    env["BENCH_OUT"] = str(out_dir)
    report: dict[str, Any] = {"started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "queries": {}}
    for query in args.queries.split(","):
        commands = {
            "flink": ([args.flink_python, str(FLINK_BENCH), str(datadir), query, "--repeat", str(args.repeat)], env),
            "timeweave": ([sys.executable, str(Path(__file__).resolve()), str(datadir), "--worker", "timeweave",
                           "--query", query, "--repeat", str(args.repeat)], None),
        }
        commands = {name: commands[name] for name in args.engines.split(",")}
        processes = interleave(args.rounds, commands)
        medians = {name: summarize(s) for name, s in processes.items() if s}
        report["queries"][query] = {"processes": processes, "medians": medians}
        print(f"\n{query}:\n" + table(medians, next(iter(medians))), flush=True)
    report["ended_utc"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    shutil.rmtree(out_dir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    print(json.dumps({"started_utc": report["started_utc"], "ended_utc": report["ended_utc"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
