"""Where the streaming host's Python worker spends its memory on one hot key (issue 20), without a JVM.

    PYTHONPATH=$(python -m tests.helpers.checkout_path) python bench/hot_key_worker_memory.py --versions 1000000

Feeds the temporal join's processor (:class:`timeweave.spark.streaming.TemporalJoinProcessor`) ``--versions``
versions of ONE key (one per ms) and ``--orders`` orders of it in one invocation, packed as the query packs
them, through PySpark's ``TwsTester`` (Spark's state and timer contract, state held in memory as the state
server would receive it: the host's MapState values, pieces of at most 1 MiB), then moves the watermark past
everything (the flush).  Prints the process's resident memory after each phase and its peak during each
(``VmRSS`` / ``VmHWM`` of /proc/self/status, MB), and the size of the key's stored cell.  The worker of a real
query holds the same objects plus Arrow's copy of the input batch; the JVM side is not measured here.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time

import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming.tws_tester import TwsTester

from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
from timeweave.spark import temporal_join_streaming as S  # the registration (it imports the host names used here)

T0_US = 1_704_067_200_000_000  # 2024-01-01 00:00:00 UTC


def _status(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    """Reset VmHWM to the current RSS (Linux: writing 5 to clear_refs)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _input(versions: int, orders: int) -> pd.DataFrame:
    times = [T0_US + i * 1000 for i in range(versions)]
    frame = pd.DataFrame({
        S.BUCKET: 3, S.KEY_TEXT: "HOT",
        S.OP: [S.UPSERT] * versions + [S.LEFT_ROW] * orders,
        S.TIME: times + [T0_US + (i * versions // max(orders, 1)) * 1000 + 500 for i in range(orders)],
        S.FILE: ["r1"] * versions + ["l1"] * orders,
        S.ROW: [f'{{"rate": {i % 1000}.5}}' for i in range(versions)] + [f'{{"id": "o{i}"}}' for i in range(orders)],
    })
    schema = pa.schema([(S.BUCKET, pa.int32()), (S.KEY_TEXT, pa.string()), (S.OP, pa.int8()), (S.TIME, pa.int64()),
                        (S.FILE, pa.string()), (S.ROW, pa.string())])
    batch = pa.RecordBatch.from_pandas(frame, schema=schema, preserve_index=False)
    return next(S.pack_rows(iter([batch]))).to_pandas()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=1_000_000)
    parser.add_argument("--orders", type=int, default=2_000)
    args = parser.parse_args()
    spec = TemporalJoinSpec(VersionedTableSpec("currency", "update_time"), left_time="order_time", how="left")
    tester = TwsTester(S.TemporalJoinProcessor(spec, "event_time", None), timeMode="EventTime",
                       eventTimeExtractor=lambda _row: 2**62)
    phases = {"start_rss": round(_status("VmRSS"))}
    started = time.perf_counter()
    _reset_peak()
    packed = _input(args.versions, args.orders)
    gc.collect()
    phases |= {"input_rss": round(_status("VmRSS")), "input_peak": round(_status("VmHWM"))}
    _reset_peak()
    out = tester.testInPandas(3, packed)
    del packed
    gc.collect()
    phases |= {"buffered_rss": round(_status("VmRSS")), "buffering_peak": round(_status("VmHWM")),
               "rows_out_first": len(out)}
    stored = sum(len(v) for v in _stored_values(tester))  # the key's cell as stored (pieces), bytes
    _reset_peak()
    out = tester.setWatermark(T0_US // 1000 + args.versions + 10)
    gc.collect()
    phases |= {"flushed_rss": round(_status("VmRSS")), "flush_peak": round(_status("VmHWM")), "rows_out_flush": len(out),
               "stored_cell_mb": round(stored / 2**20, 1), "seconds": round(time.perf_counter() - started, 1),
               "versions": args.versions, "orders": args.orders, "load_average": [round(x, 1) for x in os.getloadavg()]}
    print(json.dumps(phases))


def _stored_values(tester: TwsTester) -> list[bytes]:
    """The bytes of every MapState value the tester holds (the key's cell pieces and the timer index)."""
    values: list[bytes] = []
    for state in tester.handle.map_states.values():
        for per_key in state.state.values():
            for value in per_key.values():
                values.extend(v for v in value if isinstance(v, (bytes, bytearray)))
    return values


if __name__ == "__main__":
    main()
