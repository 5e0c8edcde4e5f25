"""As-of joins outside Flink's narrow form (issue 17): keyless versioned tables (one history) and any orderable
time column (integers, decimals, doubles, dates, timestamps with or without a zone) in the batch doors.

The reference is ``pandas.merge_asof`` (backward, exact matches allowed) over the versions after the plan's
tie rule (one event per time: the highest sequence), a delete found meaning "no version", as the existing
door tests state the rule.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from decimal import Decimal

import pandas as pd
import pytest

import timeweave
from timeweave.core.errors import SpecError

pytestmark = pytest.mark.spark

T0 = datetime(2024, 1, 1)
D0 = date(2024, 1, 1)

#: (Spark type, the value of step n): each time domain the batch doors take.
TIME_TYPES = {
    "int": ("INT", lambda n: n),
    "bigint": ("BIGINT", lambda n: 10**12 + n),
    "double": ("DOUBLE", lambda n: n / 4),
    "decimal": ("DECIMAL(12,3)", lambda n: Decimal(n) / 8),
    "date": ("DATE", lambda n: D0 + timedelta(days=n)),
    "timestamp": ("TIMESTAMP", lambda n: T0 + timedelta(seconds=n)),
    "timestamp_ntz": ("TIMESTAMP_NTZ", lambda n: T0 + timedelta(seconds=n)),
}


def _random_sides(seed: int, value, keys: int, versions: int = 60, orders: int = 200):
    """Right events (k, t, seq, gone, rate) with ties and deletes, left rows (id, k, t) with NULL times."""
    rnd = random.Random(seed)
    right = [
        (f"k{rnd.randrange(keys)}", value(rnd.randrange(0, 100)), i, rnd.random() < 0.15, float(i))
        for i in range(versions)
    ]
    left = [
        (f"o{i}", f"k{rnd.randrange(keys)}", None if rnd.random() < 0.03 else value(rnd.randrange(-5, 110)))
        for i in range(orders)
    ]
    return left, right


def _reference(left, right, keyed: bool) -> list[tuple]:
    """(id, rate) of a LEFT as-of join: pandas merge_asof over the versions after ties, a delete = no version."""
    events = pd.DataFrame(right, columns=["k", "t", "seq", "gone", "rate"])
    events = events.sort_values("seq").drop_duplicates(["k", "t"] if keyed else ["t"], keep="last")
    orders = pd.DataFrame(left, columns=["id", "k", "t"])
    timed = orders[orders["t"].notna()].copy()
    rank = {v: i for i, v in enumerate(sorted(set(events["t"]) | set(timed["t"])))}  # merge_asof wants numbers
    events["o"], timed["o"] = events["t"].map(rank), timed["t"].map(rank)
    merged = pd.merge_asof(
        timed.sort_values("o"), events.drop(columns=["t"] + ([] if keyed else ["k"])).sort_values("o"),
        on="o", by="k" if keyed else None, direction="backward",
    )
    found = {r.id: (None if pd.isna(r.rate) or r.gone else float(r.rate)) for r in merged.itertuples()}
    return sorted((i, found.get(i)) for i, *_ in left)


def _frames(spark, left, right, spark_type: str):
    orders = spark.createDataFrame(left, f"id STRING, k STRING, t {spark_type}")
    rates = spark.createDataFrame(right, f"k STRING, ut {spark_type}, seq INT, gone BOOLEAN, rate DOUBLE")
    return orders, rates


@pytest.mark.parametrize("name", list(TIME_TYPES))
def test_each_time_type_matches_merge_asof_keyed_and_keyless_through_both_doors(spark, name) -> None:
    spark_type, value = TIME_TYPES[name]
    for keyed, seed in ((False, 1), (True, 2)):
        left, right = _random_sides(seed, value, keys=3)
        orders, rates = _frames(spark, left, right, spark_type)
        key = ["k"] if keyed else []
        versioned = timeweave.versioned_table(rates, key=key, time="ut", format="upsert", delete_flag="gone",
                                              sequence="seq", name=f"rates_{name}_{keyed}")
        out = timeweave.temporal_join(orders, versioned, "t", how="left", right_columns=["rate"])
        expected = _reference(left, right, keyed)
        assert sorted((r.id, r.rate) for r in out.collect()) == expected, (name, keyed)
        orders.createOrReplaceTempView(f"orders_{name}")
        on = "o.k = r.k" if keyed else "TRUE"
        sql = timeweave.sql(spark, f"SELECT o.id, r.rate FROM orders_{name} AS o LEFT JOIN rates_{name}_{keyed} "
                                   f"FOR SYSTEM_TIME AS OF o.t AS r ON {on}")
        assert sorted((r.id, r.rate) for r in sql.collect()) == expected, (name, keyed, "sql")


def test_keyless_sql_join_with_only_a_residual_predicate(spark) -> None:
    """``ON <residual>`` against a keyless table: equalities there are predicates on the version found, as Flink
    applies every non-key conjunct (a failing one pads NULLs in a LEFT join)."""
    orders = spark.createDataFrame([("o1", 5, "EUR"), ("o2", 15, "USD"), ("o3", 25, "EUR")], "id STRING, t INT, cur STRING")
    index = spark.createDataFrame([(0, "EUR", 1.0), (10, "USD", 2.0), (20, "USD", 3.0)], "v INT, cur STRING, level DOUBLE")
    timeweave.versioned_table(index, key=None, time="v", name="price_index")
    orders.createOrReplaceTempView("orders_residual")
    rows = timeweave.sql(spark, "SELECT o.id, r.level FROM orders_residual o LEFT JOIN price_index "
                                "FOR SYSTEM_TIME AS OF o.t AS r ON o.cur = r.cur").collect()
    assert sorted((r.id, r.level) for r in rows) == [("o1", 1.0), ("o2", 2.0), ("o3", None)]
    inner = timeweave.sql(spark, "SELECT o.id, r.level FROM orders_residual o JOIN price_index "
                                 "FOR SYSTEM_TIME AS OF o.t AS r ON r.level > 1.5").collect()
    assert sorted((r.id, r.level) for r in inner) == [("o2", 2.0), ("o3", 3.0)]


def test_versioned_table_keeps_the_time_type_in_its_validity(spark) -> None:
    rates = spark.createDataFrame([(D0, 1.0), (D0 + timedelta(days=3), 2.0)], "d DATE, rate DOUBLE")
    history = timeweave.versioned_table(rates, key=None, time="d")
    assert dict(history.dtypes)["valid_from"] == "date"
    assert [(r.valid_from, r.valid_to) for r in history.orderBy("valid_from").collect()] == [
        (D0, D0 + timedelta(days=3)), (D0 + timedelta(days=3), None)]


@pytest.mark.parametrize(("left_type", "right_type"), [("DATE", "TIMESTAMP"), ("INT", "DATE"), ("TIMESTAMP", "DOUBLE")])
def test_mixed_time_types_fail_naming_both_columns(spark, left_type, right_type) -> None:
    orders = spark.createDataFrame([], f"id STRING, placed {left_type}")
    rates = spark.createDataFrame([], f"since {right_type}, rate DOUBLE")
    with pytest.raises(SpecError, match=r"left time 'placed' .* and version time 'since' .* cannot be compared") as err:
        timeweave.temporal_join(orders, rates, "placed", key=[], time="since")
    assert err.value.argument == "left_time"


def test_a_forgotten_key_is_an_error_not_a_keyless_join(spark) -> None:
    orders = spark.createDataFrame([], "id STRING, t INT")
    rates = spark.createDataFrame([], "k STRING, t INT, rate DOUBLE")
    with pytest.raises(SpecError, match="key=\\[\\] for a keyless table") as err:
        timeweave.temporal_join(orders, rates, "t", time="t")
    assert err.value.argument == "key"


def test_numeric_times_with_extremes_and_nan(spark) -> None:
    """DOUBLE times at the edges (infinities, NaN, which Spark orders above every number) still find the newest
    version at or before them: the buckets are a monotone map, the ranges exact."""
    inf = float("inf")
    rates = spark.createDataFrame([(-inf, "a"), (-1e300, "b"), (0.5, "c"), (1e300, "d"), (inf, "e")], "v DOUBLE, tag STRING")
    times = [-inf, -1e301, -1e300, 0.0, 0.5, 0.75, 1e300, inf, float("nan")]
    orders = spark.createDataFrame([(i, t) for i, t in enumerate(times)], "id INT, t DOUBLE")
    out = timeweave.temporal_join(orders, rates, "t", key=[], time="v", how="left")
    assert [r.tag for r in out.orderBy("id").collect()] == ["a", "a", "b", "b", "c", "c", "d", "e", "e"]


#: (start, end) of a backfill over each time type's values 0 .. 110 (the left times run from -5 to 109).
BOUNDS = {name: (value(-10), value(120)) for name, (_, value) in TIME_TYPES.items()}


@pytest.mark.parametrize("name", ["bigint", "decimal", "double", "date", "timestamp_ntz"])
def test_backfill_in_slices_equals_the_batch_run_for_each_time_type(spark, tmp_path, name) -> None:
    """1, 3 and 7 slices over the time domain of the column (whole numbers, decimal and double quotients, days,
    instants) give the DataFrame door's rows, keyless and keyed; the NULL-time left rows under slice=none."""
    from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
    from timeweave.spark.temporal_join_backfill import run_slices

    spark_type, value = TIME_TYPES[name]
    for keyed, seed in ((False, 3), (True, 4)):
        left, right = _random_sides(seed, value, keys=3)
        orders, rates = _frames(spark, left, right, spark_type)
        versioned = VersionedTableSpec(["k"] if keyed else [], "ut", "upsert", delete_flag="gone", sequence="seq")
        spec = TemporalJoinSpec(versioned, "t", how="left", right_columns=["rate"])
        expected = _reference(left, right, keyed)
        start, end = BOUNDS[name]
        for slices in (1, 3, 7):
            out = tmp_path / f"{keyed}_{slices}"
            metrics = run_slices(orders, rates, spec, start, end, slices, str(out / "main"), str(out / "dead"), str(out / "state"))
            rows = spark.read.parquet(str(out / "main")).collect()
            assert sorted((r.id, r.rate) for r in rows) == expected, (name, keyed, slices)
            assert metrics["slices"] == slices and metrics["rows_out"] == len(left)


