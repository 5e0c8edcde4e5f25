"""The streaming MATCH_RECOGNIZE door end to end: file source -> streaming job -> parquet outputs.

The invariant: a job flushed at end of input has written exactly the batch DataFrame door's rows,
whatever the split of the input into runs (restarts from the checkpoint in between).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import types as T

from tests.helpers.mr_random import CLAUSES, SCHEMA, canonical, random_events
from timeweave.core.errors import SpecError
from timeweave.core.pattern import PatternValidationError
from timeweave.jobs import cli
from timeweave.jobs.streaming import run_streaming
from timeweave.spark.host.packs import packs_with_latest_time
from timeweave.spark.host.schema import BUCKET, OP
from timeweave.spark.host.stream import DATA_ROW
from timeweave.spark.match_recognize import match_recognize
from timeweave.spark.match_recognize_streaming import match_recognize_stream

pytestmark = pytest.mark.spark


def _write_json(path: Path, rows: list[dict[str, Any]]) -> None:
    """Rows as a JSON-lines file (datetimes ISO, the JSON reader's default timestamp format)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, default=lambda v: v.isoformat()) + "\n" for r in rows))


def _config(tmp_path: Path, clause: str, schema: str, delay: str = "0 seconds") -> dict[str, Any]:
    return {
        "match_recognize": {"clause": clause},
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": schema, "watermark_delay": delay},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
        "trigger": {"available_now": True},
    }


@pytest.mark.parametrize(("clause_id", "seed", "ties"), [
    ("one-row-greedy-avg", 11, False),
    ("unmatched-skip-to-last", 12, True),
    ("no-partition-anchor", 13, False),
])
def test_flushed_stream_equals_the_batch_door_across_restarts(spark, tmp_path: Path, clause_id: str, seed: int,
                                                              ties: bool) -> None:
    rows = random_events(seed, n=70, ties=ties, null_times=2)
    first, second = rows[:40], rows[40:]
    config = _config(tmp_path, CLAUSES[clause_id], SCHEMA, delay="3 hours")  # > the data's span: nothing late
    _write_json(tmp_path / "in" / "a.json", first)
    run1 = run_streaming(config, spark)
    _write_json(tmp_path / "in" / "b.json", second)
    run2 = run_streaming(config, spark, flush=True)

    # The batch door over the same rows: no door matches the NULL-time ones (the stream dead-letters them).
    source = spark.read.schema(SCHEMA).json(str(tmp_path / "in"))
    batch = match_recognize(source, CLAUSES[clause_id])
    expected = canonical(batch.collect(), batch.columns)
    main = spark.read.parquet(config["output"]["path"])
    assert main.schema == batch.schema
    assert canonical(main.collect(), batch.columns) == expected  # no duplicates, no loss, same rows
    assert (run1["rows_in"], run2["rows_in"]) == (len(first), len(second))
    assert run1["rows_out"] + run2["rows_out"] == sum(expected.values())
    assert run1["late"] + run2["late"] == 0
    assert run1["dead_letter"] + run2["dead_letter"] == 2
    dead = spark.read.parquet(f"{config['output']['path']}_dead_letter").collect()
    assert {(r["side"], r["reason"]) for r in dead} == {("input", "NULL event time column t")}
    assert sorted(json.loads(r["row"])["seq"] for r in dead) == sorted(r["seq"] for r in rows if r["t"] is None)
    assert run2["watermark"] == "9999-12-31T21:00:00.000Z"  # the end of input (10000-01-01) minus the delay


CLAUSE = """PARTITION BY k ORDER BY t
    MEASURES FIRST(A.t) AS t0, LAST(B.t) AS t1, COUNT(*) AS n
    PATTERN (A B+) DEFINE B AS B.v > PREV(B.v)"""
SMALL_SCHEMA = "id STRING, k STRING, t TIMESTAMP, v BIGINT"


def _row(id_: str, k: str | None, t: str | None, v: int) -> dict[str, Any]:
    return {"id": id_, "k": k, "t": None if t is None else f"2020-01-01T{t}", "v": v}


def test_late_rows_dead_letters_metrics_and_the_cli(spark, tmp_path: Path, capsys) -> None:
    config = _config(tmp_path, CLAUSE, SMALL_SCHEMA)
    _write_json(tmp_path / "in" / "a.json", [
        _row("a1", "x", "10:00:00", 1), _row("a2", "x", "10:01:00", 2), _row("a3", "x", "10:02:00", 3),
        _row("b1", None, "10:03:00", 5), _row("b2", None, "10:04:00", 6),  # NULL key: an ordinary partition
        _row("a4", "x", "10:10:00", 0),
    ])
    first = run_streaming(config, spark)
    assert first["watermark"] == "2020-01-01T10:10:00.000Z"
    # x: A B+ over 10:00..10:02 is decided by the 10:10 row (v falls), which the watermark released.
    assert (first["rows_in"], first["rows_out"], first["late"]) == (6, 1, 0)

    _write_json(tmp_path / "in" / "b.json", [
        _row("late1", "x", "10:05:00", 9),   # below the watermark: late
        _row("late2", "y", "10:10:00", 9),   # at the watermark: late too (Flink's CEP rule; Spark would drop it)
        _row("a5", "x", "10:11:00", 4),
        _row("notime", "x", None, 1),        # dead letter
    ])
    assert cli.main(["streaming", "--config", json.dumps(config), "--flush"]) == 0
    second = json.loads(capsys.readouterr().out.strip().splitlines()[-1].removeprefix(cli.METRICS_PREFIX))
    assert (second["rows_in"], second["late"], second["dead_letter"], second["kind"]) == (4, 2, 1, "match_recognize")
    assert second["watermark"] == "+10000-01-01T00:00:00.000Z"  # the end of input

    late = spark.read.parquet(f"{config['output']['path']}_late")
    assert late.columns == ["id", "k", "t", "v", "reason", "watermark"]
    assert sorted((r["id"], r["watermark"]) for r in late.collect()) == [
        ("late1", datetime(2020, 1, 1, 10, 10)), ("late2", datetime(2020, 1, 1, 10, 10))]
    assert all(r["reason"].startswith("late: event time ") for r in late.collect())
    # The main output is the batch door's over the rows that were not late.
    source = spark.read.schema(SMALL_SCHEMA).json(str(tmp_path / "in")).where("id NOT LIKE 'late%'")
    batch = match_recognize(source, CLAUSE)
    main = spark.read.parquet(config["output"]["path"])
    assert canonical(main.collect(), batch.columns) == canonical(batch.collect(), batch.columns)
    assert first["rows_out"] + second["rows_out"] == main.count() == 3  # x twice (a4 a5 matches), NULL key once


def test_within_concludes_attempts_on_the_watermark_and_prunes_state(spark, tmp_path: Path) -> None:
    clause = """PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS t0, LAST(B.t) AS t1, COUNT(*) AS n
        PATTERN (A B+) WITHIN INTERVAL '10' SECOND DEFINE B AS B.v > PREV(B.v)"""
    config = _config(tmp_path, clause, SMALL_SCHEMA)
    _write_json(tmp_path / "in" / "a.json", [
        *[_row(f"row-x-{i}", "x", f"10:00:0{i}", i) for i in range(4)],  # rising: the greedy B+ is undecided
        _row("row-y-0", "y", "10:01:00", 0),                               # another key moves the watermark
    ])
    metrics = run_streaming(config, spark)
    # No flush: the watermark (10:01) passed x's WITHIN deadline (10:00:10), so the attempt was concluded.
    main = spark.read.parquet(config["output"]["path"]).collect()
    assert [(r["k"], r["t0"], r["t1"], r["n"]) for r in main] == [
        ("x", datetime(2020, 1, 1, 10), datetime(2020, 1, 1, 10, 0, 3), 4)]
    assert metrics["rows_out"] == 1
    # x's state no longer holds the rows the concluded attempt used (PREV's reach may keep the last one);
    # y's state still holds its row (its attempt is open): the check can see rows in state.
    # State layout: per hash bucket a MapState from the key's text ("s" + a STRING key) to its encoded cell.
    state = spark.read.format("statestore").option("path", f"{config['checkpoint']}/query") \
        .option("stateVarName", "timeweave_mr_keys").load().collect()
    by_key = {r["user_map_key"][0].removeprefix("s"): bytes(r["user_map_value"][0]) for r in state}
    assert [i for i in range(4) if f"row-x-{i}".encode() in by_key["x"]] in ([], [3])
    assert b"row-y-0" in by_key["y"]


def test_the_output_schema_is_the_batch_doors_and_errors_come_before_any_job(spark, tmp_path: Path) -> None:
    schema = T.StructType.fromDDL(SMALL_SCHEMA)
    stream = spark.readStream.schema(schema).json(str(tmp_path))  # empty, never read: no query starts
    door = match_recognize_stream(stream, CLAUSE + " ")
    assert door.schema.simpleString() == "struct<k:string,t0:timestamp,t1:timestamp,n:bigint>"
    bad = "PARTITION BY k ORDER BY t PATTERN (A) DEFINE A AS A.price > 0"
    with pytest.raises(PatternValidationError, match="column price not found") as error:
        match_recognize_stream(stream, bad)
    assert (error.value.line, error.value.col) == (1, bad.index("A.price") + 1)
    with pytest.raises(SpecError, match="must be a TIMESTAMP"):
        match_recognize_stream(stream, "PARTITION BY k ORDER BY id PATTERN (A) DEFINE A AS A.v > 0")
    with pytest.raises(SpecError, match="added by the late output"):
        match_recognize_stream(spark.readStream.schema("t TIMESTAMP, reason STRING").json(str(tmp_path)),
                               "ORDER BY t PATTERN (A) DEFINE A AS A.reason = 'x'")
    with pytest.raises(SpecError, match="ORDER BY"):
        match_recognize_stream(stream, "PARTITION BY k PATTERN (A) DEFINE A AS A.v > 0")


def test_random_clauses_decode_every_input_type_like_the_batch_door(spark, tmp_path: Path) -> None:
    """Decimal, float, date, timestamp with sub-seconds, NaN vs NULL, integer µs event time: same rows."""
    schema = "k INT, t BIGINT, p DECIMAL(10,3), f FLOAT, w DOUBLE, d DATE, ts TIMESTAMP, b BOOLEAN"
    lines = [
        {"k": 1, "t": 1, "p": 1.125, "f": 0.1, "w": "NaN", "d": "2020-01-01", "ts": "2020-01-01T00:00:00.123456",
         "b": True},
        {"k": 1, "t": 5, "p": 2.25, "f": 0.2, "w": None, "d": "2020-01-02", "ts": "2020-01-01T00:00:01", "b": None},
        {"k": 1, "t": 9, "p": 0.5, "f": None, "w": 1.5, "d": None, "ts": None, "b": False},
        {"k": None, "t": 2, "p": None, "f": 1.5, "w": 2.5, "d": "2020-01-03", "ts": "2020-01-01T00:00:02", "b": True},
    ]
    _write_json(tmp_path / "in" / "a.json", lines)
    clause = """PARTITION BY k ORDER BY t
        MEASURES CLASSIFIER() AS c, RUNNING SUM(X.p) AS sp, MAX(X.f) AS mf, LAST(X.ts) AS lts
        ALL ROWS PER MATCH WITH UNMATCHED ROWS
        PATTERN (X+) DEFINE X AS X.w IS NULL OR X.w <> X.w OR X.d < DATE '2020-01-02' OR X.b"""
    config = _config(tmp_path, clause, schema)
    run_streaming(config, spark, flush=True)
    batch = match_recognize(spark.read.schema(schema).json(str(tmp_path / "in")), clause)
    main = spark.read.parquet(config["output"]["path"])
    assert main.schema == batch.schema
    columns = batch.columns
    assert Counter(tuple(map(repr, (r[c] for c in columns))) for r in main.collect()) == Counter(
        tuple(map(repr, (r[c] for c in columns))) for r in batch.collect())


@pytest.mark.parametrize("name", ["timeweave.spark.match_recognize_streaming", "timeweave.jobs.config"])
def test_docstring_examples_run(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_state_cells_compress_and_pickled_cells_of_earlier_releases_are_refused(tmp_path: Path) -> None:
    """Big cells are LZ4-compressed and read back; a pickled cell (what earlier releases wrote, here a crafted
    one that would create a marker file), compressed or not, and a damaged compressed cell fail with the
    state format error naming the key, and nothing is loaded (no JVM)."""
    import pickle

    from timeweave.core.errors import StateFormatError
    from timeweave.core.state_codec import encode_cell
    from timeweave.spark import match_recognize_streaming as M

    class Map(dict):  # the MapState calls _PackedEntry makes
        getValue, updateValue = dict.get, dict.__setitem__

    cells = Map()
    big = encode_cell({"mr-buffer": [(i, i, (i, f'{{"k":"a","v":{i}}}')) for i in range(2000)]}, {0}, 2000)
    small = encode_cell({"mr-seq": 1}, set(), 1)
    M._PackedEntry(cells, "big").update((big,))
    M._PackedEntry(cells, "small").update((small,))
    assert cells[("big",)][0][:1] == M._PACKED and len(cells[("big",)][0]) < len(big)
    assert cells[("small",)] == (small,)
    assert [M._PackedEntry(cells, k).get() for k in ("big", "small", "none")] == [(big,), (small,), None]
    values = M.SparkKeyContext(None, M._PackedEntry(cells, "big"), 0)._values
    assert values["mr-buffer"][5] == (5, 5, (5, '{"k":"a","v":5}'))

    class Marker:
        def __reduce__(self) -> tuple:
            return (open, (str(tmp_path / "marker"), "w"))

    crafted = pickle.dumps({"values": {"mr-buffer": [Marker()], "pad": "x" * 5000}, "timers": set(), "seq": 0})
    cells[("old",)] = (crafted,)
    M._PackedEntry(cells, "old-packed").update((crafted,))  # compressed as earlier releases did
    assert cells[("old-packed",)][0][:1] == M._PACKED
    damaged = bytearray(cells[("big",)][0])
    damaged[20:40] = bytes(20)
    cells[("damaged",)] = (bytes(damaged),)
    for key, message in (("old", "earlier timeweave release"), ("old-packed", "earlier timeweave release"),
                         ("damaged", "malformed state|bad checksum")):
        with pytest.raises(StateFormatError, match=rf"key '{key}'.*({message})"):
            M.SparkKeyContext(None, M._PackedEntry(cells, key), 0)
    assert not (tmp_path / "marker").exists()

    schema = T.StructType([T.StructField("k", T.StringType()), T.StructField("t", T.TimestampType()),
                           T.StructField("v", T.LongType())])

    class Handle:
        def getMapState(self, *args: Any) -> Any:
            return Map()

        def getValueState(self, *args: Any) -> Any:
            return None

    processor = M.MatchRecognizeProcessor(
        "PARTITION BY k ORDER BY t MEASURES A.v AS v PATTERN (A) DEFINE A AS A.v > 0", schema.json(), "UTC")
    processor.init(Handle())
    text = '{"k":"a","t":1000000,"v":%d}'
    decoded = {"k": "a", "t": datetime(1970, 1, 1, 0, 0, 1), "v": 3, M._TIME_KEY: 1_000_000}
    rows = [(1_000_000, text % 1), {M._TIME_KEY: 1_000_000, M._OLD_TEXT_KEY: text % 2}, dict(decoded)]
    # a released row keeps its wire text (the match budget's dead letter); an already decoded one has none
    assert processor._rows_of(rows) == [{**decoded, "v": 1, M._TEXT_KEY: text % 1},
                                        {**decoded, "v": 2, M._TEXT_KEY: text % 2}, decoded]
    assert [M._time_of(row) for row in rows] == [1_000_000] * 3


@pytest.mark.parametrize(("bound", "value", "most"), [("PACK_ROWS", 7, 10), ("PACK_BYTES", 1, 5)])
def test_packs_keep_every_row_and_each_buckets_order(monkeypatch, bound: str, value: int, most: int) -> None:
    """pack_rows + unpack (no JVM): every row once, in its bucket's pack, in arrival order; the pack's time is
    its largest event time; PACK_ROWS / PACK_BYTES bound a pack's rows (input batches of 5 rows)."""
    import pyarrow as pa

    from timeweave.spark import match_recognize_streaming as M
    from timeweave.spark.host import packs as host_packs

    monkeypatch.setattr(host_packs, bound, value)
    n = 40
    buckets = [(i * 7) % 3 for i in range(n)]
    times = [(i * 37) % 11 for i in range(n)]
    batches = [
        pa.record_batch({
            BUCKET: pa.array(buckets[i:i + 5], pa.int32()), M.KEY_TEXT: [f"s{b}" for b in buckets[i:i + 5]],
            OP: pa.array([DATA_ROW] * len(buckets[i:i + 5]), pa.int8()),
            M.TIME: pa.array(times[i:i + 5], pa.int64()), M.ROW: [f"r{j}" for j in range(i, min(i + 5, n))],
        })
        for i in range(0, n, 5)
    ]
    out = pa.Table.from_batches(list(packs_with_latest_time(iter(batches)))).to_pylist()
    seen: dict[int, list[str]] = {}
    for pack in out:
        rows = M.unpack([pack[M.PACK]])
        assert set(rows[M.KEY_TEXT]) == {f"s{pack[BUCKET]}"} and len(rows) <= most
        assert pack[M.PACK_TIME] == max(times[int(r[1:])] for r in rows[M.ROW])
        seen.setdefault(pack[BUCKET], []).extend(rows[M.ROW])
    assert {b: [int(r[1:]) for r in rows] for b, rows in seen.items()} == {
        b: [i for i in range(n) if buckets[i] == b] for b in range(3)
    }
