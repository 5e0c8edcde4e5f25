"""The keyed-operator host on Spark: the streaming host (any core keyed operator, :mod:`timeweave.core.operator`,
inside Spark's ``transformWithState``: this page), the backfill driver (:mod:`~timeweave.spark.host.backfill`)
and the one writer of the tagged outputs (:mod:`~timeweave.spark.host.writer`).

One host for every operator; an operator's Spark module is a registration (its input rows, its state variables,
its tagged output rows, how it builds the core operator): the temporal join's
:mod:`timeweave.spark.temporal_join_streaming`, MATCH_RECOGNIZE's :mod:`timeweave.spark.match_recognize_streaming`.
The host translates and decides nothing: lateness, emission and state are the core operator's.

Modules: :mod:`~timeweave.spark.host.schema` (internal columns), :mod:`~timeweave.spark.host.wire` (payloads and
key columns), :mod:`~timeweave.spark.host.packs`, :mod:`~timeweave.spark.host.state` (the state bridge),
:mod:`~timeweave.spark.host.processor` (the generic processor), :mod:`~timeweave.spark.host.stream` (heartbeats,
delays, the operator step) and :mod:`~timeweave.spark.host.writer` (the one writer of the tagged outputs).

**Buckets.**  The operator is grouped by ``tw_b = pmod(xxhash64(key), buckets)`` (default
:data:`~timeweave.spark.host.schema.DEFAULT_BUCKETS`), not by the operator's key: each invocation of the
processor costs a fixed amount (state-server round trips, one frame in and one Arrow batch out), so one
invocation per bucket and micro-batch instead of one per key.  Inside a bucket the processor splits the rows
by ``tw_key`` (the key as one canonical string, :func:`~timeweave.spark.host.wire.key_columns`) and runs the
core once per key: keys never share state.  ``buckets`` is part of the state layout: resume a checkpoint with
the same value.

**The state bridge.**  :class:`~timeweave.spark.host.state.SparkKeyContext` implements the core's
``KeyContext`` for one key over one cell (all named values, the core's timers and the arrival counter in one
binary value, encoded as data by :mod:`timeweave.core.state_codec`: versioned, checksummed MessagePack, never
pickle, because a checkpoint is storage others can write to; one read and at most one write per key and
invocation).  The cell is the key's entry in the bucket's MapState (the registration's
:class:`~timeweave.spark.host.processor.StateVariables`).  Core times are µs, Spark timers ms: a core timer at
``t`` stands for a Spark timer at ``ceil(t / 1000)`` kept within [1 ms, the end of input]
(:func:`timeweave.core.event_time.spark_timer_ms`: the one rule), which fires once the watermark has passed
``t``.  A bucket keeps *one* Spark timer, at the smallest core timer of its keys, and an index (the
registration's index ValueState: key -> smallest core timer,
:class:`~timeweave.spark.host.state.TimerIndex`); when it fires, every key of the bucket with a timer at or
below the watermark runs ``on_watermark`` and the timer moves to the next smallest.  Every invocation runs
``on_watermark`` for the keys it got rows for and for the bucket's due keys, so emission is decided by the
core comparing times to the watermark.  An operator that closes its keys at the end of input
(``timer_at_end``) gets a core timer there for every key holding state.  Checkpoints written by releases that
pickled their cells are refused with a :class:`~timeweave.core.errors.StateFormatError`; the earlier per-key
ValueState layouts cannot be resumed (start such jobs from a fresh checkpoint).

**Big cells are stored in pieces.**  A key's cell holds everything the operator keeps for it, so a hot key's
cell grows with its micro-batch: 1 M versions of one key in one micro-batch made one MapState value of 80 MB
to 190 MB.  PySpark pickles a value for the state server, the JVM unpickles it, copies it into a row and
writes it to RocksDB, several copies at once: at 190 MB a 1 GB driver heap died with ``OutOfMemoryError``
(issue 20).  A cell larger than :data:`~timeweave.core.state_codec.PIECE_BYTES` (1 MiB) is cut by
:func:`timeweave.core.state_codec.split`: the key's own MapState entry holds a manifest (first byte ``0x02``:
piece count, size, CRC-32 of the whole) and piece ``i`` lives at the MapState key ``"\\x00p<i>\\x00<key>"``,
each piece a state blob with its own checksum that knows its place, so a missing, stale, swapped or damaged
piece is a :class:`~timeweave.core.errors.StateFormatError` naming the key, never a wrong value.  A key text
starting with NUL is stored under one more NUL in front (:func:`~timeweave.spark.host.state.cell_key`), so no
key's cell can be a piece.  Cells of at most 1 MiB are stored as before 2026-11-26 (checkpoints written then are
read), except the cells of keys whose text starts with NUL (U+0000).  A registration may compress its cells
(:class:`~timeweave.spark.host.state.PackedEntry`, LZ4 from 2 kB: first byte ``0x01``), before the pieces.

**Packs.**  The internal rows do not reach the operator one by one: a ``mapInArrow`` step
(:func:`~timeweave.spark.host.packs.pack_rows`) turns a source partition's rows of one bucket into one row
``(tw_b, tw_pack)``, the rows (every internal column but the bucket) as one Arrow IPC stream, in input order
(a stable sort by bucket; at most :data:`~timeweave.spark.host.packs.PACK_ROWS` rows and about
:data:`~timeweave.spark.host.packs.PACK_BYTES` per pack); the processor reads an invocation's packs' Arrow
columns directly.  Why: PySpark 4.3 regroups the operator's input row by row (``itertuples``,
``itertools.groupby``, then ``pd.DataFrame`` from namedtuples), ~5 µs per row in the Python worker whatever
the columns, and the shuffle and the sort in front of the operator move one row per pack instead of one per
input row.  A map task's packs keep its rows' order, and packs of different map tasks arrive in any order, as
their rows did.  With ``latest`` each pack carries its largest event time, so a watermark can be taken over
packs (the same maximum the rows give).

**Watermarks and heartbeats.**  Optional heartbeat rows (a timestamp stream,
:func:`~timeweave.spark.host.stream.heartbeat_rows`: op 3, bucket 0) are unioned in before the watermark, so
they can move an idle stream's watermark, or close the stream (the job's ``flush``); the host drops them.
Dead letters and other rows that must not move a watermark carry ``tw_ts`` year 1 and leave the processor at
once, untouched.  Spark reports watermark 0 until the first batch ends, and its watermark never goes below
0: 0 is read as "no watermark yet" (core's ``NO_WATERMARK``), so rows before 1970 wait (never late) until the
watermark is past 1970, and no Spark timer is ever at or below 0 ms.  A watermark at or past the flush
heartbeat's (10000-01-01 00:00:00.000 UTC, which no row's time reaches, minus the delay) is the end of input, ``END_OF_TIME``
(:func:`timeweave.core.event_time.watermark_us`).

**Late rows: Spark drops them before a TWS processor sees them.**  In ``timeMode="EventTime"``
``TransformWithStateInPySparkExec`` filters its input with the late-events watermark predicate
(``event_time <= watermark``, *equal included*) whenever a column of its input carries watermark metadata,
silently (only ``numRowsDroppedByWatermark`` counts them).  Measured on PySpark 4.3.0: a row at 10:00:01 and
one at exactly 10:00:05 with the watermark at 10:00:05 never reached ``handleInputRows``.  Flink does not drop
rows equal to the watermark and timeweave must report late rows, so the operator gets the event time as
``BIGINT`` µs (``tw_time``, or inside the packs) and the watermarked column ``tw_ts`` is dropped: Spark's
filter has nothing to apply to, every row reaches the core, and the core sends rows below the watermark to the
late output with a reason.  The watermark still advances and fires timers (it is tracked at the
``EventTimeWatermark`` nodes of the sources, not at the operator's input).
"""

