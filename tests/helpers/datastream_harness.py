"""A small host for the DataStream window operator in core tests: keys' contexts, steps, clocks, snapshots.

Clocks are given in ms (Flink's unit) and handed to the key contexts in the core's µs.  ``restore()`` moves
every key's state through the operator's ``StateLayout`` and the state codec into a fresh context (as a backfill
slice edge does: timers are not carried, the operator re-registers them from its state).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from timeweave.core import state_codec
from timeweave.core.datastream.functions import AggregateFunction
from timeweave.core.datastream.operator import WindowOperator
from timeweave.core.operator import Tag, tag_of
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, InMemoryKeyContext


def us(ms: int) -> int:
    """A ms clock value as the core's µs (the ends stay the ends)."""
    if ms in (NO_WATERMARK, END_OF_TIME):
        return ms
    return ms * 1000


class Harness:
    """Runs one :class:`WindowOperator` over keys; outputs are collected in order, per tag."""

    def __init__(self, operator: WindowOperator) -> None:
        self.op = operator
        self.contexts: dict[Any, InMemoryKeyContext] = {}
        self.watermark_ms = NO_WATERMARK
        self.now_ms: int | None = None
        self.out: list[Any] = []

    def _ctx(self, key: Any) -> InMemoryKeyContext:
        ctx = self.contexts.get(key)
        if ctx is None:
            ctx = self.contexts[key] = InMemoryKeyContext()
        ctx.current_watermark = us(self.watermark_ms)
        if self.now_ms is not None:
            ctx.current_processing_time = us(self.now_ms)
        return ctx

    def send(self, key: Any, rows: Iterable[Any]) -> list[Any]:
        """One step of a key's rows at the current clocks; returns (and collects) the outputs."""
        got = self.op.process_elements(self._ctx(key), list(rows))
        self.out.extend(got)
        return got

    def advance(self, watermark_ms: int | None = None, *, now_ms: int | None = None) -> list[Any]:
        """Move the clocks (ms) and wake every key (a host wakes keys holding state or timers)."""
        if watermark_ms is not None:
            self.watermark_ms = watermark_ms
        if now_ms is not None:
            self.now_ms = now_ms
        got: list[Any] = []
        for key in list(self.contexts):
            got.extend(self.op.on_watermark(self._ctx(key)))
        self.out.extend(got)
        return got

    def restore(self) -> None:
        """Every key's state through snapshot -> codec -> restore into a fresh context."""
        for key, ctx in list(self.contexts.items()):
            snapshot = state_codec.decode(state_codec.encode(self.op.layout.snapshot(ctx)))
            fresh = InMemoryKeyContext()
            self.op.layout.restore(fresh, snapshot)
            self.contexts[key] = fresh

    def tagged(self, tag: Tag) -> list[Any]:
        return [o for o in self.out if tag_of(o) == tag]

    @property
    def firings(self) -> list[Any]:
        return self.tagged(Tag.MAIN)

    @property
    def late(self) -> list[Any]:
        return self.tagged(Tag.LATE)

    @property
    def dead(self) -> list[Any]:
        return self.tagged(Tag.DEAD_LETTER)


def brief(firing: Any) -> tuple[Any, ...]:
    """A firing as ``(key, start, end, values, kind, sequence)`` for comparisons."""
    return (firing.key, firing.window.start, firing.window.end, firing.values, firing.kind.value, firing.sequence)


class Sum(AggregateFunction):
    """SUM of the rows' ``v``."""

    def create(self) -> int:
        return 0

    def add(self, value: Any, acc: int) -> int:
        return acc + value["v"]

    def merge(self, a: int, b: int) -> int:
        return a + b


def rows(*pairs: tuple[int, Any], key: Any = "a") -> list[dict[str, Any]]:
    """Rows ``{"k": key, "t": t, "v": v}`` of ``(t, v)`` pairs."""
    return [{"k": key, "t": t, "v": v} for t, v in pairs]
