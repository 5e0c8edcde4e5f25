"""Packs: a source partition's rows of one bucket travel to the operator as one row (see "Packs" in
:mod:`timeweave.spark.host`), and the grouping of an invocation's rows by key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import types as T

from timeweave.spark.host.schema import BUCKET, HEARTBEAT, KEY_TEXT, OP, ROW, SEQ, TIME  # noqa: F401 (ROW: the doctests)

PACK = "tw_pack"
#: The optional column of a pack's largest value of one input column (:func:`pack_rows`' ``latest``).
PACK_TIME = "tw_pack_time"
#: Input rows per pack at most (per source partition and bucket; bounds the packing worker's memory).
PACK_ROWS = 65536
#: Arrow bytes of input per packing step at most: wide rows keep a pack far below Spark's 2 GB value limit.
PACK_BYTES = 32 << 20
#: The packing step's output, the operator's input: the bucket and its rows as one Arrow IPC stream.
PACKS_SCHEMA = T.StructType([T.StructField(BUCKET, T.IntegerType()), T.StructField(PACK, T.BinaryType())])
#: :data:`PACKS_SCHEMA` plus each pack's largest value of the ``latest`` column (BIGINT).
PACKS_WITH_TIME_SCHEMA = T.StructType([*PACKS_SCHEMA.fields, T.StructField(PACK_TIME, T.LongType())])


def pack_rows(batches: Iterator[pa.RecordBatch], latest: str | None = None,
              prepare: Callable[[pa.Table], pa.Table] | None = None) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function packing a source partition's internal rows: one output row per bucket
    and up to :data:`PACK_ROWS` input rows or :data:`PACK_BYTES` (see "Packs" in :mod:`timeweave.spark.host`).

    Within a pack the rows keep their order (a stable sort by bucket), so each key's rows reach the
    operator in the order they would have arrived unpacked.  With ``latest`` (a BIGINT column), each pack
    also carries the largest value of that column as :data:`PACK_TIME` (schema :data:`PACKS_WITH_TIME_SCHEMA`):
    a watermark taken over packs' largest event times is the one their rows give.  Every streaming door packs
    with this one function; ``prepare`` rewrites each chunk of rows before it is packed (the window
    aggregate's slice partials, :class:`timeweave.spark.window_partials.PartialPacker`).

    >>> rows = pa.record_batch({BUCKET: pa.array([1, 0, 1], pa.int32()), ROW: ["x", "y", "z"], "t": [5, 7, 3]})
    >>> [(b[BUCKET], unpack([b[PACK]])[ROW].tolist()) for b in next(pack_rows(iter([rows]))).to_pylist()]
    [(0, ['y']), (1, ['x', 'z'])]
    >>> [(b[BUCKET], b[PACK_TIME]) for b in next(pack_rows(iter([rows]), latest="t")).to_pylist()]
    [(0, 7), (1, 5)]
    """
    pending: list[pa.RecordBatch] = []
    count = size = 0
    for batch in batches:
        if batch.num_rows:
            pending.append(batch)
            count += batch.num_rows
            size += batch.nbytes
        if count >= PACK_ROWS or size >= PACK_BYTES:
            yield _packs(pending, latest, prepare)
            pending, count, size = [], 0, 0
    if pending:
        yield _packs(pending, latest, prepare)


def _packs(batches: list[pa.RecordBatch], latest: str | None,
           prepare: Callable[[pa.Table], pa.Table] | None = None) -> pa.RecordBatch:
    table = pa.Table.from_batches(batches).combine_chunks()
    if prepare is not None:
        table = prepare(table).combine_chunks()
    buckets = table.column(BUCKET).to_numpy(zero_copy_only=False)
    order = np.argsort(buckets, kind="stable")
    table = table.take(pa.array(order)).drop_columns([BUCKET])
    buckets = buckets[order]
    bounds = [0, *(np.flatnonzero(np.diff(buckets)) + 1).tolist(), len(buckets)]
    packs = []
    for start, end in pairwise(bounds):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table.slice(start, end - start))
        packs.append(sink.getvalue().to_pybytes())
    columns = [pa.array(buckets[bounds[:-1]], pa.int32()), pa.array(packs, pa.binary())]
    if latest is None:
        return pa.record_batch(columns, names=[BUCKET, PACK])
    values = table.column(latest).to_numpy(zero_copy_only=False)
    maxima = [int(values[start:end].max()) for start, end in pairwise(bounds)]
    return pa.record_batch([*columns, pa.array(maxima, pa.int64())], names=[BUCKET, PACK, PACK_TIME])


