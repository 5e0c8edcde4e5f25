"""Slice partials (timeweave.core.windows.partials, WindowAggregateOperator.process_partials): a key's rows
pre-aggregated per slice give exactly the outputs and state of the rows one by one, late slices included."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest

from timeweave.core.errors import SpecError
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, InMemoryKeyContext
from timeweave.core.windows import WindowAggregateOperator, cumulate, hop, session, tumble
from timeweave.core.windows.calls import parse_aggregate
from timeweave.core.windows.partials import STATISTICS, accumulator_row, partial_functions
from timeweave.core.windows.slicing import Slicing

AGGREGATES = {"n": "COUNT(*)", "c": "COUNT(p)", "s": "SUM(p)", "a": "AVG(p)", "lo": "MIN(v)", "hi": "MAX(v)"}
TEXTS = [parse_aggregate(name, text) for name, text in AGGREGATES.items()]
SPECS = {"tumble": tumble(60_000), "hop": hop(20_000, 60_000), "cumulate": cumulate(20_000, 60_000, offset=5_000)}


def _operator(spec) -> WindowAggregateOperator:
    return WindowAggregateOperator(spec, [a.call() for a in TEXTS], time_column="t", time_of=lambda row: row["t"])


def _statistics(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What the packing step computes per slice: (value, non-NULL count) per aggregate."""
    out: list[tuple[Any, ...]] = []
    for a in TEXTS:
        values = [r[a.column] for r in rows if a.column is not None and r[a.column] is not None]
        statistic = STATISTICS[a.function]
        if statistic is None:
            out.append(())
        elif statistic == "count":
            out.append((None, len(values)))
        else:
            fold = {"sum": sum, "min": min, "max": max}[statistic]
            out.append((fold(values) if values else None, len(values)))
    return out


def _partials(spec, rows: list[dict[str, Any]]) -> tuple[list[tuple[int, list[Any]]], dict[int, list]]:
    slicing = Slicing.of(spec)
    groups: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(slicing.slice_end(row["t"]), []).append(row)
    functions = partial_functions(spec, TEXTS, None)
    assert functions is not None
    partials = [(end, accumulator_row(functions, len(g), _statistics(g))) for end, g in groups.items()]
    return partials, groups


def _steps(seed: int) -> list[tuple[int, list[dict[str, Any]]]]:
    """Steps of (watermark µs, rows): rows around a rising clock, some far behind it (late for some windows)."""
    rng = random.Random(seed)
    clock, steps = 0, []
    for i in range(12):
        clock += rng.randint(5_000, 70_000)
        rows = []
        for j in range(rng.randint(0, 15)):
            behind = rng.choice([0, 0, 0, rng.randint(0, 30_000), rng.randint(60_000, 200_000)])
            rows.append({"id": f"{i}.{j}", "t": clock - behind,
                         "p": rng.choice([None, Decimal(rng.randint(-500, 5000)) / 100]),
                         "v": rng.choice([None, rng.randint(-9, 9)])})
        watermark = NO_WATERMARK if i == 0 else (clock - rng.randint(0, 40_000)) * 1000
        steps.append((watermark, rows))
    return steps


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("name", list(SPECS))
def test_partials_equal_rows_one_by_one(name: str, seed: int) -> None:
    spec = SPECS[name]
    by_rows, by_partials = _operator(spec), _operator(spec)
    rows_ctx, partials_ctx = InMemoryKeyContext(), InMemoryKeyContext()
    expected: list[Any] = []
    got: list[Any] = []
    watermark = NO_WATERMARK
    saw_late = False
    for step_watermark, rows in _steps(seed):
        watermark = max(watermark, step_watermark)
        rows_ctx.current_watermark = partials_ctx.current_watermark = watermark
        expected += by_rows.process_elements(rows_ctx, rows)
        partials, groups = _partials(spec, rows)
        ends = [end for end, _ in partials]
        got += by_partials.process_partials(partials_ctx, partials, lambda i, e=ends, g=groups: g[e[i]])
        saw_late = saw_late or any(type(o).__name__ == "LateRow" for o in expected)
        expected += by_rows.on_watermark(rows_ctx)
        got += by_partials.on_watermark(partials_ctx)
        assert partials_ctx.values == rows_ctx.values and partials_ctx.timer_set == rows_ctx.timer_set
    rows_ctx.current_watermark = partials_ctx.current_watermark = END_OF_TIME
    expected += by_rows.on_watermark(rows_ctx)
    got += by_partials.on_watermark(partials_ctx)

    def key(out: Any) -> tuple:
        return (type(out).__name__, repr(out))

    assert sorted(map(key, got)) == sorted(map(key, expected))
    assert any(type(o).__name__ == "WindowRow" for o in expected)
    if seed < 6:
        assert saw_late, "the steps must hold late rows"


def test_which_queries_pre_aggregate() -> None:
    assert partial_functions(tumble(60_000), TEXTS, None) == ("COUNT(*)", "COUNT", "SUM", "AVG", "MIN", "MAX")
    assert partial_functions(tumble(60_000), TEXTS, "Asia/Shanghai") is None  # a wall clock: per row
    assert partial_functions(session(60_000), TEXTS, None) is None
    distinct = [parse_aggregate("d", "COUNT(DISTINCT v)")]
    assert partial_functions(tumble(60_000), distinct, None) is None


def test_partials_refuse_sessions() -> None:
    op = WindowAggregateOperator(session(60_000), [a.call() for a in TEXTS], time_column="t")
    with pytest.raises(SpecError, match="aligned window"):
        op.process_partials(InMemoryKeyContext(), [], lambda i: [])
