"""The host's ``transformWithStateInPandas`` processor: one bucket of keys, the core operator once per key.

:class:`HostProcessor` is the generic half of every streaming operator: it opens an invocation's packs, drops
heartbeats, sends dead letters out at once, loads the bucket's timer index, runs each key that got rows (its
elements, then the watermark) and every other key of the bucket whose timer the watermark reached, keeps the
bucket's one Spark timer at the smallest key timer, and writes each key's cell back once.  A registration
(the temporal join's :mod:`timeweave.spark.temporal_join_streaming`, MATCH_RECOGNIZE's
:mod:`timeweave.spark.match_recognize_streaming`) subclasses it with what is the operator's own: where its state
lives (:class:`StateVariables`), how a key's rows become the core's elements (:meth:`HostProcessor.group`,
:meth:`HostProcessor.process`), how the core's outputs become tagged output rows (:meth:`HostProcessor.fire`,
:meth:`HostProcessor.frames`) and its dead letters' shape.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.streaming.stateful_processor import ExpiredTimerInfo, TimerValues

from timeweave.core.event_time import END_OF_INPUT_MS, watermark_us
from timeweave.core.operator import StateLayout
from timeweave.core.state import NO_WATERMARK
from timeweave.spark.host.packs import PACK, read_packs
from timeweave.spark.host.schema import HEARTBEAT, KEYS_SCHEMA, OP, STATE_SCHEMA
from timeweave.spark.host.state import MapEntry, SparkKeyContext, TimerIndex


@dataclass(frozen=True)
class StateVariables:
    """Where an operator's state lives in Spark: the bucket's MapState of key cells (``keys``), its timer index
    (ValueState ``index``) and the cells' format (``cell``: :class:`MapEntry`, or
    :class:`~timeweave.spark.host.state.PackedEntry` for LZ4-compressed cells).

    Part of the checkpoint, with the core operator's :class:`~timeweave.core.operator.StateLayout`: a change to
    any of them is a new layout, which old checkpoints do not resume into.

    >>> StateVariables("timeweave_keys", "timeweave_index").cell.__name__
    'MapEntry'
    """

    keys: str
    index: str
    cell: type[MapEntry] = MapEntry


class HostProcessor(StatefulProcessor):
    """The generic processor (see the module docstring); subclasses name the operator's parts.

    Class attributes: :attr:`state` (where state lives), :attr:`dead_ops` (``tw_op`` codes of dead letters).
    Instance attributes set by the subclass's ``__init__``: ``end_ms`` (the watermark, ms, of the end of
    input), ``event_time`` (False: processing time, no watermark and no timers).  Spark passes the handler
    arguments by keyword, so their names are Spark's.
    """

    state: ClassVar[StateVariables]
    dead_ops: ClassVar[tuple[int, ...]] = ()
    #: Whether every key holding state keeps a core timer at the end of input (an operator that closes its
    #: keys' work there, as MATCH_RECOGNIZE closes its partitions): the host registers it.
    timer_at_end: ClassVar[bool] = False
    end_ms: int = END_OF_INPUT_MS
    event_time: bool = True

    # -- the operator's parts (a registration overrides these) ----------------------------------------------
    def open(self, handle: StatefulProcessorHandle) -> None:
        """Build the core operator and what the hooks need (on the executor, after unpickling)."""

    @property
    def layout(self) -> StateLayout:
        """The core operator's declared state."""
        raise NotImplementedError

    def new_sink(self) -> Any:
        """A collector of one handler call's outputs (passed to :meth:`process`, :meth:`fire`, :meth:`frames`)."""
        raise NotImplementedError

    def dead_frame(self, dead: pa.Table) -> pd.DataFrame:
        """The tagged output rows of an invocation's dead letters (rows with an op in :attr:`dead_ops`)."""
        raise NotImplementedError

    def immediate(self, table: pa.Table, ops: np.ndarray, sink: Any) -> None:
        """Other rows of the invocation that leave at once (ops above :data:`HEARTBEAT`, not dead letters)."""

    def group(self, table: pa.Table, sink: Any) -> list[tuple[str, Any]]:
        """The invocation's element rows by key: ``(key text, what process takes)`` per key, counted in ``sink``."""
        raise NotImplementedError

    def process(self, ctx: SparkKeyContext, elements: Any, sink: Any) -> None:
        """Hand one key's elements of the invocation to the core operator (late rows into ``sink``)."""
        raise NotImplementedError

    def fire(self, ctx: SparkKeyContext, sink: Any) -> None:
        """Run the core's watermark for the key; its outputs into ``sink``."""
        raise NotImplementedError

    def frames(self, sink: Any, always: bool) -> Iterator[pd.DataFrame]:
        """The tagged output frames of ``sink`` (``always``: also when it holds nothing, for its counts)."""
        raise NotImplementedError

    # -- the host ----------------------------------------------------------------------------------------
    def init(self, handle: StatefulProcessorHandle) -> None:
        self._handle = handle
        self._keys = handle.getMapState(self.state.keys, KEYS_SCHEMA, STATE_SCHEMA)
        self._index_state = handle.getValueState(self.state.index, STATE_SCHEMA)
        self.open(handle)

    def watermark(self, timer_values: TimerValues) -> int:
        """Spark's watermark as the core's (µs; ``END_OF_TIME`` from :attr:`end_ms` on; none in processing time)."""
        if not self.event_time:
            return NO_WATERMARK
        return watermark_us(timer_values.getCurrentWatermarkInMs(), self.end_ms)

    def context(self, text: str | None, watermark: int) -> SparkKeyContext:
        """The core's context of key ``text``: its cell in the bucket's MapState."""
        return SparkKeyContext(None, self.state.cell(self._keys, text), watermark)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        # A heartbeat unioned in after the packing step is a row without a pack: it only moved the watermark.
        packs = [pack for frame in rows for pack in frame[PACK].tolist() if pack is not None]
        if not packs:
            return
        table = read_packs(packs)
        ops = table.column(OP).to_numpy()
        sink = self.new_sink()
        if (ops >= HEARTBEAT).any():
            # Heartbeats only move the watermark; dead letters leave at once, untouched.
            dead = np.isin(ops, self.dead_ops)
            if dead.any():
                yield self.dead_frame(table.filter(pa.array(dead)))
            self.immediate(table, ops, sink)
            elements = ops < HEARTBEAT
            table = table.filter(pa.array(elements))
            if not len(table):
                yield from self.frames(sink, always=False)
                return
        watermark = self.watermark(timerValues)
        index = TimerIndex.load(self._index_state)
        done = set()
        for text, elements in self.group(table, sink):
            ctx = self.context(text, watermark)
            self.process(ctx, elements, sink)
            self.advance(ctx, text, index, sink)
            done.add(text)
        self.due(watermark, index, done, sink)
        index.store(self._index_state, self._handle if self.event_time else None, self.end_ms)
        yield from self.frames(sink, always=True)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        if not self.event_time:
            return
        index = TimerIndex.load(self._index_state)
        index.fired(expiredTimerInfo.getExpiryTimeInMs())
        sink = self.new_sink()
        self.due(self.watermark(timerValues), index, (), sink)
        index.store(self._index_state, self._handle, self.end_ms)
        yield from self.frames(sink, always=False)

    def due(self, watermark: int, index: TimerIndex, done: Collection[Any], sink: Any) -> None:
        """Run the watermark for every other key of the bucket with a core timer at or below it."""
        for text in index.due(watermark):
            if text not in done:
                self.advance(self.context(text, watermark), text, index, sink)

    def advance(self, ctx: SparkKeyContext, text: str, index: TimerIndex, sink: Any) -> None:
        """The core's watermark for the key, Spark's due timers forgotten, one state write, its timer indexed."""
        self.fire(ctx, sink)
        if self.timer_at_end:
            # A key holding state must see the final watermark; the core's own timers may not reach it.
            end_us = self.end_ms * 1000
            if self.layout.holds_state(ctx):
                ctx.register_timer(end_us)
            else:
                ctx.delete_timer(end_us)
        ctx.expire_timers()  # the watermark has run for every timer at or below it
        ctx.commit()
        index.set(text, ctx.smallest_timer())

    def close(self) -> None:
        pass


__all__ = ["HostProcessor", "StateVariables"]
