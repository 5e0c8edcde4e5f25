"""Random window-aggregation inputs and the engine-free reference run of the streaming window job.

The rows: an ``id``, a key ``k`` (NULL sometimes: an ordinary key), an event time ``ts`` over a few hours, out of
order within a run and sometimes far behind the watermark (late), NULL sometimes (dead letters), and values
``v`` (BIGINT), ``p`` (DECIMAL) and ``flag`` (BOOLEAN, for FILTER).  :func:`reference_stream` is what the streaming
job must write when the rows arrive in runs, each run one micro-batch whose watermark is the largest event time
of the earlier runs minus the delay (Spark's), then a flush: the core operator per key, its state through the
codec between runs.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from timeweave.core.state import END_OF_TIME, NO_WATERMARK, InMemoryKeyContext
from timeweave.core.state_codec import decode_cell, encode_cell
from timeweave.core.windows import LateRow, WindowAggregateOperator, WindowRow, WindowSpec, event_time_ms
from timeweave.core.windows.calls import parse_aggregates

SCHEMA = "id STRING, k STRING, ts TIMESTAMP, v BIGINT, p DECIMAL(10,2), flag BOOLEAN"
AGGREGATES = {"cnt": "COUNT(*)", "total": "SUM(p)", "hi": "MAX(v)", "lo_ts": "MIN(ts)", "n_v": "COUNT(DISTINCT v)",
              "avg_p": "AVG(p)", "flagged": "COUNT(*) FILTER (WHERE flag)"}
START = datetime(2024, 3, 1, 10, 0)


def random_rows(seed: int, n: int = 60, null_times: int = 2, late: int = 4) -> list[dict[str, Any]]:
    """``n`` rows in arrival order over ~2 hours from :data:`START`: mostly rising with jitter (out of order
    within a few minutes), ``late`` rows far behind, ``null_times`` rows without an event time."""
    rng = random.Random(seed)
    rows, clock = [], START
    for i in range(n):
        clock += timedelta(seconds=rng.randint(0, 240))
        ts = clock - timedelta(seconds=rng.randint(0, 180))
        rows.append({"id": f"r{i}", "k": rng.choice(["a", "b", "c", None]), "ts": ts, "v": rng.randint(-3, 9),
                     "p": Decimal(rng.randint(-500, 5000)) / 100, "flag": rng.choice([True, False, None])})
    for i in rng.sample(range(n // 2, n), late):  # far behind the rows before them: late in a later run
        rows[i]["ts"] = rows[i]["ts"] - timedelta(minutes=rng.randint(20, 60))
    for i in rng.sample(range(n), null_times):
        rows[i]["ts"] = None
    return rows


def reference_stream(runs: list[list[dict[str, Any]]], spec: WindowSpec, keys: tuple[str, ...], delay: timedelta,
                     time_zone: str | None = None) -> tuple[list[tuple[tuple, WindowRow]], list[LateRow], list[dict[str, Any]]]:
    """The streaming job's outputs for ``runs`` (each one micro-batch), then a flush: (key, window) results,
    late rows, dead-letter rows.  ``time_zone``: windows on that zone's wall clock (a TIMESTAMP event time in a
    session zone); naive times are UTC instants, or a TIMESTAMP_NTZ's wall clock with no zone."""
    op = WindowAggregateOperator(spec, parse_aggregates(AGGREGATES), time_column="ts", time_zone=time_zone)
    contexts: dict[tuple, InMemoryKeyContext] = {}
    results, late, dead = [], [], []
    watermark, latest = NO_WATERMARK, None

    def collect(key, outputs):
        for out in outputs:
            if isinstance(out, WindowRow):
                results.append((key, out))
            elif isinstance(out, LateRow):
                late.append(out)
            else:
                dead.append(out.row)

    def step(ctx):  # a checkpoint between micro-batches: the state through the codec
        ctx.values, ctx.timer_set, _ = decode_cell(encode_cell(ctx.values, ctx.timer_set, 0))

    for run in runs:
        by_key: dict[tuple, list] = {}
        for row in run:
            by_key.setdefault(tuple(row[c] for c in keys), []).append(row)
        for key, rows in by_key.items():
            ctx = contexts.setdefault(key, InMemoryKeyContext())
            ctx.current_watermark = watermark
            collect(key, op.process_elements(ctx, rows))
            step(ctx)
        times = [event_time_ms(r["ts"]) for r in run if r["ts"] is not None]
        if times:
            latest = max(times) if latest is None else max(latest, max(times))
            watermark = max(watermark, (latest - delay // timedelta(milliseconds=1)) * 1000)
        for key, ctx in contexts.items():
            ctx.current_watermark = watermark
            collect(key, op.on_watermark(ctx))
            step(ctx)
    for key, ctx in contexts.items():
        ctx.current_watermark = END_OF_TIME
        collect(key, op.on_watermark(ctx))
        assert not ctx.values
    return results, late, dead


__all__ = ["AGGREGATES", "SCHEMA", "START", "random_rows", "reference_stream"]
