"""The wire format: a row's payload as it travels through a streaming operator, and the operator's key columns.

The payload is JSON (Python passes it on untouched, or decodes it column-wise).  Timestamps and dates go as
numbers (µs / days since epoch): exact, and no date formatting or parsing per value, which was most of the
JSON cost.  :func:`to_wire` writes it in the JVM, :func:`from_wire` reads it back with the row's exact types.
Changing it changes what buffered state holds: it is part of every operator's state layout.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.spark.host.schema import BUCKET, KEY_TEXT
from timeweave.spark.schema import column as named

#: JSON options that round-trip every value exactly (Spark's default timestamp format keeps only ms).
JSON_OPTIONS = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "ignoreNullFields": "true",
}

WIRE_TYPES: dict[type, tuple[T.DataType, Any, Any]] = {
    T.TimestampType: (T.LongType(), F.unix_micros, F.timestamp_micros),
    T.DateType: (T.IntegerType(), F.unix_date, F.date_from_unix_date),
}


def to_wire(df: DataFrame) -> Column:
    """The row as the operator's JSON payload (see :func:`from_wire`)."""
    fields = []
    for field in df.schema.fields:
        column = named(field.name)
        wire = WIRE_TYPES.get(type(field.dataType))
        fields.append((wire[1](column) if wire else column).alias(field.name))
    return F.to_json(F.struct(*fields), JSON_OPTIONS)


def from_wire(payload: Column, schema: T.StructType) -> Column:
    """The struct of ``schema`` a :func:`to_wire` payload encodes (NULL payload: a struct of NULLs)."""
    return wire_struct(F.from_json(payload, wire_schema(schema), JSON_OPTIONS), schema)


def wire_schema(schema: T.StructType) -> T.StructType:
    """The schema a :func:`to_wire` payload of a ``schema`` row is parsed with (timestamps and dates as numbers).

    >>> wire_schema(T.StructType([T.StructField("t", T.TimestampType())])).simpleString()
    'struct<t:bigint>'
    """
    return T.StructType([
        T.StructField(f.name, WIRE_TYPES[type(f.dataType)][0] if type(f.dataType) in WIRE_TYPES else f.dataType)
        for f in schema.fields
    ])


def wire_struct(parsed: Column, schema: T.StructType) -> Column:
    """The struct of ``schema`` from a payload parsed with :func:`wire_schema` (numbers back to timestamps, dates)."""
    fields = []
    for field in schema.fields:
        value = parsed.getField(field.name)
        wire = WIRE_TYPES.get(type(field.dataType))
        fields.append((wire[2](value) if wire else value).alias(field.name))
    return F.struct(*fields)


def key_columns(df: DataFrame, key: tuple[str, ...] | list[str], buckets: int, *, marked: bool = False) -> list[Column]:
    """``tw_b`` (the key's hash bucket: the operator's grouping key) and ``tw_key`` (the key as one string).

    Equal keys must give equal strings: one string column is taken as is (``marked``: behind a marker, ``s``,
    and a NULL key is its own key, ``n``), anything else is the JSON of the key values (exact timestamps, see
    :data:`JSON_OPTIONS`); floating point keys get ``+ 0.0`` first, so -0.0 and 0.0 (equal in the batch doors)
    are one key.  No key columns: one key, ``""``, in bucket 0.  The strings are the keys of stored state:
    an operator's choice of ``marked`` is part of its state layout.
    """
    if not key:
        return [F.lit(0).alias(BUCKET), F.lit("").alias(KEY_TEXT)]
    parts = []
    for name in key:
        column = named(name)
        data_type = df.schema[name].dataType
        if isinstance(data_type, (T.FloatType, T.DoubleType)):
            column = column + F.lit(0.0).cast(data_type)
        parts.append(column)
    if len(parts) == 1 and isinstance(df.schema[key[0]].dataType, T.StringType):
        text = F.when(parts[0].isNull(), F.lit("n")).otherwise(F.concat(F.lit("s"), parts[0])) if marked else parts[0]
    else:
        text = F.to_json(F.struct(*[c.alias(f"k{i}") for i, c in enumerate(parts)]), JSON_OPTIONS)
    return [F.pmod(F.xxhash64(*parts), F.lit(buckets)).cast("int").alias(BUCKET), text.alias(KEY_TEXT)]


__all__ = ["JSON_OPTIONS", "WIRE_TYPES", "from_wire", "key_columns", "to_wire", "wire_schema", "wire_struct"]
