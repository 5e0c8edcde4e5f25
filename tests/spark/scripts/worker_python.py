"""A user's own script: its own SparkSession, the temporal join and MATCH_RECOGNIZE through the public doors.

Run as ``python worker_python.py <master>``; prints ``RESULT {json}`` with each door's rows and the rows the
engine-free core computes for the same input.  It sets no ``PYSPARK_PYTHON``: which interpreter runs the Python
workers is what tests/spark/test_worker_python.py checks.
"""

import json
import sys
import tempfile
from datetime import datetime, timedelta

from pyspark.sql import SparkSession

import timeweave
from timeweave.core.versioned import VersionEvent, VersionHistory
from timeweave.spark.match_recognize import plan, run_sorted

CLAUSE = ("PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS start_t, COUNT(*) AS n, LAST(B.v) AS top "
          "AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+) DEFINE B AS B.v > PREV(B.v)")
BASE = datetime(2024, 1, 1)

master = sys.argv[1]
home = tempfile.mkdtemp(prefix="timeweave-worker-python-")
spark = (SparkSession.builder.master(master).appName("timeweave-worker-python")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.session.timeZone", "UTC").config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.warehouse.dir", f"{home}/warehouse")
         .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={home}")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")

# deterministic input, spread over several partitions: 4 currencies, 40 rate versions, 200 orders
rates = [(f"c{i % 4}", BASE + timedelta(minutes=7 * i + i % 3), 1.0 + i / 10) for i in range(40)]
orders = [(n, f"c{n % 4}", BASE + timedelta(minutes=(n * 37) % 300)) for n in range(200)]
ticks = [(f"s{i % 3}", BASE + timedelta(seconds=i), (i * 7919) % 23) for i in range(300)]

rates_df = spark.createDataFrame(rates, "currency STRING, update_time TIMESTAMP, rate DOUBLE").repartition(3)
orders_df = spark.createDataFrame(orders, "order_id BIGINT, currency STRING, order_time TIMESTAMP").repartition(3)
ticks_df = spark.createDataFrame(ticks, "k STRING, t TIMESTAMP, v BIGINT").repartition(3)
ticks_df.createOrReplaceTempView("ticks")

joined = timeweave.temporal_join(orders_df, timeweave.versioned_table(rates_df, key="currency", time="update_time"),
                               "order_time", how="left")
result = {
    "temporal_join": sorted([r.order_id, r.rate] for r in joined.select("order_id", "rate").collect()),
    "match_recognize": sorted([r.k, str(r.start_t), r.n, r.top] for r in timeweave.match_recognize(ticks_df, CLAUSE).collect()),
    "sql": sorted([r.k, str(r.start_t), r.n, r.top] for r in timeweave.sql(
        spark, f"SELECT * FROM ticks MATCH_RECOGNIZE ({CLAUSE}) AS m").collect()),
}
timeweave.register(spark)
# the workers' executable as the doors left it (PySpark's default until a door has run)
result["python_exec"] = spark.sparkContext.pythonExec
# executors that ran the jobs, the driver's block manager left out (read now: executors register late)
result["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
result["udtf"] = sorted([r.k, str(r.start_t), r.n, r.top] for r in spark.sql(
    f"SELECT * FROM timeweave_match_recognize(TABLE(ticks), '{CLAUSE}')").collect())

# the engine-free core on the same input: the version history per key, the matcher per partition
histories: dict[str, VersionHistory] = {}
for seq, (currency, time, rate) in enumerate(rates):
    histories.setdefault(currency, VersionHistory()).apply(VersionEvent(int(time.timestamp() * 1e6), seq, False, rate))
expected_join = []
for order_id, currency, time in orders:
    match = histories[currency].version_at(int(time.timestamp() * 1e6))
    expected_join.append([order_id, match.event.payload if match else None])
bound = plan(CLAUSE, ticks_df.schema)
expected_mr = sorted([o["k"], str(o["start_t"]), o["n"], o["top"]]
                     for o in run_sorted(bound, iter(dict(zip(("k", "t", "v"), row, strict=True)) for row in sorted(ticks))))
result["expected_temporal_join"] = sorted(expected_join)
result["expected_match_recognize"] = expected_mr
print("RESULT " + json.dumps(result))
spark.stop()
