"""Rows/s of the MATCH_RECOGNIZE DataFrame door on ../shared/bench/gen_data.py ticker data.

    python bench/bench_match_recognize.py DATA_DIR [--master local[2]] [--door dataframe|udtf] [--query avg|seed001]
        [--limit N] [--runs N] [--shuffle-partitions N]

DATA_DIR is gen_data.py's output directory (its ticker/ CSVs).  Runs the Flink benchmark's query
(PATTERN (A+ B), DEFINE A AS AVG(A.price) < 15, SKIP PAST LAST ROW) or, with ``--query seed001``, seed
001's price-decreasing query (START_ROW PRICE_DOWN+ PRICE_UP, SKIP TO LAST PRICE_UP), and writes the result to Spark's
``noop`` sink, so the time covers reading, shuffling, sorting and matching; prints rows/s, the CPU
seconds of the whole process tree (driver, JVM, Python workers) and the load average: the machine may
be shared, and then wall time measures the neighbours too, CPU time does not.

Shuffle partitions default to Spark's 200, which adaptive execution coalesces by size: on the 1 M-row
ticker data that is 2 near-equal partitions (51 % / 49 % of the rows) for the 2 cores of ``local[2]``;
a fixed 4 left 3 partitions after coalescing (39 / 35 / 26 %), so one core matched alone at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_streaming import tree_cpu_split

CLAUSE = """
    PARTITION BY symbol ORDER BY rowtime
    MEASURES FIRST(A.rowtime) AS start_tstamp, LAST(A.rowtime) AS end_tstamp, AVG(A.price) AS avgPrice
    ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A+ B)
    DEFINE A AS AVG(A.price) < 15"""

#: Seed 001's price-decreasing query (Flink's documentation example): a fall then a rise, per symbol.
SEED_001_CLAUSE = """
    PARTITION BY symbol ORDER BY rowtime
    MEASURES START_ROW.rowtime AS start_tstamp, LAST(PRICE_DOWN.rowtime) AS bottom_tstamp,
        LAST(PRICE_UP.rowtime) AS end_tstamp
    ONE ROW PER MATCH AFTER MATCH SKIP TO LAST PRICE_UP
    PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
    DEFINE PRICE_DOWN AS (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price)
            OR PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1),
        PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1)"""

QUERIES = {"avg": CLAUSE, "seed001": SEED_001_CLAUSE}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--door", choices=["dataframe", "udtf"], default="dataframe")
    parser.add_argument("--query", choices=sorted(QUERIES), default="avg",
                        help="avg: the Flink benchmark's A+ B with AVG (default); seed001: the price-decreasing query")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N rows (quicker runs)")
    parser.add_argument("--runs", type=int, default=1,
                        help="run the query N times in one session: the first is cold (Python workers start), "
                             "the others warm")
    parser.add_argument("--shuffle-partitions", type=int, default=200,
                        help="spark.sql.shuffle.partitions (adaptive execution coalesces them by size)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import timeweave

    spark = (SparkSession.builder.master(args.master).config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    ticker = spark.read.csv(os.path.join(args.data, "ticker"),
                            schema="symbol STRING, rowtime TIMESTAMP, price BIGINT, tax BIGINT")
    if args.limit:
        ticker = ticker.limit(args.limit)
    ticker = ticker.cache()
    rows = ticker.count()
    clause = QUERIES[args.query]
    if args.door == "dataframe":
        out = timeweave.match_recognize(ticker, clause)
    else:
        timeweave.register(spark)
        ticker.createOrReplaceTempView("bench_ticker")
        literal = clause.replace("'", "\\'")
        out = spark.sql(f"SELECT * FROM timeweave_match_recognize(TABLE(bench_ticker), '{literal}')")
    for run in range(args.runs):
        load_before = os.getloadavg()
        cpu_before = tree_cpu_split(os.getpid())
        start = time.perf_counter()
        matches = out.count()
        elapsed = time.perf_counter() - start
        split = {k: v - cpu_before.get(k, 0.0) for k, v in tree_cpu_split(os.getpid()).items()}
        cpu = sum(split.values())
        load_after = os.getloadavg()
        print(f"door={args.door} query={args.query} run={run + 1}{' (cold)' if run == 0 else ''} rows={rows} matches={matches} "
              f"seconds={elapsed:.1f} rows_per_s={rows / elapsed:,.0f} cpu_s={cpu:.1f} "
              f"rows_per_cpu_s={rows / cpu if cpu else 0:,.0f} jvm_cpu_s={split['jvm']:.1f} "
              f"python_cpu_s={split['python']:.1f} load_before={load_before[0]:.1f} "
              f"load_after={load_after[0]:.1f} cores={os.cpu_count()}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
