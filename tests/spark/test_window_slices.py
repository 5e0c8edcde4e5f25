"""Slice sharing in the batch window aggregate (``window_aggregate`` of TUMBLE / HOP / CUMULATE).

Mergeable aggregates (COUNT, SUM of integers and decimals, MIN, MAX, AVG of integers) are computed once per
key and slice and merged per window; the rows must equal the same aggregates over the TVF's rows (the
explode path, which Column aggregates still take), on random input with NULL keys, NULL values, NULL and
sub-millisecond times, times before 1970, offsets, and a time zone with a daylight-saving change.
"""

from __future__ import annotations

import random
import re
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


#: The sliced plan's slice-end column (``__tw_sessions``, the session plan's, is another name)
SLICE_END = re.compile(r"\b__tw_se\b")


def _sliced(df) -> bool:
    return SLICE_END.search(df._jdf.queryExecution().analyzed().toString()) is not None


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


# -- the SQL door: a window aggregation over TUMBLE / HOP / CUMULATE takes the same sliced plan ------------------

#: The SQL door's aggregates (TEXT's, as a query writes them: qualified, back-quoted, one without an alias)
SQL_ITEMS = ("COUNT(*) AS n, count(1) AS one, COUNT(w.v) AS nv, SUM(v) AS sv, sum(`d`) AS sd, MIN(s) AS lo, "
             "MAX(w.d) hi, min(ts) AS first, AVG(v) AS av, SUM(v)")
SQL_CALLS = {
    "tumble": "TABLE(TUMBLE(TABLE tw_sql_slices, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '300' MILLISECONDS))",
    "hop": "HOP(TABLE tw_sql_slices, DESCRIPTOR(ts), INTERVAL '2' SECONDS, INTERVAL '6' SECONDS, "
           "INTERVAL '-500' MILLISECONDS)",
    "cumulate": "TABLE(CUMULATE(DATA => TABLE tw_sql_slices, TIMECOL => DESCRIPTOR(ts), STEP => INTERVAL '1.5' SECONDS, "
                "MAX_SIZE => INTERVAL '6' SECONDS, OFFSET => INTERVAL '700' MILLISECONDS))",
    "hop-zone": "TABLE(HOP(TABLE tw_sql_slices, DESCRIPTOR(ts), INTERVAL '10' SECONDS, INTERVAL '30' SECONDS))",
}
SQL_SPECS = {"tumble": tumble("1 second", offset="300 milliseconds"),
             "hop": hop("2 seconds", "6 seconds", offset="-500 milliseconds"),
             "cumulate": cumulate("1500 milliseconds", "6 seconds", offset="700 milliseconds"),
             "hop-zone": hop("10 seconds", "30 seconds")}
SQL_STARTS = {"tumble": (datetime(1969, 12, 31, 23, 59, 45), "UTC"), "hop": (datetime(1969, 12, 31, 23, 59, 45), "UTC"),
              "cumulate": (datetime(2024, 1, 1), "UTC"), "hop-zone": (datetime(2021, 3, 14, 9, 59, 50), "America/Los_Angeles")}


def _with_late_rows(rows: list[tuple], seed: int) -> list[tuple]:
    """``rows`` then, in arrival order, rows 20-30 s behind the latest time: a streaming run would drop them
    from fired windows (late rows); batch has no watermark, so they count."""
    rng = random.Random(seed)
    latest = max(r[-1] for r in rows if r[-1] is not None)
    late = [(1000 + i, rng.choice(["a", None]), rng.randint(-5, 5), Decimal(rng.randint(-999, 999)) / 100, "x",
             rng.random(), latest - timedelta(seconds=20 + rng.random() * 10)) for i in range(30)]
    return rows + late


def _sql_sliced(spark, query: str) -> bool:
    from timeweave.spark import sql_door

    return SLICE_END.search(sql_door.rewrite(spark, query)) is not None


