"""The sliced backfill driver (runtime.spark.backfill) beyond the every-door tests: what a slice's probe
reads from a version (a predicate on a column the output does not carry), and the metrics the writing
jobs count (exact, also for empty and non-contiguous slices re-run with ``only``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

import runtime
from runtime.core.spec import TemporalJoinSpec, VersionedTableSpec
from runtime.spark.backfill import run_slices
from tests.spark.test_temporal_join_doors import T0, random_inputs

pytestmark = pytest.mark.spark

LEFT_DDL = "order_id STRING, currency STRING, order_time TIMESTAMP, amount DOUBLE"
RIGHT_DDL = "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP, seq BIGINT"
VERSIONED = dict(key="currency", time="update_time", format="changelog", op="op", sequence="seq")


def _spec(predicate: str | None) -> TemporalJoinSpec:
    versioned = VersionedTableSpec("currency", "update_time", "changelog", op="op", sequence="seq")
    return TemporalJoinSpec(versioned, "order_time", how="left", right_columns=["rate"], predicate=predicate)


def _inside(t, start, end) -> bool:
    return t is not None and start <= t < end


def test_backfill_predicate_on_a_column_outside_the_output_equals_the_dataframe_door(spark, tmp_path) -> None:
    """The run's versions carry only what the probe reads; a predicate may read any right column (here `seq`)."""
    left, right = random_inputs(5, n_left=120, n_right=60)
    orders, rates = spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL)
    predicate = "r.seq % 3 <> 0 AND l.amount < 80"
    start, end = T0, T0 + timedelta(hours=10)
    out = tmp_path / "out"

    metrics = run_slices(orders, rates, _spec(predicate), start, end, 4, str(out), str(tmp_path / "dead"), str(tmp_path / "state"))

    door = runtime.temporal_join(orders, rates, "order_time", how="left", right_columns=["rate"], predicate=predicate, **VERSIONED)
    expected = sorted(tuple(r) for r in door.select("order_id", "rate").collect())
    got = sorted(tuple(r) for r in spark.read.parquet(str(out)).select("order_id", "rate").collect())
    assert got == expected and any(rate is not None for _, rate in got) and any(rate is None for _, rate in got)
    rejected = sum(1 for _, k, t, _ in left if k is None or t is None) + sum(1 for _, k, _, t, _ in right if k is None or t is None)
    assert metrics == {
        "late": 0, "slices": 4, "watermark": end.isoformat(),
        "rows_in_left": sum(1 for row in left if _inside(row[2], start, end)),
        "rows_in_right": sum(1 for row in right if _inside(row[3], start, end)),
        "rows_out": len(got),
        "dead_letter": rejected,
    }
    assert metrics["dead_letter"] == spark.read.parquet(str(tmp_path / "dead")).count()


def test_backfill_metrics_of_empty_and_non_contiguous_slices(spark, tmp_path) -> None:
    """Slices without left rows count 0 (their observations still complete); `only` counts just its slices."""
    left, right = random_inputs(6, n_left=80, n_right=40)
    orders, rates = spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL)
    start, end = T0 - timedelta(hours=10), T0 + timedelta(hours=10)  # slices 0 and 1 precede every row
    paths = [str(tmp_path / name) for name in ("out", "dead", "state")]
    full = run_slices(orders, rates, _spec(None), start, end, 4, *paths)
    before = sorted(tuple(r) for r in spark.read.parquet(paths[0]).select("order_id", "rate").collect())

    again = run_slices(orders, rates, _spec(None), start, end, 4, *paths, only=[1, 3])

    third = T0 + timedelta(hours=5)
    assert full["rows_in_left"] == sum(1 for row in left if row[2] is not None)
    assert full["rows_out"] == sum(1 for row in left if row[1] is not None and row[2] is not None)
    assert again["slices"] == 2
    assert again["rows_in_left"] == sum(1 for row in left if _inside(row[2], third, end))
    assert again["rows_out"] == sum(1 for row in left if row[1] is not None and _inside(row[2], third, end))
    assert again["rows_in_right"] == sum(1 for row in right if _inside(row[3], third, end))
    assert sorted(tuple(r) for r in spark.read.parquet(paths[0]).select("order_id", "rate").collect()) == before
