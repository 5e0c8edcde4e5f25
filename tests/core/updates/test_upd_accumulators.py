"""Retracting accumulators: ``retract`` is the exact inverse of ``add``; the non-retracting ones are unchanged."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeweave.core.state_codec import decode, encode
from timeweave.core.windows.accumulators import (
    Avg,
    Count,
    CountDistinct,
    CountDistinctWithRetract,
    CountStar,
    FunctionAccumulator,
    Max,
    MaxWithRetract,
    Min,
    MinWithRetract,
    Sum,
    SumWithRetract,
    can_retract,
    with_retraction,
)


def _batch(name, values):
    present = [v for v in values if v is not None]
    return {"count_star": len(values), "count": len(present), "sum": sum(present) if present else None,
            "min": min(present, default=None), "max": max(present, default=None),
            "avg": (sum(present) / len(present)) if present else None, "distinct": len(set(present))}[name]


RETRACTING = {"count_star": CountStar(), "count": Count(), "sum": SumWithRetract(), "min": MinWithRetract(),
              "max": MaxWithRetract(), "avg": Avg(), "distinct": CountDistinctWithRetract()}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.one_of(st.none(), st.integers(-5, 5))), max_size=40),
       st.sampled_from(sorted(RETRACTING)))
def test_add_and_retract_equal_the_batch_aggregate_of_what_is_held(ops, name):
    """Random adds and retractions of held values (a valid changelog): after each, the result is the batch
    aggregate of the multiset held; the accumulator survives the state codec at every point."""
    accumulator = RETRACTING[name]
    acc, held = accumulator.create(), Counter()
    for is_add, value in ops:
        if is_add or not held[value]:
            acc = accumulator.add(acc, value)
            held[value] += 1
        else:
            acc = accumulator.retract(acc, value)
            held[value] -= 1
        acc = decode(encode(acc))
        assert accumulator.result(acc) == _batch(name, list(held.elements()))


def test_sum_with_retract_is_null_when_no_value_is_left_and_keeps_the_scale_of_what_is_added_next():
    s = SumWithRetract()
    acc = s.retract(s.add(s.create(), Decimal("1.50")), Decimal("1.50"))
    assert acc == [None, 0] and s.result(acc) is None
    assert str(s.result(s.add(acc, Decimal("2")))) == "2"


def test_avg_retract_starts_over_when_empty():
    a = Avg()
    acc = a.retract(a.add(a.add(a.create(), 2), 4), 2)
    assert a.result(acc) == 4.0
    assert a.retract(acc, 4) == [None, 0]


def test_min_max_keep_the_multiset_and_rescan_when_the_extreme_is_taken_back():
    m, x = MinWithRetract(), MaxWithRetract()
    lo, hi = m.create(), x.create()
    for v in (5, 1, 1, 9):
        lo, hi = m.add(lo, v), x.add(hi, v)
    assert lo == [1, {5: 1, 1: 2, 9: 1}] and hi[0] == 9
    lo, hi = m.retract(lo, 1), x.retract(hi, 9)
    assert m.result(lo) == 1 and x.result(hi) == 5  # one 1 still held
    lo = m.retract(lo, 1)
    assert m.result(lo) == 5 and lo[1] == {5: 1, 9: 1}


def test_a_retraction_of_a_value_never_added_leaves_a_negative_count_the_result_ignores():
    """As Flink's MinWithRetractAggFunction: the count goes negative and the extreme is over positive counts."""
    m = MinWithRetract()
    acc = m.retract(m.add(m.create(), 5), 3)
    assert acc == [5, {5: 1, 3: -1}] and m.result(acc) == 5
    acc = m.add(acc, 3)  # brings 3 back to 0: not held
    assert acc == [5, {5: 1}]
    c = CountDistinctWithRetract()
    acc = c.retract(c.create(), "a")
    assert c.result(acc) == 0 and c.result(c.add(c.add(acc, "a"), "a")) == 1


@pytest.mark.parametrize("accumulator", [SumWithRetract(), MinWithRetract(), MaxWithRetract(), CountDistinctWithRetract()])
def test_merge_of_retracting_accumulators_never_modifies_its_second_argument(accumulator):
    a = accumulator.add(accumulator.add(accumulator.create(), 1), 3)
    b = accumulator.retract(accumulator.add(accumulator.add(accumulator.create(), 3), 2), 2)
    frozen = decode(encode(b))
    merged = accumulator.merge(a, b)
    assert b == frozen
    assert accumulator.result(merged) == {SumWithRetract: 7, MinWithRetract: 1, MaxWithRetract: 3,
                                          CountDistinctWithRetract: 2}[type(accumulator)]


def test_a_value_that_cannot_be_taken_changes_nothing():
    """The group aggregate undoes a half-applied row; each accumulator raises before changing its state."""
    for accumulator, good, bad in [(MinWithRetract(), 1, "x"), (MaxWithRetract(), 1, "x"),
                                   (SumWithRetract(), 1, "x"), (CountDistinctWithRetract(), 1, [1])]:
        acc = accumulator.add(accumulator.create(), good)
        before = decode(encode(acc))
        with pytest.raises(TypeError):
            accumulator.add(acc, bad)
        assert acc == before, accumulator


def test_which_accumulators_retract():
    assert [can_retract(a) for a in (CountStar(), Count(), Avg(), Sum(), Min(), Max(), CountDistinct())] == [
        True, True, True, False, False, False, False]
    assert [type(with_retraction(a)).__name__ for a in (Sum(), Min(), Max(), CountDistinct(), Avg())] == [
        "SumWithRetract", "MinWithRetract", "MaxWithRetract", "CountDistinctWithRetract", "Avg"]
    plain = FunctionAccumulator(create=list, add=lambda a, v: [*a, v], merge=lambda a, b: a + b, result=len)
    assert not can_retract(plain) and with_retraction(plain) is plain
    undo = FunctionAccumulator(create=list, add=lambda a, v: [*a, v], merge=lambda a, b: a + b, result=len,
                               retract=lambda a, v: [x for i, x in enumerate(a) if i != a.index(v)])
    assert can_retract(undo) and undo.result(undo.retract(undo.add(undo.create(), 1), 1)) == 0


def test_the_window_accumulators_behave_as_before():
    """Adding retraction changed no existing accumulator's add / merge / result."""
    assert Sum().add(None, 2) == 2 and Sum().result(Sum().create()) is None
    assert Min().add(Min().add(None, 3), 1) == 1 and Max().merge(3, 5) == 5
    assert CountDistinct().create() == set() and Avg().create() == [None, 0]