@pytest.mark.parametrize("case", list(SQL_CALLS))
def test_sql_door_slices_equal_its_tvf_rows_and_the_dataframe_door(spark, case) -> None:
    spec, (start, zone) = SQL_SPECS[case], SQL_STARTS[case]
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        rows = _with_late_rows(_rows(11, start), 5)
        df = spark.createDataFrame(rows, DDL)
        df.createOrReplaceTempView("tw_sql_slices")
        query = (f"SELECT window_start, k, window_end, {SQL_ITEMS} FROM {SQL_CALLS[case]} AS w "
                 "GROUP BY window_start, window_end, k")
        sliced = timeweave.sql(spark, query)
        # HAVING TRUE: the same rows through today's path (a HAVING is not a shape the sliced plan takes)
        unsliced = timeweave.sql(spark, query + " HAVING TRUE")
        assert _sliced(sliced) and _sql_sliced(spark, query) and not _sliced(unsliced)
        assert sliced.schema.simpleString() == unsliced.schema.simpleString()
        assert sliced.columns[-1] == "sum(v)"  # Spark's own name for an aggregate without an alias
        got = _collect(sliced)
        assert len(got) > 20 and got == _collect(unsliced)
        assert any(r[1] is None for r in got)  # NULL keys make their own groups
        # = the DataFrame door (its sliced plan), in the SQL query's column order
        door = timeweave.window_aggregate(df, TEXT, keys="k", time="ts", window=spec)
        order = ["window_start", "k", "window_end", *TEXT, "sv"]
        assert _collect(door.select(*order)) == got
        # late rows are kept: every row with a time counts in its TUMBLE window
        if case == "tumble":
            assert sum(r[3] for r in got) == sum(1 for r in rows if r[-1] is not None)
        # no keys, ORDER BY output names and positions
        ordered = (f"SELECT window_end, COUNT(*) AS n, MAX(d) FROM {SQL_CALLS[case]} GROUP BY window_start, window_end "
                   "ORDER BY window_end DESC, 2")
        assert _sql_sliced(spark, ordered)
        got = [tuple(r) for r in timeweave.sql(spark, ordered).collect()]
        assert got == [tuple(r) for r in timeweave.sql(spark, ordered.replace(" ORDER", " HAVING TRUE ORDER")).collect()]
        assert [r[0] for r in got] == sorted((r[0] for r in got), reverse=True)
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def test_sql_door_runs_a_hop_aggregation_on_slices(spark) -> None:
    """Fails when the SQL door groups a qualifying HOP query's TVF rows (size / slide rows per input row)."""
    df = spark.createDataFrame(_rows(2, datetime(2024, 1, 1), n=80), DDL)
    df.createOrReplaceTempView("tw_sql_slices_hop")
    from timeweave.spark import sql_door

    query = ("SELECT window_start, window_end, k, COUNT(*) FROM TABLE(HOP(TABLE tw_sql_slices_hop, DESCRIPTOR(ts), "
             "INTERVAL '5' SECONDS, INTERVAL '10' SECONDS)) GROUP BY window_start, window_end, k")
    rendered = sql_door.rewrite(spark, query)
    assert "__tw_se" in rendered and "explode(sequence(__tw_se" in rendered  # slices, then windows of slices
    plan = timeweave.sql(spark, query)._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("Aggregate [") == 2  # per key and slice, then per key and window
    # the TVF's rows are never grouped: the whole block is the sliced plan, not a GROUP BY over the TVF
    assert "GROUP BY window_start" not in rendered
    # TIMESTAMP_NTZ times: the same window types and rows as the TVF path
    df.withColumn("ts", F.col("ts").cast("timestamp_ntz")).createOrReplaceTempView("tw_sql_slices_hop")
    sliced, unsliced = timeweave.sql(spark, query), timeweave.sql(spark, query + " HAVING TRUE")
    assert _sliced(sliced) and not _sliced(unsliced)
    assert sliced.schema["window_start"].dataType.simpleString() == "timestamp_ntz"
    assert sliced.schema.simpleString() == unsliced.schema.simpleString()
    assert _collect(sliced) == _collect(unsliced)


