"""Streaming temporal join: the core temporal-join operators on the streaming host (:mod:`timeweave.spark.host`).

A registration: what is the temporal join's own.  Lateness, emission order, the version a row gets, version
expiry and idle-state retention are the core's (:mod:`timeweave.core.temporal_join`); join type, predicate and
projection are :func:`timeweave.spark.plan.finalize`'s, the step the batch doors end with; buckets, the state
bridge, packs, heartbeats and the watermark are the host's.  What is left here:

1. **The elements.**  Valid rows (``plan.split_rejects``) of each side become ``tw_b``, ``tw_key`` (the join
   key as one canonical string, unmarked), ``tw_op`` (left row / upsert / delete, by
   ``plan.deleted_expression``), ``tw_time`` (µs since epoch), ``tw_file`` (a version's input file),
   ``tw_seq`` (the versioned spec's ``sequence`` column, only when it has one) and ``tw_row`` (the whole
   original row in the host's wire format).
2. **One watermark per side.**  ``withWatermark`` on each side; Spark combines them with its default
   ``multipleWatermarkPolicy`` (min), the watermark of Flink's two-input operator.  Heartbeat rows are
   unioned into *both* sides before the watermark; the rows are packed after the union.
3. **The state.**  Layout 2 of :data:`timeweave.core.temporal_join.LAYOUT` in the bucket's MapState
   ``timeweave_keys`` and index ``timeweave_index`` (:data:`STATE`).  A key's buffered left rows are the
   core's :class:`~timeweave.core.temporal_join.LeftBuffer` (three lists: times, sequences, payloads), so a
   cell of thousands of rows encodes and decodes in C.  In event time the processor reads its packs' Arrow
   columns directly (key texts dictionary-encoded, one Python string per key), feeds a key's rows of a
   micro-batch to the core as slices of column lists and takes the emitted rows back column-wise
   (``release``, :class:`~timeweave.core.temporal_join.JoinedRows`): no Python object per row on the way.
4. **Ties.**  A right row's sequence is the spec's ``sequence`` column when set, else an arrival counter
   kept per key; within one micro-batch a key's rows are numbered in input order — by file path,
   and within a file in file order — across batches by batch order.  Left rows are numbered the same
   way (the core emits equal times in arrival order).  Within a file the order is the order rows
   reach the processor: Spark keeps a map task's row order through the shuffle and the stable sort
   by bucket in front of the operator (``monotonically_increasing_id``, the batch plan's tie-breaker, is
   not allowed on streams).  A sort that spills to disk may reorder equal keys; give the versioned
   table a ``sequence`` column when several events of one key can share a time.

**Dead letters** (NULL key or time, ``plan.reject_reason``) travel through the operator too, as rows with
op ``DEAD_LEFT``/``DEAD_RIGHT``, their reason in ``tw_reason`` and the original row as ``to_json`` in ``tw_row``; the
host emits them at once, untouched.  A separate dead-letter branch over the same input would make Spark
scan every input file twice per micro-batch.  Their ``tw_ts`` is year 1, so they never move a watermark.

**A LEFT join keeps every left row** (:attr:`~timeweave.core.spec.TemporalJoinSpec.keeps_unmatchable_left`): a
left row with a NULL key or NULL time can never match, so instead of a dead letter it travels as op
``UNMATCHED_LEFT`` (its wire payload in ``tw_row``, ``tw_ts`` year 1 like a dead letter: it never moves a
watermark) and the processor emits it at once as a joined row without a version, counted among the left
rows.  The batch doors output the same row (``timeweave__probe_sql``), so the flushed stream still equals
them.  An INNER join dead-letters it as before.

Outputs: one tagged stream (``__tw_kind`` = ``joined`` / ``late`` / ``dead`` / ``stats``) that
:meth:`StreamingJoin.split` splits per micro-batch into the main output (``finalize``d), the late
output (left columns + ``reason`` + ``watermark``) and the dead letter (``side``, ``reason``, ``row``
JSON: the batch door's :func:`timeweave.spark.dataframe.dead_letters` shape); the host's writer
(:mod:`timeweave.spark.host.writer`) writes them.

**Joined rows travel in documents.**  A ``joined`` row of the tagged stream carries up to
:data:`DOC_ROWS` joined rows as one JSON array (:func:`_frame`), which the split parses once and
unpacks with ``inline``.  One output row per joined row made Spark parse two JSON payloads per row,
and its ``from_json`` builds a new reader with an 8 KB buffer per value: sampled with JFR, that was
~30 % of the executors' CPU of a micro-batch.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessorHandle

from timeweave.core.errors import SpecError
from timeweave.core.event_time import END_OF_INPUT_MS, end_of_input_ms, watermark_as_time
from timeweave.core.operator import StateLayout
from timeweave.core.spec import StateRetention, TemporalJoinSpec
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
from timeweave.spark.host.packs import PACKS_SCHEMA, pack_rows, positions_by_key, table_frame
from timeweave.spark.host.processor import HostProcessor, StateVariables
from timeweave.spark.host.schema import (
    BUCKET,
    DEAD_TS,
    DEFAULT_BUCKETS,
    KEY_TEXT,
    OP,
    ROW,
    SEQ,
    TIME,
    TS,
    check_buckets,
)
from timeweave.spark.host.stream import BatchOutputs, delay_ms, heartbeat_rows, run_operator
from timeweave.spark.host.wire import JSON_OPTIONS, from_wire, key_columns, to_wire, wire_schema, wire_struct
from timeweave.spark.host.writer import OutputCounts
from timeweave.spark.schema import column as named
from timeweave.spark.schema import schema_kinds
from timeweave.spark.sources import take_malformed

MODES = ("event_time", "processing_time")

# -- the elements: tw_op codes and the join's own internal columns --------------------------------------------
FILE = "tw_file"  # a version's input file (input order between map tasks)
REJECT = "tw_reason"  # why a row is a dead letter (NULL for every other row; see "Dead letters" above)
LEFT_ROW, UPSERT, DELETE, HEARTBEAT, DEAD_LEFT, DEAD_RIGHT = 0, 1, 2, 3, 4, 5
#: ``tw_op`` of a LEFT join's left row with a NULL key or time: emitted at once, unmatched (module docstring).
UNMATCHED_LEFT = 6

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

#: Column names the late output adds to the left columns.
LATE_COLUMNS = ("reason", "watermark")

#: Where the join's state lives (with :data:`timeweave.core.temporal_join.LAYOUT`: the checkpoint layout).
STATE = StateVariables("timeweave_keys", "timeweave_index")


# =================================================================================================
# Output rows
# =================================================================================================
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


# =================================================================================================
# The processor
# =================================================================================================
@dataclass
class _Sink:
    """One handler call's outputs (the core's, in order) and the invocation's input counts (None: no stats row)."""

    outputs: list[Output | JoinedRows]
    n_left: int | None = None
    n_right: int | None = None


