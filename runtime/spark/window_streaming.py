"""Streaming window aggregation: the core :class:`~timeweave.core.windows.WindowAggregateOperator` per GROUP BY key
on the streaming host (:mod:`timeweave.spark.host`, event time).

A registration: what is the window operator's own.  Which windows a row belongs to, when a window fires, which
rows are late for which windows and session merging are the core's (:mod:`timeweave.core.windows`); the output
schema is the DataFrame door's (:func:`timeweave.spark.windows.window_aggregate` over the same input, analysed
only); buckets, the state bridge, packs, heartbeats and the watermark are the host's.  What is left here:

1. **The elements.**  Every input row becomes ``tw_b``, ``tw_key`` (the GROUP BY keys as one canonical string,
   marked: NULL is an ordinary key, as in batch), ``tw_op`` (data row or dead letter), ``tw_time`` (event time,
   µs since the epoch) and ``tw_row`` (the row in the host's wire format).  A key's rows of an invocation are
   decoded in one JSON parse (:func:`rows_decoder`): the aggregates read the wire values (timestamps as µs,
   dates as days, decimals exact), so a ``MIN`` / ``MAX`` result goes back to Spark in the same format.
2. **Watermark.**  ``withWatermark`` on the packs' largest event time (``watermark`` = allowed
   out-of-orderness); heartbeat rows (the job's ``flush``, past every row's time) are unioned in before it.
   A streaming window aggregation without a watermark is refused before any Spark job: windows fire only when
   the watermark passes their end.
3. **The state.**  :data:`timeweave.core.windows.operator.LAYOUT` in the bucket's MapState ``timeweave_win_keys``
   and index ``timeweave_win_index`` (:data:`STATE`), LZ4-compressed from 2 kB: per key, the accumulator rows of
   its slices (HOP and CUMULATE share slices) or its in-flight sessions, never the rows themselves.
4. **End of input.**  The flush's watermark reaches the core as ``END_OF_TIME``: every key's one core timer (at
   its next window's ``window_time``) is due, and every remaining window fires, as a batch run would emit it.

**Outputs** (one tagged stream split per micro-batch by :meth:`StreamingWindows.split`, written by the host's
writer, :mod:`timeweave.spark.host.writer`):

* main: the DataFrame door's schema and rows (``window_start``, ``window_end``, ``window_time``, the keys, the
  aggregates), one append-only row per window and key, once the watermark passes its ``window_time``;
* late: every row dropped from at least one window (Flink's observable rule, :mod:`timeweave.core.windows.late`):
  the input columns + ``reason`` (the windows missed, the watermark, whether it still counted elsewhere) +
  ``watermark`` (at its arrival) + ``missed_windows`` (``ARRAY<STRUCT<window_start, window_end>>``);
* dead letter: ``side`` (``input``), ``reason`` (``NULL event time column <time>``), ``row`` (the input row as
  JSON), the other doors' shape; a file source's unparsable records join it in the job
  (:mod:`timeweave.jobs.streaming`).

The event time is a ``TIMESTAMP`` or a ``TIMESTAMP_NTZ`` column, as in the DataFrame door: a TIMESTAMP's windows
follow the session time zone's wall clock (an IANA zone or a fixed offset such as ``+08:00``), a TIMESTAMP_NTZ's
its own clock, no zone entering (Flink's TIMESTAMP_LTZ(3) and TIMESTAMP(3)).  Spark's watermark needs a TIMESTAMP,
so an NTZ time travels as the instant a UTC clock shows it at (:func:`timeweave.spark.window_tagged.event_instant`;
the delay is still "largest event time minus delay") and the window columns come back as NTZ.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessorHandle

from timeweave.core.errors import SpecError
from timeweave.core.event_time import END_OF_INPUT_MS, end_of_input_ms
from timeweave.core.operator import StateLayout
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.windows import LateRow, SessionSpec, WindowAggregateOperator, WindowRow, WindowSpec
from timeweave.core.windows.accumulators import AggregateCall, Collect
from timeweave.core.windows.calls import AggregateText, accumulates, read_aggregates
from timeweave.core.windows.grouping import GroupingSets
from timeweave.core.windows.slicing import Slicing
from timeweave.core.windows.zones import TimeShift
from timeweave.spark.host.packs import key_groups
from timeweave.spark.host.processor import HostProcessor, StateVariables
from timeweave.spark.host.schema import DEFAULT_BUCKETS, KEY_TEXT, MALFORMED_ROW, OP, ROW, TIME, check_buckets
from timeweave.spark.host.state import PackedEntry, SparkKeyContext
from timeweave.spark.host.stream import DEAD_ROW, BatchOutputs, dead_letters, delay_ms, keyed_packs, run_operator
from timeweave.spark.host.wire import JSON_OPTIONS, from_wire
from timeweave.spark.host.writer import OutputCounts
from timeweave.spark.render import quote
from timeweave.spark.window_partials import COVERED, PARTIAL, PartialPacker, PartialPlan, argument_columns, partial_plan
from timeweave.spark.window_render import WINDOW_COLUMNS
from timeweave.spark.window_tagged import (
    DEAD,
    IN_ROW,
    KIND,
    LATE,
    LATE_COLUMNS,
    MAIN,
    MISSED,
    N_IN,
    REASON,
    SIDE,
    STATS,
    WATERMARK,
    dead_rows,
    event_instant,
    late_rows,
    micros_as,
    rows_decoder,
    session_zone,
    watermark_us_of,
)

WHERE = "window aggregate stream"

# -- the tagged (operator output) schema ---------------------------------------------------------------
KEY = "__tw_key"  # a main row's key text (tw_key): the key columns are read back from it in split
OUT = "__tw_out"  # a main row's window columns and aggregates, as a wire-format JSON object

#: Where the operator's state lives (with :data:`timeweave.core.windows.operator.LAYOUT`: the checkpoint layout).
STATE = StateVariables("timeweave_win_keys", "timeweave_win_index", PackedEntry)

_TIME_KEY = "\x00tw_time_us"  # a decoded row's event time (µs), what the core's time_of reads
_TEXT_KEY = "\x00tw_text"  # a decoded row's wire text: a late row goes to the late output as it came
ROWS_KEPT = "__tw_rows"  # the one core aggregate of a query that keeps its windows' rows (their wire texts)


def tagged_schema() -> T.StructType:
    """The operator's output: every output class in one row shape (split by :data:`KIND`)."""
    strings = (KIND, KEY, OUT, IN_ROW, REASON, MISSED, SIDE)
    return T.StructType([*(T.StructField(n, T.StringType()) for n in strings),
                         T.StructField(WATERMARK, T.LongType()), T.StructField(N_IN, T.LongType())])


