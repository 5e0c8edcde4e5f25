"""Temporal-join benchmark: timeweave's doors next to baselines measured in the same run.

    .venv/bin/python bench/bench_temporal_join.py --orders 10000000 --versions 100000 --keys 1000 [--skew 0.3]

Data: orders spread uniformly over the versions' time range (1 version per second, round-robin over the
keys, as in ../shared/bench/asof_anchors.md's 10M_v100k set); ``--skew 0.3`` puts 30 % of orders and
versions on one key.  Spark: local[2], 4 shuffle partitions, noop sink unless stated; warm = runs after
the first, min / median.  ``--cpu`` adds one run per row (not in the table) and prints its JVM CPU
seconds by thread kind (``tasks``: executor task threads, ``jit``: HotSpot C1/C2 compiler threads,
``gc``, ``other``: driver, broadcasts, scheduler) and its Janino compiles (generated classes not found
in Spark's code cache): on a shared machine CPU is the figure to compare, and the split shows where a
plan of many Spark jobs (the backfill) spends what the one-shot run does not.  Not part of CI.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

T0_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z


def generate(out: Path, orders: int, versions: int, keys: int, skew: float, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    names = np.array([f"C{i:04d}" for i in range(keys)])
    v_key = np.arange(versions) % keys
    if skew:
        v_key = np.where(rng.random(versions) < skew, 0, v_key)
    v_time = T0_US + np.arange(versions, dtype=np.int64) * 1_000_000
    rates = pa.table({
        "currency": names[v_key], "conversion_rate": rng.uniform(0.5, 2.0, versions),
        "update_time": pa.array(v_time, pa.timestamp("us")),
    })
    o_key = rng.integers(0, keys, orders)
    if skew:
        o_key = np.where(rng.random(orders) < skew, 0, o_key)
    o_time = np.sort(rng.integers(T0_US - 60_000_000, v_time[-1] + 60_000_000, orders))
    table = pa.table({
        "order_id": np.arange(orders, dtype=np.int64), "price": rng.uniform(1, 100, orders),
        "currency": names[o_key], "order_time": pa.array(o_time, pa.timestamp("us")),
    })
    (out / "orders").mkdir(parents=True)
    (out / "rates").mkdir(parents=True)
    half = orders // 2
    # a tenth of the orders per row group (1 M at 10 M, as before): a backfill slice then prunes to about
    # one row group at any size, so smaller runs measure the slices as the 10 M run does
    group = max(1, orders // 10)
    pq.write_table(table.slice(0, half), out / "orders" / "part-0.parquet", row_group_size=group)
    pq.write_table(table.slice(half), out / "orders" / "part-1.parquet", row_group_size=group)
    pq.write_table(rates, out / "rates" / "part-0.parquet")


def jvm_cpu_by_thread(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of a live JVM's threads, by kind: tasks, jit, gc, other (Linux /proc)."""
    split = {"tasks": 0.0, "jit": 0.0, "gc": 0.0, "other": 0.0}
    ticks = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        kind = ("tasks" if name.startswith("Executor task") else "jit" if "CompilerThre" in name
                else "gc" if name.startswith(("GC Thread", "G1 ")) else "other")
        split[kind] += (int(fields[11]) + int(fields[12])) / ticks
    return split


