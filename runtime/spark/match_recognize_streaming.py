"""Streaming MATCH_RECOGNIZE: the core :class:`~timeweave.core.pattern.MatchRecognizeOperator` per PARTITION BY
key on the streaming host (:mod:`timeweave.spark.host`, event time).

A registration: what is MATCH_RECOGNIZE's own.  Lateness, the order rows are matched in, WITHIN pruning and
the end of input are the core operator's; the output schema is the batch door's
(:func:`timeweave.spark.match_recognize.plan`); buckets, the state bridge, packs, heartbeats and the
watermark are the host's.  What is left here:

1. **The elements.**  Every input row becomes ``tw_b``, ``tw_key`` (the PARTITION BY values as one canonical
   string, marked: NULL is an ordinary key, as in batch), ``tw_op`` (data row or dead letter), ``tw_time``
   (event time, µs since the epoch) and ``tw_row`` (the whole input row in the host's wire format, decoded in
   Python with the input schema into the values the batch door's Arrow conversion gives: session-local naive
   datetimes, ``Decimal``, NULL vs NaN kept).  The rows are packed with each pack's largest event time
   (:func:`timeweave.spark.host.packs.packs_with_latest_time`).
2. **Watermark.**  ``withWatermark`` on the packs' largest event time (``watermark_delay`` = allowed
   out-of-orderness; Spark's watermark is the maximum over rows, so over packs it is the same); heartbeat
   rows are unioned in (after packing, as rows without a pack) before it.
3. **The state.**  Layout 2 of :data:`timeweave.core.pattern.operator.LAYOUT` in the bucket's MapState
   ``timeweave_mr_keys`` and index ``timeweave_mr_index`` (:data:`STATE`).  A key's rows of the micro-batch go
   to the core in one call (``process_elements``), buffered undecoded, as ``(event time, tw_row text)`` pairs
   (far cheaper to store into state and back than a decoded row's datetimes and dicts); the core's
   ``rows_of`` hook decodes them when the watermark releases them, all of a key's released rows in one call
   (:func:`rows_decoder`: one JSON parse, column-wise conversions).  A key's cell is LZ4-compressed once it
   reaches 2 kB (:class:`~timeweave.spark.host.state.PackedEntry`): it holds the key's buffered rows, and
   every byte of it crosses the state server both ways and goes to RocksDB and the checkpoint (~4x fewer
   bytes).  The earlier per-key ValueState ``timeweave_mr`` layout cannot be resumed.
4. **End of input.**  A watermark at or past :data:`timeweave.jobs.streaming.END_OF_INPUT` (the job's
   ``flush`` heartbeat, 10000-01-01 00:00:00.000 UTC: past every row's time) minus the watermark delay is the final watermark: it reaches
   the core as ``END_OF_TIME``, so the core's :meth:`~timeweave.core.pattern.MatchRecognizeOperator.finish`
   closes the partition (``$`` matches, greedy attempts settle, WITH UNMATCHED ROWS emits the tail) exactly
   as the batch door does at the end of a partition.  Every key holding state keeps an extra core timer at
   that time (the host's ``timer_at_end``), so each key sees it.  Rows arriving after the flush are late.

**Dead letters** (rows with a NULL event time: they can never be ordered) travel through the operator
too, in the same projection of the input: ``tw_op`` ``DEAD_ROW``, ``tw_row`` the original row as ``to_json``
(the dead-letter shape), ``tw_ts`` year 1 (never moves the watermark); the host emits them at once
with the reason.

**Partial matches at end of input.**  Flink discards a partial match when its input ends (only completed
matches are ever emitted).  timeweave closes the partition instead, so a streaming job flushed at end of
input gives the *same rows as the batch door* (the cross-door invariant).  Without a flush nothing is
discarded either: the attempt stays in state until more rows, a WITHIN deadline or the flush decide it.

Outputs (one tagged stream split per micro-batch by :meth:`StreamingMatch.split`, written by the host's
writer, :mod:`timeweave.spark.host.writer`):

* main: exactly the batch door's output schema and rows (ONE ROW or ALL ROWS PER MATCH);
* late: the input columns + ``reason`` + ``watermark``;
* dead letter: ``side`` (``input``), ``reason``, ``row`` (the input row as JSON), the temporal join's shape;
* one ``stats`` row per invocation with the bucket's input count (the job's ``rows_in`` metric).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessorHandle

from timeweave.core.errors import SpecError
from timeweave.core.event_time import END_OF_INPUT_MS, end_of_input_ms, watermark_as_time, watermark_us
from timeweave.core.operator import StateLayout
from timeweave.core.pattern import (
    BudgetRejected,
    ClauseSpec,
    MatchBudget,
    MatchRecognizeOperator,
    null_event_time_reason,
    parse_clause,
)
from timeweave.spark.host.packs import PACK, PACK_TIME, PACKS_WITH_TIME_SCHEMA, pack_rows, unpack  # noqa: F401 (unpack: tests)
from timeweave.spark.host.processor import HostProcessor, StateVariables
from timeweave.spark.host.schema import DEFAULT_BUCKETS, KEY_TEXT, MALFORMED_ROW, check_buckets
from timeweave.spark.host.state import PACKED as _PACKED  # noqa: F401 (the compressed cell's marker: tests)
from timeweave.spark.host.state import PackedEntry, SparkKeyContext
from timeweave.spark.host.stream import DEAD_ROW, BatchOutputs, dead_letters, delay_ms, keyed_packs, run_operator
from timeweave.spark.host.wire import from_wire
from timeweave.spark.host.writer import OutputCounts
from timeweave.spark.match_recognize import MatchPlan, _arrow_schema, _to_arrow, plan
from timeweave.spark.match_recognize_functions import visible_columns, with_row_functions
from timeweave.spark.render import quote
from timeweave.spark.subqueries import inline_subqueries

# -- the internal (operator input) schema: plain identifiers (PySpark rebuilds input rows as namedtuples) --
TIME = "tw_time"
ROW = "tw_row"

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

#: Where the operator's state lives (with :data:`timeweave.core.pattern.operator.LAYOUT`: the checkpoint layout):
#: per bucket, PARTITION BY key (``tw_key``) -> the key's LZ4-compressed cell, and the bucket's timer index.
STATE = StateVariables("timeweave_mr_keys", "timeweave_mr_index", PackedEntry)
#: The compressed cell (:class:`timeweave.spark.host.state.PackedEntry`; this name: earlier releases).
_PackedEntry = PackedEntry
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
        wall = _wall_clock(zone)
        return lambda v: wall((datetime.fromisoformat(v) - _EPOCH) // _MICROSECOND)
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
        return _wall_clock(zone)
    if isinstance(data_type, T.DateType):
        return lambda v: date.fromordinal(_EPOCH_ORDINAL + v)
    return _decoder(data_type, zone)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def _wall_clock(zone: Any) -> Callable[[int], datetime]:
    """µs since the epoch -> the instant's wall clock in ``zone`` (naive), as the batch door's Arrow conversion.

    Not through a UTC datetime only: east of Greenwich, 0001-01-01 00:00 on the zone's clock is an instant of
    year 0 UTC, which a Python datetime cannot hold (OverflowError: the streaming job died on it, issue 20);
    such an instant takes the zone's offset at the range's end it is beyond (its local mean time there).

    >>> from zoneinfo import ZoneInfo
    >>> _wall_clock(ZoneInfo("Asia/Tokyo"))(-62135630339000000)
    datetime.datetime(1, 1, 1, 0, 0)
    """
    first, last = zone.utcoffset(datetime(1, 1, 2)), zone.utcoffset(datetime(9999, 12, 30))

    def wall(v: int) -> datetime:
        try:
            return (_EPOCH + timedelta(microseconds=v)).astimezone(zone).replace(tzinfo=None)
        except OverflowError:  # the instant is outside datetime's UTC range; its wall clock may be inside
            return _EPOCH_NAIVE + (timedelta(microseconds=v) + (first if v < 0 else last))

    return wall
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
@dataclass
class _Sink:
    """One handler call's outputs: matched rows, late rows, budget-rejected rows, the input count (None: none)."""

    matched: list[dict[str, Any]] = field(default_factory=list)
    late: list[tuple[str, str, int]] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (wire text, reason)
    n_in: int | None = None


