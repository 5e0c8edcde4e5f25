"""DataStream windows on Spark: the job author's pipeline builder, its streaming run on the host and its bounded run.

The core is :mod:`timeweave.core.datastream` (Flink's ``WindowOperator``: assigners, triggers, evictors, window
functions, allowed lateness, late output, dead letters); this module is its Spark door::

    import timeweave
    from timeweave.core.datastream import Tumbling

    job = (timeweave.stream(bids, time="ts", watermark="1 minute")
           .key_by("item")
           .window(Tumbling.of("10 min"))
           .allowed_lateness("5 min")
           .reduce(lambda a, b: {**a, "price": a["price"] + b["price"]}))
    query = job.start(output="out/sums", checkpoint="chk/sums", trigger={"availableNow": True})
    main, late, dead = job.run_batch()            # the same operator over a static DataFrame

**The builder.**  :func:`stream` gives a :class:`Pipeline`, a frozen spec: each step returns a new one and checks
what it can at once (the step's own arguments, its place in the chain, the combination with earlier steps through
the core operator's own checks), with errors naming the step (``step '.evictor'``).  The chain is
``key_by`` (one column or several; or ``window_all``), ``window``, then any of ``trigger`` / ``evictor`` /
``allowed_lateness``, then one window function (``reduce`` / ``aggregate`` / ``process`` /
``aggregate(agg, process)``), then a terminal: :meth:`Pipeline.start` or :meth:`Pipeline.run_batch`.  Nothing
runs a Spark job before the terminal.

**Elements and results.**  A window function sees each input row as a ``dict`` (column -> value): TIMESTAMP
values as naive UTC ``datetime``, DATE as ``date``, DECIMAL as ``Decimal``, the rest as Spark's Python values.
Each value a firing emits is one output row of ``output_schema`` (a DDL string or a ``StructType``; a ``reduce``
without one emits rows of the input's schema): a ``dict`` by column name (absent names are NULL, unknown names
an error), a ``tuple`` / ``list`` / ``Row`` by position (exactly as many values as columns), or, for a
one-column schema, the bare value.  A result that does not fit (an unknown name, a wrong count, a value of the
wrong type) is a dead letter naming the column, and the job goes on.  Window contents, accumulators and
process state are kept in the state codec (plain data; never pickle); the user's functions travel to the
workers inside the operator, cloudpickled by Spark's own UDF mechanism (code the job author gave, not stored
data).

**Outputs.**

* main, ``emit="append"`` (the default): ``window_start``, ``window_end`` (TIMESTAMP; NULL for the global
  window), ``firing_kind`` (``early`` / ``on_time`` / ``late``), ``firing_sequence`` (the window's firing count
  before this one: 0 first), then the ``output_schema`` columns.  Append-only: every firing, early and late ones
  included, is a row (Flink's DataStream output; a trigger that fires a window more than once is allowed, and a
  reader tells a refinement by its ``firing_sequence``);
* main, ``emit="retract"`` or ``"upsert"``: the changelog of the table of window results
  (:mod:`timeweave.core.datastream.changelog`: a window's first firing ``+I``, a later firing replacing it
  ``-U`` / ``+U`` (retract) or ``+U`` (upsert), an unchanged result nothing, the sessions a merge absorbed
  ``-D``, a purge a new pane): ``window_start``, ``window_end``, ``pane`` (0, or the firing sequence a purge
  started the window over at), the ``output_schema`` columns, ``op``.  One change per window and step (micro-batch
  or arrival step).  An upsert row's key is the key columns, the window and the pane: the key columns must be
  result columns.  A changelog pipeline keeps its state apart (:data:`CHANGELOG_STATE`): an append checkpoint
  does not resume as one;
* late: the input columns + ``reason`` + ``watermark`` (TIMESTAMP, at the row's arrival): rows every window of
  which had been cleaned up (``time + allowed_lateness <= watermark``);
* dead letter: ``side`` (``input``: a row; ``window``: a firing), ``reason`` (the step that failed and the
  exception text, or the NULL event time) and ``row`` (the input row as JSON; for a firing, its key and
  window as JSON).

**Streaming** (:meth:`Pipeline.start`, :meth:`Pipeline.streaming`): the operator on the keyed-operator host
(:mod:`timeweave.spark.host`) as the window TVF aggregate runs there (:mod:`timeweave.spark.window_streaming`):
packs, the state bridge (MapState ``timeweave_ds_keys``, index ``timeweave_ds_index``, LZ4 cells), event-time
timers, the watermark ``watermark`` behind the largest event time, heartbeats, the tagged outputs written by the
host's one writer.  Processing time: Spark's ``transformWithState`` runs in one timer mode (event time here), so
the host sets the key context's ``processing_time`` to Spark's processing time of each invocation; a key's
processing-time timers fire when the key is next invoked (it gets rows, or one of its event-time timers is due),
not on the wall clock by themselves.

**Bounded run** (:meth:`Pipeline.run_batch`): the same operator over a static DataFrame.  Arrival order: rows
arrive in steps ordered by the ``arrival`` column (equal values: one step, like one micro-batch); within a
step, in the DataFrame's row order.  Before a step the watermark is the largest event time of every earlier step
minus ``watermark`` (Spark's rule for micro-batches); after the last step the input ends (every window fires).
Without ``arrival`` the whole DataFrame is one step: no row is late.  A stream whose micro-batches are the
steps gives the same main, late and dead-letter rows when flushed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessorHandle
from pyspark.sql.streaming.stateful_processor import TimerValues
from pyspark.sql.window import Window as SparkWindow

from timeweave.core.datastream import GLOBAL_WINDOW, AggregateFunction, Global, ProcessWindowFunction
from timeweave.core.datastream import aggregate as ds_aggregate
from timeweave.core.datastream import process as ds_process
from timeweave.core.datastream import reduce as ds_reduce
from timeweave.core.datastream.assigners import Assigner, Session, Sliding, Tumbling
from timeweave.core.datastream.changelog import WindowChangelog
from timeweave.core.datastream.evictors import Evictor
from timeweave.core.datastream.functions import WindowFunction
from timeweave.core.datastream.operator import DeadLetter, Firing, LateElement, WindowOperator
from timeweave.core.datastream.triggers import Trigger
from timeweave.core.errors import SpecError
from timeweave.core.event_time import END_OF_INPUT_MS, end_of_input_ms, watermark_as_time, watermark_us
from timeweave.core.operator import StateLayout
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, InMemoryKeyContext
from timeweave.core.updates.encoder import Change
from timeweave.core.updates.modes import ChangelogMode
from timeweave.core.windows.late import format_ms
from timeweave.core.windows.spec import duration_ms
from timeweave.spark.host.processor import HostProcessor, StateVariables
from timeweave.spark.host.schema import DEFAULT_BUCKETS, KEY_TEXT, MALFORMED_ROW, OP, ROW, TIME, check_buckets
from timeweave.spark.host.state import PackedEntry, SparkKeyContext
from timeweave.spark.host.stream import (
    DATA_ROW,
    DEAD_ROW,
    BatchOutputs,
    dead_letters,
    delay_ms,
    keyed_packs,
    run_operator,
)
from timeweave.spark.host.wire import from_wire, key_columns, to_wire
from timeweave.spark.host.writer import OutputCounts
from timeweave.spark.render import quote
from timeweave.spark.window_streaming import _json_value, rows_decoder

WHERE = "DataStream pipeline"

#: Where the operator's state lives (with :data:`timeweave.core.datastream.operator.LAYOUT`: the checkpoint layout).
STATE = StateVariables("timeweave_ds_keys", "timeweave_ds_index", PackedEntry)
#: Where a changelog pipeline's state lives (its layout adds the emitted results: an append checkpoint is not one).
CHANGELOG_STATE = StateVariables("timeweave_dsc_keys", "timeweave_dsc_index", PackedEntry)
#: The columns every main row starts with; then the user's ``output_schema``.
FIRING_COLUMNS = ("window_start", "window_end", "firing_kind", "firing_sequence")
#: Columns the late output adds to the input columns.
LATE_COLUMNS = ("reason", "watermark")
#: The output encodings (``emit=``): every firing a row, or the window results' changelog.
EMITS = ("append", "retract", "upsert")
#: The columns a changelog row starts with (then the user's ``output_schema``, then :data:`OP_COLUMN`).
CHANGELOG_COLUMNS = ("window_start", "window_end", "pane")
#: The changelog's op-code column (``+I`` / ``-U`` / ``+U`` / ``-D``), as the continuous GROUP BY writes it.
OP_COLUMN = "op"

# -- the tagged (operator output) schema ---------------------------------------------------------------------
KIND = "__tw_kind"
OUT = "__tw_out"  # a main row as a wire-format JSON object (the firing columns and the user's)
IN_ROW = "__tw_in_row"  # a late row's / dead row's wire text; a NULL-time dead letter's to_json; a firing's JSON
REASON = "__tw_reason"
SIDE = "__tw_side"
WATERMARK = "__tw_watermark"  # a late row's watermark at arrival (µs)
N_IN = "__tw_n_in"
MAIN, LATE, DEAD_WIRE, DEAD_JSON, STATS = "main", "late", "dead_wire", "dead_json", "stats"

_EPOCH = datetime(1970, 1, 1)
_EPOCH_DATE = date(1970, 1, 1)
_US = timedelta(microseconds=1)


def tagged_schema() -> T.StructType:
    """The operator's output: every output class in one row shape (split by :data:`KIND`)."""
    strings = (KIND, OUT, IN_ROW, REASON, SIDE)
    return T.StructType([*(T.StructField(n, T.StringType()) for n in strings),
                         T.StructField(WATERMARK, T.LongType()), T.StructField(N_IN, T.LongType())])


