"""Temporal join through the batch doors: Flink conformance, random inputs (every door equal), bad input."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

import timeweave
from tests.core.reference import LeftRowIn, RightRow, brute_force
from tests.helpers.flink_cases import dataframe, load_case, rows_as_text
from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.spec import VersionedTableSpec
from timeweave.jobs.backfill import run_backfill

pytestmark = pytest.mark.spark

JOIN_CASES = ["tj_changelog_inner", "tj_changelog_left", "tj_pk_inner", "tj_pk_left", "tj_view_inner", "tj_view_left"]


def _case_frames(spark, name):
    case = load_case(name)
    rates_table = next(t for n, t in case.tables.items() if n != "orders")
    versioned = VersionedTableSpec(
        "currency", "update_time", format="changelog" if rates_table.changelog else "append",
        op="op" if rates_table.changelog else None,
    )
    return case, dataframe(spark, case.tables["orders"]), dataframe(spark, rates_table), rates_table, versioned


@pytest.mark.parametrize("name", JOIN_CASES)
def test_flink_cases_dataframe_door(spark, name) -> None:
    case, orders, rates, _, v = _case_frames(spark, name)
    out = timeweave.temporal_join(
        orders, rates, "order_time", key=v.key, time=v.time, format=v.format.value, op=v.op,
        how="left" if name.endswith("left") else "inner", right_columns=["conversion_rate"],
        validity=timeweave.core.ValidityColumns(valid_from="rate_time", valid_to=None),
    )
    header, expected = case.expected()
    assert rows_as_text(out, header) == sorted(expected)


@pytest.mark.parametrize("name", JOIN_CASES)
def test_flink_cases_sql_door_runs_flinks_own_query(spark, name) -> None:
    case, orders, rates, _, v = _case_frames(spark, name)
    orders.createOrReplaceTempView("orders")
    timeweave.register_versioned(spark, "currency_rates", rates, v)
    out = timeweave.sql(spark, case.query)
    header, expected = case.expected()
    assert rows_as_text(out, header) == sorted(expected)


@pytest.mark.parametrize("name", ["tj_changelog_left", "tj_pk_inner"])
@pytest.mark.parametrize("slices", [1, 3, 7])
def test_flink_cases_backfill_door(spark, tmp_path, name, slices) -> None:
    case, orders, rates, rates_table, v = _case_frames(spark, name)
    orders.write.parquet(str(tmp_path / "orders"))
    rates.write.parquet(str(tmp_path / "rates"))
    config = {
        "left": {"path": str(tmp_path / "orders"), "format": "parquet", "schema": case.tables["orders"].ddl},
        "right": {"path": str(tmp_path / "rates"), "format": "parquet", "schema": rates_table.ddl},
        "versioned": {"key": list(v.key), "time": v.time, "format": v.format.value, "op": v.op},
        "join": {"left_time": "order_time", "how": "left" if name.endswith("left") else "inner",
                 "right_columns": ["conversion_rate"], "valid_from": "rate_time"},
        "output": {"path": str(tmp_path / "out")},
    }
    metrics = run_backfill(config, "2020-01-01T08:00", "2020-01-01T14:00", slices, spark=spark)
    assert metrics["slices"] == slices and metrics["rows_in_left"] == len(case.tables["orders"].rows)
    header, expected = case.expected()
    assert rows_as_text(spark.read.parquet(str(tmp_path / "out")), header) == sorted(expected)


def test_versioned_view_final_state_equals_flinks(spark) -> None:
    case = load_case("tj_versioned_view_changelog")
    history = dataframe(spark, case.tables["currency_rates_history"])
    view = timeweave.versioned_table(history, key="currency", time="update_time")
    latest = view.where("valid_to IS NULL")
    header, expected = case.expected("batch")
    assert rows_as_text(latest, header) == sorted(expected)


# -- random inputs: every batch door and the brute-force reference agree ------------------------------
T0 = datetime(2024, 1, 1)


def random_inputs(seed: int, n_left: int = 300, n_right: int = 120):
    """Orders and a rates changelog with ties, deletes, re-inserts, NULL keys/times and one hot key (30 %)."""
    rng = random.Random(seed)
    keys = ["k0", "k1", "k2", "k3", "k4", None]

    def key() -> str | None:
        return "hot" if rng.random() < 0.3 else rng.choice(keys)

    def when() -> datetime | None:
        return None if rng.random() < 0.03 else T0 + timedelta(minutes=rng.randrange(0, 600, 5))

    right = []
    for i in range(n_right):
        op = rng.choice(["+I", "+U", "-U", "+U", "-D", "c", "u", "d"])
        right.append((op, key(), float(i), when(), i))
    left = [(f"o{i:04d}", key(), when(), float(rng.randrange(100))) for i in range(n_left)]
    return left, right


def reference_rows(left, right, how: str = "left") -> list[tuple]:
    """(order_id, rate) of the join.  A LEFT join keeps every left row: one with a NULL key or time never
    matches (rate None); an INNER join drops it (and every other row without a version)."""

    def micros(t: datetime | None) -> int | None:
        return None if t is None else int((t - T0).total_seconds())

    deleted = {"-U", "-D", "d"}
    refs = brute_force(
        [LeftRowIn(k, micros(t), i) for i, (_, k, t, _) in enumerate(left)],
        [RightRow(k, micros(t), op in deleted, i) for op, k, _, t, i in right],
    )
    if how == "left":
        refs |= {i: None for i, (_, k, t, _) in enumerate(left) if k is None or t is None}
        assert len(refs) == len(left)
    else:
        refs = {i: v for i, v in refs.items() if v is not None}
    return sorted((left[i][0], None if v is None else float(v)) for i, v in refs.items())


def rejected_count(left, right, how: str = "left") -> int:
    """Dead letters of a join of random_inputs: right rows with a NULL key or time, and (INNER only) left ones."""
    right_nulls = sum(1 for _, k, _, t, _ in right if k is None or t is None)
    left_nulls = sum(1 for _, k, t, _ in left if k is None or t is None)
    return right_nulls + (left_nulls if how == "inner" else 0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_inputs_every_batch_door_equals_the_reference(spark, tmp_path, seed) -> None:
    left, right = random_inputs(seed)
    left_ddl = "order_id STRING, currency STRING, order_time TIMESTAMP, amount DOUBLE"
    right_ddl = "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP, seq BIGINT"
    orders = spark.createDataFrame(left, left_ddl)
    rates = spark.createDataFrame(right, right_ddl)
    kwargs = dict(key="currency", time="update_time", format="changelog", op="op", sequence="seq", how="left")
    expected = reference_rows(left, right)

    frame = timeweave.temporal_join(orders, rates, "order_time", **kwargs).select("order_id", "rate")
    assert sorted(tuple(r) for r in frame.collect()) == expected

    orders.createOrReplaceTempView("orders_rand")
    timeweave.register_versioned(spark, "rates_rand", rates, VersionedTableSpec(
        "currency", "update_time", format="changelog", op="op", sequence="seq"))
    via_sql = timeweave.sql(spark, "SELECT o.order_id, r.rate FROM orders_rand o LEFT JOIN rates_rand "
                                 "FOR SYSTEM_TIME AS OF o.order_time AS r ON o.currency = r.currency")
    assert sorted(tuple(r) for r in via_sql.collect()) == expected

    orders.write.parquet(str(tmp_path / "orders"))
    rates.write.parquet(str(tmp_path / "rates"))
    for slices in (1, 3, 7):
        config = {
            "left": {"path": str(tmp_path / "orders"), "format": "parquet", "schema": left_ddl},
            "right": {"path": str(tmp_path / "rates"), "format": "parquet", "schema": right_ddl},
            "versioned": {"key": ["currency"], "time": "update_time", "format": "changelog", "op": "op", "sequence": "seq"},
            "join": {"left_time": "order_time", "how": "left"},
            "output": {"path": str(tmp_path / f"out{slices}")},
        }
        metrics = run_backfill(config, T0, T0 + timedelta(hours=10), slices, spark=spark)
        got = spark.read.parquet(str(tmp_path / f"out{slices}")).select("order_id", "rate").collect()
        assert sorted(tuple(r) for r in got) == expected, f"backfill in {slices} slices"
        assert metrics["dead_letter"] == rejected_count(left, right)
        assert metrics["rows_in_left"] == metrics["rows_out"] == len(left)  # the random times all lie in the range


def test_backfill_rerun_of_one_slice_replaces_only_that_slice(spark, tmp_path) -> None:
    """Idempotence: re-running slice 1 from the carried state rebuilds exactly its rows; other slices untouched."""
    import shutil

    left, right = random_inputs(4)
    left_ddl = "order_id STRING, currency STRING, order_time TIMESTAMP, amount DOUBLE"
    right_ddl = "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP, seq BIGINT"
    spark.createDataFrame(left, left_ddl).write.parquet(str(tmp_path / "orders"))
    spark.createDataFrame(right, right_ddl).write.parquet(str(tmp_path / "rates"))
    config = {
        "left": {"path": str(tmp_path / "orders"), "format": "parquet", "schema": left_ddl},
        "right": {"path": str(tmp_path / "rates"), "format": "parquet", "schema": right_ddl},
        "versioned": {"key": ["currency"], "time": "update_time", "format": "changelog", "op": "op", "sequence": "seq"},
        "join": {"left_time": "order_time", "how": "left"},
        "output": {"path": str(tmp_path / "out")},
    }
    end = T0 + timedelta(hours=10)
    run_backfill(config, T0, end, 3, spark=spark)
    out = tmp_path / "out"
    # A LEFT join's NULL-time left rows belong to no slice: `slice=none`, rewritten by every run.
    slice_dirs = sorted(p for p in out.glob("slice=*") if p.name != "slice=none")
    assert len(slice_dirs) == 3
    assert (out / "slice=none").exists() == any(row[2] is None for row in left)
    untouched = {p: p.stat().st_mtime_ns for d in (slice_dirs[0], slice_dirs[2]) for p in d.iterdir()}
    shutil.rmtree(slice_dirs[1])

    metrics = run_backfill(config, T0, end, 3, spark=spark, only=[1])

    assert metrics["slices"] == 1
    got = spark.read.parquet(str(out)).select("order_id", "rate").collect()
    assert sorted(tuple(r) for r in got) == reference_rows(left, right)
    assert {p: p.stat().st_mtime_ns for p in untouched} == untouched
    fresh = dict(config, output={"path": str(tmp_path / "fresh")})
    with pytest.raises(SpecError, match=r"only.*run slice 1 first"):
        run_backfill(fresh, T0, end, 3, spark=spark, only=[2])


def test_sql_door_select_star_lists_columns_not_alias_structs(spark) -> None:
    orders = spark.createDataFrame([("o1", "EUR", T0 + timedelta(hours=2))], "id STRING, cur STRING, ts TIMESTAMP")
    rates = spark.createDataFrame([("EUR", 2.0, T0)], "cur STRING, rate DOUBLE, t TIMESTAMP")
    orders.createOrReplaceTempView("orders_star")
    timeweave.register_versioned(spark, "rates_star", rates, VersionedTableSpec("cur", "t"))
    join = "FROM orders_star AS o JOIN rates_star FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur"
    star = timeweave.sql(spark, f"SELECT * {join}")
    assert star.columns == ["id", "cur", "ts", "rate", "t"]
    assert [tuple(r) for r in star.collect()] == [("o1", "EUR", T0 + timedelta(hours=2), 2.0, T0)]
    assert timeweave.sql(spark, f"SELECT r.*, o.id {join}").columns == ["cur", "rate", "t", "id"]


def test_sql_door_placeholders_as_in_spark_sql(spark) -> None:
    orders = spark.createDataFrame([("o1", "EUR", T0 + timedelta(hours=2))], "id STRING, cur STRING, ts TIMESTAMP")
    rates = spark.createDataFrame([("EUR", 2.0, T0)], "cur STRING, rate DOUBLE, t TIMESTAMP")
    timeweave.register_versioned(spark, "rates_args", rates, VersionedTableSpec("cur", "t"))
    out = timeweave.sql(
        spark, "SELECT o.id, r.rate, {tag} AS tag FROM {orders} AS o JOIN rates_args FOR SYSTEM_TIME AS OF o.ts AS r "
        "ON o.cur = r.cur WHERE o.id LIKE {pattern}", orders=orders, tag=7, pattern="o%",
    )
    assert [tuple(r) for r in out.collect()] == [("o1", 2.0, 7)]
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("__tw_arg_")]  # views dropped
    ticks = spark.createDataFrame([(T0 + timedelta(minutes=i), p) for i, p in enumerate([5, 4, 3, 9])], "t TIMESTAMP, p INT")
    timeweave.register(spark)
    matched = timeweave.sql(spark, "SELECT * FROM {ticks} MATCH_RECOGNIZE (ORDER BY t MEASURES LAST(D.p) AS low "
                                 "PATTERN (S D{{2,}}) DEFINE D AS D.p < PREV(D.p))", ticks=ticks)
    assert [tuple(r) for r in matched.collect()] == [(3,)]


def test_predicate_applies_to_the_found_version_only(spark) -> None:
    orders = spark.createDataFrame([("o1", "EUR", T0 + timedelta(hours=2))], "id STRING, cur STRING, ts TIMESTAMP")
    rates = spark.createDataFrame(
        [("EUR", 2.0, T0), ("EUR", 0.5, T0 + timedelta(hours=1))], "cur STRING, rate DOUBLE, t TIMESTAMP"
    )
    kwargs = dict(key="cur", time="t", predicate="r.rate > 1")
    # The version in force (0.5) fails the predicate: no fallback to the older 2.0.
    assert timeweave.temporal_join(orders, rates, "ts", how="inner", **kwargs).count() == 0
    [row] = timeweave.temporal_join(orders, rates, "ts", how="left", **kwargs).collect()
    assert row.rate is None


def test_ties_at_one_time_last_in_input_order_wins(spark) -> None:
    orders = spark.createDataFrame([("o1", "EUR", T0)], "id STRING, cur STRING, ts TIMESTAMP")
    rates = spark.createDataFrame([("EUR", 1.0, T0), ("EUR", 2.0, T0)], "cur STRING, rate DOUBLE, t TIMESTAMP").coalesce(1)
    [row] = timeweave.temporal_join(orders, rates, "ts", key="cur", time="t").collect()
    assert row.rate == 2.0


def test_upsert_format_with_delete_flag(spark) -> None:
    orders = spark.createDataFrame(
        [("o1", "EUR", T0 + timedelta(minutes=30)), ("o2", "EUR", T0 + timedelta(minutes=90))],
        "id STRING, cur STRING, ts TIMESTAMP",
    )
    rates = spark.createDataFrame(
        [("EUR", 1.0, T0, False), ("EUR", None, T0 + timedelta(hours=1), True)],
        "cur STRING, rate DOUBLE, t TIMESTAMP, gone BOOLEAN",
    )
    out = timeweave.temporal_join(orders, rates, "ts", key="cur", time="t", format="upsert", delete_flag="gone", how="left")
    assert sorted((r.id, r.rate) for r in out.collect()) == [("o1", 1.0), ("o2", None)]


def test_bad_input_errors_name_the_argument(spark) -> None:
    orders = spark.createDataFrame([("o1", "EUR", T0)], "id STRING, cur STRING, ts TIMESTAMP")
    rates = spark.createDataFrame([("EUR", 1.0, "2024-01-01")], "cur STRING, rate DOUBLE, t STRING")
    with pytest.raises(SpecError, match="'t' must be a timestamp") as err:
        timeweave.temporal_join(orders, rates, "ts", key="cur", time="t")
    assert err.value.argument == "time"
    with pytest.raises(SpecError, match="column 'currency' not found"):
        timeweave.temporal_join(orders, rates, "ts", key="currency", time="t")
    with pytest.raises(SpecError, match="is not a versioned table"):
        orders.createOrReplaceTempView("o_bad")
        timeweave.sql(spark, "SELECT * FROM o_bad o JOIN nothing_here FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur")
    with pytest.raises(QuerySyntaxError, match="FULL temporal joins are not supported") as err:
        timeweave.sql(spark, "SELECT * FROM o_bad o FULL JOIN r FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur")
    assert err.value.line == 1 and err.value.col > 1


@pytest.mark.parametrize("how", ["inner", "left"])
def test_dead_letter_rows_carry_the_reason(spark, how) -> None:
    orders = spark.createDataFrame(
        [("o1", None, T0), ("o2", "EUR", None), ("o3", "EUR", T0)], "id STRING, cur STRING, ts TIMESTAMP"
    )
    rates = spark.createDataFrame(
        [("+I", "EUR", 1.0, T0), ("??", "EUR", 2.0, T0)], "op STRING, cur STRING, rate DOUBLE, t TIMESTAMP"
    )
    joined, rejects = timeweave.temporal_join_with_rejects(
        orders, rates, "ts", key="cur", time="t", format="changelog", op="op", how=how
    )
    reasons = sorted((r.side, r.reason) for r in rejects.collect())
    if how == "inner":
        assert [(r.id, r.rate) for r in joined.collect()] == [("o3", 1.0)]
        assert reasons == [("left", "NULL key column cur"), ("left", "NULL time column ts"), ("right", "unknown op ?? in column op")]
    else:  # a LEFT join outputs every left row; the ones that can never match are no dead letters
        assert sorted((r.id, r.rate) for r in joined.collect()) == [("o1", None), ("o2", None), ("o3", 1.0)]
        assert reasons == [("right", "unknown op ?? in column op")]


# -- issue 20: a LEFT join keeps the left rows with a NULL key or NULL time, in every door ------------------
NULL_LEFT_DDL = "id STRING, cur STRING, ts TIMESTAMP, amount DOUBLE"
NULL_RIGHT_DDL = "cur STRING, rate DOUBLE, t TIMESTAMP"


def _twenty_two_orders() -> tuple[list[tuple], list[tuple]]:
    """The issue's probe: 20 ordinary orders, one with a NULL key, one with a NULL time (22 in)."""
    orders = [(f"o{i:02d}", ["EUR", "USD", "JPY"][i % 3], T0 + timedelta(minutes=10 * i), float(i)) for i in range(20)]
    orders += [("o_null_key", None, T0 + timedelta(minutes=35), 20.0), ("o_null_time", "EUR", None, 21.0)]
    rates = [("EUR", 1.1, T0), ("USD", 0.9, T0 + timedelta(minutes=45)), ("EUR", 1.2, T0 + timedelta(hours=2)),
             (None, 5.0, T0), ("JPY", 7.0, None)]  # two right rows that are dead letters in any join
    return orders, rates


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.select("id", "cur", "ts", "amount", "rate").collect()), key=repr)