class TemporalJoinProcessor(HostProcessor):
    """The streaming host's processor of the temporal join: one bucket of join keys, one core operator per key.

    Input: the elements grouped by ``tw_b`` (see the module docstring).  Output: :data:`OUTPUT_SCHEMA`.
    """

    state = STATE
    dead_ops = (DEAD_LEFT, DEAD_RIGHT)

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
        self.event_time = mode == "event_time"
        self._has_sequence = spec.versioned.sequence is not None

    def open(self, handle: StatefulProcessorHandle) -> None:
        if self.event_time:
            self._op: EventTimeTemporalJoin | ProcessingTimeTemporalJoin = EventTimeTemporalJoin(self.spec, self.retention)
        else:
            self._op = ProcessingTimeTemporalJoin(self.spec)

    @property
    def layout(self) -> StateLayout:
        return self._op.layout

    def new_sink(self) -> _Sink:
        return _Sink([])

    def dead_frame(self, dead: pa.Table) -> pd.DataFrame:
        return _dead_frame(dead.to_pandas())

    def immediate(self, table: pa.Table, ops: np.ndarray, sink: _Sink) -> None:
        """A LEFT join's unmatchable left rows leave at once, as joined rows without a version."""
        unmatched = ops == UNMATCHED_LEFT
        if unmatched.any():
            rows = table.filter(pa.array(unmatched))
            sink.outputs.append(_unmatched_rows(rows.column(TIME).to_pylist(), rows.column(ROW).to_pylist()))
            sink.n_left, sink.n_right = len(sink.outputs[0]), 0

    def group(self, table: pa.Table, sink: _Sink) -> list[tuple[str, Any]]:
        ops = table.column(OP).to_numpy()
        n_left_rows = int(np.count_nonzero(ops == LEFT_ROW))
        sink.n_left = n_left_rows + sum(map(len, sink.outputs))  # (the unmatched left rows)
        sink.n_right = len(ops) - n_left_rows
        if not self.event_time:
            return self._group_rows(table_frame(table), sink.n_right)
        keys = table.column(KEY_TEXT).combine_chunks().dictionary_encode(null_encoding="encode")  # first appearance
        codes = keys.indices.to_numpy(zero_copy_only=False)
        texts = keys.dictionary.to_pylist()
        times = table.column(TIME).to_numpy()
        payloads = table.column(ROW).to_numpy(zero_copy_only=False)
        seqs = np.array(table.column(SEQ).to_pylist(), dtype=object) if self._has_sequence else None
        if sink.n_right > 1 and pc.count_distinct(table.column(FILE), mode="only_valid").as_py() > 1:
            # Input order of versions: by file (rows of different map tasks arrive in any order), stable
            # within a file, no file (left rows) first.  Left rows' order never changes a result.
            files, _ = pd.factorize(table.column(FILE).to_numpy(zero_copy_only=False), sort=True)  # None: -1
            by_file = np.argsort(files, kind="stable")
            ops, codes, times, payloads = ops[by_file], codes[by_file], times[by_file], payloads[by_file]
            seqs = seqs[by_file] if seqs is not None else None
        return self._group_columns(texts, codes, ops, times, payloads, seqs)

    def _group_columns(
        self, texts: list[str], codes: np.ndarray, ops: np.ndarray, times: np.ndarray, payloads: np.ndarray,
        seqs: np.ndarray | None,
    ) -> list[tuple[str, Any]]:
        """Event time: each key's rows (``codes``: the position of its key in ``texts``) as the core takes them.

        The rows are grouped by key with one stable sort and converted to lists once, so a key's left
        rows reach the core as slices of those lists (:meth:`EventTimeTemporalJoin.process_left_columns`),
        no object per row.  Versions are few (a handful per key and batch): one tuple each.  Rows are
        numbered in input order per key (ties between equal times break by it).
        """
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
            versions = ~is_left
            at = order[versions]
            for k, r, t, deleted, payload, seq in zip(
                np.repeat(np.arange(len(texts)), counts)[versions].tolist(), rank[versions].tolist(),
                times[at].tolist(), (ops[versions] == DELETE).tolist(), payloads[at].tolist(),
                seqs[at].tolist() if seqs is not None else [None] * len(at), strict=True,
            ):
                version_rows[k].append((r, t, deleted, payload, seq))
        out = []
        for k, text in enumerate(texts):
            start, end = left_bounds[k], left_bounds[k + 1]
            left = (left_times[start:end], left_rank[start:end], left_payloads[start:end]) if end > start else None
            out.append((text, (int(counts[k]), version_rows[k], left)))
        return out

    def _group_rows(self, batch: pd.DataFrame, n_right: int) -> list[tuple[str, Any]]:
        """Processing time: each key's row positions in input order, over the invocation's columns as lists."""
        if n_right > 1 and batch[FILE].nunique() > 1:
            # Input order of versions: by file, stable within a file (as in event time).
            batch = batch.sort_values(FILE, kind="stable", na_position="first")
        columns = (batch[OP].tolist(), batch[TIME].tolist(), batch[ROW].tolist(),
                   batch[SEQ].tolist() if self._has_sequence else None)
        return [(text, (positions, *columns)) for text, positions in positions_by_key(batch).items()]

    def process(self, ctx: Any, elements: Any, sink: _Sink) -> None:
        if not self.event_time:
            self._apply(ctx, *elements, sink.outputs)
            return
        # The handlers only buffer, and a key's versions and left rows touch separate state, so versions go
        # first, one by one, and the left rows in one call (same outputs and state as row by row).
        count, versions, left = elements
        op = self._op
        first_seq = ctx.reserve_seqs(count)
        has_sequence = self._has_sequence
        for r, t, deleted, payload, seq in versions:
            seq = _sequence(seq) if has_sequence else first_seq + r
            sink.outputs.extend(op.process_right(ctx, VersionEvent(t, seq, deleted, payload)))
        if left is not None:
            times, ranks, payloads = left
            sink.outputs.extend(op.process_left_columns(ctx, times, (ranks + first_seq).tolist(), payloads))

    def _apply(
        self, ctx: Any, positions: list[int], ops: list[int], times: list[int], payloads: list[Any],
        seqs: list[Any] | None, outputs: list[Output | JoinedRows],
    ) -> None:
        """Processing time: feed one key's rows of the batch to the core, numbered in input order (event
        time: :meth:`_group_columns` and :meth:`process`)."""
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

    def fire(self, ctx: Any, sink: _Sink) -> None:
        """Emit what the watermark allows (event time: ``release``, the joined rows column-wise)."""
        if self.event_time:
            released = self._op.release(ctx)
            if released is not None:
                sink.outputs.append(released)

    def frames(self, sink: _Sink, always: bool) -> Any:
        if always or sink.outputs:
            yield _frame(sink.outputs, sink.n_left, sink.n_right)


