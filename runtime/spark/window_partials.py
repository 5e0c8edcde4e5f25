"""Slice partials on the streaming host: the packing step pre-aggregates a window aggregation's rows per key and
slice (:mod:`timeweave.core.windows.partials`), so the operator merges one accumulator row per key and slice
instead of taking every row (Flink's local-global aggregation).

Which queries: :func:`partial_plan` (aligned windows on the UTC clock; ``COUNT(*)``, ``COUNT``, ``SUM``, ``AVG``,
``MIN``, ``MAX`` without ``FILTER``, over columns whose values Arrow aggregates exactly: integers and decimals,
and for ``MIN`` / ``MAX`` also dates and timestamps; ``COUNT(x)`` over any type).  Any other query packs its rows
as before.

How (one source partition's chunk of rows at a time, :class:`PartialPacker`, the ``mapInArrow`` step):

* the projection (:func:`argument_columns`) adds each aggregate's argument as its own column (``tw_a<i>``: the
  wire values, µs and days for timestamps and dates, a 0/1 flag for ``COUNT(x)``);
* data rows are grouped by bucket, key and slice (the core's :meth:`Slicing.slice_end
  <timeweave.core.windows.slicing.Slicing.slice_end>` over the ms times) in Arrow; each group becomes one row
  of op :data:`PARTIAL` whose ``tw_row`` is ``[slice end, rows, value_1, present_1, ...]`` as JSON (decimals as
  text, exact) and whose ``tw_time`` is the group's largest event time (the watermark sees the same maximum);
* the data rows themselves travel on as op :data:`COVERED`: the operator reads them only for a partial whose
  slice is late at its watermark (:meth:`~timeweave.core.windows.operator.WindowAggregateOperator.process_partials`),
  so late rows are reported exactly as without partials; dead letters travel untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.windows.calls import AggregateText
from timeweave.core.windows.partials import STATISTICS, accumulator_row, partial_functions
from timeweave.core.windows.slicing import Slicing
from timeweave.core.windows.spec import WindowSpec
from timeweave.spark.host.packs import pack_rows
from timeweave.spark.host.schema import BUCKET, KEY_TEXT, OP, ROW, TIME
from timeweave.spark.host.stream import DATA_ROW
from timeweave.spark.render import quote

#: ``tw_op`` of a pre-aggregated slice and of a row it covers (both elements: below the heartbeat's 3).
PARTIAL, COVERED = 1, 2
ARGUMENT = "tw_a{}"  # the projection's column of aggregate i's argument

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


@dataclass(frozen=True)
class PartialPlan:
    """How one window aggregation's rows are pre-aggregated: its slicing spec, each aggregate's function, and
    per aggregate whether its values are decimals (their JSON travels as text) and which argument column
    (None: ``COUNT(*)``) it reads."""

    spec: WindowSpec
    functions: tuple[str, ...]
    decimal: tuple[bool, ...]
    arguments: tuple[str | None, ...]

    def decode(self, text: str) -> tuple[int, list[Any]]:
        """A :data:`PARTIAL` row's ``tw_row``: (slice end ms, the accumulator row).

        >>> from timeweave.core.windows.spec import tumble
        >>> plan = PartialPlan(tumble(60_000), ("COUNT(*)", "SUM"), (False, True), (None, "tw_a1"))
        >>> plan.decode('[60000, 2, null, null, "3.50", 2]')
        (60000, [2, 2, Decimal('3.50')])
        """
        values = json.loads(text)
        stats = []
        for i, decimal in enumerate(self.decimal):
            value, present = values[2 + 2 * i], values[3 + 2 * i]
            stats.append((Decimal(value) if decimal and value is not None else value, present))
        return values[0], accumulator_row(self.functions, values[1], stats)


def _supported(function: str, data_type: T.DataType) -> bool:
    if function in ("COUNT(*)", "COUNT"):
        return True
    if isinstance(data_type, (*_INTEGRAL, T.DecimalType)):
        return True
    return function in ("MIN", "MAX") and isinstance(data_type, (T.DateType, T.TimestampType))


def partial_plan(spec: WindowSpec, aggregates: Sequence[AggregateText], schema: T.StructType,
                 zone: str | None) -> PartialPlan | None:
    """The pre-aggregation of a window aggregation over rows of ``schema``, or None when its rows travel one by
    one (see the module docstring)."""
    functions = partial_functions(spec, aggregates, zone)
    if functions is None:
        return None
    if not all(a.column is None or _supported(a.function, schema[a.column].dataType) for a in aggregates):
        return None
    decimal = tuple(a.column is not None and a.function != "COUNT" and isinstance(schema[a.column].dataType, T.DecimalType)
                    for a in aggregates)
    arguments = tuple(None if a.column is None else ARGUMENT.format(i) for i, a in enumerate(aggregates))
    return PartialPlan(spec, functions, decimal, arguments)


def argument_columns(plan: PartialPlan, aggregates: Sequence[AggregateText], schema: T.StructType) -> list[Column]:
    """The projection's argument columns (``tw_a<i>``) of ``plan``: wire values (µs, days), a 0/1 flag for COUNT."""
    out = []
    for a, name in zip(aggregates, plan.arguments, strict=True):
        if name is None:
            continue
        column = F.col(quote(a.column))
        data_type = schema[a.column].dataType
        if a.function == "COUNT":
            value = F.when(column.isNotNull(), F.lit(1)).cast("tinyint")
        elif isinstance(data_type, T.TimestampType):
            value = F.unix_micros(column)
        elif isinstance(data_type, T.DateType):
            value = F.unix_date(column)
        elif isinstance(data_type, _INTEGRAL):
            value = column.cast("bigint")
        else:
            value = column
        out.append(value.alias(name))
    return out