# =================================================================================================
# Elements in, result rows out
# =================================================================================================
def element_decoder(schema: T.StructType) -> Callable[[list[str]], list[dict[str, Any]]]:
    """Wire texts -> the dicts user functions see: TIMESTAMP as naive UTC ``datetime``, DATE as ``date``.

    >>> s = T.StructType([T.StructField("t", T.TimestampType()), T.StructField("d", T.DateType())])
    >>> element_decoder(s)(['{"t":1500000,"d":1}'])
    [{'t': datetime.datetime(1970, 1, 1, 0, 0, 1, 500000), 'd': datetime.date(1970, 1, 2)}]
    """
    decode = rows_decoder(schema)
    times = [f.name for f in schema.fields if isinstance(f.dataType, T.TimestampType)]
    dates = [f.name for f in schema.fields if isinstance(f.dataType, T.DateType)]

    def elements(texts: list[str]) -> list[dict[str, Any]]:
        rows = decode(texts)
        for name in times:
            for row in rows:
                if row[name] is not None:
                    row[name] = _EPOCH + row[name] * _US
        for name in dates:
            for row in rows:
                if row[name] is not None:
                    row[name] = _EPOCH_DATE + timedelta(days=row[name])
        return rows

    return elements


class ResultError(ValueError):
    """A window function's result that does not fit the output schema (the firing's dead letter)."""


_SUPPORTED = (T.StringType, T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType,
              T.DoubleType, T.DecimalType, T.TimestampType, T.DateType, T.BinaryType)
_RANGES = {T.ByteType: 2**7, T.ShortType: 2**15, T.IntegerType: 2**31, T.LongType: 2**63}


def check_output_schema(schema: T.StructType, step: str) -> None:
    """Refuse column types a result cannot be written as (nested values: arrays, maps and structs of the
    atomic types, without timestamps or dates inside)."""
    def nested_ok(t: T.DataType) -> bool:
        if isinstance(t, T.ArrayType):
            return nested_ok(t.elementType)
        if isinstance(t, T.MapType):
            return isinstance(t.keyType, T.StringType) and nested_ok(t.valueType)
        if isinstance(t, T.StructType):
            return all(nested_ok(f.dataType) for f in t.fields)
        return isinstance(t, _SUPPORTED) and not isinstance(t, T.TimestampType | T.DateType | T.BinaryType)

    for f in schema.fields:
        if isinstance(f.dataType, _SUPPORTED) or (not isinstance(f.dataType, _SUPPORTED) and nested_ok(f.dataType)):
            continue
        raise SpecError("output_schema", f"column {f.name!r} of type {f.dataType.simpleString()} cannot hold a "
                        "window function's result (atomic types, or arrays / maps / structs without timestamps and "
                        "dates inside)", where=f"{WHERE}, step '{step}'")


