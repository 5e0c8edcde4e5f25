"""The keyed window-aggregate operator: the late rule per window, sessions, timers, state, and random streams
(no late rows: the batch answer; late rows: every window minus exactly the rows reported as missing it)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeweave.core.state import END_OF_TIME, NO_WATERMARK, InMemoryKeyContext
from timeweave.core.state_codec import decode_cell, encode_cell
from timeweave.core.windows import (
    AggregateCall,
    Aggregates,
    CountDistinct,
    CountStar,
    DeadLetter,
    LateRow,
    Max,
    SessionSpec,
    Slicing,
    Sum,
    Window,
    WindowAggregateOperator,
    WindowRow,
    cumulate,
    evaluate,
    hop,
    session,
    tumble,
)
from timeweave.core.windows.operator import SLICES

CALLS = [AggregateCall(CountStar(), name="n"), AggregateCall(Sum(), "v", name="total"),
         AggregateCall(Max(), "id", name="last"), AggregateCall(CountDistinct(), "v", name="distinct")]


class Harness:
    """Rows per key in arrival order at a watermark (ms); the operator woken by its timers; state checkpointed."""

    def __init__(self, spec, calls=CALLS, *, handler_first: bool = True) -> None:
        self.op = WindowAggregateOperator(spec, calls, time_column="t")
        self.contexts: dict[Any, InMemoryKeyContext] = {}
        self.watermark = NO_WATERMARK
        self.windows: list[tuple[Any, WindowRow]] = []
        self.late: list[tuple[Any, LateRow]] = []
        self.dead: list[DeadLetter] = []
        self.handler_first = handler_first

    def _take(self, key: Any, outputs: list) -> None:
        for out in outputs:
            if isinstance(out, WindowRow):
                # a window is emitted once the watermark has reached its window_time, never before
                assert self.watermark >= out.time * 1000
                self.windows.append((key, out))
            elif isinstance(out, LateRow):
                self.late.append((key, out))
            else:
                self.dead.append(out)

    def send(self, row: dict, key: Any = ()) -> None:
        ctx = self.contexts.setdefault(key, InMemoryKeyContext())
        ctx.current_watermark = self.watermark
        if not self.handler_first and ctx.timers() and ctx.timers()[0] <= self.watermark:
            self._take(key, self.op.on_watermark(ctx))
        self._take(key, self.op.process_elements(ctx, [row]))
        self._checkpoint(ctx)

    def advance(self, watermark_ms: int) -> None:
        self.watermark = max(self.watermark, watermark_ms * 1000)
        for key, ctx in self.contexts.items():
            ctx.current_watermark = self.watermark
            if ctx.timers() and ctx.timers()[0] <= self.watermark:
                self._take(key, self.op.on_watermark(ctx))
                self._checkpoint(ctx)
            assert len(ctx.timers()) <= 1 and all(t > self.watermark for t in ctx.timers())

    def end(self) -> None:
        self.watermark = END_OF_TIME
        for key, ctx in self.contexts.items():
            self._take(key, self.op.finish(ctx))
            assert ctx.is_empty()

    @staticmethod
    def _checkpoint(ctx: InMemoryKeyContext) -> None:
        values, timers, _ = decode_cell(encode_cell(ctx.values, ctx.timer_set, 0))
        assert values == ctx.values and timers == ctx.timer_set
        ctx.values, ctx.timer_set = values, timers

    def result(self) -> list[tuple[Any, int, int, int]]:
        """(key, start, end, row count) of the emitted windows."""
        return [(k, w.start, w.end, w.values[0]) for k, w in self.windows]


def _row(t, v=1, i=0):
    return {"t": t, "v": v, "id": i}


def test_late_rule_at_the_boundary_tumble() -> None:
    h = Harness(tumble(10))
    h.send(_row(5))
    h.advance(8)  # window_time 9 not reached
    assert h.windows == []
    h.send(_row(3))  # not late: its window has not fired
    h.advance(9)  # watermark == window_time: the window fires
    assert h.result() == [((), 0, 10, 2)]
    h.send(_row(7))  # arrives at watermark 9: its window has fired
    [(_, late)] = h.late
    assert (late.time, late.watermark, late.missed, late.dropped) == (7, 9, (Window(0, 10),), True)
    assert "dropped from every window" in late.reason
    h.end()
    assert h.result() == [((), 0, 10, 2)]


def test_hop_late_row_still_counts_in_later_windows() -> None:
    h = Harness(hop(5, 10))
    h.send(_row(7, v=1))
    h.advance(9)  # [0, 10) fires
    h.send(_row(8, v=2))  # missed [0, 10); [5, 15) has not fired
    [(_, late)] = h.late
    assert late.missed == (Window(0, 10),) and not late.dropped
    assert "still counted in its later windows" in late.reason
    h.end()
    assert h.result() == [((), 0, 10, 1), ((), 5, 15, 2)]
    assert h.windows[1][1].values[1] == 3


def test_cumulate_late_row_counts_in_the_periods_later_windows() -> None:
    h = Harness(cumulate(2, 10))
    h.send(_row(1, v=1))
    h.advance(5)  # [0, 2), [0, 4), [0, 6) fire
    h.send(_row(3, v=10))  # its slice ends at 4: missed [0, 4) and [0, 6), counts in [0, 8) and [0, 10)
    h.send(_row(1, v=100))  # missed [0, 2), [0, 4), [0, 6)
    h.send(_row(7, v=1000))  # not late
    assert [(late.missed, late.dropped) for _, late in h.late] == [
        ((Window(0, 4), Window(0, 6)), False), ((Window(0, 2), Window(0, 4), Window(0, 6)), False)]
    h.end()
    assert [(w.end, w.values[:2]) for _, w in h.windows] == [
        (2, (1, 1)), (4, (1, 1)), (6, (1, 1)), (8, (4, 1111)), (10, (4, 1111))]


def test_cumulate_late_row_in_a_period_without_other_rows() -> None:
    h = Harness(cumulate(2, 10))
    h.send(_row(21))  # moves nothing; a row of the next period
    h.advance(13)
    h.send(_row(11, v=5))  # period [10, 20): [10, 12) and [10, 14) have fired, never with a row
    h.end()
    assert [(w.start, w.end, w.values[1]) for _, w in h.windows] == [
        (10, 16, 5), (10, 18, 5), (10, 20, 5), (20, 22, 1), (20, 24, 1), (20, 26, 1), (20, 28, 1), (20, 30, 1)]


def test_session_late_rules() -> None:
    h = Harness(session(5))
    h.send(_row(0))
    h.advance(4)  # [0, 5) fires
    assert h.result() == [((), 0, 5, 1)]
    h.send(_row(-10))  # its own session [-10, -5) has fired: dropped
    h.send(_row(3))  # [0, 5) is gone (fired, cleared): a new session [3, 8), not late
    [(_, late)] = h.late
    assert (late.time, late.missed, late.dropped) == (-10, (Window(-10, -5),), True)
    h.end()
    assert h.result() == [((), 0, 5, 1), ((), 3, 8, 1)]


def test_session_row_merges_first_then_the_lateness_is_checked() -> None:
    h = Harness(session(5))
    h.send(_row(3))
    h.send(_row(7))  # one session [3, 12)
    h.advance(8)
    h.send(_row(1))  # its own [1, 6) has passed the watermark, but it merges into the live [3, 12)
    assert h.late == []
    h.end()
    assert h.result() == [((), 1, 12, 3)]


def test_session_bridging_out_of_order() -> None:
    h = Harness(session(5))
    h.send(_row(0, v=1))
    h.send(_row(10, v=2))
    h.advance(3)
    assert h.windows == []
    h.send(_row(5, v=4))  # one gap after [0, 5), one gap before [10, 15): the three become one
    h.send(_row(20, v=8))
    h.end()
    assert [(w.start, w.end, w.values[:2]) for _, w in h.windows] == [(0, 15, (3, 7)), (20, 25, (1, 8))]


def test_dead_letters_and_keys() -> None:
    h = Harness(tumble(10))
    h.send({"t": None, "v": 1, "id": 9}, key="a")
    [dead] = h.dead
    assert dead.reason == "NULL event time column t" and dead.row["id"] == 9
    h.send(_row(1), key="a")
    h.send(_row(2), key="b")
    h.end()
    assert sorted(h.result()) == [("a", 0, 10, 1), ("b", 0, 10, 1)]


def test_one_timer_at_the_next_window_time() -> None:
    op = WindowAggregateOperator(hop(5, 10), CALLS, time_column="t")
    ctx = InMemoryKeyContext()
    op.process_elements(ctx, [_row(7), _row(23)])
    assert ctx.timers() == [9_000]  # window_time of [0, 10), in µs
    ctx.current_watermark = 9_000
    assert [w.window for w in op.on_watermark(ctx)] == [Window(0, 10)]
    assert ctx.timers() == [14_000]
    ctx.current_watermark = 100_000
    assert [w.window for w in op.on_watermark(ctx)] == [Window(5, 15), Window(15, 25), Window(20, 30)]
    assert ctx.is_empty()


def test_hop_keeps_slices_not_windows() -> None:
    op = WindowAggregateOperator(hop(1, 60), CALLS, time_column="t")
    ctx = InMemoryKeyContext()
    op.process_elements(ctx, [_row(t) for t in range(0, 30)] * 3)
    assert sorted(ctx.get(SLICES)) == list(range(1, 31))  # 30 slices for 89 windows x 90 rows
    ctx.current_watermark = 10**9
    windows = op.on_watermark(ctx)
    assert len(windows) == 89 and windows[0].values[0] == 3 and max(w.values[0] for w in windows) == 90


def test_handler_fires_what_the_watermark_passed_first() -> None:
    """A host may hand rows before waking the timers: the windows the watermark passed fire first, without them."""
    op = WindowAggregateOperator(tumble(10), CALLS, time_column="t")
    ctx = InMemoryKeyContext()
    op.process_elements(ctx, [_row(1)])
    ctx.current_watermark = 12_000
    outputs = op.process_elements(ctx, [_row(2), _row(15)])
    assert [type(o).__name__ for o in outputs] == ["WindowRow", "LateRow"]
    assert outputs[0].values[0] == 1 and outputs[1].missed == (Window(0, 10),)


# -- random streams ----------------------------------------------------------------------------------------
SPECS = st.one_of(
    st.builds(lambda s, o: tumble(s, o % s), st.integers(1, 12), st.integers(0, 20)),
    st.builds(lambda s, n, o: hop(s, s * n, o), st.integers(1, 6), st.integers(1, 4), st.integers(-10, 10)),
    st.builds(lambda s, n, o: cumulate(s, s * n, o), st.integers(1, 6), st.integers(1, 4), st.integers(-10, 10)),
    st.builds(session, st.integers(1, 8)),
)
EVENTS = st.lists(st.tuples(st.integers(-30, 60), st.sampled_from("ab"), st.integers(0, 3), st.integers(-3, 25)),
                  max_size=40)


def _send_all(h: Harness, events, late: bool) -> list[dict]:
    rows = []
    for i, (t, key, v, step) in enumerate(events):
        row = {"t": t, "v": v, "id": i}
        rows.append(row)
        h.send(row, key)
        if late:
            h.advance(t - step)  # a watermark behind the largest time by a random delay: late rows happen
    h.end()
    return rows


def _rendered(pairs) -> list:
    return sorted((k, w.start, w.end, w.values) for k, w in pairs)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(SPECS, EVENTS, st.booleans())
def test_a_stream_without_late_rows_is_the_batch_answer(spec, events, handler_first) -> None:
    h = Harness(spec, handler_first=handler_first)
    rows = _send_all(h, events, late=False)
    batch = evaluate(spec, CALLS, rows, time_column="t", key_of=lambda r: next(e[1] for i, e in enumerate(events) if i == r["id"]))
    assert _rendered(h.windows) == _rendered(batch.rows)
    assert h.late == []


def _reference_sessions(spec: SessionSpec, events, key: str) -> tuple[list, list]:
    """Sessions of one key, straight from the rule: merge with the live sessions, drop when the merged session
    has fired, fire (and forget) a session once the watermark reaches its window_time."""
    live: list[list] = []  # [start, end, rows]
    fired, dropped = [], []
    watermark = None
    for i, (t, k, v, step) in enumerate(events):
        if k == key:
            start, end, members = t, t + spec.gap, [(i, v)]
            for s in [s for s in live if s[0] <= end and s[1] >= start]:
                live.remove(s)
                start, end, members = min(start, s[0]), max(end, s[1]), members + s[2]
            if watermark is not None and end - 1 <= watermark:
                dropped.append(i)
            else:
                live.append([start, end, members])
        watermark = t - step if watermark is None else max(watermark, t - step)
        for s in sorted(s for s in live if s[1] - 1 <= watermark):
            live.remove(s)
            fired.append(s)
    return fired + sorted(live), dropped


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(SPECS, EVENTS, st.booleans())
def test_a_stream_with_late_rows_loses_exactly_what_it_reports(spec, events, handler_first) -> None:
    h = Harness(spec, handler_first=handler_first)
    rows = _send_all(h, events, late=True)
    aggs = Aggregates(CALLS)
    if isinstance(spec, SessionSpec):
        expected = []
        for key in "ab":
            sessions, dropped = _reference_sessions(spec, events, key)
            for start, end, members in sessions:
                accs = aggs.create()
                for i, _ in members:
                    aggs.add(accs, rows[i])
                expected.append((key, start, end, aggs.results(accs)))
            assert sorted(late.row["id"] for k, late in h.late if k == key) == dropped
        assert all(late.dropped for _, late in h.late)
        assert _rendered(h.windows) == sorted(expected)
        return
    missed = {late.row["id"]: set(late.missed) for _, late in h.late}
    windows: dict = {}
    for (t, key, _, _), row in zip(events, rows, strict=True):
        for window in Slicing.of(spec).windows_of(t):
            if window not in missed.get(row["id"], ()):
                aggs.add(windows.setdefault((key, window), aggs.create()), row)
    assert _rendered(h.windows) == sorted((k, w.start, w.end, aggs.results(a)) for (k, w), a in windows.items())
    # the late output is exactly the rows that missed a window, with the windows fired at their arrival
    for _, late in h.late:
        assert late.missed and all(w.end - 1 <= late.watermark for w in late.missed)
        assert late.dropped == (len(late.missed) == len(Slicing.of(spec).windows_of(late.time)))


@pytest.mark.parametrize("spec", [tumble(10), hop(5, 10), cumulate(2, 10), session(5)])
def test_end_of_input_flushes_everything(spec) -> None:
    h = Harness(spec)
    for t in (1, 2, 30, 31):
        h.send(_row(t))
    h.end()
    assert sum(w.values[0] for _, w in h.windows) >= 4 and h.late == []


def test_an_older_watermark_cannot_reopen_fired_windows() -> None:
    op = WindowAggregateOperator(hop(5, 10), CALLS, time_column="t")
    ctx = InMemoryKeyContext()
    op.process_elements(ctx, [_row(7)])
    ctx.current_watermark = 9_000
    assert [w.window for w in op.on_watermark(ctx)] == [Window(0, 10)]
    ctx.current_watermark = 2_000  # a host going back in time (it must not)
    [late] = op.process_elements(ctx, [_row(8)])
    assert late.missed == (Window(0, 10),) and late.watermark == 9
    assert [w.values[0] for w in op.finish(ctx)] == [2]


def test_every_window_output_class_carries_a_contract_tag() -> None:
    """The host routes by ``tag_of``; a plain-string tag made it raise TypeError on the window operators' outputs."""
    from timeweave.core.operator import Tag, tag_of
    from timeweave.core.windows import join_operator, late, operator, rank_operator
    from timeweave.core.windows.join_operator import WindowJoinOperator  # noqa: F401 (module defines JoinedRow)

    classes = [operator.WindowRow, operator.DeadLetter, late.LateRow]
    classes += [c for m in (join_operator, rank_operator) for c in vars(m).values()
                if isinstance(c, type) and c.__module__ == m.__name__ and "tag" in vars(c)]
    assert len(classes) >= 5
    for cls in classes:
        assert isinstance(cls.tag, Tag), cls
        assert tag_of(object.__new__(cls)) is cls.tag
