"""The DataFrame door's executor side without a JVM: Arrow conversion, bulk feeding, column pruning."""

from __future__ import annotations

import random
from datetime import date, datetime
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from timeweave.spark.match_recognize import (
    _naive,
    _needed_columns,
    _pylist,
    _row_builder,
    plan,
    run_batches,
    run_sorted,
)

SCHEMA = T.StructType([T.StructField("k", T.StringType()), T.StructField("t", T.LongType()),
                       T.StructField("p", T.LongType()), T.StructField("extra", T.StringType())])
CLAUSE = ("PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS s, LAST(A.t) AS e, AVG(A.p) AS a "
          "PATTERN (A+ B) DEFINE A AS AVG(A.p) < 5")


@pytest.mark.parametrize("array", [
    pa.array([0, None, 1_700_000_000_123_456, -62135596800000000], type=pa.timestamp("us")),
    pa.array([0, None, 1_700_000_000_123], type=pa.timestamp("ms")),
    pa.array([None, 1_700_000_000], type=pa.timestamp("s")),
    pa.array([0, None, 1_700_000_000_123_456], type=pa.timestamp("us", tz="UTC")),
    pa.array([0, None, 19000], type=pa.date32()),
    pa.array([], type=pa.timestamp("us")),
    pa.array(["a", None], type=pa.string()),
])
def test_fast_conversion_gives_arrows_own_values(array: pa.Array) -> None:
    naive = _naive(array)
    converted = _pylist(naive)
    assert converted == naive.to_pylist()
    assert [type(v) for v in converted] == [type(v) for v in naive.to_pylist()]
    assert all(isinstance(v, (datetime, date, str)) or v is None for v in converted)


def test_row_builder_matches_dict_zip() -> None:
    names = ("a", "b c", "x'y", "a2")
    columns = [[1, 2], ["u", None], [None, 3.5], [True, False]]
    assert _row_builder(names)(columns) == [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]
    assert _row_builder(())([]) == []


def _rows(count: int, seed: int) -> list[dict[str, Any]]:
    generator = random.Random(seed)
    rows = [{"k": f"k{generator.randint(0, 4)}", "t": i, "p": generator.randint(1, 9), "extra": "x"}
            for i in range(count)]
    return sorted(rows, key=lambda r: (r["k"], r["t"]))


@pytest.mark.parametrize("chunk", [1, 7, 50, 1000])
def test_run_batches_equals_row_by_row(chunk: int) -> None:
    bound = plan(CLAUSE, SCHEMA)
    rows = _rows(400, seed=chunk)
    table = pa.Table.from_pylist(rows)
    batches = table.to_batches(max_chunksize=chunk)  # batches cut across partition keys
    expected = list(run_sorted(bound, iter(rows)))
    assert len(expected) > 10
    assert [row for out in run_batches(bound, iter(batches)) for row in out] == expected


def test_one_row_per_match_ships_only_the_columns_it_reads() -> None:
    assert _needed_columns(plan(CLAUSE, SCHEMA)) == ["k", "t", "p"]
    assert _needed_columns(plan(CLAUSE.replace("PATTERN", "ALL ROWS PER MATCH PATTERN"), SCHEMA)) == [
        "k", "t", "p", "extra"]
    assert _needed_columns(plan("ORDER BY t MEASURES MATCH_ROWTIME(EXTRA) AS m PATTERN (A) DEFINE A AS P > 1",
                                SCHEMA)) == ["t", "p", "extra"]


@pytest.mark.parametrize("timezone", ["UTC", "America/New_York"])
@pytest.mark.parametrize("clause", [
    "PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS f, LAST(A.u) AS l, MIN(A.u) AS lo, MAX(B.u) AS hi, "
    "PREV(A.u) AS pu, MATCH_ROWTIME() AS mr, COUNT(*) AS n PATTERN (A+ B) DEFINE A AS AVG(A.p) < 3",
    "PARTITION BY u ORDER BY t MEASURES FIRST(A.t) AS f, LAST(A.t) AS l PATTERN (A+ B) DEFINE A AS A.p < 4",
    # u is computed with here, t only copied
    "PARTITION BY k ORDER BY t MEASURES LAST(A.t) AS l, FIRST(A.u) = LAST(A.u) AS same "
    "PATTERN (A+ B) DEFINE A AS A.p < 4",
])
def test_copied_timestamps_travel_as_integers_with_the_same_output(
        clause: str, timezone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Timestamp columns only copied to the output are carried as integers: the same output batches as
    with datetime objects, DST gaps and overlaps (the wall-clock conversion both ways) and NULLs included."""
    from timeweave.spark import match_recognize as M

    schema = T.StructType([T.StructField("k", T.StringType()), T.StructField("t", T.TimestampType()),
                           T.StructField("u", T.TimestampType()), T.StructField("p", T.LongType())])
    generator = random.Random(3)
    dst_overlap = 1_730_611_800_000_000  # 2024-11-03 05:30 UTC: 01:30 in New York, which happens twice
    times = sorted(dst_overlap + generator.randint(-4, 4) * 1_800_000_000 for _ in range(200))
    zone = pa.timestamp("us", tz=timezone)
    batch = pa.RecordBatch.from_arrays([
        pa.array([["a", "b"][i // 100] for i in range(200)]),
        pa.array(times, type=pa.int64()).cast(zone),
        pa.array([None if i % 13 == 0 else times[(i * 7) % 200] for i in range(200)], type=pa.int64()).cast(zone),
        pa.array([generator.randint(0, 6) for _ in range(200)], type=pa.int64()),
    ], names=["k", "t", "u", "p"])
    bound = plan(clause, schema)
    runner = M._ArrowRunner(clause, schema.json(), bound.schema.json(), timezone)
    raw, _ = M._copied_timestamps(bound)
    assert "t" in raw and ("u" in raw) == ("same" not in clause)
    batches = [batch.slice(0, 70), batch.slice(70, 60), batch.slice(130)]
    carried = pa.Table.from_batches(list(runner(iter(batches))))
    monkeypatch.setattr(M, "_copied_timestamps", lambda b: (frozenset(), tuple(False for _ in b.keys)))
    as_datetimes = pa.Table.from_batches(list(runner(iter(batches))))
    assert carried.num_rows > 5
    assert carried.equals(as_datetimes)
