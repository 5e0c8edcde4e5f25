"""What the window registrations share (window aggregation, Top-N / deduplication, join; streaming and backfill):
the tagged output's common columns and kinds, the late and dead-letter outputs' shapes, the wire values, how a
TIMESTAMP or TIMESTAMP_NTZ event time travels (µs, a TIMESTAMP for the watermark) and comes back, the session time
zone that aligns windows (the batch door's :func:`~timeweave.spark.windows.session_zone`), and the backfills'
Arrow value format.  Imports no registration: each
window registration imports this, never another registration.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.event_time import watermark_as_time
from timeweave.core.state import END_OF_TIME, NO_WATERMARK
from timeweave.spark.host import backfill as host
from timeweave.spark.host.wire import from_wire
from timeweave.spark.windows import session_zone

# -- the tagged output's common columns (each registration adds its own) ------------------------------------------
KIND = "__tw_kind"
IN_ROW = "__tw_in_row"  # a late row's wire text / a dead letter's to_json
REASON = "__tw_reason"
WATERMARK = "__tw_watermark"  # a late row's watermark at arrival (µs)
MISSED = "__tw_missed"  # a late row's missed windows: JSON [[start µs, end µs], ...]
SIDE = "__tw_side"
N_IN = "__tw_n_in"
MAIN, LATE, DEAD, STATS = "window", "late", "dead", "stats"
#: Columns the late output adds to the input columns.
LATE_COLUMNS = ("reason", "watermark", "missed_windows")


def rows_decoder(schema: T.StructType) -> Callable[[list[str]], list[dict[str, Any]]]:
    """The function turning ``tw_row`` wire texts into row dicts of wire values (one JSON parse per call):
    timestamps stay µs and dates days (what the output's wire format wants back), decimals are exact
    ``Decimal``, FLOAT / DOUBLE columns floats (a FLOAT as its float32 value, as Spark sums it).

    >>> s = T.StructType([T.StructField("p", T.DecimalType(5, 2)), T.StructField("w", T.DoubleType()),
    ...                   T.StructField("t", T.TimestampType())])
    >>> rows_decoder(s)(['{"p":1.50,"w":2,"t":7}', '{"w":NaN}'])
    [{'p': Decimal('1.50'), 'w': 2.0, 't': 7}, {'p': None, 'w': nan, 't': None}]
    """
    floats = [(f.name, isinstance(f.dataType, T.FloatType)) for f in schema.fields
              if isinstance(f.dataType, T.FloatType | T.DoubleType)]
    raw_decode = json.JSONDecoder(parse_float=Decimal).raw_decode
    template = dict.fromkeys(schema.names)
    width = len(template)

    def decode(texts: list[str]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = raw_decode("[" + ",".join(texts) + "]")[0]
        # NULL fields are absent from the wire text (ignoreNullFields): such a row gets the template's None
        if min(map(len, rows), default=width) < width:
            rows = [row if len(row) == width else {**template, **row} for row in rows]
        for name, single in floats:
            for row in rows:
                value = row.get(name)
                if value is not None:
                    row[name] = float(np.float32(value)) if single else float(value)
        return rows

    return decode


def watermark_us_of(ms: int) -> int:
    """A late row's watermark (core ms, or the end of input) as a TIMESTAMP value (µs)."""
    return watermark_as_time(ms if ms in (NO_WATERMARK, END_OF_TIME) else ms * 1000)


def late_rows(batch: DataFrame, input_schema: T.StructType, window_type: T.DataType) -> DataFrame:
    """The late output of a window operator's tagged micro-batch (rows of kind :data:`LATE`): the input columns
    (``input_schema``) + ``reason`` + ``watermark`` (at arrival) + ``missed_windows`` (bounds); the watermark and
    the bounds have ``window_type``, the event time's (TIMESTAMP_NTZ stays NTZ: see :func:`micros_as`)."""
    return batch.where(F.col(KIND) == LATE).select(
        from_wire(F.col(IN_ROW), input_schema).alias("__tw_in"),
        F.col(REASON).alias("reason"),
        *late_times(window_type),
    ).select("__tw_in.*", "reason", "watermark", "missed_windows")


def late_times(window_type: T.DataType) -> list[Column]:
    """A late row's ``watermark`` and ``missed_windows`` (``ARRAY<STRUCT<window_start, window_end>>``) columns, of
    the event time's type ``window_type``."""
    missed = F.from_json(F.col(MISSED), T.ArrayType(T.ArrayType(T.LongType())))
    return [micros_as(F.col(WATERMARK), window_type).alias("watermark"),
            F.transform(missed, lambda w: F.struct(
                micros_as(w[0], window_type).alias("window_start"),
                micros_as(w[1], window_type).alias("window_end"))).alias("missed_windows")]


def dead_rows(batch: DataFrame) -> DataFrame:
    """The dead letters of a window operator's tagged micro-batch (rows of kind :data:`DEAD`): ``side``,
    ``reason``, ``row``."""
    return batch.where(F.col(KIND) == DEAD).select(F.col(SIDE).alias("side"), F.col(REASON).alias("reason"),
                                                   F.col(IN_ROW).alias("row"))


# -- event times: TIMESTAMP or TIMESTAMP_NTZ ------------------------------------------------------------------------
# Spark's watermark is on a TIMESTAMP column, and the operators count µs since the epoch.  A TIMESTAMP is an
# instant: its µs as they are (its windows follow the session zone's wall clock, through the core's TimeShift).  A
# TIMESTAMP_NTZ is a wall clock with no zone: it travels as the instant at which a UTC clock shows it (its µs
# from 1970-01-01 00:00 on the same clock), the core shifts nothing, and output times are that clock's again.
# Watermark delays stay "max event time minus delay" on either clock.
_NTZ_EPOCH = "1970-01-01 00:00:00"


def event_micros(time: Column, data_type: T.DataType) -> Column:
    """An event-time column's µs since the epoch (TIMESTAMP_NTZ: on its own clock, read as UTC; no zone enters)."""
    if isinstance(data_type, T.TimestampNTZType):
        return F.timestamp_diff("MICROSECOND", F.lit(_NTZ_EPOCH).cast("timestamp_ntz"), time)
    return F.unix_micros(time)


def event_instant(time: Column, data_type: T.DataType) -> Column:
    """An event-time column as the TIMESTAMP Spark's watermark is taken on (see :func:`event_micros`)."""
    if isinstance(data_type, T.TimestampNTZType):
        return F.timestamp_micros(event_micros(time, data_type))
    return time


def micros_as(micros: Column, data_type: T.DataType) -> Column:
    """µs since the epoch (the operators' output times) as a value of ``data_type``, the event time's type:
    TIMESTAMP (an instant) or TIMESTAMP_NTZ (the UTC clock's reading, whatever the session's zone)."""
    if isinstance(data_type, T.TimestampNTZType):
        return F.timestamp_add("MICROSECOND", micros, F.lit(_NTZ_EPOCH).cast("timestamp_ntz"))
    return F.timestamp_micros(micros)


def arrow_values(batch: pa.RecordBatch, name: str) -> list[Any]:
    """A backfill slice's column as the streaming door's values: timestamps as µs, dates as days (their wire
    format), the rest as they are."""
    column = batch.column(name)
    if pa.types.is_timestamp(column.type):
        return pc.cast(column, pa.int64()).to_pylist()
    if pa.types.is_date32(column.type):
        return pc.cast(column, pa.int32()).to_pylist()
    return column.to_pylist()


def to_arrow_values(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    """Output values (timestamps µs, dates days) as an Arrow array of ``arrow_type``."""
    if pa.types.is_timestamp(arrow_type):
        return pa.array(values, pa.int64()).cast(arrow_type)
    if pa.types.is_date32(arrow_type):
        return pa.array(values, pa.int32()).cast(arrow_type)
    return pa.array(values, arrow_type)


def time_bounds(data_type: T.DataType, start: datetime, end: datetime) -> tuple[Any, Any]:
    """Literals for ``start`` and ``end`` comparable with the event-time column (a TIMESTAMP: the bounds'
    instants; a TIMESTAMP_NTZ: their UTC wall clock, the clock :func:`event_micros` reads it on)."""
    bounds = host.time_literals(data_type, start, end)
    assert bounds is not None  # the window doors take only TIMESTAMP / TIMESTAMP_NTZ event times
    return bounds


__all__ = [
    "DEAD", "IN_ROW", "KIND", "LATE", "LATE_COLUMNS", "MAIN", "MISSED", "N_IN", "REASON", "SIDE", "STATS",
    "WATERMARK", "arrow_values", "dead_rows", "event_instant", "event_micros", "late_rows", "late_times", "micros_as",
    "rows_decoder", "session_zone", "time_bounds", "to_arrow_values", "watermark_us_of",
]