def _wire_value(value: Any, t: T.DataType, column: str) -> Any:
    """A result value as its wire JSON value (:mod:`timeweave.spark.host.wire`), or :class:`ResultError`."""
    if value is None:
        return None

    def wrong(expected: str) -> ResultError:
        return ResultError(f"column {column!r} ({t.simpleString()}) expects {expected}, got {type(value).__name__} "
                           f"{value!r:.60}")

    if isinstance(t, T.StringType):
        if not isinstance(value, str):
            raise wrong("a str")
        return value
    if isinstance(t, T.BooleanType):
        if not isinstance(value, bool):
            raise wrong("a bool")
        return value
    if isinstance(t, tuple(_RANGES)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise wrong("an int")
        bound = _RANGES[type(t)]
        if not -bound <= int(value) < bound:
            raise ResultError(f"column {column!r} ({t.simpleString()}): {value} is out of range")
        return int(value)
    if isinstance(t, T.FloatType | T.DoubleType):
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            raise wrong("a float")
        return float(value)
    if isinstance(t, T.DecimalType):
        if isinstance(value, bool) or not isinstance(value, Decimal | int):
            raise wrong("a Decimal or an int")
        scaled = Decimal(value).quantize(Decimal(1).scaleb(-t.scale))
        if len(scaled.as_tuple().digits) > t.precision and scaled != 0:
            raise ResultError(f"column {column!r} ({t.simpleString()}): {value} does not fit")
        return scaled
    if isinstance(t, T.TimestampType):
        if not isinstance(value, datetime):
            raise wrong("a datetime")
        naive = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value
        return (naive - _EPOCH) // _US
    if isinstance(t, T.DateType):
        if isinstance(value, datetime) or not isinstance(value, date):
            raise wrong("a date")
        return (value - _EPOCH_DATE).days
    if isinstance(t, T.BinaryType):
        if not isinstance(value, bytes | bytearray):
            raise wrong("bytes")
        import base64

        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(t, T.ArrayType):
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
            raise wrong("a list")
        return [_wire_value(v, t.elementType, f"{column}[]") for v in value]
    if isinstance(t, T.MapType):
        if not isinstance(value, Mapping):
            raise wrong("a dict")
        return {_wire_value(k, t.keyType, f"{column} key"): _wire_value(v, t.valueType, f"{column}[{k!r}]")
                for k, v in value.items()}
    if isinstance(t, T.StructType):
        return dict(zip(t.names, _row_values(value, t, column), strict=True))
    raise ResultError(f"column {column!r}: unsupported type {t.simpleString()}")


def _row_values(result: Any, schema: T.StructType, where: str) -> list[Any]:
    """A result as the wire values of ``schema``'s columns (see the module docstring's mapping)."""
    names = schema.names
    if isinstance(result, Mapping):
        unknown = [k for k in result if k not in names]
        if unknown:
            raise ResultError(f"{where}: the result names {unknown}, not columns of the output schema {names}")
        values = [result.get(n) for n in names]
    elif isinstance(result, tuple | list):
        if len(result) != len(names):
            raise ResultError(f"{where}: the result has {len(result)} values; the output schema has {len(names)} "
                              f"columns {names}")
        values = list(result)
    elif len(names) == 1:
        values = [result]
    else:
        raise ResultError(f"{where}: a {type(result).__name__} result for an output schema of {len(names)} columns "
                          f"{names}: return a dict or a tuple")
    return [_wire_value(v, f.dataType, f.name) for v, f in zip(values, schema.fields, strict=True)]


def _json(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_json(v)}" for k, v in value.items() if v is not None) + "}"
    if isinstance(value, list):
        return "[" + ",".join("null" if v is None else _json(v) for v in value) + "]"
    return _json_value(value)


def result_text(result: Any, schema: T.StructType) -> str:
    """A result's user columns as a JSON object body (no braces), or :class:`ResultError`.

    >>> s = T.StructType([T.StructField("k", T.StringType()), T.StructField("n", T.LongType())])
    >>> result_text(("a", 3), s), result_text({"n": 1}, s)
    ('"k":"a","n":3', '"n":1')
    >>> result_text({"x": 1}, s)
    Traceback (most recent call last):
    ...
    timeweave.spark.datastream.ResultError: output schema: the result names ['x'], not columns of the output schema ['k', 'n']
    """
    values = _row_values(result, schema, "output schema")
    return ",".join(f"{json.dumps(n)}:{_json(v)}" for n, v in zip(schema.names, values, strict=True) if v is not None)


def _window_text(window: Any) -> str:
    """A window for a dead letter's reason: ``[start, end)`` as UTC times, or ``global``."""
    return "global" if window == GLOBAL_WINDOW else f"[{format_ms(window.start)}, {format_ms(window.end)})"


def _window_us(ms: int) -> int:
    return ms * 1000


def _key_json(key: Any) -> Any:
    if isinstance(key, datetime):
        return key.isoformat()
    if isinstance(key, date | Decimal):
        return str(key)
    if isinstance(key, tuple | list):
        return [_key_json(k) for k in key]
    return key


# =================================================================================================
# The collector of one call's outputs (streaming host and bounded run alike)
# =================================================================================================
@dataclass
class _Sink:
    """One call's tagged outputs, column-wise."""

    kinds: list[str] = field(default_factory=list)
    outs: list[str | None] = field(default_factory=list)
    rows: list[str | None] = field(default_factory=list)
    reasons: list[str | None] = field(default_factory=list)
    sides: list[str | None] = field(default_factory=list)
    watermarks: list[int] = field(default_factory=list)
    n_in: int | None = None

    def add(self, kind: str, out: str | None = None, row: str | None = None, reason: str | None = None,
            side: str | None = None, watermark: int = 0) -> None:
        self.kinds.append(kind)
        self.outs.append(out)
        self.rows.append(row)
        self.reasons.append(reason)
        self.sides.append(side)
        self.watermarks.append(watermark)

    def frame(self) -> pd.DataFrame:
        kinds, n = list(self.kinds), [0] * len(self.kinds)
        extra = [] if self.n_in is None else [self.n_in]
        pad = [None] * len(extra)

        def column(values: list[Any]) -> Any:
            return pd.array(values, dtype=object)

        return pd.DataFrame({
            KIND: column(kinds + [STATS] * len(extra)),
            OUT: column(self.outs + pad), IN_ROW: column(self.rows + pad), REASON: column(self.reasons + pad),
            SIDE: column(self.sides + pad),
            WATERMARK: np.array(self.watermarks + [0] * len(extra), dtype=np.int64),
            N_IN: np.array(n + extra, dtype=np.int64),
        })


