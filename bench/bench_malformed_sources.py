"""How often a backfill parses a CSV source that has malformed records (issue 20).

A temporal-join backfill over a generated CSV of ``--rows`` orders (one in 1,000 malformed: an unparsable
price, an unparsable time or an added column) and a small rates CSV, ``--slices`` slices.  Prints the wall
time, the bytes the local file system read (Hadoop's ``file`` statistics: the CSV sources dominate them, so
bytes read / CSV bytes is about the number of parses), the dead letters and the load average beside them.

    PYTHONPATH=$(python -m tests.helpers.checkout_path) python bench/bench_malformed_sources.py --rows 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from timeweave.jobs.backfill import run_backfill

T0 = datetime(2024, 1, 1)
CURRENCIES = [f"C{i:03d}" for i in range(200)]


def write_inputs(root: Path, rows: int, seed: int = 7) -> tuple[int, int]:
    """The orders and rates CSVs under ``root``; returns (the orders file's bytes, malformed orders)."""
    rng = random.Random(seed)
    (root / "orders").mkdir(parents=True)
    (root / "rates").mkdir(parents=True)
    bad = 0
    with open(root / "orders" / "part-0.csv", "w") as out:
        out.write("order_id,price,currency,order_time\n")
        for i in range(rows):
            at = (T0 + timedelta(seconds=rng.randrange(86_400))).isoformat(sep=" ")
            line = f"o{i},{rng.randrange(1, 10_000) / 100},{rng.choice(CURRENCIES)},{at}"
            if i % 1000 == 999:
                bad += 1
                line = rng.choice([f"o{i},sixty,C001,{at}", f"o{i},1.00,C001,yesterday", f"o{i},1.00,X,C001,{at}"])
            out.write(line + "\n")
    with open(root / "rates" / "part-0.csv", "w") as out:
        out.write("op,currency,rate,update_time\n")
        for c in CURRENCIES:
            for h in range(0, 24, 2):
                out.write(f"+U,{c},{rng.randrange(50, 200) / 100},{(T0 + timedelta(hours=h)).isoformat(sep=' ')}\n")
    return (root / "orders" / "part-0.csv").stat().st_size, bad


def bytes_read(spark: SparkSession) -> int:
    stats = spark._jvm.org.apache.hadoop.fs.FileSystem.getAllStatistics()
    return sum(s.getBytesRead() for s in stats if s.getScheme() == "file")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--slices", type=int, default=2)
    args = parser.parse_args()
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.memory", "4g").getOrCreate())
    root = Path(tempfile.mkdtemp(prefix="tw-malformed-"))
    try:
        size, bad = write_inputs(root, args.rows)
        schema = {"orders": "order_id STRING, price DECIMAL(10,2), currency STRING, order_time TIMESTAMP",
                  "rates": "op STRING, currency STRING, rate DECIMAL(10,2), update_time TIMESTAMP"}
        config = {
            "left": {"path": str(root / "orders"), "format": "csv", "options": {"header": "true"}, "schema": schema["orders"]},
            "right": {"path": str(root / "rates"), "format": "csv", "options": {"header": "true"}, "schema": schema["rates"]},
            "versioned": {"key": "currency", "time": "update_time", "format": "changelog", "op": "op"},
            "join": {"left_time": "order_time", "how": "left", "right_columns": ["rate"]},
            "output": {"path": str(root / "out")},
        }
        before, load, started = bytes_read(spark), os.getloadavg(), time.perf_counter()
        metrics = run_backfill(config, "2024-01-01T00:00", "2024-01-02T00:00", args.slices, spark=spark)
        seconds, read = time.perf_counter() - started, bytes_read(spark) - before
        print(json.dumps({
            "rows": args.rows, "slices": args.slices, "seconds": round(seconds, 1), "csv_bytes": size,
            "bytes_read": read, "reads_per_csv_byte": round(read / size, 2), "malformed_written": bad,
            "malformed": metrics["malformed"], "rows_out": metrics["rows_out"],
            "load_average_before": [round(x, 1) for x in load],
            "load_average_after": [round(x, 1) for x in os.getloadavg()],
        }))
    finally:
        shutil.rmtree(root, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
