"""Every ``win_*`` Flink conformance case through the core window operator (no JVM).

Streaming: the rows are fed in Flink's arrival order (the CSV order), each at the watermark the rows before
it produced (``max(event time) - delay``, emitted after every record as in the cases), the operator is woken
by its own timers only, and its state goes through the state codec after every step (what a checkpointed
host does).  The output must be Flink 2.3's real streaming output, and the late output must account for
exactly what Flink left out: recomputing the windows from all rows, minus each late row's missed windows,
gives Flink's streaming output again.  Batch: :func:`evaluate` over all rows must be Flink's batch output.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from runtime.core.sql_tokens import TokenType, tokenize
from runtime.core.state import NO_WATERMARK, InMemoryKeyContext
from runtime.core.state_codec import decode_cell, encode_cell
from runtime.core.windows import (
    AggregateCall,
    Aggregates,
    CountStar,
    LateRow,
    Max,
    SessionSpec,
    Slicing,
    Sum,
    WindowAggregateOperator,
    WindowRow,
    evaluate,
    event_time_ms,
    find_window_tvfs,
)
from runtime.core.windows.late import format_ms
from tests.helpers.flink_cases import CASES, Case, load_case, normalize

WINDOW_CASES = sorted(p.name for p in CASES.glob("win_*"))
_ACCUMULATORS = {"COUNT": CountStar, "SUM": Sum, "MAX": Max}


def _top_level(tokens, stop_words):
    """Split tokens at top-level commas until a top-level word in ``stop_words``."""
    items, depth, current = [], 0, []
    for tok in tokens:
        if tok.type is TokenType.LPAREN:
            depth += 1
        elif tok.type is TokenType.RPAREN:
            depth -= 1
        if depth == 0 and tok.upper in stop_words:
            break
        if depth == 0 and tok.text == ",":
            items.append(current)
            current = []
            continue
        current.append(tok)
    items.append(current)
    return items


class Plan:
    """What the case's query asks for: the TVF, the aggregates, the grouping sets (keys besides the window)."""

    def __init__(self, case: Case) -> None:
        query = case.query
        [self.tvf] = find_window_tvfs(query)
        tokens = tokenize(query)
        select = _top_level(tokens[1:], {"FROM"})
        self.calls = []
        for item in select:
            words = [t.text for t in item]
            if len(words) >= 6 and words[1] == "(" and words[-2].upper() == "AS":
                function, argument = words[0].upper(), words[2]
                accumulator = _ACCUMULATORS[function]()
                self.calls.append(AggregateCall(accumulator, None if argument == "*" else argument, name=words[-1]))
        group_at = next(i for i, t in enumerate(tokens) if t.upper == "GROUP")
        keys = [[t.text for t in item] for item in _top_level(tokens[group_at + 2 :], set())]
        window_columns = {"window_start", "window_end", "window_time"}
        plain = [k[0] for k in keys if len(k) == 1 and k[0] not in window_columns]
        sets = [k for k in keys if k and k[0].upper() == "GROUPING"]
        if sets:  # GROUPING SETS ((a), ()): one aggregation per set
            inner = " ".join(sets[0][3:-1])
            self.grouping_sets = [tuple(plain) + tuple(re.findall(r"\w+", part)) for part in re.findall(r"\(([^()]*)\)", inner)]
        else:
            self.grouping_sets = [tuple(plain)]
        table = case.tables[self.tvf.relation]
        self.table = table
        self.columns = [name for name, _ in table.columns]
        self.key_columns = sorted({c for s in self.grouping_sets for c in s})
        spec = next(t for t in case.spec["tables"] if t["name"] == self.tvf.relation)
        self.delay_ms = int(spec["watermark_delay"] * 1000)

        self._rows = [dict(zip(self.columns, row, strict=True)) for row in table.rows]

    def rows(self) -> list[dict[str, Any]]:
        """The input rows in arrival order (the same objects every time: late rows are matched by identity)."""
        return self._rows


def _render(header: list[str], key_columns: tuple[str, ...], key: tuple, row: WindowRow, names: tuple[str, ...]):
    values = {"window_start": format_ms(row.start), "window_end": format_ms(row.end), "window_time": format_ms(row.time)}
    values.update({c: (None if v is None else str(v)) for c, v in zip(key_columns, key, strict=True)})
    values.update({n: normalize(v) for n, v in zip(names, row.values, strict=True)})
    return tuple(values.get(c) for c in header)


