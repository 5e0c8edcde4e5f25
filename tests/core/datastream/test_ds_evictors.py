"""DataStream evictors through the window operator (Flink's CountEvictor, TimeEvictor, DeltaEvictor, before and
after the window function), what they see (TimestampedValue), and that an evictor keeps every element."""

from __future__ import annotations

import pytest

from tests.helpers.datastream_harness import Harness, Sum, brief, rows
from timeweave.core.datastream import Global, Session, Tumbling, WindowOperator, aggregate, process, reduce
from timeweave.core.datastream.evictors import Count, Delta, Evictor, Time, TimestampedValue
from timeweave.core.datastream.triggers import Count as CountTrigger
from timeweave.core.datastream.triggers import EventTime
from timeweave.core.errors import SpecError


def values(key, ctx, elements):
    return [[e["v"] for e in elements]]


def test_count_evictor_before_keeps_the_last_n_for_the_function_and_in_the_window() -> None:
    h = Harness(WindowOperator(Tumbling.of(100), process(values), evictor=Count.of(2), time_column="t", key_by="k",
                               allowed_lateness=50))
    h.send("a", rows((1, 1), (2, 2), (3, 3)))
    h.advance(99)
    h.send("a", rows((4, 4)))  # a late firing: the window kept [2, 3] after the first firing
    assert [f.values for f in h.firings] == [([2, 3],), ([3, 4],)]


def test_count_evictor_after_lets_the_function_see_everything_then_trims_the_window() -> None:
    h = Harness(WindowOperator(Global.of(), process(values), trigger=CountTrigger(3), evictor=Count.of(1, after=True),
                               key_by="k"))
    h.send("a", rows((1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)))
    assert [f.values for f in h.firings] == [([1, 2, 3],), ([3, 4, 5, 6],)]


def test_time_evictor_drops_elements_at_or_before_max_timestamp_minus_size() -> None:
    h = Harness(WindowOperator(Tumbling.of(100), reduce(lambda a, b: {**a, "v": a["v"] + b["v"]}),
                               evictor=Time.of(20), time_column="t", key_by="k"))
    h.send("a", rows((5, 1), (30, 2), (50, 4), (31, 8)))  # max 50: cutoff 30 drops 5 and 30
    h.advance(99)
    assert [f.values[0]["v"] for f in h.firings] == [12]


def test_time_evictor_without_timestamps_evicts_nothing_as_flink() -> None:
    elements = [TimestampedValue("a"), TimestampedValue("b")]
    assert Time.of(1).evict_before(elements, None, None) == elements


def test_delta_evictor_with_a_delta_function_and_threshold() -> None:
    op = WindowOperator(Tumbling.of(100), process(values), evictor=Delta.of(10, lambda a, b: abs(a["v"] - b["v"])),
                        time_column="t", key_by="k")
    h = Harness(op)
    h.send("a", rows((1, 1), (2, 25), (3, 12), (4, 20)))  # last is 20: deltas 19, 5, 8, 0 -> 1 goes
    h.advance(99)
    assert [f.values for f in h.firings] == [([25, 12, 20],)]


def test_an_evictor_disables_pre_aggregation_reduce_and_aggregate_run_over_the_survivors() -> None:
    op = WindowOperator(Tumbling.of(100), aggregate(Sum()), evictor=Count.of(2), time_column="t", key_by="k")
    h = Harness(op)
    h.send("a", rows((1, 1), (2, 2), (3, 4)))
    (window,) = h.contexts["a"].values["ds-windows"]
    assert [e[0]["v"] for e in window[2]] == [1, 2, 4]  # every element is kept, with its timestamp
    assert [e[1] for e in window[2]] == [1, 2, 3]
    h.advance(99)
    assert [brief(f) for f in h.firings] == [("a", 0, 100, (6,), "on_time", 0)]


def test_evicted_elements_of_merged_sessions_are_in_window_order() -> None:
    h = Harness(WindowOperator(Session.of(10), process(values), evictor=Count.of(3), time_column="t", key_by="k"))
    h.send("a", rows((30, 3), (0, 1), (5, 2), (20, 9), (12, 7)))  # [12, 22) bridges [0, 15) and [20, 40)
    h.advance(100)
    assert [f.values for f in h.firings] == [([3, 9, 7],)]  # window order: [0, 15)'s 1, 2 then [20, 40)'s 3, 9; 7 last


def test_a_failing_evictor_dead_letters_the_firing_naming_the_window_and_keeps_the_contents() -> None:
    class Broken(Evictor):
        def evict_before(self, elements, window, ctx):
            raise RuntimeError("no")

    h = Harness(WindowOperator(Tumbling.of(100), process(values), evictor=Broken(), time_column="t", key_by="k",
                               trigger=CountTrigger(1)))
    h.send("a", rows((1, 1), (2, 2)))
    assert [(d.row, d.step, d.window.start, d.reason) for d in h.dead] == [
        (None, "evictor evict_before", 0, "evictor evict_before raised RuntimeError: no")] * 2
    assert len(h.contexts["a"].values["ds-windows"][0][2]) == 2


def test_an_evictor_returning_something_else_is_a_spec_error() -> None:
    class Wrong(Evictor):
        def evict_after(self, elements, window, ctx):
            return len(elements)

    h = Harness(WindowOperator(Tumbling.of(100), process(values), evictor=Wrong(), time_column="t", key_by="k",
                               trigger=EventTime()))
    h.send("a", rows((1, 1)))
    with pytest.raises(SpecError, match=r"Wrong\.evict_after returned 1; an evictor returns the kept elements"):
        h.advance(99)


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Count.of(0), "CountEvictor: argument 'max_count': must be a positive integer, got 0"),
    (lambda: Time.of(0), "TimeEvictor: argument 'window_size': must be greater than 0 ms, got 0"),
    (lambda: Delta.of(1, "abs"), "DeltaEvictor: argument 'delta_function': must be callable"),
    (lambda: Delta.of("1", abs), "DeltaEvictor: argument 'threshold': must be a number"),
    (lambda: WindowOperator(Tumbling.of(5), aggregate(Sum()), time_column="t", evictor=Count),
     "argument 'evictor': expected an Evictor"),
])
def test_bad_evictor_arguments_are_named(build, message) -> None:
    with pytest.raises(SpecError) as caught:
        build()
    assert message in str(caught.value)


def test_a_user_evictor_sees_timestamped_values_the_window_and_the_clocks() -> None:
    seen: list = []

    class KeepEven(Evictor):
        def evict_before(self, elements, window, ctx):
            seen.append(([(e.value["v"], e.timestamp) for e in elements], window.start, ctx.current_watermark))
            return [e for e in elements if e.value["v"] % 2 == 0]

    h = Harness(WindowOperator(Tumbling.of(100), process(values), evictor=KeepEven(), time_column="t", key_by="k"))
    h.send("a", rows((1, 1), (2, 2), (3, 4)))
    h.advance(99)
    assert seen == [([(1, 1), (2, 2), (4, 3)], 0, 99)] and [f.values for f in h.firings] == [([2, 4],)]
