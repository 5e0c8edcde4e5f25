"""The continuous GROUP BY operator: updating input, retraction to zero, idle-state retention, bad input."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.core.updates.harness import CALLS, Stepper
from timeweave.core.errors import SpecError
from timeweave.core.operator import KeyedOperator, Tag
from timeweave.core.retention import CLEANUP
from timeweave.core.spec import StateRetention
from timeweave.core.updates import GroupAggregateOperator, GroupAggregateSpec, MaterializedTable, Rejected
from timeweave.core.windows.accumulators import (
    AggregateCall,
    Count,
    CountDistinct,
    CountStar,
    FunctionAccumulator,
    Max,
    Min,
    Sum,
)

MIN_MAX = (AggregateCall(Min(), "v", name="low"), AggregateCall(Max(), "v", name="high"),
           AggregateCall(CountStar(), name="n"))


def _op(calls=MIN_MAX, **kw) -> GroupAggregateOperator:
    return GroupAggregateOperator(GroupAggregateSpec(("user",), calls, **kw))


def _ops(out) -> list[tuple]:
    return [(c.op, *c.key, *c.values) for c in out[Tag.CHANGELOG]]


def test_the_operator_is_a_keyed_operator_and_declares_its_state():
    op = _op()
    assert isinstance(op, KeyedOperator)
    assert op.layout.version == 1 and op.layout.names == ("group-accumulators", "emitted-results", CLEANUP)


def test_min_max_under_retraction_and_a_count_reaching_zero_deletes_the_row():
    host = Stepper(_op(op_column="op"))
    assert _ops(host.step([{"user": "Mary", "v": 5, "op": "+I"}, {"user": "Mary", "v": 1, "op": "+I"},
                           {"user": "Mary", "v": 9, "op": "+I"}])) == [("+I", "Mary", 1, 9, 3)]
    # retract the minimum: MIN rescans its multiset (Flink's MinWithRetractAggFunction)
    assert _ops(host.step([{"user": "Mary", "v": 1, "op": "-U"}, {"user": "Mary", "v": 4, "op": "+U"}])) == [
        ("-U", "Mary", 1, 9, 3), ("+U", "Mary", 4, 9, 3)]
    assert _ops(host.step([{"user": "Mary", "v": 9, "op": "-D"}])) == [("-U", "Mary", 4, 9, 3), ("+U", "Mary", 4, 5, 2)]
    # the last rows taken back: the count reaches 0, the result is deleted and the key's state dropped
    assert _ops(host.step([{"user": "Mary", "v": 4, "op": "-D"}, {"user": "Mary", "v": 5, "op": "-D"}])) == [
        ("-D", "Mary", 4, 5, 2)]
    assert host.contexts == {}
    # the group starts over
    assert _ops(host.step([{"user": "Mary", "v": 7, "op": "+I"}])) == [("+I", "Mary", 7, 7, 1)]


def test_per_row_emission_is_flinks_group_agg_function():
    host = Stepper(_op(op_column="op", per_row=True))
    out = host.step([{"user": "Mary", "v": 5, "op": "+I"}, {"user": "Mary", "v": 5, "op": "-D"},
                     {"user": "Mary", "v": 3, "op": "+I"}, {"user": "Mary", "v": 3, "op": "+I"}])
    assert _ops(out) == [("+I", "Mary", 5, 5, 1), ("-D", "Mary", 5, 5, 1), ("+I", "Mary", 3, 3, 1),
                         ("-U", "Mary", 3, 3, 1), ("+U", "Mary", 3, 3, 2)]


def test_a_step_is_folded_into_one_change_and_an_unchanged_result_emits_nothing():
    host = Stepper(_op(op_column="op"))
    host.step([{"user": "Mary", "v": 5, "op": "+I"}])
    # +1 row and -1 row of the same value: the result is unchanged, nothing is emitted
    assert _ops(host.step([{"user": "Mary", "v": 2, "op": "+I"}, {"user": "Mary", "v": 2, "op": "-D"}])) == []
    # back to zero and up again in one step: one change from what was last emitted
    assert _ops(host.step([{"user": "Mary", "v": 5, "op": "-D"}, {"user": "Mary", "v": 6, "op": "+I"}])) == [
        ("-U", "Mary", 5, 5, 1), ("+U", "Mary", 6, 6, 1)]


def test_upsert_mode_deletes_by_the_key():
    host = Stepper(_op(op_column="op", changelog="upsert"))
    host.step([{"user": "Bob", "v": 1, "op": "+I"}])
    assert _ops(host.step([{"user": "Bob", "v": 2, "op": "+I"}])) == [("+U", "Bob", 1, 2, 2)]
    assert _ops(host.step([{"user": "Bob", "v": 1, "op": "-D"}, {"user": "Bob", "v": 2, "op": "-U"}])) == [
        ("-D", "Bob", 1, 2, 2)]


def test_null_group_keys_are_one_group():
    host = Stepper(_op(calls=(AggregateCall(CountStar(), name="n"),)))
    out = host.step([{"user": None}, {"user": "Mary"}, {"user": None}])
    assert sorted(_ops(out), key=repr) == [("+I", "Mary", 1), ("+I", None, 2)]


def test_every_built_in_over_an_append_only_input():
    host = Stepper(GroupAggregateOperator(GroupAggregateSpec(("user",), CALLS)))
    out = host.step([{"user": "Mary", "url": "a", "v": Decimal("1.50")}, {"user": "Mary", "url": None, "v": None},
                     {"user": "Mary", "url": "a", "v": Decimal("2.50")}])
    assert _ops(out) == [("+I", "Mary", 3, 2, Decimal("4.00"), Decimal("1.50"), Decimal("2.50"), Decimal("2.00"), 1,
                          2)]


# -- idle-state retention ------------------------------------------------------------------------------
RETAIN = StateRetention(min_idle=10, max_idle=20)


def test_idle_cleanup_forgets_the_key_silently_and_it_starts_over():
    host = Stepper(_op(op_column="op", retention=RETAIN, refresh_unchanged=False))
    host.step([{"user": "Mary", "v": 5, "op": "+I"}, {"user": "Mary", "v": 6, "op": "+I"}], watermark=100)
    assert host.contexts[("Mary",)].values[CLEANUP] == 120
    host.step([], watermark=115)
    host.step([{"user": "Bob", "v": 1, "op": "+I"}], watermark=118)  # Bob active at 115; Mary idle, not yet due
    assert host.contexts[("Bob",)].values[CLEANUP] == 135
    assert ("Mary",) in host.contexts
    out = host.step([], watermark=120)
    assert out[Tag.CHANGELOG] == [] and ("Mary",) not in host.contexts and ("Bob",) in host.contexts
    # seen again: the first result is +I again, and no -U of the forgotten [Mary, 5, 6, 2]
    assert _ops(host.step([{"user": "Mary", "v": 7, "op": "+I"}])) == [("+I", "Mary", 7, 7, 1)]
    # a retraction of a row the forgotten state held: nothing to take back, a dead letter (Flink drops it)
    out = host.step([{"user": "Bob", "v": 1, "op": "-D"}], watermark=200)
    assert _ops(out) == [("-D", "Bob", 1, 1, 1)]
    late = host.step([{"user": "Bob", "v": 1, "op": "-D"}])
    assert late[Tag.CHANGELOG] == [] and [r.reason for r in late[Tag.DEAD_LETTER]] == [
        "retraction of a row of a group that holds no rows (none was accumulated, or idle-state retention "
        "dropped the group): nothing to take back"]


def test_a_busy_key_keeps_its_state():
    host = Stepper(_op(retention=RETAIN))
    for watermark in range(100, 200, 9):
        host.step([{"user": "Mary", "v": 1}], watermark=watermark)
    assert host.contexts[("Mary",)].values["group-accumulators"][0] == 12


def test_rows_before_the_first_watermark_get_a_cleanup_time_at_the_first_watermark():
    host = Stepper(_op(retention=RETAIN))
    host.step([{"user": "Mary", "v": 1}])
    assert CLEANUP not in host.contexts[("Mary",)].values
    host.step([], watermark=50)
    assert host.contexts[("Mary",)].values[CLEANUP] == 70 and host.contexts[("Mary",)].timers() == [70]
    host.step([], watermark=70)
    assert host.contexts == {}


def test_under_retention_an_unchanged_result_is_emitted_again_as_flink_does():
    host = Stepper(_op(retention=RETAIN))
    host.step([{"user": "Mary", "v": 1}], watermark=0)
    out = host.step([{"user": "Mary", "v": 1, "op": "x"}], watermark=5)
    assert _ops(out) == [("-U", "Mary", 1, 1, 1), ("+U", "Mary", 1, 1, 2)]  # changed (n)
    no_refresh = Stepper(_op(calls=(AggregateCall(Max(), "v", name="high"),), retention=RETAIN,
                             refresh_unchanged=False))
    refresh = Stepper(_op(calls=(AggregateCall(Max(), "v", name="high"),), retention=RETAIN))
    for h in (no_refresh, refresh):
        h.step([{"user": "Mary", "v": 3}], watermark=0)
    assert _ops(no_refresh.step([{"user": "Mary", "v": 1}])) == []
    assert _ops(refresh.step([{"user": "Mary", "v": 1}])) == [("-U", "Mary", 3), ("+U", "Mary", 3)]


def test_retention_in_upsert_mode_overwrites_the_forgotten_row():
    host = Stepper(_op(retention=RETAIN, changelog="upsert"))
    table = MaterializedTable("upsert", key_names=("user",), value_names=("low", "high", "n"))
    table.apply(host.step([{"user": "Mary", "v": 5}, {"user": "Mary", "v": 6}], watermark=0)[Tag.CHANGELOG])
    host.step([], watermark=30)
    table.apply(host.step([{"user": "Mary", "v": 1}])[Tag.CHANGELOG])
    assert table.rows() == [{"user": "Mary", "low": 1, "high": 1, "n": 1}]


# -- bad input -----------------------------------------------------------------------------------------
def test_bad_rows_go_to_the_dead_letter_with_the_reason_and_change_nothing():
    calls = (AggregateCall(CountStar(), name="n"), AggregateCall(CountDistinct(), "v", name="d"),
             AggregateCall(Min(), "v", name="low"), AggregateCall(Sum(), "v", name="total"),
             AggregateCall(Count(), "url", name="cnt"))
    host = Stepper(_op(calls=calls, op_column="op"))
    rows = [
        {"user": "Mary", "v": 2, "url": "a", "op": "+I"},
        {"user": "Mary", "v": 3, "op": "+I"},  # no url column
        {"user": "Mary", "v": "three", "url": "a", "op": "+I"},  # COUNT(DISTINCT) takes it, then MIN cannot: undone
        {"user": "Mary", "v": 1j, "url": "a", "op": "+I"},  # the same with a number
        {"user": "Mary", "v": 1, "url": "a", "op": "u"},  # an upsert without its previous row
        {"user": "Mary", "v": 1, "url": "a", "op": "??"},
        {"user": "Mary", "v": 1, "url": "a", "op": None},
        {"user": "Mary", "v": 1, "url": "a"},  # no op column
        {"v": 1, "url": "a", "op": "+I"},  # no GROUP BY column (a host keys rows; a row without its key is bad)
    ]
    out = Stepper(_op(calls=calls, op_column="op")).step(rows[-1:])
    assert [r.reason for r in out[Tag.DEAD_LETTER]] == ["cannot read the GROUP BY key: column 'user' is missing"]
    out = host.step(rows[:-1])
    assert [(r.row["v"], r.reason) for r in out[Tag.DEAD_LETTER]] == [
        (3, "cannot read the value of aggregate cnt: column 'url' is missing"),
        ("three", "cannot aggregate 'three' in aggregate low: TypeError: '<' not supported between instances of "
                  "'str' and 'int'"),
        (1j, "cannot aggregate 1j in aggregate low: TypeError: '<' not supported between instances of 'complex' "
             "and 'int'"),
        (1, "op u in column op is an upsert without its previous row: an aggregate can only take back rows it is "
            "sent as -U / -D"),
        (1, "unknown op ?? in column op"),
        (1, "unknown op NULL in column op"),
        (1, "cannot read the op code: column 'op' is missing"),
    ]
    assert all(isinstance(r, Rejected) and r.tag is Tag.DEAD_LETTER for r in out[Tag.DEAD_LETTER])
    # the half-applied row was undone: COUNT(*) restored, COUNT(DISTINCT)'s multiset without 'three'
    assert _ops(out) == [("+I", "Mary", 1, 1, 2, 2, 1)]
    assert host.contexts[("Mary",)].values["group-accumulators"] == [1, 1, [1, {2: 1}], [2, {2: 1}], [2, 1], 1]


def test_sum_takes_numbers_and_a_rejected_value_is_undone_from_the_aggregates_before_it():
    calls = (AggregateCall(CountStar(), name="n"), AggregateCall(CountDistinct(), "v", name="d"),
             AggregateCall(Sum(), "v", name="total"))
    host = Stepper(_op(calls=calls))
    host.step([{"user": "Mary", "v": 2}])
    out = host.step([{"user": "Mary", "v": "x"}, {"user": "Mary", "v": True}, {"user": "Mary", "v": Decimal("1.5")}])
    assert [r.reason for r in out[Tag.DEAD_LETTER]] == ["aggregate total sums numbers, got 'x' (str)",
                                                        "aggregate total sums numbers, got True (bool)"]
    assert _ops(out) == [("-U", "Mary", 1, 1, 2), ("+U", "Mary", 2, 2, Decimal("3.5"))]
    assert host.contexts[("Mary",)].values["group-accumulators"] == [2, 2, [2, {2: 1, Decimal("1.5"): 1}],
                                                                     Decimal("3.5")]


def test_a_bad_first_row_leaves_no_group_behind():
    host = Stepper(_op(calls=(AggregateCall(CountStar(), name="n"), AggregateCall(Sum(), "v", name="total"))))
    out = host.step([{"user": "Mary", "v": "x"}])
    assert out[Tag.CHANGELOG] == [] and host.contexts == {}
    assert [r.reason for r in out[Tag.DEAD_LETTER]] == ["aggregate total sums numbers, got 'x' (str)"]
    assert _ops(host.step([{"user": "Mary", "v": 2}])) == [("+I", "Mary", 1, 2)]


def test_a_user_accumulator_without_retract_is_refused_for_an_updating_input():
    concat = FunctionAccumulator(create=list, add=lambda a, v: [*a, v], merge=lambda a, b: a + b, result=len)
    with pytest.raises(SpecError, match=r"clicks_per_user: argument 'aggregates': aggregate urls cannot take "
                                        r"values back \(its accumulator has no retract\), and the input is updating"):
        GroupAggregateSpec(("user",), (AggregateCall(concat, "url", name="urls"),), op_column="op",
                           output="clicks_per_user")
    GroupAggregateSpec(("user",), (AggregateCall(concat, "url", name="urls"),))  # append-only input: fine


@pytest.mark.parametrize("kw, message", [
    ({"group_by": ()}, "argument 'group_by': expected one or more column names"),
    ({"group_by": ("user", "user")}, "argument 'group_by': a column is named twice"),
    ({"aggregates": ()}, "argument 'aggregates': expected one or more AggregateCall values"),
    ({"aggregates": (AggregateCall(Count(), "url", name="user"),)}, "output names must be unique and differ"),
    ({"op_column": "user"}, "argument 'op_column': expected the op-code column's name"),
    ({"changelog": "append"}, "an append-only output cannot carry updates"),
    ({"changelog": "merge"}, "argument 'changelog': expected 'append', 'retract' or 'upsert', got 'merge'"),
    ({"retention": 10}, "argument 'retention': expected a StateRetention"),
])
def test_bad_specs_are_clear_errors_naming_the_output(kw, message):
    args = {"group_by": ("user",), "aggregates": (AggregateCall(Count(), "url", name="cnt"),), **kw}
    with pytest.raises(SpecError, match=r"^clicks_per_user: ") as err:
        GroupAggregateSpec(output="clicks_per_user", **args)
    assert message in str(err.value)


def test_retention_survives_a_restart_through_the_state_codec():
    """The cleanup time is declared state (a backfill slice edge, a checkpoint): a restored key is still forgotten
    on time, and a restored busy key is not."""
    host = Stepper(_op(retention=RETAIN))
    host.step([{"user": "Mary", "v": 1}, {"user": "Bob", "v": 2}], watermark=100)  # both due at 120
    host.restart()
    host.step([{"user": "Bob", "v": 3}], watermark=112)  # Bob active at 100: 100 + 10 <= 120, kept at 120
    host.restart()
    host.step([{"user": "Bob", "v": 4}], watermark=115)  # Bob active at 112: 112 + 10 > 120, pushed to 132
    host.restart()
    host.step([], watermark=120)
    assert list(host.contexts) == [("Bob",)] and host.contexts[("Bob",)].values[CLEANUP] == 132
    assert _ops(host.step([{"user": "Mary", "v": 9}])) == [("+I", "Mary", 9, 9, 1)]


def test_run_keyed_routes_the_outputs_by_tag():
    from timeweave.core.operator import run_keyed

    out = run_keyed(_op(op_column="op"), [(("Mary",), {"user": "Mary", "v": 1, "op": "+I"}),
                                          (("Bob",), {"user": "Bob", "v": 1, "op": "-D"})], [])
    assert _ops(out) == [("+I", "Mary", 1, 1, 1)] and len(out[Tag.DEAD_LETTER]) == 1 and out[Tag.MAIN] == []
