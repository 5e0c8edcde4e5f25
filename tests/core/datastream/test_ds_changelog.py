"""A DataStream window's firings as a changelog (timeweave.core.datastream.changelog): retract and upsert encodings
of early / on-time / late firings, one change per window and step (or per firing), unchanged results emitting
nothing, a session merge retracting the fired windows it absorbed, purging triggers starting a new pane, dead
letters (upsert with several values, a result the door cannot write), restores through the state codec mid-way,
and the property: the materialized changelog equals the last unsuperseded firing of every window, in any steps."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.datastream.test_ds_properties import EVICTORS, Boom, assigners, inputs, one_per_step, random_steps
from tests.helpers.datastream_harness import Harness, Sum, rows
from timeweave.core.datastream import Session, Tumbling, WindowOperator, aggregate, process
from timeweave.core.datastream import triggers as tr
from timeweave.core.datastream.changelog import PANES, UNIQUE_KEY, WindowChangelog
from timeweave.core.datastream.operator import LAYOUT, DeadLetter
from timeweave.core.errors import SpecError
from timeweave.core.operator import Tag, tag_of
from timeweave.core.updates import MaterializedTable
from timeweave.core.updates.encoder import EMITTED


def changelog(mode: str, assigner: Any = None, *, per_firing: bool = False, **options: Any) -> Harness:
    options.setdefault("time_column", "t")
    function = options.pop("function", None) or aggregate(Sum())
    op = WindowOperator(assigner or Tumbling.of(10), function, key_by="k", **options)
    return Harness(WindowChangelog(op, mode, per_firing=per_firing))


def shown(h: Harness, since: int = 0) -> list[str]:
    return [str(c) for c in h.tagged(Tag.CHANGELOG)[since:]]


def early_on_time_late(mode: str, *, restore: bool = False) -> Harness:
    """Early (every 2 elements), on time, late within the lateness, an unchanged late firing, the cleanup, then a
    row for the late output."""
    h = changelog(mode, trigger=tr.EventTime().with_early(tr.Count.of(2)), allowed_lateness=5)
    steps = [lambda: h.send("a", rows((1, 1), (2, 2))),   # early: 3
             lambda: h.send("a", rows((3, 4))),           # one more: no firing yet
             lambda: h.advance(9),                        # on time: 7
             lambda: h.send("a", rows((4, 1))),           # late, within the lateness: 8 at once
             lambda: h.send("a", rows((5, 0))),           # late again, the same result
             lambda: h.advance(14),                       # cleanup
             lambda: h.send("a", rows((6, 5)))]           # 6 + 5 <= 14: the late output
    for step in steps:
        if restore:
            h.restore()
        step()
    return h


def test_retract_early_on_time_and_late_firings() -> None:
    h = early_on_time_late("retract")
    key = "('a', 0, 10, 0)"
    assert shown(h) == [f"+I {key} (3,)", f"-U {key} (3,)", f"+U {key} (7,)", f"-U {key} (7,)", f"+U {key} (8,)"]
    assert [e.row["v"] for e in h.late] == [5]
    assert h.contexts["a"].is_empty()  # the window's cleanup took its emitted result too: it stays final


def test_upsert_early_on_time_and_late_firings() -> None:
    h = early_on_time_late("upsert")
    key = "('a', 0, 10, 0)"
    assert shown(h) == [f"+I {key} (3,)", f"+U {key} (7,)", f"+U {key} (8,)"]
    table = MaterializedTable("upsert", key_names=UNIQUE_KEY, value_names=("sum",))
    table.apply(h.tagged(Tag.CHANGELOG))
    assert table.rows() == [{"key": "a", "window_start": 0, "window_end": 10, "pane": 0, "sum": 8}]


@pytest.mark.parametrize("mode", ["retract", "upsert"])
def test_a_restore_through_the_codec_before_every_step_changes_nothing(mode: str) -> None:
    assert shown(early_on_time_late(mode, restore=True)) == shown(early_on_time_late(mode))


def test_the_layout_declares_the_emitted_results_and_panes_and_a_snapshot_holds_them() -> None:
    h = changelog("retract", trigger=tr.EventTime().with_early(tr.Count.of(1)))
    assert h.op.layout.names == (*LAYOUT.names, EMITTED, PANES)
    h.send("a", rows((1, 1)))
    snapshot = h.op.layout.snapshot(h.contexts["a"])
    assert snapshot[EMITTED] == {(0, 10, 0): (1,)}


def test_one_change_per_window_and_step_or_per_firing() -> None:
    batched = changelog("retract", trigger=tr.EventTime().with_early(tr.Count.of(2)))
    batched.send("a", rows((1, 1), (2, 2), (3, 3), (4, 4)))  # two early firings in one step: one change
    assert shown(batched) == ["+I ('a', 0, 10, 0) (10,)"]
    each = changelog("retract", trigger=tr.EventTime().with_early(tr.Count.of(2)), per_firing=True)
    each.send("a", rows((1, 1), (2, 2), (3, 3), (4, 4)))
    assert shown(each) == ["+I ('a', 0, 10, 0) (3,)", "-U ('a', 0, 10, 0) (3,)", "+U ('a', 0, 10, 0) (10,)"]


def test_the_step_includes_the_timers_its_clocks_reached() -> None:
    # early at 2 elements, then the watermark past the window's end before the key's next call: its process step
    # fires the on-time firing first (the same result) and the late firing after the element: one change
    h = changelog("upsert", trigger=tr.EventTime().with_early(tr.Count.of(2)), allowed_lateness=5)
    h.send("a", rows((1, 1), (2, 2)))
    h.watermark_ms = 9  # the key is not woken
    h.send("a", rows((3, 4)))
    assert shown(h) == ["+I ('a', 0, 10, 0) (3,)", "+U ('a', 0, 10, 0) (7,)"]


def test_an_unchanged_result_emits_nothing() -> None:
    h = changelog("retract", Tumbling.of(20), trigger=tr.ContinuousEventTime.of(5))
    h.send("a", rows((1, 2)))
    h.advance(5)  # the first continuous firing: 1 - 1 % 5 + 5
    assert shown(h) == ["+I ('a', 0, 20, 0) (2,)"]
    h.advance(10)  # fires again with the same sum: nothing
    h.advance(15)
    assert len(shown(h)) == 1
    h.send("a", rows((12, 3)))
    h.advance(19)
    assert shown(h, 1) == ["-U ('a', 0, 20, 0) (2,)", "+U ('a', 0, 20, 0) (5,)"]


@pytest.mark.parametrize("mode", ["retract", "upsert"])
def test_a_session_merge_retracts_the_fired_windows_it_absorbed(mode: str) -> None:
    h = changelog(mode, Session.of(5), trigger=tr.EventTime().with_early(tr.Count.of(1)))
    h.send("a", rows((0, 1)))
    h.send("a", rows((10, 2)))
    assert shown(h) == ["+I ('a', 0, 5, 0) (1,)", "+I ('a', 10, 15, 0) (2,)"]
    h.send("a", rows((5, 4)))  # [5, 10) bridges both: [0, 15)
    assert shown(h, 2) == ["-D ('a', 0, 5, 0) (1,)", "-D ('a', 10, 15, 0) (2,)", "+I ('a', 0, 15, 0) (7,)"]
    table = MaterializedTable(mode, key_names=UNIQUE_KEY, value_names=("sum",))
    table.apply(h.tagged(Tag.CHANGELOG))
    assert table.rows() == [{"key": "a", "window_start": 0, "window_end": 15, "pane": 0, "sum": 7}]
    h.advance(14)  # on time, the same sum; then the cleanup
    assert len(shown(h)) == 5 and h.contexts["a"].is_empty()


def test_absorbed_windows_stay_until_the_merged_window_fires() -> None:
    h = changelog("retract", Session.of(5), trigger=tr.EventTime().with_early(tr.Count.of(3)))
    for t in (0, 1, 2):
        h.send("a", rows((t, 1)))
    assert shown(h) == ["+I ('a', 0, 7, 0) (3,)"]
    h.send("a", rows((6, 1)))  # merges into [0, 11); no firing (count 1 of 3)
    assert len(shown(h)) == 1
    h.advance(10)  # the merged window's on-time firing: the absorbed [0, 7) goes with it
    assert shown(h, 1) == ["-D ('a', 0, 7, 0) (3,)", "+I ('a', 0, 11, 0) (4,)"]


@pytest.mark.parametrize("mode", ["retract", "upsert"])
def test_a_purge_starts_the_window_over_as_a_new_pane(mode: str) -> None:
    h = changelog(mode, trigger=tr.Purging.of(tr.Count.of(2)))
    h.send("a", rows((1, 1), (2, 2)))
    assert h.contexts["a"].get(EMITTED) is None  # the purged pane is final: nothing kept for it
    h.send("a", rows((3, 4)))
    h.send("a", rows((4, 8)))
    assert shown(h) == ["+I ('a', 0, 10, 0) (3,)", "+I ('a', 0, 10, 1) (12,)"]
    table = MaterializedTable(mode, key_names=UNIQUE_KEY, value_names=("sum",))
    table.apply(h.tagged(Tag.CHANGELOG))
    assert [(r["pane"], r["sum"]) for r in table.rows()] == [(0, 3), (1, 12)]


def test_after_a_purged_on_time_firing_late_firings_refine_the_new_pane() -> None:
    h = changelog("retract", trigger=tr.Purging.of(tr.EventTime()), allowed_lateness=10)
    h.send("a", rows((1, 1)))
    h.advance(9)                               # on time, purged: pane 0 final
    h.send("a", rows((2, 2)))                  # late: fires at once (and purges): pane 1
    h.send("a", rows((3, 4)))                  # pane 2
    assert shown(h) == ["+I ('a', 0, 10, 0) (1,)", "+I ('a', 0, 10, 1) (2,)", "+I ('a', 0, 10, 2) (4,)"]
    assert h.contexts["a"].get(PANES) is None  # every pane was final at once


def test_a_pane_started_after_a_purge_is_refined_under_its_number() -> None:
    class PurgeAtThree(tr.Trigger):
        """FIRE on every element; FIRE_AND_PURGE on the third of the window."""

        seen = tr.TriggerState("seen", operator.add)

        def on_element(self, element, timestamp, window, ctx):
            seen = ctx.get_partitioned_state(self.seen)
            seen.add(1)
            return tr.TriggerResult.FIRE_AND_PURGE if seen.get() == 3 else tr.TriggerResult.FIRE

        def clear(self, window, ctx):
            ctx.get_partitioned_state(self.seen).clear()

    h = changelog("upsert", trigger=PurgeAtThree())
    for t, v in ((1, 1), (2, 2), (3, 4), (4, 8), (5, 16)):
        h.send("a", rows((t, v)))
    assert shown(h) == ["+I ('a', 0, 10, 0) (1,)", "+U ('a', 0, 10, 0) (3,)", "+U ('a', 0, 10, 0) (7,)",
                        "+I ('a', 0, 10, 3) (8,)", "+U ('a', 0, 10, 3) (24,)"]
    assert h.contexts["a"].get(PANES) == {(0, 10): 3}
    h.advance(9)
    assert h.contexts["a"].is_empty()


def test_upsert_refuses_several_values_per_firing_and_no_value_deletes() -> None:
    def listing(key, ctx, elements):
        return [e["v"] for e in elements if e["v"] > 0]

    h = changelog("upsert", trigger=tr.EventTime().with_early(tr.Count.of(1)), function=process(listing))
    h.send("a", rows((1, 1)))
    h.send("a", rows((2, 2)))  # two values: a dead letter; the table keeps 1
    h.send("a", rows((3, -1)))  # still two values
    assert shown(h) == ["+I ('a', 0, 10, 0) (1,)"]
    (dead, _) = h.dead
    assert (dead.step, dead.window.start, dead.key) == ("changelog", 0, "a")
    assert dead.reason.startswith("changelog: firing 1 emitted 2 results; an upsert changelog holds one row")
    r = changelog("retract", trigger=tr.EventTime().with_early(tr.Count.of(1)), function=process(listing))
    for t, v in ((1, 1), (2, 2)):
        r.send("a", rows((t, v)))
    assert shown(r) == ["+I ('a', 0, 10, 0) (1,)", "-U ('a', 0, 10, 0) (1,)", "+U ('a', 0, 10, 0) (1,)",
                        "+U ('a', 0, 10, 0) (2,)"]
    gone = changelog("retract", trigger=tr.EventTime().with_early(tr.Count.of(1)),
                     function=process(lambda key, ctx, elements: [] if len(elements) > 1 else [len(elements)]))
    gone.send("a", rows((1, 1)))
    gone.send("a", rows((2, 1)))  # no value: the window's row goes
    assert shown(gone) == ["+I ('a', 0, 10, 0) (1,)", "-D ('a', 0, 10, 0) (1,)"]


def test_a_result_the_door_cannot_write_is_a_dead_letter_and_encodes_nothing() -> None:
    def convert(value: int) -> str:
        if value > 5:
            raise ValueError(f"{value} is too big")
        return f"sum={value}"

    op = WindowOperator(Tumbling.of(10), aggregate(Sum()), time_column="t", key_by="k",
                        trigger=tr.EventTime().with_early(tr.Count.of(1)))
    h = Harness(WindowChangelog(op, "retract", convert=convert))
    for t, v in ((1, 1), (2, 9), (3, -8)):
        h.send("a", rows((t, v)))
    assert shown(h) == ["+I ('a', 0, 10, 0) ('sum=1',)", "-U ('a', 0, 10, 0) ('sum=1',)",
                        "+U ('a', 0, 10, 0) ('sum=2',)"]
    (dead,) = h.dead
    assert isinstance(dead, DeadLetter) and dead.step == "output schema"
    assert dead.reason == "output schema: firing 1, result 0: 10 is too big"


def test_bad_specs() -> None:
    op = WindowOperator(Tumbling.of(10), aggregate(Sum()), time_column="t")
    with pytest.raises(SpecError, match="append output is the window operator's firings themselves"):
        WindowChangelog(op, "append")
    with pytest.raises(SpecError, match="expected 'append', 'retract' or 'upsert', got 'retraction'"):
        WindowChangelog(op, "retraction")
    with pytest.raises(SpecError, match="expected a WindowOperator"):
        WindowChangelog(object(), "retract")  # type: ignore[arg-type]


# -- the property -----------------------------------------------------------------------------------------------
def final_firings(firings: list[Any], shown: Any = None) -> Counter:
    """The reference table: (key, start, end, value) of every firing no later firing supersedes (the window's next
    firing replacing it, or a merge absorbing its window while it was the window's last, unpurged firing); values
    through ``shown`` (something hashable) when given."""
    table: Counter = Counter()
    for i, f in enumerate(firings):
        superseded = False
        for g in firings[i + 1:]:
            if g.key != f.key:
                continue
            if g.window == f.window:
                superseded = g.replaces_previous
                break
            if f.window in g.merged_from:
                superseded = True
                break
        if not superseded:
            table.update((f.key, f.window.start, f.window.end, v if shown is None else shown(v)) for v in f.values)
    return table


def materialized(h: Harness, mode: str) -> Counter:
    table = MaterializedTable(mode, key_names=UNIQUE_KEY, value_names=("value",))
    table.apply(h.tagged(Tag.CHANGELOG))
    return Counter({(k, s, e, v): n for (k, s, e, _pane, v), n in table.as_multiset().items()})


def two_values(key, ctx, elements):
    """Up to two values per firing (retract only)."""
    ids = sorted(e["id"] for e in elements)
    return [(ids[0],), (len(ids),)][:len(ids)]


TRIGGERS = [
    lambda: tr.EventTime().with_early(tr.Count.of(2)),
    lambda: tr.Purging.of(tr.EventTime()),
    lambda: tr.ContinuousEventTime.of(7),
    lambda: tr.Purging.of(tr.Count.of(3)),
    lambda: None,
]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(assigner=assigners(), lateness=st.sampled_from([0, 4]), trigger=st.sampled_from(TRIGGERS),
       evictor=st.sampled_from(EVICTORS), mode=st.sampled_from(["retract", "upsert"]),
       function=st.sampled_from(["aggregate", "two_values"]), per_firing=st.booleans(), events=inputs(),
       data=st.data())
def test_the_materialized_changelog_is_the_last_unsuperseded_firing_of_every_window(
        assigner, lateness, trigger, evictor, mode, function, per_firing, events, data) -> None:
    if mode == "upsert":
        function = "aggregate"

    def window_operator() -> WindowOperator:
        fn = aggregate(Boom()) if function == "aggregate" else process(two_values)
        return WindowOperator(assigner, fn, trigger=trigger(), evictor=evictor(), time_column="t", key_by="k",
                              allowed_lateness=lateness)

    plain = one_per_step(window_operator(), events)
    expected = final_firings(plain.firings)
    single = one_per_step(WindowChangelog(window_operator(), mode, per_firing=per_firing), events)
    assert materialized(single, mode) == expected
    stepped = random_steps(WindowChangelog(window_operator(), mode, per_firing=per_firing), events, data)
    assert materialized(stepped, mode) == expected
    # the same late rows and dead letters as the plain operator; no firing left unencoded
    assert [tag_of(o) for o in stepped.out if tag_of(o) != Tag.CHANGELOG].count(Tag.MAIN) == 0
    assert Counter(e.row["id"] for e in stepped.late) == Counter(e.row["id"] for e in plain.late)
    assert Counter((d.step, None if d.row is None else d.row["id"]) for d in stepped.dead) == \
        Counter((d.step, None if d.row is None else d.row["id"]) for d in plain.dead)
    # at the end of input every window was cleaned up, and its changelog state with it
    assert all(ctx.is_empty() for ctx in stepped.contexts.values())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gap=st.integers(3, 12), lateness=st.sampled_from([0, 6]), early=st.integers(1, 3),
       mode=st.sampled_from(["retract", "upsert"]), events=inputs(), data=st.data())
def test_sessions_refined_early_materialize_to_their_last_firings(gap, lateness, early, mode, events, data) -> None:
    # early firings on every few elements: fired sessions merge often (the general property above meets few)
    def window_operator() -> WindowOperator:
        return WindowOperator(Session.of(gap), aggregate(Boom()), trigger=tr.EventTime().with_early(tr.Count.of(early)),
                              time_column="t", key_by="k", allowed_lateness=lateness)

    expected = final_firings(one_per_step(window_operator(), events).firings)
    stepped = random_steps(WindowChangelog(window_operator(), mode), events, data)
    assert materialized(stepped, mode) == expected
    assert all(ctx.is_empty() for ctx in stepped.contexts.values())
