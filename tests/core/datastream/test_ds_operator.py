"""The DataStream window operator: allowed lateness (late firings, then the late output), sessions merging (a late
element bridging two fired sessions), dead letters naming the failing step, process functions' state, window_all,
the state layout and codec, bad specs, and seed 002's examples."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.helpers.datastream_harness import Harness, Sum, brief, rows
from timeweave.core.datastream import (
    AggregateFunction,
    ProcessWindowFunction,
    Session,
    Sliding,
    StateValueError,
    Tumbling,
    WindowOperator,
    aggregate,
    process,
    reduce,
    window_all,
)
from timeweave.core.datastream.triggers import Count, EventTime
from timeweave.core.errors import SpecError
from timeweave.core.operator import KeyedOperator, Tag, run_keyed
from timeweave.core.state import END_OF_TIME, InMemoryKeyContext
from timeweave.core.windows.spec import Window


def summing(assigner, **options) -> Harness:
    options.setdefault("time_column", "t")
    return Harness(WindowOperator(assigner, aggregate(Sum()), key_by="k", **options))


# -- allowed lateness -----------------------------------------------------------------------------------------
def test_lateness_late_firings_until_cleanup_then_the_late_output_with_the_watermark_at_arrival() -> None:
    h = summing(Tumbling.of(10), allowed_lateness=5)
    h.send("a", rows((1, 1), (2, 2)))
    h.advance(9)                                # on time: 3
    h.send("a", rows((3, 4)))                   # late, within the lateness: fires at once with 7
    h.advance(13)
    h.send("a", rows((4, 8)))                   # 4 + 5 > 13: still in (cleanup at 9 + 5 = 14)
    h.advance(14)                               # cleanup: the window's state goes
    h.send("a", rows((5, 16)))                  # 5 + 5 <= 14: late output
    assert [brief(f) for f in h.firings] == [("a", 0, 10, (3,), "on_time", 0), ("a", 0, 10, (7,), "late", 1),
                                             ("a", 0, 10, (15,), "late", 2)]
    assert [f.replaces_previous for f in h.firings] == [False, True, True]
    assert [f.at for f in h.firings] == [9, 9, 13]
    (late,) = h.late
    assert (late.key, late.row["v"], late.time, late.watermark, late.allowed_lateness) == ("a", 16, 5, 14, 5)
    assert late.reason == ("late: event time 1970-01-01 00:00:00.005 + allowed lateness 5 ms <= watermark "
                           "1970-01-01 00:00:00.014 at its arrival: every window of the element had been cleaned up")
    assert h.contexts["a"].is_empty()


def test_without_lateness_the_on_time_firing_and_the_cleanup_share_one_timer() -> None:
    h = summing(Tumbling.of(10))
    h.send("a", rows((1, 1)))
    assert h.contexts["a"].values["ds-event-timers"] == [[9, 0, 10]] and h.contexts["a"].timers() == [9000]
    h.advance(9)
    h.send("a", rows((9, 2)))
    assert [brief(f) for f in h.firings] == [("a", 0, 10, (1,), "on_time", 0)] and len(h.late) == 1


def test_a_sliding_element_late_for_one_window_still_counts_in_the_others_and_is_not_late_output() -> None:
    h = summing(Sliding.of(10, 5))
    h.advance(9)                                 # [0, 10) is cleaned up at 9; [5, 15) is open
    h.send("a", rows((7, 1)))
    h.advance(14)
    assert [brief(f) for f in h.firings] == [("a", 5, 15, (1,), "on_time", 0)] and h.late == []


def test_late_firings_of_several_windows_of_one_element_come_newest_window_first() -> None:
    h = summing(Sliding.of(10, 5), allowed_lateness=100)
    h.send("a", rows((7, 1)))
    h.advance(20)
    h.send("a", rows((8, 2)))
    assert [brief(f) for f in h.firings[2:]] == [("a", 5, 15, (3,), "late", 1), ("a", 0, 10, (3,), "late", 1)]


# -- sessions -------------------------------------------------------------------------------------------------
def test_session_merge_merges_the_count_triggers_state() -> None:
    h = summing(Session.of(20), trigger=Count(3))
    h.send("a", rows((0, 1), (30, 2)))
    assert h.firings == []
    h.send("a", rows((15, 4)))  # [15, 35) bridges [0, 20) and [30, 50): counts 1 + 1, then + 1
    assert [brief(f) for f in h.firings] == [("a", 0, 50, (7,), "early", 0)]


def test_a_late_element_bridging_two_fired_sessions_merges_them_and_fires_late() -> None:
    h = summing(Session.of(10), allowed_lateness=100)
    h.send("a", rows((0, 1), (15, 2)))
    h.advance(30)                                # both sessions fire on time
    h.send("a", rows((8, 4)))                    # [8, 18) bridges [0, 10) and [15, 25)
    merged = h.firings[2]
    assert [brief(f) for f in h.firings] == [("a", 0, 10, (1,), "on_time", 0), ("a", 15, 25, (2,), "on_time", 0),
                                             ("a", 0, 25, (7,), "late", 0)]
    assert merged.merged_from == (Window(0, 10), Window(15, 25)) and not merged.replaces_previous
    h.send("a", rows((12, 8)))                   # inside the merged session: a late firing replacing the last
    assert [(f.values, f.sequence, f.replaces_previous, f.merged_from) for f in h.firings[3:]] == [((15,), 1, True, ())]
    assert h.contexts["a"].values["ds-event-timers"] == [[124, 0, 25]]  # only the merged window's cleanup
    h.advance(124)
    assert h.contexts["a"].is_empty()


def test_sessions_with_a_per_element_gap() -> None:
    h = summing(Session.of(lambda row: row["gap"]))
    h.send("a", [{"k": "a", "t": 0, "v": 1, "gap": 5}, {"k": "a", "t": 7, "v": 2, "gap": 1},
                 {"k": "a", "t": 4, "v": 4, "gap": 3}])  # [4, 7) touches [0, 5) and [7, 8)
    h.advance(END_OF_TIME)
    assert [brief(f) for f in h.firings] == [("a", 0, 8, (7,), "on_time", 0)]


# -- dead letters -----------------------------------------------------------------------------------------------
def test_user_function_errors_dead_letter_the_element_with_the_step_and_the_key_goes_on() -> None:
    def picky(a, b):
        if b["v"] == "x":
            raise ValueError("not a number")
        return {**a, "v": a["v"] + b["v"]}

    h = Harness(WindowOperator(Session.of(lambda row: row["gap"]), reduce(picky), time_column="t", key_by="k"))
    h.send("a", [{"k": "a", "t": 0, "v": 1, "gap": 5}, {"k": "a", "t": 1, "v": "x", "gap": 5},
                 {"k": "a", "t": 2, "v": 2, "gap": "?"}, {"k": "a", "t": None, "v": 2, "gap": 5},
                 {"k": "a", "t": 3, "v": 4, "gap": 5}])
    h.advance(END_OF_TIME)
    assert [(d.row["v"], d.step, d.reason) for d in h.dead] == [
        ("x", "reduce function", "reduce function raised ValueError: not a number"),
        (2, "session gap function", "session gap function raised TypeError: DynamicEventTimeSessionWindows: the gap "
                                    "function must return integer ms or a timedelta, got '?'"),
        (2, "event time", "NULL event time column t")]
    assert [(f.window, f.values[0]["v"]) for f in h.firings] == [(Window(0, 8), 5)]


def test_a_dead_letter_bridges_no_sessions() -> None:
    class Fussy(Sum):
        def add(self, value, acc):
            if value["v"] < 0:
                raise ArithmeticError("negative")
            return acc + value["v"]

    h = Harness(WindowOperator(Session.of(10), aggregate(Fussy()), time_column="t", key_by="k"))
    h.send("a", rows((0, 1), (15, 2), (8, -1)))
    h.advance(END_OF_TIME)
    assert [brief(f) for f in h.firings] == [("a", 0, 10, (1,), "on_time", 0), ("a", 15, 25, (2,), "on_time", 0)]
    assert [(d.step, d.row["v"]) for d in h.dead] == [("aggregate add", -1)]


def test_failing_firing_functions_dead_letter_the_firing_with_the_window() -> None:
    class Boom(ProcessWindowFunction):
        def process(self, key, context, elements):
            raise KeyError("missing")

    h = Harness(WindowOperator(Tumbling.of(10), process(Boom()), time_column="t", key_by="k"))
    h.send("a", rows((1, 1)))
    h.send("a", [{"k": "a", "t": 12, "v": 1}])
    h.advance(END_OF_TIME)
    assert [(d.row, d.step, d.window) for d in h.dead] == [(None, "process function", Window(0, 10)),
                                                           (None, "process function", Window(10, 20))]
    assert h.contexts["a"].is_empty()  # the windows still went at their cleanup time

    class BadResult(Sum):
        def result(self, acc):
            return 1 / 0

    h = Harness(WindowOperator(Tumbling.of(10), aggregate(BadResult()), time_column="t", key_by="k"))
    h.send("a", rows((1, 1)))
    h.advance(9)
    assert [(d.step, d.reason) for d in h.dead] == [("aggregate result",
                                                     "aggregate result raised ZeroDivisionError: division by zero")]


def test_a_failing_key_selector_is_a_dead_letter() -> None:
    h = Harness(WindowOperator(Tumbling.of(10), aggregate(Sum()), time_column="t", key_by=lambda row: row["user"]))
    h.send("a", rows((1, 1)))
    assert [(d.step, d.reason) for d in h.dead] == [("key selector", "key selector raised KeyError: 'user'")]


def test_a_sliding_gap_is_a_dead_letter_not_silently_dropped() -> None:
    h = summing(Sliding.of(2, 5))
    h.send("a", rows((3, 1)))
    assert [(d.step, d.reason) for d in h.dead] == [
        ("window assigner", "SlidingEventTimeWindows: time 1970-01-01 00:00:00.003 falls in no window (size < slide "
                            "leaves gaps)")]


# -- process functions and state --------------------------------------------------------------------------------
def test_process_function_sees_the_window_clocks_and_keeps_per_window_and_per_key_state() -> None:
    seen: list = []

    class Counting(ProcessWindowFunction):
        def process(self, key, context, elements):
            context.window_state["firings"] = context.window_state.get("firings", 0) + 1
            context.global_state["total"] = context.global_state.get("total", 0) + len(elements)
            yield (key, context.window.start, context.current_watermark, context.window_state["firings"],
                   context.global_state["total"])

        def clear(self, context):
            seen.append((context.window, dict(context.window_state)))

    h = Harness(WindowOperator(Tumbling.of(10), process(Counting()), time_column="t", key_by="k", allowed_lateness=5))
    h.send("a", rows((1, 1), (2, 2)))
    h.advance(9)
    h.send("a", rows((3, 3)))
    h.advance(14)
    h.send("a", rows((15, 1)))
    h.advance(END_OF_TIME)
    assert [f.values for f in h.firings] == [(("a", 0, 9, 1, 2),), (("a", 0, 9, 2, 5),),
                                             (("a", 10, END_OF_TIME, 1, 6),)]
    assert seen == [(Window(0, 10), {"firings": 2}), (Window(10, 20), {"firings": 1})]
    assert h.contexts["a"].values == {"ds-key": "a", "ds-global": {"total": 6}}


def test_aggregate_then_process_gets_the_one_result() -> None:
    # seed 002's FoldFunction + WindowFunction example (fold is gone from Flink: aggregate then process)
    op = WindowOperator(Tumbling.of(10), aggregate(Sum(), process=lambda key, ctx, counts: [(key, ctx.window.end,
                                                                                             counts[0])]),
                        time_column="t", key_by="k")
    out = run_keyed(op, [("a", r) for r in rows((1, 1), (2, 2))], [END_OF_TIME])
    assert [f.values for f in out[Tag.MAIN]] == [(("a", 10, 3),)]


def test_a_value_the_codec_cannot_store_is_named_at_the_first_snapshot() -> None:
    class Opaque:
        pass

    class Holder(AggregateFunction):
        def create(self):
            return Opaque()

        def add(self, value, acc):
            return acc

    op = WindowOperator(Tumbling.of(10), aggregate(Holder()), time_column="t")
    ctx = InMemoryKeyContext()
    op.process_elements(ctx, rows((1, 1)))
    with pytest.raises(StateValueError, match=r"DataStream window state 'ds-windows' cannot be stored: timeweave state "
                                              r"cannot hold a .*Opaque value"):
        op.layout.snapshot(ctx)


def test_state_round_trips_through_the_layout_and_codec_mid_window() -> None:
    h = summing(Session.of(10), trigger=EventTime().with_early(Count(2)), allowed_lateness=3)
    h.send("a", rows((0, 1), (5, 2), (30, 4)))
    h.restore()
    assert h.contexts["a"].timers() == []  # a restored context has no timers: the next call registers them
    h.advance(14)
    assert h.contexts["a"].timers() == [17_000]  # [0, 15)'s cleanup (14 + 3), before [30, 40)'s end
    h.send("a", rows((3, 8)))
    h.restore()
    h.advance(END_OF_TIME)
    assert [brief(f) for f in h.firings] == [("a", 0, 15, (3,), "early", 0), ("a", 0, 15, (3,), "on_time", 1),
                                             ("a", 0, 15, (11,), "late", 2), ("a", 30, 40, (4,), "on_time", 0)]


def test_the_operator_is_a_keyed_operator_with_declared_state() -> None:
    op = WindowOperator(Session.of(5), aggregate(Sum()), time_column="t")
    assert isinstance(op, KeyedOperator) and op.layout.version == 1
    ctx = InMemoryKeyContext()
    op.process_elements(ctx, rows((1, 1)))
    with pytest.raises(Exception, match="'x' is not declared"):
        op.layout.restore(InMemoryKeyContext(), {**op.layout.snapshot(ctx), "x": 1})


def test_window_all_is_one_key_firings_carry_none() -> None:
    op = window_all(Tumbling.of(10), aggregate(Sum()), time_column="t")
    out = run_keyed(op, [((), r) for r in rows((1, 1), (2, 2), key="x") + rows((3, 4), key="y")], [END_OF_TIME])
    assert [(f.key, f.values) for f in out[Tag.MAIN]] == [(None, (7,))]
    with pytest.raises(SpecError, match="window_all has no key"):
        window_all(Tumbling.of(10), aggregate(Sum()), time_column="t", key_by="k")


def test_event_times_as_timestamps() -> None:
    h = summing(Tumbling.of("1 min"))
    h.send("a", [{"k": "a", "t": datetime(2020, 4, 15, 8, 0, 30), "v": 1}])
    h.advance(END_OF_TIME)
    assert h.firings[0].window.start == 1_586_937_600_000


# -- bad specs ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("build", "message"), [
    (lambda: WindowOperator(Tumbling.of(5), aggregate(Sum()), time_column="t", allowed_lateness="-1 s"),
     "argument 'allowed_lateness': the allowed lateness cannot be negative, got -1000 ms"),
    (lambda: WindowOperator(Tumbling.of(5, processing_time=True), aggregate(Sum()), allowed_lateness=5),
     "allowed lateness applies to event-time windows; TumblingProcessingTimeWindows is not"),
    (lambda: WindowOperator(Tumbling.of(5), aggregate(Sum())),
     "argument 'time_column': TumblingEventTimeWindows needs the event time"),
    (lambda: WindowOperator(Tumbling.of(5), Sum(), time_column="t"),
     "argument 'function': expected reduce(...), aggregate(...) or process(...)"),
    (lambda: WindowOperator("TUMBLE", aggregate(Sum()), time_column="t"), "argument 'assigner': expected Tumbling"),
    (lambda: WindowOperator(Tumbling.of(5), aggregate(Sum()), time_column="t", key_by=3), "argument 'key_by'"),
    (lambda: aggregate(object()), "lacks create, add, merge, result"),
    (lambda: reduce(None), "argument 'reduce': expected a function of two elements"),
    (lambda: process(None), "argument 'process'"),
])
def test_bad_operator_specs_are_named(build, message) -> None:
    with pytest.raises(SpecError) as caught:
        build()
    assert message in str(caught.value)


# -- seed 002's examples ---------------------------------------------------------------------------------------------
def test_seed_002_reduce_function_sums_the_second_field() -> None:
    # input.keyBy(...).window(...).reduce((v1, v2) -> new Tuple2<>(v1.f0, v1.f1 + v2.f1))
    op = WindowOperator(Tumbling.of("5 s"), reduce(lambda v1, v2: (v1[0], v1[1] + v2[1])),
                        time_of=lambda element: element[2], key_by=lambda element: element[0])
    elements = [("a", 1, 1000), ("a", 2, 2000), ("b", 5, 3000), ("a", 3, 6000)]
    out = run_keyed(op, [(e[0], e) for e in elements], [END_OF_TIME])
    assert sorted((f.key, f.window.start, f.values) for f in out[Tag.MAIN]) == [
        ("a", 0, (("a", 3),)), ("a", 5000, (("a", 3, 6000),)), ("b", 0, (("b", 5, 3000),))]


def test_seed_002_window_function_counts_elements_and_names_the_window() -> None:
    # MyWindowFunction: out.collect("Window: " + window + "count: " + count)
    op = WindowOperator(Tumbling.of("5 s"), process(lambda key, ctx, elements: [
        f"Window: {ctx.window} count: {len(elements)}"]), time_column="t", key_by="k")
    out = run_keyed(op, [("a", r) for r in rows((1000, 1), (1500, 1))], [END_OF_TIME])
    assert [f.values for f in out[Tag.MAIN]] == [("Window: Window(start=0, end=5000) count: 2",)]


def test_seed_002_incremental_reduce_with_a_window_function_gives_the_minimum_and_the_window_start() -> None:
    # reduce(r1.value() > r2.value() ? r2 : r1, (key, window, minReadings, out) -> (window.getStart(), min))
    op = WindowOperator(Tumbling.of("5 s"), reduce(lambda r1, r2: r2 if r1["value"] > r2["value"] else r1,
                                                   process=lambda key, ctx, mins: [(ctx.window.start, mins[0])]),
                        time_column="t", key_by="id")
    readings = [{"id": "s1", "t": 5500, "value": 3.5}, {"id": "s1", "t": 6000, "value": 1.5},
                {"id": "s1", "t": 9000, "value": 2.5}]
    out = run_keyed(op, [("s1", r) for r in readings], [END_OF_TIME])
    assert [f.values for f in out[Tag.MAIN]] == [((5000, readings[1]),)]


def test_seed_002_allowed_lateness_with_the_late_data_side_output() -> None:
    # .allowedLateness(<time>).sideOutputLateData(lateOutputTag): late firings are corrections; later rows go to the
    # side output (here: the LATE tag), with the reason
    h = summing(Tumbling.of("1 min"), allowed_lateness="30 s")
    h.send("a", rows((10_000, 1)))
    h.advance(60_000)
    h.send("a", rows((20_000, 2)))               # within the lateness: a late firing, a correction of the first
    h.advance(89_999)
    h.send("a", rows((30_000, 4)))               # 60 s window + 30 s lateness have passed: side output
    assert [(f.values, f.kind.value) for f in h.firings] == [((1,), "on_time"), ((3,), "late")]
    assert [(r.row["v"], r.watermark) for r in h.late] == [(4, 89_999)]


def test_a_falsy_key_is_kept_for_timer_driven_firings() -> None:
    h = Harness(WindowOperator(Tumbling.of(10), aggregate(Sum()), time_column="t", key_by="k"))
    h.send(0, [{"k": 0, "t": 1, "v": 1}])
    h.restore()
    assert [f.key for f in h.advance(END_OF_TIME)] == [0]


def test_an_unreadable_event_time_is_a_dead_letter_not_a_crash() -> None:
    h = summing(Tumbling.of(10))
    h.send("a", [{"k": "a", "t": "yesterday", "v": 1}, {"k": "a", "v": 1}, {"k": "a", "t": 1, "v": 2}])
    assert [(d.step, d.reason) for d in h.dead] == [
        ("event time", "event time raised SpecError: argument 'time': an event time must be a timestamp or integer "
                       "epoch milliseconds, got 'yesterday'"),
        ("event time", "event time raised KeyError: 't'")]
    h = Harness(WindowOperator(Tumbling.of(10), aggregate(Sum()), time_of=lambda row: row["t"] / 2, key_by="k"))
    h.send("a", rows((1, 1)))
    assert [(d.step, d.reason) for d in h.dead] == [
        ("event time", "event time raised TypeError: time_of must give integer epoch ms or None, got 0.5")]


def test_a_gap_function_giving_sub_millisecond_gaps_dead_letters_the_element() -> None:
    h = summing(Session.of(lambda row: row["gap"]))
    h.send("a", [{"k": "a", "t": 1, "v": 1, "gap": timedelta(microseconds=1500)}])
    assert [d.step for d in h.dead] == ["session gap function"] and "not a whole number" in h.dead[0].reason