class MatchRecognizeProcessor(HostProcessor):
    """The streaming host's processor of MATCH_RECOGNIZE: one bucket of PARTITION BY keys, one core
    :class:`MatchRecognizeOperator` state per key.

    Picklable and small: the clause text and the input schema (JSON); the operator, the row decoder
    and the output layout are rebuilt in :meth:`open` on the executor.
    """

    state = STATE
    dead_ops = (DEAD_ROW, MALFORMED_ROW)  # MALFORMED_ROW: a source's malformed record (keyed_packs)
    timer_at_end = True  # every key holding state sees the final watermark: the core closes its partition

    def __init__(self, clause: str, input_json: str, timezone: str, end_ms: int = END_OF_INPUT_MS,
                 budget: MatchBudget | None = None) -> None:
        self.clause = clause
        self.budget = budget  # None: the default MatchBudget
        self.input_json = input_json
        self.timezone = timezone
        self.end_ms = end_ms  # the watermark the end-of-input heartbeat produces (ms)

    def open(self, handle: StatefulProcessorHandle) -> None:
        schema = T.StructType.fromJson(json.loads(self.input_json))
        bound = plan(parse_clause(self.clause), schema)
        self._op = MatchRecognizeOperator(bound.spec, time_of=_time_of, rows_of=self._rows_of,
                                          budget=getattr(self, "budget", None))
        self._decode = rows_decoder(schema, self.timezone)
        self._output = _Output.of(bound, self.timezone)
        self._dead_reason = null_event_time_reason(bound.order_columns[0][0])

    @property
    def layout(self) -> StateLayout:
        return self._op.layout

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

    def new_sink(self) -> _Sink:
        return _Sink()

    def dead_frame(self, dead: pa.Table) -> pd.DataFrame:
        return _dead_frame(self._output, *dead_letters(dead, self._dead_reason))

    def group(self, table: pa.Table, sink: _Sink) -> list[tuple[str, Any]]:
        sink.n_in = len(table)
        # Rows are buffered undecoded, as (time, wire text) pairs: a fraction of a decoded row's encoding cost
        # (every buffered row is written to state and read back); the core decodes them with _rows_of when the
        # watermark releases them.
        return list(rows_by_key(pd.DataFrame({
            name: table.column(name).to_numpy(zero_copy_only=False) for name in (KEY_TEXT, TIME, ROW)
        })).items())

    def process(self, ctx: SparkKeyContext, elements: list[tuple[int, str]], sink: _Sink) -> None:
        late_rows = self._op.process_elements(ctx, elements)
        if late_rows:
            sink.late.extend((out.row[1], out.reason, out.watermark) for out in late_rows)

    def fire(self, ctx: SparkKeyContext, sink: _Sink) -> None:
        for out in self._op.on_watermark(ctx):
            if out.__class__ is BudgetRejected:  # the key ran out of its match budget: a dead letter, counted
                sink.rejected.append((out.row.get(_TEXT_KEY) or json.dumps(out.row, default=str), out.reason))
            else:
                sink.matched.append(out.row)

    def frames(self, sink: _Sink, always: bool) -> Iterator[pd.DataFrame]:
        if sink.rejected:
            rows, reasons = zip(*sink.rejected, strict=True)
            yield _dead_frame(self._output, list(rows), list(reasons), BUDGET_DEAD)
        if always or sink.matched:
            yield _frame(self._output, sink.matched, sink.late, sink.n_in)


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

    #: The batch's cache keeps Spark's default (compressed columns).
    compress_cache: ClassVar[bool] = True

    @property
    def spec(self) -> ClauseSpec:
        return self.plan.spec

    def count_columns(self) -> list[Column]:
        """The batch's counts, observed by the host's writer (:class:`~timeweave.spark.host.writer.TaggedWriter`)."""
        kind = F.col(KIND)
        return [
            F.count_if(kind == MATCHED).alias("matched"),
            F.count_if(kind == LATE).alias("late"),
            F.count_if(kind == DEAD).alias("dead"),
            # rows of keys over their match budget: input rows (counted in n_in) sent to the dead letter
            F.count_if(kind == BUDGET_DEAD).alias("over_budget"),
            F.coalesce(F.sum(F.when(kind == STATS, F.col(N_IN))), F.lit(0)).alias("n_in"),
        ]

    def counts(self, observed: Mapping[str, Any]) -> OutputCounts:
        """:meth:`count_columns`' values as the writer's counts (dead letters with a NULL time are input rows)."""
        dead = int(observed["dead"])
        return OutputCounts({"rows_in": int(observed["n_in"]) + dead}, main=int(observed["matched"]),
                            late=int(observed["late"]), dead=dead + int(observed["over_budget"]))

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
        own = visible_columns(self.plan.input_schema.fieldNames())  # no computed function's hidden column
        late = batch.where(kind == LATE).select(
            from_wire(F.col(IN_ROW), self.plan.input_schema).alias("__tw_in"),
            F.col(REASON).alias("reason"),
            F.timestamp_micros(F.col(WATERMARK)).alias("watermark"),
        ).select(*[F.col("__tw_in")[name].alias(name) for name in own], "reason", "watermark")
        # a budget-rejected row travels as wire text: its dead letter is the input row's to_json, as for the others
        row = from_wire(F.col(IN_ROW), self.plan.input_schema)
        as_json = F.to_json(F.struct(*[row[name].alias(name) for name in own]))
        dead = batch.where(kind.isin(DEAD, BUDGET_DEAD)).select(
            F.col(SIDE).alias("side"), F.col(REASON).alias("reason"),
            F.when(kind == BUDGET_DEAD, as_json).otherwise(F.col(IN_ROW)).alias("row"),
        )
        return BatchOutputs(main, late, dead)


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
    10000-01-01 00:00:00.000 UTC, past every row's time: the end of input).  ``buckets`` is how many hash buckets the PARTITION BY keys are
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
    df = with_row_functions(df, spec)  # Spark computes the per-row function calls as hidden columns
    bound = plan(spec, df.schema)
    MatchRecognizeOperator(bound.spec)  # the core's own checks: ORDER BY present, event time ascending
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
    end_ms = end_of_input_ms(delay_ms(watermark, "watermark"))
    time = F.col(quote(time_column))
    event_ts = F.timestamp_micros(time.cast("long")) if isinstance(time_type, T.IntegralType) else time.cast("timestamp")
    # One projection over the input, dead letters included, packed, heartbeats, watermark (see the module
    # docstring and host.stream.keyed_packs).
    internal = keyed_packs(df, bound.partition_columns, event_ts, buckets, heartbeat, watermark)
    timezone = df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    processor = MatchRecognizeProcessor(spec.text or str(spec), df.schema.json(), timezone, end_ms, budget)
    matched = run_operator(internal, processor, tagged_schema(bound), event_time=True)
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
