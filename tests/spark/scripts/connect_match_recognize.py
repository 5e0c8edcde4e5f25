"""MATCH_RECOGNIZE's DataFrame, SQL and UDTF doors on a Spark Connect session (a local Connect server); prints JSON."""

import json
import os
import sys
from datetime import datetime, timedelta

from pyspark.sql import SparkSession

import timeweave

CLAUSE = ("PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n, LAST(B.v) AS top "
          "AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+) DEFINE B AS B.v > PREV(B.v)")

# Python workers must run this interpreter (pyarrow, runtime); a bare "python3" may be another one.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
spark = SparkSession.builder.remote("local[2]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
base = datetime(2024, 1, 1)
values = [1, 2, 3, 1, 5, 0, 0, 4]
df = spark.createDataFrame([("x", base + timedelta(seconds=i), v) for i, v in enumerate(values)], "k STRING, t TIMESTAMP, v BIGINT")
df.createOrReplaceTempView("mr_connect")
result = {
    "session": type(spark).__module__,
    "register": timeweave.register(spark),
    "dataframe": sorted([r.k, r.n, r.top] for r in timeweave.match_recognize(df, CLAUSE).collect()),
    "sql": sorted([r.k, r.n, r.top] for r in timeweave.sql(spark, f"SELECT * FROM mr_connect MATCH_RECOGNIZE ({CLAUSE}) m").collect()),
    "udtf": sorted([r.k, r.n, r.top] for r in spark.sql(
        f"SELECT * FROM timeweave_match_recognize(TABLE(mr_connect), '{CLAUSE}')").collect()),
}
print("RESULT " + json.dumps(result))
spark.stop()
