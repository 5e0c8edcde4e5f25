"""A host across steps for the updating-results tests, and the batch GROUP BY the continuous one must equal.

:func:`timeweave.core.operator.run_keyed` reads one bounded input; a continuous query lives across micro-batches,
so :class:`Stepper` keeps each key's context between steps (as the streaming host does), can carry every key's
state through the state codec (a checkpoint, a backfill slice edge) and collects outputs by tag.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from timeweave.core.operator import Tag, tag_of
from timeweave.core.state import NO_WATERMARK, InMemoryKeyContext
from timeweave.core.state_codec import decode, encode
from timeweave.core.updates import GroupAggregateOperator
from timeweave.core.windows.accumulators import (
    AggregateCall,
    Avg,
    Count,
    CountDistinct,
    CountStar,
    Max,
    Min,
    Sum,
)

#: The aggregates the property and seed tests compute: every built-in, several at once.
CALLS = (
    AggregateCall(CountStar(), name="rows"),
    AggregateCall(Count(), "url", name="cnt"),
    AggregateCall(Sum(), "v", name="total"),
    AggregateCall(Min(), "v", name="low"),
    AggregateCall(Max(), "v", name="high"),
    AggregateCall(Avg(), "v", name="mean"),
    AggregateCall(CountDistinct(), "url", name="urls"),
    # COUNT(url) FILTER (WHERE v > 0): a retraction passes the same filter as the row it takes back
    AggregateCall(Count(), "url", filter=lambda row: None if row["v"] is None else row["v"] > 0, name="positive"),
)


class Stepper:
    """One operator, one :class:`InMemoryKeyContext` per key kept across steps."""

    def __init__(self, op: GroupAggregateOperator) -> None:
        self.op = op
        self.contexts: dict[tuple[Any, ...], InMemoryKeyContext] = {}
        self.watermark = NO_WATERMARK
        self.out: dict[Tag, list[Any]] = {tag: [] for tag in Tag}

    def key_of(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row.get(c) for c in self.op.spec.group_by)

    def step(self, rows: list[dict[str, Any]], watermark: int | None = None) -> dict[Tag, list[Any]]:
        """One micro-batch: the rows by key (arrival order), then the new watermark reaches every key."""
        step_out: dict[Tag, list[Any]] = {tag: [] for tag in Tag}
        by_key: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for row in rows:
            by_key.setdefault(self.key_of(row), []).append(row)
        for key, key_rows in by_key.items():
            ctx = self.contexts.setdefault(key, InMemoryKeyContext(current_watermark=self.watermark))
            for output in self.op.process_elements(ctx, key_rows):
                step_out[tag_of(output)].append(output)
        if watermark is not None:
            self.watermark = watermark
            for ctx in self.contexts.values():
                ctx.current_watermark = watermark
                for output in self.op.on_watermark(ctx):
                    step_out[tag_of(output)].append(output)
        for key in [k for k, c in self.contexts.items() if c.is_empty()]:
            del self.contexts[key]
        for tag, outputs in step_out.items():
            self.out[tag].extend(outputs)
        return step_out

    def restart(self) -> None:
        """Every key's declared state through the state codec into fresh contexts (timers kept, as a host's
        cell keeps them)."""
        restored = {}
        for key, ctx in self.contexts.items():
            fresh = InMemoryKeyContext(current_watermark=ctx.current_watermark, timer_set=set(ctx.timer_set))
            self.op.layout.restore(fresh, decode(encode(self.op.layout.snapshot(ctx)), where=f"key {key}"))
            restored[key] = fresh
        self.contexts = restored


def _avg(values: list[Any]) -> Any:
    if not values:
        return None
    total = sum(values)
    return total / Decimal(len(values)) if isinstance(total, Decimal) else total / len(values)


def batch_group_by(rows: list[dict[str, Any]], group_by: tuple[str, ...] = ("user",)) -> Counter[tuple[Any, ...]]:
    """``SELECT <group_by>, COUNT(*), COUNT(url), SUM(v), MIN(v), MAX(v), AVG(v), COUNT(DISTINCT url), COUNT(url)
    FILTER (WHERE v > 0) ... GROUP BY <group_by>`` over ``rows``, written out plainly (the oracle: no accumulator code), as key + values tuples."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[c] for c in group_by), []).append(row)
    out: Counter[tuple[Any, ...]] = Counter()
    for key, members in groups.items():
        urls = [r["url"] for r in members if r["url"] is not None]
        vs = [r["v"] for r in members if r["v"] is not None]
        out[(*key, len(members), len(urls), sum(vs) if vs else None, min(vs, default=None), max(vs, default=None),
             _avg(vs), len(set(urls)),
             sum(1 for r in members if r["url"] is not None and r["v"] is not None and r["v"] > 0))] += 1
    return out