def test_left_join_keeps_null_key_and_null_time_rows_in_every_door(spark, tmp_path) -> None:
    """22 orders in, 22 rows out of every door (a plain Spark LEFT JOIN, Flink and DuckDB keep them too)."""
    from timeweave.jobs.streaming import run_streaming

    orders_in, rates_in = _twenty_two_orders()
    orders = spark.createDataFrame(orders_in, NULL_LEFT_DDL)
    rates = spark.createDataFrame(rates_in, NULL_RIGHT_DDL)
    results = {}

    joined, rejects = timeweave.temporal_join_with_rejects(orders, rates, "ts", key="cur", time="t", how="left")
    results["dataframe"] = _rows(joined)
    assert sorted((r.side, r.reason) for r in rejects.collect()) == [
        ("right", "NULL key column cur"), ("right", "NULL time column t")]

    orders.createOrReplaceTempView("orders_issue20")
    timeweave.register_versioned(spark, "rates_issue20", rates, VersionedTableSpec("cur", "t"))
    query = ("SELECT o.*, r.rate FROM orders_issue20 AS o LEFT JOIN rates_issue20 FOR SYSTEM_TIME AS OF o.ts AS r "
             "ON o.cur = r.cur")
    results["sql"] = _rows(timeweave.sql(spark, query))
    assert sorted((r.side, r.reason) for r in timeweave.dead_letters(spark, query).collect()) == [
        ("right", "NULL key column cur"), ("right", "NULL time column t")]

    # the plan file as dbt renders it (the dbt macro passes these arguments to this macro)
    from timeweave.spark import render

    plan = render.macro(
        "timeweave__temporal_join_sql", "{left}", "{right}", orders.columns, rates.columns, ["cur"], "ts", ["cur"], "t",
        [["rate", "rate"]], how="left",
    )
    results["plan"] = _rows(spark.sql(plan, left=orders, right=rates))
    # the dead letter dbt's temporal_join_dead_letter renders, for this LEFT join: no left rows
    left_dead = render.macro("timeweave__dead_letter_sql", "{left}", orders.columns, "left", ["cur"], "ts", how="left")
    assert spark.sql(left_dead, left=orders).count() == 0
    inner_dead = render.macro("timeweave__dead_letter_sql", "{left}", orders.columns, "left", ["cur"], "ts", how="inner")
    assert spark.sql(inner_dead, left=orders).count() == 2

    config = _null_rows_job(tmp_path, orders, rates, "left")
    metrics = run_streaming(config, spark, flush=True)
    results["streaming"] = _rows(spark.read.parquet(str(tmp_path / "stream")))
    assert (metrics["rows_in_left"], metrics["rows_out"], metrics["dead_letter"], metrics["late"]) == (22, 22, 2, 0)

    for slices, per_job in ((1, None), (3, None), (3, 1)):
        name = f"backfill{slices}x{per_job}"
        job = {**config, "output": {"path": str(tmp_path / name)}, "checkpoint": str(tmp_path / f"{name}_chk")}
        metrics = run_backfill(job, T0, T0 + timedelta(hours=4), slices, spark=spark, slices_per_job=per_job)
        results[name] = _rows(spark.read.parquet(str(tmp_path / name)))
        assert (metrics["rows_in_left"], metrics["rows_out"], metrics["dead_letter"]) == (22, 22, 2), name
        dead = spark.read.parquet(str(tmp_path / f"{name}_dead_letter"))
        assert sorted((r.side, r.reason) for r in dead.collect()) == [
            ("right", "NULL key column cur"), ("right", "NULL time column t")]
        assert "__tw_seq" not in "".join(r.row for r in dead.collect())  # no internal column in the dead letter

    expected = results["dataframe"]
    assert len(expected) == 22
    unmatched = {r[0]: r[4] for r in expected if r[0].startswith("o_null")}
    assert unmatched == {"o_null_key": None, "o_null_time": None}
    for door, rows in results.items():
        assert rows == expected, f"{door} differs from the DataFrame door"


