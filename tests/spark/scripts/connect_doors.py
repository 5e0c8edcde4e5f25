"""Run the DataFrame and SQL doors on a Spark Connect session (a local Connect server); prints JSON."""

import json
from datetime import datetime

from pyspark.sql import SparkSession

import timeweave

spark = SparkSession.builder.remote("local[2]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
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
print("RESULT " + json.dumps(result))
spark.stop()
