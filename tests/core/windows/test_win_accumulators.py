"""Accumulators: SQL's NULL rules, merge never modifies its second argument, the states are storable."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timeweave.core.errors import SpecError
from timeweave.core.state_codec import decode, encode
from timeweave.core.windows import (
    AggregateCall,
    Aggregates,
    Avg,
    Count,
    CountDistinct,
    CountStar,
    FunctionAccumulator,
    Max,
    Min,
    Sum,
)

ALL = [CountStar(), Count(), Sum(), Min(), Max(), Avg(), CountDistinct()]


def _fold(accumulator, values):
    acc = accumulator.create()
    for v in values:
        acc = accumulator.add(acc, v)
    return acc


@pytest.mark.parametrize(("accumulator", "values", "expected"), [
    (CountStar(), [1, None, 2], 3), (Count(), [1, None, 2], 2), (Count(), [], 0),
    (Sum(), [Decimal("1.50"), None, Decimal("2.25")], Decimal("3.75")), (Sum(), [None], None), (Sum(), [], None),
    (Min(), [3, None, 1, 2], 1), (Max(), [datetime(2020, 1, 1), None, datetime(2021, 1, 1)], datetime(2021, 1, 1)),
    (Min(), [None], None), (Avg(), [1, 2, None], 1.5), (Avg(), [None], None),
    (Avg(), [Decimal("1.00"), Decimal("2.00")], Decimal("1.5")), (CountDistinct(), ["a", "b", "a", None], 2),
])  # fmt: skip
def test_sql_results(accumulator, values, expected) -> None:
    assert accumulator.result(_fold(accumulator, values)) == expected


@given(st.lists(st.one_of(st.none(), st.integers(-5, 5))), st.lists(st.one_of(st.none(), st.integers(-5, 5))))
def test_merge_equals_one_fold_and_leaves_other_alone(left, right) -> None:
    for accumulator in ALL:
        other = _fold(accumulator, right)
        before = encode(other)
        merged = accumulator.merge(_fold(accumulator, left), other)
        assert accumulator.result(merged) == accumulator.result(_fold(accumulator, left + right))
        assert encode(other) == before  # a HOP slice merged into a window is unchanged
        assert decode(encode(merged)) == merged  # storable by the state codec


def test_aggregates_row_count_and_filter() -> None:
    aggs = Aggregates([AggregateCall(CountStar(), name="n"), AggregateCall(Sum(), "v", filter="keep", name="s"),
                       AggregateCall(Count(), lambda r: r["v"] if r["v"] > 1 else None, name="big")])
    accs = aggs.create()
    assert Aggregates.is_empty(accs)
    for row in ({"v": 1, "keep": True}, {"v": 2, "keep": None}, {"v": 3, "keep": False}, {"v": 4, "keep": True}):
        aggs.add(accs, row)
    assert accs[0] == 4 and aggs.results(accs) == (4, 5, 3)  # FILTER: NULL and false rows are left out
    assert aggs.names == ("n", "s", "big")


def test_user_accumulator_and_bad_calls() -> None:
    top2 = FunctionAccumulator(create=list, add=lambda acc, v: sorted([*acc, v])[-2:],
                               merge=lambda a, b: sorted(a + b)[-2:], result=tuple)
    aggs = Aggregates([AggregateCall(top2, "v", name="top2")])
    a = aggs.add(aggs.add(aggs.create(), {"v": 5}), {"v": 1})
    b = aggs.add(aggs.create(), {"v": 7})
    assert aggs.results(aggs.merge(a, b)) == ((5, 7),)
    with pytest.raises(SpecError, match="create/add/merge/result"):
        AggregateCall(object(), "v")
    with pytest.raises(SpecError, match="share an output name"):
        Aggregates([AggregateCall(Sum(), "v", name="x"), AggregateCall(Max(), "v", name="x")])
    with pytest.raises(SpecError, match="column name or a function"):
        AggregateCall(Sum(), 3)
