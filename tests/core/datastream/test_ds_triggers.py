"""DataStream triggers through the window operator: every built-in (Flink's EventTimeTrigger, ProcessingTimeTrigger,
CountTrigger, PurgingTrigger, ContinuousEventTimeTrigger, NeverTrigger), the early-firing composition, a user
trigger with timers and merged state, and triggers answering something else than a TriggerResult."""

from __future__ import annotations

import operator

import pytest

from tests.helpers.datastream_harness import Harness, Sum, brief, rows
from timeweave.core.datastream import (
    Global,
    Session,
    Trigger,
    TriggerResult,
    TriggerState,
    Tumbling,
    WindowOperator,
    aggregate,
    process,
)
from timeweave.core.datastream.timers import TimerQueue
from timeweave.core.datastream.triggers import (
    CONTINUE,
    FIRE,
    ContinuousEventTime,
    Count,
    EventTime,
    Never,
    ProcessingTime,
    Purging,
    TriggerContext,
)
from timeweave.core.errors import SpecError
from timeweave.core.state import END_OF_TIME
from timeweave.core.windows.spec import Window


def harness(assigner, trigger=None, time_column="t", **options) -> Harness:
    return Harness(WindowOperator(assigner, aggregate(Sum()), trigger=trigger, time_column=time_column, key_by="k",
                                  **options))


def test_event_time_trigger_fires_once_when_the_watermark_reaches_max_timestamp() -> None:
    h = harness(Tumbling.of(10))
    h.send("a", rows((1, 1), (9, 2), (10, 4)))
    assert h.advance(8) == []
    assert [brief(f) for f in h.advance(9)] == [("a", 0, 10, (3,), "on_time", 0)]
    assert h.advance(18) == [] and [brief(f) for f in h.advance(END_OF_TIME)] == [("a", 10, 20, (4,), "on_time", 0)]
    assert h.contexts["a"].is_empty()


def test_processing_time_trigger_fires_when_the_hosts_clock_passes_the_window() -> None:
    h = harness(Tumbling.of(10, processing_time=True), time_column=None)
    h.advance(now_ms=3)
    h.send("a", [{"k": "a", "v": 1}, {"k": "a", "v": 2}])
    h.advance(now_ms=5)
    h.send("a", [{"k": "a", "v": 4}])
    assert h.advance(now_ms=8) == [] and h.op.next_processing_timer(h.contexts["a"]) == 9
    assert h.advance(END_OF_TIME) == []  # the watermark does not drive processing-time windows
    assert [brief(f) for f in h.advance(now_ms=9)] == [("a", 0, 10, (7,), "on_time", 0)]
    h.send("a", [{"k": "a", "v": 8}])  # the clock is at 9: window [0, 10) is gone, a new one starts
    assert [brief(f) for f in h.advance(now_ms=25)] == [("a", 0, 10, (8,), "on_time", 0)]
    assert h.contexts["a"].is_empty()


def test_a_processing_time_window_without_a_clock_is_a_clear_error() -> None:
    h = harness(Tumbling.of(10, processing_time=True), time_column=None)
    with pytest.raises(Exception, match="needs the processing time, and the host set none"):
        h.send("a", [{"k": "a", "v": 1}])


def test_count_trigger_replaces_the_time_trigger_seed_002() -> None:
    # seed 002: a CountTrigger on TumblingEventTimeWindows fires by count, no longer by time
    h = harness(Tumbling.of(100), Count.of(2))
    h.send("a", rows((1, 1), (2, 2), (3, 4)))
    assert [brief(f) for f in h.out] == [("a", 0, 100, (3,), "early", 0)]
    assert h.advance(99) == []  # no firing at the window's end: the count trigger decides
    h.send("a", rows((4, 8)))   # the window is cleaned at 99: a new one for the late row? no: it is late
    assert [o.time for o in h.late] == [4]


