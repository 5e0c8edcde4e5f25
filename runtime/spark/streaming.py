"""Structured Streaming adapter: the core temporal-join operators run inside ``transformWithStateInPandas``.

The adapter translates and decides nothing.  Lateness, emission order, the version a row gets,
version expiry and idle-state retention are the core's (:mod:`timeweave.core.temporal_join`); join
type, predicate and projection are :func:`timeweave.spark.plan.finalize`'s, the step the batch doors
end with.  What the adapter does:

1. **One internal schema for both sides.**  Valid rows (``plan.split_rejects``) of each side become
   ``tw_b`` (the key's bucket), ``tw_key`` (the key as one canonical string), ``tw_op`` (left row / upsert / delete, by ``plan.deleted_expression`` / heartbeat),
   ``tw_time`` (µs since epoch), ``tw_file`` (a version's input file), ``tw_seq`` (the versioned
   spec's ``sequence`` column, only when it has one) and ``tw_row`` (the whole original row as JSON, timestamps
   and dates as numbers, rebuilt with its exact types after the operator).
2. **One watermark per side.**  ``withWatermark`` on each side; Spark combines them with its default
   ``multipleWatermarkPolicy`` (min), the watermark of Flink's two-input operator.  Optional heartbeat
   rows (a timestamp stream) are unioned into *both* sides before the watermark, so they can move an
   idle stream's watermark, or close the stream (``flush``); the operator ignores them otherwise.
3. **Buckets.**  The operator is grouped by ``tw_b = pmod(xxhash64(key), buckets)`` (default
   :data:`DEFAULT_BUCKETS`), not by the join key: each invocation of the processor costs a fixed
   amount (state-server round trips, one pandas frame in and one Arrow batch out), so one
   invocation per bucket and micro-batch instead of one per key.  Inside a bucket the processor
   splits the rows by ``tw_key`` and runs the core once per key, exactly as before: keys never share state.
4. **The state bridge.**  :class:`SparkKeyContext` implements the core's ``KeyContext`` for one key
   over one cell (all named values, the core's timers and the arrival counter in one binary value, encoded
   as data by :mod:`timeweave.core.state_codec`: versioned, checksummed MessagePack, never pickle, because
   a checkpoint is storage others can write to; one read and at most one write per key and invocation).  The cell is the key's entry in
   the bucket's MapState ``timeweave_keys`` (a ValueState works the same, see the class).  Core times
   are µs, Spark timers ms: a core timer at ``t`` stands for a Spark timer at ``ceil(t / 1000)`` kept
   within [1 ms, the end of input] (:func:`timeweave.core.event_time.spark_timer_ms`: the one rule, both
   ends of TIMESTAMP included), which fires once the watermark has passed ``t``.  A bucket keeps *one* Spark timer, at the smallest
   core timer of its keys, and an index (ValueState ``timeweave_index``: key -> smallest core timer);
   when it fires, every key of the bucket with a timer at or below the watermark runs ``on_watermark``
   and the timer moves to the next smallest.  Every invocation runs ``on_watermark`` for the keys it
   got rows for and for the bucket's due keys, so emission is decided by the core comparing times to
   the watermark.  Checkpoint state format: these two state variables (the earlier per-key ValueState
   ``timeweave`` layout cannot be resumed; start such jobs from a fresh checkpoint).  A key's buffered
   left rows are the core's :class:`~timeweave.core.temporal_join.LeftBuffer` (three lists: times,
   sequences, payloads, sorted by time and sequence), stored as three lists, so a cell of thousands
   of rows encodes and decodes in C.  Checkpoints written by releases that pickled their cells are
   refused with a :class:`~timeweave.core.errors.StateFormatError`: start such jobs from a fresh checkpoint.  In event time the processor reads its packs' Arrow
   columns directly (no pandas frame; key texts dictionary-encoded, one Python string per key), feeds
   a key's rows of a micro-batch to the core as slices of column lists and takes the emitted rows back
   column-wise (``release``, :class:`~timeweave.core.temporal_join.JoinedRows`): no Python object per
   row on the way.
5. **Ties.**  A right row's sequence is the spec's ``sequence`` column when set, else an arrival counter
   kept per key; within one micro-batch a key's rows are numbered in input order — by file path,
   and within a file in file order — across batches by batch order.  Left rows are numbered the same
   way (the core emits equal times in arrival order).  Within a file the order is the order rows
   reach the processor: Spark keeps a map task's row order through the shuffle and the stable sort
   by bucket in front of the operator (``monotonically_increasing_id``, the batch plan's tie-breaker, is
   not allowed on streams).  A sort that spills to disk may reorder equal keys; give the versioned
   table a ``sequence`` column when several events of one key can share a time.

**Spark drops late rows before a TWS processor sees them.**  In ``timeMode="EventTime"``
``TransformWithStateInPySparkExec`` filters its input with the late-events watermark predicate
(``applyRemovingRowsOlderThanWatermark``: ``event_time <= watermark``, *equal included*) whenever a
column of its input carries watermark metadata, silently (only ``numRowsDroppedByWatermark`` counts
them).  Measured on PySpark 4.3.0: a row at 10:00:01 and one at exactly 10:00:05 with the watermark at
10:00:05 never reached ``handleInputRows``.  Flink does not drop rows equal to the watermark and
timeweave must report late rows, so the adapter hands the operator the event time as ``BIGINT`` µs
(``unix_micros`` strips the metadata) and drops the watermarked column: Spark's filter has nothing to
apply to, every row reaches the core, and the core sends rows below the watermark to the late output
with a reason.  The watermark itself still advances and fires timers (it is tracked at the
``EventTimeWatermark`` nodes of the sources, not at the operator's input).

Spark reports watermark 0 until the first batch ends, and its watermark never goes below 0: 0 is read
as "no watermark yet" (core's ``NO_WATERMARK``), so rows before 1970 wait (never late) until the
watermark is past 1970, and no Spark timer is ever at or below 0 ms (one there fired in the first batch
with nothing due and was lost, see :mod:`timeweave.core.event_time`).  A watermark at or past the flush
heartbeat's (9999-12-31 23:59:59.999 minus the larger delay) is the end of input, ``END_OF_TIME``: rows up
to 9999-12-31 23:59:59.999999 leave.

**Big cells are stored in pieces.**  A key's cell holds all its buffered left rows and every version newer
than the watermark (plus the one in force), so a hot key's cell grows with its micro-batch: 1 M versions
of one key in one micro-batch made one MapState value of 80 MB (three columns) to 190 MB (plus a
100-character note).  PySpark pickles a value for the state server, the JVM unpickles it, copies it into
a row and writes it to RocksDB, several copies at once: at 190 MB a 1 GB driver heap died with
``OutOfMemoryError: Java heap space`` in ``MapStateImpl.updateValue`` (issue 20).  A cell larger than
:data:`~timeweave.core.state_codec.PIECE_BYTES` (1 MiB) is now cut by :func:`timeweave.core.state_codec.split`:
the key's own MapState entry holds a manifest (first byte ``0x02``: piece count, size, CRC-32 of the whole)
and piece ``i`` lives at the MapState key ``"\\x00p<i>\\x00<key>"``, each piece a state blob with its own
checksum that knows its place, so a missing, stale, swapped or damaged piece is a
:class:`~timeweave.core.errors.StateFormatError` naming the key, never a wrong value.  A key text starting
with NUL is stored under one more NUL in front (:func:`_cell_key`), so no key's cell can be a piece.  The
JVM never sees a value larger than a piece whatever one key holds; the Python worker still holds the
key's whole cell while it runs the key (measured: 1.6 GB for 1 M versions, see ``bench/RESULTS.md``).
Layout: cells of at most 1 MiB are stored as before, so checkpoints written before 2026-11-26 are read
(a big one-value cell is rewritten in pieces the next time its key is written), except the cells of keys
whose text starts with NUL (U+0000), which are not found under their new MapState key.

**Dead letters** (NULL key or time, ``plan.reject_reason``) travel through the operator too, as rows with
op ``DEAD_LEFT``/``DEAD_RIGHT``, their reason in ``tw_reason`` and the original row as ``to_json`` in ``tw_row``; the
processor emits them at once, untouched.  A separate dead-letter branch over the same input would make Spark
scan every input file twice per micro-batch (both branches read the source's batch; its ``numInputRows``
counted each row twice).  Their ``tw_ts`` is year 1, so they never move a watermark (Spark's watermark is
the largest time seen, and never below 0); it is dropped before the operator, so no timer or lateness sees it.  The operator's input
gained the ``tw_reason`` column; resuming a checkpoint written by the earlier two-branch plan is untested.

**A LEFT join keeps every left row** (:attr:`~timeweave.core.spec.TemporalJoinSpec.keeps_unmatchable_left`): a
left row with a NULL key or NULL time can never match, so instead of a dead letter it travels as op
``UNMATCHED_LEFT`` (its wire payload in ``tw_row``, ``tw_ts`` year 1 like a dead letter: it never moves a
watermark) and the processor emits it at once as a joined row without a version, counted among the left
rows.  Waiting for the watermark would change nothing (no version can ever be its match) and a NULL time
has no place in the watermark's order.  The batch doors output the same row (``timeweave__probe_sql``), so the
flushed stream still equals them.  An INNER join dead-letters it as before.

Outputs: one tagged stream (``__tw_kind`` = ``joined`` / ``late`` / ``dead`` / ``stats``) that a
``foreachBatch`` splits with :meth:`StreamingJoin.split` into the main output (``finalize``d), the late
output (left columns + ``reason`` + ``watermark``) and the dead letter (``side``, ``reason``, ``row``
JSON: the batch door's :func:`timeweave.spark.dataframe.dead_letters` shape).

**Packs.**  The internal rows do not reach the operator one by one: a ``mapInArrow`` step
(:func:`pack_rows`) turns a source partition's rows of one bucket into one row ``(tw_b, tw_pack)``, the
rows (every internal column but the bucket) as one Arrow IPC stream, in input order (a stable sort by
bucket; at most :data:`PACK_ROWS` rows and about :data:`PACK_BYTES` per pack), and the processor unpacks an invocation's packs into
the frame it used to get (:func:`unpack`).  Why: PySpark 4.3 regroups the operator's input row by row
(``itertuples``, ``itertools.groupby``, then ``pd.DataFrame`` from namedtuples), ~5 µs per row in the
Python worker whatever the columns, and the shuffle and the sort in front of the operator move one
row per pack instead of one per input row.  Order is as before: a map task's packs keep its rows'
order, and packs of different map tasks arrive in any order, as their rows did.  The watermarks are
still taken over the rows (the packing step runs after ``withWatermark`` and the union).  The state
layout is unchanged; resuming a checkpoint written before packs (a different operator input) is untested.

**Joined rows travel in documents.**  A ``joined`` row of the tagged stream carries up to
:data:`DOC_ROWS` joined rows as one JSON array (:func:`_frame`), which the split parses once and
unpacks with ``inline``.  One output row per joined row made Spark parse two JSON payloads per row,
and its ``from_json`` builds a new reader with an 8 KB buffer per value: sampled with JFR, that was
~30 % of the executors' CPU of a micro-batch.  The state layout is unchanged (it keeps each payload
as before); the operator's output lost its per-row version columns (``__tw_v_row``, ``__tw_v_from``,
``__tw_v_to``), and resuming a checkpoint written before that change is untested.
"""

