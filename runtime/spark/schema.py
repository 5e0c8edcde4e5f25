"""Map Spark schemas onto the column kinds the core specs validate against."""

from __future__ import annotations

from pyspark.sql import types as T


def kind_of(data_type: T.DataType) -> str:
    """The spec-level kind of a Spark type.

    >>> kind_of(T.TimestampType()), kind_of(T.StringType()), kind_of(T.DecimalType(10, 2))
    ('timestamp', 'string', 'numeric')
    """
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return "timestamp"
    if isinstance(data_type, T.BooleanType):
        return "boolean"
    if isinstance(data_type, (T.StringType, T.VarcharType, T.CharType)):
        return "string"
    if isinstance(data_type, T.NumericType):
        return "numeric"
    return "other"


def schema_kinds(schema: T.StructType) -> dict[str, str]:
    """Column name -> kind, in schema order."""
    return {f.name: kind_of(f.dataType) for f in schema.fields}
