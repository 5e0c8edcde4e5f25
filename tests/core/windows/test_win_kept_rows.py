"""Kept rows (the ``Collect`` accumulator) and grouping sets, engine-free.

A window aggregation the core does not accumulate keeps each window's rows and emits them when the window fires
(:class:`timeweave.spark.window_streaming.WindowQuery`): the operator with ``Collect`` must emit, per window, exactly
the rows the window TVF puts in it (:func:`timeweave.core.windows.batch.assign_windows`), whatever the arrival
order and step split, HOP and CUMULATE slices merged, sessions bridged, state through the codec.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timeweave.core.errors import SpecError
from timeweave.core.state import END_OF_TIME, InMemoryKeyContext
from timeweave.core.state_codec import decode_cell, encode_cell
from timeweave.core.windows import WindowAggregateOperator, WindowRow, assign_windows, cumulate, hop, session, tumble
from timeweave.core.windows.accumulators import AggregateCall, Collect
from timeweave.core.windows.calls import accumulates
from timeweave.core.windows.grouping import GroupingSets

SPECS = {"tumble": tumble(10), "hop": hop(5, 15), "cumulate": cumulate(5, 20), "session": session(7)}


def _kept(spec, rows, steps: list[int]) -> dict[tuple[int, int], list[str]]:
    op = WindowAggregateOperator(spec, [AggregateCall(Collect(), "id", name="rows")], time_column="t")
    ctx = InMemoryKeyContext()
    out: dict[tuple[int, int], list[str]] = {}

    def collect(outputs) -> None:
        for o in outputs:
            assert isinstance(o, WindowRow), o  # no watermark moves here: nothing is late
            assert (o.start, o.end) not in out, "a window fired twice"
            out[(o.start, o.end)] = o.values[0]

    at = 0
    for size in steps:
        collect(op.process_elements(ctx, rows[at:at + size]))
        ctx.values, ctx.timer_set, _ = decode_cell(encode_cell(ctx.values, ctx.timer_set, 0))  # a checkpoint
        at += size
    collect(op.process_elements(ctx, rows[at:]))
    ctx.current_watermark = END_OF_TIME
    collect(op.on_watermark(ctx))
    return out


@pytest.mark.parametrize("name", list(SPECS))
@given(st.lists(st.integers(0, 80), max_size=40), st.lists(st.integers(1, 6), max_size=8))
def test_kept_rows_are_the_tvfs_rows_of_each_window(name: str, times: list[int], steps: list[int]) -> None:
    rows = [{"id": f"r{i}", "t": t} for i, t in enumerate(times)]
    random.Random(len(times)).shuffle(rows)  # arrival order is not time order
    got = _kept(SPECS[name], rows, steps)
    expected: dict[tuple[int, int], list[str]] = {}
    for row, window in assign_windows(SPECS[name], rows, time_column="t").rows:
        expected.setdefault((window.start, window.end), []).append(row["id"])
    assert {w: sorted(ids) for w, ids in got.items()} == {w: sorted(ids) for w, ids in expected.items()}


def test_collect_merges_without_touching_the_merged_slice() -> None:
    c = Collect()
    part = c.add(c.create(), "a")
    first = c.merge(c.create(), part)
    second = c.merge(c.add(c.create(), "b"), part)
    assert (first, second, part) == (["a"], ["b", "a"], ["a"])


def test_which_aggregates_the_core_accumulates() -> None:
    assert all(accumulates(t) for t in ("COUNT(*)", "count(x)", "SUM(`a b`)", "AVG(p) FILTER (WHERE f)",
                                        "COUNT(DISTINCT k)", "max(ts)"))
    assert not any(accumulates(t) for t in ("SUM(DISTINCT x)", "MIN(*)", "SUM(p * 2)", "STDDEV(v)", "median(v)",
                                            "COUNT(*) FILTER (WHERE v > 1)", "SUM(x) + 1", 7, None))


def test_grouping_sets_forms_and_errors() -> None:
    assert GroupingSets.of([["a", "b"], ["a"], []]).keys == ("a", "b")
    assert GroupingSets.of([["b"], ["a", "b"]]).common == ("b",)
    assert GroupingSets.of(rollup=["a"]).sets == (("a",), ())
    assert len(GroupingSets.of(cube=["a", "b", "c"]).sets) == 8
    for kwargs, message in [
        ({}, "give exactly one of grouping_sets, rollup, cube; got none"),
        ({"grouping_sets": [["a"]], "rollup": ["a"]}, "give exactly one of"),
        ({"grouping_sets": []}, "expected a non-empty list of sets"),
        ({"grouping_sets": "a"}, "expected a non-empty list of sets"),
        ({"grouping_sets": [["a", "A"]]}, "set 1: a column is named twice"),
        ({"grouping_sets": [["a"], [3]]}, "set 2: expected column names, got 3"),
        ({"grouping_sets": [["a", "b"], ["b", "a"]]}, r"set 2 \['b', 'a'\] repeats set 1"),
        ({"rollup": []}, "ROLLUP needs at least one column"),
        ({"cube": [f"c{i}" for i in range(11)]}, "CUBE of 11 columns is 2048 grouping sets"),
    ]:
        with pytest.raises(SpecError, match=message):
            GroupingSets.of(**kwargs)
