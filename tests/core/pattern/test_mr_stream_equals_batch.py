"""Property: the streaming operator, fed out of order with any watermark schedule, ends with the batch rows.

Rows the operator reports late are exactly the rows that arrived at or below the watermark; the
batch run over the remaining rows must give the same output, in the same order.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from timeweave.core.pattern import LateRow, Matched, MatchRecognizeOperator, match_partition, parse_clause
from timeweave.core.pattern.operator import BUFFER, SEQUENCE, TIMER
from timeweave.core.state import InMemoryKeyContext

CLAUSES = [
    # greedy loop + aggregate in DEFINE + skip to a variable
    "ORDER BY t MEASURES FIRST(A.t) AS s, COUNT(*) AS n, SUM(B.v) AS total AFTER MATCH SKIP TO LAST B "
    "PATTERN (A B+ C) DEFINE B AS B.v >= PREV(B.v) AND SUM(B.v) < 12, C AS C.v < PREV(C.v)",
    # WITHIN pruning by the watermark
    "ORDER BY t MEASURES FIRST(A.t) AS s, LAST(A.t) AS e PATTERN (A+ B) WITHIN INTERVAL '0.000005' SECOND "
    "DEFINE A AS A.v > 1, B AS B.v <= 1",
    # NEXT reads ahead; ALL ROWS with RUNNING measures
    "ORDER BY t MEASURES CLASSIFIER() AS cls, RUNNING COUNT(*) AS n ALL ROWS PER MATCH "
    "PATTERN (UP+ DOWN) DEFINE UP AS NEXT(UP.v) > UP.v OR NEXT(UP.v) IS NULL, DOWN AS DOWN.v < PREV(DOWN.v)",
    # the end anchor, empty matches and unmatched rows
    "ORDER BY t MEASURES MATCH_NUMBER() AS mn ALL ROWS PER MATCH WITH UNMATCHED ROWS "
    "PATTERN (A* $ | B) DEFINE A AS A.v > 2, B AS B.v = 0",
    # reluctant quantifier, PERMUTE and exclusion
    "ORDER BY t MEASURES COUNT(*) AS n, CLASSIFIER() AS last ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW "
    "PATTERN (PERMUTE(A, B) {- C*? -} D) DEFINE A AS A.v = 1, B AS B.v = 2, D AS D.v = 3",
]


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[str, Any]]]:
    """Rows with distinct increasing times, delivered out of order, with watermarks in between."""
    count = draw(st.integers(0, 14))
    gaps = draw(st.lists(st.integers(1, 3), min_size=count, max_size=count))
    values = draw(st.lists(st.integers(0, 4), min_size=count, max_size=count))
    rows, time = [], 0
    for gap, value in zip(gaps, values, strict=True):
        time += gap
        rows.append({"t": time, "v": value})
    order = draw(st.permutations(range(count)).map(list)) if draw(st.booleans()) else list(range(count))
    events: list[tuple[str, Any]] = []
    watermark = -1
    for index in order:
        events.append(("row", rows[index]))
        if draw(st.booleans()):
            seen = max(e[1]["t"] for e in events if e[0] == "row")
            watermark = max(watermark, seen - draw(st.integers(0, 4)))
            events.append(("watermark", watermark))
    return rows, events


@settings(max_examples=150, deadline=None)
@given(clause=st.sampled_from(CLAUSES), stream=streams())
def test_stream_ends_with_the_batch_rows(clause: str, stream: tuple[list[dict[str, Any]], list[Any]]) -> None:
    spec = parse_clause(clause)
    _, events = stream
    operator = MatchRecognizeOperator(spec)
    ctx = InMemoryKeyContext()
    output: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    accepted: list[dict[str, Any]] = []
    for kind, payload in events:
        if kind == "row":
            results = list(operator.process_element(ctx, payload))
            if results:
                assert isinstance(results[0], LateRow)
                late.append(payload)
            else:
                accepted.append(payload)
        else:
            ctx.current_watermark = payload
            if any(t <= payload for t in ctx.timers()):
                output += [o.row for o in operator.on_watermark(ctx) if isinstance(o, Matched)]
    output += [o.row for o in operator.finish(ctx) if isinstance(o, Matched)]
    assert ctx.is_empty()
    batch = list(match_partition(spec, sorted(accepted, key=lambda r: r["t"])))
    assert output == batch


@settings(max_examples=150, deadline=None)
@given(clause=st.sampled_from(CLAUSES), stream=streams(), cuts=st.lists(st.booleans(), min_size=30, max_size=30))
def test_bulk_elements_equal_row_by_row(clause: str, stream: tuple[list[dict[str, Any]], list[Any]],
                                        cuts: list[bool]) -> None:
    """``process_elements`` over runs of rows (as an adapter hands over a micro-batch) leaves the same
    state and timers and reports the same late rows as ``process_element`` row by row (runs of one row);
    the output is the same."""
    spec = parse_clause(clause)
    _, events = stream
    one, bulk = MatchRecognizeOperator(spec), MatchRecognizeOperator(spec)
    ctx_one, ctx_bulk = InMemoryKeyContext(), InMemoryKeyContext()
    out_one: list[Any] = []
    out_bulk: list[Any] = []
    pending: list[dict[str, Any]] = []

    def flush_pending() -> None:
        out_bulk.extend(("late", late.row, late.watermark) for late in bulk.process_elements(ctx_bulk, pending))
        pending.clear()

    for i, (kind, payload) in enumerate(events):
        if kind == "row":
            out_one.extend(("late", o.row, o.watermark) for o in one.process_element(ctx_one, payload))
            pending.append(payload)
            if cuts[i % len(cuts)]:
                flush_pending()
                assert _buffering_state(ctx_bulk) == _buffering_state(ctx_one)
        else:
            flush_pending()
            assert _buffering_state(ctx_bulk) == _buffering_state(ctx_one)
            for ctx, op, out in ((ctx_one, one, out_one), (ctx_bulk, bulk, out_bulk)):
                ctx.current_watermark = payload
                if any(t <= payload for t in ctx.timers()):
                    out.extend(o.row for o in op.on_watermark(ctx) if isinstance(o, Matched))
    flush_pending()
    out_one += [o.row for o in one.finish(ctx_one) if isinstance(o, Matched)]
    out_bulk += [o.row for o in bulk.finish(ctx_bulk) if isinstance(o, Matched)]
    assert out_bulk == out_one


def _buffering_state(ctx: InMemoryKeyContext) -> tuple[Any, ...]:
    """What the element handlers write: buffer, arrival counter, timer state and timers (not the matcher)."""
    return ctx.get(BUFFER), ctx.get(SEQUENCE), ctx.get(TIMER), sorted(ctx.timer_set)
