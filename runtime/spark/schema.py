"""Map Spark schemas onto the column kinds the core specs validate against."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core import spec
from timeweave.spark.render import quote


def kind_of(data_type: T.DataType) -> str:
    """The spec-level kind of a Spark type.

    >>> kind_of(T.TimestampType()), kind_of(T.StringType()), kind_of(T.DecimalType(10, 2)), kind_of(T.LongType())
    ('timestamp', 'string', 'decimal', 'integer')
    """
    if isinstance(data_type, T.TimestampType):
        return spec.TIMESTAMP
    if isinstance(data_type, T.TimestampNTZType):
        return spec.TIMESTAMP_NTZ
    if isinstance(data_type, T.DateType):
        return spec.DATE
    if isinstance(data_type, T.BooleanType):
        return spec.BOOLEAN
    if isinstance(data_type, (T.StringType, T.VarcharType, T.CharType)):
        return spec.STRING
    if isinstance(data_type, T.IntegralType):
        return spec.INTEGER
    if isinstance(data_type, T.DecimalType):
        return spec.DECIMAL
    if isinstance(data_type, T.FractionalType):
        return spec.FLOATING
    return "other"


def column(name: str) -> Column:
    """``F.col`` of the column named exactly ``name``: dots, backticks, quotes are part of the name, not syntax.

    ``F.col("a.b")`` reads field ``b`` of a struct ``a``, and a backtick in a name breaks its parse; column
    names come from data (CSV headers, inferred JSON), so the doors never pass one to ``F.col`` unquoted.

    Example::

        df.select(column("price.eur"))   # the column named "price.eur", not field eur of a struct price
    """
    return F.col(quote(name))


@dataclass(frozen=True)
class _Renamed:
    """A ``mapInArrow`` function given batches whose columns carry ``names`` again (picklable)."""

    func: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
    names: tuple[str, ...]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return self.func(pa.RecordBatch.from_arrays(b.columns, names=list(self.names)) for b in batches)


def map_in_arrow(df: DataFrame, func: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]], schema: Any) -> DataFrame:
    """``df.mapInArrow(func, schema)`` for any column names.

    PySpark's ``mapInArrow`` passes ``df[name]`` for every column, which parses the name (a backtick in a
    column name is a syntax error, a dot reads a struct field).  The columns go in under positional names
    (``toDF`` takes names as they are) and ``func`` sees its batches with the original names again.

    Example::

        out = map_in_arrow(df, runner, out_schema)   # == df.mapInArrow(runner, out_schema)
    """
    names = tuple(df.columns)
    positional = df.toDF(*[f"__tw_in{i}" for i in range(len(names))])
    return positional.mapInArrow(_Renamed(func, names), schema)


def schema_kinds(schema: T.StructType) -> dict[str, str]:
    """Column name -> kind, in schema order."""
    return {f.name: kind_of(f.dataType) for f in schema.fields}