def test_count_window_is_global_with_a_purging_count_trigger() -> None:
    # Flink's countWindow(3): GlobalWindows + PurgingTrigger.of(CountTrigger.of(3))
    h = harness(Global.of(), Purging.of(Count.of(3)), time_column=None)
    h.send("a", rows(*((i, i) for i in range(1, 8))))
    assert [(f.values, f.sequence, f.purged, f.replaces_previous) for f in h.firings] == [
        ((6,), 0, True, False), ((15,), 1, True, False)]
    assert h.advance(END_OF_TIME) == []  # one element waits; the global window never ends


def test_global_window_default_never_trigger_never_fires() -> None:
    h = harness(Global.of(), time_column=None)
    h.send("a", rows((1, 1), (2, 2)))
    assert h.advance(END_OF_TIME) == [] and h.contexts["a"].values["ds-windows"]


def test_purging_event_time_trigger_then_a_late_element_fires_alone() -> None:
    h = harness(Tumbling.of(10), Purging.of(EventTime()), allowed_lateness=5)
    h.send("a", rows((1, 1), (2, 2)))
    h.advance(9)
    h.send("a", rows((3, 4)))
    assert [(brief(f), f.purged, f.replaces_previous) for f in h.firings] == [
        (("a", 0, 10, (3,), "on_time", 0), True, False), (("a", 0, 10, (4,), "late", 1), True, False)]


def test_continuous_event_time_fires_every_interval_and_at_the_end() -> None:
    h = harness(Tumbling.of(100), ContinuousEventTime.of(30))
    h.send("a", rows((5, 1)))
    assert [brief(f) for f in h.advance(29)] == []
    assert [brief(f) for f in h.advance(30)] == [("a", 0, 100, (1,), "early", 0)]
    h.send("a", rows((40, 2)))
    assert [brief(f) for f in h.advance(99)] == [("a", 0, 100, (3,), "early", 1), ("a", 0, 100, (3,), "early", 2),
                                                 ("a", 0, 100, (3,), "on_time", 3)]
    assert [f.at for f in h.firings] == [30, 60, 90, 99]  # the timers' times, not the watermark that reached them


def test_continuous_event_time_aligns_with_javas_remainder_before_1970() -> None:
    # Flink: timestamp - (timestamp % interval) with Java's %, so -57 aligns to -50 (not -60): first fire at -40
    h = harness(Tumbling.of(100), ContinuousEventTime.of(10))
    h.send("a", rows((-57, 1)))
    assert h.advance(-41) == [] and [f.at for f in h.advance(-40)] == [-40]


def test_with_early_count_fires_early_then_on_time_then_late_from_the_event_time_trigger() -> None:
    h = harness(Tumbling.of(100), EventTime().with_early(Count(2)), allowed_lateness=50)
    h.send("a", rows((1, 1), (2, 2), (3, 4)))
    h.advance(99)
    h.send("a", rows((4, 8)))
    assert [brief(f) for f in h.firings] == [("a", 0, 100, (3,), "early", 0), ("a", 0, 100, (7,), "on_time", 1),
                                             ("a", 0, 100, (15,), "late", 2)]
    assert all(f.replaces_previous for f in h.firings[1:])


class Deadline(Trigger):
    """A user trigger: FIRE at the third element of a window, or 10 ms of event time after its first element."""

    COUNT = TriggerState("n", operator.add)
    DEADLINE = TriggerState("deadline", min)

    def on_element(self, element, timestamp, window, ctx):
        count = ctx.get_partitioned_state(self.COUNT)
        count.add(1)
        deadline = ctx.get_partitioned_state(self.DEADLINE)
        if deadline.get() is None:
            deadline.add(timestamp + 10)
            ctx.register_event_time_timer(timestamp + 10)
        return FIRE if count.get() >= 3 else CONTINUE

    def on_event_time(self, time, window, ctx):
        return FIRE if ctx.get_partitioned_state(self.DEADLINE).get() == time else CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        ctx.merge_partitioned_state(self.COUNT)
        ctx.merge_partitioned_state(self.DEADLINE)
        ctx.register_event_time_timer(ctx.get_partitioned_state(self.DEADLINE).get())

    def clear(self, window, ctx):
        deadline = ctx.get_partitioned_state(self.DEADLINE)
        if deadline.get() is not None:
            ctx.delete_event_time_timer(deadline.get())
        deadline.clear()
        ctx.get_partitioned_state(self.COUNT).clear()


