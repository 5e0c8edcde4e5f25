"""Streaming continuous ``GROUP BY`` (no window): the core :class:`~timeweave.core.updates.GroupAggregateOperator`
per GROUP BY key on the streaming host (:mod:`timeweave.spark.host`), its result written as a changelog.

A registration: what is the operator's own.  How a key's rows fold into its accumulators, when a result changes
and which ``+I`` / ``-U`` / ``+U`` / ``-D`` rows say so (retract or upsert), retractions of an updating input and
idle-state retention are the core's (:mod:`timeweave.core.updates`); buckets, packs, the state bridge, heartbeats
and the watermark are the host's; the element decoding is the window registration's
(:func:`timeweave.spark.window_streaming.rows_decoder`).  What is left here:

1. **The elements.**  Every input row becomes ``tw_key`` (the GROUP BY values as one marked text: NULL is a group
   of its own, as in SQL), ``tw_time`` (event time) and ``tw_row`` (the row in the host's wire format), through
   :func:`timeweave.spark.host.stream.keyed_packs`.  A row with a NULL event time goes to the dead letter.
2. **Watermark.**  The event time's watermark drives idle-state retention only (a GROUP BY result is never final:
   every row changes its group's result at once, in the micro-batch that reads it; no row is late).
3. **The state.**  The core's :data:`~timeweave.core.updates.group_aggregate.ACCUMULATORS` row, the emitted result
   and the cleanup time per key, in the bucket's MapState ``timeweave_grp_keys`` (:data:`STATE`, LZ4 from 2 kB).

**Outputs** (one tagged stream split per micro-batch, written by the host's writer):

* main: the changelog: the GROUP BY columns, the aggregates (Spark's types for ``GROUP BY`` over the same
  input) and ``op`` (``+I`` / ``-U`` / ``+U`` / ``-D``, :class:`~timeweave.core.updates.ChangelogMode`'s kinds).
  One micro-batch's changes of a key are the change from its result before the batch to its result after it
  (Flink's mini-batch aggregation): ``-U old`` + ``+U new`` in retract mode, ``+U new`` in upsert mode.
  Apply it with :func:`timeweave.spark.changelog_sink.apply_changelog`;
* dead letter: ``side`` (``input``), ``reason`` (a NULL event time; an op code that is not one; a value an
  aggregate cannot take; a retraction of a group the operator does not hold), ``row`` (the row as JSON);
* late: none (kept empty: the writer's shape).

Example::

    agg = group_aggregate_stream(clicks, {"cnt": "COUNT(url)"}, keys="user", time="cTime",
                                 watermark="5 seconds", changelog="upsert")
    agg.stream.writeStream.foreachBatch(TaggedWriter(spark, agg, paths, metrics)).start()
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
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
from timeweave.core.spec import StateRetention
from timeweave.core.updates import Change, ChangelogMode, GroupAggregateOperator, GroupAggregateSpec, Rejected
from timeweave.core.windows.calls import AggregateText, read_aggregates
from timeweave.spark.host.processor import HostProcessor, StateVariables
from timeweave.spark.host.schema import DEFAULT_BUCKETS, KEY_TEXT, MALFORMED_ROW, ROW, check_buckets
from timeweave.spark.host.state import PackedEntry, SparkKeyContext
from timeweave.spark.host.stream import DEAD_ROW, BatchOutputs, dead_letters, delay_ms, keyed_packs, run_operator
from timeweave.spark.host.wire import from_wire
from timeweave.spark.host.writer import OutputCounts
from timeweave.spark.render import quote
from timeweave.spark.window_streaming import _find, _json_value, result_converter, rows_decoder

WHERE = "group aggregate stream"

#: The changelog's op-code column (its values: ``ChangelogMode.kinds``).
OP_COLUMN = "op"

# -- the tagged (operator output) schema ---------------------------------------------------------------
KIND = "__tw_kind"
OUT = "__tw_out"  # a changelog row's keys and aggregates, as a wire-format JSON object
OPCODE = "__tw_opcode"
IN_ROW = "__tw_in_row"  # a dead letter's row (wire JSON, or the input's to_json for a NULL time)
REASON = "__tw_reason"
SIDE = "__tw_side"
N_IN = "__tw_n_in"
MAIN, DEAD, STATS = "change", "dead", "stats"

#: Where the operator's state lives (with the core's layout: the checkpoint layout).
STATE = StateVariables("timeweave_grp_keys", "timeweave_grp_index", PackedEntry)

_TEXT_KEY = "\x00tw_text"  # a decoded row's wire text: a rejected row goes to the dead letter as it came


def tagged_schema() -> T.StructType:
    """The operator's output: every output class in one row shape (split by :data:`KIND`)."""
    strings = (KIND, OUT, OPCODE, IN_ROW, REASON, SIDE)
    return T.StructType([*(T.StructField(n, T.StringType()) for n in strings), T.StructField(N_IN, T.LongType())])


