"""The keyed window Top-N / deduplication operator: in random arrival order, split into random steps with the
state snapshot and restored through the codec between steps, its main output is the batch rule
(:func:`~timeweave.core.windows.ranking.top_n`) over the on-time (row, window) pairs, and its late output is
exactly what the late rule (:func:`~timeweave.core.windows.ranking.split_late`) names."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeweave.core.errors import SpecError
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, InMemoryKeyContext
from timeweave.core.state_codec import decode_cell, encode_cell
from timeweave.core.windows import Slicing, cumulate, hop, session, tumble
from timeweave.core.windows.late import LateRow
from timeweave.core.windows.operator import DeadLetter
from timeweave.core.windows.rank_operator import ROWS, RankedRow, WindowRankOperator
from timeweave.core.windows.ranking import RankRange, SortKey, dedup_order, split_late, top_n
from timeweave.core.windows.zones import TimeShift

SPECS = st.one_of(
    st.integers(1, 12).flatmap(lambda size: st.builds(tumble, st.just(size), st.integers(-size + 1, size - 1))),
    st.integers(1, 4).flatmap(lambda slide: st.builds(hop, st.just(slide), st.integers(1, 4).map(lambda k: k * slide))),
    st.integers(1, 4).flatmap(lambda step: st.builds(cumulate, st.just(step), st.integers(1, 4).map(lambda k: k * step))),
)
RANKS = st.one_of(
    st.builds(lambda f, n: RankRange.top(n, f), st.sampled_from(["ROW_NUMBER", "RANK", "DENSE_RANK"]), st.integers(1, 3)),
    st.builds(lambda f, a, b: RankRange(f, a, a + b), st.sampled_from(["ROW_NUMBER", "RANK", "DENSE_RANK"]),
              st.integers(1, 3), st.integers(0, 2)),
)
ORDERS = st.sampled_from([["p DESC"], ["p"], ["p DESC", "q"], ["p NULLS LAST", "q DESC"]])
# (time or None, key, p or None, q, watermark delay after the row)
EVENTS = st.lists(st.tuples(st.one_of(st.none(), st.integers(-20, 50)) | st.integers(-20, 50), st.sampled_from("ab"),
                            st.one_of(st.none(), st.integers(0, 4)), st.integers(0, 3), st.integers(-2, 15)),
                  max_size=45)


def _fire_time(op: WindowRankOperator, end: int) -> int:
    """When the window ending at ``end`` fires, from the zone itself (not the operator's own answer)."""
    return end - 1 if op.shift is None else TimeShift.of(op.shift.zone).fire_time(end - 1)


def _checkpoint(ctx: InMemoryKeyContext, op: WindowRankOperator) -> InMemoryKeyContext:
    """The key's state through the codec and the layout's snapshot / restore (a host or slice edge)."""
    values, timers, _ = decode_cell(encode_cell(op.layout.snapshot(ctx), ctx.timer_set, 0))
    fresh = InMemoryKeyContext(current_watermark=ctx.current_watermark)
    op.layout.restore(fresh, values)
    fresh.timer_set = set(timers)
    return fresh


def _run(op: WindowRankOperator, events, seed: int):
    """Rows in the events' order, split into random steps; each step's rows reach their key at one watermark
    (the largest time seen before the step minus the step's delay), then every key with a due timer fires."""
    rng = random.Random(seed)
    contexts: dict[Any, InMemoryKeyContext] = {}
    watermark = NO_WATERMARK
    arrival: dict[int, int] = {}  # row id -> watermark (ms) at its arrival
    main: list[tuple[Any, RankedRow]] = []
    late: list[tuple[Any, LateRow]] = []
    dead: list[DeadLetter] = []
    rows = [{"id": i, "t": t, "p": p, "q": q} for i, (t, _, p, q, _) in enumerate(events)]

    def take(key, outputs):
        for out in outputs:
            if isinstance(out, RankedRow):
                assert watermark >= _fire_time(op, out.window.end) * 1000  # emitted once the watermark reached window_time
                main.append((key, out))
            elif isinstance(out, LateRow):
                late.append((key, out))
            else:
                dead.append(out)

    i, largest = 0, None
    while i < len(events):
        step = rng.randint(1, 4)
        batch = list(range(i, min(len(events), i + step)))
        by_key: dict[str, list[int]] = {}
        for j in batch:
            by_key.setdefault(events[j][1], []).append(j)
        for key, members in by_key.items():
            ctx = _checkpoint(contexts.get(key) or InMemoryKeyContext(), op)
            ctx.current_watermark = watermark
            for j in members:
                arrival[j] = watermark if watermark == NO_WATERMARK else watermark // 1000
            take(key, op.process_elements(ctx, [rows[j] for j in members]))
            contexts[key] = ctx
        for j in batch:
            if events[j][0] is not None:
                largest = events[j][0] if largest is None else max(largest, events[j][0])
        if largest is not None:
            delay = events[batch[-1]][4]
            watermark = max(watermark, (largest - delay) * 1000)
        for key, ctx in list(contexts.items()):
            ctx = _checkpoint(ctx, op)
            ctx.current_watermark = watermark
            if ctx.timers() and ctx.timers()[0] <= watermark:
                take(key, op.on_watermark(ctx))
            assert len(ctx.timers()) <= 1 and all(t > watermark for t in ctx.timers())
            contexts[key] = ctx
        i += step
    watermark = END_OF_TIME
    for key, ctx in contexts.items():
        ctx.current_watermark = END_OF_TIME
        take(key, op.finish(ctx))
        assert ctx.is_empty()
    return rows, arrival, main, late, dead


def _expected(op: WindowRankOperator, events, rows, arrival):
    """The batch rule over the on-time pairs, per key, and the late rule's late rows."""
    slicing = Slicing.of(op.spec)
    local = (lambda t: t) if op.shift is None else op.shift.local  # a time zone's wall clock
    pairs = [(row, w) for row, e in zip(rows, events, strict=True) if e[0] is not None
             for w in slicing.windows_of(local(e[0]))]
    kept, late = split_late(pairs, time_of=lambda r: local(r["t"]), watermark_of=lambda r: arrival[r["id"]],
                            fire_time=lambda end: _fire_time(op, end))
    ranked = top_n(kept, op.order, op.ranks, key_of=lambda r: events[r["id"]][1])
    return ranked, late


def _shape(op, key, window, row, rank):
    # ROW_NUMBER numbers tied rows in their arrival order, which SQL leaves open: compare the sort values
    return (key, window.start, window.end, rank, tuple(row[k.column] for k in op.order))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(SPECS, ORDERS, RANKS, EVENTS, st.integers(0, 2**16), st.sampled_from([None, 0, 2]))
def test_random_steps_with_restores_are_the_batch_rule_over_on_time_rows(spec, order, ranks, events, seed,
                                                                         prune) -> None:
    # prune_above 0 / 2: every slice is cut to its candidates after each step (the default rarely cuts here)
    op = WindowRankOperator(spec, order, ranks, time_column="t", time_of=lambda r: r["t"], prune_above=prune)
    rows, arrival, main, late, dead = _run(op, events, seed)
    ranked, expected_late = _expected(op, events, rows, arrival)
    assert sorted(_shape(op, k, o.window, o.row, o.rank) for k, o in main) == sorted(
        _shape(op, events[r["id"]][1], w, r, rank) for r, w, rank in ranked)
    assert sorted((o.row["id"], o.missed, o.dropped, o.watermark) for _, o in late) == sorted(
        (o.row["id"], o.missed, o.dropped, o.watermark) for o in expected_late)
    assert sorted(d.row["id"] for d in dead) == [i for i, e in enumerate(events) if e[0] is None]
    assert all(d.reason == "NULL event time column t" for d in dead)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(SPECS, st.sampled_from(["first", "last"]), EVENTS, st.integers(0, 2**16))
def test_deduplication_is_top_one_by_time(spec, keep, events, seed) -> None:
    op = WindowRankOperator.deduplicate(spec, time_column="t", keep=keep, time_of=lambda r: r["t"])
    rows, arrival, main, late, _ = _run(op, events, seed)
    ranked, expected_late = _expected(op, events, rows, arrival)
    assert op.order == (dedup_order("t", keep),) and op.ranks == RankRange.top(1)
    assert sorted(_shape(op, k, o.window, o.row, o.rank) for k, o in main) == sorted(
        _shape(op, events[r["id"]][1], w, r, rank) for r, w, rank in ranked)
    assert len({(k, o.window) for k, o in main}) == len(main)  # one row per key and window
    assert sorted(o.row["id"] for _, o in late) == sorted(o.row["id"] for o in expected_late)


# Around Los Angeles' daylight-saving changes of 2021 (a repeated and a skipped hour), in steps of 10 minutes.
_TEN_MINUTES = 600_000
_DST = {"fall": 1636275600000 - 20 * _TEN_MINUTES, "spring": 1615716000000 - 20 * _TEN_MINUTES}


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from([tumble("30 minutes"), hop("20 minutes", "1 hour"), cumulate("20 minutes", "1 hour"),
                        tumble("1 day", "-8 hours")]),
       st.sampled_from(["fall", "spring"]), st.sampled_from(["America/Los_Angeles", "Asia/Shanghai"]), RANKS, EVENTS,
       st.integers(0, 2**16))
