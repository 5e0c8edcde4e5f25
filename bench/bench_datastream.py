"""DataStream windows and the continuous GROUP BY, streaming (issue 16): timeweave vs Flink vs a hand-written processor.

    .venv/bin/python bench/bench_datastream.py DATADIR [--engines flink,timeweave,tws,group_by] [--rounds 3]
        [--repeat 3] [--flink-python /work/pyflink-venv/bin/python] [--json results.json]

``DATADIR`` is ``../shared/bench/gen_data.py DATADIR --rows 1000000``'s output: its ``bids/`` (1 M bids over 100
items, one every 10 ms, in two CSV files).  The workload: per item, a 10-minute window sliding by 1 minute,
``SUM(price)``, allowed lateness 1 minute, watermark ``bidtime - 1 s``, results written out.  Engines:

* ``timeweave``: the DataStream job (``python -m timeweave.jobs streaming`` with ``{"datastream": {"pipeline":
  "bench.bench_datastream:pipeline"}}``, :func:`pipeline` below: ``key_by("item")``,
  ``window(Sliding.of("10 min", "1 min"))``, ``allowed_lateness("1 min")``, an ``AggregateFunction`` summing the
  prices and a process step adding the item), availableNow, ``--flush`` (the last windows fire as Flink's end of
  input fires them), parquet out;
* ``flink``: PyFlink 2.3 in its own venv, the Table API's ``HOP`` window TVF with the same size, slide, key and
  sum (streaming, parallelism 2, CSV in and out, as ``flink_bench.py``), run Java-side; Flink SQL's window TVFs
  have no allowed lateness (the data holds no late rows, so the results are the same);
* ``tws``: :class:`SlidingSums`, the processor a Spark user writes by hand with ``transformWithStateInPandas``
  (per item: price sums per 1-minute slice in a ValueState, an event-time timer at every window end that fires
  the window's sum), the same CSV input and watermark, no flush (Spark has none: the windows after the
  watermark's last position never fire, which only spares it work), parquet out;
* ``group_by``: timeweave's continuous GROUP BY job (``group_aggregate``: ``COUNT(*)``, ``SUM(price)`` per item,
  retract changelog), one file per micro-batch (``maxFilesPerTrigger=1``: the second batch retracts the
  first's 100 results), no flush.

Rounds, repeats, the figures (cold incl. start, warm job rows/s, rows per CPU-second, loads) and the summary are
those of ``bench_windows_streaming.py``; the summary's ratios are against Flink.  ``--worker NAME`` is one
engine's process (the driver starts them).
"""

from __future__ import annotations

import time

T_START = time.time()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from decimal import Decimal  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bench.bench_windows_streaming as W  # noqa: E402

if __name__ == "__main__":
    # The cold figure counts from this process's start (the job imports this file again for its pipeline).
    W.T_START = T_START
SIZE_MS, SLIDE_MS, LATENESS_MS = 600_000, 60_000, 60_000
OUTPUT_SCHEMA = "item STRING, total DECIMAL(20, 2)"
FLINK_QUERY = """
SELECT window_start, window_end, item, SUM(price) AS total
FROM HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '10' MINUTE)
GROUP BY window_start, window_end, item"""


# -- timeweave's DataStream pipeline -------------------------------------------------------------------------
def _price_sum_class() -> type:
    from timeweave.core.datastream.functions import AggregateFunction

    class PriceSum(AggregateFunction):
        """The window's sum of ``price`` (DECIMAL: ``Decimal``s, exact)."""

        def create(self) -> Decimal:
            return Decimal(0)

        def add(self, value: dict[str, Any], accumulator: Decimal) -> Decimal:
            return accumulator + value["price"]

        def merge(self, a: Decimal, b: Decimal) -> Decimal:
            return a + b

    return PriceSum


def with_item(key: Any, ctx: Any, sums: list[Decimal]) -> list[dict[str, Any]]:
    """The process step: the window's sum with its item."""
    return [{"item": key, "total": sums[0]}]


def pipeline(df: Any) -> Any:
    """The DataStream job's pipeline (the config's ``bench.bench_datastream:pipeline``)."""
    from pyspark import cloudpickle

    import timeweave
    from timeweave.core.datastream import Sliding

    # The functions travel to Spark's Python workers by value: the workers need not import this file.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return (timeweave.stream(df, time="bidtime", watermark="1 second")
            .key_by("item")
            .window(Sliding.of("10 min", "1 min"))
            .allowed_lateness("1 min")
            .aggregate(_price_sum_class()(), with_item, output_schema=OUTPUT_SCHEMA))