from timeweave.spark.host.packs import (
    PACK,
    PACK_BYTES,
    PACK_ROWS,
    PACK_TIME,
    PACKS_SCHEMA,
    PACKS_WITH_TIME_SCHEMA,
    data_rows,
    key_groups,
    pack_rows,
    positions_by_key,
    read_packs,
    unpack,
)
from timeweave.spark.host.processor import HostProcessor, StateVariables
from timeweave.spark.host.schema import (
    BUCKET,
    DEAD_TS,
    DEFAULT_BUCKETS,
    HEARTBEAT,
    KEY_TEXT,
    OP,
    ROW,
    SEQ,
    TIME,
    TS,
    check_buckets,
)
from timeweave.spark.host.state import MapEntry, PackedEntry, SparkKeyContext, TimerIndex
from timeweave.spark.host.stream import BatchOutputs, delay_ms, heartbeat_rows, run_operator
from timeweave.spark.host.wire import JSON_OPTIONS, from_wire, key_columns, to_wire, wire_schema, wire_struct

__all__ = [
    "BUCKET",
    "DEAD_TS",
    "DEFAULT_BUCKETS",
    "HEARTBEAT",
    "JSON_OPTIONS",
    "KEY_TEXT",
    "OP",
    "PACK",
    "PACKS_SCHEMA",
    "PACKS_WITH_TIME_SCHEMA",
    "PACK_BYTES",
    "PACK_ROWS",
    "PACK_TIME",
    "ROW",
    "SEQ",
    "TIME",
    "TS",
    "BatchOutputs",
    "HostProcessor",
    "MapEntry",
    "PackedEntry",
    "SparkKeyContext",
    "StateVariables",
    "TimerIndex",
    "check_buckets",
    "data_rows",
    "delay_ms",
    "from_wire",
    "heartbeat_rows",
    "key_columns",
    "key_groups",
    "pack_rows",
    "positions_by_key",
    "read_packs",
    "run_operator",
    "to_wire",
    "unpack",
    "wire_schema",
    "wire_struct",
]