def test_windows_follow_the_time_zones_wall_clock(spec, change, zone, ranks, events, seed) -> None:
    """TIMESTAMP_LTZ windows on a session zone's wall clock: the batch rule over the on-time pairs, each row
    windowed by its local time, each window fired at its instant (:meth:`TimeShift.fire_time`)."""
    base = _DST[change]
    scaled = [(None if t is None else base + t * _TEN_MINUTES, k, p, q, d * _TEN_MINUTES) for t, k, p, q, d in events]
    op = WindowRankOperator(spec, ["p DESC", "q"], ranks, time_column="t", time_of=lambda r: r["t"], time_zone=zone)
    rows, arrival, main, late, _ = _run(op, scaled, seed)
    ranked, expected_late = _expected(op, scaled, rows, arrival)
    assert sorted(_shape(op, k, o.window, o.row, o.rank) for k, o in main) == sorted(
        _shape(op, scaled[r["id"]][1], w, r, rank) for r, w, rank in ranked)
    assert sorted((o.row["id"], o.missed) for _, o in late) == sorted((o.row["id"], o.missed) for o in expected_late)


def test_late_row_of_a_hop_window_still_ranks_in_its_later_windows() -> None:
    op = WindowRankOperator(hop(5, 10), "p DESC", RankRange.top(1), time_column="t", time_of=lambda r: r["t"])
    ctx = InMemoryKeyContext()
    op.process_elements(ctx, [{"t": 3, "p": 1}])
    ctx.current_watermark = 9_000  # [-5, 5) and [0, 10) fire
    assert [(o.window.start, o.row["p"]) for o in op.on_watermark(ctx)] == [(-5, 1), (0, 1)]
    out = op.process_elements(ctx, [{"t": 7, "p": 9}])  # late for [0, 10), on time for [5, 15)
    assert [(o.missed, o.dropped) for o in out] == [(((w := Slicing.of(op.spec).windows_of(7)[0]),), False)]
    assert w.start == 0
    assert [(o.window.start, o.row["p"]) for o in op.finish(ctx)] == [(5, 9)]