def unpack(packs: Any) -> pd.DataFrame:
    """The rows of packs (:func:`pack_rows`) as one frame, in pack order; ``tw_seq`` as exact ints (or None)."""
    return table_frame(pa.concat_tables([pa.ipc.open_stream(pack).read_all() for pack in packs]))


def table_frame(table: pa.Table) -> pd.DataFrame:
    """An Arrow table of internal rows as a pandas frame (:func:`unpack`'s); ``tw_seq`` as exact ints (or None)."""
    return pd.DataFrame({
        # A nullable BIGINT would become float64 in numpy (inexact above 2**53): the sequence stays ints.
        name: np.array(table.column(name).to_pylist(), dtype=object) if name == SEQ
        else table.column(name).to_numpy(zero_copy_only=False)
        for name in table.column_names
    })


def data_rows(rows: Iterator[pd.DataFrame]) -> pd.DataFrame | None:
    """One frame of a TWS invocation's input without the heartbeat rows (they only move the watermark).

    ``None`` when nothing but heartbeats (or nothing) arrived.  Shared by the processors of every
    streaming door.
    """
    frames = [f for f in rows if len(f)]
    if not frames:
        return None
    batch = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    heartbeats = batch[OP].to_numpy() == HEARTBEAT
    if heartbeats.any():
        batch = batch[~heartbeats]
    return None if batch.empty else batch


def positions_by_key(batch: pd.DataFrame) -> dict[str, list[int]]:
    """The positions of a bucket's rows by ``tw_key``, each key's rows in input order (shared by the processors).

    >>> positions_by_key(pd.DataFrame({KEY_TEXT: ["a", "b", "a"]}))
    {'a': [0, 2], 'b': [1]}
    """
    texts, order, bounds = key_groups(batch)
    return dict(zip(texts, (group.tolist() for group in np.split(order, bounds[1:-1])), strict=True))


def key_groups(batch: pd.DataFrame) -> tuple[list[str | None], np.ndarray, list[int]]:
    """A bucket's rows grouped by ``tw_key``: the keys in order of first appearance, the row positions
    ordered by key (each key's positions ascending), and the bounds of each key's run in that order.

    >>> texts, order, bounds = key_groups(pd.DataFrame({KEY_TEXT: ["a", "b", "a"]}))
    >>> texts, order.tolist(), bounds
    (['a', 'b'], [0, 2, 1], [0, 2, 3])
    """
    # One factorize and one stable sort (in C) instead of a dict lookup per row.
    codes, keys = pd.factorize(batch[KEY_TEXT].to_numpy(), use_na_sentinel=False)
    order = np.argsort(codes, kind="stable")
    bounds = [0, *np.cumsum(np.bincount(codes, minlength=len(keys))).tolist()]
    # Key texts are strings; factorize hands a NULL key back as NaN.
    texts = [key if isinstance(key, str) else None for key in keys.tolist()]
    return texts, order, bounds


def read_packs(packs: list[bytes]) -> pa.Table:
    """The rows of an invocation's packs as one Arrow table (pack order; one chunk per column)."""
    return pa.concat_tables([pa.ipc.open_stream(pack).read_all() for pack in packs]).combine_chunks()


__all__ = [
    "PACK",
    "PACKS_SCHEMA",
    "PACKS_WITH_TIME_SCHEMA",
    "PACK_BYTES",
    "PACK_ROWS",
    "PACK_TIME",
    "data_rows",
    "key_groups",
    "pack_rows",
    "positions_by_key",
    "read_packs",
    "table_frame",
    "unpack",
]


def packs_with_latest_time(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The packing step (:func:`pack_rows`) with each pack's largest event time (:data:`~timeweave.spark.host.schema.TIME`), the watermark's
    input: the same maximum the rows give.  A dead letter's time is year 1 (as its unpacked row's was), below
    any data row's, so it never is the maximum of a pack with data.  (A module function: ``mapInArrow``
    pickles it by reference.)"""
    return pack_rows(batches, latest=TIME)