def bids_source(datadir: Path, **options: str) -> dict[str, Any]:
    return {"path": str(datadir / "bids"), "format": "csv", "schema": W.BIDS_SCHEMA,
            "options": {"header": "false", **options}}


def datastream_config(datadir: Path, out: Path) -> dict[str, Any]:
    return {"datastream": {"pipeline": "bench.bench_datastream:pipeline"}, "input": bids_source(datadir),
            "output": {"path": str(out / "out")}, "checkpoint": str(out / "chk"), "trigger": {"available_now": True}}


def group_by_config(datadir: Path, out: Path) -> dict[str, Any]:
    return {"group_aggregate": {"keys": ["item"], "aggregates": {"cnt": "COUNT(*)", "total": "SUM(price)"},
                                "time": "bidtime", "changelog": "retract"},
            "input": {**bids_source(datadir, maxFilesPerTrigger="1"), "watermark_delay": "1 second"},
            "output": {"path": str(out / "out")}, "checkpoint": str(out / "chk"), "trigger": {"available_now": True}}


def timeweave_worker(datadir: Path, engine: str, repeat: int) -> None:
    """One timeweave process (the DataStream job or the continuous GROUP BY job), ``repeat`` runs."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("TIMEWEAVE_SHUFFLE_PARTITIONS", "2")
    from timeweave.jobs.session import get_session
    from timeweave.jobs.streaming import run_streaming

    rows = W.count_lines(datadir / "bids")
    spark = get_session()
    scratch = Path(tempfile.mkdtemp(prefix=f"tw-bench-{engine}-"))

    def run(i: int) -> dict[str, Any]:
        if engine == "timeweave":
            metrics = run_streaming(datastream_config(datadir, scratch / f"run{i}"), spark, flush=True)
        else:
            metrics = run_streaming(group_by_config(datadir, scratch / f"run{i}"), spark)
        return {"output_rows": metrics["rows_out"], "late": metrics["late"], "batches": metrics["batches"],
                "query_s": metrics["seconds"]}

    try:
        W.timed_runs(rows, repeat, run, engine, "datastream" if engine == "timeweave" else "group_by")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# -- the hand-written transformWithStateInPandas processor ----------------------------------------------------
def sliding_sums_class() -> type:
    """:class:`SlidingSums` (built late: pyspark is imported only in the Spark processes)."""
    import numpy as np
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor

    class SlidingSums(StatefulProcessor):
        """Per item: price sums per 1-minute slice (ValueState ``starts``/``totals``), a timer at each window's
        last millisecond; the timer emits the sum of the window's ten slices and drops slices no window within
        the allowed lateness still needs."""

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.slices = handle.getValueState("slices", "starts ARRAY<BIGINT>, totals ARRAY<DOUBLE>")

        def load(self) -> dict[int, float]:
            held = self.slices.get() if self.slices.exists() else None
            return dict(zip(held[0], held[1], strict=True)) if held else {}

        def store(self, slices: dict[int, float]) -> None:
            if slices:
                self.slices.update((list(slices), list(slices.values())))
            else:
                self.slices.clear()

        def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
            frame = pd.concat(list(rows), ignore_index=True)
            ms = frame["bidtime"].to_numpy().astype("datetime64[ms]").astype(np.int64)
            sums = frame["price"].astype(float).groupby(ms // SLIDE_MS * SLIDE_MS).sum()
            slices = self.load()
            for start, total in sums.items():
                if start not in slices:
                    for end in range(start + SLIDE_MS, start + SIZE_MS + 1, SLIDE_MS):
                        self.handle.registerTimer(end - 1)
                slices[start] = slices.get(start, 0.0) + total
            self.store(slices)
            return iter(())

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
            end = expiredTimerInfo.getExpiryTimeInMs() + 1
            start = end - SIZE_MS
            slices = self.load()
            total = sum(v for s, v in slices.items() if start <= s < end)
            horizon = timerValues.getCurrentWatermarkInMs() - SIZE_MS - LATENESS_MS
            self.store({s: v for s, v in slices.items() if s >= horizon})
            yield pd.DataFrame({"item": [key[0]], "window_start": [pd.Timestamp(start, unit="ms")],
                                "window_end": [pd.Timestamp(end, unit="ms")], "total": [total]})

    return SlidingSums


def tws_worker(datadir: Path, repeat: int) -> None:
    """One process of the hand-written processor's query, ``repeat`` runs on fresh outputs and checkpoints."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("TIMEWEAVE_SHUFFLE_PARTITIONS", "2")
    from pyspark import cloudpickle

    from timeweave.jobs.session import get_session

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    rows = W.count_lines(datadir / "bids")
    spark = get_session()
    scratch = Path(tempfile.mkdtemp(prefix="tw-bench-tws-"))
    processor = sliding_sums_class()

    def run(i: int) -> dict[str, Any]:
        bids = (spark.readStream.schema(W.BIDS_SCHEMA).option("header", "false").csv(str(datadir / "bids"))
                .withWatermark("bidtime", "1 second"))
        sums = bids.groupBy("item").transformWithStateInPandas(
            processor(), "item STRING, window_start TIMESTAMP, window_end TIMESTAMP, total DOUBLE", "Append",
            "EventTime")
        out = scratch / f"run{i}"
        query = (sums.writeStream.format("parquet").option("path", str(out / "out"))
                 .option("checkpointLocation", str(out / "chk")).trigger(availableNow=True).start())
        query.awaitTermination()
        batches = query.recentProgress
        return {"output_rows": spark.read.parquet(str(out / "out")).count(), "batches": len(batches)}

    try:
        W.timed_runs(rows, repeat, run, "tws", "datastream")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# -- Flink: the Table API's HOP, in the PyFlink venv ----------------------------------------------------------
