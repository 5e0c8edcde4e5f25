"""Streaming MATCH_RECOGNIZE: the core :class:`~timeweave.core.pattern.MatchRecognizeOperator` per PARTITION BY
key inside ``transformWithStateInPandas`` (event time).

The adapter translates and decides nothing: lateness, the order rows are matched in, WITHIN pruning and
the end of input are the core operator's; the output schema is the batch door's
(:func:`timeweave.spark.match_recognize.plan`).  What the adapter does:

1. **Internal schema.**  Every input row becomes ``tw_b`` (the key's hash bucket: the grouping key),
   ``tw_key`` (the PARTITION BY values as one canonical string; NULL is an ordinary key, as in batch),
   ``tw_op`` (data row, dead letter or heartbeat), ``tw_time`` (event time, µs since the epoch) and ``tw_row`` (the whole input row as
   JSON in the temporal join's wire format, top-level timestamps and dates as numbers, decoded in
   Python with the input schema into the values the batch door's Arrow conversion gives:
   session-local naive datetimes, ``Decimal``, NULL vs NaN kept).
   **Packs.**  PySpark 4.3 hands a ``transformWithStateInPandas`` operator its input row by row (the
   worker turns every Arrow batch into one namedtuple per row with ``itertuples`` and rebuilds frames
   with ``pd.DataFrame(rows)``: ~28 % of the job's Python CPU at 250 k rows per micro-batch).  So the
   rows never reach the operator one by one: a ``mapInArrow`` step in the source stage (:func:`pack_rows`)
   sorts each source partition's rows by bucket (stable: each key's rows keep their order) and emits one
   row per bucket and up to :data:`~timeweave.spark.streaming.PACK_ROWS` rows, ``tw_pack`` holding those rows' four columns as one
   Arrow IPC stream (numpy and Arrow only, no Python step per row) and ``tw_pack_time`` their largest
   event time; the processor opens the packs of an invocation with :func:`unpack`.  Both are
   :mod:`timeweave.spark.streaming`'s (the temporal join packs its rows the same way).  The shuffle and the
   sort in front of the operator then move a few large rows instead of every input row.  The state
   layout does not change (a checkpoint of the unpacked plan resumes).
2. **Watermark.**  ``withWatermark`` on the packs' largest event time (``watermark_delay`` = allowed
   out-of-orderness; Spark's watermark is the maximum over rows, so over packs it is the same); heartbeat rows (:mod:`timeweave.spark.streaming`'s mechanism) are unioned in before it, so they move
   the watermark; the processor drops them.  As in the temporal join, the operator receives the time as
   ``BIGINT`` inside the packs only, so Spark's silent ``event_time <= watermark`` filter does not apply and the core
   reports late rows itself (late output, counted).
3. **Buckets and the state bridge.**  As in the temporal join (:mod:`timeweave.spark.streaming`,
   "Buckets"), the operator is grouped by ``tw_b = pmod(xxhash64(PARTITION BY values), buckets)``:
   an invocation costs a fixed amount (state-server round trips, a pandas frame in, an Arrow batch
   out), so one per bucket and micro-batch instead of one per key.  Inside a bucket the rows are split
   by ``tw_key`` and each key runs its own core operator over its own state, exactly as before: a
   :class:`~timeweave.spark.streaming.SparkKeyContext` over the key's entry of the bucket's MapState
   ``timeweave_mr_keys`` (buffered rows, matcher, counters and core timers in one cell, encoded as data by
   :mod:`timeweave.core.state_codec` (versioned, checksummed MessagePack; never pickle): one
   read and at most one write per key and micro-batch).  A key's rows of the micro-batch go to the core
   in one call (``process_elements``), then ``on_watermark`` runs with Spark's watermark and hands the
   released rows to the matcher at once.  Rows are buffered undecoded, as ``(event time, tw_row text)``
   pairs (far cheaper to store into state and back than a decoded row's datetimes and dicts); the core's
   ``rows_of`` hook decodes them when the watermark releases them, all of a key's released rows in one
   call (:func:`rows_decoder`: one JSON parse, column-wise conversions).  A key's cell is LZ4-compressed
   once it reaches 2 kB (:class:`_PackedEntry`): it holds the key's buffered rows, and every byte of it
   crosses the state server both ways and goes to RocksDB and the checkpoint (~4x fewer bytes).  A
   bucket keeps one Spark timer at the smallest core timer of its keys (ValueState
   ``timeweave_mr_index``, the temporal join's ``_Index``); when it fires, every key of the bucket with
   a timer at or below the watermark runs ``on_watermark``.  Checkpoint state
   format: these two state variables, grouped by ``tw_b`` (the earlier per-key ValueState
   ``timeweave_mr`` layout cannot be resumed: start such jobs from a fresh checkpoint; ``buckets`` must
   stay the same for a checkpoint).  Checkpoints written by releases that pickled their cells are refused
   with a :class:`~timeweave.core.errors.StateFormatError` (loading a pickle could run code): start such
   jobs from a fresh checkpoint.
4. **End of input.**  A watermark at or past :data:`timeweave.jobs.streaming.END_OF_INPUT` (the job's
   ``flush`` heartbeat, 9999-12-31 23:59:59.999) minus the watermark delay (the watermark a flush heartbeat
   produces) is the final watermark: it reaches the core as ``END_OF_TIME``
   (:func:`timeweave.core.event_time.watermark_us`, the temporal join's rule too), so the
   core's :meth:`~timeweave.core.pattern.MatchRecognizeOperator.finish` closes the partition (``$`` matches,
   greedy attempts settle, WITH UNMATCHED ROWS emits the tail) exactly as the batch door does at the end of
   a partition.  Every key holding state keeps an extra core timer at that time, so each key sees it.
   Rows arriving after the flush are late.

**Dead letters** (rows with a NULL event time: they can never be ordered) travel through the operator
too, in the same projection of the input: ``tw_op`` ``DEAD_ROW``, ``tw_row`` the original row as ``to_json``
(the dead-letter shape), ``tw_ts`` year 1 (never moves the watermark); the processor emits them at once
with the reason.  A separate dead-letter branch over the same input made Spark scan every input file
twice per micro-batch (the temporal join's door does the same, :mod:`timeweave.spark.streaming`).

**Partial matches at end of input.**  Flink discards a partial match when its input ends (only completed
matches are ever emitted).  timeweave closes the partition instead, so a streaming job flushed at end of
input gives the *same rows as the batch door* (the cross-door invariant).  Without a flush nothing is
discarded either: the attempt stays in state until more rows, a WITHIN deadline or the flush decide it.

Outputs (one tagged stream split per micro-batch by :meth:`StreamingMatch.split`):

* main: exactly the batch door's output schema and rows (ONE ROW or ALL ROWS PER MATCH);
* late: the input columns + ``reason`` + ``watermark``;
* dead letter: ``side`` (``input``), ``reason``, ``row`` (the input row as JSON), the temporal join's shape;
* one ``stats`` row per invocation with the bucket's input count (the job's ``rows_in`` metric).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.streaming.stateful_processor import ExpiredTimerInfo, TimerValues

from timeweave.core.durations import parse_duration
from timeweave.core.errors import SpecError, StateFormatError
from timeweave.core.event_time import END_OF_INPUT_MS, end_of_input_ms, watermark_as_time
from timeweave.core.pattern import (
    BudgetRejected,
    ClauseSpec,
    MatchBudget,
    MatchRecognizeOperator,
    null_event_time_reason,
    parse_clause,
)
from timeweave.core.pattern.operator import BUFFER, MATCHER, SEQUENCE
from timeweave.spark.match_recognize import MatchPlan, _arrow_schema, _to_arrow, plan
from timeweave.spark.render import quote
from timeweave.spark.streaming import (
    _TS,
    BUCKET,
    DEFAULT_BUCKETS,
    JSON_OPTIONS,
    KEY_TEXT,
    OP,
    PACK,
    PACK_TIME,
    PACKS_WITH_TIME_SCHEMA,
    BatchOutputs,
    SparkKeyContext,
    _from_wire,
    _heartbeat,
    _Index,
    _json,
    _MapEntry,
    check_buckets,
    data_rows,
    pack_rows,
    unpack,
    watermark_us,
)
from timeweave.spark.subqueries import inline_subqueries

# -- the internal (operator input) schema: plain identifiers (PySpark rebuilds input rows as namedtuples) --
TIME = "tw_time"
ROW = "tw_row"
#: ``tw_op`` of an input row / of a dead letter (NULL event time; ``streaming.HEARTBEAT`` is 3).
DATA_ROW, DEAD_ROW = 0, 4
#: ``tw_ts`` of a dead letter: below any event time, so it never moves the watermark (Spark takes the maximum).
_DEAD_TS = "0001-01-01 00:00:00"

# -- the tagged (operator output) schema ---------------------------------------------------------------
KIND = "__tw_kind"
REASON = "__tw_reason"
WATERMARK = "__tw_watermark"
N_IN = "__tw_n_in"
IN_ROW = "__tw_in_row"
SIDE = "__tw_side"
COLUMN = "__tw_c"  # main output column i is __tw_c<i> (renamed in split: no clash with the tag columns)
MATCHED, LATE, DEAD, STATS = "match", "late", "dead", "stats"
#: a dead letter whose ``IN_ROW`` is the wire text (a row of a key that ran out of its match budget): the
#: split turns it into the input row's ``to_json``, the other dead letters' shape
BUDGET_DEAD = "dead-budget"

#: Columns the late output adds to the input columns.
LATE_COLUMNS = ("reason", "watermark")
#: The job's end-of-input heartbeat (``timeweave.jobs.streaming.END_OF_INPUT``) in µs; a watermark here or
#: later is the final one.
END_OF_INPUT_US = END_OF_INPUT_MS * 1000
#: The hidden key under which a row carries its event time in µs (what the core's ``time_of`` reads).
_TIME_KEY = "\x00tw_time_us"
#: The hidden key under which a released (decoded) row keeps its wire text: a row the match budget rejects goes
#: to the dead letter as it came.
_TEXT_KEY = "\x00tw_text"
#: The hidden key under which an earlier layout buffered a row not yet decoded (``{time, text}``; see ``_old_row``).
_OLD_TEXT_KEY = "\x00tw_row"

#: Per bucket: PARTITION BY key (``tw_key``) -> the key's :class:`SparkKeyContext` cell (``state_codec`` blob).
_KEYS_STATE = "timeweave_mr_keys"
_KEYS_SCHEMA = T.StructType([T.StructField("k", T.StringType(), True)])
#: Per bucket: each key's smallest core timer and the bucket's one Spark timer (``streaming._Index``).
_INDEX_STATE = "timeweave_mr_index"
_STATE_SCHEMA = T.StructType([T.StructField("v", T.BinaryType(), True)])
#: The core's state names: a key holds state while any is set.
_CORE_STATE = (BUFFER, MATCHER, SEQUENCE)
_TIME_TYPES = (T.TimestampType, T.TimestampNTZType, T.ByteType, T.ShortType, T.IntegerType, T.LongType)


def core_watermark(spark_watermark_ms: int, end_ms: int = END_OF_INPUT_MS) -> int:
    """Spark's watermark (ms) as the core's (µs): none yet, a time, or ``END_OF_TIME`` once it reached
    ``end_ms`` (the end of input: the flush heartbeat's time minus the watermark delay); the one rule
    of :func:`timeweave.core.event_time.watermark_us`.

    >>> from timeweave.core.state import END_OF_TIME, NO_WATERMARK
    >>> core_watermark(0) == NO_WATERMARK, core_watermark(1_000), core_watermark(END_OF_INPUT_MS) == END_OF_TIME
    (True, 1000000, True)
    """
    return watermark_us(spark_watermark_ms, end_ms)


# =================================================================================================
# Input rows: JSON -> the values the batch door's Arrow conversion gives
# =================================================================================================
def _decoder(data_type: T.DataType, zone: Any) -> Callable[[Any], Any] | None:
    """A function turning the JSON value of a ``data_type`` column into the batch door's Python value.

    None when the JSON value already is that value (strings, integers, booleans).
    """
    if isinstance(data_type, T.TimestampType):
        return lambda v: datetime.fromisoformat(v).astimezone(zone).replace(tzinfo=None)
    if isinstance(data_type, T.TimestampNTZType):
        return datetime.fromisoformat
    if isinstance(data_type, T.DateType):
        return date.fromisoformat
    if isinstance(data_type, T.DecimalType):
        return lambda v: v if isinstance(v, Decimal) else Decimal(v)
    if isinstance(data_type, T.DoubleType):
        return float
    if isinstance(data_type, T.FloatType):
        return lambda v: float(np.float32(v))  # the float32 value, as Arrow gives it
    if isinstance(data_type, T.BinaryType):
        return base64.b64decode
    if isinstance(data_type, T.ArrayType):
        element = _decoder(data_type.elementType, zone)
        return None if element is None else (lambda v: [None if x is None else element(x) for x in v])
    if isinstance(data_type, T.MapType):
        value = _decoder(data_type.valueType, zone) or (lambda x: x)
        key = _decoder(data_type.keyType, zone) or (lambda x: x)
        # Arrow gives a map as a list of (key, value) pairs; JSON keys are strings.
        return lambda v: [(key(_json_key(k, data_type.keyType)), None if x is None else value(x)) for k, x in v.items()]
    if isinstance(data_type, T.StructType):
        fields = [(f.name, _decoder(f.dataType, zone)) for f in data_type.fields]
        return lambda v: {n: (None if v.get(n) is None else d(v[n]) if d else v[n]) for n, d in fields}
    return None


def _json_key(text: str, data_type: T.DataType) -> Any:
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return int(text)
    if isinstance(data_type, (T.DoubleType, T.FloatType, T.DecimalType)):
        return Decimal(text)
    return text


def _wire_decoder(data_type: T.DataType, zone: Any) -> Callable[[Any], Any] | None:
    """:func:`_decoder` for a top-level column of the wire format (``streaming._json``: TIMESTAMP as µs
    since the epoch, DATE as days: no date text to format in the JVM and parse here, per row)."""
    if isinstance(data_type, T.TimestampType):
        if zone is UTC:
            return lambda v: _EPOCH_NAIVE + timedelta(microseconds=v)
        return lambda v: (_EPOCH + timedelta(microseconds=v)).astimezone(zone).replace(tzinfo=None)
    if isinstance(data_type, T.DateType):
        return lambda v: date.fromordinal(_EPOCH_ORDINAL + v)
    return _decoder(data_type, zone)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE = datetime(1970, 1, 1)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


def _wire_column(data_type: T.DataType, zone: Any) -> Callable[[list[Any]], list[Any]] | None:
    """A whole-column form of :func:`_wire_decoder` (a list of non-NULL wire values -> their Python values)
    where numpy does the per-value work in C: UTC TIMESTAMP (µs) and DATE (days); None elsewhere."""
    if isinstance(data_type, T.TimestampType) and zone is UTC:
        return lambda values: np.array(values, dtype=np.int64).astype("datetime64[us]").tolist()
    if isinstance(data_type, T.DateType):
        return lambda values: np.array(values, dtype=np.int64).astype("datetime64[D]").tolist()
    return None


def rows_decoder(schema: T.StructType, timezone: str) -> Callable[[list[str]], list[dict[str, Any]]]:
    """The function turning a list of ``tw_row`` JSON texts (``streaming._json``'s wire format: top-level
    timestamps as µs, dates as days since the epoch) into the row dicts the core matches on.

    One JSON parse for the whole list and one conversion per column (not per value) where numpy can
    do it: a bucket's rows of a micro-batch are decoded in one call.

    >>> s = T.StructType([T.StructField("t", T.TimestampType()), T.StructField("p", T.DecimalType(5, 2)),
    ...                   T.StructField("w", T.DoubleType()), T.StructField("d", T.DateType())])
    >>> rows_decoder(s, "UTC")(['{"t":1704067200000001,"p":1.50,"w":NaN,"d":19723}', '{"w":2}'])
    [{'t': datetime.datetime(2024, 1, 1, 0, 0, 0, 1), 'p': Decimal('1.50'), 'w': nan, 'd': datetime.date(2024, 1, 1)}, {'t': None, 'p': None, 'w': 2.0, 'd': None}]
    """
    zone = UTC if timezone.upper() in ("UTC", "Z", "GMT", "ETC/UTC") else ZoneInfo(timezone)
    names = [f.name for f in schema.fields]
    columns = [
        (f.name, d, _wire_column(f.dataType, zone)) for f in schema.fields
        if (d := _wire_decoder(f.dataType, zone)) is not None
    ]
    # One decoder (json.loads(**kw) builds one per call); raw_decode skips decode()'s two whitespace scans
    # (to_json writes none).
    raw_decode = json.JSONDecoder(parse_float=Decimal).raw_decode
    template = dict.fromkeys(names)
    width = len(names)

    def decode(texts: list[str]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = raw_decode("[" + ",".join(texts) + "]")[0]
        # NULL fields are absent (ignoreNullFields): such a row gets the template's None (and its key order;
        # a complete row has it already: to_json writes the fields in schema order).
        if min(map(len, rows), default=width) < width:  # one C pass; rebuild the list only when a row lacks fields
            rows = [row if len(row) == width else {**template, **row} for row in rows]
        for name, convert, convert_all in columns:
            values = [row[name] for row in rows]
            if convert_all is not None and None not in values:
                for row, value in zip(rows, convert_all(values), strict=True):
                    row[name] = value
            else:
                for row, value in zip(rows, values, strict=True):
                    if value is not None:
                        row[name] = convert(value)
        return rows

    return decode


def row_decoder(schema: T.StructType, timezone: str) -> Callable[[str], dict[str, Any]]:
    """The function turning one ``tw_row`` JSON text into the row dict the core matches on
    (:func:`rows_decoder` for one row).

    >>> s = T.StructType([T.StructField("t", T.TimestampType()), T.StructField("p", T.DecimalType(5, 2)),
    ...                   T.StructField("w", T.DoubleType()), T.StructField("d", T.DateType())])
    >>> row_decoder(s, "Europe/Paris")('{"t":1704067200000001,"p":1.50,"w":NaN,"d":19723}')
    {'t': datetime.datetime(2024, 1, 1, 1, 0, 0, 1), 'p': Decimal('1.50'), 'w': nan, 'd': datetime.date(2024, 1, 1)}
    """
    decode = rows_decoder(schema, timezone)
    return lambda text: decode([text])[0]


# =================================================================================================
# Output rows: core dicts -> the tagged pandas frame
# =================================================================================================
@dataclass(frozen=True)
class _Output:
    """The main output columns of a plan: core dict key, tagged column name, Arrow type."""

    keys: tuple[str, ...]
    names: tuple[str, ...]
    types: tuple[pa.DataType, ...]

    @classmethod
    def of(cls, bound: MatchPlan, timezone: str) -> _Output:
        return cls(
            bound.keys,
            tuple(f"{COLUMN}{i}" for i in range(len(bound.keys))),
            tuple(_arrow_schema(bound.schema, timezone).types),
        )


def tagged_schema(bound: MatchPlan) -> T.StructType:
    """The operator's output schema: tag columns, then the main output columns as ``__tw_c<i>``.

    >>> s = T.StructType([T.StructField("k", T.StringType()), T.StructField("t", T.LongType())])
    >>> tagged_schema(plan("PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n PATTERN (A) DEFINE A AS true",
    ...                    s)).fieldNames()[-2:]
    ['__tw_c0', '__tw_c1']
    """
    tags = [
        T.StructField(KIND, T.StringType()), T.StructField(REASON, T.StringType()),
        T.StructField(WATERMARK, T.LongType()), T.StructField(N_IN, T.LongType()),
        T.StructField(IN_ROW, T.StringType()), T.StructField(SIDE, T.StringType()),
    ]
    main = [T.StructField(f"{COLUMN}{i}", f.dataType, True) for i, f in enumerate(bound.schema.fields)]
    return T.StructType(tags + main)


def _frame(output: _Output, matched: list[dict[str, Any]], late: list[tuple[str, str, int]], n_in: int | None) -> pd.DataFrame:
    """The tagged rows of one invocation: matches, late rows, then one ``stats`` row when ``n_in`` is given."""
    n_matched, n_late = len(matched), len(late)
    n_stats = 0 if n_in is None else 1
    kinds = [MATCHED] * n_matched + [LATE] * n_late + [STATS] * n_stats
    pad = [None] * (n_late + n_stats)
    columns: dict[str, Any] = {
        KIND: pd.array(kinds, dtype=object),
        REASON: pd.array([None] * n_matched + [r for _, r, _ in late] + [None] * n_stats, dtype=object),
        # END_OF_TIME (after a flush) as TIMESTAMP's last value: the late output's column must be readable.
        WATERMARK: np.array([0] * n_matched + [watermark_as_time(w) for _, _, w in late] + [0] * n_stats, dtype=np.int64),
        N_IN: np.array([0] * (n_matched + n_late) + ([n_in] if n_in is not None else []), dtype=np.int64),
        IN_ROW: pd.array([None] * n_matched + [r for r, _, _ in late] + [None] * n_stats, dtype=object),
        SIDE: pd.array([None] * len(kinds), dtype=object),
    }
    # Main columns: the batch door's own value conversion (_to_arrow), handed to Spark Arrow-backed, so
    # NaN stays NaN (a numpy-backed column would become NULL) and nullable integers stay integers.
    for key, name, arrow_type in zip(output.keys, output.names, output.types, strict=True):
        values = [row.get(key) for row in matched]
        columns[name] = _pandas_column(_to_arrow(values + pad, arrow_type))
    return pd.DataFrame(columns)


def _pandas_column(array: pa.Array) -> Any:
    """``array`` as a frame column Spark converts back losslessly.

    Arrow-backed for scalars; nested values (``ARRAY_AGG`` measures) as Python lists and None, because
    Spark converts those element by element and cannot iterate the Arrow-backed column's ``pd.NA``.
    """
    if pa.types.is_nested(array.type):
        return pd.array(array.to_pylist(), dtype=object)
    return pd.arrays.ArrowExtensionArray(array)


def _dead_frame(output: _Output, rows: list[str], reason: str | list[str], kind: str = DEAD) -> pd.DataFrame:
    """The tagged ``dead`` rows of an invocation's dead letters (``rows``: each input row's ``to_json``; with
    ``kind`` :data:`BUDGET_DEAD`, its wire text), with one ``reason`` or one per row."""
    n = len(rows)
    columns: dict[str, Any] = {
        KIND: pd.array([kind] * n, dtype=object),
        REASON: pd.array([reason] * n if isinstance(reason, str) else reason, dtype=object),
        WATERMARK: np.zeros(n, dtype=np.int64),
        N_IN: np.zeros(n, dtype=np.int64),
        IN_ROW: pd.array(rows, dtype=object),
        SIDE: pd.array(["input"] * n, dtype=object),
    }
    for name, arrow_type in zip(output.names, output.types, strict=True):
        columns[name] = _pandas_column(pa.nulls(n, arrow_type))
    return pd.DataFrame(columns)


# =================================================================================================
# The processor
# =================================================================================================
class MatchRecognizeProcessor(StatefulProcessor):
    """``transformWithStateInPandas`` processor: one bucket of PARTITION BY keys, one core
    :class:`MatchRecognizeOperator` state per key.

    Picklable and small: the clause text and the input schema (JSON); the operator, the row decoder
    and the output layout are rebuilt in :meth:`init` on the executor.  Spark passes the handler
    arguments by keyword, so their names are Spark's.
    """

    def __init__(self, clause: str, input_json: str, timezone: str, end_ms: int = END_OF_INPUT_MS,
                 budget: MatchBudget | None = None) -> None:
        self.clause = clause
        self.budget = budget  # None: the default MatchBudget
        self.input_json = input_json
        self.timezone = timezone
        self.end_ms = end_ms  # the watermark the end-of-input heartbeat produces (ms)
        self.end_us = end_ms * 1000  # the core timer every key holding state keeps: fires at the end of input

    def init(self, handle: StatefulProcessorHandle) -> None:
        schema = T.StructType.fromJson(json.loads(self.input_json))
        bound = plan(parse_clause(self.clause), schema)
        self._handle = handle
        self._keys = handle.getMapState(_KEYS_STATE, _KEYS_SCHEMA, _STATE_SCHEMA)
        self._index_state = handle.getValueState(_INDEX_STATE, _STATE_SCHEMA)
        self._op = MatchRecognizeOperator(bound.spec, time_of=_time_of, rows_of=self._rows_of,
                                          budget=getattr(self, "budget", None))
        self._rejected: list[tuple[str, str]] = []  # (wire text, reason) of budget-rejected rows, per handler call
        self._decode = rows_decoder(schema, self.timezone)
        self._output = _Output.of(bound, self.timezone)
        self._dead_reason = null_event_time_reason(bound.order_columns[0][0])

    def _watermark(self, timer_values: TimerValues) -> int:
        return core_watermark(timer_values.getCurrentWatermarkInMs(), self.end_ms)

    def _rows_of(self, rows: list[Any]) -> list[dict[str, Any]]:
        """The core's ``rows_of``: buffered rows (``(time, text)`` pairs) released to matching, decoded in one call."""
        try:
            # A (time, text) pair's text; a dict row of an earlier version has no key 1 (KeyError).
            texts = [row[1] for row in rows]
        except KeyError:
            return [self._rows_of([row])[0] if row.__class__ is tuple else _old_row(row, self._decode) for row in rows]
        decoded = self._decode(texts)
        for row, pair in zip(decoded, rows, strict=True):
            row[_TIME_KEY] = pair[0]
            row[_TEXT_KEY] = pair[1]
        return decoded

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        packs = data_rows(rows)
        if packs is None:
            return
        batch = unpack(packs[PACK])
        dead = batch[OP].to_numpy() == DEAD_ROW
        if dead.any():
            yield _dead_frame(self._output, batch[ROW][dead].tolist(), self._dead_reason)
            batch = batch[~dead]
            if batch.empty:
                return
        watermark = self._watermark(timerValues)
        index = _Index.load(self._index_state)
        process = self._op.process_elements
        matched: list[dict[str, Any]] = []
        late: list[tuple[str, str, int]] = []
        by_key = rows_by_key(batch)
        for key_text, key_rows in by_key.items():
            ctx = SparkKeyContext(None, _PackedEntry(self._keys, key_text), watermark)
            # Rows are buffered undecoded, as (time, wire text) pairs: a fraction of a decoded row's encoding
            # cost (every buffered row is written to state and read back); the core decodes them with
            # _rows_of when the watermark releases them.
            late_rows = process(ctx, key_rows)
            if late_rows:
                late.extend((out.row[1], out.reason, out.watermark) for out in late_rows)
            self._advance(ctx, key_text, index, matched)
        self._due(watermark, index, by_key, matched)
        index.store(self._index_state, self._handle, self.end_ms)
        yield from self._budget_dead()
        yield _frame(self._output, matched, late, len(batch))

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        index = _Index.load(self._index_state)
        index.fired(expiredTimerInfo.getExpiryTimeInMs())
        matched: list[dict[str, Any]] = []
        self._due(self._watermark(timerValues), index, {}, matched)
        index.store(self._index_state, self._handle, self.end_ms)
        yield from self._budget_dead()
        if matched:
            yield _frame(self._output, matched, [], None)

    def _due(self, watermark: int, index: _Index, done: dict[str, Any], matched: list[dict[str, Any]]) -> None:
        """Run the watermark for every other key of the bucket with a core timer at or below it."""
        for key_text in index.due(watermark):
            if key_text not in done:
                self._advance(SparkKeyContext(None, _PackedEntry(self._keys, key_text), watermark), key_text, index, matched)

    def _advance(self, ctx: SparkKeyContext, key_text: str, index: _Index, matched: list[dict[str, Any]]) -> None:
        """The core's ``on_watermark``, the end-of-input timer, one state write, the key's entry in the index."""
        for out in self._op.on_watermark(ctx):
            if out.__class__ is BudgetRejected:  # the key ran out of its match budget: a dead letter, counted
                self._rejected.append((out.row.get(_TEXT_KEY) or json.dumps(out.row, default=str), out.reason))
            else:
                matched.append(out.row)
        # A key holding state must see the final watermark (the core then finishes the partition); the
        # core's own timers cover buffered rows and WITHIN deadlines only.
        if any(ctx.get(name) is not None for name in _CORE_STATE):
            ctx.register_timer(self.end_us)
        else:
            ctx.delete_timer(self.end_us)
        ctx.expire_timers()  # on_watermark has run for every timer at or below the watermark
        ctx.commit()
        index.set(key_text, ctx.smallest_timer())

    def _budget_dead(self) -> Iterator[pd.DataFrame]:
        if self._rejected:
            rows, reasons = zip(*self._rejected, strict=True)
            self._rejected = []
            yield _dead_frame(self._output, list(rows), list(reasons), BUDGET_DEAD)

    def close(self) -> None:
        pass


