"""Batch window doors vs Spark's native window() / session_window() group-by, in one run on the same data.

    nice -n 10 python bench/bench_windows.py [--rows 1000000] [--repeat 3] [--data DIR] [--only HOP]

Bids from ../shared/bench/gen_data.py (100 items, one row every 10 ms from 2024-01-01) are converted to parquet
once (``DIR/bids.parquet``), read and cached (the driver gets 6 GB, so 10 M rows stay in memory; each query's plan
is checked to read the cache);
each query is written to Spark's ``noop`` sink (the whole plan runs, nothing is stored), once to warm up, then
``--repeat`` times; the table shows the median seconds and rows/s per query and the ratio to Spark's native plan.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import timeweave
from timeweave.core.windows import cumulate, hop, session, tumble

GEN = Path(__file__).resolve().parents[2] / "shared" / "bench" / "gen_data.py"


def _bids(spark, rows: int, data: str | None):
    root = Path(data) if data else Path(tempfile.mkdtemp(prefix="tw-bench-windows-"))
    if not (root / "bids").exists():
        subprocess.run([sys.executable, str(GEN), str(root), "--rows", str(rows)], check=True)
    parquet = root / "bids.parquet"
    if not parquet.exists():
        spark.read.csv(str(root / "bids"), schema="bidtime TIMESTAMP, price DECIMAL(10,2), item STRING, "
                       "supplier_id STRING").write.parquet(str(parquet))
    df = spark.read.parquet(str(parquet)).cache()
    df.count()
    return df


def _reads_the_cache(df) -> bool:
    return "InMemoryTableScan" in df._jdf.queryExecution().executedPlan().toString()


HOP_COUNT_SUM = ("SELECT window_start, window_end, item, COUNT(*) AS cnt, SUM(price) AS total FROM TABLE(HOP(TABLE bids, "
                 "DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)) GROUP BY window_start, window_end, item")

HOP_1_10_COUNT_SUM = HOP_COUNT_SUM.replace("INTERVAL '5' MINUTES", "INTERVAL '1' MINUTE")


def _queries(spark, bids):
    bids.createOrReplaceTempView("bids")
    count, count_sum = {"cnt": "COUNT(*)"}, {"cnt": "COUNT(*)", "total": "SUM(price)"}

    def agg(spec, aggregates):
        return lambda: timeweave.window_aggregate(bids, aggregates, keys="item", time="bidtime", window=spec)

    def native(window, *aggs):
        return lambda: bids.groupBy(window, "item").agg(*aggs)

    def sql(text):
        return lambda: timeweave.sql(spark, text)

    n, s = F.count(F.lit(1)).alias("cnt"), F.sum("price").alias("total")
    return [
        ("TUMBLE 1 min COUNT per item", "timeweave DataFrame", agg(tumble("1 minute"), count)),
        ("TUMBLE 1 min COUNT per item", "timeweave SQL", sql(
            "SELECT window_start, window_end, item, COUNT(*) AS cnt FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(bidtime), "
            "INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, item")),
        ("TUMBLE 1 min COUNT per item", "Spark window()", native(F.window("bidtime", "1 minute"), n)),
        ("TUMBLE 1 min COUNT+SUM per item", "timeweave DataFrame", agg(tumble("1 minute"), count_sum)),
        ("TUMBLE 1 min COUNT+SUM per item", "Spark window()", native(F.window("bidtime", "1 minute"), n, s)),
        ("HOP 5/10 min COUNT per item", "timeweave DataFrame", agg(hop("5 minutes", "10 minutes"), count)),
        ("HOP 5/10 min COUNT per item", "timeweave SQL", sql(
            "SELECT window_start, window_end, item, COUNT(*) AS cnt FROM TABLE(HOP(TABLE bids, DESCRIPTOR(bidtime), "
            "INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)) GROUP BY window_start, window_end, item")),
        ("HOP 5/10 min COUNT per item", "Spark window()", native(F.window("bidtime", "10 minutes", "5 minutes"), n)),
        # the same aggregates as Columns: not read as mergeable, so the TVF's exploded rows are grouped (the plan
        # before slice sharing)
        ("HOP 5/10 min COUNT per item", "timeweave DataFrame, exploded", agg(hop("5 minutes", "10 minutes"), {"cnt": n})),
        ("HOP 5/10 min COUNT+SUM per item", "timeweave DataFrame", agg(hop("5 minutes", "10 minutes"), count_sum)),
        ("HOP 5/10 min COUNT+SUM per item", "timeweave DataFrame, exploded",
         agg(hop("5 minutes", "10 minutes"), {"cnt": n, "total": F.sum("price")})),
        ("HOP 5/10 min COUNT+SUM per item", "timeweave SQL", sql(HOP_COUNT_SUM)),
        # the same query with HAVING TRUE: a shape the SQL door's sliced plan does not take, so it groups the TVF's
        # exploded rows (the SQL door's plan before 2026-12-06); the optimizer drops the filter
        ("HOP 5/10 min COUNT+SUM per item", "timeweave SQL, TVF rows (before)", sql(HOP_COUNT_SUM + " HAVING TRUE")),
        ("HOP 5/10 min COUNT+SUM per item", "Spark window()",
         native(F.window("bidtime", "10 minutes", "5 minutes"), n, s)),
        # ten windows per row: where sharing slices pays
        ("HOP 1/10 min COUNT+SUM per item", "timeweave SQL", sql(HOP_1_10_COUNT_SUM)),
        ("HOP 1/10 min COUNT+SUM per item", "timeweave SQL, TVF rows (before)", sql(HOP_1_10_COUNT_SUM + " HAVING TRUE")),
        ("HOP 1/10 min COUNT+SUM per item", "Spark window()", native(F.window("bidtime", "10 minutes", "1 minute"), n, s)),
        ("CUMULATE 1/10 min COUNT per item", "timeweave DataFrame", agg(cumulate("1 minute", "10 minutes"), count)),
        ("CUMULATE 1/10 min COUNT per item", "timeweave DataFrame, exploded",
         agg(cumulate("1 minute", "10 minutes"), {"cnt": n})),
        ("SESSION 30 s COUNT per item", "timeweave DataFrame", agg(session("30 seconds", "item"), count)),
        ("SESSION 30 s COUNT per item", "Spark session_window()", native(F.session_window("bidtime", "30 seconds"), n)),
    ]


def _time(build, repeat: int) -> float:
    _warm_up(build)
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        build().write.format("noop").mode("overwrite").save()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def _warm_up(build) -> None:
    df = build()
    if not _reads_the_cache(df):  # a door that dropped the cache would be timed against a re-scan
        raise SystemExit(f"this query does not read the cached bids:\n{df._jdf.queryExecution().executedPlan()}")
    df.write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", help="a directory gen_data.py wrote (else a temporary one)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--only", help="run the queries whose name contains this text (e.g. HOP)")
    parser.add_argument("--interleave", action="store_true",
                        help="one run of every selected query per round (load drifts evenly over the doors)")
    args = parser.parse_args()
    spark = (SparkSession.builder.master(args.master).config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "6g").config("spark.ui.showConsoleProgress", "false")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    bids = _bids(spark, args.rows, args.data)
    print(f"rows={args.rows} master={args.master} cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f}", flush=True)
    native_seconds: dict[str, float] = {}
    results = []
    selected = [q for q in _queries(spark, bids) if not args.only or args.only in q[0]]
    interleaved: dict[tuple[str, str], list[float]] = {}
    if args.interleave:
        for _query, _door, build in selected:
            _warm_up(build)
        for _ in range(args.repeat):
            for query, door, build in selected:
                start = time.perf_counter()
                build().write.format("noop").mode("overwrite").save()
                interleaved.setdefault((query, door), []).append(time.perf_counter() - start)
    for query, door, build in selected:
        runs = interleaved.get((query, door))
        seconds = statistics.median(runs) if runs else _time(build, args.repeat)
        results.append((query, door, seconds))
        if door.startswith("Spark"):
            native_seconds[query] = seconds
        print(f"{query:34} {door:30} {seconds:7.2f} s {args.rows / seconds / 1e6:6.2f} M rows/s "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    print("\n| query | door | median s | M rows/s | vs Spark native |\n|---|---|---|---|---|")
    for query, door, seconds in results:
        ratio = native_seconds.get(query)
        versus = "" if ratio is None or door.startswith("Spark") else f"{ratio / seconds:.2f}x"
        print(f"| {query} | {door} | {seconds:.2f} | {args.rows / seconds / 1e6:.2f} | {versus} |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
