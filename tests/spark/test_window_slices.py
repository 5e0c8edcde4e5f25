"""Slice sharing in the batch window aggregate (``window_aggregate`` of TUMBLE / HOP / CUMULATE).

Mergeable aggregates (COUNT, SUM of integers and decimals, MIN, MAX, AVG of integers) are computed once per
key and slice and merged per window; the rows must equal the same aggregates over the TVF's rows (the
explode path, which Column aggregates still take), on random input with NULL keys, NULL values, NULL and
sub-millisecond times, times before 1970, offsets, and a time zone with a daylight-saving change.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

import timeweave
from timeweave.core.windows import cumulate, hop, tumble

pytestmark = pytest.mark.spark

DDL = "id INT, k STRING, v INT, d DECIMAL(10,2), s STRING, f DOUBLE, ts TIMESTAMP"
TEXT = {"n": "COUNT(*)", "one": "count(1)", "nv": "COUNT(v)", "sv": "SUM(v)", "sd": "sum(`d`)", "lo": "MIN(s)",
        "hi": "MAX(d)", "first": "min(ts)", "av": "AVG(v)"}


def _rows(seed: int, start: datetime, n: int = 400) -> list[tuple]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        t = None if rng.random() < 0.04 else start + timedelta(microseconds=rng.randrange(0, 40_000_000))
        rows.append((i, rng.choice(["a", "b", "c", None]), None if rng.random() < 0.1 else rng.randint(-50, 50),
                     Decimal(rng.randint(-99_999, 99_999)) / 100, rng.choice(["x", "y", "z", None]), rng.random(), t))
    return rows


def _sliced(df) -> bool:
    return "__tw_se" in df._jdf.queryExecution().analyzed().toString()


def _collect(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


@pytest.mark.parametrize(("spec", "start", "zone"), [
    (tumble("1 second", offset="300 milliseconds"), datetime(1969, 12, 31, 23, 59, 45), "UTC"),
    (hop("2 seconds", "6 seconds", offset="-500 milliseconds"), datetime(1969, 12, 31, 23, 59, 45), "UTC"),
    (cumulate("1500 milliseconds", "6 seconds", offset="700 milliseconds"), datetime(2024, 1, 1), "UTC"),
    # Los Angeles' 2021-03-14 change (02:00 -> 03:00 local) inside the rows: windows on the local wall clock
    (hop("10 seconds", "30 seconds"), datetime(2021, 3, 14, 9, 59, 50), "America/Los_Angeles"),
], ids=["tumble", "hop", "cumulate", "hop-zone"])
def test_slices_equal_the_tvf_rows(spark, spec, start, zone) -> None:
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        df = spark.createDataFrame(_rows(7, start), DDL)
        sliced = timeweave.window_aggregate(df, TEXT, keys="k", time="ts", window=spec)
        direct = timeweave.window_aggregate(df, {name: F.expr(text) for name, text in TEXT.items()}, keys="k",
                                            time="ts", window=spec)
        assert _sliced(sliced) and not _sliced(direct)
        assert sliced.schema.simpleString() == direct.schema.simpleString()
        got, want = _collect(sliced), _collect(direct)
        assert len(want) > 20 and got == want
        # no keys: one group per window
        assert _collect(timeweave.window_aggregate(df, {"n": "COUNT(*)"}, time="ts", window=spec)) == _collect(
            timeweave.window_aggregate(df, {"n": F.count(F.lit(1))}, time="ts", window=spec))
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def test_inexact_or_unknown_aggregates_keep_the_tvf_rows(spark) -> None:
    df = spark.createDataFrame(_rows(3, datetime(2024, 1, 1), n=50), DDL)
    spec = hop("2 seconds", "6 seconds")
    for aggregates in ({"s": "SUM(f)"}, {"a": "AVG(d)"}, {"d": "COUNT(DISTINCT v)"}, {"x": "SUM(v) + 1"},
                       {"n": "COUNT(*)", "p": "percentile(v, 0.5)"}, {"n": F.count(F.lit(1))}):
        assert not _sliced(timeweave.window_aggregate(df, aggregates, keys="k", time="ts", window=spec)), aggregates
    assert _sliced(timeweave.window_aggregate(df, {"n": "COUNT(*)", "m": "max(f)"}, keys="k", time="ts", window=spec))