class _PackedEntry(_MapEntry):
    """A key's MapState cell, LZ4-compressed above :data:`_PACK_MIN` bytes (see "Buckets" in the module docstring).

    A key's cell holds its buffered rows: hundreds of kB per key and micro-batch at 250 k rows per batch.
    Every byte of it crosses the state server twice (pickled by Pyrolite in the JVM towards Python) and is
    written to RocksDB and its checkpoint; the wire text compresses ~4x (measured: a 224 kB cell to 59 kB
    in 0.3 ms, back in 0.1 ms).  A cell starts with
    :data:`_PACKED` when compressed; any other cell is the state blob itself (:mod:`timeweave.core.state_codec`:
    magic, version, checksum), which the state codec checks after decompression too.

    >>> class Map(dict):
    ...     getValue, updateValue = dict.get, dict.__setitem__
    >>> m = Map(); e = _PackedEntry(m, "k"); e.update((b"x" * 5000,))
    >>> len(m[("k",)][0]) < 100, e.get() == (b"x" * 5000,)
    (True, True)
    """

    __slots__ = ()

    def get(self) -> tuple | None:
        stored = super().get()  # (a big cell is read from its pieces first)
        if not stored or stored[0] is None or stored[0][:1] != _PACKED:
            return stored
        data = stored[0]
        size = int.from_bytes(data[1:9], "little")
        if len(data) < 9 or size > _PACK_MAX:
            raise StateFormatError(f"malformed state: a compressed cell of {size} bytes", where=self.where)
        try:
            return (_LZ4.decompress(memoryview(data)[9:], decompressed_size=size, asbytes=True),)
        except (OSError, ValueError, pa.ArrowException) as exc:  # damaged bytes: the checksum could not be reached
            raise StateFormatError(f"malformed state: the compressed cell does not decompress ({exc})",
                                   where=self.where) from exc

    def update(self, value: tuple) -> None:
        data = value[0]
        if len(data) >= _PACK_MIN:
            data = _PACKED + len(data).to_bytes(8, "little") + _LZ4.compress(data, asbytes=True)
        super().update((data,))  # in pieces when still big


