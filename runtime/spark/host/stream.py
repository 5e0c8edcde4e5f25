"""Building a host's stream: heartbeats, watermark delays, the operator step, the outputs of a micro-batch.

The pieces every registration's stream builder uses (see "Watermarks and heartbeats" and "Late rows" in
:mod:`timeweave.spark.host`).  Each registration keeps its own plan shape around them (where its watermarks
are taken, where it packs): a checkpoint's operators are numbered by the plan, so a plan must not change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from timeweave.core.durations import parse_duration
from timeweave.core.pattern.row_functions import is_hidden
from timeweave.spark.host.packs import PACK, PACK_TIME, PACKS_WITH_TIME_SCHEMA, packs_with_latest_time
from timeweave.spark.host.schema import BUCKET, DEAD_TS, HEARTBEAT, MALFORMED_ROW, OP, ROW, TIME, TS
from timeweave.spark.host.wire import key_columns, to_wire
from timeweave.spark.render import quote
from timeweave.spark.schema import column as named
from timeweave.spark.sources import take_malformed

#: ``tw_op`` of a one-input operator's row / of its dead letter (NULL event time; ``HEARTBEAT`` is 3).
DATA_ROW, DEAD_ROW = 0, 4


@dataclass(frozen=True)
class BatchOutputs:
    """One micro-batch split into its tagged outputs (lazy DataFrames over the batch), by
    :class:`~timeweave.core.operator.Tag`: ``main``, ``late``, ``dead_letter`` and, for an operator that
    emits a changelog, ``changelog`` (None: none)."""

    main: DataFrame
    late: DataFrame
    dead_letter: DataFrame
    changelog: DataFrame | None = None


def heartbeat_rows(heartbeat: DataFrame, like: DataFrame) -> DataFrame:
    """Heartbeat rows in ``like``'s internal schema: op :data:`HEARTBEAT`, bucket 0, the heartbeat's time as
    ``tw_ts``, every other column NULL.

    Bucket 0, never a NULL bucket: PySpark builds the grouping keys from pandas, where one NULL in an
    Arrow batch turns the batch's integer bucket column into floats, and a key 10.0 addresses other
    state than the key 10 (a later batch then misses the bucket's state).  The host drops heartbeat rows
    (:class:`~timeweave.spark.host.processor.HostProcessor`), so bucket 0 only sees the watermark move.
    """
    (time_column,) = heartbeat.columns
    columns = []
    for field in like.schema.fields:
        if field.name == OP:
            columns.append(F.lit(HEARTBEAT).cast(field.dataType).alias(OP))
        elif field.name == BUCKET:
            columns.append(F.lit(0).cast(field.dataType).alias(BUCKET))
        elif field.name == TS:
            columns.append(named(time_column).cast("timestamp").alias(TS))
        else:
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
    return heartbeat.select(*columns)


def delay_ms(delay: str, argument: str = "watermark_delay") -> int:
    """A ``withWatermark`` delay (``"5 seconds"``, ``"1500 milliseconds"``) in ms, as Spark subtracts it.

    >>> delay_ms("1500 milliseconds"), delay_ms("2 seconds")
    (1500, 2000)
    """
    return parse_duration(delay, argument) // 1000


def run_operator(internal: DataFrame, processor: StatefulProcessor, output: T.StructType, *, event_time: bool
                 ) -> DataFrame:
    """The operator step: ``internal`` (packs, grouped by bucket) through ``processor`` (append mode)."""
    return internal.groupBy(BUCKET).transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=output,
        outputMode="Append",
        timeMode="EventTime" if event_time else "None",
    )


def dead_letters(dead: pa.Table, reason: str) -> tuple[list[str], list[str]]:
    """An invocation's dead letters (rows of op :data:`DEAD_ROW` / :data:`MALFORMED_ROW`): their ``row`` texts and
    reasons (``reason`` for a NULL event time; a malformed record's own).

    >>> dead_letters(pa.table({OP: pa.array([4, 6], pa.int8()), ROW: ['{"a":1}', '{"reason":"bad","row":"x"}']}), "NULL")
    (['{"a":1}', 'x'], ['NULL', 'bad'])
    """
    texts = dead.column(ROW).to_pylist()
    ops = dead.column(OP).to_pylist()
    reasons = [reason] * len(texts)
    for i, op in enumerate(ops):
        if op == MALFORMED_ROW:
            carried = json.loads(texts[i])
            texts[i], reasons[i] = carried["row"], carried["reason"]
    return texts, reasons


__all__ = ["BatchOutputs", "dead_letters", "delay_ms", "heartbeat_rows", "run_operator"]


def keyed_packs(df: DataFrame, keys: list[str] | tuple[str, ...], event_ts: Column, buckets: int,
                heartbeat: DataFrame | None, watermark: str, *, extra: Sequence[Column] = (),
                packer: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]] | None = None) -> DataFrame:
    """A one-input operator's input (MATCH_RECOGNIZE, window aggregation): ``df``'s rows keyed by ``keys`` into
    ``buckets``, packed per source partition and bucket with each pack's largest event time (``event_ts``, a
    TIMESTAMP column), heartbeats unioned in, watermarked ``watermark`` behind that time.

    One projection over the input, dead letters included: a row whose ``event_ts`` is NULL travels as op
    :data:`DEAD_ROW` with its original columns as JSON.  The event times travel inside the packs only: no
    operator input column carries watermark metadata, so Spark's late-row filter (event_time <= watermark)
    does not apply and the core decides lateness (see "Late rows" in :mod:`timeweave.spark.host`).  The plan
    is part of a checkpoint: its shape must not change.

    A processor fed by it lists :data:`~timeweave.spark.host.schema.MALFORMED_ROW` in its ``dead_ops``.

    ``extra`` columns ride along to ``packer`` (the packing step, default :func:`packs_with_latest_time`), which
    must return packs of :data:`PACKS_WITH_TIME_SCHEMA` without them (the window aggregate's slice partials).
    """
    dead = event_ts.isNull()
    # the input's own columns (not MATCH_RECOGNIZE's computed functions: core.pattern.row_functions)
    original = F.to_json(F.struct(*[F.col(quote(c)) for c in df.columns if not is_hidden(c)]))
    op = F.when(dead, F.lit(DEAD_ROW)).otherwise(F.lit(DATA_ROW))
    time = F.when(dead, F.lit(DEAD_TS).cast("timestamp")).otherwise(event_ts)
    row = F.when(dead, original).otherwise(to_wire(df))
    scanned, malformed, bad_row = take_malformed(df)
    if malformed is not None:
        # One scan: the source's malformed records ride in this projection as dead letters (op MALFORMED_ROW,
        # their reason and record), instead of a second scan of the source unioned in after the operator.
        bad = malformed.isNotNull()
        op = F.when(bad, F.lit(MALFORMED_ROW)).otherwise(op)
        time = F.when(bad, F.lit(DEAD_TS).cast("timestamp")).otherwise(time)
        row = F.when(bad, F.to_json(F.struct(malformed.alias("reason"), bad_row.alias("row")))).otherwise(row)
    rows = scanned.select(
        *key_columns(df, keys, buckets, marked=True),
        op.cast("tinyint").alias(OP),
        F.unix_micros(time).alias(TIME),
        row.alias(ROW),
        *extra,
    )
    internal = rows.mapInArrow(packer or packs_with_latest_time, PACKS_WITH_TIME_SCHEMA).select(
        BUCKET, F.lit(DATA_ROW).cast("tinyint").alias(OP), F.timestamp_micros(F.col(PACK_TIME)).alias(TS), PACK,
    )
    if heartbeat is not None:
        # Heartbeats travel in bucket 0, never a NULL bucket (see heartbeat_rows).
        internal = internal.unionByName(heartbeat_rows(heartbeat, internal))
    return internal.withWatermark(TS, watermark).drop(TS)

