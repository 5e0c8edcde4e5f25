"""Trino's TestRowPatternMatching queries, written as Trino writes them, through ``timeweave.sql``.

Trino's suite names its input ``(VALUES ...) t(id, value)`` *before* ``MATCH_RECOGNIZE`` and uses
uncorrelated subqueries in MEASURES and DEFINE; both must work through the SQL door (and subqueries
through the DataFrame door).  Expected rows are Trino's published ones.
"""

from __future__ import annotations

import pytest

import timeweave
from timeweave.core.pattern import PatternValidationError
from timeweave.spark.match_recognize import UDTF_NAME
from timeweave.spark.sql_door import rewrite

pytestmark = pytest.mark.spark

SIMPLE = """SELECT m.id, m.match, m.val, m.label
    FROM (VALUES (1, 90), (2, 80), (3, 70), (4, 80), (5, 90), (6, 50), (7, 40), (8, 60)) t(id, value)
    MATCH_RECOGNIZE (
        ORDER BY id
        MEASURES MATCH_NUMBER() AS match, RUNNING LAST(value) AS val, CLASSIFIER() AS label
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+ C+)
        DEFINE /* A defaults to True, matches any row */
               B AS B.value < PREV (B.value), C AS C.value > PREV (C.value)
    ) AS m"""

SUBQUERY = """SELECT m.val FROM (VALUES (1, 100), (2, 200), (3, 300), (4, 400)) t(id, value)
    MATCH_RECOGNIZE (ORDER BY id MEASURES {measure} AS val ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
                     PATTERN (A+) DEFINE A AS {define}) AS m"""


def rows(df) -> list[tuple]:
    return [tuple(r) for r in df.collect()]


