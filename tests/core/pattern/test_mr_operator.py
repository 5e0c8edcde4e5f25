"""Layer 4: the keyed event-time MatchRecognizeOperator, through a small records-and-watermarks harness."""

from __future__ import annotations

import csv
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from timeweave.core.errors import SpecError
from timeweave.core.pattern import match_recognize, parse_clause
from timeweave.core.pattern.operator import BUFFER, MATCHER, LateRow, Matched, MatchRecognizeOperator, micros
from timeweave.core.pattern.spec import ClauseSpec
from timeweave.core.state import InMemoryKeyContext
from timeweave.core.state_codec import decode_cell, encode_cell

CASES = Path("/work/shared/conformance/flink/cases")
SECOND = 1_000_000


class Harness:
    """Feeds rows by key, advances one global watermark (max time seen - delay), fires due timers."""

    def __init__(self, spec: ClauseSpec, delay: int = 0) -> None:
        self.spec = spec
        self.operator = MatchRecognizeOperator(spec)
        self.delay = delay
        self.contexts: dict[tuple[Any, ...], InMemoryKeyContext] = {}
        self.max_time: int | None = None
        self.output: list[dict[str, Any]] = []
        self.late: list[LateRow] = []

    def key(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row[c] for c in self.spec.partition_by)

    def element(self, row: dict[str, Any]) -> None:
        ctx = self.contexts.setdefault(self.key(row), InMemoryKeyContext())
        for ctx_ in self.contexts.values():
            if self.max_time is not None:
                ctx_.current_watermark = self.max_time - self.delay
        self._collect(self.operator.process_element(ctx, row))
        time = micros(row[self.spec.order_by[0].column])
        self.max_time = time if self.max_time is None else max(self.max_time, time)
        self.watermark(self.max_time - self.delay)

    def watermark(self, watermark: int) -> None:
        for ctx in self.contexts.values():
            ctx.current_watermark = watermark
            if any(t <= watermark for t in ctx.timers()):
                self._collect(self.operator.on_watermark(ctx))

    def finish(self) -> list[dict[str, Any]]:
        for ctx in self.contexts.values():
            self._collect(self.operator.finish(ctx))
            assert ctx.is_empty()  # end of input leaves no state behind
        return self.output

    def _collect(self, outputs: Any) -> None:
        for out in outputs:
            if isinstance(out, Matched):
                self.output.append(out.row)
            else:
                self.late.append(out)


def ticker(case: str) -> list[dict[str, Any]]:
    with (CASES / case / "ticker.csv").open() as handle:
        return [{"symbol": r["symbol"], "rowtime": datetime.fromisoformat(r["rowtime"]), "price": int(r["price"]),
                 "tax": int(r["tax"])} for r in csv.DictReader(handle)]


def clause(case: str) -> ClauseSpec:
    query = (CASES / case / "query.sql").read_text()
    start = query.index("(", query.upper().index("MATCH_RECOGNIZE"))
    return parse_clause(query[start + 1 : query.rindex(")")])


def render(rows: list[dict[str, Any]]) -> list[list[str]]:
    def text(v: Any) -> str:
        return v.strftime("%Y-%m-%d %H:%M:%S.") + f"{v.microsecond // 1000:03d}" if isinstance(v, datetime) else str(v)

    return sorted([text(v) for v in row.values()] for row in rows)


needs_cases = pytest.mark.skipif(not CASES.exists(), reason="conformance cases not present")


@needs_cases
def test_out_of_order_rows_and_a_late_row_as_flink_streaming() -> None:
    harness = Harness(clause("mr_out_of_order_late"), delay=2 * SECOND)
    for row in ticker("mr_out_of_order_late"):
        harness.element(row)
    output = harness.finish()
    with (CASES / "mr_out_of_order_late" / "expected_streaming.csv").open() as handle:
        expected = sorted(list(csv.reader(handle))[1:])
    assert render(output) == expected
    assert [(late.row["price"], late.reason) for late in harness.late] == [
        (100, f"late: event time {micros(datetime(2011, 4, 1, 10, 0, 6, 500000))} <= watermark "
              f"{micros(datetime(2011, 4, 1, 10, 0, 8))} (µs since epoch)")]


@needs_cases
@pytest.mark.parametrize("case", ["mr_avg_price", "mr_greedy", "mr_output_mode", "mr_price_decreasing", "mr_reluctant",
                                  "mr_skip_past_last_row", "mr_skip_to_next_row", "mr_within", "mr_within_61min"])
def test_stream_equals_batch_once_the_input_ends(case: str) -> None:
    spec = clause(case)
    harness = Harness(spec)
    for row in ticker(case):
        harness.element(row)
    assert harness.finish() == list(match_recognize(spec, ticker(case)))


