"""The product's invariant: the same random input through every door gives the same rows.

DataFrame = SQL = dbt model = streaming job (after its watermark passed the end) = backfill in 1, 3 and
7 slices = the brute-force reference of tests/core/reference.py.  Inputs have ties (broken by a
sequence column), deletes and re-inserts (a changelog with -U/+U/-D and Debezium codes), NULL keys
and times on both sides (right: dead letters; left: output unmatched, as the join is LEFT), several
keys and one hot key with 30 % of the rows.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

import timeweave
from tests.helpers.dbt_run import run_dbt_project
from tests.spark.test_temporal_join_doors import T0, random_inputs, reference_rows, rejected_count
from timeweave.core.spec import VersionedTableSpec
from timeweave.jobs.backfill import run_backfill
from timeweave.jobs.streaming import run_streaming

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LEFT_DDL = "order_id STRING, currency STRING, order_time TIMESTAMP, amount DOUBLE"
RIGHT_DDL = "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP, seq BIGINT"


def job_config(tmp_path, name: str) -> dict:
    return {
        "left": {"path": str(tmp_path / "orders"), "format": "parquet", "schema": LEFT_DDL},
        "right": {"path": str(tmp_path / "rates"), "format": "parquet", "schema": RIGHT_DDL},
        "versioned": {"key": ["currency"], "time": "update_time", "format": "changelog", "op": "op", "sequence": "seq"},
        "join": {"left_time": "order_time", "how": "left", "right_columns": ["rate"]},
        "output": {"path": str(tmp_path / name)},
        "checkpoint": str(tmp_path / f"{name}_checkpoint"),
        "trigger": {"available_now": True},
    }


def pairs(rows) -> list[tuple]:
    return sorted((r["order_id"], r["rate"]) for r in rows)


def run_dbt_model(spark, spark_home, tmp_path) -> list[tuple]:
    schema, result = run_dbt_project(
        spark_home, tmp_path, "run", "--select", "random_join", "--vars", json.dumps({"timeweave_random": True})
    )
    assert result.success, result.exception or [(r.node.name, r.message) for r in result.result]
    return pairs(spark.table(f"{schema}.random_join").collect())


@pytest.mark.parametrize("seed", [11, 12])
def test_every_door_gives_the_same_rows(spark, spark_home, tmp_path, seed) -> None:
    left, right = random_inputs(seed)
    expected = reference_rows(left, right)
    assert any(k is None for _, k, _, _ in left) and any(t is None for _, _, t, _ in left)  # both kinds of NULL rows
    assert len(expected) == len(left)
    orders = spark.createDataFrame(left, LEFT_DDL)
    rates = spark.createDataFrame(right, RIGHT_DDL)
    orders.repartition(2).write.parquet(str(tmp_path / "orders"))
    rates.repartition(2).write.parquet(str(tmp_path / "rates"))
    results: dict[str, list[tuple]] = {}

    kwargs = dict(key="currency", time="update_time", format="changelog", op="op", sequence="seq", how="left",
                  right_columns=["rate"])
    results["dataframe"] = pairs(timeweave.temporal_join(orders, rates, "order_time", **kwargs).collect())

    orders.createOrReplaceTempView("orders_every")
    timeweave.register_versioned(spark, "rates_every", rates, VersionedTableSpec(
        "currency", "update_time", format="changelog", op="op", sequence="seq"))
    results["sql"] = pairs(timeweave.sql(spark, "SELECT o.order_id, r.rate FROM orders_every o LEFT JOIN rates_every "
                                              "FOR SYSTEM_TIME AS OF o.order_time AS r ON o.currency = r.currency").collect())

    spark.sql("CREATE DATABASE IF NOT EXISTS timeweave_random")
    orders.write.mode("overwrite").saveAsTable("timeweave_random.orders")
    rates.write.mode("overwrite").saveAsTable("timeweave_random.rates")
    results["dbt"] = run_dbt_model(spark, spark_home, tmp_path)

    metrics = run_streaming(job_config(tmp_path, "stream"), spark, flush=True)
    results["streaming"] = pairs(spark.read.parquet(str(tmp_path / "stream")).collect())
    nulls = rejected_count(left, right)
    assert metrics["dead_letter"] == nulls and metrics["late"] == 0
    assert metrics["rows_in_left"] == metrics["rows_out"] == len(left)

    # one probe job for all slices (the default), and one job per slice against the run's written versions
    for slices, per_job in ((1, None), (3, None), (7, None), (3, 1), (7, 1)):
        name = f"backfill{slices}" + ("" if per_job is None else f"x{per_job}")
        bf = run_backfill(job_config(tmp_path, name), T0, T0 + timedelta(hours=10), slices, spark=spark, slices_per_job=per_job)
        results[name] = pairs(spark.read.parquet(str(tmp_path / name)).collect())
        assert bf["dead_letter"] == nulls and bf["rows_in_left"] == bf["rows_out"] == len(left)

    for door, rows in results.items():
        assert rows == expected, f"{door} differs from the reference"