def test_simple_query_with_an_aliased_input(spark) -> None:
    assert rows(timeweave.sql(spark, SIMPLE)) == [
        (1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C"), (5, 1, 90, "C"),
        (6, 2, 50, "A"), (7, 2, 40, "B"), (8, 2, 60, "C")]


def test_multiple_match_recognize_in_one_from(spark) -> None:
    query = """SELECT first.classy, second.classy, third.classy
        FROM (VALUES (1), (2), (3)) t(id) MATCH_RECOGNIZE (ORDER BY id MEASURES CLASSIFIER() AS classy
             ALL ROWS PER MATCH PATTERN (A) DEFINE A AS true) AS first,
             (VALUES (10), (20)) t(id) MATCH_RECOGNIZE (ORDER BY id MEASURES CLASSIFIER() AS classy
             ALL ROWS PER MATCH PATTERN (B) DEFINE B AS true) AS second,
             (VALUES 100) t(id) MATCH_RECOGNIZE (ORDER BY id MEASURES CLASSIFIER() AS classy
             ALL ROWS PER MATCH PATTERN (C) DEFINE C AS true) AS third"""
    assert rows(timeweave.sql(spark, query)) == [("A", "B", "C")] * 6


def test_partitioning_unordered_input_and_no_measures(spark) -> None:
    query = """SELECT m.id AS row_id, m.part AS partition
        FROM (VALUES (5, 'p2', 10), (2, 'p1', 90), (1, 'p1', 80), (4, 'p2', 20), (3, 'p1', 30)) t(id, part, value)
        MATCH_RECOGNIZE (PARTITION BY part ORDER BY id ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW
                         PATTERN (B+) DEFINE B AS B.value < PREV (B.value)) AS m"""
    assert sorted(rows(timeweave.sql(spark, query))) == [(3, "p1"), (5, "p2")]
    empty = """SELECT m.part FROM (SELECT * FROM (VALUES (1, 'p1', 90)) WHERE false) t(id, part, value)
        MATCH_RECOGNIZE (PARTITION BY part ORDER BY id MEASURES match_number() AS match ALL ROWS PER MATCH
                         PATTERN (B+) DEFINE B AS B.value < PREV (B.value)) AS m"""
    assert rows(timeweave.sql(spark, empty)) == []


def test_output_alias_with_column_names(spark) -> None:
    query = """SELECT m.* FROM (VALUES (1, 90), (2, 80)) t(id, value)
        MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n, LAST(value) AS v PATTERN (A B)
                         DEFINE B AS B.value < PREV(B.value)) AS m(how_many, last_value)"""
    df = timeweave.sql(spark, query)
    assert df.columns == ["how_many", "last_value"] and rows(df) == [(2, 80)]


@pytest.mark.parametrize(("measure", "define", "expected"), [
    ("(SELECT 'x')", "(SELECT true)", ["x"] * 4),
    ("FINAL LAST(A.value + (SELECT 1000))", "FIRST(A.value < 0 OR (SELECT true))", [1400] * 4),
    ("LAST(A.id < 0 OR 1 IN (SELECT 1))", "FIRST(A.id > 0 AND 1 IN (SELECT 1))", [True] * 4),
    ("FIRST(id % 2 IN (SELECT 0))", "FIRST(value * 0 IN (SELECT 0))", [False, True, False, True]),
    ("LAST(A.value < 0 OR EXISTS(SELECT 1))", "FIRST(A.value < 0 OR EXISTS(SELECT 1))", [True] * 4),
])
def test_trino_subqueries(spark, measure: str, define: str, expected: list) -> None:
    assert [r[0] for r in rows(timeweave.sql(spark, SUBQUERY.format(measure=measure, define=define)))] == expected


def test_subqueries_read_tables_and_keep_their_types(spark) -> None:
    spark.createDataFrame([(150, "low"), (350, "high"), (None, "none")], "limit INT, name STRING") \
        .createOrReplaceTempView("mr_limits")
    measure = "(SELECT max(limit) FROM mr_limits) - LAST(A.value)"
    define = "A.value < (SELECT max(limit) FROM mr_limits WHERE name = 'high') AND A.value NOT IN ({})"
    known = "SELECT limit FROM mr_limits WHERE limit IS NOT NULL"
    df = timeweave.sql(spark, SUBQUERY.format(measure=measure, define=define.format(known)))
    assert [r[0] for r in rows(df)] == [50, 50, 50]  # rows 1-3 qualify; each match ends at row 3 (300)
    # NOT IN over a list holding a NULL is never true (SQL's three-valued logic)
    with_null = timeweave.sql(spark, SUBQUERY.format(measure=measure, define=define.format("SELECT limit FROM mr_limits")))
    assert rows(with_null) == []
    nothing = timeweave.sql(spark, SUBQUERY.format(
        measure="(SELECT limit FROM mr_limits WHERE name = 'nobody')", define="true"))
    assert dict(nothing.dtypes)["val"] == "bigint" and [r[0] for r in rows(nothing)] == [None] * 4


def test_the_dataframe_door_runs_subqueries_too(spark) -> None:
    df = spark.createDataFrame([(i, v) for i, v in enumerate([100, 200, 300, 400], 1)], "id INT, value INT")
    out = timeweave.match_recognize(df, "ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+) "
                                      "DEFINE A AS A.value <= (SELECT 250)")
    assert rows(out) == [(2,)]


def test_a_cte_input_gets_the_values_inlined_for_the_sql_function(spark) -> None:
    query = """WITH t AS (SELECT * FROM VALUES (1, 100), (2, 200) AS v(id, value))
        SELECT m.n FROM t MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) + (SELECT 1000) AS n PATTERN (A+)
                                           DEFINE A AS A.value IN (SELECT 100 UNION ALL SELECT 200)) AS m"""
    rewritten = rewrite(spark, query)
    assert UDTF_NAME in rewritten and "SELECT 1000" not in rewritten  # the function gets the values, not the queries
    assert rows(timeweave.sql(spark, query)) == [(1002,)]


@pytest.mark.parametrize(("define", "message"), [
    ("A.value > (SELECT value)", "subqueries must be uncorrelated"),
    ("A.value > (SELECT 1, 2)", "must return one column, not 2"),
    ("A.value > (SELECT * FROM VALUES 1, 2)", "returned more than one row"),
    ("A.value IN (SELECT array(1))", "returns array<int>"),
])
def test_bad_subqueries_fail_before_matching_at_their_position(spark, define: str, message: str) -> None:
    query = SUBQUERY.format(measure="COUNT(*)", define=define)
    with pytest.raises(PatternValidationError, match=message) as info:
        timeweave.sql(spark, query)
    at = query.index(" IN (SELECT") + 1 if " IN " in define else query.index("(SELECT")  # the subquery's node
    assert info.value.position == at, str(info.value)


def test_the_sql_function_refuses_a_subquery_it_cannot_run(spark) -> None:
    timeweave.register(spark)
    spark.createDataFrame([(1, 100)], "id INT, value INT").createOrReplaceTempView("mr_udtf_sub")
    with pytest.raises(Exception, match="this door cannot run the subquery"):
        spark.sql(f"SELECT * FROM {UDTF_NAME}(TABLE(mr_udtf_sub), "
                  "'ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS A.value < (SELECT 5)')").collect()


def test_the_sliced_backfill_runs_subqueries_once_for_every_slice(spark, tmp_path) -> None:
    from datetime import datetime, timedelta

    from timeweave.spark.match_recognize_backfill import backfill_match_recognize

    t0 = datetime(2024, 1, 1)
    data = [(t0 + timedelta(minutes=i), v) for i, v in enumerate([5, 1, 2, 9, 3, 1, 8, 7, 2, 6, 1, 9])]
    df = spark.createDataFrame(data, "t TIMESTAMP, v INT")
    clause = ("ORDER BY t MEASURES FIRST(A.t) AS first_t, COUNT(*) + (SELECT 100) AS n PATTERN (A+) "
              "DEFINE A AS A.v < (SELECT 5)")
    expected = sorted(rows(timeweave.match_recognize(df, clause)))
    assert [r[1] for r in expected] == [102, 102, 101, 101]  # runs of v < 5: (1, 2), (3, 1), (2), (1)
    backfill_match_recognize(df, clause, t0, t0 + timedelta(minutes=12), 3, str(tmp_path / "out"))
    assert sorted(rows(spark.read.parquet(str(tmp_path / "out")).drop("slice"))) == expected


def test_the_streaming_job_runs_subqueries_when_it_starts(spark, tmp_path) -> None:
    import json

    from timeweave.jobs.streaming import run_streaming

    rows = [{"t": f"2024-01-01T00:{i:02d}:00", "v": v} for i, v in enumerate([5, 1, 2, 9, 3, 1, 8, 7, 2, 6, 1, 9])]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    clause = ("ORDER BY t MEASURES FIRST(A.t) AS first_t, COUNT(*) + (SELECT 100) AS n PATTERN (A+) "
              "DEFINE A AS A.v < (SELECT 5)")
    config = {
        "match_recognize": {"clause": clause},
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": "t TIMESTAMP, v INT",
                  "watermark_delay": "1 hour"},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
        "trigger": {"available_now": True},
    }
    run_streaming(config, spark, flush=True)
    source = spark.read.schema("t TIMESTAMP, v INT").json(str(tmp_path / "in"))
    expected = sorted(tuple(r) for r in timeweave.match_recognize(source, clause).collect())
    assert sorted(r[1] for r in expected) == [101, 101, 102, 102]  # runs of v < 5: (1, 2), (3, 1), (2), (1)
    assert sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "out")).collect()) == expected