#: The first byte of a compressed cell (a state blob starts with b"T"), then the size (8 bytes), then LZ4 frames.
_PACKED = b"\x01"
_PACK_MIN = 2048
#: A cell's largest decompressed size accepted (Spark's value limit): a damaged size must not allocate more.
_PACK_MAX = 2**31
_LZ4 = pa.Codec("lz4")


def _time_of(row: Any) -> int:
    """A row's event time (µs): a buffered ``(time, text)`` pair's first item, a decoded row's hidden key."""
    return row[0] if row.__class__ is tuple else row[_TIME_KEY]


def _old_row(row: dict[str, Any], decode: Callable[[list[str]], list[dict[str, Any]]]) -> dict[str, Any]:
    """A row buffered by an earlier version of this layout: ``{time, text}`` (decoded now) or already decoded."""
    text = row.get(_OLD_TEXT_KEY)
    if text is None:
        return row
    decoded = decode([text])[0]
    decoded[_TIME_KEY] = row[_TIME_KEY]
    decoded[_TEXT_KEY] = text
    return decoded


def rows_by_key(batch: pd.DataFrame) -> dict[str, list[tuple[int, str]]]:
    """A bucket's rows as ``(tw_time, tw_row)`` pairs by ``tw_key`` (keys in order of first arrival, each key's
    rows in arrival order): one stable sort of the key codes in numpy, no Python step per row but the pairing.

    >>> rows_by_key(pd.DataFrame({KEY_TEXT: ["a", "b", "a"], TIME: [1, 2, 3], ROW: ["x", "y", "z"]}))
    {'a': [(1, 'x'), (3, 'z')], 'b': [(2, 'y')]}
    """
    codes, keys = pd.factorize(batch[KEY_TEXT].to_numpy(), use_na_sentinel=False)
    times, texts = batch[TIME].to_numpy(), batch[ROW].to_numpy()
    if len(keys) == 1:
        return {keys[0]: list(zip(times.tolist(), texts.tolist(), strict=True))}
    order = np.argsort(codes, kind="stable")
    pairs = list(zip(times[order].tolist(), texts[order].tolist(), strict=True))
    ends = np.cumsum(np.bincount(codes, minlength=len(keys))).tolist()
    return {key: pairs[start:end] for key, start, end in zip(keys.tolist(), [0, *ends[:-1]], ends, strict=True)}