def test_user_trigger_state_merges_when_sessions_merge_and_its_timers_move_to_the_merged_window() -> None:
    h = harness(Session.of(100), Deadline())
    h.send("a", rows((0, 1), (150, 2)))  # two sessions, count 1 each, deadlines 10 and 160
    state = h.contexts["a"].values
    assert [w[3] for w in state["ds-windows"]] == [{"n": 1, "deadline": 10}, {"n": 1, "deadline": 160}]
    h.send("a", rows((80, 4)))  # [80, 180) bridges [0, 100) and [150, 250): merged count 1 + 1, then + 1 = 3
    assert [brief(f) for f in h.firings] == [("a", 0, 250, (7,), "early", 0)]
    assert h.contexts["a"].values["ds-windows"][0][3] == {"n": 3, "deadline": 10}
    assert h.contexts["a"].values["ds-event-timers"] == [[10, 0, 250], [249, 0, 250]]
    # the merged windows' own timers (10 on [0, 100), 160 on [150, 250)) were deleted by clear
    assert [brief(f) for f in h.advance(10)] == [("a", 0, 250, (7,), "early", 1)]


def test_merging_state_without_a_merge_function_is_a_dead_letter_naming_on_merge() -> None:
    class NoMerge(Deadline):
        COUNT = TriggerState("n")

        def on_element(self, element, timestamp, window, ctx):
            state = ctx.get_partitioned_state(self.COUNT)
            state.update((state.get() or 0) + 1)
            return CONTINUE

    h = harness(Session.of(100), NoMerge())
    h.send("a", rows((0, 1), (50, 2)))
    (dead,) = h.dead
    assert dead.row["t"] == 50 and dead.step == "trigger on_merge" and "has no merge function" in dead.reason
    assert [w[:2] for w in h.contexts["a"].values["ds-windows"]] == [[0, 100]]  # the merge was undone


def test_a_trigger_returning_a_str_is_a_spec_error_naming_the_trigger_and_method() -> None:
    class Wrong(Trigger):
        def on_element(self, element, timestamp, window, ctx):
            return "FIRE"

    with pytest.raises(SpecError, match=r"Wrong\.on_element returned 'FIRE' \(a str\); a trigger method returns a "
                                        r"TriggerResult"):
        harness(Tumbling.of(10), Wrong()).send("a", rows((1, 1)))
    with pytest.raises(SpecError, match=r"Wrong\.on_element returned"):
        harness(Tumbling.of(10), Purging.of(Wrong())).send("a", rows((1, 1)))

    class WrongTimer(EventTime):
        def on_event_time(self, time, window, ctx):
            return None

    h = harness(Tumbling.of(10), WrongTimer())
    h.send("a", rows((1, 1)))
    with pytest.raises(SpecError, match=r"WrongTimer\.on_event_time returned None"):
        h.advance(9)


def test_a_raising_trigger_dead_letters_the_element_and_the_key_goes_on() -> None:
    class Picky(EventTime):
        def on_element(self, element, timestamp, window, ctx):
            if element["v"] < 0:
                raise ValueError("negative value")
            return super().on_element(element, timestamp, window, ctx)

    h = harness(Tumbling.of(10), Picky())
    h.send("a", rows((1, 1), (2, -5), (3, 2)))
    h.advance(9)
    assert [(d.row["v"], d.step, d.reason) for d in h.dead] == [
        (-5, "trigger on_element", "trigger on_element raised ValueError: negative value")]
    assert [f.values for f in h.firings] == [(3,)]  # the failing element was taken out of the window again


