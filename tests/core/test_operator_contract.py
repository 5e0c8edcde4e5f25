"""The keyed-operator contract (timeweave.core.operator): both operators run through it alone."""

from __future__ import annotations

import random

import pytest

from timeweave.core.errors import StateFormatError
from timeweave.core.operator import KeyedOperator, RowKind, StateLayout, Tag, ValueState, kind_of, run_keyed, tag_of
from timeweave.core.pattern import MatchRecognizeOperator, parse_clause
from timeweave.core.retention import IdleRetention
from timeweave.core.spec import StateRetention, TemporalJoinSpec, VersionedTableSpec
from timeweave.core.state import END_OF_TIME, InMemoryKeyContext
from timeweave.core.state_codec import decode, encode
from timeweave.core.temporal_join import EventTimeTemporalJoin, LeftRow, ProcessingTimeTemporalJoin
from timeweave.core.versioned import VersionEvent

_CLAUSE = "ORDER BY t MEASURES FIRST(A.t) AS s, LAST(B.t) AS e PATTERN (A B+) DEFINE B AS B.v > PREV(B.v)"


def _join(retention: StateRetention | None = None) -> EventTimeTemporalJoin:
    return EventTimeTemporalJoin(TemporalJoinSpec(VersionedTableSpec("k", "t"), left_time="t"), retention)


def test_both_operators_are_keyed_operators_with_declared_state() -> None:
    ops = [_join(), MatchRecognizeOperator(parse_clause(_CLAUSE)),
           ProcessingTimeTemporalJoin(TemporalJoinSpec(VersionedTableSpec("k", "t"), left_time="t"))]
    for op in ops:
        assert isinstance(op, KeyedOperator)
        assert op.layout.names and op.layout.version >= 1


def _elements(rng: random.Random, n: int) -> list:
    out, seq = [], 0
    for _ in range(n):
        t = rng.randrange(100)
        if rng.random() < 0.3:
            out.append(VersionEvent(t, seq, rng.random() < 0.1, f"v{seq}"))
        else:
            out.append(LeftRow(t, seq, f"l{seq}"))
        seq += 1
    return out


@pytest.mark.parametrize("seed", range(20))
def test_a_state_snapshot_carried_to_a_fresh_context_resumes_exactly(seed: int) -> None:
    # What the backfill driver does at a slice edge: snapshot a key's state (encoded as a checkpoint would
    # store it), restore it into a new context, and go on: the same outputs as one context throughout.
    rng = random.Random(seed)
    retention = StateRetention(min_idle=5, max_idle=30) if seed % 2 else None
    elements = _elements(rng, 60)
    steps = [(elements[i:i + 10], 10 * (i // 10 + 1)) for i in range(0, 60, 10)] + [([], END_OF_TIME)]

    def run(carry: bool) -> list[tuple]:
        op = _join(retention)
        ctx = InMemoryKeyContext()
        out = []
        for chunk, watermark in steps:
            out += [(tag_of(o).value, o.left.payload) for o in op.process_elements(ctx, chunk)]
            ctx.current_watermark = watermark
            out += [(tag_of(o).value, o.left.payload, o.match and o.match.event.payload) for o in op.on_watermark(ctx)]
            if carry:
                snapshot = decode(encode(op.layout.snapshot(ctx)))
                fresh = InMemoryKeyContext(timer_set=set(ctx.timer_set), current_watermark=watermark)
                op.layout.restore(fresh, snapshot)
                ctx = fresh
        return out

    assert run(carry=True) == run(carry=False)


def test_outputs_are_tagged_and_routed_by_the_reference_host() -> None:
    op = MatchRecognizeOperator(parse_clause(_CLAUSE), budget=None)
    rows = [("a", {"t": t, "v": v}) for t, v in [(1, 5), (3, 7), (2, 6), (4, 1)]]
    out = run_keyed(op, rows, [2, END_OF_TIME])
    assert [o.row for o in out[Tag.MAIN]] == [{"s": 1, "e": 3}]
    assert out[Tag.LATE] == [] and all(kind_of(o) is RowKind.INSERT for o in out[Tag.MAIN])
    # A row at or below the watermark is late, tagged so.
    ctx = InMemoryKeyContext(current_watermark=10)
    (late,) = op.process_elements(ctx, [{"t": 3, "v": 1}])
    assert tag_of(late) is Tag.LATE
    with pytest.raises(TypeError, match="no Tag"):
        tag_of(object())


def test_a_layout_refuses_undeclared_state_and_duplicate_names() -> None:
    with pytest.raises(StateFormatError, match="'mr-buffer' is not declared"):
        _join().layout.restore(InMemoryKeyContext(), {"mr-buffer": []})
    with pytest.raises(ValueError, match="unique"):
        StateLayout(1, (ValueState("a"), ValueState("a")))


def test_idle_retention_keeps_a_timer_it_shares() -> None:
    # The cleanup time moves on; the old instant is also the operator's emission timer: it stays registered.
    retention = IdleRetention(StateRetention(min_idle=10, max_idle=20), shared=("next",))
    ctx = InMemoryKeyContext(current_watermark=100)
    retention.touch(ctx)
    ctx.put("next", 120)
    ctx.current_watermark = 115
    retention.touch(ctx)
    assert ctx.timers() == [120, 135]
    ctx.current_watermark = 135
    retention.expire(ctx, ("next",), busy=True)
    assert ctx.values == {"next": 120}
    retention.expire(ctx, ("next",), busy=False)
    assert ctx.is_empty()
