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

import pytest

from tests.helpers.flink_cases import Case, load_case
from tests.helpers.window_cases import WINDOW_CASES, WindowPlan, in_grouping_set, render, stream_through_core
from timeweave.core.windows import Aggregates, LateRow, SessionSpec, Slicing, WindowRow, evaluate, event_time_ms


def _recomputed(plan: WindowPlan, key_columns: tuple[str, ...], late: list[tuple[tuple, LateRow]]):
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
    plan = WindowPlan(case)
    header, expected = case.expected("streaming")
    got, late_rows = [], []
    for key_columns in plan.grouping_sets:
        results, late, names = stream_through_core(plan, key_columns)
        got += [render(header, key_columns, k, r, names) for k, r in results]
        late_rows += late
        # the late output accounts for exactly what Flink's streaming run left out
        recomputed = [render(header, key_columns, k, r, names) for k, r in _recomputed(plan, key_columns, late)]
        assert sorted(recomputed, key=str) == sorted(r for r in expected if in_grouping_set(header, r, key_columns, plan))
    assert sorted(got, key=str) == sorted(expected, key=str)
    # the rows the case's notes name late are the late output (missing some windows; a HOP or CUMULATE row
    # may still count in its later windows); with a 1 s delay and rows in order, nothing is late
    notes = case.spec.get("notes", "")
    named = set(re.findall(r"\b(L\d)\b \(", notes))
    assert {out.row["item"] for _, out in late_rows} == named
    for _, out in late_rows:
        assert out.missed and all(w.end - 1 <= out.watermark for w in out.missed)
        assert "late: event time" in out.reason


def test_batch_equals_flink(case: Case) -> None:
    if not (case.path / "expected_batch.csv").exists():
        pytest.skip(f"Flink has no batch output for {case.name}: {(case.path / 'error_batch.txt').read_text().strip()}")
    plan = WindowPlan(case)
    header, expected = case.expected("batch")
    got = []
    for key_columns in plan.grouping_sets:
        result = evaluate(plan.tvf.spec, plan.calls, plan.rows(), time_column=plan.tvf.time_column,
                          key_of=lambda r, kc=key_columns: tuple(r[c] for c in kc))
        assert result.dead_letters == []
        got += [render(header, key_columns, k, r, tuple(c.name for c in plan.calls)) for k, r in result.rows]
    assert sorted(got, key=str) == sorted(expected, key=str)


def test_cases_are_all_here() -> None:
    assert len(WINDOW_CASES) >= 11, WINDOW_CASES
