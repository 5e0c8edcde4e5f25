"""DataStream window assigners (Flink's TumblingEventTimeWindows, SlidingEventTimeWindows, the session
assigners, GlobalWindows): windows, offsets, times before 1970, Flink's argument checks, seed 002's examples."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from timeweave.core.datastream.assigners import (
    GLOBAL_WINDOW,
    MAX_TIME,
    Global,
    Session,
    Sliding,
    Tumbling,
    max_timestamp,
)
from timeweave.core.datastream.triggers import EventTime, Never, ProcessingTime, default_trigger
from timeweave.core.errors import SpecError
from timeweave.core.windows.spec import Window

MIN, HOUR, DAY = 60_000, 3_600_000, 86_400_000


def spans(windows: list[Window]) -> list[tuple[int, int]]:
    return [(w.start, w.end) for w in windows]


def test_tumbling_durations_as_text_timedelta_or_ms_are_one_assigner() -> None:
    assert Tumbling.of("5 s") == Tumbling.of(timedelta(seconds=5)) == Tumbling.of(5000) == Tumbling(5000)
    assert spans(Tumbling.of("5 s").assign(None, 12_345, None)) == [(10_000, 15_000)]


def test_seed_002_tumbling_one_day_offset_minus_8_hours_aligns_windows_on_utc_plus_8_midnight() -> None:
    # seed 002: TumblingEventTimeWindows.of(Time.days(1), Time.hours(-8))
    assigner = Tumbling.of("1 day", offset="-8 hours")
    t = int((datetime(2020, 4, 15, 17, 0) - datetime(1970, 1, 1)).total_seconds() * 1000)  # 01:00 on 04-16 in UTC+8
    (window,) = assigner.assign(None, t, None)
    assert window.start == int((datetime(2020, 4, 15, 16, 0) - datetime(1970, 1, 1)).total_seconds() * 1000)
    assert window.end - window.start == DAY


@pytest.mark.parametrize(("t", "offset", "expected"), [
    (-1, 0, (-5000, 0)),          # the millisecond before 1970
    (-5000, 0, (-5000, 0)),
    (-5001, 0, (-10_000, -5000)),
    (-1, 1000, (-4000, 1000)),    # offset shifts the grid before 1970 too
    (999, -1000, (-1000, 4000)),
])
def test_tumbling_windows_before_1970_and_with_offsets_follow_get_window_start_with_offset(t, offset, expected) -> None:
    assert spans(Tumbling.of(5000, offset).assign(None, t, None)) == [expected]


def test_sliding_windows_are_listed_newest_first_as_flink_assigns_them() -> None:
    # seed 002: SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5))
    assert spans(Sliding.of("10 s", "5 s").assign(None, 7_000, None)) == [(5000, 15_000), (0, 10_000)]
    assert spans(Sliding.of(10, 3).assign(None, -1, None)) == [(-3, 7), (-6, 4), (-9, 1)]


def test_sliding_size_need_not_be_a_multiple_of_slide_and_gaps_assign_nothing() -> None:
    assert spans(Sliding.of(10, 4).assign(None, 9, None)) == [(8, 18), (4, 14), (0, 10)]
    gappy = Sliding.of(2, 5)
    assert spans(gappy.assign(None, 1, None)) == [(0, 2)] and gappy.assign(None, 3, None) == []


def test_seed_002_sliding_processing_time_12h_1h_offset_minus_8h_is_refused_as_flink_refuses_it() -> None:
    # seed 002 shows SlidingProcessingTimeWindows.of(Time.hours(12), Time.hours(1), Time.hours(-8)); Flink's
    # constructor requires abs(offset) < slide and throws IllegalArgumentException for it: so do we.
    with pytest.raises(SpecError, match=r"SlidingProcessingTimeWindows: argument 'offset': must satisfy "
                                        r"abs\(offset\) < slide, but got offset -28800000 ms and slide 3600000 ms"):
        Sliding.of("12 hours", "1 hour", offset="-8 hours", processing_time=True)
    ok = Sliding.of("12 hours", "1 hour", offset="-30 min", processing_time=True)
    assert len(ok.assign(None, None, 10 * HOUR)) == 12 and not ok.is_event_time


def test_processing_time_assigners_use_the_hosts_clock_not_the_element_time() -> None:
    assert spans(Tumbling.of(10, processing_time=True).assign(None, 999, 23)) == [(20, 30)]
    assert spans(Session.of(5, processing_time=True).assign(None, 999, 23)) == [(23, 28)]
    assert Session.of(5, processing_time=True).name == "ProcessingTimeSessionWindows"


def test_sessions_static_and_dynamic_gap() -> None:
    # seed 002: EventTimeSessionWindows.withGap(Time.minutes(10))
    assert spans(Session.of("10 minutes").assign(None, MIN, None)) == [(MIN, 11 * MIN)]
    dynamic = Session.of(lambda row: row["gap"])
    assert dynamic.name == "DynamicEventTimeSessionWindows" and dynamic.merging
    assert spans(dynamic.assign({"gap": timedelta(seconds=2)}, 0, None)) == [(0, 2000)]
    with pytest.raises(ValueError, match="a session gap must satisfy 0 < gap"):
        dynamic.assign({"gap": -3}, 0, None)
    with pytest.raises(ValueError, match="not a whole number of milliseconds"):
        dynamic.assign({"gap": timedelta(microseconds=1500)}, 0, None)
    with pytest.raises(TypeError, match="integer ms or a timedelta"):
        dynamic.assign({"gap": "5"}, 0, None)


def test_global_window_is_one_window_ending_at_long_max_and_not_event_time() -> None:
    # seed 002: GlobalWindows.create(); its default trigger is the NeverTrigger
    assigner = Global.create()
    assert assigner.assign("x", None, None) == [GLOBAL_WINDOW] and max_timestamp(GLOBAL_WINDOW) == MAX_TIME
    assert not assigner.is_event_time and default_trigger(assigner) == Never()


def test_default_triggers_follow_the_assigners_time() -> None:
    assert default_trigger(Sliding.of(10, 5)) == EventTime() and default_trigger(Session.of(5)) == EventTime()
    assert default_trigger(Tumbling.of(10, processing_time=True)) == ProcessingTime()


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Tumbling.of(0), "TumblingEventTimeWindows: argument 'size': must be greater than 0, but got 0 ms"),
    (lambda: Tumbling.of("-5 s"), "argument 'size': must be greater than 0, but got -5000 ms"),
    (lambda: Tumbling.of(10, 10), "argument 'offset': must satisfy abs(offset) < size, but got offset 10 ms and size 10"),
    (lambda: Tumbling.of(10, -10), "abs(offset) < size"),
    (lambda: Sliding.of(10, 0), "SlidingEventTimeWindows: argument 'slide': must be greater than 0, but got 0 ms"),
    (lambda: Sliding.of(0, 5), "argument 'size': must be greater than 0"),
    (lambda: Sliding.of(10, 5, 5), "abs(offset) < slide"),
    (lambda: Session.of(0), "EventTimeSessionWindows: argument 'gap': must be greater than 0, but got 0 ms"),
    (lambda: Session.of("ten minutes"), "cannot read duration 'ten minutes'"),
    (lambda: Tumbling.of("1.5 ms"), "not a whole number of milliseconds"),
    (lambda: Session(None, None), "give a gap or a gap function, exactly one"),
])
def test_bad_assigner_arguments_are_named(build, message) -> None:
    with pytest.raises(SpecError) as caught:
        build()
    assert message in str(caught.value)