@dataclass
class _Sink:
    """One handler call's outputs: changes (op, JSON), dead letters (wire text, reason), the input count."""

    changes: list[tuple[str, str]] = field(default_factory=list)
    dead: list[tuple[str, str]] = field(default_factory=list)
    n_in: int | None = None


class GroupAggregateProcessor(HostProcessor):
    """The streaming host's processor of a continuous GROUP BY: one bucket of keys, one core
    :class:`~timeweave.core.updates.GroupAggregateOperator` state per key.  Picklable and small: the spec's parts
    and the schemas as JSON; the operator and the decoder are rebuilt in :meth:`open` on the executor."""

    state = STATE
    dead_ops = (DEAD_ROW, MALFORMED_ROW)  # MALFORMED_ROW: a source's malformed record (keyed_packs)
    timer_at_end = False

    def __init__(self, keys: tuple[str, ...], aggregates: tuple[AggregateText, ...], changelog: ChangelogMode,
                 op_column: str | None, retention: StateRetention | None, time: str, input_json: str,
                 output_json: str, end_ms: int = END_OF_INPUT_MS) -> None:
        self.keys = keys
        self.aggregates = aggregates
        self.changelog = changelog
        self.op_column = op_column
        self.retention = retention
        self.time = time
        self.input_json = input_json
        self.output_json = output_json
        self.end_ms = end_ms

    def open(self, handle: StatefulProcessorHandle) -> None:
        output = T.StructType.fromJson(json.loads(self.output_json))
        spec = GroupAggregateSpec(self.keys, tuple(a.call() for a in self.aggregates), changelog=self.changelog,
                                  op_column=self.op_column, retention=self.retention, output=WHERE)
        self._op = GroupAggregateOperator(spec)
        self._decode = rows_decoder(T.StructType.fromJson(json.loads(self.input_json)))
        self._names = [json.dumps(n) for n in (*self.keys, *(a.name for a in self.aggregates))]
        self._convert = [result_converter(output[n].dataType) for n in (*self.keys, *(a.name for a in self.aggregates))]
        self._dead_reason = null_event_time_reason(self.time)

    @property
    def layout(self) -> StateLayout:
        return self._op.layout

    def new_sink(self) -> _Sink:
        return _Sink()

    def dead_frame(self, dead: pa.Table) -> pd.DataFrame:
        sink = _Sink(dead=list(zip(*dead_letters(dead, self._dead_reason), strict=True)))
        return _frame(sink)

    def group(self, table: pa.Table, sink: _Sink) -> list[tuple[str, Any]]:
        sink.n_in = len(table)
        keys = table.column(KEY_TEXT).to_pylist()
        texts = table.column(ROW).to_pylist()
        by_key: dict[str | None, list[int]] = {}
        for i, key in enumerate(keys):
            by_key.setdefault(key, []).append(i)
        out = []
        for key, positions in by_key.items():
            rows = self._decode([texts[i] for i in positions])
            for row, i in zip(rows, positions, strict=True):
                row[_TEXT_KEY] = texts[i]
            out.append((key, rows))
        return out

    def process(self, ctx: SparkKeyContext, elements: list[dict[str, Any]], sink: _Sink) -> None:
        self._collect(self._op.process_elements(ctx, elements), sink)

    def fire(self, ctx: SparkKeyContext, sink: _Sink) -> None:
        self._collect(list(self._op.on_watermark(ctx)), sink)

    def _collect(self, outputs: list[Any], sink: _Sink) -> None:
        for out in outputs:
            if out.__class__ is Change:
                parts = [f"{name}:{_json_value(convert(value))}"
                         for name, convert, value in zip(self._names, self._convert, (*out.key, *out.values),
                                                         strict=True) if value is not None]
                sink.changes.append((out.op, "{" + ",".join(parts) + "}"))
            elif out.__class__ is Rejected:
                sink.dead.append((out.row[_TEXT_KEY], out.reason))
            else:
                raise AssertionError(f"unexpected group aggregate output {out!r}")

    def frames(self, sink: _Sink, always: bool) -> Iterator[pd.DataFrame]:
        if always or sink.changes or sink.dead:
            yield _frame(sink)


