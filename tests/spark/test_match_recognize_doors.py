"""MATCH_RECOGNIZE through the Spark doors: Flink conformance, random inputs (every door equal), bad input.

Doors: ``timeweave.match_recognize`` (DataFrame), ``timeweave.sql`` (``... MATCH_RECOGNIZE (...)`` in FROM)
and the UDTF ``timeweave_match_recognize(TABLE(t), '<clause>')``; the reference is the core's
``match_recognize`` over the same rows.  The documented differences from Flink (AVG is DOUBLE, the
standard's default skip and end-of-input greediness) are the core's, asserted in
tests/core/pattern/test_mr_conformance.py; here every door must give the core's rows, and Flink's
where the core does.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections import Counter
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import types as T

import timeweave
from tests.helpers.dbt_run import run_dbt_project
from tests.helpers.flink_cases import CASES, dataframe, load_case, normalize
from timeweave.core.errors import QuerySyntaxError
from timeweave.core.match_sql import find_match_recognize
from timeweave.core.pattern import MatchRuntimeError, PatternValidationError, match_recognize, parse_clause
from timeweave.spark.match_recognize import UDTF_NAME, plan, sql_string
from timeweave.spark.sql_door import rewrite

PROJECT = Path(__file__).resolve().parents[2] / "dbt_macros" / "integration_tests"

pytestmark = pytest.mark.spark

MR_CASES = sorted(p.name for p in CASES.glob("mr_*"))
FAILING = {"mr_skip_to_first_a", "mr_skip_to_last_a"}  # the standard's runtime error (see the core's tests)
FLINK_EXACT = {  # cases whose Flink output the standard reproduces (tests/core/pattern/test_mr_conformance.py)
    "mr_avg_price_double", "mr_greedy", "mr_out_of_order_late", "mr_output_mode_skip_past", "mr_price_decreasing",
    "mr_reluctant", "mr_skip_past_last_row", "mr_within", "mr_within_61min",
}


def clause_of(query: str) -> str:
    start = query.index("(", query.upper().index("MATCH_RECOGNIZE"))
    return query[start + 1 : query.rindex(")")]


def text_rows(rows: list[Any], columns: list[str]) -> Counter[tuple[str | None, ...]]:
    def render(value: Any) -> str | None:
        if isinstance(value, float):
            return f"{value:.9g}"
        return normalize(value)

    return Counter(tuple(render(r[c]) for c in columns) for r in rows)


def core_rows(case_name: str) -> list[dict[str, Any]]:
    case = load_case(case_name)
    table = case.tables["Ticker"]
    names = [n for n, _ in table.columns]
    return list(match_recognize(parse_clause(clause_of(case.query)), [dict(zip(names, r, strict=True)) for r in table.rows]))


def flink_rows(case_name: str, file: str) -> Counter[tuple[str | None, ...]]:
    with (CASES / case_name / file).open(newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        return Counter(tuple(row) for row in reader)


@pytest.fixture(scope="module")
def registered(spark):
    return timeweave.register(spark)


# -- conformance ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [c for c in MR_CASES if c not in FAILING])
def test_flink_cases_dataframe_and_sql_doors(spark, name) -> None:
    case = load_case(name)
    ticker = dataframe(spark, case.tables["Ticker"])
    ticker.createOrReplaceTempView("Ticker")
    by_dataframe = timeweave.match_recognize(ticker, clause_of(case.query))
    by_sql = timeweave.sql(spark, case.query)
    columns = by_dataframe.columns
    assert by_sql.columns == columns
    expected = text_rows(core_rows(name), columns)
    assert text_rows(by_dataframe.collect(), columns) == expected
    assert text_rows(by_sql.collect(), columns) == expected
    if name in FLINK_EXACT:
        assert expected == flink_rows(name, "expected_batch.csv")
    elif name == "mr_avg_price":
        assert expected == flink_rows(name, "doc_expected.csv")  # AVG as DOUBLE (14.5, 13.5), as documented


def test_output_mode_default_skip_is_the_documentations_row(spark) -> None:
    assert text_rows(core_rows("mr_output_mode"), ["symbol", "startPrice", "topPrice", "lastPrice"]) == flink_rows(
        "mr_output_mode", "doc_expected.csv")


@pytest.mark.parametrize("name", sorted(FAILING))
def test_flink_runtime_error_cases_fail_the_job(spark, name) -> None:
    case = load_case(name)
    ticker = dataframe(spark, case.tables["Ticker"])
    with pytest.raises(MatchRuntimeError):
        core_rows(name)
    with pytest.raises(Exception, match="cannot skip to the first row of the match"):
        timeweave.match_recognize(ticker, clause_of(case.query)).collect()


def test_avg_price_types_follow_the_standard(spark) -> None:
    case = load_case("mr_avg_price")
    out = timeweave.match_recognize(dataframe(spark, case.tables["Ticker"]), clause_of(case.query))
    assert [(f.name, f.dataType) for f in out.schema.fields] == [
        ("symbol", T.StringType()), ("start_tstamp", T.TimestampType()), ("end_tstamp", T.TimestampType()),
        ("avgPrice", T.DoubleType()),
    ]


# -- random inputs: every door equal to the core ------------------------------------------------------------

CLAUSES = [
    """PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS t0, LAST(A.t) AS t1, AVG(A.v) AS a, COUNT(*) AS n
       ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B) DEFINE A AS AVG(A.v) < 5""",
    """PARTITION BY k ORDER BY t MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c, RUNNING SUM(U.v) AS sv
       ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (D{2,} U+?) SUBSET DU = (D, U)
       DEFINE D AS D.v < PREV(D.v), U AS U.v > PREV(U.v)""",
    """PARTITION BY k ORDER BY t MEASURES LAST(X.s) AS ls, MAX(Y.w) AS mw, FIRST(X.v) + LAST(Y.v) AS fv
       ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH SKIP TO LAST Y PATTERN (X Y+ Z?)
       DEFINE X AS X.s = 'a', Y AS Y.v >= X.v, Z AS Z.w > 0.5""",
    """ORDER BY t DESC MEASURES COUNT(A.*) AS na, MIN(A.w) AS mn, LAST(A.k) AS lk
       PATTERN (A{1,3} B) WITHIN INTERVAL '4' SECOND DEFINE A AS A.v % 2 = 0, B AS B.v % 2 = 1""",
]


def random_rows(seed: int, n: int = 120) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    base = datetime(2024, 1, 1)
    order = rnd.sample(range(n * 3), n)  # unique ORDER BY values: one order in every door
    return [{"k": rnd.choice(["x", "y", "z", None]), "t": base + timedelta(seconds=o), "v": rnd.randint(0, 9),
             "s": rnd.choice(["a", "b", None]), "w": rnd.random()} for o in order]


SCHEMA = "k STRING, t TIMESTAMP, v BIGINT, s STRING, w DOUBLE"


@pytest.mark.parametrize("clause", CLAUSES, ids=["one-row-avg", "all-rows-subset", "unmatched", "no-partition"])
def test_random_inputs_every_door_equals_the_core(spark, registered, clause) -> None:
    assert UDTF_NAME in registered
    rows = random_rows(len(clause))
    df = spark.createDataFrame([tuple(r.values()) for r in rows], SCHEMA).repartition(3)
    df.createOrReplaceTempView("mr_random")
    by_dataframe = timeweave.match_recognize(df, clause)
    by_sql = timeweave.sql(spark, f"SELECT * FROM mr_random MATCH_RECOGNIZE ({clause}) AS mr")
    by_udtf = spark.sql(f"SELECT * FROM {UDTF_NAME}(TABLE(mr_random), {sql_string(clause)})")
    columns = by_dataframe.columns
    assert by_sql.columns == columns == by_udtf.columns
    expected = text_rows(list(match_recognize(parse_clause(clause), rows)), columns)
    assert sum(expected.values()) > 0
    assert text_rows(by_dataframe.collect(), columns) == expected
    assert text_rows(by_sql.collect(), columns) == expected
    assert text_rows(by_udtf.collect(), columns) == expected


def test_sql_door_over_a_cte_subquery_and_twice_in_one_query(spark) -> None:
    rows = random_rows(7, 60)
    spark.createDataFrame([tuple(r.values()) for r in rows], SCHEMA).createOrReplaceTempView("mr_twice")
    clause = "PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n PATTERN (A B+) DEFINE B AS B.v > A.v"
    expected = Counter(r["n"] for r in match_recognize(parse_clause(clause), [r for r in rows if r["v"] > 1]))
    query = f"""
        WITH big AS (SELECT * FROM mr_twice WHERE v > 1)
        SELECT m1.n FROM big MATCH_RECOGNIZE ({clause}) AS m1
        UNION ALL
        SELECT m2.n FROM (SELECT * FROM mr_twice WHERE v > 1) MATCH_RECOGNIZE ({clause}) m2"""
    rewritten = rewrite(spark, query)
    assert "MATCH_RECOGNIZE" not in rewritten and f"{UDTF_NAME}(TABLE(SELECT * FROM big)" in rewritten  # a CTE: the UDTF
    got = Counter(r["n"] for r in timeweave.sql(spark, query).collect())
    assert got == expected + expected


def test_nested_sql_of_match_recognize_runs_the_temporal_join_rewriter(spark) -> None:
    # MATCH_RECOGNIZE's input relation and its subqueries are SQL the door runs through the clause-rewriter
    # registry (timeweave.spark.sql_rewrite), not through the SQL door: a temporal join inside them is rewritten.
    from timeweave.core.spec import VersionedTableSpec

    t0 = datetime(2024, 1, 1)
    orders = spark.createDataFrame([(f"o{i}", "x", t0 + timedelta(minutes=i)) for i in range(8)],
                                   "id STRING, cur STRING, t TIMESTAMP")
    rates = spark.createDataFrame([("x", t0, 1.0), ("x", t0 + timedelta(minutes=3), 3.0),
                                   ("x", t0 + timedelta(minutes=6), 2.0)], "cur STRING, ut TIMESTAMP, rate DOUBLE")
    orders.createOrReplaceTempView("tw_nested_orders")
    timeweave.register_versioned(spark, "tw_nested_rates", rates, VersionedTableSpec("cur", "ut"))
    joined = ("(SELECT o.id, o.cur, o.t, r.rate FROM tw_nested_orders AS o "
              "JOIN tw_nested_rates FOR SYSTEM_TIME AS OF o.t AS r ON o.cur = r.cur)")
    clause = ("PARTITION BY cur ORDER BY t MEASURES FIRST(A.id) AS first_id, COUNT(*) AS n PATTERN (A+) "
              "DEFINE A AS A.rate >= (SELECT max(rate) FROM " + joined + " j)")
    got = timeweave.sql(spark, f"SELECT * FROM {joined} MATCH_RECOGNIZE ({clause}) AS m").collect()
    assert [(r.first_id, r.n) for r in got] == [("o3", 3)]  # the rows at rate 3.0, the highest joined rate
    by_dataframe = timeweave.match_recognize(timeweave.sql(spark, "SELECT * FROM " + joined + " j"), clause).collect()
    assert [(r.first_id, r.n) for r in by_dataframe] == [("o3", 3)]


def test_all_rows_schema_order_and_types(spark) -> None:
    schema = T.StructType([T.StructField(n, t) for n, t in [
        ("v", T.IntegerType()), ("K", T.StringType()), ("t", T.TimestampType()), ("d", T.DecimalType(10, 2))]])
    bound = plan("""PARTITION BY k ORDER BY t MEASURES CLASSIFIER() AS c, SUM(A.v) AS s, SUM(A.d) AS sd,
                    MIN(A.d) AS md, A.v * 2.5 AS x, MATCH_ROWTIME() AS mt ALL ROWS PER MATCH
                    PATTERN (A) DEFINE A AS true""", schema)
    assert [(f.name, f.dataType.simpleString()) for f in bound.schema.fields] == [
        ("K", "string"), ("t", "timestamp"), ("c", "string"), ("s", "bigint"), ("sd", "decimal(20,2)"),
        ("md", "decimal(10,2)"), ("x", "double"), ("mt", "timestamp"), ("v", "int"), ("d", "decimal(10,2)")]


def test_avg_and_sum_over_decimal_are_typed_and_rounded_as_sparks_own(spark, registered) -> None:
    # The core's typer follows Spark's AVG (decimal(p+4, s+4)) and SUM (decimal(p+10, s)); the values, rounded
    # half up to that scale, equal Spark SQL's own aggregates over the same rows in the DataFrame and SQL doors.
    rows = [("a", datetime(2024, 1, 1, 0, 0, i), Decimal(v)) for i, v in
            enumerate(["1.00", "2.00", "2.00", "0.01", "99999999.99", "-3.33"])]
    rows += [("b", datetime(2024, 1, 1, 0, 0, i), Decimal(v)) for i, v in enumerate(["0.01", "0.02", "0.02"])]
    df = spark.createDataFrame(rows, "k STRING, t TIMESTAMP, d DECIMAL(10,2)")
    df.createOrReplaceTempView("tw_decimals")
    clause = "PARTITION BY k ORDER BY t MEASURES AVG(A.d) AS a, SUM(A.d) AS s PATTERN (A+) DEFINE A AS true"
    expected = spark.sql("SELECT k, avg(d) AS a, sum(d) AS s FROM tw_decimals GROUP BY k")
    dataframe_door = timeweave.match_recognize(df, clause)
    udtf_door = spark.sql(f"SELECT * FROM timeweave_match_recognize(TABLE(tw_decimals), {sql_string(clause)})")
    for out in (dataframe_door, udtf_door):
        assert out.schema == expected.schema, out.schema.simpleString()
        assert sorted(out.collect()) == sorted(expected.collect())
    assert expected.schema["a"].dataType == T.DecimalType(14, 6)  # what Spark itself says
    assert sorted(dataframe_door.collect())[1]["a"] == Decimal("0.016667")  # 0.05 / 3, half up


# -- bad input: errors before any Spark job, positioned --------------------------------------------------------


def _ticker(spark):
    return spark.createDataFrame([("a", datetime(2024, 1, 1), 1)], "symbol STRING, rowtime TIMESTAMP, price BIGINT")


@pytest.mark.parametrize(("clause", "message", "at"), [
    ("PARTITION BY sym ORDER BY rowtime PATTERN (A) DEFINE A AS A.price > 0", "column sym not found", "sym"),
    ("ORDER BY ts PATTERN (A) DEFINE A AS A.price > 0", "column ts not found", "ts"),
    ("MEASURES LAST(A.cost) AS c PATTERN (A) DEFINE A AS A.price > 0", "column cost not found", "A.cost"),
    ("ORDER BY rowtime MEASURES A.price AS price ALL ROWS PER MATCH PATTERN (A) DEFINE A AS true",
     "measure price has the name of an input column", "A.price AS"),
    ("PATTERN (A B) DEFINE C AS C.price > 1", "DEFINE of variable C", "C AS"),
    ("PATTERN (A B DEFINE A AS true", None, None),
])
def test_bad_clauses_fail_at_the_call_with_a_position(spark, clause, message, at) -> None:
    df = _ticker(spark)
    with pytest.raises(QuerySyntaxError) as info:
        timeweave.match_recognize(df, clause)
    if message:
        assert message in str(info.value)
    if at:
        assert info.value.position == clause.index(at), str(info.value)


def test_sql_door_errors_point_into_the_query(spark) -> None:
    _ticker(spark).createOrReplaceTempView("mr_bad")
    query = "SELECT *\nFROM mr_bad MATCH_RECOGNIZE (\n  ORDER BY rowtime PATTERN (A) DEFINE A AS A.volume > 0) m"
    with pytest.raises(PatternValidationError) as info:
        timeweave.sql(spark, query)
    assert (info.value.line, info.value.col) == (3, query.split("\n")[2].index("A.volume") + 1)
    with pytest.raises(QuerySyntaxError, match=r"must follow a table or \(subquery\) in FROM \(line 1, col 28\)"):
        find_match_recognize("SELECT * FROM mr_bad WHERE x MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS true)")
    with pytest.raises(QuerySyntaxError, match=r"never closed \(line 1, col 38\)"):
        timeweave.sql(spark, "SELECT * FROM mr_bad MATCH_RECOGNIZE (PATTERN (A)")


def test_udtf_rejects_a_bad_clause_at_analysis(spark, registered) -> None:
    _ticker(spark).createOrReplaceTempView("mr_bad_udtf")
    with pytest.raises(Exception, match=re.escape("column volume not found")):
        spark.sql(f"SELECT * FROM {UDTF_NAME}(TABLE(mr_bad_udtf), 'PATTERN (A) DEFINE A AS A.volume > 0')").collect()


def test_register_is_idempotent(spark, registered) -> None:
    assert timeweave.register(spark) == registered


# -- dbt: timeweave.match_recognize under table / incremental / ephemeral, and a view refused ------------------

DBT_MODELS = ["mr_table", "mr_incremental", "mr_from_ephemeral"]


def dbt_clause() -> str:
    text = (PROJECT / "macros" / "mr_test_clause.sql").read_text()
    return text.split("{% macro mr_test_clause() -%}", 1)[1].split("{%- endmacro %}", 1)[0].strip()


def run_dbt(spark_home, tmp_path, *args: str) -> Any:
    return run_dbt_project(spark_home, tmp_path, *args)


@pytest.mark.slow
def test_dbt_models_equal_the_dataframe_door(spark, spark_home, tmp_path) -> None:
    rows = random_rows(21, 150)
    events = spark.createDataFrame([tuple(r.values()) for r in rows], SCHEMA)
    spark.sql("CREATE DATABASE IF NOT EXISTS timeweave_mr")
    events.write.mode("overwrite").saveAsTable("timeweave_mr.events")
    clause = dbt_clause()
    assert "'it''s'" in clause  # a quote inside the clause: the macro's string literal must escape it
    expected_df = timeweave.match_recognize(spark.table("timeweave_mr.events"), clause)
    columns = expected_df.columns
    expected = text_rows(expected_df.collect(), columns)
    assert expected == text_rows(list(match_recognize(parse_clause(clause), rows)), columns)
    # Exactly the models compared below (and the ephemeral one they read): the folder's mr_avg_price models
    # read the `ticker` seed, which only tests/dbt's build loads; in a worker of its own (pytest -n 2) or run
    # alone this test would fail on a table no step of it creates.
    schema, result = run_dbt(spark_home, tmp_path, "run", "--select", *DBT_MODELS, "mr_ephemeral",
                             "--vars", json.dumps({"timeweave_match_recognize": True}))
    assert result.success, result.exception or [(r.node.name, r.message) for r in result.result]
    for model in DBT_MODELS:
        table = spark.table(f"{schema}.{model}")
        assert table.columns == columns, model
        assert text_rows(table.collect(), columns) == expected, model


@pytest.mark.slow
def test_dbt_view_is_refused_with_timeweaves_message(spark, spark_home, tmp_path) -> None:
    _, result = run_dbt(spark_home, tmp_path, "run", "--select", "mr_fail_view",
                        "--vars", json.dumps({"timeweave_match_recognize_view": True}))
    assert not result.success
    message = " ".join(str(r.message) for r in result.result) if result.result else str(result.exception)
    assert "needs the session function(s) timeweave_match_recognize" in message
    assert "'table', 'incremental' or 'ephemeral'" in message


def test_null_event_time_rows_are_matched_by_no_door_and_listed_as_dead_letters(spark) -> None:
    """Issue 20: the batch doors matched a row with a NULL event time that streaming and backfill dead-letter."""
    t0 = datetime(2024, 1, 1)
    rows = [("x", t0 + timedelta(minutes=i), v) for i, v in enumerate([5, 6, 7])] + [("x", None, 8), ("x", None, 9)]
    df = spark.createDataFrame(rows, "k STRING, t TIMESTAMP, v BIGINT")
    clause = "PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n, LAST(A.v) AS last_v PATTERN (A+) DEFINE A AS A.v > 0"
    expected = [("x", 3, 7)]  # the NULL-time rows (sorted last by Trino) would make it (x, 5, 9)

    matches, rejected = timeweave.match_recognize_with_rejects(df, clause)
    assert [tuple(r) for r in matches.collect()] == expected
    assert [tuple(r) for r in timeweave.match_recognize(df, clause).collect()] == expected
    assert sorted((r.side, r.reason, json.loads(r.row)["v"]) for r in rejected.collect()) == [
        ("input", "NULL event time column t", 8), ("input", "NULL event time column t", 9)]
    timeweave.register(spark)
    df.createOrReplaceTempView("mr_null_times")
    query = f"SELECT * FROM mr_null_times MATCH_RECOGNIZE ({clause}) AS m"
    assert [tuple(r) for r in timeweave.sql(spark, query).collect()] == expected
    assert timeweave.dead_letters(spark, query).count() == 2
    udtf = spark.sql(f"SELECT * FROM {UDTF_NAME}(TABLE(mr_null_times), {sql_string(clause)})")
    assert [tuple(r) for r in udtf.collect()] == expected
    assert [tuple(r.values()) for r in match_recognize(parse_clause(clause), [
        {"k": k, "t": t, "v": v} for k, t, v in rows])] == expected