def _null_rows_job(tmp_path, orders, rates, how: str) -> dict:
    """The 22 orders and their rates as parquet, and a streaming job config joining them ``how``."""
    orders.write.parquet(str(tmp_path / "orders"))
    rates.write.parquet(str(tmp_path / "rates"))
    return {
        "left": {"path": str(tmp_path / "orders"), "format": "parquet", "schema": NULL_LEFT_DDL},
        "right": {"path": str(tmp_path / "rates"), "format": "parquet", "schema": NULL_RIGHT_DDL},
        "versioned": {"key": ["cur"], "time": "t"},
        "join": {"left_time": "ts", "how": how, "right_columns": ["rate"]},
        "output": {"path": str(tmp_path / "stream")},
        "checkpoint": str(tmp_path / "checkpoint"),
        "trigger": {"available_now": True},
    }


def test_inner_join_still_dead_letters_null_key_and_null_time_rows(spark, tmp_path) -> None:
    from timeweave.jobs.streaming import run_streaming

    orders_in, rates_in = _twenty_two_orders()
    orders = spark.createDataFrame(orders_in, NULL_LEFT_DDL)
    rates = spark.createDataFrame(rates_in, NULL_RIGHT_DDL)
    left_rejects = [("left", "NULL key column cur"), ("left", "NULL time column ts")]
    right_rejects = [("right", "NULL key column cur"), ("right", "NULL time column t")]

    joined, rejects = timeweave.temporal_join_with_rejects(orders, rates, "ts", key="cur", time="t", how="inner")
    expected = _rows(joined)
    assert not [r for r in expected if r[0].startswith("o_null")]
    assert sorted((r.side, r.reason) for r in rejects.collect()) == left_rejects + right_rejects

    orders.createOrReplaceTempView("orders_issue20_inner")
    timeweave.register_versioned(spark, "rates_issue20_inner", rates, VersionedTableSpec("cur", "t"))
    query = ("SELECT o.*, r.rate FROM orders_issue20_inner AS o JOIN rates_issue20_inner FOR SYSTEM_TIME AS OF o.ts AS r "
             "ON o.cur = r.cur")
    assert _rows(timeweave.sql(spark, query)) == expected
    sql_rejects = timeweave.dead_letters(spark, query).collect()
    assert sorted((r.side, r.reason) for r in sql_rejects) == left_rejects + right_rejects
    assert {r.clause for r in sql_rejects} == {"temporal join #1 (rates_issue20_inner AS r)"}

    config = _null_rows_job(tmp_path, orders, rates, "inner")
    metrics = run_streaming(config, spark, flush=True)
    assert _rows(spark.read.parquet(str(tmp_path / "stream"))) == expected
    assert metrics["dead_letter"] == 4
    job = {**config, "output": {"path": str(tmp_path / "bf")}, "checkpoint": str(tmp_path / "bf_chk")}
    metrics = run_backfill(job, T0, T0 + timedelta(hours=4), 3, spark=spark)
    assert _rows(spark.read.parquet(str(tmp_path / "bf"))) == expected
    assert metrics["dead_letter"] == 4
    dead = spark.read.parquet(str(tmp_path / "bf_dead_letter")).collect()
    assert sorted((r.side, r.reason) for r in dead) == left_rejects + right_rejects
    assert "__tw_seq" not in "".join(r.row for r in dead)
