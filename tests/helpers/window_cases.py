"""The ``win_*`` Flink conformance cases as window plans: what each query asks for, Flink's arrival order and
watermarks, the core operator's streaming run, and rows rendered as Flink's expected CSVs print them.

Shared by every door's conformance tests: a door computes rows, renders them with :func:`render`, and compares
with ``case.expected(mode)``; :func:`stream_through_core` is the engine-free reference run (Flink's arrival
order, a watermark after every record, the operator woken by its timers, its state through the codec).
"""

from __future__ import annotations

import re
from typing import Any

from tests.helpers.flink_cases import CASES, Case, normalize
from timeweave.core.sql_tokens import TokenType, tokenize
from timeweave.core.state import NO_WATERMARK, InMemoryKeyContext
from timeweave.core.state_codec import decode_cell, encode_cell
from timeweave.core.windows import (
    AggregateCall,
    CountStar,
    LateRow,
    Max,
    Sum,
    WindowAggregateOperator,
    WindowRow,
    event_time_ms,
    find_window_tvfs,
)
from timeweave.core.windows.late import format_ms

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


class WindowPlan:
    """What a case's query asks for: the TVF (``tvf``), the aggregate calls (``calls``), the grouping sets (keys
    besides the window, one tuple per set), the input table and its watermark delay (``delay_ms``)."""

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

    def arrivals(self) -> list[tuple[dict[str, Any], int]]:
        """Each input row with the watermark (µs, the core's) at its arrival, in Flink's arrival order: the
        largest event time before it minus the delay, emitted after every record as in the cases."""
        out, watermark = [], NO_WATERMARK
        for row in self._rows:
            out.append((row, watermark))
            watermark = max(watermark, (event_time_ms(row[self.tvf.time_column]) - self.delay_ms) * 1000)
        return out


def render(header: list[str], key_columns: tuple[str, ...], key: tuple, row: WindowRow, names: tuple[str, ...]):
    """A window row as the expected CSV's row (columns of ``header``; timestamps with milliseconds)."""
    values = {"window_start": format_ms(row.start), "window_end": format_ms(row.end), "window_time": format_ms(row.time)}
    values.update({c: (None if v is None else str(v)) for c, v in zip(key_columns, key, strict=True)})
    values.update({n: normalize(v) for n, v in zip(names, row.values, strict=True)})
    return tuple(values.get(c) for c in header)


def stream_through_core(plan: WindowPlan, key_columns: tuple[str, ...]):
    """The core operator fed in Flink's arrival order, each row at the watermark the rows before it produced;
    returns the (key, WindowRow) results, the (key, LateRow) late rows and the aggregates' names."""
    op = WindowAggregateOperator(plan.tvf.spec, plan.calls, time_column=plan.tvf.time_column)
    contexts: dict[tuple, InMemoryKeyContext] = {}
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

    arrivals = plan.arrivals()
    for i, (row, watermark) in enumerate(arrivals):
        key = tuple(row[c] for c in key_columns)
        ctx = contexts.setdefault(key, InMemoryKeyContext())
        ctx.current_watermark = watermark
        collect(key, op.process_elements(ctx, [row]))
        checkpoint(ctx)
        if i + 1 == len(arrivals):
            break
        watermark = arrivals[i + 1][1]  # the watermark the row produced
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


def in_grouping_set(header: list[str], rendered: tuple, key_columns: tuple[str, ...], plan: WindowPlan) -> bool:
    """Whether an expected row belongs to the grouping set ``key_columns`` (its other key columns are NULL)."""
    others = [c for c in plan.key_columns if c not in key_columns]
    return all(rendered[header.index(c)] is None for c in others) and all(
        rendered[header.index(c)] is not None for c in key_columns)


__all__ = ["CASES", "WINDOW_CASES", "WindowPlan", "in_grouping_set", "render", "stream_through_core"]