def _frame(sink: _Sink) -> pd.DataFrame:
    """The tagged rows of an invocation: changes, dead letters, one ``stats`` row when counted."""
    changes, dead = sink.changes, sink.dead
    stats = [] if sink.n_in is None else [sink.n_in]
    none_c, none_d, none_s = ([None] * len(x) for x in (changes, dead, stats))

    def column(values: list[Any]) -> Any:
        return pd.array(values, dtype=object)

    return pd.DataFrame({
        KIND: column([MAIN] * len(changes) + [DEAD] * len(dead) + [STATS] * len(stats)),
        OUT: column([o for _, o in changes] + none_d + none_s),
        OPCODE: column([op for op, _ in changes] + none_d + none_s),
        IN_ROW: column(none_c + [text for text, _ in dead] + none_s),
        REASON: column(none_c + [reason for _, reason in dead] + none_s),
        SIDE: column(none_c + ["input"] * len(dead) + none_s),
        N_IN: np.array([0] * (len(changes) + len(dead)) + stats, dtype=np.int64),
    })


@dataclass(frozen=True)
class StreamingGroupAggregate:
    """A streaming continuous GROUP BY: the tagged stream and how to split each micro-batch (the
    :class:`~timeweave.spark.host.writer.TaggedStream` the host's writer takes).  ``schema`` is the changelog's
    (keys, aggregates, ``op``), ``input_schema`` the input's, ``keys`` the GROUP BY columns as the input spells
    them, ``changelog`` the encoding."""

    stream: DataFrame
    schema: T.StructType
    input_schema: T.StructType
    keys: tuple[str, ...]
    changelog: ChangelogMode

    compress_cache: ClassVar[bool] = True

    @property
    def value_names(self) -> tuple[str, ...]:
        """The aggregates' output names."""
        return tuple(f.name for f in self.schema.fields if f.name not in self.keys and f.name != OP_COLUMN)

    def count_columns(self) -> list[Column]:
        """The batch's counts, observed by the host's writer."""
        kind = F.col(KIND)
        return [F.count_if(kind == MAIN).alias("changes"), F.count_if(kind == DEAD).alias("dead"),
                F.coalesce(F.sum(F.when(kind == STATS, F.col(N_IN))), F.lit(0)).alias("n_in")]

    def counts(self, observed: Mapping[str, Any]) -> OutputCounts:
        """The writer's counts: dead letters with a NULL time never reached the operator, so they are input rows
        too; rows the operator rejected are counted in ``n_in`` already (a source's malformed records, unioned in
        by the job, are counted as dead and input)."""
        dead = int(observed["dead"])
        return OutputCounts({"rows_in": int(observed["n_in"]) + dead}, main=int(observed["changes"]), late=0,
                            dead=dead)

    def split(self, batch: DataFrame) -> BatchOutputs:
        """The changelog, (empty) late and dead-letter DataFrames of one micro-batch of :attr:`stream`."""
        kind = F.col(KIND)
        values = T.StructType([f for f in self.schema.fields if f.name != OP_COLUMN])
        main = batch.where(kind == MAIN).select(from_wire(F.col(OUT), values).alias("__tw_o"),
                                                F.col(OPCODE).alias(OP_COLUMN))
        main = main.select(*[F.col("__tw_o").getField(f.name).alias(f.name) for f in values.fields], OP_COLUMN)
        late = batch.where(F.lit(False)).select(from_wire(F.col(IN_ROW), self.input_schema).alias("__tw_in")
                                                ).select("__tw_in.*")
        dead = batch.where(kind == DEAD).select(F.col(SIDE).alias("side"), F.col(REASON).alias("reason"),
                                                F.col(IN_ROW).alias("row"))
        return BatchOutputs(main, late, dead)