def test_trigger_context_partitioned_state_and_timers() -> None:
    window = Window(0, 10)
    state: dict = {}
    ctx = TriggerContext(window, state, TimerQueue(), TimerQueue(), watermark=4, processing_time=7,
                         merged_states=({"x": 2}, {"x": 5}, {}))
    counter = TriggerState("x", operator.add)
    ctx.merge_partitioned_state(counter)
    assert state == {"x": 7}
    ctx.get_partitioned_state(counter).add(1)
    ctx.scoped("early/").get_partitioned_state(counter).add(3)
    assert state == {"x": 8, "early/x": 3}
    ctx.register_processing_time_timer(9)
    ctx.register_processing_time_timer(9)
    assert len(ctx.processing_timers) == 1 and ctx.current_processing_time == 7 and ctx.current_watermark == 4
    with pytest.raises(TypeError, match="has no merge function"):
        ctx.get_partitioned_state(TriggerState("plain")).add(1)
    assert TriggerResult.of(False, True) is TriggerResult.PURGE and TriggerResult.FIRE_AND_PURGE.fire


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Count(0), "CountTrigger: argument 'max_count': must be a positive integer, got 0"),
    (lambda: ContinuousEventTime.of(0), "ContinuousEventTimeTrigger: argument 'interval': must be greater than 0"),
    (lambda: Purging.of("FIRE"), "PurgingTrigger: argument 'nested': expected a Trigger"),
    (lambda: EventTime().with_early(3), "with_early: argument 'early': expected a Trigger"),
    (lambda: WindowOperator(Tumbling.of(5), aggregate(Sum()), time_column="t", trigger="EventTime"),
     "argument 'trigger': expected a Trigger, got 'EventTime'"),
])
def test_bad_trigger_arguments_are_named(build, message) -> None:
    with pytest.raises(SpecError) as caught:
        build()
    assert message in str(caught.value)


def test_never_and_processing_time_triggers_can_merge() -> None:
    assert Never().can_merge() and ProcessingTime().can_merge() and not Trigger().can_merge()
    op = WindowOperator(Session.of(5, processing_time=True), process(lambda k, c, e: [len(e)]))
    h = Harness(op)
    h.advance(now_ms=0)
    h.send("a", [{"v": 1}])
    h.advance(now_ms=3)
    h.send("a", [{"v": 2}])  # [3, 8) merges with [0, 5)
    assert [brief(f) for f in h.advance(now_ms=7)] == [(None, 0, 8, (2,), "on_time", 0)]


def test_continuous_event_time_on_merge_keeps_the_earliest_next_fire_time() -> None:
    h = harness(Session.of(50), ContinuousEventTime.of(20))
    h.send("a", rows((0, 1), (100, 2)))  # [0, 50) fires next at 20, [100, 150) at 120
    h.send("a", rows((50, 4)))           # [50, 100) bridges them: Flink's ReducingState(min) merge keeps 20
    assert h.contexts["a"].values["ds-windows"][0][3] == {"fire-time": 20}
    assert [(f.at, f.values) for f in h.advance(60)] == [(20, (7,)), (40, (7,)), (60, (7,))]


def test_continuous_event_time_an_element_extending_a_session_keeps_its_fire_time() -> None:
    # on_element runs on the merged window, whose fire time came from the session it extends (Flink: the element's
    # own window never holds trigger state)
    h = harness(Session.of(50), ContinuousEventTime.of(20))
    h.send("a", rows((45, 1), (10, 2)))
    assert h.contexts["a"].values["ds-windows"][0][3] == {"fire-time": 60}


def test_the_global_window_state_round_trips_through_the_codec() -> None:
    h = harness(Global.of(), Purging.of(Count.of(2)), time_column=None)
    h.send("a", rows((1, 1)))
    h.restore()
    h.send("a", rows((2, 2), (3, 4)))
    assert [(f.window.end, f.values) for f in h.firings] == [(2**63, (3,))]