def timed(fn, runs: int, warmup: int = 0) -> tuple[float, float, float]:
    """(cold, warm min, warm median) seconds: the first run, then ``warmup`` unmeasured runs, then the rest."""
    times = []
    for i in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        for _ in range(warmup if i == 0 else 0):
            fn()
    warm = times[1:] or times
    return times[0], min(warm), statistics.median(warm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=10_000_000)
    parser.add_argument("--versions", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--skew", type=float, default=0.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=0,
                        help="unmeasured runs after the cold one (warm = steady state: the JIT has compiled every "
                             "query's code; the backfill runs more distinct queries than the one-shot, so it warms slower)")
    parser.add_argument("--data", type=Path, default=None, help="data directory (generated if missing)")
    parser.add_argument("--skip", default="", help="comma-separated rows to skip: naive,pandas,backfill,sql")
    parser.add_argument("--slices-per-job", type=int, default=1,
                        help="also time the backfill writing this many slices per Spark job (run_slices(slices_per_job=N); "
                             "default 1: one job per slice; 0: skip)")
    parser.add_argument("--cpu", action="store_true", help="print the last run's JVM CPU by thread kind and Janino compiles")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    data = args.data or Path(tempfile.gettempdir()) / f"tw_bench_{args.orders}_{args.versions}_{args.keys}_{args.skew}"
    if not (data / "orders").exists():
        start = time.perf_counter()
        generate(data, args.orders, args.versions, args.keys, args.skew)
        print(f"generated {data} in {time.perf_counter() - start:.1f}s", flush=True)

    from pyspark.sql import SparkSession

    import timeweave
    from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
    from timeweave.jobs.session import STATIC_CONFIGS
    from timeweave.spark.temporal_join_backfill import run_slices

    spark = (
        SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "6g")
        .config(map=STATIC_CONFIGS).getOrCreate()  # the job session's static settings (timeweave.jobs.session)
    )
    spark.sparkContext.setLogLevel("ERROR")
    orders = spark.read.parquet(str(data / "orders"))
    rates = spark.read.parquet(str(data / "rates"))
    n = args.orders
    rows: list[tuple[str, float, float, float]] = []

    jvm_pid = spark.sparkContext._gateway.proc.pid  # spark-submit execs the JVM in place: same pid
    compiles = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()

    def bench(name: str, fn) -> None:
        cold, best, median = timed(fn, args.runs, args.warmup)
        rows.append((name, cold, best, median))
        print(f"{name:55s} cold {cold:7.2f}s  warm {best:6.2f} / {median:6.2f}s  {n / median / 1e6:6.2f} M rows/s", flush=True)
        if args.cpu:  # one extra run (not in the table) with the CPU split taken around it
            before, classes = jvm_cpu_by_thread(jvm_pid), compiles.getCount()
            seconds = timed(fn, 1)[0]
            after = jvm_cpu_by_thread(jvm_pid)
            split = " / ".join(f"{kind} {after[kind] - before[kind]:.1f}" for kind in after)
            total = sum(after.values()) - sum(before.values())
            print(f"{'':55s} extra run {seconds:6.2f}s  JVM CPU {total:6.1f}s ({split})  "
                  f"Janino compiles {compiles.getCount() - classes}", flush=True)

    noop = lambda df: df.write.format("noop").mode("overwrite").save()  # noqa: E731
    bench("Spark scan only (4 order columns)", lambda: noop(orders))
    join = dict(key="currency", time="update_time", how="left", right_columns=["conversion_rate"])
    bench("timeweave DataFrame door (LEFT, noop sink)", lambda: noop(timeweave.temporal_join(orders, rates, "order_time", **join)))
    if "sql" not in skip:
        orders.createOrReplaceTempView("orders")
        timeweave.register_versioned(spark, "rates", rates, VersionedTableSpec("currency", "update_time"))
        query = ("SELECT o.order_id, o.price, o.currency, o.order_time, r.conversion_rate FROM orders o "
                 "LEFT JOIN rates FOR SYSTEM_TIME AS OF o.order_time AS r ON o.currency = r.currency")
        bench("timeweave SQL door (FOR SYSTEM_TIME AS OF, noop sink)", lambda: noop(timeweave.sql(spark, query)))
    if "naive" not in skip:
        rates.createOrReplaceTempView("rates_raw")
        orders.createOrReplaceTempView("orders")
        naive = spark.sql(
            "SELECT o.*, r.conversion_rate FROM orders o LEFT JOIN (SELECT *, LEAD(update_time) OVER "
            "(PARTITION BY currency ORDER BY update_time) AS valid_to FROM rates_raw) r ON o.currency = r.currency "
            "AND o.order_time >= r.update_time AND (r.valid_to IS NULL OR o.order_time < r.valid_to)"
        )
        bench("baseline: naive range join on lead() validity", lambda: noop(naive))
    if "backfill" not in skip:
        out = Path(tempfile.mkdtemp(prefix="tw_bench_out_"))
        spec = TemporalJoinSpec(VersionedTableSpec("currency", "update_time"), "order_time", how="left",
                                right_columns=["conversion_rate"])
        start_t = orders.selectExpr("min(order_time)").first()[0]
        end_t = orders.selectExpr("max(order_time)").first()[0]
        from datetime import timedelta
        end_t = end_t + timedelta(seconds=1)

        def one_shot() -> None:
            timeweave.temporal_join(orders, rates, "order_time", **join).write.mode("overwrite").parquet(str(out / "one"))

        bench("timeweave DataFrame door -> parquet", one_shot)
        bench("timeweave backfill, 10 slices -> parquet (default: one probe job)", lambda: run_slices(
            orders, rates, spec, start_t, end_t, 10, str(out / "bf"), str(out / "bf_dead"), str(out / "bf_state")))
        if args.slices_per_job:
            bench(f"timeweave backfill, 10 slices, {args.slices_per_job} per job -> parquet", lambda: run_slices(
                orders, rates, spec, start_t, end_t, 10, str(out / "bfj"), str(out / "bfj_dead"), str(out / "bfj_state"),
                slices_per_job=args.slices_per_job))
    if "pandas" not in skip:
        import pandas as pd

        o = pq.read_table(data / "orders").to_pandas()
        r = pq.read_table(data / "rates").to_pandas().sort_values("update_time")
        o = o.sort_values("order_time")
        bench("baseline: pandas merge_asof (in memory, presorted)", lambda: pd.merge_asof(
            o, r, left_on="order_time", right_on="update_time", by="currency", direction="backward"))
    print()
    print(f"| {n:,} orders x {args.versions:,} versions, {args.keys} keys, skew {args.skew} | cold (s) | warm min / median (s) | rows/s (median) |")
    print("|---|---|---|---|")
    for name, cold, best, median in rows:
        print(f"| {name} | {cold:.2f} | {best:.2f} / {median:.2f} | {n / median / 1e6:.2f} M |")


if __name__ == "__main__":
    main()
