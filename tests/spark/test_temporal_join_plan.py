"""The batch plan's probe: one BIGINT lookup per left row (global bucket numbers), no struct of the left row.

The global numbering puts every key's buckets side by side, so a left row's bucket must stay inside its
own key's range: rows before a key's first event, after its last one, before 1970 (negative microseconds,
where DIV truncates towards zero) and of keys the right side does not have are checked against the
brute-force reference here.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

import timeweave
from tests.core.reference import LeftRowIn, RightRow, brute_force

pytestmark = pytest.mark.spark

T0 = datetime(1969, 12, 31, 23, 59, 0)  # 60 s before the epoch: times on both sides of 0


def _edge_inputs() -> tuple[list[tuple], list[tuple]]:
    # (key, seconds after T0, deleted): "a" early and dense, "b" later and sparse with a delete, "c" one event
    events = [("a", 0, False), ("a", 1, False), ("a", 2, False), ("a", 3, True), ("a", 7, False),
              ("b", 50, False), ("b", 90, False), ("b", 91, True), ("b", 200, False),
              ("c", 60, False)]
    right = [("-D" if d else "+I", k, float(i), T0 + timedelta(seconds=s), i) for i, (k, s, d) in enumerate(events)]
    left = []
    for key in ("a", "b", "c", "zz"):
        for s in (-5, 0, 1, 2, 3, 4, 6, 7, 8, 49, 50, 59, 60, 61, 89, 90, 91, 92, 199, 200, 500):
            for micro in (0, 1, 999_999):
                left.append((f"{key}{s}_{micro}", key, T0 + timedelta(seconds=s, microseconds=micro)))
    return left, right


def _reference(left: list[tuple], right: list[tuple]) -> list[tuple]:
    def micros(t: datetime) -> int:
        return (t - T0) // timedelta(microseconds=1)

    refs = brute_force(
        [LeftRowIn(k, micros(t), i) for i, (_, k, t) in enumerate(left)],
        [RightRow(k, micros(t), op == "-D", i) for op, k, _, t, i in right],
    )
    return sorted((left[i][0], None if v is None else float(v)) for i, v in refs.items())


def test_rows_outside_a_keys_events_match_as_the_reference(spark) -> None:
    left, right = _edge_inputs()
    orders = spark.createDataFrame(left, "order_id STRING, currency STRING, order_time TIMESTAMP")
    rates = spark.createDataFrame(right, "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP, seq BIGINT")
    out = timeweave.temporal_join(orders, rates, "order_time", key="currency", time="update_time", format="changelog",
                                op="op", sequence="seq", how="left", right_columns=["rate"])
    assert sorted(tuple(r) for r in out.select("order_id", "rate").collect()) == _reference(left, right)


def test_probe_looks_up_one_bigint_and_builds_no_left_struct(spark) -> None:
    orders = spark.createDataFrame([("o1", "a", datetime(2024, 1, 1), 2.0)],
                                   "order_id STRING, currency STRING, order_time TIMESTAMP, amount DOUBLE")
    rates = spark.createDataFrame([("a", 1.5, datetime(2023, 1, 1))], "currency STRING, rate DOUBLE, update_time TIMESTAMP")
    out = timeweave.temporal_join(orders, rates, "order_time", key="currency", time="update_time", how="left",
                                predicate="r.rate > 0 AND l.amount > 0")
    assert out.collect()[0]["rate"] == 1.5
    plan = out._jdf.queryExecution().executedPlan().toString()
    joins = [line for line in plan.splitlines() if "BroadcastHashJoin" in line]
    # the intervals' lookup: a single BIGINT key (Spark's long hashed relation), the exact range as condition
    assert any("[__tw_gb" in line and "LeftOuter" in line for line in joins), plan
    # the left row is never packed into a struct (the predicate's l.amount reads the flat column)
    assert "named_struct(order_id" not in plan, plan