from __future__ import annotations

import functools
from collections.abc import Container, Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.streaming.stateful_processor import ExpiredTimerInfo, TimerValues

from timeweave.core.errors import SpecError, StateFormatError
from timeweave.core.event_time import END_OF_INPUT_MS, end_of_input_ms, spark_timer_ms, watermark_as_time, watermark_us
from timeweave.core.spec import StateRetention, TemporalJoinSpec
from timeweave.core.state import NO_WATERMARK
from timeweave.core.state_codec import PIECE_BYTES, decode, decode_cell, encode, encode_cell, join, split
from timeweave.core.temporal_join import (
    EventTimeTemporalJoin,
    Joined,
    JoinedRows,
    LeftRow,
    Output,
    ProcessingTimeTemporalJoin,
)
from timeweave.core.versioned import Match, VersionEvent
from timeweave.spark import plan
from timeweave.spark.schema import column as named
from timeweave.spark.schema import schema_kinds

MODES = ("event_time", "processing_time")

# -- the internal (operator input) schema ---------------------------------------------------------
# Names are plain identifiers: PySpark 4.3 rebuilds the operator's pandas input from namedtuples, which
# rename fields starting with "_" to "_0", "_1", ...
KEY = "tw_k"  # the key columns' prefix (the MATCH_RECOGNIZE door keeps one column per key part)
BUCKET = "tw_b"  # the operator's grouping key: a hash bucket of the join key (see "Buckets" above)
KEY_TEXT = "tw_key"  # the join key as one canonical string: the key of the per-key state inside a bucket
OP = "tw_op"  # what a row is: LEFT_ROW / UPSERT / DELETE / HEARTBEAT (a small int: cheap to convert)
TIME = "tw_time"
SEQ = "tw_seq"
FILE = "tw_file"
ROW = "tw_row"
REJECT = "tw_reason"  # why a row is a dead letter (NULL for every other row; see "Dead letters" above)
_TS = "tw_ts"  # the watermarked timestamp, dropped before the operator (see the module docstring)
LEFT_ROW, UPSERT, DELETE, HEARTBEAT, DEAD_LEFT, DEAD_RIGHT = 0, 1, 2, 3, 4, 5
#: ``tw_op`` of a LEFT join's left row with a NULL key or time: emitted at once, unmatched (module docstring).
UNMATCHED_LEFT = 6
#: ``tw_ts`` of a dead letter: below any event time, so it never moves a watermark (Spark takes the maximum).
_DEAD_TS = "0001-01-01 00:00:00"

# -- the tagged (operator output) schema -----------------------------------------------------------
KIND = "__tw_kind"
L_ROW = "__tw_l_row"  # joined: a document of joined rows (see "Joined rows travel in documents"); else a left row
REASON = "__tw_reason"
WATERMARK = "__tw_watermark"
N_LEFT = "__tw_n_left"
N_RIGHT = "__tw_n_right"
OUT_SIDE = "__tw_out_side"
JOINED, LATE, DEAD, STATS = "joined", "late", "dead", "stats"
#: Most joined rows in one document (one ``joined`` row of the operator's output, see :func:`_frame`).
DOC_ROWS = 4096

OUTPUT_SCHEMA = T.StructType([
    T.StructField(KIND, T.StringType()),
    T.StructField(L_ROW, T.StringType()),
    T.StructField(REASON, T.StringType()),
    T.StructField(WATERMARK, T.LongType()),
    T.StructField(N_LEFT, T.LongType()),
    T.StructField(N_RIGHT, T.LongType()),
    T.StructField(OUT_SIDE, T.StringType()),
])

#: JSON options that round-trip every value exactly (Spark's default timestamp format keeps only ms).
JSON_OPTIONS = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "ignoreNullFields": "true",
}

#: Column names the late output adds to the left columns.
LATE_COLUMNS = ("reason", "watermark")

_STATE_NAME = "timeweave"
_STATE_SCHEMA = T.StructType([T.StructField("v", T.BinaryType(), True)])
#: Per-key state of a bucket: join key (``tw_key``) -> the key's :class:`SparkKeyContext` cell (``state_codec.encode_cell``).
_KEYS_STATE = "timeweave_keys"
_KEYS_SCHEMA = T.StructType([T.StructField("k", T.StringType(), True)])
#: Per bucket: the smallest core timer of each key that has one, and the bucket's one Spark timer.
_INDEX_STATE = "timeweave_index"
#: Default number of buckets: enough for every shuffle partition of a small cluster to get some, few
#: enough that a micro-batch makes a handful of operator invocations per partition.
DEFAULT_BUCKETS = 16


# =================================================================================================
# The state bridge
# =================================================================================================
# State cells are data (timeweave.core.state_codec: versioned, checksummed MessagePack, never pickle):
# a checkpoint directory is storage other people can write to, and loading a pickle runs code.