@pytest.mark.parametrize("shape", [
    "SELECT window_start, window_end, k, COUNT(*) AS n FROM {call} GROUP BY window_start, window_end, k HAVING COUNT(*) > 2",
    "SELECT window_start, window_end, k, SUM(v) + 1 AS s FROM {call} GROUP BY window_start, window_end, k",
    "SELECT window_start, window_end, k, SUM(v) AS s FROM {call} GROUP BY window_start, window_end, GROUPING SETS ((k), ())",
    "SELECT window_start, window_end, k, COUNT(DISTINCT v) AS d FROM {call} GROUP BY window_start, window_end, k",
    "SELECT window_start, window_end, k, SUM(f) AS s FROM {call} GROUP BY window_start, window_end, k",  # inexact
    "SELECT window_start, window_end, k, AVG(d) AS a FROM {call} GROUP BY window_start, window_end, k",  # inexact
    "SELECT window_start, window_end, k, COUNT(*) AS n FROM {call} WHERE v > 0 GROUP BY window_start, window_end, k",
    "SELECT window_start, window_end, k, COUNT(*) AS n FROM {session} GROUP BY window_start, window_end, k",
])
def test_other_sql_shapes_keep_the_tvf_rows(spark, shape) -> None:
    df = spark.createDataFrame(_rows(4, datetime(2024, 1, 1), n=120), DDL)
    df.createOrReplaceTempView("tw_sql_slices_other")
    call = ("TABLE(HOP(TABLE tw_sql_slices_other, DESCRIPTOR(ts), INTERVAL '2' SECONDS, INTERVAL '6' SECONDS))")
    session_call = "TABLE(SESSION(TABLE tw_sql_slices_other PARTITION BY k, DESCRIPTOR(ts), INTERVAL '2' SECONDS))"
    query = shape.format(call=call, session=session_call)
    from timeweave.spark import sql_door

    rendered = sql_door.rewrite(spark, query)
    assert SLICE_END.search(rendered) is None
    tail = query[query.index(") GROUP BY") + 2 :] if ") GROUP BY" in query else query[query.index(")) WHERE") + 3 :]
    assert rendered.endswith(tail)  # only the TVF call was replaced: Spark groups its rows
    if "HAVING" in query:  # the rows: the DataFrame door's (sliced) counts, filtered
        door = timeweave.window_aggregate(df, {"n": "COUNT(*)"}, keys="k", time="ts", window=hop("2 seconds", "6 seconds"))
        assert _collect(timeweave.sql(spark, query)) == _collect(
            door.where("n > 2").select("window_start", "window_end", "k", "n"))


def test_sql_door_cascade_slices_both_levels(spark) -> None:
    df = spark.createDataFrame(_rows(9, datetime(2024, 1, 1)), DDL)
    df.createOrReplaceTempView("tw_sql_slices_cascade")
    inner = ("SELECT window_time AS rowtime, k, COUNT(*) AS n, SUM(d) AS total FROM TABLE(TUMBLE(TABLE "
             "tw_sql_slices_cascade, DESCRIPTOR(ts), INTERVAL '2' SECONDS)) GROUP BY window_start, window_end, window_time, k")
    outer = ("SELECT window_start, window_end, window_time, k, SUM(n) AS n, MAX(total) AS top FROM TABLE(HOP(TABLE ({inner}), "
             "DESCRIPTOR(rowtime), INTERVAL '4' SECONDS, INTERVAL '8' SECONDS)) GROUP BY window_start, window_end, window_time, k")
    from timeweave.spark import sql_door

    query = outer.format(inner=inner)
    assert sql_door.rewrite(spark, query).count("AS __tw_se,") == 2  # each level's partials per key and slice
    unsliced = (outer + " HAVING TRUE").format(inner=inner + " HAVING TRUE")
    assert SLICE_END.search(sql_door.rewrite(spark, unsliced)) is None
    got = _collect(timeweave.sql(spark, query))
    assert len(got) > 10 and got == _collect(timeweave.sql(spark, unsliced))