@dataclass(frozen=True)
class GroupAggregateQuery:
    """A continuous GROUP BY checked against its input (no Spark job): the keys, the aggregates (columns as the
    input spells them), the op column and event-time column as spelled, and the changelog's schema."""

    keys: tuple[str, ...]
    aggregates: tuple[AggregateText, ...]
    op_column: str | None
    time: str
    schema: T.StructType


def _column(df: DataFrame, name: Any, argument: str, where: str) -> str:
    found = _find(df.columns, name) if isinstance(name, str) else None
    if found is None:
        raise SpecError(argument, f"column {name!r} not found; available: {df.columns}", where=where)
    return found


def bind_group_aggregate(df: DataFrame, aggregates: Mapping[str, str], keys: str | Sequence[str], time: str,
                         op_column: str | None, where: str = WHERE) -> GroupAggregateQuery:
    """Check a continuous GROUP BY against ``df``'s schema; errors name the argument.  The aggregates' output types
    are Spark's for the batch ``GROUP BY`` over an empty input of the same schema (analysis only: no Spark job)."""
    parsed = read_aggregates(dict(aggregates) if isinstance(aggregates, Mapping) else aggregates)
    key_list = [keys] if isinstance(keys, str) else list(keys)
    if not key_list:
        raise SpecError("keys", "a continuous GROUP BY needs one or more key columns (a global aggregate is not "
                        "supported)", where=where)
    spelled_keys = [_column(df, k, "keys", where) for k in key_list]
    if len({k.lower() for k in spelled_keys}) != len(spelled_keys):
        raise SpecError("keys", f"a key column is named twice in {key_list}", where=where)
    time = _column(df, time, "time", where)
    if not isinstance(df.schema[time].dataType, T.TimestampType):
        raise SpecError("time", f"column {time!r} is {df.schema[time].dataType.simpleString()}: the streaming GROUP "
                        "BY needs a TIMESTAMP event time (Spark's watermark is on TIMESTAMP); cast it", where=where)
    if op_column is not None:
        op_column = _column(df, op_column, "op_column", where)
        if op_column in spelled_keys:
            raise SpecError("op_column", f"the op column {op_column!r} is a GROUP BY key", where=where)
    resolved = []
    taken = {k.lower() for k in spelled_keys} | {OP_COLUMN}
    for a in parsed:
        if a.name.lower() in taken:
            raise SpecError("aggregates", f"the output name {a.name!r} is already a key column or the changelog's "
                            f"{OP_COLUMN!r} column", where=where)
        taken.add(a.name.lower())
        spelled = {}
        for part in ("column", "filter"):
            name = getattr(a, part)
            if name is None:
                continue
            found = _find(df.columns, name)
            if found is None:
                raise SpecError("aggregates", f"{a.name} = {a.text}: column {name!r} not found; available: "
                                f"{df.columns}", where=where)
            if part == "filter" and not isinstance(df.schema[found].dataType, T.BooleanType):
                raise SpecError("aggregates", f"{a.name} = {a.text}: the FILTER column {found!r} must be BOOLEAN, "
                                f"found {df.schema[found].dataType.simpleString()}", where=where)
            spelled[part] = found
        resolved.append(replace(a, **spelled))
    empty = df.sparkSession.createDataFrame([], df.schema)
    values = empty.groupBy(*[F.col(quote(k)) for k in spelled_keys]).agg(
        *[F.expr(a.text).alias(a.name) for a in resolved]).schema
    schema = T.StructType([*values.fields, T.StructField(OP_COLUMN, T.StringType(), False)])
    return GroupAggregateQuery(tuple(spelled_keys), tuple(resolved), op_column, time, schema)


