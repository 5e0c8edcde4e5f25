"""The streaming host (timeweave.spark.host) without a JVM: a core operator it was not written for runs through
it unchanged (PySpark's TwsTester plays Spark), and the registrations hold only what is their operator's own."""

from __future__ import annotations

import ast
import doctest
import importlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql.streaming.tws_tester import TwsTester

from timeweave.core.operator import ListState, StateLayout, Tag, ValueState, tag_of
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, KeyContext
from timeweave.core.state_codec import decode_cell
from timeweave.spark.host import BUCKET, KEY_TEXT, OP, ROW, TIME, HostProcessor, StateVariables, pack_rows
from timeweave.spark.host.schema import HEARTBEAT

MS = 1_000
B = 5
ROOT = Path(__file__).resolve().parents[2] / "runtime" / "spark"


# -- an operator the host has never seen: per key, a running count emitted when the watermark passes a row ------
@dataclass(frozen=True, slots=True)
class Count:
    time: int
    count: int
    tag: ClassVar[Tag] = Tag.MAIN


@dataclass(frozen=True, slots=True)
class TooLate:
    time: int
    tag: ClassVar[Tag] = Tag.LATE


class RunningCount:
    """Buffer times until the watermark passes them; then emit each with the key's running count."""

    layout = StateLayout(1, (ListState("pending", "times waiting"), ValueState("count", "rows counted so far"),
                             ValueState("timer", "the one registered timer")))

    def process_elements(self, ctx: KeyContext, elements: Iterable[int]) -> list[TooLate]:
        pending = self.layout.states[0].of(ctx)
        late = []
        for time in elements:
            if ctx.watermark != NO_WATERMARK and time <= ctx.watermark:
                late.append(TooLate(time))
            else:
                pending.add(time)
        self._schedule(ctx)
        return late

    def on_watermark(self, ctx: KeyContext) -> Iterator[Count]:
        pending, count = self.layout.states[0].of(ctx), self.layout.states[1].of(ctx)
        times = sorted(pending.get())
        ready = [t for t in times if t <= ctx.watermark]
        n = count.value() or 0
        for t in ready:
            n += 1
            yield Count(t, n)
        pending.update([t for t in times if t > ctx.watermark])
        count.update(n if ctx.watermark < END_OF_TIME else None)
        self._schedule(ctx)

    def _schedule(self, ctx: KeyContext) -> None:
        timer = self.layout.states[2].of(ctx)
        wanted = min(self.layout.states[0].of(ctx).get(), default=None)
        if timer.value() is not None and timer.value() != wanted:
            ctx.delete_timer(timer.value())
        if wanted is not None:
            ctx.register_timer(wanted)
        timer.update(wanted)


@dataclass
class _Sink:
    rows: list[tuple[str, int, int]] = field(default_factory=list)
    late: list[int] = field(default_factory=list)
    n_in: int = 0


class CountProcessor(HostProcessor):
    """A registration: where state lives, how rows become elements, how outputs become rows."""

    state = StateVariables("test_keys", "test_index")
    dead_ops = (4,)
    timer_at_end = True

    def open(self, handle: Any) -> None:
        self._op = RunningCount()

    @property
    def layout(self) -> StateLayout:
        return self._op.layout

    def new_sink(self) -> _Sink:
        return _Sink()

    def dead_frame(self, dead: pa.Table) -> pd.DataFrame:
        return pd.DataFrame({"kind": ["dead"] * len(dead), "key": dead.column(KEY_TEXT).to_pylist(),
                             "time": [0] * len(dead), "n": [0] * len(dead)})

    def group(self, table: pa.Table, sink: _Sink) -> list[tuple[str, Any]]:
        sink.n_in = len(table)
        by_key: dict[str, list[int]] = {}
        for key, time in zip(table.column(KEY_TEXT).to_pylist(), table.column(TIME).to_pylist(), strict=True):
            by_key.setdefault(key, []).append(time)
        return list(by_key.items())

    def process(self, ctx: Any, elements: list[int], sink: _Sink) -> None:
        for out in self._op.process_elements(ctx, elements):
            assert tag_of(out) is Tag.LATE
            sink.late.append(out.time)

    def fire(self, ctx: Any, sink: _Sink) -> None:
        sink.rows.extend((ctx.key, out.time, out.count) for out in self._op.on_watermark(ctx))

    def frames(self, sink: _Sink, always: bool) -> Iterator[pd.DataFrame]:
        if always or sink.rows:
            rows = [("main", k, t, n) for k, t, n in sink.rows] + [("late", None, t, 0) for t in sink.late]
            yield pd.DataFrame(rows, columns=["kind", "key", "time", "n"]).astype({"time": "int64", "n": "int64"})


def _packs(*rows: tuple[str | None, int, int]) -> pd.DataFrame:
    """Packed operator input: (key, time µs, op) rows of bucket B."""
    batch = pa.record_batch({
        BUCKET: pa.array([B] * len(rows), pa.int32()), KEY_TEXT: pa.array([r[0] for r in rows], pa.string()),
        OP: pa.array([r[2] for r in rows], pa.int8()), TIME: pa.array([r[1] for r in rows], pa.int64()),
        ROW: pa.array([None] * len(rows), pa.string()),
    })
    return next(pack_rows(iter([batch]))).to_pandas()


