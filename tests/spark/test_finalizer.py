"""The streaming job's per-batch plan pieces: ``plan.Finalizer`` (finalize parsed once) and the query's confs."""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.spec import TemporalJoinSpec, ValidityColumns, VersionedTableSpec
from timeweave.jobs import streaming as jobs_streaming
from timeweave.spark import plan, render

pytestmark = pytest.mark.spark

LEFT = T.StructType([
    T.StructField("id", T.LongType()), T.StructField("cur", T.StringType()), T.StructField("t", T.TimestampType()),
])
RIGHT = T.StructType([
    T.StructField("cur", T.StringType()), T.StructField("rate", T.DoubleType()), T.StructField("ut", T.TimestampType()),
])
MATCHED = T.StructType([
    T.StructField("__tw_l", LEFT),
    T.StructField("__tw_v", T.StructType([
        T.StructField("deleted", T.BooleanType()), T.StructField("valid_from", T.TimestampType()),
        T.StructField("valid_to", T.TimestampType()), T.StructField("p", RIGHT),
    ])),
])


def _matched(spark, rows: list[tuple]) -> object:
    """A ``matched`` frame: (id, cur, hour, rate or None) per row; no rate = no version."""
    data = []
    for id_, cur, hour, rate in rows:
        t = datetime(2024, 1, 1, hour)
        version = None if rate is None else (False, datetime(2024, 1, 1, 0), None, (cur, rate, datetime(2024, 1, 1, 0)))
        data.append(((id_, cur, t), version))
    return spark.createDataFrame(data, MATCHED)


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


@pytest.mark.parametrize("how, predicate", [("left", None), ("inner", None), ("left", "r.rate > 1.5"), ("inner", "l.id <> 2")])
def test_finalizer_equals_the_rendered_finalize_sql_on_every_batch(spark, how: str, predicate: str | None) -> None:
    """Parsed once and bound per batch, the Finalizer gives what ``spark.sql`` of the rendered SQL gives."""
    spec = TemporalJoinSpec(
        VersionedTableSpec("cur", "ut"), left_time="t", how=how, right_columns=["rate"], predicate=predicate,
        validity=ValidityColumns(valid_from="rate_from", valid_to=None),
    )
    finalizer = plan.Finalizer(spec, LEFT.fieldNames(), RIGHT.fieldNames())
    batches = [
        [(1, "EUR", 1, 1.1), (2, "USD", 2, None), (3, "USD", 3, 2.0)],
        [(4, "EUR", 4, 1.9), (5, "GBP", 5, None)],  # a second batch: the plan parsed for the first is reused
        [],
    ]
    for rows in batches:
        matched = _matched(spark, rows)
        got = finalizer(matched)
        matched.createOrReplaceTempView("finalizer_reference")
        want = spark.sql(render.finalize_sql(spec, "finalizer_reference", LEFT.fieldNames(), RIGHT.fieldNames()))
        assert _rows(plan.finalize(matched, spec, LEFT.fieldNames(), RIGHT.fieldNames())) == _rows(want)
        assert got.columns == want.columns
        assert got.schema == want.schema
        assert _rows(got) == _rows(want)
    # Each call's view is dropped once the batch's plan is analyzed (a job would otherwise keep them all).
    assert not [t.name for t in spark.catalog.listTables() if t.name.startswith("__tw_matched_")]


def test_finalizer_reads_the_batch_it_was_given(spark) -> None:
    """The parsed plan names a view, not a batch: frames made by earlier calls keep their own rows."""
    spec = TemporalJoinSpec(VersionedTableSpec("cur", "ut"), left_time="t", how="left", right_columns=["rate"])
    finalizer = plan.Finalizer(spec, LEFT.fieldNames(), RIGHT.fieldNames())
    first = finalizer(_matched(spark, [(1, "EUR", 1, 1.25)]))
    second = finalizer(_matched(spark, [(2, "USD", 2, None), (3, "EUR", 3, 1.5)]))
    assert [r["id"] for r in first.collect()] == [1]
    assert sorted(r["id"] for r in second.where(F.col("rate").isNull()).collect()) == [2]
    assert _rows(first) == [(1, "EUR", datetime(2024, 1, 1, 1), 1.25)]


class _Writer:
    """A stand-in for a DataStreamWriter: records the session conf the query would be started with."""

    def __init__(self, spark) -> None:
        self._spark = spark
        self.seen: dict[str, str | None] = {}

    def start(self) -> str:
        self.seen = {key: self._spark.conf.get(key, None) for key in jobs_streaming.QUERY_CONFIGS}
        return "query"


@pytest.mark.parametrize("before", [None, "64m"])
def test_query_configs_apply_to_the_start_only(spark, before: str | None) -> None:
    key = "spark.sql.execution.arrow.maxBytesPerBatch"
    assert key in jobs_streaming.QUERY_CONFIGS
    original = spark.conf.get(key, None)
    if before is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, before)
    unset_value = spark.conf.get(key, None)  # an unset conf reads as its default
    try:
        writer = _Writer(spark)
        assert jobs_streaming._start(spark, writer) == "query"
        assert writer.seen == dict(jobs_streaming.QUERY_CONFIGS)
        assert spark.conf.get(key, None) == (before if before is not None else unset_value)
    finally:
        if original is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, original)