class SparkKeyContext:
    """The core's ``KeyContext`` for one key over a Spark ValueState and Spark event-time timers.

    All named values, the core's timer set (µs) and the key's arrival counter live in one dict,
    encoded into one binary ValueState cell (:func:`timeweave.core.state_codec.encode_cell`, never pickle):
    each state call is a round trip to the JVM, so the
    context reads once when created and writes at most once in :meth:`commit`.  Timers are applied
    in :meth:`commit` too, as the difference between the Spark timers before and after (with
    ``handle=None`` no Spark timer is touched: the temporal join's buckets keep their own, see
    the module docstring).  ``state`` is anything with ValueState's ``get``/``update``/``clear``.

    Example (``state`` is a ValueState whose ``get`` returns None: a new key)::

        ctx = SparkKeyContext(handle, state, watermark=20_000)
        ctx.put("left", [row]); ctx.register_timer(15_000)
        ctx.commit()   # one state write, one Spark timer at 15 ms
    """

    def __init__(self, handle: StatefulProcessorHandle | None, state: Any, watermark: int) -> None:
        self._handle = handle
        self._state = state
        self._watermark = watermark
        stored = state.get()
        self._values: dict[str, Any]
        self._timers: set[int]
        self._next_seq: int
        if stored and stored[0] is not None:
            self._values, self._timers, self._next_seq = decode_cell(
                stored[0], where=getattr(state, "where", "streaming checkpoint state"))
        else:
            self._values, self._timers, self._next_seq = {}, set(), 0
        self._spark_timers = {spark_timer_ms(t) for t in self._timers}
        self._dirty = False
        # The core calls get() several times per row; the dict's bound method saves a Python frame each.
        self.get = self._values.get  # type: ignore[method-assign]

    # -- KeyContext -------------------------------------------------------------------------------
    def get(self, name: str) -> Any | None:
        return self._values.get(name)  # (shadowed per instance by the dict's own get, see __init__)

    def put(self, name: str, value: Any) -> None:
        self._values[name] = value
        self._dirty = True

    def clear(self, name: str) -> None:
        if self._values.pop(name, None) is not None:
            self._dirty = True

    def register_timer(self, time: int) -> None:
        if time not in self._timers:
            self._timers.add(time)
            self._dirty = True

    def delete_timer(self, time: int) -> None:
        if time in self._timers:
            self._timers.discard(time)
            self._dirty = True

    def timers(self) -> list[int]:
        return sorted(self._timers)

    @property
    def watermark(self) -> int:
        return self._watermark

    # -- adapter side -----------------------------------------------------------------------------
    def reserve_seqs(self, count: int) -> int:
        """Reserve ``count`` arrival numbers for the key (ties between equal times break by them); the first."""
        first = self._next_seq
        if count:
            self._next_seq += count
            self._dirty = True
        return first

    def expire_timers(self) -> None:
        """Forget the core timers at or below the watermark: Spark fires (and deletes) them in this batch.

        Same effect as :meth:`fired` for every Spark timer ``<= watermark``; the bucketed processor
        calls it after ``on_watermark`` has run for the key.
        """
        watermark = self._watermark
        due = {t for t in self._timers if t <= watermark}
        if due:
            self._timers -= due
            self._dirty = True

    def smallest_timer(self) -> int | None:
        """The smallest core timer (µs) the key holds, or None."""
        return min(self._timers) if self._timers else None

    def fired(self, timer_ms: int) -> None:
        """Spark fired (and deletes) the timer at ``timer_ms``: forget the core timers it stood for."""
        self._spark_timers.discard(timer_ms)
        due = {t for t in self._timers if spark_timer_ms(t) == timer_ms}
        if due:
            self._timers -= due
            self._dirty = True

    def commit(self) -> None:
        """Write the key's state back (or clear it when empty) and bring Spark's timers in line."""
        wanted = {spark_timer_ms(t) for t in self._timers}
        if self._handle is not None:
            for ms in sorted(self._spark_timers - wanted):
                self._handle.deleteTimer(ms)
            for ms in sorted(wanted - self._spark_timers):
                self._handle.registerTimer(ms)
        self._spark_timers = wanted
        if not self._dirty:
            return
        if not self._values and not self._timers:
            # Nothing buffered, no timer: the arrival counter may restart, no event is left to compare with.
            self._state.clear()
        else:
            self._state.update((encode_cell(self._values, self._timers, self._next_seq),))
        self._dirty = False


# =================================================================================================
# The processor
# =================================================================================================
def positions_by_key(batch: pd.DataFrame) -> dict[str, list[int]]:
    """The positions of a bucket's rows by ``tw_key``, each key's rows in input order (shared by the processors).

    >>> positions_by_key(pd.DataFrame({KEY_TEXT: ["a", "b", "a"]}))
    {'a': [0, 2], 'b': [1]}
    """
    texts, order, bounds = key_groups(batch)
    return dict(zip(texts, (group.tolist() for group in np.split(order, bounds[1:-1])), strict=True))


def key_groups(batch: pd.DataFrame) -> tuple[list[str | None], np.ndarray, list[int]]:
    """A bucket's rows grouped by ``tw_key``: the keys in order of first appearance, the row positions
    ordered by key (each key's positions ascending), and the bounds of each key's run in that order.

    >>> texts, order, bounds = key_groups(pd.DataFrame({KEY_TEXT: ["a", "b", "a"]}))
    >>> texts, order.tolist(), bounds
    (['a', 'b'], [0, 2, 1], [0, 2, 3])
    """
    # One factorize and one stable sort (in C) instead of a dict lookup per row.
    codes, keys = pd.factorize(batch[KEY_TEXT].to_numpy(), use_na_sentinel=False)
    order = np.argsort(codes, kind="stable")
    bounds = [0, *np.cumsum(np.bincount(codes, minlength=len(keys))).tolist()]
    # Key texts are strings; factorize hands a NULL key back as NaN.
    texts = [key if isinstance(key, str) else None for key in keys.tolist()]
    return texts, order, bounds


def check_buckets(buckets: Any, where: str) -> None:
    """``buckets`` (the operator's number of key-hash buckets) must be a positive integer."""
    if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
        raise SpecError("buckets", f"must be a positive integer, found {buckets!r}", where=where)


# =================================================================================================
# Packs: a source partition's rows of one bucket as one operator input row
# =================================================================================================
PACK = "tw_pack"
#: The optional column of a pack's largest value of one input column (:func:`pack_rows`' ``latest``).
PACK_TIME = "tw_pack_time"
#: Input rows per pack at most (per source partition and bucket; bounds the packing worker's memory).
PACK_ROWS = 65536
#: Arrow bytes of input per packing step at most: wide rows keep a pack far below Spark's 2 GB value limit.
PACK_BYTES = 32 << 20
#: The packing step's output, the operator's input: the bucket and its rows as one Arrow IPC stream.
PACKS_SCHEMA = T.StructType([T.StructField(BUCKET, T.IntegerType()), T.StructField(PACK, T.BinaryType())])
#: :data:`PACKS_SCHEMA` plus each pack's largest value of the ``latest`` column (BIGINT).
PACKS_WITH_TIME_SCHEMA = T.StructType([*PACKS_SCHEMA.fields, T.StructField(PACK_TIME, T.LongType())])