def _sequence(value: Any) -> int:
    # A NULL sequence sorts first, as NULLs do in the batch plan's ORDER BY __tw_seq.
    if value is None or value != value:  # NaN from a nullable integer column
        return -(2**63)
    return int(value)


# =================================================================================================
# Building the stream
# =================================================================================================
@dataclass(frozen=True)
class SqlExposure:
    """The SQL door's shape of a temporal join's rows (:mod:`timeweave.spark.temporal_join_sql`): the left
    columns, the right columns ``spec`` outputs flat, and each side as a struct named by its alias."""

    spec: TemporalJoinSpec
    left_alias: str
    right_alias: str


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
    #: The left key columns the SQL door computed from key expressions (last in ``left_schema``): keyed on,
    #: never output (the late output and the dead letters' ``row`` leave them out, as the batch door does).
    hidden_left: tuple[str, ...] = ()
    #: How the main output is shaped: None is the plain output (the spec's); a :class:`SqlExposure` is the SQL
    #: door's subquery shape (the streaming SQL door runs the query around the join over it).
    exposure: SqlExposure | None = None

    #: The batch's cache is mostly read by the main output's write: uncompressed (see the host's writer).
    compress_cache: ClassVar[bool] = False

    def count_columns(self) -> list[Column]:
        """The batch's counts, observed by the host's writer (:class:`~timeweave.spark.host.writer.TaggedWriter`)."""
        kind, side = F.col(KIND), F.col(OUT_SIDE)
        return [
            F.count_if(kind == JOINED).alias("joined"),
            F.count_if(kind == LATE).alias("late"),
            F.count_if((kind == DEAD) & (side == "left")).alias("dead_left"),
            F.count_if((kind == DEAD) & (side != "left")).alias("dead_right"),
            F.coalesce(F.sum(N_LEFT), F.lit(0)).alias("n_left"),
            F.coalesce(F.sum(N_RIGHT), F.lit(0)).alias("n_right"),
        ]

    def counts(self, observed: Mapping[str, Any]) -> OutputCounts:
        """:meth:`count_columns`' values as the writer's counts (dead letters are input rows of their side)."""
        dead_left, dead_right = int(observed["dead_left"]), int(observed["dead_right"])
        return OutputCounts(
            {"rows_in_left": int(observed["n_left"]) + dead_left, "rows_in_right": int(observed["n_right"]) + dead_right},
            main=int(observed["joined"]), late=int(observed["late"]), dead=dead_left + dead_right,
        )

    @functools.cached_property
    def _finalizer(self) -> plan.Finalizer:
        """The finalize step of :meth:`split`, parsed once per job (see :class:`plan.Finalizer`)."""
        left = [c for c in self.left_schema.fieldNames() if c not in self.hidden_left]
        if self.exposure is None:
            return plan.Finalizer(self.spec, left, self.right_schema.fieldNames())
        e = self.exposure
        return plan.Finalizer(e.spec, left, self.right_schema.fieldNames(), e.left_alias, e.right_alias, nested=True)

    def split(self, batch: DataFrame) -> BatchOutputs:
        """Main (finalized), late and dead-letter DataFrames of one micro-batch of :attr:`stream`."""
        kind = F.col(KIND)
        # Joined rows arrive in documents (see _frame): one from_json per document, then one output
        # row per element.  `inline` materialises the element's fields as columns, so the next
        # projection reads the parsed payloads without parsing again.
        document = T.ArrayType(T.StructType([
            T.StructField("l", wire_schema(self.left_schema)),
            T.StructField("v", wire_schema(self.right_schema)),
            T.StructField("f", T.LongType()),
            T.StructField("t", T.LongType()),
        ]))
        parsed = batch.where(kind == JOINED).select(F.inline(F.from_json(F.col(L_ROW), document, JSON_OPTIONS)))
        joined = parsed.select(
            wire_struct(F.col("l"), self.left_schema).alias("__tw_l"),
            # An element without "v" had no version.
            F.when(F.col("v").isNull(), F.lit(None)).otherwise(
                F.struct(
                    # The core never matches a delete (version_at returns None inside a deleted span).
                    F.lit(False).alias("deleted"),
                    F.timestamp_micros(F.col("f")).alias("valid_from"),
                    F.timestamp_micros(F.col("t")).alias("valid_to"),  # no "t": in force, NULL
                    wire_struct(F.col("v"), self.right_schema).alias("p"),
                )
            ).alias("__tw_v"),
        )
        main = self._finalizer(joined)  # parsed once per job, analyzed per batch
        late = batch.where(kind == LATE).select(
            from_wire(F.col(L_ROW), self.left_schema).alias("__tw_l"),
            F.col(REASON).alias("reason"),
            F.timestamp_micros(F.col(WATERMARK)).alias("watermark"),
        ).select("__tw_l.*", "reason", "watermark").drop(*self.hidden_left)
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
    hidden_left: Sequence[str] = (),
) -> StreamingJoin:
    """The streaming temporal join of two streaming DataFrames (see the module docstring).

    ``left_watermark``/``right_watermark`` are each side's allowed out-of-orderness (Spark delay
    strings); ``heartbeat`` is an optional stream with one timestamp column whose rows advance both
    sides' watermarks (the job uses it to flush at end of input).  ``hidden_left``: left columns the join keys
    on but never outputs (the SQL door's key expressions, last in ``left``).  ``buckets`` is how many hash
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
    left_kinds, right_kinds = schema_kinds(left.schema), schema_kinds(right.schema)
    spec.bind(left_kinds, right_kinds)
    spec.check_streaming(left_kinds, right_kinds)
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
    left_in = _internal_with_dead(left, spec, "left", buckets, tuple(hidden_left))
    right_in = _internal_with_dead(right, spec, "right", buckets)
    if mode == "event_time":
        if heartbeat is not None:
            left_in = left_in.unionByName(heartbeat_rows(heartbeat, left_in))
            right_in = right_in.unionByName(heartbeat_rows(heartbeat, right_in))
        left_in = left_in.withWatermark(TS, left_watermark)
        right_in = right_in.withWatermark(TS, right_watermark)
    internal = left_in.unionByName(right_in)
    # The operator gets the event time as BIGINT µs only: no input column carries watermark metadata,
    # so Spark's late-row filter (event_time <= watermark) does not apply; the core decides lateness.
    internal = internal.withColumn(TIME, F.unix_micros(F.col(TS))).drop(TS)
    # Packs (see the module docstring): the operator's input is one row per source partition and bucket.
    internal = internal.mapInArrow(pack_rows, PACKS_SCHEMA)
    processor = TemporalJoinProcessor(
        spec, mode, None if mode == "processing_time" else retention,
        # Spark's watermark is the minimum of the sides': a flush reaches the end minus the larger delay.
        end_of_input_ms(max(delay_ms(left_watermark), delay_ms(right_watermark))),
    )
    joined = run_operator(internal, processor, OUTPUT_SCHEMA, event_time=mode == "event_time")
    return StreamingJoin(joined, spec, left.schema, right.schema, mode, tuple(hidden_left))


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
    bucket, text = key_columns(df, key, buckets)
    columns = [
        (BUCKET, bucket),
        (KEY_TEXT, text),
        (OP, op.cast("tinyint")),
        (TS, named(time).cast("timestamp")),
        (FILE, source),
        (ROW, to_wire(df)),
    ]
    if sequence:  # only then: every column costs a conversion per row in the operator's input
        columns.append((SEQ, seq))
    return columns


def _internal_with_dead(
    df: DataFrame, spec: TemporalJoinSpec, side: str, buckets: int, hidden: tuple[str, ...] = (),
) -> DataFrame:
    """All of one side's rows in the internal schema: :func:`_internal`'s for valid rows, dead letters tagged.

    One projection over the input (see "Dead letters" in the module docstring): a dead letter's op
    is ``DEAD_LEFT``/``DEAD_RIGHT``, ``tw_reason`` its reason, ``tw_row`` the original row as the batch
    door's ``dead_letters`` writes it, ``tw_ts`` year 1 (never moves the watermark).  A CSV / JSON source's
    malformed records are dead letters of this projection too when the job hands over the source
    (:func:`timeweave.spark.sources.carry_malformed`): one scan of the source.
    """
    reason = F.expr(plan.reject_reason(spec, side))
    dead = reason.isNotNull()
    if side == "left" and spec.keeps_unmatchable_left:
        # A LEFT join outputs the row, unmatched (see "A LEFT join keeps every left row"): its payload stays
        # the wire form the joined rows carry, and it is no dead letter.
        replaced = {OP: F.lit(UNMATCHED_LEFT), TS: F.lit(DEAD_TS).cast("timestamp")}
        reason = F.lit(None)
    else:
        original = F.to_json(F.struct(*[named(c) for c in df.columns if c not in hidden]))
        replaced = {
            OP: F.lit(DEAD_LEFT if side == "left" else DEAD_RIGHT),
            TS: F.lit(DEAD_TS).cast("timestamp"),
            ROW: original,
        }
    # One scan: a source's malformed records ride in this projection as dead letters with their reason and
    # record (take_malformed), instead of a second scan of the source unioned in after the operator.
    scanned, malformed, bad_row = take_malformed(df)
    bad = {OP: F.lit(DEAD_LEFT if side == "left" else DEAD_RIGHT), TS: F.lit(DEAD_TS).cast("timestamp"), ROW: bad_row}
    columns = []
    for name, column in _internal_columns(df, spec, side, buckets):
        if name in replaced:
            column = F.when(dead, replaced[name]).otherwise(column)
        if malformed is not None and name in bad:
            column = F.when(malformed.isNotNull(), bad[name]).otherwise(column)
        columns.append((column.cast("tinyint") if name == OP else column).alias(name))
    if malformed is not None:
        reason = F.coalesce(malformed, reason)
    return scanned.select(*columns, reason.cast("string").alias(REJECT))


__all__ = [
    "OUTPUT_SCHEMA",
    "STATE",
    "BatchOutputs",
    "SqlExposure",
    "StreamingJoin",
    "TemporalJoinProcessor",
    "temporal_join_stream",
]
