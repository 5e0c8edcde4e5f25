"""The keyed window join operator: in random arrival order, split into random steps with the state snapshot and
restored through the codec between steps, its output is SQL's join of the two inputs' on-time (row, window) pairs
on the window and the key (a NULL key joins nothing), for each of the six join kinds; its late output is exactly
what the late rule (:func:`~timeweave.core.windows.ranking.split_late`) names."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeweave.core.errors import SpecError
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, InMemoryKeyContext
from timeweave.core.state_codec import decode_cell, encode_cell
from timeweave.core.windows import Slicing, cumulate, hop, session, tumble
from timeweave.core.windows.join_operator import LEFT, RIGHT, JoinedRow, WindowJoinOperator
from timeweave.core.windows.late import LateRow
from timeweave.core.windows.operator import DeadLetter
from timeweave.core.windows.ranking import JOIN_TYPES, split_late
from timeweave.core.windows.zones import TimeShift

SPECS = st.one_of(
    st.integers(1, 12).flatmap(lambda size: st.builds(tumble, st.just(size), st.integers(-size + 1, size - 1))),
    st.integers(1, 4).flatmap(lambda slide: st.builds(hop, st.just(slide), st.integers(1, 4).map(lambda k: k * slide))),
    st.integers(1, 4).flatmap(lambda step: st.builds(cumulate, st.just(step), st.integers(1, 4).map(lambda k: k * step))),
)
# (side, time or None, key or None, watermark delay after the row)
EVENTS = st.lists(st.tuples(st.sampled_from([LEFT, RIGHT]), st.one_of(st.none(), st.integers(-20, 50)),
                            st.sampled_from(["a", "b", None]), st.integers(-2, 15)), max_size=40)


def _fire_time(op: WindowJoinOperator, end: int) -> int:
    """When the window ending at ``end`` fires, from the zone itself (not the operator's own answer)."""
    return end - 1 if op.shift is None else TimeShift.of(op.shift.zone).fire_time(end - 1)


def _checkpoint(ctx: InMemoryKeyContext, op: WindowJoinOperator) -> InMemoryKeyContext:
    values, timers, _ = decode_cell(encode_cell(op.layout.snapshot(ctx), ctx.timer_set, 0))
    fresh = InMemoryKeyContext(current_watermark=ctx.current_watermark)
    op.layout.restore(fresh, values)
    fresh.timer_set = set(timers)
    return fresh


def _run(op: WindowJoinOperator, events, seed: int):
    rng = random.Random(seed)
    contexts: dict[Any, InMemoryKeyContext] = {}
    watermark = NO_WATERMARK
    arrival: dict[int, int] = {}
    main: list[JoinedRow] = []
    late: list[LateRow] = []
    dead: list[DeadLetter] = []
    elements = [(side, {"id": i, "t": t, "k": k}) for i, (side, t, k, _) in enumerate(events)]

    def take(outputs):
        for out in outputs:
            if isinstance(out, JoinedRow):
                assert watermark >= _fire_time(op, out.window.end) * 1000
                main.append(out)
            elif isinstance(out, LateRow):
                late.append(out)
            else:
                dead.append(out)

    i, largest = 0, None
    while i < len(events):
        step = rng.randint(1, 4)
        batch = list(range(i, min(len(events), i + step)))
        by_key: dict[Any, list[int]] = {}
        for j in batch:
            by_key.setdefault(events[j][2], []).append(j)
        for key, members in by_key.items():
            ctx = _checkpoint(contexts.get(key) or InMemoryKeyContext(), op)
            ctx.current_watermark = watermark
            for j in members:
                arrival[j] = watermark if watermark == NO_WATERMARK else watermark // 1000
            take(op.process_elements(ctx, [elements[j] for j in members]))
            contexts[key] = ctx
        for j in batch:
            if events[j][1] is not None:
                largest = events[j][1] if largest is None else max(largest, events[j][1])
        if largest is not None:
            watermark = max(watermark, (largest - events[batch[-1]][3]) * 1000)
        for key, ctx in list(contexts.items()):
            ctx = _checkpoint(ctx, op)
            ctx.current_watermark = watermark
            if ctx.timers() and ctx.timers()[0] <= watermark:
                take(op.on_watermark(ctx))
            assert len(ctx.timers()) <= 1 and all(t > watermark for t in ctx.timers())
            contexts[key] = ctx
        i += step
    watermark = END_OF_TIME
    for ctx in contexts.values():
        ctx.current_watermark = END_OF_TIME
        take(op.finish(ctx))
        assert ctx.is_empty()
    return elements, arrival, main, late, dead


def _sql_join(how: str, left: list[tuple], right: list[tuple]) -> Counter:
    """SQL's join of (id, key, window) tuples on key and window (NULL keys match nothing): (window, left id,
    right id) with None for a missing side."""
    def matches(l, r):  # noqa: E741
        return l[1] is not None and l[1] == r[1] and l[2] == r[2]

    out: Counter = Counter()
    if how in ("INNER", "LEFT", "RIGHT", "FULL"):
        out.update((l[2], l[0], r[0]) for l in left for r in right if matches(l, r))  # noqa: E741
    if how in ("LEFT", "FULL"):
        out.update((l[2], l[0], None) for l in left if not any(matches(l, r) for r in right))  # noqa: E741
    if how in ("RIGHT", "FULL"):
        out.update((r[2], None, r[0]) for r in right if not any(matches(l, r) for l in left))  # noqa: E741
    if how == "SEMI":
        out.update((l[2], l[0], None) for l in left if any(matches(l, r) for r in right))  # noqa: E741
    if how == "ANTI":
        out.update((l[2], l[0], None) for l in left if not any(matches(l, r) for r in right))  # noqa: E741
    return out


_TEN_MINUTES = 600_000
_FALL_BACK = 1636275600000 - 20 * _TEN_MINUTES  # 2021-11-07 in Los Angeles: a repeated hour


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(SPECS, st.sampled_from(JOIN_TYPES), EVENTS, st.integers(0, 2**16), st.booleans())
def test_random_steps_with_restores_are_the_sql_join_of_on_time_pairs(spec, how, events, seed, zoned) -> None:
    if zoned:  # TIMESTAMP_LTZ windows on Los Angeles' wall clock, around a daylight-saving change
        spec = {"TUMBLE": tumble("30 minutes"), "HOP": hop("20 minutes", "1 hour")}.get(spec.kind, cumulate("20 minutes",
                                                                                                           "1 hour"))
        events = [(s, None if t is None else _FALL_BACK + t * _TEN_MINUTES, k, d * _TEN_MINUTES) for s, t, k, d in events]
    op = WindowJoinOperator(spec, how, left_time="t", right_time="t", left_keys=("k",), right_keys=("k",),
                            time_zone="America/Los_Angeles" if zoned else None)
    elements, arrival, main, late, dead = _run(op, events, seed)
    slicing = Slicing.of(spec)
    local = (lambda t: t) if op.shift is None else op.shift.local
    pairs = [(e, w) for e in elements if e[1]["t"] is not None for w in slicing.windows_of(local(e[1]["t"]))]
    kept, expected_late = split_late(pairs, time_of=lambda e: local(e[1]["t"]), watermark_of=lambda e: arrival[e[1]["id"]],
                                     fire_time=lambda end: _fire_time(op, end))
    sides = ([], [])
    for (side, row), w in kept:
        sides[side].append((row["id"], row["k"], w))
    expected = _sql_join(how, *sides)
    got = Counter((j.window, None if j.left is None else j.left["id"], None if j.right is None else j.right["id"])
                  for j in main)
    assert got == expected
    assert sorted((o.row[1]["id"], o.missed, o.dropped) for o in late) == sorted(
        (o.row[1]["id"], o.missed, o.dropped) for o in expected_late)
    assert sorted(d.row[1]["id"] for d in dead) == [i for i, e in enumerate(events) if e[1] is None]


def test_flink_docs_full_join_example() -> None:
    """Flink's docs: LeftTable (12:02 1 L1, 12:06 2 L2, 12:03 3 L3) FULL JOIN RightTable (12:01 2 R2, 12:04 3 R3,
    12:05 4 R4) on num over 5-minute TUMBLE windows (times in minutes here)."""
    op = WindowJoinOperator(tumble(5), "full", left_time="t", right_time="t", left_keys=("num",), right_keys=("num",))
    contexts: dict[int, InMemoryKeyContext] = {}
    out = []
    for side, t, num, ident in [(LEFT, 2, 1, "L1"), (LEFT, 6, 2, "L2"), (LEFT, 3, 3, "L3"), (RIGHT, 1, 2, "R2"),
                                (RIGHT, 4, 3, "R3"), (RIGHT, 5, 4, "R4")]:
        ctx = contexts.setdefault(num, InMemoryKeyContext())
        out += op.process_elements(ctx, [(side, {"t": t, "num": num, "id": ident})])
    for ctx in contexts.values():
        out += op.finish(ctx)
    got = Counter(((j.left or {}).get("id"), (j.right or {}).get("id"), j.window.start) for j in out)
    assert got == Counter([("L1", None, 0), (None, "R2", 0), ("L3", "R3", 0), ("L2", None, 5), (None, "R4", 5)])


def test_bad_specs_name_the_argument() -> None:
    with pytest.raises(SpecError, match="right_window"):
        WindowJoinOperator(tumble(5), "inner", left_time="t", right_time="t", right_spec=hop(5, 10))
    with pytest.raises(SpecError, match="SESSION"):
        WindowJoinOperator(session(5), "inner", left_time="t", right_time="t")
    with pytest.raises(SpecError, match="'how'"):
        WindowJoinOperator(tumble(5), "cross", left_time="t", right_time="t")
    with pytest.raises(SpecError, match="'right_keys'"):
        WindowJoinOperator(tumble(5), "inner", left_time="t", right_time="t", left_keys=("a",))