def _stream(plan: Plan, key_columns: tuple[str, ...]):
    op = WindowAggregateOperator(plan.tvf.spec, plan.calls, time_column=plan.tvf.time_column)
    contexts: dict[tuple, InMemoryKeyContext] = {}
    watermark = NO_WATERMARK
    results: list[tuple[tuple, WindowRow]] = []
    late: list[tuple[tuple, LateRow]] = []

    def collect(key, outputs):
        for out in outputs:
            if isinstance(out, WindowRow):
                results.append((key, out))
            elif isinstance(out, LateRow):
                late.append((key, out))
            else:
                raise AssertionError(f"unexpected output {out!r}")

    def checkpoint(ctx: InMemoryKeyContext) -> None:
        values, timers, _ = decode_cell(encode_cell(ctx.values, ctx.timer_set, 0))
        ctx.values, ctx.timer_set = values, timers

    for row in plan.rows():
        key = tuple(row[c] for c in key_columns)
        ctx = contexts.setdefault(key, InMemoryKeyContext())
        ctx.current_watermark = watermark
        collect(key, op.process_elements(ctx, [row]))
        checkpoint(ctx)
        watermark = max(watermark, (event_time_ms(row[plan.tvf.time_column]) - plan.delay_ms) * 1000)
        for other, c in contexts.items():  # the operator is woken by its own timers only
            c.current_watermark = watermark
            if c.timers() and c.timers()[0] <= watermark:
                collect(other, op.on_watermark(c))
                checkpoint(c)
                assert not c.timers() or c.timers()[0] > watermark
    for key, ctx in contexts.items():  # end of a bounded input: Flink's final watermark
        collect(key, op.finish(ctx))
        assert ctx.is_empty()
    return results, late, op.aggregates.names


def _recomputed(plan: Plan, key_columns: tuple[str, ...], late: list[tuple[tuple, LateRow]]):
    """All windows from all rows, each row left out of exactly the windows the late output says it missed."""
    aggregates = Aggregates(plan.calls)
    missed = {id(out.row): set(out.missed) for _, out in late}
    time_column = plan.tvf.time_column
    if isinstance(plan.tvf.spec, SessionSpec):  # a late session row is dropped whole
        kept = [r for r in plan.rows() if id(r) not in missed]
        result = evaluate(plan.tvf.spec, aggregates, kept, time_column=time_column,
                          key_of=lambda r: tuple(r[c] for c in key_columns))
        return result.rows
    windows: dict[tuple, list] = {}
    slicing = Slicing.of(plan.tvf.spec)
    for row in plan.rows():
        for window in slicing.windows_of(event_time_ms(row[time_column])):
            if window in missed.get(id(row), ()):
                continue
            accs = windows.setdefault((tuple(row[c] for c in key_columns), window), aggregates.create())
            aggregates.add(accs, row)
    return [(key, WindowRow(w, aggregates.results(a))) for (key, w), a in windows.items()]


@pytest.fixture(scope="module", params=WINDOW_CASES)
def case(request) -> Case:
    return load_case(request.param)


def test_streaming_equals_flink(case: Case) -> None:
    plan = Plan(case)
    header, expected = case.expected("streaming")
    got, late_rows = [], []
    for key_columns in plan.grouping_sets:
        results, late, names = _stream(plan, key_columns)
        got += [_render(header, key_columns, k, r, names) for k, r in results]
        late_rows += late
        # the late output accounts for exactly what Flink's streaming run left out
        recomputed = [_render(header, key_columns, k, r, names) for k, r in _recomputed(plan, key_columns, late)]
        assert sorted(recomputed, key=str) == sorted(r for r in expected if _in_set(header, r, key_columns, plan))
    assert sorted(got, key=str) == sorted(expected, key=str)
    # the rows the case's notes name late are the late output (missing some windows; a HOP or CUMULATE row
    # may still count in its later windows); with a 1 s delay and rows in order, nothing is late
    notes = case.spec.get("notes", "")
    named = set(re.findall(r"\b(L\d)\b \(", notes))
    assert {out.row["item"] for _, out in late_rows} == named
    for _, out in late_rows:
        assert out.missed and all(w.end - 1 <= out.watermark for w in out.missed)
        assert "late: event time" in out.reason


def _in_set(header, rendered, key_columns, plan) -> bool:
    """Whether an expected row belongs to the grouping set ``key_columns`` (its other key columns are NULL)."""
    others = [c for c in plan.key_columns if c not in key_columns]
    return all(rendered[header.index(c)] is None for c in others) and all(
        rendered[header.index(c)] is not None for c in key_columns)


def test_batch_equals_flink(case: Case) -> None:
    if not (case.path / "expected_batch.csv").exists():
        pytest.skip(f"Flink has no batch output for {case.name}: {(case.path / 'error_batch.txt').read_text().strip()}")
    plan = Plan(case)
    header, expected = case.expected("batch")
    got = []
    for key_columns in plan.grouping_sets:
        result = evaluate(plan.tvf.spec, plan.calls, plan.rows(), time_column=plan.tvf.time_column,
                          key_of=lambda r, kc=key_columns: tuple(r[c] for c in kc))
        assert result.dead_letters == []
        got += [_render(header, key_columns, k, r, tuple(c.name for c in plan.calls)) for k, r in result.rows]
    assert sorted(got, key=str) == sorted(expected, key=str)


def test_cases_are_all_here() -> None:
    assert len(WINDOW_CASES) >= 11, WINDOW_CASES
    assert Decimal("1.00") + Decimal("2.50") == Decimal("3.50")
