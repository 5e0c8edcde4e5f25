"""Batch evaluation and the TVF's row assignment; windows cascade on window_time."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from timeweave.core.state import InMemoryKeyContext
from timeweave.core.windows import (
    AggregateCall,
    CountStar,
    Slicing,
    Sum,
    Window,
    WindowAggregateOperator,
    assign_windows,
    cumulate,
    evaluate,
    hop,
    session,
    sessionize,
    tumble,
)


def test_assign_windows_aligned_and_dead_letters() -> None:
    rows = [{"t": 7}, {"t": None}, {"t": 12}]
    assigned = assign_windows(hop(5, 10), rows, time_column="t")
    assert [(r["t"], w) for r, w in assigned.rows] == [(7, Window(0, 10)), (7, Window(5, 15)), (12, Window(5, 15)),
                                                      (12, Window(10, 20))]
    assert [d.reason for d in assigned.dead_letters] == ["NULL event time column t"]


@given(st.lists(st.tuples(st.integers(-50, 50), st.sampled_from("xy")), max_size=30), st.integers(1, 10))
def test_assigned_sessions_are_the_sessions_of_each_partition(events, gap) -> None:
    rows = [{"t": t, "k": k} for t, k in events]
    assigned = assign_windows(session(gap, "k"), rows, time_column="t")
    assert [r for r, _ in assigned.rows] == rows
    for key in "xy":
        sessions = sessionize([t for t, k in events if k == key], gap)
        assert sorted({w for r, w in assigned.rows if r["k"] == key}) == sessions
        assert all(w.contains(r["t"]) for r, w in assigned.rows)


@given(st.lists(st.integers(0, 200), max_size=40))
def test_batch_counts_match_the_tvf_rows(times) -> None:
    for spec in (tumble(10), hop(5, 20), cumulate(5, 20), session(4)):
        rows = [{"t": t} for t in times]
        result = evaluate(spec, [AggregateCall(CountStar(), name="n")], rows, time_column="t")
        pairs = assign_windows(spec, rows, time_column="t").rows
        assert {row.window: row.values[0] for _, row in result.rows} == {
            w: sum(1 for _, x in pairs if x == w) for _, w in pairs}


def test_windows_cascade_on_window_time() -> None:
    """window_time is a time attribute: a 10-minute TUMBLE over 5-minute windows' results (on window_time)
    counts what a 10-minute TUMBLE over the rows counts, in streaming and batch."""
    times = [1, 3, 4, 6, 9, 11, 12, 19, 25, 33]
    rows = [{"t": t, "v": 1} for t in times]
    inner = WindowAggregateOperator(tumble(5), [AggregateCall(CountStar(), name="n")], time_column="t")
    outer = WindowAggregateOperator(tumble(10), [AggregateCall(Sum(), lambda r: r.values[0], name="n")],
                                    time_column="window_time", time_of=lambda r: r.time)
    a, b = InMemoryKeyContext(), InMemoryKeyContext()
    inner_rows = []
    for row in rows:
        inner_rows += inner.process_elements(a, [row])
        a.current_watermark = row["t"] * 1000
        inner_rows += inner.on_watermark(a)
    inner_rows += inner.finish(a)
    assert [(r.window, r.values[0]) for r in outer.process_elements(b, inner_rows) + outer.finish(b)] == [
        (Window(0, 10), 5), (Window(10, 20), 3), (Window(20, 30), 1), (Window(30, 40), 1)]
    direct = evaluate(tumble(10), [AggregateCall(CountStar(), name="n")], rows, time_column="t")
    assert [(r.window, r.values[0]) for _, r in direct.rows] == [
        (Window(0, 10), 5), (Window(10, 20), 3), (Window(20, 30), 1), (Window(30, 40), 1)]
    assert Slicing.of(tumble(10)).windows_of(Window(5, 10).time) == [Window(0, 10)]