def pack_rows(batches: Iterator[pa.RecordBatch], latest: str | None = None) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function packing a source partition's internal rows: one output row per bucket
    and up to :data:`PACK_ROWS` input rows or :data:`PACK_BYTES` (see "Packs" in the module docstring).

    Within a pack the rows keep their order (a stable sort by bucket), so each key's rows reach the
    operator in the order they would have arrived unpacked.  With ``latest`` (a BIGINT column), each pack
    also carries the largest value of that column as :data:`PACK_TIME` (schema :data:`PACKS_WITH_TIME_SCHEMA`):
    a watermark taken over packs' largest event times is the one their rows give.  Both streaming doors
    (the temporal join and MATCH_RECOGNIZE) pack with this one function.

    >>> rows = pa.record_batch({BUCKET: pa.array([1, 0, 1], pa.int32()), ROW: ["x", "y", "z"], "t": [5, 7, 3]})
    >>> [(b[BUCKET], unpack([b[PACK]])[ROW].tolist()) for b in next(pack_rows(iter([rows]))).to_pylist()]
    [(0, ['y']), (1, ['x', 'z'])]
    >>> [(b[BUCKET], b[PACK_TIME]) for b in next(pack_rows(iter([rows]), latest="t")).to_pylist()]
    [(0, 7), (1, 5)]
    """
    pending: list[pa.RecordBatch] = []
    count = size = 0
    for batch in batches:
        if batch.num_rows:
            pending.append(batch)
            count += batch.num_rows
            size += batch.nbytes
        if count >= PACK_ROWS or size >= PACK_BYTES:
            yield _packs(pending, latest)
            pending, count, size = [], 0, 0
    if pending:
        yield _packs(pending, latest)


def _packs(batches: list[pa.RecordBatch], latest: str | None) -> pa.RecordBatch:
    table = pa.Table.from_batches(batches).combine_chunks()
    buckets = table.column(BUCKET).to_numpy(zero_copy_only=False)
    order = np.argsort(buckets, kind="stable")
    table = table.take(pa.array(order)).drop_columns([BUCKET])
    buckets = buckets[order]
    bounds = [0, *(np.flatnonzero(np.diff(buckets)) + 1).tolist(), len(buckets)]
    packs = []
    for start, end in pairwise(bounds):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table.slice(start, end - start))
        packs.append(sink.getvalue().to_pybytes())
    columns = [pa.array(buckets[bounds[:-1]], pa.int32()), pa.array(packs, pa.binary())]
    if latest is None:
        return pa.record_batch(columns, names=[BUCKET, PACK])
    values = table.column(latest).to_numpy(zero_copy_only=False)
    maxima = [int(values[start:end].max()) for start, end in pairwise(bounds)]
    return pa.record_batch([*columns, pa.array(maxima, pa.int64())], names=[BUCKET, PACK, PACK_TIME])


def unpack(packs: Any) -> pd.DataFrame:
    """The rows of packs (:func:`pack_rows`) as one frame, in pack order; ``tw_seq`` as exact ints (or None)."""
    table = pa.concat_tables([pa.ipc.open_stream(pack).read_all() for pack in packs])
    return pd.DataFrame({
        # A nullable BIGINT would become float64 in numpy (inexact above 2**53): the sequence stays ints.
        name: np.array(table.column(name).to_pylist(), dtype=object) if name == SEQ
        else table.column(name).to_numpy(zero_copy_only=False)
        for name in table.column_names
    })


def data_rows(rows: Iterator[pd.DataFrame]) -> pd.DataFrame | None:
    """One frame of a TWS invocation's input without the heartbeat rows (they only move the watermark).

    ``None`` when nothing but heartbeats (or nothing) arrived.  Shared by the processors of every
    streaming door.
    """
    frames = [f for f in rows if len(f)]
    if not frames:
        return None
    batch = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    heartbeats = batch[OP].to_numpy() == HEARTBEAT
    if heartbeats.any():
        batch = batch[~heartbeats]
    return None if batch.empty else batch


def _frame(outputs: list[Output | JoinedRows], n_left: int | None = None, n_right: int | None = None) -> pd.DataFrame:
    """The tagged output rows of one invocation (plus one ``stats`` row when counts are given).

    ``outputs``: the core's outputs, in order, where joined rows may also come column-wise
    (:class:`~timeweave.core.temporal_join.JoinedRows`, the event-time processor's: no object per row).

    Joined rows go in documents of up to :data:`DOC_ROWS` rows each, one ``joined`` output row per
    document: a JSON array whose elements are ``{"l": left payload, "v": version payload, "f":
    valid_from µs, "t": valid_to µs}`` (``v``, ``f`` absent without a version, ``t`` absent while the
    version is in force).  The payloads are JSON objects already, so a document is string joins.  Why:
    Spark's ``from_json`` builds a new reader per value (``CreateJacksonParser.utf8String``: an
    ``InputStreamReader`` with an 8 KB buffer), which was most of the JVM's cost of parsing two
    payloads per joined row; one document per 4096 rows also leaves few rows for Arrow, the batch
    cache and the observation.  Late rows stay one output row each (left payload in ``__tw_l_row``).

    >>> from timeweave.core.versioned import Match
    >>> row = LeftRow(5, 0, '{"id":1}')
    >>> f = _frame([Joined(row, None), Joined(row, Match(VersionEvent(2, 0, False, '{"r":1.5}'), None))])
    >>> f[L_ROW].tolist()
    ['[{"l":{"id":1}},{"l":{"id":1},"v":{"r":1.5},"f":2}]']
    """
    kinds: list[str] = []
    lefts: list[Any] = []
    reasons: list[str | None] = []
    marks: list[int] = []
    documents: list[str] = []
    # The current document: pieces of consecutive elements, and how many more rows it takes.
    pieces: list[str] = []
    room = DOC_ROWS
    for out in outputs:
        if out.__class__ is JoinedRows:
            # Column-wise rows (the core's release): per run of rows sharing a version, the elements are
            # one join over the payloads, the version's JSON written once for the run.
            payloads = out.payloads
            start = 0
            for count, match in out.runs:
                tail = _version_json(match)
                separator = tail + ',{"l":'
                end = start + count
                while start < end:
                    take = min(room, end - start)
                    pieces.append('{"l":' + separator.join(payloads[start : start + take]) + tail)
                    start += take
                    room -= take
                    if not room:
                        documents.append("[" + ",".join(pieces) + "]")
                        pieces, room = [], DOC_ROWS
            continue
        left = out.left.payload
        if out.__class__ is Joined:
            pieces.append('{"l":' + left + _version_json(out.match))
            room -= 1
            if not room:
                documents.append("[" + ",".join(pieces) + "]")
                pieces, room = [], DOC_ROWS
        else:
            kinds.append(LATE)
            lefts.append(left)
            reasons.append(out.reason)
            marks.append(watermark_as_time(out.watermark))  # END_OF_TIME after a flush: 9999-12-31
    if pieces:
        documents.append("[" + ",".join(pieces) + "]")
    for document in documents:
        kinds.append(JOINED)
        lefts.append(document)
        reasons.append(None)
        marks.append(0)
    left_counts = [0] * len(kinds)
    right_counts = [0] * len(kinds)
    if n_left is not None:
        kinds.append(STATS)
        lefts.append(None)
        reasons.append(None)
        marks.append(0)
        left_counts.append(n_left)
        right_counts.append(n_right or 0)
    # Integer columns carry no NULLs (sentinels instead): plain int64 arrays convert in C, nullable ones do not.
    return pd.DataFrame({
        KIND: pd.array(kinds, dtype=object),
        L_ROW: pd.array(lefts, dtype=object),
        REASON: pd.array(reasons, dtype=object),
        WATERMARK: np.array(marks, dtype=np.int64),
        N_LEFT: np.array(left_counts, dtype=np.int64),
        N_RIGHT: np.array(right_counts, dtype=np.int64),
        OUT_SIDE: pd.array([None] * len(kinds), dtype=object),
    })


def _version_json(match: Match | None) -> str:
    """The end of a joined document element after its left payload: the version's fields and the ``}``."""
    if match is None:
        return "}"
    event = match.event
    if match.valid_to is None:
        return f',"v":{event.payload},"f":{event.time}}}'
    return f',"v":{event.payload},"f":{event.time},"t":{match.valid_to}}}'


def _unmatched_rows(times: list[int], payloads: list[str]) -> JoinedRows:
    """A LEFT join's unmatchable left rows (op ``UNMATCHED_LEFT``) as joined rows without a version.

    >>> _unmatched_rows([0, 0], ['{"id":1}', '{"id":2}']).outputs()[1].match is None
    True
    """
    return JoinedRows(list(times), [0] * len(times), list(payloads), [(len(times), None)])


def _dead_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The tagged ``dead`` output rows of an invocation's dead letters (see :func:`_internal_with_dead`)."""
    n = len(rows)
    return pd.DataFrame({
        KIND: pd.array([DEAD] * n, dtype=object),
        L_ROW: pd.array(rows[ROW].tolist(), dtype=object),
        REASON: pd.array(rows[REJECT].tolist(), dtype=object),
        WATERMARK: np.zeros(n, dtype=np.int64),
        N_LEFT: np.zeros(n, dtype=np.int64),
        N_RIGHT: np.zeros(n, dtype=np.int64),
        OUT_SIDE: pd.array(["left" if op == DEAD_LEFT else "right" for op in rows[OP].tolist()], dtype=object),
    })