def test_rows_are_matched_in_event_time_order_whatever_the_arrival_order() -> None:
    spec = parse_clause("ORDER BY t MEASURES FIRST(A.t) AS s, COUNT(*) AS n PATTERN (A B+) "
                        "DEFINE B AS B.v > PREV(B.v)")
    op = MatchRecognizeOperator(spec)
    ctx = InMemoryKeyContext()
    for t, v in [(3, 3), (1, 1), (2, 2), (5, 0)]:
        assert list(op.process_element(ctx, {"t": t, "v": v})) == []  # elements only buffer
    assert ctx.timers() == [1]  # one timer: the smallest buffered time
    ctx.current_watermark = 4
    assert list(op.on_watermark(ctx)) == []  # B+ is greedy: the row at t=5 may still extend the match
    assert ctx.timers() == [5]
    assert [b[0] for b in ctx.get(BUFFER)] == [5]
    ctx.current_watermark = 5
    assert list(op.on_watermark(ctx)) == [Matched({"s": 1, "n": 3})]


def test_late_rows_are_reported_not_matched() -> None:
    op = MatchRecognizeOperator(parse_clause("ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+)"))
    ctx = InMemoryKeyContext(current_watermark=10)
    (late,) = op.process_element(ctx, {"t": 10})
    assert isinstance(late, LateRow) and late.time == 10 and late.watermark == 10
    assert ctx.get(BUFFER) is None


def test_within_prunes_attempts_when_the_watermark_passes_the_deadline() -> None:
    # C never matches: without WITHIN the attempt would hold every row forever
    spec = parse_clause("ORDER BY t MEASURES COUNT(*) AS n PATTERN (A B+ C) WITHIN INTERVAL '10' SECOND "
                        "DEFINE C AS C.v < 0")
    op = MatchRecognizeOperator(spec)
    ctx = InMemoryKeyContext()
    most_rows = 0
    for second in range(1000):
        list(op.process_element(ctx, {"t": second * SECOND, "v": 1}))
        ctx.current_watermark = second * SECOND
        if any(t <= ctx.current_watermark for t in ctx.timers()):
            assert list(op.on_watermark(ctx)) == []
        most_rows = max(most_rows, len(ctx.get(MATCHER).matcher.rows.rows))
    assert most_rows <= 12  # about `within` worth of rows, not 1000
    assert len(ctx.timers()) == 1


def test_within_pruning_keeps_the_match_found_before_the_deadline() -> None:
    spec = parse_clause("ORDER BY t MEASURES COUNT(*) AS n PATTERN (A B*) WITHIN INTERVAL '3' SECOND "
                        "DEFINE B AS B.v > 0")
    op = MatchRecognizeOperator(spec)
    ctx = InMemoryKeyContext()
    for second in range(3):
        list(op.process_element(ctx, {"t": second * SECOND, "v": 1}))
    ctx.current_watermark = 2 * SECOND
    assert list(op.on_watermark(ctx)) == []  # B* could still take a row at t < 3 s
    ctx.current_watermark = 3 * SECOND  # no row can join any more: emit without waiting for one
    assert list(op.on_watermark(ctx)) == [Matched({"n": 3})]


def test_end_anchor_matches_at_the_end_of_input_only() -> None:
    spec = parse_clause("ORDER BY t MEASURES LAST(A.t) AS last PATTERN (A $)")
    op = MatchRecognizeOperator(spec)
    ctx = InMemoryKeyContext()
    for t in (1, 2, 3):
        list(op.process_element(ctx, {"t": t}))
    ctx.current_watermark = 100
    assert list(op.on_watermark(ctx)) == []
    assert list(op.finish(ctx)) == [Matched({"last": 3})]


def test_state_survives_storing_mid_stream() -> None:
    spec = parse_clause("ORDER BY t MEASURES FIRST(A.t) AS s, LAST(B.t) AS e, SUM(B.v) AS total "
                        "PATTERN (A B+ C) DEFINE B AS B.v > PREV(B.v), C AS C.v < PREV(C.v)")
    rows = [{"t": t, "v": v} for t, v in enumerate([5, 1, 2, 3, 4, 0, 9, 1, 2, 3, 1])]

    def run(interrupt_at: int | None) -> list[Any]:
        op = MatchRecognizeOperator(spec)
        ctx = InMemoryKeyContext()
        out: list[Any] = []
        for i, row in enumerate(rows):
            if i == interrupt_at:
                values, timers, _ = decode_cell(encode_cell(ctx.values, ctx.timer_set, 0))  # the stored form
                ctx = InMemoryKeyContext(values, timers, ctx.current_watermark)
            out += op.process_element(ctx, row)
            ctx.current_watermark = row["t"]
            out += op.on_watermark(ctx)
        return out + list(op.finish(ctx))

    expected = run(None)
    assert expected == [Matched({"s": 1, "e": 4, "total": 9}), Matched({"s": 7, "e": 9, "total": 5})]
    for interrupt_at in range(1, len(rows)):
        assert run(interrupt_at) == expected


def test_order_by_is_required_and_ascending() -> None:
    with pytest.raises(SpecError, match="ORDER BY"):
        MatchRecognizeOperator(parse_clause("PATTERN (A)"))
    with pytest.raises(SpecError, match="ascending"):
        MatchRecognizeOperator(parse_clause("ORDER BY t DESC PATTERN (A)"))


def test_datetime_event_times() -> None:
    assert micros(datetime(1970, 1, 1) + timedelta(seconds=2, microseconds=7)) == 2 * SECOND + 7
