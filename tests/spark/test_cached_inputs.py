"""A caller's cached DataFrame stays cached through every door that names it in generated SQL.

PySpark's ``spark.sql(text, name=df)`` and ``spark.catalog.dropTempView`` uncache data whose plan equals the
dropped view's, which is the caller's own ``df.cache()``; the doors drop their views through
:func:`timeweave.spark.temp_views.drop_temp_view` instead.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from pyspark.sql import functions as F

import timeweave
from timeweave.core.windows import hop, session, tumble


def _cached(df) -> bool:
    """Whether Spark's cache manager still serves ``df``'s plan (not PySpark's own ``is_cached`` flag)."""
    manager = df.sparkSession._jsparkSession.sharedState().cacheManager()
    return manager.lookupCachedData(df._jdf).isDefined()


@pytest.fixture()
def bids(spark):
    base = datetime(2024, 1, 1)
    rows = [(base + timedelta(seconds=7 * i), float(i % 5), f"I{i % 3}") for i in range(60)]
    df = spark.createDataFrame(rows, "bidtime TIMESTAMP, price DOUBLE, item STRING").cache()
    df.count()
    yield df
    df.unpersist()


@pytest.mark.parametrize("window", [tumble("1 minute"), hop("1 minute", "2 minutes"), session("30 seconds", "item")],
                         ids=["tumble", "hop", "session"])
def test_window_doors_keep_the_callers_cache(bids, window) -> None:
    out = timeweave.window_aggregate(bids, {"cnt": "COUNT(*)"}, keys="item", time="bidtime", window=window)
    out.collect()
    timeweave.tumble(bids, "bidtime", "1 minute").collect()
    assert _cached(bids)


def test_sql_door_arguments_keep_the_callers_cache(spark, bids) -> None:
    out = timeweave.sql(spark, "SELECT window_start, item, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE {bids}, "
                        "DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)) GROUP BY window_start, item", bids=bids)
    assert out.count() > 0
    assert _cached(bids)


def test_temporal_join_door_keeps_both_sides_cached(spark, bids) -> None:
    base = datetime(2024, 1, 1)
    rates = spark.createDataFrame([(f"I{i % 3}", float(i), base + timedelta(seconds=40 * i)) for i in range(9)],
                                  "item STRING, rate DOUBLE, rate_time TIMESTAMP").cache()
    rates.count()
    try:
        out = timeweave.temporal_join(bids, rates, "bidtime", key="item", time="rate_time", how="left")
        assert out.count() == bids.count()
        assert _cached(bids) and _cached(rates)
    finally:
        rates.unpersist()


def test_a_plain_spark_sql_with_a_frame_argument_does_uncache(spark, bids) -> None:
    """The PySpark behaviour the doors avoid (if PySpark stops uncaching, the helper is no longer needed)."""
    copy = bids.select("*", F.lit(1).alias("one")).cache()
    copy.count()
    spark.sql("SELECT COUNT(*) FROM {df}", df=copy).collect()
    assert not _cached(copy)


def test_match_recognize_door_keeps_the_callers_cache(bids) -> None:
    clause = ("PARTITION BY item ORDER BY bidtime MEASURES COUNT(*) AS n ONE ROW PER MATCH "
              "AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)")
    assert timeweave.match_recognize(bids, clause).count() > 0
    assert _cached(bids)