class _MapEntry:
    """One key's cell of the bucket's MapState, with the ValueState calls :class:`SparkKeyContext` makes.

    A cell larger than :data:`~timeweave.core.state_codec.PIECE_BYTES` is stored in pieces (see "Big cells"
    in the module docstring): the key's own entry holds a manifest (:data:`_PIECES` and
    :func:`~timeweave.core.state_codec.split`'s manifest), piece ``i`` lives at :func:`_piece_key`, and no
    state value is ever larger than a piece, however many versions or rows one key holds.

    >>> class Map(dict):
    ...     getValue, updateValue, removeKey = dict.get, dict.__setitem__, dict.pop
    >>> m = Map(); big = bytes(range(256)) * 10240  # 2.5 MiB: three pieces
    >>> _MapEntry(m, "k").update((big,))
    >>> sorted(m), _MapEntry(m, "k").get() == (big,)
    ([('\\x00p0\\x00k',), ('\\x00p1\\x00k',), ('\\x00p2\\x00k',), ('k',)], True)
    >>> e = _MapEntry(m, "k"); _ = e.get(); e.update((b"small",)); sorted(m)
    [('k',)]
    """

    __slots__ = ("_key", "_map", "_pieces", "_text")

    def __init__(self, map_state: Any, key: str | None) -> None:
        self._map = map_state
        self._text = key
        self._key = (_cell_key(key),)
        self._pieces: int | None = None  # how many pieces the stored cell has (None: not read yet)

    @property
    def where(self) -> str:
        """The cell, for errors (the state format's)."""
        return f"streaming checkpoint state of key {self._text!r}"

    def get(self) -> tuple | None:
        stored = self._map.getValue(self._key)
        if not stored or stored[0] is None or stored[0][:1] != _PIECES:
            self._pieces = 0
            return stored
        read: list[int] = []  # the pieces join asked for: as many as the manifest says (whatever size wrote them)
        blob = join(memoryview(stored[0])[1:], lambda i: self._piece(i, read), where=self.where)
        self._pieces = len(read)
        return (blob,)

    def _piece(self, i: int, read: list[int]) -> bytes | None:
        read.append(i)
        stored = self._map.getValue((_piece_key(self._text, i),))
        return stored[0] if stored else None

    def update(self, value: tuple) -> None:
        data = value[0]
        before = self._stored_pieces()
        after = 0
        if len(data) > PIECE_BYTES:
            manifest, pieces = split(data)
            for i, piece in enumerate(pieces):
                self._map.updateValue((_piece_key(self._text, i),), (piece,))
            data = _PIECES + manifest
            after = len(pieces)
        self._map.updateValue(self._key, (data,))
        self._drop_pieces(after, before)

    def clear(self) -> None:
        before = self._stored_pieces()
        self._map.removeKey(self._key)
        self._drop_pieces(0, before)

    def _stored_pieces(self) -> int:
        if self._pieces is None:  # written without a read first: find out what is stored
            _MapEntry.get(self)
        return self._pieces or 0

    def _drop_pieces(self, keep: int, before: int) -> None:
        for i in range(keep, before):
            self._map.removeKey((_piece_key(self._text, i),))
        self._pieces = keep


#: The first byte of a key's entry that is a manifest of pieces (a state blob starts with b"T", an LZ4-packed
#: MATCH_RECOGNIZE cell with b"\x01").
_PIECES = b"\x02"


def _cell_key(text: str | None) -> str | None:
    """The MapState key of a key's cell: its text; a text starting with NUL gets one more NUL in front, so
    no cell key starts with ``"\\x00p"`` (the pieces' keys, :func:`_piece_key`).

    >>> _cell_key("USD"), _cell_key("\\x00p0\\x00USD")
    ('USD', '\\x00\\x00p0\\x00USD')
    """
    return "\x00" + text if text is not None and text.startswith("\x00") else text


def _piece_key(text: str | None, i: int) -> str:
    """The MapState key of piece ``i`` of a key's cell (disjoint from every cell key, see :func:`_cell_key`)."""
    return f"\x00p{i}" if text is None else f"\x00p{i}\x00{text}"