def test_backfill_resumes_a_keyless_history_from_its_carried_state(spark, tmp_path) -> None:
    """Slice by slice (``only=[k]``, each from the state the one before wrote): a keyless table's edge state is one
    row, the history's newest event before the edge."""
    from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
    from timeweave.spark.temporal_join_backfill import run_slices

    left, right = _random_sides(5, lambda n: n, keys=1)
    orders, rates = _frames(spark, left, right, "INT")
    spec = TemporalJoinSpec(VersionedTableSpec([], "ut", "upsert", delete_flag="gone", sequence="seq"), "t", how="left",
                            right_columns=["rate"])
    paths = [str(tmp_path / p) for p in ("main", "dead", "state")]
    for k in range(3):
        run_slices(orders, rates, spec, -10, 120, 3, *paths, only=[k])
    states = spark.read.parquet(paths[2]).groupBy("edge").count().collect()
    assert {r["count"] for r in states} == {1}
    rows = spark.read.parquet(paths[0]).collect()
    assert sorted((r.id, r.rate) for r in rows) == _reference(left, right, keyed=False)


def test_backfill_bounds_must_be_of_the_time_domain(spark, tmp_path) -> None:
    from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
    from timeweave.spark.temporal_join_backfill import run_slices

    orders, rates = _frames(spark, [], [], "DATE")
    spec = TemporalJoinSpec(VersionedTableSpec([], "ut"), "t", right_columns=["rate"])
    paths = [str(tmp_path / p) for p in ("main", "dead", "state")]
    with pytest.raises(SpecError, match="argument 'start': must be a date \\(the event time is a date\\)"):
        run_slices(orders, rates, spec, T0, T0 + timedelta(days=2), 2, *paths)
    with pytest.raises(SpecError, match="at most 2 slices, got 3"):
        run_slices(orders, rates, spec, D0, D0 + timedelta(days=2), 3, *paths)


