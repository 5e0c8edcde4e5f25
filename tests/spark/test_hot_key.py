"""A hot key must not kill the streaming job (issue 20).

Measured on the build of 2026-11-25: a streaming temporal join given 1 M versions of ONE key in one
micro-batch stored the key's whole state (every version) as ONE MapState value; PySpark pickles a
value, the JVM unpickles it, copies it into a row and writes it to RocksDB, several copies at once, and
with wide enough versions the driver died with ``OutOfMemoryError: Java heap space`` (then ``EOFError``
in the Python worker).  A key's cell is now stored in pieces of at most
:data:`timeweave.core.state_codec.PIECE_BYTES` (each a checksummed state blob of its own, a manifest in the
key's own entry), so no state value grows with a key's history.

The JVM-free tests drive the processors with PySpark's ``TwsTester`` (its MapState is Spark's contract
in memory); the slow test runs the streaming job on 120 k versions of one key (a cell of over ten pieces; the
1 M-version run is ``bench/bench_hot_key.py``'s) and compares its output
with the DataFrame door's (counts and a checksum, computed in Spark).
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql.streaming.tws_tester import TwsTester

from tests.spark.test_state_bridge import B, _out, _spec
from timeweave.core.errors import StateFormatError
from timeweave.core.state_codec import PIECE_BYTES, decode_cell, encode_cell
from timeweave.core.temporal_join import LeftBuffer
from timeweave.core.versioned import VersionEvent, VersionHistory
from timeweave.spark import host as H
from timeweave.spark import temporal_join_streaming as TJ
from timeweave.spark.host import state as HS

MS = 1_000
T0 = 1_577_872_800_000_000  # 2020-01-01 10:00:00 UTC in µs
#: A piece's stored value: the piece (at most PIECE_BYTES) with its state header and MessagePack framing.
PIECE_VALUE_MAX = PIECE_BYTES + 64


def _hot_rows(versions: int, orders: int, key: str = "HOT") -> pd.DataFrame:
    """Operator input (packed) of ``versions`` versions of ``key`` (one per ms from T0, rate = i) and
    ``orders`` orders of it spread over them."""
    step = max(versions // orders, 1)
    ops = [TJ.UPSERT] * versions + [TJ.LEFT_ROW] * orders
    times = [T0 + i * MS for i in range(versions)] + [T0 + (i * step) * MS + 500 for i in range(orders)]
    rows = [f'{{"rate": {i}, "note": "{i:032d}"}}' for i in range(versions)] + [f'{{"id": "o{i}"}}' for i in range(orders)]
    batch = pa.record_batch({
        H.BUCKET: pa.array([B] * len(ops), pa.int32()), H.KEY_TEXT: pa.array([key] * len(ops), pa.string()),
        H.OP: pa.array(ops, pa.int8()), H.TIME: pa.array(times, pa.int64()),
        TJ.FILE: pa.array(["r1"] * versions + [None] * orders, pa.string()), H.ROW: pa.array(rows, pa.string()),
    })
    return pd.concat([p.to_pandas() for p in H.pack_rows(iter([batch]))], ignore_index=True)


def _tester() -> TwsTester:
    return TwsTester(TJ.TemporalJoinProcessor(_spec(), "event_time"), timeMode="EventTime",
                     eventTimeExtractor=lambda _row: 2**62)


def _cells(tester: TwsTester) -> dict:
    return tester.peekMapState("timeweave_keys", B)


def test_a_hot_keys_versions_are_stored_in_bounded_pieces_and_read_back() -> None:
    """60 k versions of one key (a ~4 MB cell) in one micro-batch: no stored value is bigger than a piece;
    the rows join the right versions once the watermark passes them, and the expired versions' pieces go."""
    tester = _tester()
    first = tester.testInPandas(B, _hot_rows(60_000, 600))
    assert _out(first) == [] and first[TJ.N_RIGHT].tolist() == [60_000]
    cells = _cells(tester)
    sizes = {key: len(value[0]) for key, value in cells.items()}
    assert max(sizes.values()) <= PIECE_VALUE_MAX, sizes  # before: one value of the whole cell (~4 MB)
    pieces = sorted(key for key in cells if key != ("HOT",))
    assert len(pieces) >= 3 and all(key[0].startswith("\x00p") and key[0].endswith("\x00HOT") for key in pieces)
    assert cells[("HOT",)][0][:1] == HS.PIECES
    values, _, seq = _read(tester, "HOT")
    assert len(values["right"]) == 60_000 and seq == 60_600

    # Half the orders leave; versions before the watermark expire except the one in force.
    half = T0 + 30_000 * MS
    out = _out(tester.setWatermark(half // MS))
    assert len(out) == 300 and out[:2] == [("joined", "o0", 0), ("joined", "o1", 100)]
    assert out[-1] == ("joined", "o299", 29_900)
    values, _, _ = _read(tester, "HOT")
    assert len(values["right"]) == 30_001 and values["right"].events[0].time == half - MS
    # The end: every order joined, one version left, the cell fits one value again and its pieces are gone.
    out = _out(tester.setWatermark((T0 + 70_000 * MS) // MS))
    assert len(out) == 300 and out[-1] == ("joined", "o599", 59_900)
    assert list(_cells(tester)) == [("HOT",)]
    assert _cells(tester)[("HOT",)][0][:4] == b"TWst"
    assert len(_read(tester, "HOT")[0]["right"]) == 1


def _read(tester: TwsTester, key: str) -> tuple:
    cells = _cells(tester)

    class Map:
        def getValue(self, k: tuple) -> tuple | None:
            return cells.get(k)

    stored = HS.MapEntry(Map(), key).get()
    return decode_cell(stored[0])


class _Map(dict):
    """The MapState calls :class:`timeweave.spark.host.state.MapEntry` makes, over a dict."""

    getValue, updateValue, removeKey = dict.get, dict.__setitem__, dict.pop


def _big_cell(versions: int = 40_000) -> bytes:
    history = VersionHistory.of([VersionEvent(T0 + i, i, False, f'{{"rate": {i}, "pad": "{i:040d}"}}')
                                 for i in range(versions)])
    return encode_cell({"right": history, "left": LeftBuffer([T0], [0], ['{"id": 1}'])}, {T0}, versions + 1)


def test_pieces_are_checked_and_never_collide_with_a_key() -> None:
    """A damaged, missing or swapped piece is a state format error naming the key; a key whose text looks
    like a piece's MapState key has its own cell; shrinking or clearing a cell removes its pieces."""
    cells = _Map()
    big = _big_cell()
    assert len(big) > 2 * PIECE_BYTES
    HS.MapEntry(cells, "k").update((big,))
    lookalike = "\x00p0\x00k"  # piece 0 of key "k", spelled as a key
    HS.MapEntry(cells, lookalike).update((encode_cell({"n": 1}, set(), 1),))
    assert HS.MapEntry(cells, "k").get() == (big,)
    assert decode_cell(HS.MapEntry(cells, lookalike).get()[0])[0] == {"n": 1}
    assert all(len(v[0]) <= PIECE_VALUE_MAX for v in cells.values())

    for damage, message in (
        (lambda m: m.__setitem__(("\x00p1\x00k",), (m[("\x00p1\x00k",)][0][:-1] + b"!",)), "bad checksum"),
        (lambda m: m.pop(("\x00p2\x00k",)), "piece 2 of 4 is missing"),
        (lambda m: m.__setitem__(("\x00p0\x00k",), m[("\x00p1\x00k",)]), "piece 0 of 4 is piece 1 of 4"),
    ):
        broken = _Map(cells)
        damage(broken)
        with pytest.raises(StateFormatError, match=rf"key 'k'.*{message}"):
            H.SparkKeyContext(None, HS.MapEntry(broken, "k"), 0)

    entry = HS.MapEntry(cells, "k")
    entry.get()
    entry.update((encode_cell({"n": 2}, set(), 2),))
    assert sorted(cells) == [(HS.cell_key(lookalike),), ("k",)]
    HS.MapEntry(cells, "k").update((big,))
    HS.MapEntry(cells, "k").clear()  # (no read first: the entry finds its pieces itself)
    assert sorted(cells) == [(HS.cell_key(lookalike),)]


def test_a_cell_written_in_one_value_by_the_earlier_layout_is_read_and_rewritten_in_pieces() -> None:
    """Checkpoints of 2026-11-25 and before hold each key's cell in one value: read as before, and stored
    in pieces the next time the key is written."""
    tester = _tester()
    history = VersionHistory.of([VersionEvent(T0 + i * MS, i, False, f'{{"rate": {i}, "pad": "{i:040d}"}}')
                                 for i in range(30_000)])
    old = encode_cell({"right": history}, set(), 30_000)
    assert len(old) > PIECE_BYTES
    tester.updateMapState("timeweave_keys", B, {("HOT",): (old,)})
    tester.testInPandas(B, _orders("HOT", 10))
    assert all(len(v[0]) <= PIECE_VALUE_MAX for v in _cells(tester).values())
    out = _out(tester.setWatermark((T0 + 40_000 * MS) // MS))
    assert [rate for _, _, rate in out] == [i * 1000 for i in range(10)]


def _orders(key: str, n: int) -> pd.DataFrame:
    batch = pa.record_batch({
        H.BUCKET: pa.array([B] * n, pa.int32()), H.KEY_TEXT: pa.array([key] * n, pa.string()),
        H.OP: pa.array([TJ.LEFT_ROW] * n, pa.int8()), H.TIME: pa.array([T0 + i * 1000 * MS for i in range(n)], pa.int64()),
        TJ.FILE: pa.array([None] * n, pa.string()), H.ROW: pa.array([json.dumps({"id": f"o{i}"}) for i in range(n)]),
    })
    return next(H.pack_rows(iter([batch]))).to_pandas()


# =================================================================================================
# The job (JVM): 120 k versions of one key in one micro-batch
# =================================================================================================
# The key's cell is over 12 MB (each version carries a 100-character note): more than ten pieces, so the job
# writes, reads back and expires a many-piece cell through Spark's real state store.  The 1 M-version run that
# made the build of 2026-11-25 die of OutOfMemoryError is bench/bench_hot_key.py's (bench/RESULTS.md, "Hot key"):
# minutes of CI for the same code path.
HOT_VERSIONS = 120_000
HOT_ORDERS = 1_000
NOTE_CHARS = 100


def _write_hot_inputs(root, versions: int, orders: int) -> None:
    """One parquet file per side, written by pyarrow (no Python object per row): ``versions`` versions of
    ``HOT`` (one per ms from 2020-01-01 10:00, a 100-character note each: on these the build of 2026-11-25
    died of a JVM ``OutOfMemoryError``) and ``orders`` orders, nine in ten on ``HOT``, spread over the
    versions and a little past them, the rest on a key without versions."""
    import numpy as np
    import pyarrow.parquet as pq

    (root / "right").mkdir()
    (root / "left").mkdir()
    i = np.arange(versions, dtype=np.int64)
    pq.write_table(pa.table({
        "currency": pa.array(np.full(versions, "HOT", dtype=object), pa.string()),
        "rate": pa.array(1.0 + (i % 1000) / 1000.0),
        "update_time": pa.array(T0 + i * MS, pa.timestamp("us")),
        "note": pa.array(np.char.zfill(i.astype(str), NOTE_CHARS).astype(object), pa.string()),
    }), root / "right" / "part-0.parquet")
    j = np.arange(orders, dtype=np.int64)
    pq.write_table(pa.table({
        "order_id": pa.array(j),
        "currency": pa.array(np.where(j % 10 == 9, "COLD", "HOT").astype(object), pa.string()),
        "order_time": pa.array(T0 + j * (versions * MS // orders) * 11 // 10 + 500, pa.timestamp("us")),
    }), root / "left" / "part-0.parquet")


@pytest.mark.spark
@pytest.mark.slow
def test_a_hot_key_of_many_pieces_in_one_micro_batch(spark, tmp_path) -> None:
    """Issue 20's hot key: the streaming job (one data micro-batch, then the flush) writes what the DataFrame
    door writes for the same input: same count, same checksum over every row (computed in Spark)."""
    assert HOT_VERSIONS * NOTE_CHARS > 10 * PIECE_BYTES  # the notes alone fill more than ten pieces
    from pyspark.sql import functions as F

    import timeweave
    from timeweave.jobs.streaming import run_streaming

    _write_hot_inputs(tmp_path, HOT_VERSIONS, HOT_ORDERS)
    left_ddl = "order_id BIGINT, currency STRING, order_time TIMESTAMP"
    right_ddl = "currency STRING, rate DOUBLE, update_time TIMESTAMP, note STRING"
    config = {
        "left": {"path": str(tmp_path / "left"), "format": "parquet", "schema": left_ddl},
        "right": {"path": str(tmp_path / "right"), "format": "parquet", "schema": right_ddl},
        "versioned": {"key": ["currency"], "time": "update_time"},
        "join": {"left_time": "order_time", "how": "left", "right_columns": ["rate", "note"]},
        "output": {"path": str(tmp_path / "stream")},
        "checkpoint": str(tmp_path / "checkpoint"),
        "trigger": {"available_now": True},
    }
    metrics = run_streaming(config, spark, flush=True)
    assert (metrics["rows_in_left"], metrics["rows_in_right"], metrics["rows_out"], metrics["late"],
            metrics["dead_letter"]) == (HOT_ORDERS, HOT_VERSIONS, HOT_ORDERS, 0, 0)

    left = spark.read.schema(left_ddl).parquet(str(tmp_path / "left"))
    right = spark.read.schema(right_ddl).parquet(str(tmp_path / "right"))
    expected = timeweave.temporal_join(left, right, "order_time", key="currency", time="update_time", how="left",
                                     right_columns=["rate", "note"])
    streamed = spark.read.parquet(str(tmp_path / "stream"))
    assert streamed.columns == expected.columns

    def summary(df):
        return df.select(
            F.count(F.lit(1)).alias("rows"), F.count("rate").alias("matched"), F.max("note").alias("last_note"),
            F.sum(F.xxhash64(*df.columns).cast("decimal(38,0)")).alias("checksum"),
        ).first().asDict()

    want = summary(expected)
    # every HOT order matches (the ones past the last version match it: it is still in force), COLD ones do not
    assert want["rows"] == HOT_ORDERS and want["matched"] == HOT_ORDERS * 9 // 10
    assert summary(streamed) == want


def test_a_match_recognize_partitions_compressed_cell_is_stored_in_pieces_too() -> None:
    """MATCH_RECOGNIZE's cells are LZ4-compressed first (``_PackedEntry``); one that is still over a piece (a hot
    partition's buffered rows that do not compress) is stored in pieces and read back."""
    import random

    from timeweave.spark import match_recognize_streaming as M

    rnd = random.Random(7)
    rows = [(i, i, (i, "".join(rnd.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=64)))) for i in range(60_000)]
    cell = encode_cell({"mr-buffer": rows}, {0}, len(rows))
    cells = _Map()
    M._PackedEntry(cells, "hot").update((cell,))
    assert len(cells) > 2 and all(len(v[0]) <= PIECE_VALUE_MAX for v in cells.values())
    assert M._PackedEntry(cells, "hot").get() == (cell,)
    assert M.SparkKeyContext(None, M._PackedEntry(cells, "hot"), 0)._values["mr-buffer"][7] == rows[7]


def test_pieces_written_with_another_piece_size_are_all_read_and_removed() -> None:
    """The manifest, not the piece size of this release, says how many pieces a cell has."""
    from timeweave.core.state_codec import split

    cells = _Map()
    big = _big_cell(20_000)
    manifest, pieces = split(big, piece_bytes=256 << 10)
    cells[("k",)] = (HS.PIECES + manifest,)
    for i, piece in enumerate(pieces):
        cells[(HS.piece_key("k", i),)] = (piece,)
    assert len(pieces) > len(big) // PIECE_BYTES + 1
    entry = HS.MapEntry(cells, "k")
    assert entry.get() == (big,)
    entry.update((encode_cell({"n": 1}, set(), 1),))
    assert list(cells) == [("k",)]