class TemporalJoinProcessor(StatefulProcessor):
    """``transformWithStateInPandas`` processor: one bucket of join keys, one core operator per key.

    Input: the internal schema grouped by ``tw_b`` (see the module docstring).  Output:
    :data:`OUTPUT_SCHEMA`.  Spark passes arguments by keyword, so the handler parameter names are Spark's.
    """

    def __init__(
        self, spec: TemporalJoinSpec, mode: str = "event_time", retention: StateRetention | None = None,
        end_ms: int = END_OF_INPUT_MS,
    ) -> None:
        if mode not in MODES:
            raise SpecError("mode", f"unknown mode {mode!r}; use one of {list(MODES)}", where=spec.where)
        self.spec = spec
        self.mode = mode
        self.retention = retention
        self.end_ms = end_ms  # the watermark (ms) the flush heartbeat produces: the end of input
        self._has_sequence = spec.versioned.sequence is not None

    def init(self, handle: StatefulProcessorHandle) -> None:
        self._handle = handle
        self._keys = handle.getMapState(_KEYS_STATE, _KEYS_SCHEMA, _STATE_SCHEMA)
        self._index_state = handle.getValueState(_INDEX_STATE, _STATE_SCHEMA)
        if self.mode == "event_time":
            self._op: EventTimeTemporalJoin | ProcessingTimeTemporalJoin = EventTimeTemporalJoin(self.spec, self.retention)
        else:
            self._op = ProcessingTimeTemporalJoin(self.spec)

    def _watermark(self, timer_values: TimerValues) -> int:
        if self.mode != "event_time":
            return NO_WATERMARK
        return watermark_us(timer_values.getCurrentWatermarkInMs(), self.end_ms)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        packs = [pack for frame in rows for pack in frame[PACK].tolist()]
        if not packs:
            return
        if isinstance(self._op, EventTimeTemporalJoin):
            yield from self._event_time(packs, timerValues)
            return
        batch = data_rows(iter([unpack(packs)]))
        if batch is None:
            return
        dead = (batch[OP].to_numpy() >= DEAD_LEFT) & (batch[OP].to_numpy() <= DEAD_RIGHT)
        if dead.any():
            yield _dead_frame(batch[dead])
            batch = batch[~dead]
            if batch.empty:
                return
        unmatched = batch[OP].to_numpy() == UNMATCHED_LEFT
        outputs: list[Output | JoinedRows] = []
        if unmatched.any():
            outputs.append(_unmatched_rows(batch[TIME][unmatched].tolist(), batch[ROW][unmatched].tolist()))
            batch = batch[~unmatched]
            if batch.empty:
                yield _frame(outputs, len(outputs[0]), 0)
                return
        n_left_rows = int(np.count_nonzero(batch[OP].to_numpy() == LEFT_ROW))
        n_left = n_left_rows + sum(map(len, outputs))
        n_right = len(batch) - n_left_rows
        if n_right > 1 and batch[FILE].nunique() > 1:
            # Input order of versions: by file (rows of different map tasks arrive in any order),
            # stable within a file.  Left rows carry no file: their order never changes a result.
            batch = batch.sort_values(FILE, kind="stable", na_position="first")
        watermark = self._watermark(timerValues)
        index = _Index.load(self._index_state)
        ops = batch[OP].tolist()
        times = batch[TIME].tolist()
        payloads = batch[ROW].tolist()
        seqs = batch[SEQ].tolist() if self._has_sequence else None
        for text, positions in positions_by_key(batch).items():
            ctx = SparkKeyContext(None, _MapEntry(self._keys, text), watermark)
            self._apply(ctx, positions, ops, times, payloads, seqs, outputs)
            self._finish(ctx, text, index, outputs)
        index.store(self._index_state, None, self.end_ms)
        yield _frame(outputs, n_left, n_right)

    def _event_time(self, packs: list[bytes], timer_values: TimerValues) -> Iterator[pd.DataFrame]:
        """Event time: the invocation's rows straight from the packs' Arrow columns (no pandas frame, no
        Python string per key text: keys are dictionary-encoded), each key's rows to the core, then the
        watermark for them and for the bucket's other due keys."""
        table = pa.concat_tables([pa.ipc.open_stream(pack).read_all() for pack in packs]).combine_chunks()
        ops = table.column(OP).to_numpy()
        outputs: list[Output | JoinedRows] = []
        if (ops >= HEARTBEAT).any():
            # Heartbeats only move the watermark (data_rows); dead letters leave at once, untouched, and so
            # do a LEFT join's unmatchable left rows, as joined rows without a version.
            dead = (ops >= DEAD_LEFT) & (ops <= DEAD_RIGHT)
            if dead.any():
                yield _dead_frame(table.filter(pa.array(dead)).to_pandas())
            unmatched = ops == UNMATCHED_LEFT
            if unmatched.any():
                rows = table.filter(pa.array(unmatched))
                outputs.append(_unmatched_rows(rows.column(TIME).to_pylist(), rows.column(ROW).to_pylist()))
            table = table.filter(pa.array(ops < HEARTBEAT))
            ops = ops[ops < HEARTBEAT]
            if not len(table):
                if outputs:
                    yield _frame(outputs, len(outputs[0]), 0)
                return
        n_left = int(np.count_nonzero(ops == LEFT_ROW)) + sum(map(len, outputs))
        n_right = len(ops) - int(np.count_nonzero(ops == LEFT_ROW))
        keys = table.column(KEY_TEXT).combine_chunks().dictionary_encode(null_encoding="encode")  # first appearance order
        codes = keys.indices.to_numpy(zero_copy_only=False)
        texts = keys.dictionary.to_pylist()
        times = table.column(TIME).to_numpy()
        payloads = table.column(ROW).to_numpy(zero_copy_only=False)
        seqs = np.array(table.column(SEQ).to_pylist(), dtype=object) if self._has_sequence else None
        if n_right > 1 and pc.count_distinct(table.column(FILE), mode="only_valid").as_py() > 1:
            # Input order of versions: by file (rows of different map tasks arrive in any order), stable
            # within a file, no file (left rows) first.  Left rows' order never changes a result.
            files, _ = pd.factorize(table.column(FILE).to_numpy(zero_copy_only=False), sort=True)  # None: -1
            by_file = np.argsort(files, kind="stable")
            ops, codes, times, payloads = ops[by_file], codes[by_file], times[by_file], payloads[by_file]
            seqs = seqs[by_file] if seqs is not None else None
        watermark = self._watermark(timer_values)
        index = _Index.load(self._index_state)
        done = self._buffer(texts, codes, ops, times, payloads, seqs, watermark, index, outputs)
        self._due(watermark, index, done, outputs)
        index.store(self._index_state, self._handle, self.end_ms)
        yield _frame(outputs, n_left, n_right)

    def _buffer(
        self, texts: list[str], codes: np.ndarray, ops: np.ndarray, times: np.ndarray, payloads: np.ndarray,
        seqs: np.ndarray | None, watermark: int, index: _Index, outputs: list[Output | JoinedRows],
    ) -> set[str]:
        """Hand each key's rows (``codes``: the position of its key in ``texts``) to the core, then run its
        watermark; the keys done.

        The rows are grouped by key with one stable sort and converted to lists once, so a key's left
        rows reach the core as slices of those lists (:meth:`EventTimeTemporalJoin.process_left_columns`),
        no object per row.  The handlers only buffer, and a key's versions and left rows touch separate
        state, so versions go first, one by one, and the left rows in one call (same outputs and state as
        row by row).  Rows are numbered in input order per key (ties between equal times break by it).
        """
        op = self._op
        assert isinstance(op, EventTimeTemporalJoin)
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=len(texts))
        bounds = [0, *np.cumsum(counts).tolist()]
        ops = ops[order]
        # Each row's number among its key's rows of the batch (input order), and the left/version split
        # of the key-ordered rows: both in numpy, then each side's columns as lists once.
        rank = np.arange(len(order)) - np.repeat(bounds[:-1], counts)
        is_left = ops == LEFT_ROW
        left_at = order[is_left]
        left_times = times[left_at].tolist()
        left_payloads = payloads[left_at].tolist()
        left_rank = rank[is_left]
        left_bounds = [0, *np.cumsum(np.add.reduceat(is_left, bounds[:-1])).tolist()]
        version_rows: list[list[tuple[int, int, bool, Any, Any]]] = [[] for _ in texts]
        if not is_left.all():
            # Versions are few (a handful per key and batch): one tuple each, grouped by key in input order.
            versions = ~is_left
            at = order[versions]
            for k, r, t, deleted, payload, seq in zip(
                np.repeat(np.arange(len(texts)), counts)[versions].tolist(), rank[versions].tolist(),
                times[at].tolist(), (ops[versions] == DELETE).tolist(), payloads[at].tolist(),
                seqs[at].tolist() if seqs is not None else [None] * len(at), strict=True,
            ):
                version_rows[k].append((r, t, deleted, payload, seq))
        process_left, process_right = op.process_left_columns, op.process_right
        for k, text in enumerate(texts):
            ctx = SparkKeyContext(None, _MapEntry(self._keys, text), watermark)
            first_seq = ctx.reserve_seqs(int(counts[k]))
            for r, t, deleted, payload, seq in version_rows[k]:
                seq = _sequence(seq) if seqs is not None else first_seq + r
                outputs.extend(process_right(ctx, VersionEvent(t, seq, deleted, payload)))
            start, end = left_bounds[k], left_bounds[k + 1]
            if end > start:
                outputs.extend(process_left(
                    ctx, left_times[start:end], (left_rank[start:end] + first_seq).tolist(), left_payloads[start:end]
                ))
            self._finish(ctx, text, index, outputs)
        return set(texts)

    def _apply(
        self, ctx: SparkKeyContext, positions: list[int], ops: list[int], times: list[int], payloads: list[Any],
        seqs: list[Any] | None, outputs: list[Output | JoinedRows],
    ) -> None:
        """Processing time: feed one key's rows of the batch to the core, numbered in input order (event
        time: :meth:`_buffer`)."""
        first_seq = ctx.reserve_seqs(len(positions))
        op = self._op
        emit = outputs.extend
        process_left, process_right = op.process_left, op.process_right
        # A micro-batch's rows arrive together; versions of the batch apply before its left rows look one up.
        order = sorted(range(len(positions)), key=lambda j: ops[positions[j]] == LEFT_ROW)
        for j in order:
            i = positions[j]
            if ops[i] == LEFT_ROW:
                emit(process_left(ctx, LeftRow(times[i], first_seq + j, payloads[i])))
            else:
                seq = _sequence(seqs[i]) if seqs is not None else first_seq + j
                emit(process_right(ctx, VersionEvent(times[i], seq, ops[i] == DELETE, payloads[i])))

    def _finish(self, ctx: SparkKeyContext, text: str, index: _Index, outputs: list[Output | JoinedRows]) -> None:
        """Emit what the watermark allows, let Spark's due timers fire, write the key back, index its timer."""
        if isinstance(self._op, EventTimeTemporalJoin):
            released = self._op.release(ctx)  # on_watermark, its joined rows column-wise
            if released is not None:
                outputs.append(released)
            ctx.expire_timers()
        ctx.commit()
        index.set(text, ctx.smallest_timer())

    def _due(self, watermark: int, index: _Index, done: Container[Any], outputs: list[Output | JoinedRows]) -> None:
        """Run the watermark for every other key of the bucket with a timer at or below it."""
        for text in index.due(watermark):
            if text not in done:
                self._finish(SparkKeyContext(None, _MapEntry(self._keys, text), watermark), text, index, outputs)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        if not isinstance(self._op, EventTimeTemporalJoin):
            return
        watermark = self._watermark(timerValues)
        index = _Index.load(self._index_state)
        index.fired(expiredTimerInfo.getExpiryTimeInMs())
        outputs: list[Output | JoinedRows] = []
        self._due(watermark, index, {}, outputs)
        index.store(self._index_state, self._handle, self.end_ms)
        if outputs:
            yield _frame(outputs)

    def close(self) -> None:
        pass


