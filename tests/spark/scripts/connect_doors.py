"""Every door on one Spark Connect session (one local Connect server): the temporal join's DataFrame and SQL
doors and timeweave.register, then MATCH_RECOGNIZE's DataFrame, SQL and UDTF doors.  Prints one JSON line,
``RESULT {"temporal_join": {...}, "match_recognize": {...}}``.

One process for both families: a Connect server is a JVM of its own, and starting it is most of the run."""

import json
import os
import sys
from datetime import datetime, timedelta

from pyspark.sql import SparkSession

import timeweave

MR_CLAUSE = ("PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n, LAST(B.v) AS top "
             "AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+) DEFINE B AS B.v > PREV(B.v)")


def temporal_join(spark) -> dict:
    orders = spark.createDataFrame(
        [("o1", "EUR", datetime(2024, 1, 1, 1)), ("o2", "EUR", datetime(2023, 1, 1))], "id STRING, cur STRING, ts TIMESTAMP"
    )
    rates = spark.createDataFrame([("EUR", 1.5, datetime(2024, 1, 1))], "cur STRING, rate DOUBLE, t TIMESTAMP")
    result = {
        "session": type(spark).__module__,
        "dataframe": sorted([r.id, r.rate] for r in timeweave.temporal_join(orders, rates, "ts", key="cur", time="t", how="left").collect()),
        "register_first": timeweave.register(spark),
        "register_again": timeweave.register(spark),
    }
    timeweave.versioned_table(rates, key="cur", time="t", name="rates_c")
    orders.createOrReplaceTempView("orders_c")
    result["sql"] = sorted(
        [r.id, r.rate]
        for r in timeweave.sql(spark, "SELECT o.id, r.rate FROM orders_c o LEFT JOIN rates_c FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur").collect()
    )
    return result


def match_recognize(spark) -> dict:
    base = datetime(2024, 1, 1)
    values = [1, 2, 3, 1, 5, 0, 0, 4]
    df = spark.createDataFrame([("x", base + timedelta(seconds=i), v) for i, v in enumerate(values)], "k STRING, t TIMESTAMP, v BIGINT")
    df.createOrReplaceTempView("mr_connect")
    return {
        "session": type(spark).__module__,
        "register": timeweave.register(spark),
        "dataframe": sorted([r.k, r.n, r.top] for r in timeweave.match_recognize(df, MR_CLAUSE).collect()),
        "sql": sorted([r.k, r.n, r.top] for r in timeweave.sql(spark, f"SELECT * FROM mr_connect MATCH_RECOGNIZE ({MR_CLAUSE}) m").collect()),
        "udtf": sorted([r.k, r.n, r.top] for r in spark.sql(
            f"SELECT * FROM timeweave_match_recognize(TABLE(mr_connect), '{MR_CLAUSE}')").collect()),
    }


# Python workers must run this interpreter (pyarrow, runtime); a bare "python3" may be another one.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
spark = SparkSession.builder.remote("local[2]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
print("RESULT " + json.dumps({"temporal_join": temporal_join(spark), "match_recognize": match_recognize(spark)}))
spark.stop()
