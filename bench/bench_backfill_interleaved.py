"""Backfill vs one-shot, interleaved: the 10-slice backfill's ratio to the one-shot run, both -> parquet.

    .venv/bin/python bench/bench_backfill_interleaved.py --data /tmp/tj10m --rounds 12 [--slices 10]

``bench_temporal_join.py`` times each row's runs back to back, so a drift of the machine between rows
(seen on this VM: the same one-shot at 4.8-7.4 s within one pass, CPU seconds per run 20 % apart between
passes) lands on one side of the ratio.  Here one round runs the one-shot, then the backfill, in one JVM,
and the figures are medians over the rounds after the first (cold) one, with the per-round ratios, so a
slow stretch of the machine hits both.  JVM CPU seconds per run (``/proc/<pid>/stat``) are printed
beside the wall times.  Data: ``bench_temporal_join.py``'s generator (``--orders``/``--versions``/
``--keys`` when ``--data`` has none yet).  Not part of CI.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_temporal_join import generate


def jvm_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="data directory (generated if missing)")
    parser.add_argument("--orders", type=int, default=10_000_000)
    parser.add_argument("--versions", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--slices", type=int, default=10)
    args = parser.parse_args()
    if not (args.data / "orders").exists():
        generate(args.data, args.orders, args.versions, args.keys, 0.0)

    from pyspark.sql import SparkSession

    import timeweave
    from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
    from timeweave.jobs.session import STATIC_CONFIGS
    from timeweave.spark.temporal_join_backfill import run_slices

    spark = (
        SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "6g")
        .config(map=STATIC_CONFIGS).getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    orders = spark.read.parquet(str(args.data / "orders"))
    rates = spark.read.parquet(str(args.data / "rates"))
    spec = TemporalJoinSpec(VersionedTableSpec("currency", "update_time"), "order_time", how="left",
                            right_columns=["conversion_rate"])
    start = orders.selectExpr("min(order_time)").first()[0]
    end = orders.selectExpr("max(order_time)").first()[0] + timedelta(seconds=1)
    out = Path(tempfile.mkdtemp(prefix="tw_bench_interleaved_"))
    pid = spark.sparkContext._gateway.proc.pid

    def one_shot() -> None:
        joined = timeweave.temporal_join(orders, rates, "order_time", key="currency", time="update_time", how="left",
                                       right_columns=["conversion_rate"])
        joined.write.mode("overwrite").parquet(str(out / "one"))

    def backfill() -> None:
        run_slices(orders, rates, spec, start, end, args.slices, str(out / "bf"), str(out / "bf_dead"), str(out / "bf_state"))

    runs: dict[str, list[tuple[float, float]]] = {"one-shot": [], "backfill": []}
    for round_ in range(args.rounds):
        for name, fn in (("one-shot", one_shot), ("backfill", backfill)):
            cpu, wall = jvm_cpu_seconds(pid), time.perf_counter()
            fn()
            runs[name].append((time.perf_counter() - wall, jvm_cpu_seconds(pid) - cpu))
        (w1, c1), (w2, c2) = runs["one-shot"][-1], runs["backfill"][-1]
        print(f"round {round_:2d}  one-shot {w1:6.2f} s {c1:5.1f} CPU-s  backfill {w2:6.2f} s {c2:5.1f} CPU-s  "
              f"ratio {w2 / w1:.2f}", flush=True)
    warm = {name: values[1:] or values for name, values in runs.items()}
    medians = {name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for name, v in warm.items()}
    ratios = [b[0] / o[0] for o, b in zip(warm["one-shot"], warm["backfill"], strict=True)]
    print()
    print(f"| {args.slices}-slice backfill vs one-shot, interleaved, {len(ratios)} warm rounds | wall median (s) | JVM CPU median (s) |")
    print("|---|---|---|")
    for name, (wall, cpu) in medians.items():
        print(f"| {name} | {wall:.2f} | {cpu:.1f} |")
    print(f"| ratio of medians | {medians['backfill'][0] / medians['one-shot'][0]:.2f}x | "
          f"{medians['backfill'][1] / medians['one-shot'][1]:.2f}x |")
    print(f"| median of per-round ratios | {statistics.median(ratios):.2f}x | |")


if __name__ == "__main__":
    main()
