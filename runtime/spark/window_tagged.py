"""What the window registrations share (window aggregation, Top-N / deduplication, join; streaming and backfill):
the tagged output's common columns and kinds, the late and dead-letter outputs' shapes, the wire values, the
session time zone that aligns windows, and the backfills' Arrow value format.  Imports no registration: each
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
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.errors import SpecError
from timeweave.core.event_time import watermark_as_time
from timeweave.core.state import END_OF_TIME, NO_WATERMARK
from timeweave.core.windows.zones import TimeShift
from timeweave.spark.host import backfill as host
from timeweave.spark.host.wire import from_wire

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
    (``input_schema``) + ``reason`` + ``watermark`` (at arrival) + ``missed_windows`` (``window_type`` bounds)."""
    missed = F.from_json(F.col(MISSED), T.ArrayType(T.ArrayType(T.LongType())))
    return batch.where(F.col(KIND) == LATE).select(
        from_wire(F.col(IN_ROW), input_schema).alias("__tw_in"),
        F.col(REASON).alias("reason"),
        F.timestamp_micros(F.col(WATERMARK)).alias("watermark"),
        F.transform(missed, lambda w: F.struct(
            F.timestamp_micros(w[0]).cast(window_type).alias("window_start"),
            F.timestamp_micros(w[1]).cast(window_type).alias("window_end"))).alias("missed_windows"),
    ).select("__tw_in.*", "reason", "watermark", "missed_windows")


def dead_rows(batch: DataFrame) -> DataFrame:
    """The dead letters of a window operator's tagged micro-batch (rows of kind :data:`DEAD`): ``side``,
    ``reason``, ``row``."""
    return batch.where(F.col(KIND) == DEAD).select(F.col(SIDE).alias("side"), F.col(REASON).alias("reason"),
                                                   F.col(IN_ROW).alias("row"))


def session_zone(spark: Any) -> str | None:
    """The session time zone whose wall clock aligns TIMESTAMP windows (None: UTC); a fixed offset such as
    ``+08:00`` is refused here (the core's shift takes IANA names)."""
    zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    try:
        shift = TimeShift.of(zone)
    except SpecError:
        raise SpecError("spark.sql.session.timeZone", f"the streaming and backfill windows align on an IANA time zone "
                        f"(e.g. 'Asia/Shanghai'), not {zone!r}", where="window") from None
    return None if shift is None else shift.zone


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
    """Literals for ``start`` and ``end`` comparable with the event-time column (a TIMESTAMP)."""
    bounds = host.time_literals(data_type, start, end)
    assert bounds is not None  # the window backfills take only a TIMESTAMP event time
    return bounds


__all__ = [
    "DEAD", "IN_ROW", "KIND", "LATE", "LATE_COLUMNS", "MAIN", "MISSED", "N_IN", "REASON", "SIDE", "STATS",
    "WATERMARK", "arrow_values", "dead_rows", "late_rows", "rows_decoder", "session_zone", "time_bounds",
    "to_arrow_values", "watermark_us_of",
]