class _Collector:
    """Turns the core's outputs into tagged rows: firings into main rows (or a dead letter when a result does not
    fit the output schema), changes into changelog rows (main, with ``pane`` and ``op``), late elements and dead
    letters with the row's wire text."""

    def __init__(self, output: T.StructType) -> None:
        self.output = output

    def collect(self, outputs: list[Any], texts: Mapping[int, str], sink: _Sink) -> None:
        for out in outputs:
            cls = out.__class__
            if cls is Change:
                _, start, end, pane = out.key
                head = "" if (start, end) == (GLOBAL_WINDOW.start, GLOBAL_WINDOW.end) else \
                    f'"window_start":{_window_us(start)},"window_end":{_window_us(end)},'
                (body,) = out.values  # the result's columns as written (ResultText)
                sink.add(MAIN, out="{" + head + f'"pane":{pane}' + ("," + body if body else "") +
                         f',"{OP_COLUMN}":"{out.op}"' + "}")
            elif cls is Firing:
                w = out.window
                if w == GLOBAL_WINDOW:
                    head = ""
                else:
                    head = f'"window_start":{_window_us(w.start)},"window_end":{_window_us(w.end)},'
                head += f'"firing_kind":"{out.kind.value}","firing_sequence":{out.sequence}'
                for i, value in enumerate(out.values):
                    try:
                        body = result_text(value, self.output)
                    except ResultError as exc:
                        reason = f"output schema: firing {out.sequence} of window {_window_text(w)}, result {i}: {exc}"
                        sink.add(DEAD_JSON, row=self._firing_json(out.key, w), reason=reason, side="window")
                        continue
                    sink.add(MAIN, out="{" + head + ("," + body if body else "") + "}")
            elif cls is LateElement:
                sink.add(LATE, row=texts[id(out.row)], reason=out.reason,
                         watermark=watermark_as_time(out.watermark * 1000 if out.watermark not in (
                             NO_WATERMARK, END_OF_TIME) else out.watermark))
            elif cls is DeadLetter:
                if out.row is not None:
                    sink.add(DEAD_WIRE, row=texts[id(out.row)], reason=out.reason, side="input")
                else:
                    reason = f"{out.reason} (window {_window_text(out.window)})" if out.window else out.reason
                    sink.add(DEAD_JSON, row=self._firing_json(out.key, out.window), reason=reason, side="window")
            else:
                raise AssertionError(f"unexpected DataStream operator output {out!r}")

    @staticmethod
    def _firing_json(key: Any, window: Any) -> str:
        data: dict[str, Any] = {"key": _key_json(key)}
        if window is not None and window != GLOBAL_WINDOW:
            data["window_start"] = (_EPOCH + window.start * 1000 * _US).isoformat()
            data["window_end"] = (_EPOCH + window.end * 1000 * _US).isoformat()
        return json.dumps(data, default=repr)


@dataclass(frozen=True)
class ResultText:
    """A window function's result as the changelog writes it (:func:`result_text` of the output schema): what the
    core's :class:`~timeweave.core.datastream.changelog.WindowChangelog` compares and keeps as the emitted result;
    a :class:`ResultError` makes the firing a dead letter there."""

    schema: T.StructType

    def __call__(self, result: Any) -> str:
        return result_text(result, self.schema)


# =================================================================================================
# The streaming processor
# =================================================================================================
class DataStreamProcessor(HostProcessor):
    """The streaming host's processor of a DataStream window: one bucket of keys, the core
    :class:`~timeweave.core.datastream.WindowOperator` state per key (cloudpickled with the user's functions by
    Spark's UDF mechanism; the state holds data only)."""

    state = STATE
    dead_ops = (DEAD_ROW, MALFORMED_ROW)  # MALFORMED_ROW: a source's malformed record (keyed_packs)
    timer_at_end = False  # every window holds a core timer (its trigger's or its cleanup); the global one is kept

    def __init__(self, operator: WindowOperator | WindowChangelog, input_json: str, output_json: str, time: str,
                 end_ms: int = END_OF_INPUT_MS) -> None:
        self.operator = operator
        self.input_json = input_json
        self.output_json = output_json
        self.time = time
        self.end_ms = end_ms
        self._now = NO_WATERMARK

    def open(self, handle: StatefulProcessorHandle) -> None:
        self._decode = element_decoder(T.StructType.fromJson(json.loads(self.input_json)))
        self._collector = _Collector(T.StructType.fromJson(json.loads(self.output_json)))
        self._dead_reason = null_event_time_reason(self.time)
        self._texts: dict[int, str] = {}

    @property
    def layout(self) -> StateLayout:
        return self.operator.layout

    def watermark(self, timer_values: TimerValues) -> int:
        # One clock reading per invocation: the processing time every key of it sees (see the module docstring).
        self._now = int(timer_values.getCurrentProcessingTimeInMs()) * 1000
        return super().watermark(timer_values)

    def context(self, text: str | None, watermark: int) -> SparkKeyContext:
        ctx = super().context(text, watermark)
        ctx.processing_time = self._now  # type: ignore[attr-defined]
        return ctx

    def new_sink(self) -> _Sink:
        return _Sink()

    def dead_frame(self, dead: pa.Table) -> pd.DataFrame:
        sink = _Sink()
        for text, reason in zip(*dead_letters(dead, self._dead_reason), strict=True):
            sink.add(DEAD_JSON, row=text, reason=reason, side="input")
        return sink.frame()

    def group(self, table: pa.Table, sink: _Sink) -> list[tuple[str, Any]]:
        sink.n_in = len(table)
        keys = table.column(KEY_TEXT).to_pylist()
        texts = table.column(ROW).to_pylist()
        by_key: dict[str | None, list[int]] = {}
        for i, key in enumerate(keys):
            by_key.setdefault(key, []).append(i)
        return [(key, [texts[i] for i in positions]) for key, positions in by_key.items()]

    def process(self, ctx: SparkKeyContext, elements: list[str], sink: _Sink) -> None:
        rows = self._decode(elements)
        texts = {id(row): text for row, text in zip(rows, elements, strict=True)}
        self._collector.collect(self.operator.process_elements(ctx, rows), texts, sink)

    def fire(self, ctx: SparkKeyContext, sink: _Sink) -> None:
        self._collector.collect(self.operator.on_watermark(ctx), {}, sink)

    def frames(self, sink: _Sink, always: bool) -> Iterator[pd.DataFrame]:
        if always or sink.kinds:
            yield sink.frame()


class DataStreamChangelogProcessor(DataStreamProcessor):
    """:class:`DataStreamProcessor` of a changelog pipeline (``emit="retract"`` / ``"upsert"``): the core
    :class:`~timeweave.core.datastream.changelog.WindowChangelog` per key, its state in :data:`CHANGELOG_STATE`."""

    state = CHANGELOG_STATE


# =================================================================================================
# The outputs of the tagged stream (streaming and bounded run)
# =================================================================================================
@dataclass(frozen=True)
class DataStreamOutputs:
    """A tagged DataStream output and how to split it (the :class:`~timeweave.spark.host.writer.TaggedStream` the
    host's writer takes).  ``schema``: the main output's; ``input_schema``: the input's."""

    stream: DataFrame
    schema: T.StructType
    input_schema: T.StructType

    compress_cache: ClassVar[bool] = True

    def count_columns(self) -> list[Column]:
        kind = F.col(KIND)
        return [F.count_if(kind == MAIN).alias("main"), F.count_if(kind == LATE).alias("late"),
                F.count_if(kind.isin(DEAD_WIRE, DEAD_JSON)).alias("dead"),
                F.count_if((kind == DEAD_JSON) & (F.col(SIDE) == "input")).alias("dead_in"),
                F.coalesce(F.sum(F.when(kind == STATS, F.col(N_IN))), F.lit(0)).alias("n_in")]

    def counts(self, observed: Mapping[str, Any]) -> OutputCounts:
        """Input rows: the operator's elements and the NULL-time dead letters (never the operator's)."""
        return OutputCounts({"rows_in": int(observed["n_in"]) + int(observed["dead_in"])}, main=int(observed["main"]),
                            late=int(observed["late"]), dead=int(observed["dead"]))

    def split(self, batch: DataFrame) -> BatchOutputs:
        kind = F.col(KIND)
        main = batch.where(kind == MAIN).select(from_wire(F.col(OUT), self.schema).alias("__tw_o")).select("__tw_o.*")
        late = batch.where(kind == LATE).select(
            from_wire(F.col(IN_ROW), self.input_schema).alias("__tw_in"), F.col(REASON).alias("reason"),
            F.timestamp_micros(F.col(WATERMARK)).alias("watermark")).select("__tw_in.*", "reason", "watermark")
        original = F.to_json(from_wire(F.col(IN_ROW), self.input_schema))
        dead = batch.where(kind.isin(DEAD_WIRE, DEAD_JSON)).select(
            F.col(SIDE).alias("side"), F.col(REASON).alias("reason"),
            F.when(kind == DEAD_WIRE, original).otherwise(F.col(IN_ROW)).alias("row"))
        return BatchOutputs(main, late, dead)


