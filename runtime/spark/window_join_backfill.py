"""The sliced window-join backfill: ``[start, end)`` of the event time in N slices, each join key's open slices'
rows of both inputs carried across the edges.

The window join's registration on the keyed backfill driver (:func:`timeweave.spark.host.backfill.run_keyed`), as
the window aggregate's and the window Top-N's: the two inputs become one relation (a side, the join key cast to
the left's types, the event time, and each side's row as a struct), keyed by the join key and ordered by the
event time; per key (:class:`_JoinSlice`, through the keyed-operator contract) the core
:class:`~timeweave.core.windows.join_operator.WindowJoinOperator` keeps both sides' rows of the open slices, snapshot
at an edge (:data:`timeweave.core.windows.join_operator.LAYOUT`, the state codec's bytes) and restored in the next
slice, so a window crossing an edge is joined once over all its rows.

**Emission** is the other window backfills' rule: a key's rows arrive in event-time order, the watermark moves to
just below the last row's millisecond and the windows ending before it are joined; the last slice's end of input
joins the rest.  No row is late (a batch run); the union over the slices equals
:func:`timeweave.spark.window_ops.window_join` over the rows in ``[start, end)``.

Layout: ``<output>/slice=<label>/`` (the DataFrame door's schema), ``<output>/_state/slice=<label>/`` (the join key
columns ``__tw_jk<i>`` + ``__tw_state``), ``<dead_letter>/slice=none/`` (NULL event times: ``side`` left / right,
``reason``, ``row``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from timeweave.core.errors import SpecError, StateFormatError
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.state import KeyContext
from timeweave.core.state_codec import decode, encode
from timeweave.core.windows import LateRow, WindowSpec
from timeweave.core.windows.join_operator import LAYOUT, LEFT, RIGHT, JoinedRow, WindowJoinOperator
from timeweave.core.windows.zones import TimeShift
from timeweave.spark.host import backfill as host
from timeweave.spark.host.backfill import MAIN, REJECT_ROW, Tagged
from timeweave.spark.schema import column as named
from timeweave.spark.window_join_streaming import SIDES, JoinQuery, bind_join_query
from timeweave.spark.window_tagged import arrow_values, time_bounds, to_arrow_values

WHERE = "window join backfill"
SIDE_COL = "__tw_side"
TIME_COL = "__tw_t"
ROW_COLS = ("__tw_l", "__tw_r")
KEY_PREFIX = "__tw_jk"


class _JoinSlice:
    """The window join over one slice's keys (a :class:`~timeweave.spark.host.backfill.SliceOperator`)."""

    to_arrow = staticmethod(to_arrow_values)

    def __init__(self, runner: _SliceRunner) -> None:
        q = runner.query
        self.names = tuple(runner.names)
        self.keys = tuple(f"{KEY_PREFIX}{i}" for i in range(len(q.keys[LEFT])))
        self.output = to_arrow_schema(T.StructType.fromJson(json.loads(runner.output_json)), timezone="UTC")
        self.carried_from = runner.carried_from
        self.columns = q.columns
        self._op = WindowJoinOperator(q.spec, q.how, left_time=q.times[LEFT], right_time=q.times[RIGHT],
                                      left_keys=self.keys, right_keys=self.keys,
                                      time_of=lambda side, row: row[TIME_COL] // 1000, time_zone=q.zone)
        shift = TimeShift.of(q.zone)
        self._instant = (lambda ms: ms) if shift is None else shift.instant

    def read(self, batch: pa.RecordBatch, name: str) -> list[Any]:
        column = batch.column(name)
        if not pa.types.is_struct(column.type):
            return arrow_values(batch, name)
        # a side's row: a dict of its columns in the backfills' value format, None where the row is the other side's
        fields = [column.type.field(i).name for i in range(column.type.num_fields)]
        children = [arrow_values(pa.record_batch([pc.struct_field(column, [i])], names=["v"]), "v")
                    for i in range(len(fields))]
        valid = column.is_valid().to_pylist()
        return [dict(zip(fields, values, strict=True)) if ok else None
                for ok, values in zip(valid, zip(*children, strict=True) if children else [()] * len(valid),
                                      strict=True)]

    def restore(self, ctx: KeyContext, blob: bytes, key: tuple[Any, ...]) -> None:
        where = f"backfill state {self.carried_from} (key {key!r:.200})"
        values = decode(blob, where=where)
        if not isinstance(values, dict):
            raise StateFormatError(f"malformed state: expected the window join operator's values, found "
                                   f"{type(values).__name__}", where=where)
        try:
            LAYOUT.restore(ctx, values)
        except StateFormatError as error:
            raise StateFormatError(error.message, where=where) from error

    def process(self, ctx: KeyContext, rows: list[dict[str, Any]]) -> list[Tagged]:
        # the driver's dead-letter text of each row is not state: it stays out of the kept rows
        elements = [(row[SIDE_COL], {k: v for k, v in row.items() if k != REJECT_ROW}) for row in rows]
        out = self._op.process_elements(ctx, elements)
        ctx.current_watermark = rows[-1][TIME_COL] // 1000 * 1000 - 1  # type: ignore[attr-defined]
        out += self._op.on_watermark(ctx)
        return self._rows(out)

    def end_of_input(self, ctx: KeyContext) -> list[Tagged]:
        return self._rows(self._op.finish(ctx))

    def snapshot(self, ctx: KeyContext) -> bytes:
        return encode(LAYOUT.snapshot(ctx))

    def _rows(self, outputs: list[Any]) -> list[Tagged]:
        rows: list[Tagged] = []
        for out in outputs:
            if out.__class__ is LateRow:  # a row below the watermark: the arrangement broke its promise
                raise AssertionError(f"{WHERE}: a row arrived out of event-time order: {out.reason}")
            assert out.__class__ is JoinedRow, out
            w, instant = out.window, self._instant
            windows = {"window_start": instant(w.start) * 1000, "window_end": instant(w.end) * 1000,
                       "window_time": instant(w.end - 1) * 1000}
            sides = (out.left, out.right)
            row: dict[str, Any] = {}
            for name, side, source in self.columns:
                if side is None:
                    row[name] = windows[source]
                else:
                    found = sides[side]
                    row[name] = None if found is None else found[ROW_COLS[side]][source]
            rows.append((MAIN, row))
        return rows


@dataclass(frozen=True)
class _SliceRunner:
    """The ``mapInArrow`` function of one slice (picklable, small)."""

    query: JoinQuery
    names: tuple[str, ...]
    output_json: str
    last: bool
    counters: tuple[Any, ...]
    carried_from: str | None = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return host.run_keyed_slice(batches, _JoinSlice(self), self.last, self.counters)


def _runner(query: JoinQuery, names: tuple[str, ...], output_json: str, last: bool, counters: tuple[Any, ...],
            carried_from: str | None) -> _SliceRunner:
    return _SliceRunner(query, names, output_json, last, counters, carried_from)


def _one_relation(left: DataFrame, right: DataFrame, q: JoinQuery) -> DataFrame:
    """Both inputs as one relation: side, join key (the left's types), event time, each side's row as a struct."""
    structs = [T.StructType([T.StructField(f.name, f.dataType, True) for f in df.schema.fields]) for df in (left, right)]
    parts = []
    for side, df in ((LEFT, left), (RIGHT, right)):
        rows = [F.struct(*[named(c) for c in df.columns]), F.lit(None).cast(structs[1 - side])]
        parts.append(df.select(
            F.lit(side).cast("int").alias(SIDE_COL),
            *[named(k).cast(t).alias(f"{KEY_PREFIX}{i}") for i, (k, t) in enumerate(zip(q.keys[side], q.key_types,
                                                                                          strict=True))],
            named(q.times[side]).alias(TIME_COL),
            rows[0 if side == LEFT else 1].alias(ROW_COLS[LEFT]), rows[1 if side == LEFT else 0].alias(ROW_COLS[RIGHT]),
        ))
    return parts[LEFT].unionByName(parts[RIGHT])


def _untimed(df: DataFrame, times: tuple[str, str]) -> DataFrame:
    """The rows with a NULL event time, per side: ``side``, ``reason``, ``row`` (the input row as JSON)."""
    left = F.col(SIDE_COL) == F.lit(LEFT)
    return df.where(F.col(TIME_COL).isNull()).select(
        F.when(left, F.lit(SIDES[LEFT])).otherwise(F.lit(SIDES[RIGHT])).alias("side"),
        F.when(left, F.lit(null_event_time_reason(times[LEFT]))).otherwise(
            F.lit(null_event_time_reason(times[RIGHT]))).alias("reason"),
        F.when(left, F.to_json(F.col(ROW_COLS[LEFT]))).otherwise(F.to_json(F.col(ROW_COLS[RIGHT]))).alias("row"))


def backfill_window_join(
    left: DataFrame,
    right: DataFrame,
    *,
    on: str | Sequence[str] | Sequence[tuple[str, str]] = (),
    how: str = "inner",
    time: str | tuple[str, str],
    window: WindowSpec | tuple[WindowSpec, WindowSpec],
    left_prefix: str = "",
    right_prefix: str = "",
    start: datetime,
    end: datetime,
    slices: int,
    output: str,
    dead_letter: str | None = None,
    only: Sequence[int] | None = None,
    on_slice: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The window join of the rows of ``left`` and ``right`` with event time in ``[start, end)``, in ``slices``
    slices; the union of ``<output>/slice=*`` equals ``timeweave.window_join(left, right, ...)`` over those rows
    (its arguments); ``only`` re-runs the given slices; metrics as the other keyed backfills'.  Errors in the
    arguments raise before any Spark job.

    Example::

        from timeweave.core.windows import tumble
        backfill_window_join(left, right, on="num", how="full", time="row_time", window=tumble("5 minutes"),
                             left_prefix="L_", right_prefix="R_", start=datetime(2020, 4, 15),
                             end=datetime(2020, 4, 16), slices=4, output="out/joined")
    """
    if not output:
        raise SpecError("output", "an output path is required", where=WHERE)
    plan, wanted = host.plan_slices(start, end, slices, only, WHERE)
    q = bind_join_query(left, right, on=on, how=how, time=time, window=window, left_prefix=left_prefix,
                        right_prefix=right_prefix, where=WHERE)
    df = _one_relation(left, right, q)
    keys = tuple(f"{KEY_PREFIX}{i}" for i in range(len(q.keys[LEFT])))
    # Every column nullable; the key columns travel in the output for the carried state rows, not in the main output.
    output_schema = T.StructType([*(T.StructField(f.name, f.dataType, True) for f in q.schema.fields),
                                  *(df.schema[k] for k in keys)])
    registration = host.KeyedBackfill(
        name="window_join", where=WHERE, keys=keys, key_order=[named(k).asc_nulls_first() for k in keys],
        order=[named(TIME_COL).asc()], time=TIME_COL, bounds=partial(time_bounds, df.schema[TIME_COL].dataType),
        output=output_schema, runner=partial(_runner, q, tuple(df.columns), output_schema.json()),
        untimed=partial(_untimed, times=q.times), main=q.schema.names,
    )
    return host.run_keyed(df, registration, plan, wanted, output, dead_letter or f"{output}_dead_letter", on_slice)


__all__ = ["backfill_window_join"]
