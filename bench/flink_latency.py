"""Flink's side of ``bench/bench_latency.py``: one streaming query over directories that a feeder fills while it runs.

    /work/pyflink-venv/bin/python bench/flink_latency.py QUERY SRCDIR OUTDIR READY_FILE [--checkpoint-ms 1000]
        [--watermark-interval-ms 200] [--monitor-ms 100] [--roll-ms 100]

``QUERY``: ``tj_pk`` (``SRCDIR/orders`` joined with ``SRCDIR/rates``, primary-key versioned table, event time) or
``tumble_1s`` (``COUNT(*)`` per 1-second TUMBLE over ``SRCDIR/bids``); watermarks ``time - 0 s``, PyFlink streaming
mode, parallelism 2, the filesystem CSV sources in monitoring mode (``source.monitor-interval``), the filesystem
CSV sink into ``OUTDIR`` with one more column, ``emit_ts``: ``NOW()``, evaluated per row as it leaves the query
(Flink's streaming mode evaluates it per record), the emission time.  The sink's rows become visible (committed,
exactly once) when Flink renames their part file on a completed checkpoint: checkpoints every ``--checkpoint-ms``;
a CSV part file is closed for that commit by the rolling policy (``sink.rolling-policy.rollover-interval`` and
``check-interval`` ``--roll-ms``: a row format does not roll on checkpoints by itself).

Writes ``READY_FILE`` (JSON: the job id, its start) once the job runs, then runs until SIGTERM / SIGINT and cancels
the job.  Helpers from ``../shared/conformance/flink/flink_oracle.py`` (``make_table_env``, ``table_ddl``), as the
throughput benchmark's ``flink_bench.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

ORACLE = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "flink"
sys.path.insert(0, str(ORACLE))

from flink_oracle import make_table_env, table_ddl  # noqa: E402

ORDERS = [["order_id", "BIGINT"], ["price", "DECIMAL(10, 2)"], ["currency", "STRING"], ["order_time", "TIMESTAMP(3)"]]
RATES = [["currency", "STRING"], ["conversion_rate", "DECIMAL(10, 4)"], ["update_time", "TIMESTAMP(3)"]]
BIDS = [["bidtime", "TIMESTAMP(3)"], ["price", "DECIMAL(10, 2)"], ["item", "STRING"], ["supplier_id", "STRING"]]

QUERIES: dict[str, dict[str, Any]] = {
    "tj_pk": {
        "tables": [dict(name="orders", dir="orders", schema=ORDERS, rowtime="order_time", watermark_delay=0),
                   dict(name="currency_rates", dir="rates", schema=RATES, rowtime="update_time", watermark_delay=0,
                        primary_key=["currency"])],
        "sink_schema": "order_id BIGINT, price DECIMAL(10, 2), currency STRING, conversion_rate DECIMAL(10, 4), "
                       "order_time TIMESTAMP(3), emit_ts TIMESTAMP_LTZ(3)",
        "query": """
SELECT o.order_id, o.price, o.currency, r.conversion_rate, o.order_time, NOW() AS emit_ts
FROM orders AS o
JOIN currency_rates FOR SYSTEM_TIME AS OF o.order_time AS r
ON o.currency = r.currency""",
    },
    "tumble_1s": {
        "tables": [dict(name="Bid", dir="bids", schema=BIDS, rowtime="bidtime", watermark_delay=0)],
        "sink_schema": "window_start TIMESTAMP(3), window_end TIMESTAMP(3), cnt BIGINT, emit_ts TIMESTAMP_LTZ(3)",
        "query": """
SELECT window_start, window_end, COUNT(*) AS cnt, NOW() AS emit_ts
FROM TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' SECOND)
GROUP BY window_start, window_end""",
    },
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("query", choices=sorted(QUERIES))
    p.add_argument("srcdir", type=Path)
    p.add_argument("outdir", type=Path)
    p.add_argument("ready", type=Path)
    p.add_argument("--checkpoint-ms", type=int, default=1000)
    p.add_argument("--watermark-interval-ms", type=int, default=200)
    p.add_argument("--monitor-ms", type=int, default=100)
    p.add_argument("--roll-ms", type=int, default=100)
    args = p.parse_args()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    spec = QUERIES[args.query]
    t_env = make_table_env("streaming", 2, {
        "pipeline.auto-watermark-interval": f"{args.watermark_interval_ms} ms",
        "execution.checkpointing.interval": f"{args.checkpoint_ms} ms",
        "execution.checkpointing.mode": "EXACTLY_ONCE",
    })
    for table in spec["tables"]:
        t_env.execute_sql(table_ddl(dict(table, header=False, options={"source.monitor-interval": f"{args.monitor_ms} ms"}),
                                    str(args.srcdir / table["dir"])))
    t_env.execute_sql(
        f"CREATE TEMPORARY TABLE sink_t ({spec['sink_schema']}) WITH ('connector' = 'filesystem', "
        f"'path' = 'file://{args.outdir.resolve()}', 'format' = 'csv', "
        f"'sink.rolling-policy.rollover-interval' = '{args.roll_ms} ms', "
        f"'sink.rolling-policy.check-interval' = '{args.roll_ms} ms')")
    result = t_env.execute_sql("INSERT INTO sink_t " + spec["query"])
    client = result.get_job_client()
    while str(client.get_job_status().result()) not in ("RUNNING", "JobStatus.RUNNING") and not stop.is_set():
        time.sleep(0.05)
    tmp = args.ready.with_name("." + args.ready.name)
    tmp.write_text(json.dumps({"job_id": str(client.get_job_id()), "running_at": time.time(), "pid": os.getpid()}))
    tmp.rename(args.ready)
    while not stop.wait(0.2):
        status = str(client.get_job_status().result())
        if "FAILED" in status or "FINISHED" in status or "CANCELED" in status:
            print(json.dumps({"job_status": status}), flush=True)
            return 1
    client.cancel().result()
    print(json.dumps({"cancelled_at": time.time()}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