# =================================================================================================
# Values: wire JSON in, wire JSON out
# =================================================================================================
def _json_value(value: Any) -> str:
    """One value as a JSON token Spark's ``from_json`` reads back exactly (NaN and infinities included)."""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    return json.dumps(value)


def result_converter(data_type: T.DataType) -> Callable[[Any], Any]:
    """How an aggregate's result becomes the output column's value: a DECIMAL result (AVG) rounded half up to the
    column's scale, as Spark rounds it; anything else as it is."""
    if isinstance(data_type, T.DecimalType):
        exponent = Decimal(1).scaleb(-data_type.scale)
        return lambda v: v.quantize(exponent, rounding=ROUND_HALF_UP) if isinstance(v, Decimal) else v
    return lambda v: v


# =================================================================================================
# The processor
# =================================================================================================
@dataclass
class _Sink:
    """One handler call's outputs: fired windows (key text, JSON), late rows, the input count (None: none)."""

    #: (key text, window columns and aggregates as JSON, None) or, keeping rows, (key text, window columns, row text)
    windows: list[tuple[str | None, str, str | None]] = field(default_factory=list)
    late: list[tuple[str, str, int, str]] = field(default_factory=list)  # (wire text, reason, watermark µs, missed)
    n_in: int | None = None


class WindowProcessor(HostProcessor):
    """The streaming host's processor of window aggregation: one bucket of GROUP BY keys, one core
    :class:`~timeweave.core.windows.WindowAggregateOperator` state per key.

    Picklable and small: the spec, the aggregates (parsed, input spellings), the schemas as JSON; the operator and
    the decoder are rebuilt in :meth:`open` on the executor.
    """

    state = STATE
    dead_ops = (DEAD_ROW, MALFORMED_ROW)  # MALFORMED_ROW: a source's malformed record (keyed_packs)
    # Every key holding state keeps a core timer at its next window's window_time, which the end of input passes.
    timer_at_end = False

    def __init__(self, spec: WindowSpec, aggregates: tuple[AggregateText, ...], time: str, input_json: str,
                 output_json: str, zone: str | None, end_ms: int = END_OF_INPUT_MS, keep_rows: bool = False,
                 partials: PartialPlan | None = None) -> None:
        self.spec = spec
        self.aggregates = aggregates
        self.time = time
        self.input_json = input_json
        self.output_json = output_json
        self.zone = zone
        self.end_ms = end_ms
        #: the windows keep their rows (as wire text) and a fired window emits them: Spark aggregates them
        self.keep_rows = keep_rows
        #: the packing step pre-aggregates rows per key and slice (:mod:`timeweave.spark.window_partials`)
        self.partials = partials

    def open(self, handle: StatefulProcessorHandle) -> None:
        schema = T.StructType.fromJson(json.loads(self.input_json))
        output = T.StructType.fromJson(json.loads(self.output_json))
        calls = [AggregateCall(Collect(), _TEXT_KEY, name=ROWS_KEPT)] if self.keep_rows else [
            a.call() for a in self.aggregates]
        self._op = WindowAggregateOperator(self.spec, calls, time_column=self.time, time_of=_time_of,
                                           time_zone=self.zone)
        self._decode = rows_decoder(schema)
        shift = TimeShift.of(self.zone)
        self._instant = (lambda ms: ms) if shift is None else shift.instant
        self._results = [(json.dumps(a.name), result_converter(output[a.name].dataType)) for a in self.aggregates]
        self._dead_reason = null_event_time_reason(self.time)

    @property
    def layout(self) -> StateLayout:
        return self._op.layout

    def new_sink(self) -> _Sink:
        return _Sink()

    def dead_frame(self, dead: pa.Table) -> pd.DataFrame:
        return _frame(_Sink(), *dead_letters(dead, self._dead_reason))

    def group(self, table: pa.Table, sink: _Sink) -> list[tuple[str, Any]]:
        if self.partials is not None:
            return self._group_partials(table, sink)
        sink.n_in = len(table)
        keys = table.column(KEY_TEXT).to_pylist()
        times = table.column(TIME).to_pylist()
        texts = table.column(ROW).to_pylist()
        by_key: dict[str | None, list[int]] = {}
        for i, key in enumerate(keys):
            by_key.setdefault(key, []).append(i)
        out = []
        for key, positions in by_key.items():
            rows = self._decode([texts[i] for i in positions])
            for row, i in zip(rows, positions, strict=True):
                row[_TIME_KEY] = times[i]
                row[_TEXT_KEY] = texts[i]
            out.append((key, rows))
        return out

    def _group_partials(self, table: pa.Table, sink: _Sink) -> list[tuple[str, Any]]:
        """The invocation's elements by key with slice partials: each key's partials (decoded) and the rows they
        cover (decoded only for a partial the operator finds late; see :mod:`timeweave.spark.window_partials`)."""
        plan = self.partials
        assert plan is not None
        ops = table.column(OP).to_numpy(zero_copy_only=False)
        partial = ops == PARTIAL
        sink.n_in = len(table) - int(partial.sum())
        names, order, bounds = key_groups(pd.DataFrame({KEY_TEXT: table.column(KEY_TEXT).to_numpy(zero_copy_only=False)}))
        texts = table.column(ROW)
        times = table.column(TIME).to_numpy(zero_copy_only=False)
        slicing = Slicing.of(plan.spec)
        out = []
        for code, name in enumerate(names):
            positions = order[bounds[code]:bounds[code + 1]]
            is_partial = partial[positions]
            parts = [plan.decode(texts[int(i)].as_py()) for i in positions[is_partial]]
            rows = positions[~is_partial]
            out.append((name, _KeyPartials(parts, rows, ops[rows] == COVERED, slicing.slice_end(times[rows] // 1000),
                                           texts, times, self._decode)))
        return out

    def process(self, ctx: SparkKeyContext, elements: list[dict[str, Any]] | _KeyPartials, sink: _Sink) -> None:
        if isinstance(elements, _KeyPartials):
            outputs = self._op.process_partials(ctx, elements.partials, elements.rows_of)
            plain = elements.plain()
            if plain:
                outputs += self._op.process_elements(ctx, plain)
            self._collect(ctx.key, outputs, sink)
            return
        self._collect(ctx.key, self._op.process_elements(ctx, elements), sink)

    def fire(self, ctx: SparkKeyContext, sink: _Sink) -> None:
        self._collect(ctx.key, self._op.on_watermark(ctx), sink)

    def _collect(self, key: str | None, outputs: list[Any], sink: _Sink) -> None:
        instant = self._instant
        for out in outputs:
            if out.__class__ is WindowRow:
                w = out.window
                parts = [f'"window_start":{instant(w.start) * 1000}', f'"window_end":{instant(w.end) * 1000}',
                         f'"window_time":{instant(w.end - 1) * 1000}']
                if self.keep_rows:
                    window = "{" + ",".join(parts) + "}"
                    sink.windows.extend((key, window, text) for text in out.values[0])
                    continue
                for (name, convert), value in zip(self._results, out.values, strict=True):
                    if value is not None:
                        parts.append(f"{name}:{_json_value(convert(value))}")
                sink.windows.append((key, "{" + ",".join(parts) + "}", None))
            elif out.__class__ is LateRow:
                missed = json.dumps([[instant(w.start) * 1000, instant(w.end) * 1000] for w in out.missed])
                sink.late.append((out.row[_TEXT_KEY], out.reason, watermark_us_of(out.watermark), missed))
            else:  # a DeadLetter: NULL-time rows never reach the operator (they are dead_ops)
                raise AssertionError(f"unexpected window operator output {out!r}")

    def frames(self, sink: _Sink, always: bool) -> Iterator[pd.DataFrame]:
        if always or sink.windows or sink.late:
            yield _frame(sink)


@dataclass
class _KeyPartials:
    """One key's elements of an invocation with slice partials: the partials ``(slice end, accumulator row)``
    and the positions of its other rows in the invocation's table (``covered``: covered by a partial, with the
    slice each is in), read only when asked for."""

    partials: list[tuple[int, list[Any]]]
    positions: np.ndarray
    covered: np.ndarray
    slices: np.ndarray
    texts: Any  # the table's tw_row column
    times: np.ndarray
    decode: Callable[[list[str]], list[dict[str, Any]]]

    def _rows(self, positions: np.ndarray) -> list[dict[str, Any]]:
        chosen = [int(i) for i in positions]
        texts = [self.texts[i].as_py() for i in chosen]
        rows = self.decode(texts)
        for row, i, text in zip(rows, chosen, texts, strict=True):
            row[_TIME_KEY] = int(self.times[i])
            row[_TEXT_KEY] = text
        return rows

    def rows_of(self, i: int) -> list[dict[str, Any]]:
        """The rows partial ``i`` covers, in arrival order."""
        return self._rows(self.positions[self.covered & (self.slices == self.partials[i][0])])

    def plain(self) -> list[dict[str, Any]]:
        """The key's rows no partial covers, in arrival order (none when the packing step made partials)."""
        return self._rows(self.positions[~self.covered]) if not self.covered.all() else []


def _time_of(row: dict[str, Any]) -> int:
    """A decoded row's event time in ms (the core's window unit), floored as Spark's ``unix_millis``."""
    return row[_TIME_KEY] // 1000


def _frame(sink: _Sink, dead: list[str] | None = None, dead_reasons: list[str] | None = None) -> pd.DataFrame:
    """The tagged rows of an invocation: windows, late rows, dead letters, one ``stats`` row when counted."""
    windows, late, dead = sink.windows, sink.late, dead or []
    stats = [] if sink.n_in is None else [sink.n_in]
    kinds = [MAIN] * len(windows) + [LATE] * len(late) + [DEAD] * len(dead) + [STATS] * len(stats)
    none_w, none_l, none_d, none_s = ([None] * len(x) for x in (windows, late, dead, stats))

    def column(values: list[Any]) -> Any:
        return pd.array(values, dtype=object)

    return pd.DataFrame({
        KIND: column(kinds),
        KEY: column([w[0] for w in windows] + none_l + none_d + none_s),
        OUT: column([w[1] for w in windows] + none_l + none_d + none_s),
        IN_ROW: column([w[2] for w in windows] + [r[0] for r in late] + dead + none_s),
        REASON: column(none_w + [r[1] for r in late] + (dead_reasons or []) + none_s),
        MISSED: column(none_w + [r[3] for r in late] + none_d + none_s),
        SIDE: column(none_w + none_l + ["input"] * len(dead) + none_s),
        WATERMARK: np.array([0] * len(windows) + [r[2] for r in late] + [0] * (len(dead) + len(stats)), dtype=np.int64),
        N_IN: np.array([0] * (len(windows) + len(late) + len(dead)) + stats, dtype=np.int64),
    })


# =================================================================================================
# Building the stream
# =================================================================================================
@dataclass(frozen=True)
class StreamingWindows:
    """A streaming window aggregation: the tagged stream and how to split each of its micro-batches (the
    :class:`~timeweave.spark.host.writer.TaggedStream` the host's writer takes).

    ``schema`` is the main output's (the DataFrame door's), ``input_schema`` the input's, ``keys`` the GROUP BY
    columns as the input spells them.  With ``kept_rows`` (a :class:`WindowQuery` that keeps rows) a main row of
    the stream is one row of a fired window, and :meth:`split` aggregates them with the DataFrame door.
    """

    stream: DataFrame
    schema: T.StructType
    input_schema: T.StructType
    keys: tuple[str, ...]
    kept_rows: WindowQuery | None = None

    compress_cache: ClassVar[bool] = True

    def count_columns(self) -> list[Column]:
        """The batch's counts, observed by the host's writer."""
        kind = F.col(KIND)
        return [
            F.count_if(kind == MAIN).alias("windows"),
            F.count_if(kind == LATE).alias("late"),
            F.count_if(kind == DEAD).alias("dead"),
            F.coalesce(F.sum(F.when(kind == STATS, F.col(N_IN))), F.lit(0)).alias("n_in"),
        ]

    def counts(self, observed: Mapping[str, Any]) -> OutputCounts:
        """:meth:`count_columns`' values as the writer's counts (dead letters with a NULL time are input rows;
        a source's malformed records, unioned in by the job, too)."""
        dead = int(observed["dead"])
        return OutputCounts({"rows_in": int(observed["n_in"]) + dead}, main=int(observed["windows"]),
                            late=int(observed["late"]), dead=dead)

    def key_values(self) -> list[Column]:
        """The key columns, read back from a main row's key text (:func:`timeweave.spark.host.wire.key_columns`,
        marked): one STRING key is the text after its marker (``n``: NULL), others the JSON of the key values."""
        text = F.col(KEY)
        if not self.keys:
            return []
        if len(self.keys) == 1 and isinstance(self.input_schema[self.keys[0]].dataType, T.StringType):
            name = self.keys[0]
            return [F.when(text == F.lit("n"), F.lit(None)).otherwise(text.substr(F.lit(2), F.length(text))).alias(name)]
        parsed = F.from_json(text, T.StructType([
            T.StructField(f"k{i}", self.input_schema[name].dataType) for i, name in enumerate(self.keys)]), JSON_OPTIONS)
        return [parsed.getField(f"k{i}").alias(name) for i, name in enumerate(self.keys)]

    def split(self, batch: DataFrame) -> BatchOutputs:
        """Main, late and dead-letter DataFrames of one micro-batch of :attr:`stream`."""
        kind = F.col(KIND)
        late = late_rows(batch, self.input_schema, self.schema["window_start"].dataType)
        if self.kept_rows is not None:
            return BatchOutputs(self.kept_rows.aggregate_fired(batch.where(kind == MAIN)), late, dead_rows(batch))
        key_set = set(self.keys)
        # the window columns travel as µs (T.LongType here) and come back in the event time's type (micros_as)
        carried = T.StructType([T.StructField(f.name, T.LongType()) if f.name in WINDOW_COLUMNS else f
                                for f in self.schema.fields if f.name not in key_set])
        keys = dict(zip(self.keys, self.key_values(), strict=True))
        main = batch.where(kind == MAIN).select(from_wire(F.col(OUT), carried).alias("__tw_o"), *keys.values())
        out = F.col("__tw_o")
        main = main.select(*[F.col(quote(f.name)) if f.name in key_set
                             else micros_as(out.getField(f.name), f.dataType).alias(f.name) if f.name in WINDOW_COLUMNS
                             else out.getField(f.name).alias(f.name) for f in self.schema.fields])
        return BatchOutputs(main, late, dead_rows(batch))


def _find(columns: Sequence[str], name: str) -> str | None:
    exact = [c for c in columns if c == name]
    if exact:
        return exact[0]
    folded = [c for c in columns if c.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


@dataclass(frozen=True)
class WindowQuery:
    """A window aggregation checked against its input (no Spark job): the spec (SESSION partitioned by the keys,
    as the DataFrame door merges sessions), the event-time column, the keys and the aggregates as the input
    spells them, the aggregates as written, the main output's schema (the DataFrame door's), the event time's
    type and ``zone`` (the time zone whose wall clock aligns the windows; None: none, for UTC and for a
    TIMESTAMP_NTZ event time).

    Two ways to compute it, one set of windows and one late rule (the core operator's):

    * ``aggregates`` non-empty: every aggregate is one the core accumulates (:func:`~timeweave.core.windows.calls.accumulates`):
      one accumulator row per key and slice (or session);
    * ``keep_rows``: any other aggregate (a Spark function, an expression, a pandas UDAF, ``FILTER`` on an
      expression) or ``grouping``: the core keeps each window's rows and emits them when it fires, and Spark
      aggregates a fired window's rows with the DataFrame door (:meth:`aggregate_fired`).  The operator is keyed
      by ``operator_keys`` (the keys, or with grouping sets the columns in every set), so all rows an output row
      aggregates fire together.
    """

    spec: WindowSpec
    time: str
    keys: tuple[str, ...]
    aggregates: tuple[AggregateText, ...]
    texts: Mapping[str, str | Column]
    schema: T.StructType
    time_type: T.DataType
    zone: str | None = None
    input_schema: T.StructType | None = None
    grouping: GroupingSets | None = None
    keep_rows: bool = False
    operator_keys: tuple[str, ...] = ()

    def tvf_schema(self) -> T.StructType:
        """A fired window's rows: the input's columns (nullable) and the window columns, the TVF's output."""
        assert self.input_schema is not None
        return T.StructType([*(T.StructField(f.name, f.dataType, True) for f in self.input_schema.fields),
                             *(T.StructField(c, self.schema[c].dataType, True) for c in WINDOW_COLUMNS)])

    def aggregate_rows(self, rows: DataFrame) -> DataFrame:
        """The window aggregation of fired windows' rows (:meth:`tvf_schema`), by the DataFrame door: the main
        output's rows, in :attr:`schema`'s column order."""
        from timeweave.spark.windows import window_aggregate

        if self.grouping is not None:
            out = window_aggregate(rows, self.texts, grouping_sets=self.grouping)
        else:
            out = window_aggregate(rows, self.texts, keys=self.keys)
        return out.select(*[F.col(quote(f.name)) for f in self.schema.fields])

    def aggregate_fired(self, main: DataFrame) -> DataFrame:
        """:meth:`aggregate_rows` over a streaming micro-batch's main rows (window JSON in ``OUT``, the row's wire
        text in ``IN_ROW``)."""
        tvf = self.tvf_schema()
        # the window columns travel as µs and come back in the event time's type (micros_as), as in split
        windows = T.StructType([T.StructField(c, T.LongType()) for c in WINDOW_COLUMNS])
        assert self.input_schema is not None
        parsed = main.select(from_wire(F.col(IN_ROW), self.input_schema).alias("__tw_r"),
                             from_wire(F.col(OUT), windows).alias("__tw_w"))
        rows = parsed.select(*[F.col("__tw_r").getField(f.name).alias(f.name) for f in self.input_schema.fields],
                             *[micros_as(F.col("__tw_w").getField(c), tvf[c].dataType).alias(c)
                               for c in WINDOW_COLUMNS])
        return self.aggregate_rows(rows)


def bind_window_query(df: DataFrame, aggregates: Mapping[str, str | Column], keys: str | Sequence[str], time: str,
                      window: WindowSpec, where: str,
                      grouping_sets: GroupingSets | Sequence[Sequence[str]] | None = None) -> WindowQuery:
    """Check a window aggregation for the core operator (streaming, backfill) against ``df``'s schema; errors name
    the argument (an aggregate Spark cannot analyse: its output name and Spark's message).  The output schema is
    the DataFrame door's over an empty input of the same schema (analysis only: no Spark job).  Whether the
    windows keep accumulators or rows: :class:`WindowQuery`."""
    from timeweave.spark.windows import bind, grouping_sets_of

    if not isinstance(aggregates, Mapping) or not aggregates:
        raise SpecError("aggregates", "expected a mapping of output name -> aggregate (SQL text or a Column; at least "
                        f"one), got {aggregates!r}", where=where)
    texts = dict(aggregates)
    key_list = [keys] if isinstance(keys, str) else list(keys)
    grouping = grouping_sets_of(grouping_sets, key_list, window, where)
    if grouping is not None:
        key_list = list(grouping.keys)
    keep_rows = grouping is not None or not all(accumulates(t) for t in texts.values())
    parsed = () if keep_rows else read_aggregates(texts)  # only what the core computes: no expression is evaluated
    time, kind, spec = bind(df.schema, time, window)
    zone = session_zone(df.sparkSession, kind)
    columns = df.columns
    spelled_keys = []
    for name in key_list:
        found = _find(columns, name) if isinstance(name, str) else None
        if found is None:
            raise SpecError("keys", f"column {name!r} not found; available: {columns}", where=where)
        spelled_keys.append(found)
    if len({k.lower() for k in spelled_keys}) != len(spelled_keys):
        raise SpecError("keys", f"a key column is named twice in {key_list}", where=where)
    taken = {c.lower() for c in (*WINDOW_COLUMNS, *spelled_keys)}
    for name, value in texts.items():
        if not isinstance(name, str) or not name:
            raise SpecError("aggregates", f"an output name must be a non-empty string, got {name!r}", where=where)
        if not (isinstance(value, Column) or (isinstance(value, str) and value.strip())):
            raise SpecError("aggregates", f"{name}: expected SQL text such as 'SUM(price)' or a Column, got {value!r}",
                            where=where)
        if name.lower() in taken:
            raise SpecError("aggregates", f"the output name {name!r} is already a window or key column", where=where)
    if len({n.lower() for n in texts}) != len(texts):
        raise SpecError("aggregates", f"two aggregates share an output name in {list(texts)}", where=where)
    resolved = []
    for a in parsed:
        spelled = {}
        for part in ("column", "filter"):
            name = getattr(a, part)
            if name is None:
                continue
            found = _find(columns, name)
            if found is None:
                raise SpecError("aggregates", f"{a.name} = {a.text}: column {name!r} not found; available: {columns}",
                                where=where)
            if part == "filter" and not isinstance(df.schema[found].dataType, T.BooleanType):
                raise SpecError("aggregates", f"{a.name} = {a.text}: the FILTER column {found!r} must be BOOLEAN, found "
                                f"{df.schema[found].dataType.simpleString()}", where=where)
            spelled[part] = found
        resolved.append(replace(a, **spelled))
    if isinstance(spec, SessionSpec):
        missing = [c for c in spec.partition_by if c.lower() not in {k.lower() for k in spelled_keys}]
        if missing:
            raise SpecError("keys", f"a SESSION partitioned by {list(spec.partition_by)} must group by those columns "
                            f"too; missing {missing}", where=where)
        spec = SessionSpec(spec.gap, tuple(spelled_keys))
    spelling = {k.lower(): k for k in spelled_keys}
    if grouping is not None:
        grouping = GroupingSets.of([[spelling[k.lower()] for k in s] for s in grouping.sets], where=where)
    schema = _analysed(df, texts, spelled_keys, grouping, time, window, where)
    operator_keys = tuple(grouping.common if grouping is not None else spelled_keys)
    return WindowQuery(spec, time, tuple(spelled_keys), tuple(resolved), texts, schema,
                       time_type=df.schema[time].dataType, zone=zone, input_schema=df.schema, grouping=grouping,
                       keep_rows=keep_rows, operator_keys=operator_keys)


def _analysed(df: DataFrame, texts: Mapping[str, str | Column], keys: list[str], grouping: GroupingSets | None,
              time: str, window: WindowSpec, where: str) -> T.StructType:
    """The DataFrame door's output schema over an empty input like ``df`` (analysis, no job); an aggregate Spark
    cannot parse or analyse is named with Spark's message."""
    from pyspark.errors import AnalysisException

    from timeweave.spark.windows import window_aggregate

    empty = df.sparkSession.createDataFrame([], df.schema)

    def analyse(aggregates: Mapping[str, str | Column]) -> T.StructType:
        if grouping is not None:
            return window_aggregate(empty, aggregates, grouping_sets=grouping, time=time, window=window).schema
        return window_aggregate(empty, aggregates, keys=keys, time=time, window=window).schema

    try:
        return analyse(texts)
    except AnalysisException as error:
        for name, value in texts.items():  # which one: each alone
            try:
                analyse({name: value})
            except AnalysisException as own:
                raise SpecError("aggregates", f"{name} = {value}: Spark cannot analyse it: "
                                f"{str(own).splitlines()[0]}", where=where) from None
        raise SpecError("aggregates", f"Spark cannot analyse the aggregates: {str(error).splitlines()[0]}",
                        where=where) from None


def window_aggregate_stream(
    df: DataFrame,
    aggregates: Mapping[str, str | Column],
    *,
    keys: str | Sequence[str] = (),
    time: str,
    window: WindowSpec,
    watermark: str | None,
    heartbeat: DataFrame | None = None,
    buckets: int = DEFAULT_BUCKETS,
    grouping_sets: GroupingSets | Sequence[Sequence[str]] | None = None,
    partials: bool = True,
) -> StreamingWindows:
    """The streaming window aggregation of a streaming DataFrame (see the module docstring): the arguments of
    :func:`timeweave.spark.windows.window_aggregate` (``aggregates``: output name -> any Spark aggregate as SQL
    text or a Column; ``COUNT(*)``, ``SUM(x)``, ``COUNT(DISTINCT x)``... as :mod:`timeweave.core.windows.calls`
    reads them are accumulated per slice, any other keeps the windows' rows, see :class:`WindowQuery`;
    ``grouping_sets`` instead of ``keys``), plus ``watermark``, the event
    time's allowed out-of-orderness (``"1 minute"``; required: windows fire when the watermark passes their
    end), ``heartbeat`` (a stream with one timestamp column whose rows move the watermark; the job's ``flush``
    writes one past every row's time, the end of input) and ``buckets`` (the key-hash buckets: part of the
    state layout, resume a checkpoint with the same value).  ``partials`` (default on) lets the packing step
    pre-aggregate rows per key and slice where the query allows it (:mod:`timeweave.spark.window_partials`: the
    same rows out, the state layout unchanged; off: every row reaches the operator).  Everything is checked
    before any Spark job.

    Example::

        from timeweave.core.windows import hop
        w = window_aggregate_stream(bids, {"cnt": "COUNT(*)", "total": "SUM(price)"}, keys="item",
                                    time="bidtime", window=hop("5 minutes", "10 minutes"), watermark="1 minute")
        def write(batch, batch_id):
            out = w.split(batch.persist())
            out.main.write.mode("append").parquet("out/windows")
        w.stream.writeStream.foreachBatch(write).option("checkpointLocation", "chk").start()
    """
    if watermark is None or (isinstance(watermark, str) and not watermark.strip()):
        raise SpecError("watermark", "a streaming window aggregation needs an event-time watermark (the allowed "
                        "out-of-orderness, e.g. watermark='1 minute'): windows are emitted when the watermark "
                        "passes their end, and without one none ever is", where=WHERE)
    end_ms = end_of_input_ms(delay_ms(watermark, "watermark"))
    check_buckets(buckets, WHERE)
    query = bind_window_query(df, aggregates, keys, time, window, WHERE, grouping_sets)
    for name in LATE_COLUMNS:
        if _find(df.columns, name) is not None:
            raise SpecError("df", f"column '{name}' is added by the late output; rename the input column", where=WHERE)
    plan = None if query.keep_rows or not partials else partial_plan(query.spec, query.aggregates, df.schema, query.zone)
    internal = keyed_packs(df, query.operator_keys, event_instant(F.col(quote(query.time)), query.time_type),
                           buckets, heartbeat, watermark,
                           extra=() if plan is None else argument_columns(plan, query.aggregates, df.schema),
                           packer=None if plan is None else PartialPacker(plan))
    processor = WindowProcessor(query.spec, query.aggregates, query.time, df.schema.json(), query.schema.json(),
                                query.zone, end_ms, query.keep_rows, plan)
    stream = run_operator(internal, processor, tagged_schema(), event_time=True)
    return StreamingWindows(stream, query.schema, df.schema, query.keys, query if query.keep_rows else None)


__all__ = [
    "LATE_COLUMNS",
    "STATE",
    "StreamingWindows",
    "WindowProcessor",
    "WindowQuery",
    "bind_window_query",
    "dead_rows",
    "late_rows",
    "result_converter",
    "rows_decoder",
    "session_zone",
    "tagged_schema",
    "window_aggregate_stream",
]