def flink_worker(datadir: Path, repeat: int) -> None:
    """One PyFlink process (streaming, parallelism 2, CSV in and out), ``repeat`` runs of the HOP query."""
    sys.path.insert(0, str(W.FLINK_BENCH.parent.parent))
    from flink_oracle import make_table_env, table_ddl

    rows = W.count_lines(datadir / "bids")
    bids = [["bidtime", "TIMESTAMP(3)"], ["price", "DECIMAL(10, 2)"], ["item", "STRING"], ["supplier_id", "STRING"]]
    t_env = make_table_env("streaming", 2, {"pipeline.auto-watermark-interval": "200 ms"})
    t_env.execute_sql(table_ddl(dict(name="Bid", dir="bids", schema=bids, rowtime="bidtime", watermark_delay=1,
                                     header=False), str(datadir / "bids")))
    scratch = Path(tempfile.mkdtemp(prefix="tw-bench-flink-hop-"))

    def run(i: int) -> dict[str, Any]:
        out = scratch / f"run{i}"
        t_env.execute_sql("DROP TEMPORARY TABLE IF EXISTS sink_t")
        t_env.execute_sql("CREATE TEMPORARY TABLE sink_t (window_start TIMESTAMP(3), window_end TIMESTAMP(3), "
                          f"item STRING, total DECIMAL(38, 2)) WITH ('connector' = 'filesystem', 'path' = "
                          f"'file://{out}', 'format' = 'csv')")
        result = t_env.execute_sql("INSERT INTO sink_t " + FLINK_QUERY)
        net = result.get_job_client().get_job_execution_result().result().get_net_runtime() / 1000
        written = sum(W.count_lines(Path(d)) for d, _, files in os.walk(out) if any(not f.startswith(".") for f in files))
        return {"output_rows": written, "net_s": round(net, 2)}

    try:
        W.timed_runs(rows, repeat, run, "flink", "datastream")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("datadir", type=Path, help="gen_data.py's output directory (its bids/)")
    p.add_argument("--engines", default="flink,timeweave,tws,group_by")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3, help="runs per process (the first is cold)")
    p.add_argument("--flink-python", default=W.FLINK_PYTHON)
    p.add_argument("--json", type=Path)
    p.add_argument("--worker", choices=("flink", "timeweave", "tws", "group_by"), help=argparse.SUPPRESS)
    args = p.parse_args()
    datadir = args.datadir.resolve()
    if args.worker == "flink":
        flink_worker(datadir, args.repeat)
    elif args.worker == "tws":
        tws_worker(datadir, args.repeat)
    elif args.worker:
        timeweave_worker(datadir, args.worker, args.repeat)
    if args.worker:
        return 0
    me = str(Path(__file__).resolve())

    def command(engine: str) -> tuple[list[str], dict[str, str] | None]:
        python = args.flink_python if engine == "flink" else sys.executable
        env = W.flink_env(args.flink_python) if engine == "flink" else None
        return [python, me, str(datadir), "--worker", engine, "--repeat", str(args.repeat)], env

    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    processes = W.interleave(args.rounds, {engine: command(engine) for engine in args.engines.split(",")})
    medians = {name: W.summarize(s) for name, s in processes.items() if s}
    print("\n" + W.table(medians, next(iter(medians))), flush=True)
    ended = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    if args.json:
        args.json.write_text(json.dumps({"started_utc": started, "ended_utc": ended, "processes": processes,
                                         "medians": medians}, indent=1))
    print(json.dumps({"started_utc": started, "ended_utc": ended}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
