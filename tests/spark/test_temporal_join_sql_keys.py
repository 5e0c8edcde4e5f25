"""The SQL door's ON clauses with key expressions and its column-name collisions, against Spark itself.

Each ON form (a nested field, a map element, CASE, a function call) must give the rows of the same query over
a left side whose key was computed beforehand as a plain column; a right column named like a left one must be
readable through ``o.v`` / ``r.v`` and listed twice by ``SELECT *``, as Spark lists a join's columns.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from pyspark.errors import AnalysisException

import timeweave
from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.spec import VersionedTableSpec

pytestmark = pytest.mark.spark

T0 = datetime(2024, 1, 1)
ORDERS = "id STRING, ts TIMESTAMP, cur STRING, x INT, c STRING, nested_row STRUCT<currency: STRING>, attrs MAP<STRING, STRING>"
#: (ON condition's left side, the same key as a plain expression over the flat columns)
FORMS = [
    ("o.nested_row.currency", "nested_row.currency"),
    ("o.attrs['currency']", "attrs['currency']"),
    ("CASE WHEN o.x > 0 THEN o.c ELSE 'EUR' END", "CASE WHEN x > 0 THEN c ELSE 'EUR' END"),
    ("upper(o.cur)", "upper(cur)"),
]


@pytest.fixture(scope="module")
def tables(spark):
    def at(minutes: int | None) -> datetime | None:
        return None if minutes is None else T0 + timedelta(minutes=minutes)

    rows = []
    for i, (minutes, cur, x, c) in enumerate([
        (5, "eur", 1, "USD"), (30, "usd", -1, None), (70, "Eur", 0, "GBP"), (95, "gbp", 3, "EUR"),
        (120, None, 2, None), (140, "usd", 1, "USD"), (None, "eur", 1, "EUR"), (10, "chf", 5, "CHF"),
    ]):
        key = None if cur is None else cur.upper()
        rows.append((f"o{i}", at(minutes), cur, x, c, (key,), None if key is None else {"currency": key}))
    orders = spark.createDataFrame(rows, ORDERS)
    orders.createOrReplaceTempView("orders_keys")
    rates = spark.createDataFrame(
        [("EUR", 1.1, at(0)), ("EUR", 1.2, at(60)), ("USD", 0.9, at(20)), ("USD", 0.8, at(130)), ("GBP", 1.4, at(90))],
        "currency STRING, rate DOUBLE, t TIMESTAMP",
    )
    timeweave.register_versioned(spark, "rates_keys", rates, VersionedTableSpec("currency", "t"))
    return orders, rates


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


@pytest.mark.parametrize("how", ["JOIN", "LEFT JOIN"])
@pytest.mark.parametrize(("on", "plain"), FORMS)
def test_each_on_form_gives_the_rows_of_a_precomputed_key(spark, tables, how, on, plain) -> None:
    rest = " AND r.rate > 0.85"
    query = (f"SELECT o.id, o.cur, r.currency, r.rate FROM orders_keys AS o {how} rates_keys FOR SYSTEM_TIME AS OF "
             f"o.ts AS r ON {on} = r.currency{rest}")
    precomputed = (f"SELECT o.id, o.cur, r.currency, r.rate FROM (SELECT *, {plain} AS k FROM orders_keys) AS o {how} "
                   f"rates_keys FOR SYSTEM_TIME AS OF o.ts AS r ON o.k = r.currency{rest}")
    got, expected = _rows(timeweave.sql(spark, query)), _rows(timeweave.sql(spark, precomputed))
    assert got == expected
    assert any(rate is not None for *_, rate in got)  # the forms find versions, not only NULLs
    if how == "LEFT JOIN":
        assert len(got) == 8


def test_key_expression_stays_hidden_from_star_and_dead_letters(spark, tables) -> None:
    query = ("SELECT * FROM orders_keys AS o JOIN rates_keys FOR SYSTEM_TIME AS OF o.ts AS r "
             "ON upper(o.cur) = r.currency")
    star = timeweave.sql(spark, query)
    assert star.columns == [*tables[0].columns, "currency", "rate", "t"]
    assert ("o1", 0.9) in {(r.id, r.rate) for r in star.collect()}
    rejected = timeweave.dead_letters(spark, query)
    left = sorted((r.reason, json.loads(r.row)["id"]) for r in rejected.where("side = 'left'").collect())
    assert left == [("NULL key column upper(o.cur)", "o4"), ("NULL time column ts", "o6")]
    assert all("upper(o.cur)" not in json.loads(r.row) for r in rejected.collect())


def test_key_expressions_refused_with_their_position(spark, tables) -> None:
    base = "SELECT o.id FROM orders_keys AS o JOIN rates_keys FOR SYSTEM_TIME AS OF o.ts AS r ON "
    for on, message, at in [
        ("concat(o.cur, rand()) = r.currency", "deterministic", "rand"),
        ("o.cur = lower(r.currency)", "must be a key column", "lower"),
        ("concat(o.cur, r.rate) = r.currency", "cannot read the versioned side", "r.rate"),
    ]:
        with pytest.raises(QuerySyntaxError, match=message) as err:
            timeweave.sql(spark, base + on)
        assert err.value.position == (base + on).index(at, len(base))
    with pytest.raises(SpecError, match=r"key expression.*upper\(o.nope\).*do not resolve"):
        timeweave.sql(spark, base + "upper(o.nope) = r.currency")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):  # the relation's own error, not the key's
        timeweave.sql(spark, base.replace("orders_keys", "no_such_orders") + "upper(o.cur) = r.currency")


@pytest.fixture(scope="module")
def colliding(spark):
    orders = spark.createDataFrame(
        [("o1", "EUR", T0 + timedelta(hours=2), 10), ("o2", "USD", T0 + timedelta(hours=3), 20)],
        "id STRING, cur STRING, ts TIMESTAMP, v INT",
    )
    orders.createOrReplaceTempView("orders_clash")
    rates = spark.createDataFrame(
        [("EUR", 2.0, T0, 7), ("USD", 3.0, T0, 8)], "cur STRING, rate DOUBLE, t TIMESTAMP, v INT",
    )
    timeweave.register_versioned(spark, "rates_clash", rates, VersionedTableSpec("cur", "t"))
    return "FROM orders_clash AS o JOIN rates_clash FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur"


def test_collision_not_selected_runs(spark, colliding) -> None:
    out = timeweave.sql(spark, f"SELECT o.id, r.rate {colliding}")
    assert _rows(out) == [("o1", 2.0), ("o2", 3.0)]


def test_collision_selected_by_qualified_names_reads_each_side(spark, colliding) -> None:
    out = timeweave.sql(spark, f"SELECT o.id, o.v AS left_v, r.v AS right_v {colliding} AND r.v > 7 "
                               "WHERE o.v > 0 ORDER BY o.v")
    assert [tuple(r) for r in out.collect()] == [("o2", 20, 8)]
    grouped = timeweave.sql(spark, f"SELECT r.v, sum(o.v) AS total {colliding} GROUP BY r.v ORDER BY r.v")
    assert [tuple(r) for r in grouped.collect()] == [(7, 10), (8, 20)]


def test_collision_under_star_lists_both_columns_as_spark_does(spark, colliding) -> None:
    star = timeweave.sql(spark, f"SELECT * {colliding}")
    assert star.columns == ["id", "cur", "ts", "v", "rate", "t", "v"]
    assert sorted((r[0], r[3], r[6]) for r in star.collect()) == [("o1", 10, 7), ("o2", 20, 8)]
    # Spark's own join lists the same columns for `*` (the same-named key once here: USING's rule)
    spark.table("rates_clash").createOrReplaceTempView("rates_clash_plain")
    plain = spark.sql("SELECT * FROM orders_clash JOIN rates_clash_plain USING (cur)")
    assert sorted(plain.columns) == sorted(star.columns)


def test_collision_unqualified_is_ambiguous(spark, colliding) -> None:
    with pytest.raises(AnalysisException, match="AMBIGUOUS_REFERENCE"):
        timeweave.sql(spark, f"SELECT v {colliding}").collect()


def test_collision_dead_letters_run(spark, colliding) -> None:
    assert timeweave.dead_letters(spark, f"SELECT o.id {colliding}").count() == 0


def test_versioned_key_and_time_named_like_left_columns_keep_the_left_meaning(spark, colliding) -> None:
    rates = spark.createDataFrame([("EUR", 2.0, T0, 7)], "cur STRING, rate DOUBLE, ts TIMESTAMP, v INT")
    timeweave.register_versioned(spark, "rates_clash_ts", rates, VersionedTableSpec("cur", "ts"))
    join = "FROM orders_clash AS o JOIN rates_clash_ts FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur"
    assert timeweave.sql(spark, f"SELECT * {join}").columns == ["id", "cur", "ts", "v", "rate", "v"]
    [row] = timeweave.sql(spark, f"SELECT ts, r.ts AS rate_time, o.v, r.v AS rate_v {join}").collect()
    assert tuple(row) == (T0 + timedelta(hours=2), T0, 10, 7)


def test_expression_on_a_non_key_column_is_a_predicate(spark, tables) -> None:
    on = "upper(o.cur) = r.currency AND CASE WHEN o.x = 1 THEN 1.1 ELSE 0.8 END = r.rate"
    query = f"SELECT o.id, r.rate FROM orders_keys AS o JOIN rates_keys FOR SYSTEM_TIME AS OF o.ts AS r ON {on}"
    plain = ("SELECT o.id, r.rate FROM orders_keys AS o JOIN rates_keys FOR SYSTEM_TIME AS OF o.ts AS r "
             "ON upper(o.cur) = r.currency WHERE CASE WHEN o.x = 1 THEN 1.1 ELSE 0.8 END = r.rate")
    assert _rows(timeweave.sql(spark, query)) == _rows(timeweave.sql(spark, plain)) == [("o0", 1.1)]


@pytest.fixture(scope="module")
def fees(spark, tables):
    fees = spark.createDataFrame(
        [("EUR", 0.5, T0), ("EUR", 2.0, T0 + timedelta(minutes=50)), ("USD", 0.1, T0), ("GBP", 0.2, T0)],
        "currency STRING, fee DOUBLE, t TIMESTAMP",
    )
    timeweave.register_versioned(spark, "fees_keys", fees, VersionedTableSpec("currency", "t"))
    return fees


@pytest.mark.parametrize("how", ["JOIN", "LEFT JOIN"])
def test_chained_joins_equal_the_first_join_as_a_subquery(spark, fees, how) -> None:
    # Flink's TemporalJoinITCase.testEventTimeMultiTemporalJoin shape: the second join reads both aliases before it
    chained = (f"SELECT o.id, r.rate, r1.fee FROM orders_keys AS o {how} rates_keys FOR SYSTEM_TIME AS OF o.ts AS r "
               f"ON upper(o.cur) = r.currency {how} fees_keys FOR SYSTEM_TIME AS OF o.ts AS r1 "
               "ON r1.currency = r.currency AND r1.fee < r.rate WHERE o.x >= 0")
    nested = (f"SELECT j.id, j.rate, r1.fee FROM (SELECT o.id, o.ts, o.x, r.currency AS r_currency, r.rate "
              f"FROM orders_keys AS o {how} rates_keys FOR SYSTEM_TIME AS OF o.ts AS r ON upper(o.cur) = r.currency) "
              f"AS j {how} fees_keys FOR SYSTEM_TIME AS OF j.ts AS r1 ON j.r_currency = r1.currency AND r1.fee < j.rate "
              "WHERE j.x >= 0")
    got = _rows(timeweave.sql(spark, chained))
    assert got == _rows(timeweave.sql(spark, nested))
    assert any(fee is not None for *_, fee in got) and any(fee is None for *_, fee in got) == (how == "LEFT JOIN")
    rejected = timeweave.dead_letters(spark, chained)
    assert {r.clause.split(" (")[0] for r in rejected.collect()} <= {"temporal join #1", "temporal join #2"}


def test_select_star_over_chained_joins_is_refused_with_its_position(spark, fees) -> None:
    query = ("SELECT * FROM orders_keys AS o JOIN rates_keys FOR SYSTEM_TIME AS OF o.ts AS r ON upper(o.cur) = "
             "r.currency JOIN fees_keys FOR SYSTEM_TIME AS OF o.ts AS r1 ON r1.currency = r.currency")
    with pytest.raises(QuerySyntaxError, match=r"SELECT \* over chained temporal joins \(o, r, r1\)") as err:
        timeweave.sql(spark, query)
    assert err.value.position == query.index("*")
    assert timeweave.sql(spark, query.replace("SELECT *", "SELECT o.*, r1.fee")).count() > 0
