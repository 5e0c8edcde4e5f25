"""MATCH_RECOGNIZE's streaming processor offline (PySpark's TwsTester, no JVM): CPU seconds of the processor's calls.

    PYTHONPATH=$(python -m tests.helpers.checkout_path) python bench/bench_match_recognize_processor.py

100 symbols, 4 micro-batches of 25 k rows (one row every 10 ms per batch, symbols round robin, prices a random
walk), 16 buckets; after each batch the watermark moves to the batch's last time (fires the buckets' timers).
Prints the CPU seconds of the measured batches (all but the first) and the matched rows."""
import json
import random
import time

import pandas as pd
import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.streaming.tws_tester import TwsTester

from timeweave.spark import match_recognize_streaming as M
from timeweave.spark.host.packs import packs_with_latest_time
from timeweave.spark.host.schema import BUCKET, OP
from timeweave.spark.host.stream import DATA_ROW

CLAUSE = ("PARTITION BY symbol ORDER BY rowtime MEASURES FIRST(A.rowtime) AS s, LAST(B.rowtime) AS e "
          "PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)")
schema = T.StructType([T.StructField("symbol", T.StringType()), T.StructField("rowtime", T.TimestampType()),
                       T.StructField("price", T.LongType())])
BUCKETS, SYMBOLS, ROWS, BATCHES = 16, 100, 25_000, 4
T0 = 1_704_067_200_000_000
rng = random.Random(7)
prices = {s: 100 for s in range(SYMBOLS)}
processor = M.MatchRecognizeProcessor(CLAUSE, schema.json(), "UTC")
tester = TwsTester(processor, timeMode="EventTime", eventTimeExtractor=lambda _row: 2**62)
cpu, matched, t = 0.0, 0, T0
for b in range(BATCHES):
    rows = {k: [] for k in range(BUCKETS)}
    for i in range(ROWS):
        s = i % SYMBOLS
        prices[s] += rng.choice((-1, 1))
        t += 10_000
        rows[s % BUCKETS].append((f"s{s}", t, json.dumps({"symbol": f"S{s}", "rowtime": t, "price": prices[s]}, separators=(",", ":"))))
    frames = {}
    for k, rs in rows.items():
        batch = pa.record_batch({BUCKET: pa.array([k] * len(rs), pa.int32()), M.KEY_TEXT: [r[0] for r in rs],
                                 OP: pa.array([DATA_ROW] * len(rs), pa.int8()), M.TIME: pa.array([r[1] for r in rs], pa.int64()),
                                 M.ROW: [r[2] for r in rs]})
        packs = pa.Table.from_batches(list(packs_with_latest_time(iter([batch])))).to_pandas()
        frames[k] = pd.DataFrame({BUCKET: packs[BUCKET], OP: [DATA_ROW] * len(packs), M.PACK: packs[M.PACK]})
    start = time.process_time()
    out = [tester.testInPandas(k, f) for k, f in frames.items()]
    out.append(tester.setWatermark(t // 1000))
    spent = time.process_time() - start
    n = sum(int((o[M.KIND] == M.MATCHED).sum()) for o in out if len(o))
    if b:
        cpu += spent
        matched += n
print(json.dumps({"cpu_s": round(cpu, 3), "rows": ROWS * (BATCHES - 1), "matched": matched}))
