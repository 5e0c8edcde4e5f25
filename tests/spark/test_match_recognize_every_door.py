"""The product's invariant for MATCH_RECOGNIZE: the same random input through every door gives the same rows.

core ``match_recognize`` (pure Python) = DataFrame door = ``timeweave.sql`` with a MATCH_RECOGNIZE query =
the UDTF ``timeweave_match_recognize`` = a dbt model using the ``timeweave.match_recognize`` macro =
the streaming job flushed at end of input = the backfill job in 1, 3 and 7 slices (one job config for
both jobs).  Inputs (tests/helpers/mr_random.py) have several partitions, a NULL partition key, NULLs in
the columns DEFINE reads, rows with a NULL event time (no door matches them: the doors with a dead letter
list them there), and (second case) tied event times ordered by a secondary ORDER BY column.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import timeweave
from tests.helpers.dbt_run import run_dbt_project
from tests.helpers.mr_random import CLAUSES, SCHEMA, SPAN, T0, as_tuples, canonical, random_events
from timeweave.core.pattern import match_recognize, parse_clause
from timeweave.jobs.backfill import run_backfill
from timeweave.jobs.streaming import run_streaming
from timeweave.spark.match_recognize import UDTF_NAME, sql_string

pytestmark = [pytest.mark.spark, pytest.mark.slow]

NULL_TIMES = 3  # rows with a NULL event time in each random input
CASES = [("unmatched-skip-to-last", 31, False), ("within-alternation-skip-first", 32, True),
         ("beyond-core-aggregates", 33, False)]


def dbt_rows(spark, spark_home, tmp_path, clause: str) -> list[Any]:
    schema, result = run_dbt_project(
        spark_home, tmp_path, "run", "--select", "random_match_recognize",
        "--vars", json.dumps({"timeweave_random_mr": {"clause": clause}}),
    )
    assert result.success, result.exception or [(r.node.name, r.message) for r in result.result]
    return spark.table(f"{schema}.random_match_recognize").collect()


@pytest.mark.parametrize(("name", "seed", "ties"), CASES, ids=[c[0] for c in CASES])
def test_every_door_gives_the_same_rows(spark, spark_home, tmp_path, name, seed, ties) -> None:
    clause = CLAUSES[name]
    rows = random_events(seed, n=100, ties=ties, null_times=NULL_TIMES)
    untimed = sorted(r["seq"] for r in rows if r["t"] is None)
    assert len(untimed) == NULL_TIMES
    df = spark.createDataFrame(as_tuples(rows), SCHEMA)
    by_dataframe, rejected = timeweave.match_recognize_with_rejects(df, clause)
    columns = by_dataframe.columns
    expected = canonical(match_recognize(parse_clause(clause), rows), columns)
    assert sum(expected.values()) > 0
    results: dict[str, Any] = {"dataframe": by_dataframe.collect()}
    assert sorted(json.loads(r.row)["seq"] for r in rejected.collect()) == untimed
    assert {(r.side, r.reason) for r in rejected.collect()} == {("input", "NULL event time column t")}

    timeweave.register(spark)
    df.createOrReplaceTempView("mr_every_door")
    query = f"SELECT * FROM mr_every_door MATCH_RECOGNIZE ({clause}) AS mr"
    results["sql"] = timeweave.sql(spark, query).collect()
    sql_rejected = timeweave.dead_letters(spark, query).collect()
    assert sorted(json.loads(r.row)["seq"] for r in sql_rejected) == untimed
    assert {(r.side, r.reason, r.clause) for r in sql_rejected} == {("input", "NULL event time column t", "MATCH_RECOGNIZE #1")}
    results["udtf"] = spark.sql(f"SELECT * FROM {UDTF_NAME}(TABLE(mr_every_door), {sql_string(clause)})").collect()

    spark.sql("CREATE DATABASE IF NOT EXISTS timeweave_random_mr")
    df.write.mode("overwrite").saveAsTable("timeweave_random_mr.events")
    results["dbt"] = dbt_rows(spark, spark_home, tmp_path, clause)

    df.write.parquet(str(tmp_path / "input"))
    config = {
        "match_recognize": {"clause": clause},
        "input": {"path": str(tmp_path / "input"), "format": "parquet", "schema": SCHEMA},
        "output": {"path": str(tmp_path / "stream")},
        "checkpoint": str(tmp_path / "checkpoint"),
        "trigger": {"available_now": True},
    }
    metrics = run_streaming(config, spark, flush=True)
    assert metrics["late"] == 0 and metrics["dead_letter"] == NULL_TIMES
    results["streaming"] = spark.read.parquet(str(tmp_path / "stream")).collect()

    for slices in (1, 3, 7):
        out = str(tmp_path / f"backfill{slices}")
        job = {**config, "output": {"path": out}}
        metrics = run_backfill(job, T0.isoformat(), (T0 + SPAN).isoformat(), slices, spark=spark)
        assert metrics["rows_in"] == len(rows) - NULL_TIMES and metrics["dead_letter"] == NULL_TIMES
        results[f"backfill{slices}"] = spark.read.parquet(out).collect()

    for door, got in results.items():
        assert canonical(got, columns) == expected, f"{door} differs from the core"