def where_rows(df: DataFrame, condition: str | None, qualifier: str | None = None, where: str = WHERE) -> DataFrame:
    """The rows of ``df`` that satisfy a continuous GROUP BY query's ``WHERE`` condition (its text as written, which
    Spark evaluates; columns may be qualified by ``qualifier``, the query's alias or relation name), in ``df``'s
    columns; ``df`` itself without a condition.  A condition Spark cannot resolve is a
    :class:`~timeweave.core.errors.SpecError` naming it (no Spark job).

    Example::

        rows = where_rows(clicks, "c.url <> './home'", "c")
    """
    if condition is None:
        return df
    source = df.alias(qualifier) if qualifier else df
    try:
        kept = source.where(F.expr(condition))
        kept.schema  # noqa: B018 - analyses the condition now
    except Exception as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SpecError("query", f"WHERE {condition}: {first}", where=where) from None
    return kept.select(*[F.col(quote(c)) for c in df.columns]) if not qualifier else kept.select(
        *[F.col(f"{quote(qualifier)}.{quote(c)}") for c in df.columns])


def group_aggregate_stream(
    df: DataFrame,
    aggregates: Mapping[str, str],
    *,
    keys: str | Sequence[str],
    time: str,
    watermark: str,
    changelog: ChangelogMode | str = ChangelogMode.RETRACT,
    op_column: str | None = None,
    retention: StateRetention | None = None,
    heartbeat: DataFrame | None = None,
    buckets: int = DEFAULT_BUCKETS,
) -> StreamingGroupAggregate:
    """The continuous GROUP BY of a streaming DataFrame as a changelog (see the module docstring).

    ``aggregates``: output name -> ``COUNT(*)``, ``COUNT(url)``, ``SUM(x)``, ``COUNT(DISTINCT x)``... as
    :mod:`timeweave.core.windows.calls` reads them; ``keys``: the GROUP BY columns; ``time``: the TIMESTAMP event
    time, whose ``watermark`` (allowed out-of-orderness) drives idle-state ``retention``; ``changelog``:
    ``"retract"`` or ``"upsert"``; ``op_column``: the op-code column of an updating input (``+I``/``+U`` add,
    ``-U``/``-D`` take back); ``heartbeat`` and ``buckets`` as the other streaming doors take them.  Everything
    is checked before any Spark job.
    """
    mode = ChangelogMode.parse(changelog, where=WHERE)
    mode.check(WHERE, updating=True, unique_key=("keys",))
    if watermark is None or (isinstance(watermark, str) and not watermark.strip()):
        raise SpecError("watermark", "a streaming GROUP BY needs an event-time watermark (the allowed "
                        "out-of-orderness, e.g. watermark='5 seconds'): it is the clock of idle-state retention "
                        "and of the end of input", where=WHERE)
    end_ms = end_of_input_ms(delay_ms(watermark, "watermark"))
    check_buckets(buckets, WHERE)
    query = bind_group_aggregate(df, aggregates, keys, time, op_column)
    # the core checks the spec (retractable aggregates for an updating input, retention) before any Spark job
    GroupAggregateSpec(query.keys, tuple(a.call() for a in query.aggregates), changelog=mode,
                       op_column=query.op_column, retention=retention, output=WHERE)
    internal = keyed_packs(df, query.keys, F.col(quote(query.time)), buckets, heartbeat, watermark)
    processor = GroupAggregateProcessor(query.keys, query.aggregates, mode, query.op_column, retention, query.time,
                                        df.schema.json(), query.schema.json(), end_ms)
    stream = run_operator(internal, processor, tagged_schema(), event_time=True)
    return StreamingGroupAggregate(stream, query.schema, df.schema, query.keys, mode)


__all__ = [
    "OP_COLUMN",
    "STATE",
    "GroupAggregateProcessor",
    "GroupAggregateQuery",
    "StreamingGroupAggregate",
    "bind_group_aggregate",
    "group_aggregate_stream",
    "tagged_schema",
    "where_rows",
]