class _Index:
    """A bucket's timer index: each key's smallest core timer (µs) and the bucket's single Spark timer (ms).

    One Spark timer per bucket, at the smallest core timer of its keys: when it fires, every key
    with a timer at or below the watermark runs, and the timer moves to the next smallest.  Core µs
    become Spark ms by :func:`timeweave.core.event_time.spark_timer_ms` (the one rule, both ends included).
    """

    __slots__ = ("_dirty", "_fired", "spark", "timers")

    def __init__(self, timers: dict[str, int], spark: int | None) -> None:
        self.timers = timers
        self.spark = spark
        self._dirty = False
        self._fired: int | None = None

    @classmethod
    def load(cls, state: Any) -> _Index:
        stored = state.get()
        if not stored or stored[0] is None:
            return cls({}, None)
        where = "streaming checkpoint state (the bucket's timer index)"
        data = decode(stored[0], where=where)
        if not (isinstance(data, list) and len(data) == 2 and isinstance(data[0], dict)
                and all(isinstance(k, str) and type(t) is int for k, t in data[0].items())
                and (data[1] is None or type(data[1]) is int)):
            raise StateFormatError("malformed state: the timer index is [timers by key, Spark timer]", where=where)
        return cls(data[0], data[1])

    def set(self, text: str, timer: int | None) -> None:
        if timer is None:
            if self.timers.pop(text, None) is not None:
                self._dirty = True
        elif self.timers.get(text) != timer:
            self.timers[text] = timer
            self._dirty = True

    def due(self, watermark: int) -> list[str]:
        return [text for text, timer in self.timers.items() if timer <= watermark]

    def fired(self, timer_ms: int) -> None:
        """Spark fired (and deletes) the bucket's timer at ``timer_ms``."""
        self._fired = timer_ms
        if self.spark == timer_ms:
            self.spark = None
            self._dirty = True

    def store(self, state: Any, handle: StatefulProcessorHandle | None, end_ms: int = END_OF_INPUT_MS) -> None:
        """Move the bucket's Spark timer to the smallest key timer, write the index back (or clear it).

        ``end_ms``: the watermark (ms) of the end of input, the latest Spark timer that can fire.
        """
        wanted = spark_timer_ms(min(self.timers.values()), end_ms) if self.timers else None
        if wanted is not None and wanted == self._fired:
            # PySpark deletes a fired timer after handleExpiredTimer returns: registering the same time
            # again here would leave the bucket with no timer (its keys' rows never emitted).  A key due
            # at the fired time has run and dropped its timers, so this needs a timer the watermark did
            # not pass (spark_timer_ms keeps that from happening); one ms later keeps the bucket awake.
            wanted += 1
        if wanted != self.spark:
            if handle is not None:
                if self.spark is not None:
                    handle.deleteTimer(self.spark)
                if wanted is not None:
                    handle.registerTimer(wanted)
            self.spark = wanted
            self._dirty = True
        if not self._dirty:
            return
        if self.timers or self.spark is not None:
            state.update((encode([self.timers, self.spark]),))
        else:
            state.clear()
        self._dirty = False


def _sequence(value: Any) -> int:
    # A NULL sequence sorts first, as NULLs do in the batch plan's ORDER BY __tw_seq.
    if value is None or value != value:  # NaN from a nullable integer column
        return -(2**63)
    return int(value)


# =================================================================================================
# Building the stream
# =================================================================================================
@dataclass(frozen=True)
class BatchOutputs:
    """One micro-batch split into its three outputs (lazy DataFrames over the batch)."""

    main: DataFrame
    late: DataFrame
    dead_letter: DataFrame


@dataclass(frozen=True)
class StreamingJoin:
    """A streaming temporal join: the tagged stream and how to split each of its micro-batches.

    Write :attr:`stream` with ``foreachBatch`` and call :meth:`split` on every batch (persist the
    batch first: each output reads it, and recomputing it would re-run the stateful operator).
    """

    stream: DataFrame
    spec: TemporalJoinSpec
    left_schema: T.StructType
    right_schema: T.StructType
    mode: str

    @functools.cached_property
    def _finalizer(self) -> plan.Finalizer:
        """The finalize step of :meth:`split`, parsed once per job (see :class:`plan.Finalizer`)."""
        return plan.Finalizer(self.spec, self.left_schema.fieldNames(), self.right_schema.fieldNames())

    def split(self, batch: DataFrame) -> BatchOutputs:
        """Main (finalized), late and dead-letter DataFrames of one micro-batch of :attr:`stream`."""
        kind = F.col(KIND)
        # Joined rows arrive in documents (see _frame): one from_json per document, then one output
        # row per element.  `inline` materialises the element's fields as columns, so the next
        # projection reads the parsed payloads without parsing again.
        document = T.ArrayType(T.StructType([
            T.StructField("l", _wire_schema(self.left_schema)),
            T.StructField("v", _wire_schema(self.right_schema)),
            T.StructField("f", T.LongType()),
            T.StructField("t", T.LongType()),
        ]))
        parsed = batch.where(kind == JOINED).select(F.inline(F.from_json(F.col(L_ROW), document, JSON_OPTIONS)))
        joined = parsed.select(
            _wire_struct(F.col("l"), self.left_schema).alias("__tw_l"),
            # An element without "v" had no version.
            F.when(F.col("v").isNull(), F.lit(None)).otherwise(
                F.struct(
                    # The core never matches a delete (version_at returns None inside a deleted span).
                    F.lit(False).alias("deleted"),
                    F.timestamp_micros(F.col("f")).alias("valid_from"),
                    F.timestamp_micros(F.col("t")).alias("valid_to"),  # no "t": in force, NULL
                    _wire_struct(F.col("v"), self.right_schema).alias("p"),
                )
            ).alias("__tw_v"),
        )
        main = self._finalizer(joined)  # parsed once per job, analyzed per batch
        late = batch.where(kind == LATE).select(
            _from_wire(F.col(L_ROW), self.left_schema).alias("__tw_l"),
            F.col(REASON).alias("reason"),
            F.timestamp_micros(F.col(WATERMARK)).alias("watermark"),
        ).select("__tw_l.*", "reason", "watermark")
        dead = batch.where(kind == DEAD).select(
            F.col(OUT_SIDE).alias("side"), F.col(REASON).alias("reason"), F.col(L_ROW).alias("row")
        )
        return BatchOutputs(main, late, dead)


def temporal_join_stream(
    left: DataFrame,
    right: DataFrame,
    spec: TemporalJoinSpec,
    *,
    left_watermark: str = "0 seconds",
    right_watermark: str = "0 seconds",
    mode: str = "event_time",
    retention: StateRetention | None = None,
    heartbeat: DataFrame | None = None,
    buckets: int = DEFAULT_BUCKETS,
) -> StreamingJoin:
    """The streaming temporal join of two streaming DataFrames (see the module docstring).

    ``left_watermark``/``right_watermark`` are each side's allowed out-of-orderness (Spark delay
    strings); ``heartbeat`` is an optional stream with one timestamp column whose rows advance both
    sides' watermarks (the job uses it to flush at end of input).  ``buckets`` is how many hash
    buckets the join keys are spread over (the operator's grouping key); it is part of the state
    layout, so a checkpoint must be resumed with the same value.

    Example::

        join = temporal_join_stream(orders_stream, rates_stream, spec)
        def write(batch, batch_id):
            out = join.split(batch.persist())
            out.main.write.mode("append").parquet("out/main")
        join.stream.writeStream.foreachBatch(write).option("checkpointLocation", "chk").start()
    """
    if mode not in MODES:
        raise SpecError("mode", f"unknown mode {mode!r}; use one of {list(MODES)}", where=spec.where)
    check_buckets(buckets, spec.where)
    spec.bind(schema_kinds(left.schema), schema_kinds(right.schema))
    EventTimeTemporalJoin(spec) if mode == "event_time" else ProcessingTimeTemporalJoin(spec)  # validates
    for name in LATE_COLUMNS:
        if name in left.columns:
            raise SpecError(
                "left", f"column '{name}' is added by the late output; rename the left column", where=spec.where
            )
    if spec.versioned.sequence is not None and not isinstance(
        right.schema[spec.versioned.sequence].dataType, (T.NumericType, T.TimestampType)
    ):
        raise SpecError(
            "sequence",
            f"column '{spec.versioned.sequence}' must be numeric or a timestamp, "
            f"found {right.schema[spec.versioned.sequence].dataType.simpleString()}",
            where=spec.versioned.where,
        )
    left_in = _internal_with_dead(left, spec, "left", buckets)
    right_in = _internal_with_dead(right, spec, "right", buckets)
    if mode == "event_time":
        if heartbeat is not None:
            left_in = left_in.unionByName(_heartbeat(heartbeat, left_in))
            right_in = right_in.unionByName(_heartbeat(heartbeat, right_in))
        left_in = left_in.withWatermark(_TS, left_watermark)
        right_in = right_in.withWatermark(_TS, right_watermark)
    internal = left_in.unionByName(right_in)
    # The operator gets the event time as BIGINT µs only: no input column carries watermark metadata,
    # so Spark's late-row filter (event_time <= watermark) does not apply; the core decides lateness.
    internal = internal.withColumn(TIME, F.unix_micros(F.col(_TS))).drop(_TS)
    # Packs (see the module docstring): the operator's input is one row per source partition and bucket.
    internal = internal.mapInArrow(pack_rows, PACKS_SCHEMA)
    joined = internal.groupBy(BUCKET).transformWithStateInPandas(
        statefulProcessor=TemporalJoinProcessor(
            spec, mode, None if mode == "processing_time" else retention,
            # Spark's watermark is the minimum of the sides': a flush reaches the end minus the larger delay.
            end_of_input_ms(max(_delay_ms(left_watermark), _delay_ms(right_watermark))),
        ),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Append",
        timeMode="EventTime" if mode == "event_time" else "None",
    )
    return StreamingJoin(joined, spec, left.schema, right.schema, mode)