# =================================================================================================
# The builder
# =================================================================================================
def _step(name: str) -> str:
    return f"{WHERE}, step '.{name}'"


def _find(columns: Sequence[str], name: str) -> str | None:
    exact = [c for c in columns if c == name]
    if exact:
        return exact[0]
    folded = [c for c in columns if c.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


def _schema_of(schema: T.StructType | str, step: str) -> T.StructType:
    if isinstance(schema, T.StructType):
        out = schema
    elif isinstance(schema, str):
        try:
            parsed = T._parse_datatype_string(schema)
        except Exception as exc:
            raise SpecError("output_schema", f"cannot read {schema!r}: {exc}", where=_step(step)) from None
        out = parsed if isinstance(parsed, T.StructType) else T.StructType([T.StructField("value", parsed)])
    else:
        raise SpecError("output_schema", f"expected a DDL string or a StructType, got {schema!r:.60}", where=_step(step))
    clash = [n for n in out.names if n.lower() in FIRING_COLUMNS]
    if clash:
        raise SpecError("output_schema", f"column(s) {clash} are the firing's own columns {list(FIRING_COLUMNS)}; "
                        "rename them", where=_step(step))
    if len({n.lower() for n in out.names}) != len(out.names):
        raise SpecError("output_schema", f"a column is named twice in {out.names}", where=_step(step))
    check_output_schema(out, step)
    return out


@dataclass(frozen=True)
class BatchResult:
    """A bounded run's outputs (lazy DataFrames, each computed when read)."""

    main: DataFrame
    late: DataFrame
    dead_letter: DataFrame

    def __iter__(self) -> Iterator[DataFrame]:
        return iter((self.main, self.late, self.dead_letter))


@dataclass(frozen=True)
class Pipeline:
    """A DataStream window pipeline over a DataFrame: a frozen spec, one step per method (see the module
    docstring).  Build it with :func:`stream`.

    >>> from timeweave.core.datastream import Tumbling
    >>> p = Pipeline(None, "ts", "1 minute", _columns=("ts", "k", "v"))   # what stream() builds from a DataFrame
    >>> p = p.key_by("k").window(Tumbling.of("1 min")).allowed_lateness("30 s")
    >>> (p.keys, p.lateness_ms)
    (('k',), 30000)
    >>> n = T.StructType([T.StructField("n", T.LongType())])   # or a DDL text, "n BIGINT" (with a Spark session)
    >>> p.process(lambda key, ctx, rows: [len(rows)], output_schema=n).evictor(None)
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: DataStream pipeline, step '.evictor': argument 'evictor': comes before the window function (.process was given): write .evictor(...) right after .window(...)
    """

    df: Any
    time: str
    watermark: str
    keys: tuple[str, ...] | None = None  # None: no key_by / window_all yet; (): window_all
    assigner: Assigner | None = None
    trigger_spec: Trigger | None = None
    evictor_spec: Evictor | None = None
    lateness_ms: int = 0
    function: WindowFunction | None = None
    function_step: str | None = None
    output_schema: T.StructType | None = None
    _columns: tuple[str, ...] = ()

    # -- keying ------------------------------------------------------------------------------------------
    def key_by(self, key: str | Sequence[str]) -> Pipeline:
        """Key the stream by a column or columns (a key's windows are its own)."""
        if self.keys is not None:
            raise SpecError("key", "the stream is keyed already (one .key_by or .window_all per pipeline)",
                            where=_step("key_by"))
        if callable(key) and not isinstance(key, str):
            raise SpecError("key", "a key selector function is not supported by the Spark door yet: key by columns "
                            "(add the key as a column first, e.g. df.withColumn('key', ...))", where=_step("key_by"))
        names = [key] if isinstance(key, str) else list(key) if isinstance(key, Sequence) else None
        if not names or not all(isinstance(n, str) and n for n in names):
            raise SpecError("key", f"expected a column name or a list of column names, got {key!r:.60}",
                            where=_step("key_by"))
        spelled = []
        for name in names:
            found = _find(self._columns, name)
            if found is None:
                raise SpecError("key", f"column {name!r} not found; available: {list(self._columns)}",
                                where=_step("key_by"))
            spelled.append(found)
        if len(set(spelled)) != len(spelled):
            raise SpecError("key", f"a key column is named twice in {names}", where=_step("key_by"))
        return replace(self, keys=tuple(spelled))

    def window_all(self, assigner: Assigner) -> Pipeline:
        """A non-keyed window (Flink's ``windowAll``): every row in one key, so it runs with parallelism 1, as in
        Flink."""
        if self.keys is not None:
            raise SpecError("assigner", "window_all is for an unkeyed stream; this one has .key_by",
                            where=_step("window_all"))
        return replace(self, keys=())._window(assigner, "window_all")

    def window(self, assigner: Assigner) -> Pipeline:
        """The window assigner (``Tumbling``, ``Sliding``, ``Session``, ``Global`` of
        :mod:`timeweave.core.datastream`)."""
        if self.keys is None:
            raise SpecError("assigner", "comes after .key_by(...) (or use .window_all(...) for a non-keyed window)",
                            where=_step("window"))
        return self._window(assigner, "window")

    def _window(self, assigner: Assigner, step: str) -> Pipeline:
        if self.assigner is not None:
            raise SpecError("assigner", "the pipeline has a window already", where=_step(step))
        if not isinstance(assigner, Tumbling | Sliding | Session | Global):
            raise SpecError("assigner", f"expected Tumbling, Sliding, Session or Global, got {assigner!r:.60}",
                            where=_step(step))
        return replace(self, assigner=assigner)

    # -- window options ----------------------------------------------------------------------------------
    def _before_function(self, step: str, argument: str) -> None:
        if self.assigner is None:
            raise SpecError(argument, "comes after .window(...)", where=_step(step))
        if self.function is not None:
            raise SpecError(argument, f"comes before the window function (.{self.function_step} was given): write "
                            f".{step}(...) right after .window(...)", where=_step(step))

    def trigger(self, trigger: Trigger) -> Pipeline:
        """The window's trigger (default: the assigner's)."""
        self._before_function("trigger", "trigger")
        if not isinstance(trigger, Trigger):
            raise SpecError("trigger", f"expected a Trigger, got {trigger!r:.60}", where=_step("trigger"))
        if self.assigner.merging and not trigger.can_merge():  # type: ignore[union-attr]
            raise SpecError("trigger", f"a merging window assigner ({self.assigner.name}) cannot be used with a "  # type: ignore[union-attr]
                            f"trigger that does not support merging ({trigger.name}.can_merge() is False)",
                            where=_step("trigger"))
        return replace(self, trigger_spec=trigger)

    def evictor(self, evictor: Evictor) -> Pipeline:
        """An evictor (the window keeps every element: no pre-aggregation, as in Flink)."""
        self._before_function("evictor", "evictor")
        if not isinstance(evictor, Evictor):
            raise SpecError("evictor", f"expected an Evictor, got {evictor!r:.60}", where=_step("evictor"))
        return replace(self, evictor_spec=evictor)

    def allowed_lateness(self, lateness: str | int | timedelta) -> Pipeline:
        """How long after a window's end its late rows still enter it (late firings); event time only."""
        self._before_function("allowed_lateness", "allowed_lateness")
        ms = duration_ms(lateness, "allowed_lateness", where=_step("allowed_lateness"))
        if ms < 0:
            raise SpecError("allowed_lateness", f"cannot be negative, got {ms} ms", where=_step("allowed_lateness"))
        if ms and not self.assigner.is_event_time:  # type: ignore[union-attr]
            raise SpecError("allowed_lateness", f"applies to event-time windows; {self.assigner.name} is not",  # type: ignore[union-attr]
                            where=_step("allowed_lateness"))
        return replace(self, lateness_ms=ms)

    # -- the window function -------------------------------------------------------------------------------
    def reduce(self, fn: Callable[[Any, Any], Any], process: ProcessWindowFunction | Callable[..., Any] | None = None,
               *, output_schema: T.StructType | str | None = None) -> Pipeline:
        """A reduce function (two rows -> one), optionally followed by ``process``.  Without ``output_schema`` the
        results are rows of the input's schema (the reduced row)."""
        self._function_step("reduce")
        function = self._call("reduce", lambda: ds_reduce(fn, process))
        if output_schema is None:
            if process is not None:
                raise SpecError("output_schema", "a reduce followed by a process function needs output_schema (the "
                                "columns of what process returns)", where=_step("reduce"))
            output_schema = T.StructType([T.StructField(c, t) for c, t in self._input_fields()])
        return self._with_function(function, "reduce", output_schema)

    def aggregate(self, agg: AggregateFunction, process: ProcessWindowFunction | Callable[..., Any] | None = None,
                  *, output_schema: T.StructType | str | None = None) -> Pipeline:
        """An ``AggregateFunction`` (create / add / merge / result), optionally followed by ``process``;
        ``output_schema``: the columns of each result."""
        self._function_step("aggregate")
        function = self._call("aggregate", lambda: ds_aggregate(agg, process))
        return self._with_function(function, "aggregate", output_schema)

    def process(self, fn: ProcessWindowFunction | Callable[..., Any], *,
                output_schema: T.StructType | str | None = None) -> Pipeline:
        """A process function over all the window's rows ``(key, context, elements) -> results``."""
        self._function_step("process")
        function = self._call("process", lambda: ds_process(fn))
        return self._with_function(function, "process", output_schema)

    def _function_step(self, step: str) -> None:
        if self.assigner is None:
            raise SpecError("function", "comes after .window(...): a pipeline without a window has nothing to "
                            "fire", where=_step(step))
        if self.function is not None:
            raise SpecError("function", f"the pipeline has a window function already (.{self.function_step})",
                            where=_step(step))

    @staticmethod
    def _call(step: str, build: Callable[[], WindowFunction]) -> WindowFunction:
        try:
            return build()
        except SpecError as exc:
            raise SpecError(exc.argument, exc.message, where=_step(step)) from None

    def _with_function(self, function: WindowFunction, step: str, schema: T.StructType | str | None) -> Pipeline:
        if schema is None:
            raise SpecError("output_schema", "give the columns of each result, e.g. output_schema='k STRING, n "
                            "BIGINT' (results are dicts by name or tuples by position)", where=_step(step))
        out = replace(self, function=function, function_step=step, output_schema=_schema_of(schema, step))
        out.operator()  # the core's own checks of the whole combination, before any Spark job
        return out

    def _input_fields(self) -> list[tuple[str, T.DataType]]:
        return [(f.name, f.dataType) for f in self.df.schema.fields]

    # -- the operator -------------------------------------------------------------------------------------
    def operator(self) -> WindowOperator:
        """The core operator of the pipeline (complete: a window and a function)."""
        if self.assigner is None:
            raise SpecError("window", "the pipeline has no window: add .window(...) (or .window_all(...))",
                            where=WHERE)
        if self.function is None:
            raise SpecError("function", "the pipeline has no window function: add .reduce / .aggregate / .process",
                            where=WHERE)
        key = None if not self.keys else self.keys[0] if len(self.keys) == 1 else self.keys
        try:
            return WindowOperator(self.assigner, self.function, trigger=self.trigger_spec, evictor=self.evictor_spec,
                                  allowed_lateness=self.lateness_ms, time_column=self.time, key_by=key)
        except SpecError as exc:
            raise SpecError("pipeline", str(exc), where=WHERE) from None

    def keyed_operator(self, emit: str = "append") -> WindowOperator | WindowChangelog:
        """What runs per key for the output encoding ``emit`` (checked, :func:`_check_emit`): the core operator
        (append), or its changelog (retract / upsert: results compared and kept as written, :class:`ResultText`)."""
        mode = _check_emit(emit, self)
        op = self.operator()
        if mode is ChangelogMode.APPEND:
            return op
        return WindowChangelog(op, mode, convert=ResultText(self.output_schema), output=WHERE)  # type: ignore[arg-type]

    @property
    def main_schema(self) -> T.StructType:
        """The main output's schema: the firing's columns, then the user's."""
        assert self.output_schema is not None
        return T.StructType([T.StructField("window_start", T.TimestampType()),
                             T.StructField("window_end", T.TimestampType()),
                             T.StructField("firing_kind", T.StringType()),
                             T.StructField("firing_sequence", T.LongType()), *self.output_schema.fields])

    @property
    def changelog_schema(self) -> T.StructType:
        """The main output's schema for ``emit="retract"`` / ``"upsert"``: the window, the pane, the user's
        columns, then the op code."""
        assert self.output_schema is not None
        return T.StructType([T.StructField("window_start", T.TimestampType()),
                             T.StructField("window_end", T.TimestampType()),
                             T.StructField("pane", T.LongType()), *self.output_schema.fields,
                             T.StructField(OP_COLUMN, T.StringType())])

    def changelog_key(self) -> tuple[str, ...]:
        """The changelog rows' unique key (an upsert table's key, ``apply_changelog(key=...)``): the key columns
        as the output schema spells them (those it has: an upsert pipeline has all), the window, the pane."""
        assert self.output_schema is not None
        names = self.output_schema.names
        found = [_find(names, k) for k in self.keys or ()]
        return (*(k for k in found if k is not None), *CHANGELOG_COLUMNS)

    def _outputs(self, stream: DataFrame, emit: str) -> DataStreamOutputs:
        mode = ChangelogMode.parse(emit, where=WHERE)
        schema = self.main_schema if mode is ChangelogMode.APPEND else self.changelog_schema
        return DataStreamOutputs(stream, schema, self.df.schema)

    # -- terminals ------------------------------------------------------------------------------------------
    def streaming(self, *, heartbeat: DataFrame | None = None, buckets: int = DEFAULT_BUCKETS,
                  emit: str = "append") -> DataStreamOutputs:
        """The tagged stream of a streaming DataFrame (``heartbeat``: a stream of one timestamp column whose rows
        move the watermark; a row at or past the end of input flushes every window) for a custom sink; see
        :meth:`start`."""
        op = self.keyed_operator(emit)
        check_buckets(buckets, WHERE)
        if not self.df.isStreaming:
            raise SpecError("df", "start() runs a streaming DataFrame (spark.readStream...); use run_batch() for a "
                            "static one", where=WHERE)
        end_ms = end_of_input_ms(delay_ms(self.watermark, "watermark"))
        internal = keyed_packs(self.df, self.keys or (), F.col(quote(self.time)), buckets, heartbeat, self.watermark)
        kind = DataStreamProcessor if isinstance(op, WindowOperator) else DataStreamChangelogProcessor
        processor = kind(op, self.df.schema.json(), self.output_schema.json(), self.time, end_ms)  # type: ignore[union-attr]
        stream = run_operator(internal, processor, tagged_schema(), event_time=True)
        return self._outputs(stream, emit)

    def start(self, *, output: str, checkpoint: str, late_output: str | None = None, dead_letter: str | None = None,
              trigger: Mapping[str, Any] | None = None, heartbeat: DataFrame | None = None,
              buckets: int = DEFAULT_BUCKETS, emit: str = "append", query_name: str | None = None) -> Any:
        """Run the pipeline as a Structured Streaming query writing parquet: main rows to ``output``, late rows to
        ``late_output`` (default ``<output>_late``), dead letters to ``dead_letter`` (``<output>_dead_letter``),
        exactly once per micro-batch (the host's writer); ``trigger``: ``DataStreamWriter.trigger``'s keyword
        (``{"availableNow": True}``, ``{"processingTime": "10 seconds"}``).  Returns the ``StreamingQuery``;
        its ``timeweave_metrics`` attribute holds the run's counts (rows in / out, late, dead letter, batches).

        ``emit``: ``"append"`` (every firing a row) or ``"retract"`` / ``"upsert"``: ``output`` then holds the
        window results' changelog (:attr:`changelog_schema`, an ``op`` column), one change per window and
        micro-batch, which :func:`timeweave.spark.changelog_sink.apply_changelog` (``key=``
        :meth:`changelog_key` for upsert) materialises into the table of window results."""
        from timeweave.spark.host.writer import TaggedWriter

        if not isinstance(output, str) or not output or not isinstance(checkpoint, str) or not checkpoint:
            raise SpecError("output", "start() needs output= and checkpoint= paths", where=WHERE)
        outputs = self.streaming(heartbeat=heartbeat, buckets=buckets, emit=emit)
        paths = {"main": output, "late": late_output or f"{output}_late",
                 "dead_letter": dead_letter or f"{output}_dead_letter"}
        metrics = {"rows_in": 0, "rows_out": 0, "late": 0, "dead_letter": 0, "batches": 0}
        writer = TaggedWriter(self.df.sparkSession, outputs, paths, metrics)
        w = outputs.stream.writeStream.foreachBatch(writer).option("checkpointLocation", checkpoint)
        if query_name:
            w = w.queryName(query_name)
        if trigger:
            w = w.trigger(**dict(trigger))
        query = w.start()
        query.timeweave_metrics = metrics
        return query

    def run_batch(self, *, arrival: str | None = None, emit: str = "append") -> BatchResult:
        """The bounded run over a static DataFrame (arrival order and watermark: see the module docstring);
        main, late and dead-letter DataFrames, the streaming outputs' schemas (``emit``: as :meth:`start`; a
        changelog's steps are the arrival steps, as a stream's are its micro-batches)."""
        op = self.keyed_operator(emit)
        df = self.df
        if df.isStreaming:
            raise SpecError("df", "run_batch() runs a static DataFrame; use start() for a streaming one", where=WHERE)
        if not self.assigner.is_event_time:  # type: ignore[union-attr]
            raise SpecError("window", f"{self.assigner.name} runs on a processing clock, which a bounded run does not "
                            "have: run it as a stream", where=f"{WHERE}, run_batch")
        step_col = None
        if arrival is not None:
            step_col = _find(df.columns, arrival) if isinstance(arrival, str) else None
            if step_col is None:
                raise SpecError("arrival", f"column {arrival!r} not found; available: {df.columns}",
                                where=f"{WHERE}, run_batch")
        delay = delay_ms(self.watermark, "watermark")
        event = F.col(quote(self.time))
        dead = event.isNull()
        original = F.to_json(F.struct(*[F.col(quote(c)) for c in df.columns]))
        keyed = key_columns(df, self.keys or (), 1, marked=True)[1]
        rows = df.select(
            keyed, F.when(dead, F.lit(DEAD_ROW)).otherwise(F.lit(DATA_ROW)).cast("tinyint").alias(OP),
            F.unix_micros(event).alias(TIME), F.when(dead, original).otherwise(to_wire(df)).alias(ROW),
            (F.col(quote(step_col)) if step_col else F.lit(0)).alias("__tw_step"),
            F.monotonically_increasing_id().alias("__tw_order"),
        )
        if step_col is not None:
            # Before each step: the largest event time of every earlier step (ms, as Spark's watermark takes it).
            steps = rows.groupBy("__tw_step").agg(F.max(F.floor(F.col(TIME) / 1000)).alias("__tw_max"))
            # (one row per step: the window's single partition holds the steps, not the rows)
            earlier = steps.withColumn("__tw_before", F.max("__tw_max").over(
                SparkWindow.orderBy(F.col("__tw_step").asc_nulls_first())
                .rowsBetween(SparkWindow.unboundedPreceding, -1))).select(F.col("__tw_step").alias("__tw_s"),
                                                                          "__tw_before")
            rows = rows.join(earlier, F.col("__tw_step").eqNullSafe(F.col("__tw_s")), "left").drop("__tw_s")
        else:
            rows = rows.withColumn("__tw_before", F.lit(None).cast("bigint"))
        runner = _BatchRunner(op, df.schema.json(), self.output_schema.json(), self.time, delay)  # type: ignore[union-attr]

        def run_key(frame: pd.DataFrame) -> pd.DataFrame:  # a plain function: Spark reads its arity
            return runner(frame)

        tagged = rows.groupBy(KEY_TEXT).applyInPandas(run_key, tagged_schema())
        out = self._outputs(tagged, emit).split(tagged)
        return BatchResult(out.main, out.late, out.dead_letter)


def _check_emit(emit: object, pipeline: Pipeline) -> ChangelogMode:
    """The output encoding ``emit`` names, checked against the pipeline (the module docstring's "Outputs").

    ``append``: every firing a row (early and late ones included, with ``firing_kind`` / ``firing_sequence``; a
    trigger firing a window more than once is allowed, as before).  ``retract`` / ``upsert``: the window results'
    changelog; its columns ``pane`` and ``op`` must not be the user's, and an upsert's key (the key columns, the
    window, the pane) must be columns of the result: the key columns in ``output_schema``.
    """
    where = f"{WHERE}, emit"
    if not isinstance(emit, str) or emit.strip().lower() not in EMITS:
        raise SpecError("emit", f"expected 'append' (every firing a row with its firing_kind and firing_sequence), "
                        f"'retract' or 'upsert' (the window results' changelog with an op column), got {emit!r}",
                        where=where)
    mode = ChangelogMode.parse(emit, where=where)
    if mode is ChangelogMode.APPEND or pipeline.output_schema is None:
        return mode
    names = pipeline.output_schema.names
    clash = [n for n in names if n.lower() in ("pane", OP_COLUMN)]
    if clash:
        raise SpecError("emit", f"column(s) {clash} of the output schema are the changelog's own ('pane', "
                        f"'{OP_COLUMN}'); rename them", where=where)
    if mode is ChangelogMode.UPSERT:
        missing = [k for k in pipeline.keys or () if _find(names, k) is None]
        if missing:
            raise SpecError("emit", f"an upsert changelog is applied by its key (the key columns, window_start, "
                            f"window_end, pane): the output schema {names} lacks the key column(s) {missing}; add "
                            "them to the results, or emit 'retract'", where=where)
    return mode


class _BatchRunner:
    """The bounded run of one key (``applyInPandas``): its rows by step and order, the watermark before each step,
    the end of input after the last; outputs collected as the streaming processor collects them."""

    def __init__(self, operator: WindowOperator | WindowChangelog, input_json: str, output_json: str, time: str,
                 delay_ms: int) -> None:
        self.operator = operator
        self.input_json = input_json
        self.output_json = output_json
        self.time = time
        self.delay_ms = delay_ms

    def __call__(self, frame: pd.DataFrame) -> pd.DataFrame:
        decode = element_decoder(T.StructType.fromJson(json.loads(self.input_json)))
        collector = _Collector(T.StructType.fromJson(json.loads(self.output_json)))
        sink = _Sink()
        dead = frame[frame[OP] == DEAD_ROW]
        for text in dead[ROW].tolist():
            sink.add(DEAD_JSON, row=text, reason=null_event_time_reason(self.time), side="input")
        data = frame[frame[OP] != DEAD_ROW]
        sink.n_in = len(data)
        if len(data):
            data = data.assign(__tw_rank=data["__tw_step"].rank(method="dense", na_option="top"))
            data = data.sort_values(["__tw_rank", "__tw_order"], kind="stable")
            ctx = InMemoryKeyContext()
            op = self.operator
            for _, step in data.groupby("__tw_rank", sort=True):
                before = step["__tw_before"].iloc[0]
                ctx.current_watermark = (NO_WATERMARK if pd.isna(before)
                                         else watermark_us(int(before) - self.delay_ms))
                texts = step[ROW].tolist()
                rows = decode(texts)
                ids = {id(r): t for r, t in zip(rows, texts, strict=True)}
                collector.collect(op.process_elements(ctx, rows), ids, sink)
                collector.collect(op.on_watermark(ctx), {}, sink)
            ctx.current_watermark = END_OF_TIME
            collector.collect(op.on_watermark(ctx), {}, sink)
        return sink.frame()


def stream(df: DataFrame, *, time: str, watermark: str) -> Pipeline:
    """A DataStream pipeline over ``df`` (streaming for :meth:`Pipeline.start`, static for
    :meth:`Pipeline.run_batch`): ``time`` names the TIMESTAMP event-time column, ``watermark`` the allowed
    out-of-orderness (``"1 minute"``: the watermark trails the largest event time by it).

    Example (a static DataFrame; the same pipeline starts on a streaming one)::

        from timeweave.core.datastream import Tumbling
        p = (timeweave.stream(df, time="ts", watermark="1 minute").key_by("k").window(Tumbling.of("5 min"))
             .reduce(lambda a, b: {**a, "v": a["v"] + b["v"]}))
        main, late, dead = p.run_batch(arrival="batch")
    """
    if not isinstance(df, DataFrame) and not hasattr(df, "schema"):
        raise SpecError("df", f"expected a DataFrame, got {df!r:.60}", where=f"{WHERE}, stream")
    found = _find(df.columns, time) if isinstance(time, str) else None
    if found is None:
        raise SpecError("time", f"column {time!r} not found; available: {df.columns}", where=f"{WHERE}, stream")
    if not isinstance(df.schema[found].dataType, T.TimestampType):
        raise SpecError("time", f"column {found!r} is {df.schema[found].dataType.simpleString()}: the event time must "
                        "be a TIMESTAMP (Spark's watermark is on TIMESTAMP); cast it", where=f"{WHERE}, stream")
    if not isinstance(watermark, str) or not watermark.strip():
        raise SpecError("watermark", "a DataStream pipeline needs the event time's allowed out-of-orderness, e.g. "
                        "watermark='1 minute': windows fire when the watermark passes their end",
                        where=f"{WHERE}, stream")
    delay_ms(watermark, "watermark")
    clash = [c for c in df.columns if c.lower() in LATE_COLUMNS]
    if clash:
        raise SpecError("df", f"column(s) {clash} are added by the late output; rename them", where=f"{WHERE}, stream")
    return Pipeline(df, found, watermark, _columns=tuple(df.columns))


__all__ = ["CHANGELOG_COLUMNS", "CHANGELOG_STATE", "EMITS", "FIRING_COLUMNS", "LATE_COLUMNS", "OP_COLUMN", "STATE",
           "BatchResult", "DataStreamChangelogProcessor", "DataStreamOutputs", "DataStreamProcessor", "Pipeline",
           "ResultError", "ResultText", "element_decoder", "result_text", "stream", "tagged_schema"]