def test_a_slice_keeps_only_rows_that_can_still_rank() -> None:
    op = WindowRankOperator(tumble(1000), "p DESC", RankRange.top(2), time_column="t", time_of=lambda r: r["t"])
    ctx = InMemoryKeyContext()
    op.process_elements(ctx, [{"t": i, "p": i % 50} for i in range(200)])
    (rows,) = ctx.get(ROWS).values()
    assert [r["p"] for r in rows] == [49, 49, 49, 49]  # the four tied for rank 1: each may be row 1 or 2
    assert [(o.row["p"], o.rank) for o in op.finish(ctx)] == [(49, 1), (49, 2)]


def test_ties_keep_arrival_order_for_row_number_and_share_a_rank() -> None:
    rows = [{"t": 1, "p": 2, "id": 0}, {"t": 2, "p": 2, "id": 1}, {"t": 3, "p": 1, "id": 2}]
    for function, expected in (("ROW_NUMBER", [(0, 1), (1, 2)]), ("RANK", [(0, 1), (1, 1)]),
                               ("DENSE_RANK", [(0, 1), (1, 1), (2, 2)])):
        op = WindowRankOperator(tumble(10), [SortKey("p", True)], RankRange.top(2, function), time_column="t",
                                time_of=lambda r: r["t"])
        ctx = InMemoryKeyContext()
        op.process_elements(ctx, rows)
        assert [(o.row["id"], o.rank) for o in op.finish(ctx)] == expected


def test_bad_specs_name_the_argument() -> None:
    with pytest.raises(SpecError, match="SESSION"):
        WindowRankOperator(session(5), "p", RankRange.top(1), time_column="t")
    with pytest.raises(SpecError, match="'ranks'"):
        WindowRankOperator(tumble(5), "p", 3, time_column="t")  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="'keep'"):
        WindowRankOperator.deduplicate(tumble(5), time_column="t", keep="middle")
    with pytest.raises(SpecError, match="order_by"):
        WindowRankOperator(tumble(5), [], RankRange.top(1), time_column="t")