def _delay_ms(delay: str) -> int:
    """A ``withWatermark`` delay (``"5 seconds"``, ``"1500 milliseconds"``) in ms, as Spark subtracts it."""
    from timeweave.core.durations import parse_duration  # (the MATCH_RECOGNIZE door reads its delay the same way)

    return parse_duration(delay, "watermark_delay") // 1000


# The payload travels through the operator as JSON (Python passes it on untouched).  Timestamps and
# dates go as numbers (µs / days since epoch): exact, and no date formatting or parsing per value,
# which was most of the JSON cost.
_WIRE_TYPES: dict[type, tuple[T.DataType, Any, Any]] = {
    T.TimestampType: (T.LongType(), F.unix_micros, F.timestamp_micros),
    T.DateType: (T.IntegerType(), F.unix_date, F.date_from_unix_date),
}


def _json(df: DataFrame) -> Column:
    """The row as the operator's JSON payload (see :func:`_from_wire`)."""
    fields = []
    for field in df.schema.fields:
        column = named(field.name)
        wire = _WIRE_TYPES.get(type(field.dataType))
        fields.append((wire[1](column) if wire else column).alias(field.name))
    return F.to_json(F.struct(*fields), JSON_OPTIONS)


def _from_wire(payload: Column, schema: T.StructType) -> Column:
    """The struct of ``schema`` a :func:`_json` payload encodes (NULL payload: a struct of NULLs)."""
    return _wire_struct(F.from_json(payload, _wire_schema(schema), JSON_OPTIONS), schema)


def _wire_schema(schema: T.StructType) -> T.StructType:
    """The schema a :func:`_json` payload of a ``schema`` row is parsed with (timestamps and dates as numbers).

    >>> _wire_schema(T.StructType([T.StructField("t", T.TimestampType())])).simpleString()
    'struct<t:bigint>'
    """
    return T.StructType([
        T.StructField(f.name, _WIRE_TYPES[type(f.dataType)][0] if type(f.dataType) in _WIRE_TYPES else f.dataType)
        for f in schema.fields
    ])


def _wire_struct(parsed: Column, schema: T.StructType) -> Column:
    """The struct of ``schema`` from a payload parsed with :func:`_wire_schema` (numbers back to timestamps, dates)."""
    fields = []
    for field in schema.fields:
        value = parsed.getField(field.name)
        wire = _WIRE_TYPES.get(type(field.dataType))
        fields.append((wire[2](value) if wire else value).alias(field.name))
    return F.struct(*fields)


def _key_columns(df: DataFrame, key: tuple[str, ...] | list[str], buckets: int) -> list[Column]:
    """``tw_b`` (the key's hash bucket: the operator's grouping key) and ``tw_key`` (the key as one string).

    Equal keys must give equal strings: one string column is taken as is, anything else is the JSON
    of the key values (exact timestamps, see :data:`JSON_OPTIONS`); floating point keys get ``+ 0.0``
    first, so -0.0 and 0.0 (equal in the batch join) are one key.
    """
    parts = []
    for name in key:
        column = named(name)
        if isinstance(df.schema[name].dataType, (T.FloatType, T.DoubleType)):
            column = column + F.lit(0.0).cast(df.schema[name].dataType)
        parts.append(column)
    if len(parts) == 1 and isinstance(df.schema[key[0]].dataType, T.StringType):
        text = parts[0]
    else:
        text = F.to_json(F.struct(*[c.alias(f"k{i}") for i, c in enumerate(parts)]), JSON_OPTIONS)
    return [F.pmod(F.xxhash64(*parts), F.lit(buckets)).cast("int").alias(BUCKET), text.alias(KEY_TEXT)]


def _internal(df: DataFrame, spec: TemporalJoinSpec, side: str, buckets: int = DEFAULT_BUCKETS) -> DataFrame:
    """One side's valid rows in the internal schema (the watermark column ``tw_ts`` still a timestamp)."""
    return df.select(*[column.alias(name) for name, column in _internal_columns(df, spec, side, buckets)])


def _internal_columns(df: DataFrame, spec: TemporalJoinSpec, side: str, buckets: int) -> list[tuple[str, Column]]:
    """(name, expression over ``df``) of each internal column of one side (see :func:`_internal`)."""
    sequence = spec.versioned.sequence
    if side == "right":
        key, time = spec.versioned.key, spec.versioned.time
        op = F.when(F.expr(plan.deleted_expression(spec)), F.lit(DELETE)).otherwise(F.lit(UPSERT))
        seq = named(sequence).cast("long") if sequence else None
        source = F.input_file_name()
    else:
        key, time = spec.left_key, spec.left_time
        op, seq, source = F.lit(LEFT_ROW), F.lit(None).cast("long"), F.lit(None).cast("string")
    bucket, text = _key_columns(df, key, buckets)
    columns = [
        (BUCKET, bucket),
        (KEY_TEXT, text),
        (OP, op.cast("tinyint")),
        (_TS, named(time).cast("timestamp")),
        (FILE, source),
        (ROW, _json(df)),
    ]
    if sequence:  # only then: every column costs a conversion per row in the operator's input
        columns.append((SEQ, seq))
    return columns


def _internal_with_dead(df: DataFrame, spec: TemporalJoinSpec, side: str, buckets: int) -> DataFrame:
    """All of one side's rows in the internal schema: :func:`_internal`'s for valid rows, dead letters tagged.

    One projection over the input (see "Dead letters" in the module docstring): a dead letter's op
    is ``DEAD_LEFT``/``DEAD_RIGHT``, ``tw_reason`` its reason, ``tw_row`` the original row as the batch
    door's ``dead_letters`` writes it, ``tw_ts`` year 1 (never moves the watermark).
    """
    reason = F.expr(plan.reject_reason(spec, side))
    dead = reason.isNotNull()
    if side == "left" and spec.keeps_unmatchable_left:
        # A LEFT join outputs the row, unmatched (see "A LEFT join keeps every left row"): its payload stays
        # the wire form the joined rows carry, and it is no dead letter.
        replaced = {OP: F.lit(UNMATCHED_LEFT), _TS: F.lit(_DEAD_TS).cast("timestamp")}
        reason = F.lit(None)
    else:
        original = F.to_json(F.struct(*[named(c) for c in df.columns]))
        replaced = {
            OP: F.lit(DEAD_LEFT if side == "left" else DEAD_RIGHT),
            _TS: F.lit(_DEAD_TS).cast("timestamp"),
            ROW: original,
        }
    columns = []
    for name, column in _internal_columns(df, spec, side, buckets):
        if name in replaced:
            column = F.when(dead, replaced[name]).otherwise(column)
            column = column.cast("tinyint") if name == OP else column
        columns.append(column.alias(name))
    return df.select(*columns, reason.cast("string").alias(REJECT))


def _heartbeat(heartbeat: DataFrame, like: DataFrame) -> DataFrame:
    """Heartbeat rows in ``like``'s internal schema: NULL key in bucket 0, side ``H``, the heartbeat's time.

    Bucket 0, never a NULL bucket: PySpark builds the grouping keys from pandas, where one NULL in an
    Arrow batch turns the batch's integer bucket column into floats, and a key 10.0 addresses other
    state than the key 10 (a later batch then misses the bucket's state).  The processors drop
    heartbeat rows (:func:`data_rows`), so bucket 0 only sees the watermark move.
    """
    (time_column,) = heartbeat.columns
    columns = []
    for field in like.schema.fields:
        if field.name == OP:
            columns.append(F.lit(HEARTBEAT).cast(field.dataType).alias(OP))
        elif field.name == BUCKET:
            columns.append(F.lit(0).cast(field.dataType).alias(BUCKET))
        elif field.name == _TS:
            columns.append(named(time_column).cast("timestamp").alias(_TS))
        else:
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
    return heartbeat.select(*columns)


__all__ = [
    "JSON_OPTIONS",
    "OUTPUT_SCHEMA",
    "BatchOutputs",
    "SparkKeyContext",
    "StreamingJoin",
    "TemporalJoinProcessor",
    "check_buckets",
    "positions_by_key",
    "spark_timer_ms",
    "temporal_join_stream",
    "watermark_us",
]
