"""Python CPU of the streaming temporal join's processor, offline (no JVM): CPU seconds per 250 k left rows.

    .venv/bin/python bench/bench_tws_processor.py [--left 250000] [--keys 1000] [--buckets 16] [--batches 4]
    .venv/bin/python bench/bench_tws_processor.py --profile      # cProfile of the measured batches, top 30

The workload of ``bench_streaming.py --steady --left 2000000 --versions 20000`` per micro-batch: ``--left``
left rows (one every 10 ms, keys drawn at random from ``--keys``) and one version per second round robin
over the keys, in the wire format the query hands the operator (``tw_row`` JSON as ``streaming._json``
writes it, packed by ``streaming.pack_rows``: one pack per side and bucket).  Each micro-batch runs
:meth:`TemporalJoinProcessor.handleInputRows` once per bucket with the watermark at the previous batch's
last time (as the steady bench's watermark is), so from the second batch on every invocation emits the
previous batch's rows and buffers its own: each left row is handled twice, as in the real query.  State
lives in in-memory fakes of Spark's MapState/ValueState (bytes in, bytes out: the same pickling as with
the state server, without the socket).  The first batch is not measured (it only buffers).

Prints one JSON line per measured batch (CPU seconds of the processor's calls, per 250 k left rows, and the
joined rows out) and a summary line.  The rows out are checked against a one-pass reference (the version
in force at each left row's time) so an optimisation cannot speed up by dropping or changing rows.
"""

from __future__ import annotations

import argparse
import bisect
import cProfile
import json
import pstats
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
from timeweave.spark import host as H
from timeweave.spark import temporal_join_streaming as TJ

START_US = 1_704_067_200_000_000  # 2024-01-01 00:00:00 UTC
LEFT_STEP_US = 10_000  # one left row every 10 ms
VERSION_STEP_US = 1_000_000  # one version every second


class FakeValueState:
    """Spark's ValueState as the processor uses it (tuples of bytes)."""

    def __init__(self) -> None:
        self.value: tuple | None = None

    def get(self) -> tuple | None:
        return self.value

    def update(self, value: tuple) -> None:
        self.value = value

    def clear(self) -> None:
        self.value = None


class FakeMapState:
    """Spark's MapState as the processor uses it (key tuples to value tuples)."""

    def __init__(self) -> None:
        self.values: dict[tuple, tuple] = {}

    def getValue(self, key: tuple) -> tuple | None:
        return self.values.get(key)

    def updateValue(self, key: tuple, value: tuple) -> None:
        self.values[key] = value

    def removeKey(self, key: tuple) -> None:
        self.values.pop(key, None)


class FakeHandle:
    """One bucket's state handle (the bench keeps one handle per bucket, as Spark keys state by bucket)."""

    def __init__(self) -> None:
        self.maps: dict[str, FakeMapState] = {}
        self.values: dict[str, FakeValueState] = {}
        self.timers: set[int] = set()

    def getMapState(self, name: str, *_schemas: Any) -> FakeMapState:
        return self.maps.setdefault(name, FakeMapState())

    def getValueState(self, name: str, *_schemas: Any) -> FakeValueState:
        return self.values.setdefault(name, FakeValueState())

    def registerTimer(self, ms: int) -> None:
        self.timers.add(ms)

    def deleteTimer(self, ms: int) -> None:
        self.timers.discard(ms)


class FakeTimerValues:
    def __init__(self, watermark_ms: int) -> None:
        self.watermark_ms = watermark_ms

    def getCurrentWatermarkInMs(self) -> int:
        return self.watermark_ms


_SCHEMA = pa.schema([(H.BUCKET, pa.int32()), (H.KEY_TEXT, pa.string()), (H.OP, pa.int8()), (H.TIME, pa.int64()),
                     (TJ.FILE, pa.string()), (H.ROW, pa.string()), (TJ.REJECT, pa.string())])