def _main(frame: pd.DataFrame) -> list[tuple]:
    return [(k, t, n) for kind, k, t, n in frame.itertuples(index=False) if kind == "main"]


def test_the_host_runs_an_operator_it_was_not_written_for() -> None:
    tester = TwsTester(CountProcessor(), timeMode="EventTime", eventTimeExtractor=lambda _row: 2**62)
    out = tester.testInPandas(B, _packs(("a", 5_000, 0), ("b", 3_000, 0), ("a", 1_000, 0), (None, 0, HEARTBEAT),
                                        ("x", 0, 4)))
    assert sorted(out[out["kind"] == "dead"]["key"]) == ["x"]  # the dead letter left at once, untouched
    assert _main(out) == []  # no watermark yet: everything waits
    # One Spark timer for the bucket at the smallest key timer; each key's cell holds its declared state.
    cell = tester.peekMapState("test_keys", B)[("a",)][0]
    values, timers, _ = decode_cell(cell)
    assert values == {"pending": [1_000, 5_000], "count": 0, "timer": 1_000} and timers == {1_000, CountProcessor.end_ms * 1000}
    fired = tester.setWatermark(3)  # 3 ms: a's 1 ms and b's 3 ms are due, a's 5 ms waits
    assert sorted(_main(fired)) == [("a", 1_000, 1), ("b", 3_000, 1)]
    out = tester.testInPandas(B, _packs(("a", 2_000, 0), ("a", 4_000, 0)))
    assert out[out["kind"] == "late"]["time"].tolist() == [2_000]
    assert sorted(_main(tester.setWatermark(5))) == [("a", 4_000, 2), ("a", 5_000, 3)]
    # Every key holding state keeps a timer at the end of input (timer_at_end): the host wakes it there.
    values, timers, _ = decode_cell(tester.peekMapState("test_keys", B)[("a",)][0])
    assert values == {"count": 3} and timers == {CountProcessor.end_ms * 1000}


def test_heartbeat_and_dead_letter_only_invocations_run_no_key() -> None:
    tester = TwsTester(CountProcessor(), timeMode="EventTime", eventTimeExtractor=lambda _row: 2**62)
    assert tester.testInPandas(B, _packs((None, 0, HEARTBEAT))).empty
    out = tester.testInPandas(B, _packs(("x", 0, 4)))
    assert out["kind"].tolist() == ["dead"]
    assert tester.peekMapState("test_keys", B) == {} and tester.peekValueState("test_index", B) is None


def _top_level_names(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def test_the_old_host_path_holds_no_code_and_the_registrations_no_private_host_parts() -> None:
    # streaming.py is the host's earlier import path: no class or function but the name forwarding.
    assert _top_level_names(ROOT / "streaming.py") == ["__getattr__"]
    registrations = ("temporal_join_streaming.py", "match_recognize_streaming.py", "window_streaming.py",
                     "window_rank_streaming.py", "window_join_streaming.py")
    for registration in registrations:
        tree = ast.parse((ROOT / registration).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                # Registrations use the host's public parts, never another registration's.
                assert node.module not in ("timeweave.spark.streaming", *(
                    f"timeweave.spark.{r.removesuffix('.py')}" for r in registrations)), (registration, node.module)
                if node.module.startswith("timeweave.spark.host"):
                    assert all(not a.name.startswith("_") for a in node.names), (registration, node.module)
                assert not node.module.startswith("timeweave.jobs"), (registration, node.module)


def test_earlier_import_paths_still_resolve() -> None:
    from timeweave.spark import streaming as S
    from timeweave.spark import temporal_join_streaming as TJ

    with pytest.warns(DeprecationWarning, match="import temporal_join_stream from timeweave.spark.temporal_join_streaming"):
        assert S.temporal_join_stream is TJ.temporal_join_stream
    with pytest.warns(DeprecationWarning, match="import pack_rows from timeweave.spark.host$"):
        assert S.pack_rows is pack_rows
    with pytest.warns(DeprecationWarning, match="import TimerIndex from timeweave.spark.host.state"):
        assert S._Index.__name__ == "TimerIndex"
    with pytest.warns(DeprecationWarning):
        assert S.TemporalJoinProcessor is TJ.TemporalJoinProcessor and S.LEFT_ROW == 0 and S.JOINED == "joined"
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        S.nothing_here  # noqa: B018


def test_earlier_backfill_names_still_resolve() -> None:
    from timeweave.core.time import slices_of
    from timeweave.spark import backfill as B
    from timeweave.spark.host.backfill import parquet_scan_files
    from timeweave.spark.temporal_join_backfill import run_slices

    with pytest.warns(DeprecationWarning, match="import run_slices from timeweave.spark.temporal_join_backfill"):
        assert B.run_slices is run_slices
    with pytest.warns(DeprecationWarning, match="import slices_of from timeweave.core.time"):
        assert B.slices_of is slices_of
    with pytest.warns(DeprecationWarning, match="import parquet_scan_files from timeweave.spark.host.backfill"):
        assert B._parquet_scan_files is parquet_scan_files
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        B.nothing_here  # noqa: B018


@pytest.mark.parametrize("name", [
    "timeweave.spark.host.packs", "timeweave.spark.host.processor", "timeweave.spark.host.schema",
    "timeweave.spark.host.state", "timeweave.spark.host.stream", "timeweave.spark.temporal_join_streaming",
])
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