@pytest.mark.slow
def test_dbt_model_equals_the_dataframe_door_keyless_and_over_numbers_and_dates(spark, spark_home, tmp_path) -> None:
    """The dbt macro renders the same plan: the integration project's ``random_asof`` model over tables of each
    time type, keyless and keyed, from Relations and from SQL text."""
    import json

    from tests.helpers.dbt_run import run_dbt_project

    spark.sql("CREATE DATABASE IF NOT EXISTS timeweave_asof")
    for n, (name, keyed) in enumerate((("decimal", False), ("date", True), ("bigint", False))):
        spark_type, value = TIME_TYPES[name]
        left, right = _random_sides(20 + n, value, keys=3)
        orders, rates = _frames(spark, left, right, spark_type)
        orders.write.mode("overwrite").saveAsTable("timeweave_asof.orders")
        rates.write.mode("overwrite").saveAsTable("timeweave_asof.rates")
        # the last one with both sides as SQL text: the macro reads their types with DESCRIBE QUERY
        variables = {"timeweave_asof": True, "timeweave_asof_key": ["k"] if keyed else [], "timeweave_asof_text": n == 2}
        schema, result = run_dbt_project(spark_home, tmp_path / name, "run", "--select", "random_asof",
                                         "--vars", json.dumps(variables))
        assert result.success, result.exception or [(r.node.name, r.message) for r in result.result]
        rows = spark.table(f"{schema}.random_asof").collect()
        assert sorted((r.id, r.rate) for r in rows) == _reference(left, right, keyed), (name, keyed)