def batch_input(batch: int, left: int, keys: int, buckets: int, rng: np.random.Generator) -> dict[int, pd.DataFrame]:
    """One micro-batch's operator input per bucket: a frame of packs (one left and one right pack per bucket)."""
    first = batch * left
    times = START_US + (first + np.arange(left, dtype=np.int64)) * LEFT_STEP_US
    key_ids = rng.integers(0, keys, left)
    prices = np.round(rng.uniform(1, 1000, left), 2)
    names = [f"C{k:03d}" for k in range(keys)]
    left_keys = [names[k] for k in key_ids.tolist()]
    left_rows = [
        f'{{"order_id":{first + i},"price":{p},"currency":"{k}","order_time":{t}}}'
        for i, (p, k, t) in enumerate(zip(prices.tolist(), left_keys, times.tolist(), strict=True))
    ]
    v_first = -(-int(times[0] - START_US) // VERSION_STEP_US)
    v_times = START_US + np.arange(v_first, int(times[-1] - START_US) // VERSION_STEP_US + 1) * VERSION_STEP_US
    v_ids = [(v_first + i) % keys for i in range(len(v_times))]
    v_keys = [names[k] for k in v_ids]
    rates = np.round(rng.uniform(0.5, 2.0, len(v_times)), 4).tolist()
    right_rows = [
        f'{{"currency":"{k}","rate":{r},"update_time":{t}}}' for k, r, t in zip(v_keys, rates, v_times.tolist(), strict=True)
    ]
    bucket_of = {name: zlib.crc32(name.encode()) % buckets for name in names}
    sides = [
        (left_keys, times.tolist(), TJ.LEFT_ROW, None, left_rows),
        (v_keys, v_times.tolist(), TJ.UPSERT, f"right/part-{batch:04d}.parquet", right_rows),
    ]
    packs: dict[int, list[bytes]] = {}
    for side_keys, side_times, op, file, payloads in sides:
        n = len(side_keys)
        record = pa.record_batch([
            pa.array([bucket_of[k] for k in side_keys], pa.int32()), pa.array(side_keys), pa.array([op] * n, pa.int8()),
            pa.array(side_times, pa.int64()), pa.array([file] * n, pa.string()), pa.array(payloads),
            pa.array([None] * n, pa.string()),
        ], schema=_SCHEMA)
        for packed in H.pack_rows(iter([record])):
            for b, pack in zip(packed.column(H.BUCKET).to_pylist(), packed.column(H.PACK).to_pylist(), strict=True):
                packs.setdefault(b, []).append(pack)
    return {b: pd.DataFrame({H.BUCKET: np.full(len(p), b, np.int32), H.PACK: p}) for b, p in sorted(packs.items())}


def joined_count(frames: list[pd.DataFrame]) -> tuple[int, list[tuple[int, float | None]]]:
    """Joined rows out and (order_id, rate) of each, from the processor's tagged output."""
    rows: list[tuple[int, float | None]] = []
    for frame in frames:
        for kind, payload in zip(frame[TJ.KIND].tolist(), frame[TJ.L_ROW].tolist(), strict=True):
            if kind == TJ.JOINED:
                rows.extend((e["l"]["order_id"], e["v"]["rate"] if "v" in e else None) for e in json.loads(payload))
            elif kind == TJ.LATE:
                raise AssertionError(f"late row in the bench: {payload}")
    return len(rows), rows


def reference(inputs: list[dict[int, pd.DataFrame]]) -> dict[int, float | None]:
    """order_id -> rate of the version in force at the order's time (one pass, no operator)."""
    versions: dict[str, list[tuple[int, float]]] = {}
    orders: list[tuple[int, str, int]] = []
    for batch in inputs:
        for frame in batch.values():
            rows = H.unpack(frame[H.PACK].tolist())
            for op, key, t, payload in zip(rows[H.OP], rows[H.KEY_TEXT], rows[H.TIME], rows[H.ROW], strict=True):
                doc = json.loads(payload)
                if op == TJ.LEFT_ROW:
                    orders.append((doc["order_id"], key, int(t)))
                else:
                    versions.setdefault(key, []).append((int(t), doc["rate"]))
    out: dict[int, float | None] = {}
    for key_versions in versions.values():
        key_versions.sort()
    for order_id, key, t in orders:
        key_versions = versions.get(key, [])
        i = bisect.bisect_right(key_versions, (t, float("inf"))) - 1
        out[order_id] = key_versions[i][1] if i >= 0 else None
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--left", type=int, default=250_000, help="left rows per micro-batch")
    p.add_argument("--keys", type=int, default=1000)
    p.add_argument("--buckets", type=int, default=H.DEFAULT_BUCKETS)
    p.add_argument("--batches", type=int, default=4, help="micro-batches with input (the first is not measured)")
    p.add_argument("--profile", action="store_true", help="cProfile the measured batches, print the top 30")
    args = p.parse_args()

    rng = np.random.default_rng(7)
    inputs = [batch_input(b, args.left, args.keys, args.buckets, rng) for b in range(args.batches)]
    spec = TemporalJoinSpec(VersionedTableSpec("currency", "update_time"), left_time="order_time", how="left")
    handles = {b: FakeHandle() for b in range(args.buckets)}
    processors = {}
    for b, handle in handles.items():
        processors[b] = TJ.TemporalJoinProcessor(spec, "event_time", None)
        processors[b].init(handle)
    profiler = cProfile.Profile() if args.profile else None
    outputs: list[pd.DataFrame] = []
    cpu_total = rows_total = 0.0
    # The watermark at each batch: the previous batch's last left time (the steady bench's, 0 s delay).
    for batch, frames in enumerate([*inputs, {}]):
        watermark_ms = 0 if batch == 0 else (START_US + (batch * args.left - 1) * LEFT_STEP_US) // 1000
        timer_values = FakeTimerValues(watermark_ms)
        measured = batch > 0
        batch_out: list[pd.DataFrame] = []
        if profiler is not None and measured:
            profiler.enable()
        started = time.process_time()
        for b in range(args.buckets):
            processor = processors[b]
            if b in frames:
                batch_out.extend(processor.handleInputRows((b,), iter([frames[b]]), timer_values))
            else:
                # No input for the bucket (the flush batch): Spark fires the bucket's due timer instead.
                for ms in sorted(t for t in handles[b].timers if t <= watermark_ms):
                    handles[b].timers.discard(ms)
                    info = type("Info", (), {"getExpiryTimeInMs": lambda self, ms=ms: ms})()
                    batch_out.extend(processor.handleExpiredTimer((b,), timer_values, info))
        cpu = time.process_time() - started
        if profiler is not None and measured:
            profiler.disable()
        outputs.extend(batch_out)
        n_out, _ = joined_count(batch_out)
        if measured:
            cpu_total += cpu
            rows_total += n_out
        print(json.dumps({
            "batch": batch, "measured": measured, "rows_in": args.left if frames else 0, "joined_out": n_out,
            "cpu_s": round(cpu, 3), "cpu_s_per_250k_out": round(cpu * 250_000 / n_out, 3) if n_out else None,
        }), flush=True)
    _, rows = joined_count(outputs)
    expected = reference(inputs)
    got = dict(rows)
    if len(rows) != len(expected) or got != expected:
        wrong = sum(1 for k, v in expected.items() if got.get(k, "missing") != v)
        raise SystemExit(f"rows differ from the reference: {len(rows)} out, {len(expected)} expected, {wrong} differ")
    print(json.dumps({
        "summary": True, "left_per_batch": args.left, "keys": args.keys, "buckets": args.buckets,
        "measured_cpu_s": round(cpu_total, 3), "joined_rows": int(rows_total),
        "cpu_s_per_250k_left": round(cpu_total * 250_000 / rows_total, 3), "rows_equal_reference": True,
    }), flush=True)
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
