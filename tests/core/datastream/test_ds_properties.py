"""Random out-of-order input, split at random into steps (the watermark advanced between them, keys woken or not,
state snapshotted and restored through the StateLayout and the codec between some), gives the same firings, late
rows and dead letters as one element per step, and, with the default event-time trigger and allowed lateness,
the same as a brute-force reference written from the documented rules (tests/helpers/datastream_reference.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.datastream_harness import Harness, Sum
from tests.helpers.datastream_reference import Outputs, reference
from timeweave.core.datastream import Session, Sliding, Tumbling, WindowOperator, aggregate, process
from timeweave.core.datastream import evictors as ev
from timeweave.core.datastream import triggers as tr
from timeweave.core.datastream.assigners import MAX_TIME
from timeweave.core.operator import Tag, tag_of
from timeweave.core.state import END_OF_TIME


class Boom(Sum):
    def add(self, value, acc):
        if value["v"] == "boom":
            raise ValueError("boom")
        return acc + value["v"]


@st.composite
def assigners(draw) -> Tumbling | Sliding | Session:
    kind = draw(st.sampled_from(["tumbling", "sliding", "session"]))
    if kind == "session":
        return Session.of(draw(st.integers(1, 12)))
    if kind == "tumbling":
        size = draw(st.integers(1, 20))
        return Tumbling.of(size, draw(st.integers(-(size - 1), size - 1)))
    slide = draw(st.integers(1, 10))
    return Sliding.of(draw(st.integers(1, 25)), slide, draw(st.integers(-(slide - 1), slide - 1)))


@st.composite
def inputs(draw) -> list[tuple]:
    """Rows and watermark advances in arrival order, ending with the end of input."""
    events: list[tuple] = []
    watermark = draw(st.integers(-40, 0))
    events.append(("watermark", watermark))
    for i in range(draw(st.integers(0, 40))):
        if draw(st.integers(0, 4)) == 0:
            watermark += draw(st.integers(0, 15))
            events.append(("watermark", watermark))
        t = None if draw(st.integers(0, 19)) == 0 else draw(st.integers(-45, 70))
        v = "boom" if draw(st.integers(0, 19)) == 0 else draw(st.integers(1, 9))
        key = draw(st.sampled_from("abc"))
        events.append(("row", key, {"id": i, "k": key, "t": t, "v": v}))
    events.append(("watermark", MAX_TIME))
    return events


def one_per_step(op: WindowOperator, events: list[tuple]) -> Harness:
    h = Harness(op)
    for event in events:
        if event[0] == "watermark":
            h.advance(END_OF_TIME if event[1] == MAX_TIME else event[1])
        else:
            h.send(event[1], [event[2]])
    return h


def random_steps(op: WindowOperator, events: list[tuple], data: st.DataObject) -> Harness:
    """Consecutive rows of one watermark in random chunks (a chunk: each key's rows in one call); a watermark
    advance wakes every key or none; a snapshot/restore before some chunks."""
    h = Harness(op)
    pending: list[tuple] = []

    def flush() -> None:
        while pending:
            size = data.draw(st.integers(1, len(pending)))
            chunk, pending[:size] = pending[:size], []
            if data.draw(st.booleans()):
                h.restore()
            by_key: dict[Any, list] = {}
            for _, key, row in chunk:
                by_key.setdefault(key, []).append(row)
            for key, rows in by_key.items():
                h.send(key, rows)

    for event in events:
        if event[0] == "watermark":
            flush()
            last = event[1] == MAX_TIME
            watermark = END_OF_TIME if last else event[1]
            if last or data.draw(st.booleans()):
                h.advance(watermark)
            else:
                h.watermark_ms = watermark  # keys not woken: their next call fires what is due first
        else:
            pending.append(event)
    return h


def outputs(h: Harness) -> Outputs:
    out = Outputs()
    for o in h.out:
        tag = tag_of(o)
        if tag == Tag.MAIN:
            at = MAX_TIME if o.at == END_OF_TIME else o.at
            out.firings.setdefault(o.key, []).append((o.window.start, o.window.end, o.values, o.kind.value,
                                                      o.sequence, o.replaces_previous, o.merged_from, at))
        elif tag == Tag.LATE:
            out.late.setdefault(o.row["k"], []).append(o.row["id"])
        else:
            out.dead.setdefault(o.key, []).append((None if o.row is None else o.row["id"], o.step, o.window))
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(assigner=assigners(), lateness=st.sampled_from([0, 0, 3, 10]), events=inputs(), data=st.data())
def test_default_trigger_with_lateness_equals_the_reference_in_any_steps(assigner, lateness, events, data) -> None:
    def make() -> WindowOperator:
        return WindowOperator(assigner, aggregate(Boom()), time_column="t", key_by="k", allowed_lateness=lateness)

    expected = reference(assigner, lateness, events)
    single = outputs(one_per_step(make(), events))
    assert single == expected
    assert outputs(random_steps(make(), events, data)) == expected


TRIGGERS = [
    lambda: None,
    lambda: tr.EventTime().with_early(tr.Count(2)),
    lambda: tr.Purging.of(tr.EventTime()),
    lambda: tr.ContinuousEventTime.of(7),
    lambda: tr.Purging.of(tr.Count(3)),
]
EVICTORS = [
    lambda: None,
    lambda: ev.Count.of(2),
    lambda: ev.Time.of(5, after=True),
]


def listing(key, ctx, elements):
    return [tuple(sorted(e["id"] for e in elements))]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(assigner=assigners(), lateness=st.sampled_from([0, 4]), trigger=st.sampled_from(TRIGGERS),
       evictor=st.sampled_from(EVICTORS), use_process=st.booleans(), events=inputs(), data=st.data())
def test_any_trigger_and_evictor_give_the_same_outputs_in_any_steps(assigner, lateness, trigger, evictor, use_process,
                                                                   events, data) -> None:
    def make() -> WindowOperator:
        function = process(listing) if use_process else aggregate(Boom())
        return WindowOperator(assigner, function, trigger=trigger(), evictor=evictor(), time_column="t", key_by="k",
                              allowed_lateness=lateness)

    assert outputs(random_steps(make(), events, data)) == outputs(one_per_step(make(), events))


@st.composite
def clock_inputs(draw) -> list[tuple]:
    """Rows and processing-clock advances (ms) in arrival order."""
    now = draw(st.integers(-20, 0))
    events: list[tuple] = [("clock", now)]
    for i in range(draw(st.integers(0, 30))):
        if draw(st.integers(0, 3)) == 0:
            now += draw(st.integers(0, 12))
            events.append(("clock", now))
        key = draw(st.sampled_from("ab"))
        events.append(("row", key, {"id": i, "k": key, "t": None, "v": draw(st.integers(1, 9))}))
    events.append(("clock", now + 1000))
    return events


def run_clock(op: WindowOperator, events: list[tuple], data: st.DataObject | None) -> Harness:
    h = Harness(op)
    for event in events:
        if event[0] == "clock":
            if data is not None and data.draw(st.booleans()):
                h.restore()
            if data is None or event is events[-1] or data.draw(st.booleans()):
                h.advance(now_ms=event[1])
            else:
                h.now_ms = event[1]
        else:
            h.send(event[1], [event[2]])
    return h


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["tumbling", "sliding", "session"]), trigger=st.sampled_from([
    lambda: None, lambda: tr.Purging.of(tr.Count(2)), lambda: tr.ProcessingTime().with_early(tr.Count(3))]),
    events=clock_inputs(), data=st.data())
def test_processing_time_windows_fire_on_the_hosts_clock_alike_in_any_steps(kind, trigger, events, data) -> None:
    assigner = {"tumbling": Tumbling.of(10, processing_time=True), "sliding": Sliding.of(10, 4, processing_time=True),
                "session": Session.of(6, processing_time=True)}[kind]

    def make() -> WindowOperator:
        return WindowOperator(assigner, process(listing), trigger=trigger(), key_by="k")

    single = run_clock(make(), events, None)
    assert outputs(run_clock(make(), events, data)) == outputs(single)
    if trigger() is None:  # the default trigger: once the clock ran past every window, each fired once and went
        if kind != "sliding":  # one window per element: each element is in exactly one firing
            fired = sorted(i for f in single.firings for i in f.values[0])
            assert fired == sorted(e[2]["id"] for e in events if e[0] == "row")
        assert all(ctx.is_empty() for ctx in single.contexts.values())