class PartialPacker:
    """The ``mapInArrow`` packing step with slice partials (see the module docstring): picklable, small."""

    def __init__(self, plan: PartialPlan) -> None:
        self.plan = plan

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return pack_rows(batches, latest=TIME, prepare=self._chunk)

    def _chunk(self, table: pa.Table) -> pa.Table:
        """One chunk of a source partition's rows (what one pack per bucket holds): its data rows marked
        :data:`COVERED`, one :data:`PARTIAL` row per bucket, key and slice appended, the argument columns dropped."""
        plan = self.plan
        arguments = [a for a in plan.arguments if a is not None]
        rows = table.drop_columns(arguments)
        ops = table.column(OP).to_numpy(zero_copy_only=False)
        data = ops == DATA_ROW
        if not data.any():
            return rows
        covered = table.filter(pa.array(data))
        times = covered.column(TIME).to_numpy(zero_copy_only=False)
        # the core's slice rule over ms times (floor, as the operator's _time_of reads µs)
        slices = Slicing.of(plan.spec).slice_end(times // 1000)
        grouped = covered.select([BUCKET, KEY_TEXT, TIME, *arguments]).append_column("tw_s", pa.array(slices, pa.int64()))
        aggregations: list[Any] = [(TIME, "max"), (TIME, "count")]
        for function, name in zip(plan.functions, plan.arguments, strict=True):
            if name is None:
                continue
            column = grouped.column(name)
            statistic = STATISTICS[function]
            if statistic == "sum" and pa.types.is_integer(column.type):
                # exact: an integer sum as a 38-digit decimal (int64 sums would wrap), back to int in decode
                grouped = grouped.set_column(grouped.schema.get_field_index(name), name, column.cast(pa.decimal128(38, 0)))
            if statistic != "count":
                aggregations.append((name, statistic))
            aggregations.append((name, "count"))  # the non-NULL values
        result = grouped.group_by([BUCKET, KEY_TEXT, "tw_s"], use_threads=False).aggregate(aggregations)
        texts = self._texts(result)
        partials = pa.table({
            BUCKET: result.column(BUCKET), KEY_TEXT: result.column(KEY_TEXT),
            OP: pa.array(np.full(len(result), PARTIAL, np.int8), rows.schema.field(OP).type),
            TIME: result.column(f"{TIME}_max"), ROW: pa.array(texts, pa.string()),
        }).select(rows.schema.names).cast(rows.schema)
        marked = rows.set_column(rows.schema.get_field_index(OP), rows.schema.field(OP),
                                 pc.if_else(pa.array(data), pa.scalar(COVERED, rows.schema.field(OP).type), rows.column(OP)))
        return pa.concat_tables([marked, partials])

    def _texts(self, result: pa.Table) -> list[str]:
        """Each group's ``[slice end, rows, value_1, present_1, ...]`` as JSON (decimals as text)."""
        plan = self.plan
        nothing = [None] * len(result)
        columns: list[list[Any]] = [result.column("tw_s").to_pylist(), result.column(f"{TIME}_count").to_pylist()]
        for function, name in zip(plan.functions, plan.arguments, strict=True):
            if name is None:  # COUNT(*): the group's row count
                columns += [nothing, nothing]
                continue
            statistic = STATISTICS[function]
            present = result.column(f"{name}_count").to_pylist()
            values = nothing if statistic == "count" else [
                _json_value(v) for v in result.column(f"{name}_{statistic}").to_pylist()]
            columns += [values, present]
        return [json.dumps(list(values)) for values in zip(*columns, strict=True)]


def _json_value(value: Any) -> Any:
    """A statistic as JSON data: a decimal as exact text (an integer sum's, ``scale`` 0, as an int)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and value.as_tuple().exponent == 0 else str(value)
    return value


__all__ = ["COVERED", "PARTIAL", "PartialPacker", "PartialPlan", "argument_columns", "partial_plan"]