def _packs_with_time(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The packing step (:func:`timeweave.spark.streaming.pack_rows`) with each pack's largest event time.

    That maximum is the watermark's input: the same maximum the rows give.  A dead letter's time is year 1
    (as its unpacked row's was), below any data row's, so it never is the maximum of a pack with data.
    """
    return pack_rows(batches, latest=TIME)


# =================================================================================================
# Building the stream
# =================================================================================================
@dataclass(frozen=True)
class StreamingMatch:
    """A streaming MATCH_RECOGNIZE: the tagged stream and how to split each of its micro-batches.

    Write :attr:`stream` with ``foreachBatch`` and call :meth:`split` on every batch (persist the batch
    first: each output reads it, and recomputing it would re-run the stateful operator).
    """

    stream: DataFrame
    plan: MatchPlan

    @property
    def spec(self) -> ClauseSpec:
        return self.plan.spec

    @property
    def schema(self) -> T.StructType:
        """The main output's schema: the batch door's."""
        return self.plan.schema

    def split(self, batch: DataFrame) -> BatchOutputs:
        """Main, late and dead-letter DataFrames of one micro-batch of :attr:`stream`."""
        kind = F.col(KIND)
        main = batch.where(kind == MATCHED).select(*[
            F.col(f"{COLUMN}{i}").alias(f.name) for i, f in enumerate(self.plan.schema.fields)
        ])
        late = batch.where(kind == LATE).select(
            _from_wire(F.col(IN_ROW), self.plan.input_schema).alias("__tw_in"),
            F.col(REASON).alias("reason"),
            F.timestamp_micros(F.col(WATERMARK)).alias("watermark"),
        ).select("__tw_in.*", "reason", "watermark")
        # a budget-rejected row travels as wire text: its dead letter is the input row's to_json, as for the others
        as_json = F.to_json(_from_wire(F.col(IN_ROW), self.plan.input_schema))
        dead = batch.where(kind.isin(DEAD, BUDGET_DEAD)).select(
            F.col(SIDE).alias("side"), F.col(REASON).alias("reason"),
            F.when(kind == BUDGET_DEAD, as_json).otherwise(F.col(IN_ROW)).alias("row"),
        )
        return BatchOutputs(main, late, dead)


def _quoted(name: str) -> str:
    return quote(name)


def _key_columns(df: DataFrame, columns: tuple[str, ...] | list[str], buckets: int) -> list[Column]:
    """``tw_b`` (the PARTITION BY values' hash bucket) and ``tw_key`` (the values as one string, never NULL).

    Equal keys (as the batch door groups them) give equal strings: one string column is taken as is
    behind a marker (NULL is its own key, ``n``); anything else is the JSON of the values, floating
    point values with ``+ 0.0`` first so that -0.0 and 0.0 are one key.  No PARTITION BY: one key.
    """
    if not columns:
        return [F.lit(0).alias(BUCKET), F.lit("").alias(KEY_TEXT)]
    parts = []
    for name in columns:
        column = F.col(_quoted(name))
        data_type = df.schema[name].dataType
        if isinstance(data_type, (T.FloatType, T.DoubleType)):
            column = column + F.lit(0.0).cast(data_type)
        parts.append(column)
    if len(parts) == 1 and isinstance(df.schema[columns[0]].dataType, T.StringType):
        text = F.when(parts[0].isNull(), F.lit("n")).otherwise(F.concat(F.lit("s"), parts[0]))
    else:
        text = F.to_json(F.struct(*[c.alias(f"k{i}") for i, c in enumerate(parts)]), JSON_OPTIONS)
    return [F.pmod(F.xxhash64(*parts), F.lit(buckets)).cast("int").alias(BUCKET), text.alias(KEY_TEXT)]


def match_recognize_stream(
    df: DataFrame,
    clause: str | ClauseSpec,
    *,
    watermark: str = "0 seconds",
    heartbeat: DataFrame | None = None,
    buckets: int = DEFAULT_BUCKETS,
    budget: MatchBudget | None = None,
) -> StreamingMatch:
    """The streaming ``MATCH_RECOGNIZE (clause)`` of a streaming DataFrame (see the module docstring).

    The first ORDER BY column is the event time (TIMESTAMP, TIMESTAMP_NTZ, or integer µs), ascending;
    ``watermark`` is its allowed out-of-orderness (one ``<n> <unit>`` delay, e.g. ``"5 seconds"``); ``heartbeat`` is an optional
    stream with one timestamp column whose rows move the watermark (the job's ``flush`` writes one at
    9999-12-31 23:59:59.999: the end of input).  ``buckets`` is how many hash buckets the PARTITION BY keys are
    spread over (the operator's grouping key; part of the state layout: resume a checkpoint with the
    same value).  ``budget`` bounds each key's matching (:class:`~timeweave.core.pattern.MatchBudget`; None: the
    default): a key that runs out is poisoned, its rows go to the dead letter with the reason.  The clause and
    its columns are checked now, before any Spark job.

    Example::

        m = match_recognize_stream(ticker_stream, '''PARTITION BY symbol ORDER BY rowtime
                MEASURES FIRST(A.rowtime) AS s, LAST(B.rowtime) AS e PATTERN (A B+)
                DEFINE B AS B.price > PREV(B.price)''', watermark="5 seconds")
        def write(batch, batch_id):
            out = m.split(batch.persist())
            out.main.write.mode("append").parquet("out/matches")
        m.stream.writeStream.foreachBatch(write).option("checkpointLocation", "chk").start()
    """
    # Uncorrelated subqueries run once, now (each start of the job runs them again), as in the batch doors.
    spec = inline_subqueries(df.sparkSession, clause)
    check_buckets(buckets, "match_recognize")
    bound = plan(spec, df.schema)
    MatchRecognizeOperator(spec)  # the core's own checks: ORDER BY present, event time ascending
    time_column, _, _ = bound.order_columns[0]
    time_type = df.schema[time_column].dataType
    if not isinstance(time_type, _TIME_TYPES):
        raise SpecError(
            "order_by", f"the event time column {time_column} must be a TIMESTAMP (or integer µs), "
            f"found {time_type.simpleString()}", where="match_recognize",
        )
    for name in LATE_COLUMNS:
        if name.lower() in (c.lower() for c in df.columns):
            raise SpecError("input", f"column '{name}' is added by the late output; rename the input column",
                            where="match_recognize")
    # The flush heartbeat at END_OF_INPUT moves the watermark to END_OF_INPUT - delay: the end of input.
    end_ms = end_of_input_ms(parse_duration(watermark, "watermark") // 1000)
    time = F.col(_quoted(time_column))
    event_ts = F.timestamp_micros(time.cast("long")) if isinstance(time_type, T.IntegralType) else time.cast("timestamp")
    # One projection over the input, dead letters included (see "Dead letters" in the module docstring).
    dead = time.isNull()
    original = F.to_json(F.struct(*[F.col(_quoted(c)) for c in df.columns]))
    rows = df.select(
        *_key_columns(df, bound.partition_columns, buckets),
        F.when(dead, F.lit(DEAD_ROW)).otherwise(F.lit(DATA_ROW)).cast("tinyint").alias(OP),
        F.unix_micros(F.when(dead, F.lit(_DEAD_TS).cast("timestamp")).otherwise(event_ts)).alias(TIME),
        F.when(dead, original).otherwise(_json(df)).alias(ROW),
    )
    # Packs (see the module docstring): the operator's input is one row per source partition and bucket.
    internal = rows.mapInArrow(_packs_with_time, PACKS_WITH_TIME_SCHEMA).select(
        BUCKET, F.lit(DATA_ROW).cast("tinyint").alias(OP), F.timestamp_micros(F.col(PACK_TIME)).alias(_TS), PACK,
    )
    if heartbeat is not None:
        # Heartbeats travel in bucket 0, never a NULL bucket (see _heartbeat; measured here: a flush
        # batch's data started new, empty partitions when the heartbeat's bucket was NULL).
        beats = _heartbeat(heartbeat, internal)
        internal = internal.unionByName(beats)
    # The operator gets the event times inside the packs only: no input column carries watermark metadata,
    # so Spark's late-row filter (event_time <= watermark) does not apply; the core decides lateness.
    internal = internal.withWatermark(_TS, watermark).drop(_TS)
    timezone = df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    matched = internal.groupBy(BUCKET).transformWithStateInPandas(
        statefulProcessor=MatchRecognizeProcessor(spec.text or str(spec), df.schema.json(), timezone, end_ms, budget),
        outputStructType=tagged_schema(bound),
        outputMode="Append",
        timeMode="EventTime",
    )
    return StreamingMatch(matched, bound)


__all__ = [
    "END_OF_INPUT_US",
    "LATE_COLUMNS",
    "BatchOutputs",
    "MatchRecognizeProcessor",
    "StreamingMatch",
    "core_watermark",
    "match_recognize_stream",
    "row_decoder",
    "rows_decoder",
    "tagged_schema",
]
