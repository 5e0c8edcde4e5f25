"""A clause with no PARTITION BY and no MEASURES (ONE ROW PER MATCH) outputs zero columns: one empty row per
match, as Trino does (``SELECT count(*) FROM t MATCH_RECOGNIZE (ORDER BY x PATTERN (A B) DEFINE ...)``
counts the matches).  Issue 20: the Arrow door raised ``IndexError`` and the core lost all but one row."""

from __future__ import annotations

import pytest

import timeweave
from timeweave.core.pattern import match_recognize, parse_clause
from timeweave.spark.match_recognize import UDTF_NAME, UDTF_NO_COLUMNS, sql_string

pytestmark = pytest.mark.spark

CLAUSE = "ORDER BY t PATTERN (A B) DEFINE A AS A.v > 0, B AS B.v < 0"
ROWS = [(t, 1 if t % 2 == 0 else -1) for t in range(56)]  # 28 matches of A B


def test_the_core_reference_has_one_empty_row_per_match() -> None:
    rows = list(match_recognize(parse_clause(CLAUSE), [{"t": t, "v": v} for t, v in ROWS]))
    assert rows == [{}] * 28


def test_dataframe_and_sql_doors_give_one_zero_column_row_per_match(spark) -> None:
    df = spark.createDataFrame(ROWS, "t long, v long")
    out = timeweave.match_recognize(df, CLAUSE)
    assert out.columns == []
    assert out.count() == 28
    assert len(out.collect()) == 28
    df.createOrReplaceTempView("mr_zero_columns")
    by_sql = timeweave.sql(spark, f"SELECT count(*) AS n FROM mr_zero_columns MATCH_RECOGNIZE ({CLAUSE}) AS m")
    assert by_sql.collect()[0]["n"] == 28


def test_udtf_door_keeps_one_row_per_match_in_a_placeholder_column(spark) -> None:
    # Spark cannot analyze a table function of zero columns (an internal assertion), so the UDTF's one
    # column is the documented always-NULL placeholder; the row count is the matches' count
    df = spark.createDataFrame(ROWS, "t long, v long")
    df.createOrReplaceTempView("mr_zero_columns")
    timeweave.register(spark)
    got = spark.sql(f"SELECT * FROM {UDTF_NAME}(TABLE(mr_zero_columns), {sql_string(CLAUSE)})")
    assert got.columns == [UDTF_NO_COLUMNS]
    assert [tuple(row) for row in got.collect()] == [(None,)] * 28
    # timeweave.sql over a CTE calls the UDTF in place
    by_cte = timeweave.sql(spark, f"WITH src AS (SELECT * FROM mr_zero_columns) "
                                f"SELECT count(*) AS n FROM src MATCH_RECOGNIZE ({CLAUSE}) AS m")
    assert by_cte.collect()[0]["n"] == 28
