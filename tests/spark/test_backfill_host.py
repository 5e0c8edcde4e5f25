"""The keyed backfill driver's executor side (timeweave.spark.host.backfill.run_keyed_slice) with a small operator of
its own (no JVM): per-key state restored and snapshot through the KeyContext across Arrow batches and slices, the
end of input at the last slice, and what a key that forgot its state carries (nothing)."""

from __future__ import annotations

import doctest
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest

from timeweave.core.errors import SpecError
from timeweave.core.state import END_OF_TIME, KeyContext
from timeweave.core.state_codec import decode, encode
from timeweave.spark.host import backfill as host
from timeweave.spark.host.backfill import DEAD_LETTER, MAIN, REJECT_ROW, STATE


class _RunningSum:
    """Per key: emits (k, running sum) for every row; a negative value is a dead letter; the end of input emits
    the key's total with n = -1; a key whose sum reaches exactly 0 forgets its state."""

    names = ("k", "v")
    keys = ("k",)
    output = pa.schema([pa.field("k", pa.string()), pa.field("n", pa.int64()), pa.field("sum", pa.int64())])

    def __init__(self) -> None:
        self.watermarks: list[int] = []

    def read(self, batch: pa.RecordBatch, name: str) -> list[Any]:
        return batch.column(name).to_pylist()

    def to_arrow(self, values: list[Any], arrow_type: pa.DataType) -> pa.Array:
        return pa.array(values, type=arrow_type)

    def restore(self, ctx: KeyContext, blob: bytes, key: tuple[Any, ...]) -> None:
        ctx.put("sum", decode(blob, where=f"state of {key}"))

    def process(self, ctx: KeyContext, rows: list[dict[str, Any]]) -> list[host.Tagged]:
        out: list[host.Tagged] = []
        for row in rows:
            if row["v"] < 0:
                out.append((DEAD_LETTER, (row[REJECT_ROW], f"negative v {row['v']}")))
                continue
            total = (ctx.get("sum") or 0) + row["v"]
            if total == 0:
                ctx.clear("sum")
            else:
                ctx.put("sum", total)
            out.append((MAIN, {"k": row["k"], "n": row["v"], "sum": total}))
        return out

    def end_of_input(self, ctx: KeyContext) -> list[host.Tagged]:
        self.watermarks.append(ctx.watermark)
        return [(MAIN, {"k": None, "n": -1, "sum": ctx.get("sum") or 0})]

    def snapshot(self, ctx: KeyContext) -> bytes:
        return encode(ctx.get("sum"))


class _Counter:
    def __init__(self) -> None:
        self.value = 0

    def add(self, amount: int) -> None:
        self.value += amount


_SCHEMA = pa.schema([pa.field("k", pa.string()), pa.field("v", pa.int64()), pa.field(STATE, pa.binary()),
                     pa.field(REJECT_ROW, pa.string())])


def _run(items: list[dict], last: bool, batch_rows: int) -> tuple[list[dict], list[int]]:
    op = _RunningSum()
    counters = [_Counter() for _ in range(3)]
    table = pa.Table.from_pylist(items, schema=_SCHEMA)
    out = list(host.run_keyed_slice(iter(table.to_batches(max_chunksize=batch_rows)), op, last, counters))
    rows = pa.Table.from_batches(out).to_pylist() if out else []
    return rows, [c.value for c in counters] + [len(op.watermarks), *set(op.watermarks)]


@pytest.mark.parametrize("batch_rows", [1, 2, 100])
def test_state_travels_across_batches_and_slices(batch_rows: int) -> None:
    first = [{"k": "a", "v": 1, REJECT_ROW: "a1"}, {"k": "a", "v": 2, REJECT_ROW: "a2"},
             {"k": "b", "v": 5, REJECT_ROW: "b5"}, {"k": "b", "v": -5, REJECT_ROW: "b-5"},
             {"k": "c", "v": 0, REJECT_ROW: "c0"}]
    out, counts = _run(first, last=False, batch_rows=batch_rows)
    main = [(r["k"], r["sum"]) for r in out if r[STATE] is None and r[host.REJECT_REASON] is None]
    assert main == [("a", 1), ("a", 3), ("b", 5), ("c", 0)]
    assert [(r[REJECT_ROW], r[host.REJECT_REASON]) for r in out if r[host.REJECT_REASON]] == [("b-5", "negative v -5")]
    states = {r["k"]: r[STATE] for r in out if r[STATE] is not None}
    assert {k: decode(v) for k, v in states.items()} == {"a": 3, "b": 5}  # c forgot its state: nothing carried
    assert counts == [5, 4, 2, 0]
    # the next slice, the last: the carried states sort first within their key
    second = [{"k": "a", STATE: states["a"]}, {"k": "a", "v": 4, REJECT_ROW: "a4"}, {"k": "b", STATE: states["b"]}]
    out, counts = _run(second, last=True, batch_rows=batch_rows)
    assert [(r["k"], r["n"], r["sum"]) for r in out] == [("a", 4, 7), (None, -1, 7), (None, -1, 5)]
    assert all(r[STATE] is None for r in out)  # the end of input carries nothing
    assert counts == [1, 3, 0, 2, END_OF_TIME]  # each key's end of input saw the watermark at END_OF_TIME


def test_slices_are_planned_and_checked_before_any_job() -> None:
    plan, wanted = host.plan_slices(datetime(2020, 1, 1), datetime(2020, 1, 2), 4, [2, 2, 0], "backfill")
    assert wanted == [0, 2] and [s.index for s in plan] == [0, 1, 2, 3]
    with pytest.raises(SpecError, match=r"argument 'slices': must be an integer >= 1, got 2.0"):
        host.plan_slices(datetime(2020, 1, 1), datetime(2020, 1, 2), 2.0, None, "backfill")
    with pytest.raises(SpecError, match=r"argument 'only': slice indexes \[4\] are not in 0..3"):
        host.plan_slices(datetime(2020, 1, 1), datetime(2020, 1, 2), 4, [4], "backfill")


def test_docstring_examples_run() -> None:
    result = doctest.testmod(host, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


# -- the temporal join's set-based path renders the plan's version rule ------------------------------------------


def test_the_temporal_join_backfill_states_no_version_order_of_its_own() -> None:
    """Which version a left row gets lives in the plan (timeweave_sql.sql); the backfill's edge states render it."""
    import inspect

    from timeweave.spark import render, temporal_join_backfill

    source = inspect.getsource(temporal_join_backfill)
    assert "max_by" not in source and "min_by" not in source and "timeweave__newest_sql" in source
    sql = render.macro("timeweave__newest_sql", "ev", ["k", "t", "s", "p"], ["k"], "t", "s", group="g")
    assert "max_by(named_struct(" in sql and "GROUP BY `k`, `g`" in sql
    assert "min_by(" in render.macro("timeweave__newest_sql", "ev", ["k"], ["k"], "t", "s", oldest=True)


def _macro_bodies(text: str) -> dict[str, str]:
    """The plan's macros by name: each one's text up to its endmacro."""
    import re

    return {m.group(1): m.group(2) for m in re.finditer(r"{%-? macro (\w+)\(.*?-?%}(.*?){%-? endmacro", text, re.S)}


def test_the_plan_states_the_version_order_once() -> None:
    """Which event of a key is newer (time, then sequence) is one macro, which the intervals (step 1), the
    versioned view and the edge states' newest event all render; no other macro orders by the sequence."""
    import re

    from timeweave.spark import render

    bodies = _macro_bodies(render.PLAN_FILE.read_text())
    order = bodies.pop("timeweave__version_order")
    assert "DESC" in order and "named_struct(" in order
    for name in ("timeweave__intervals_sql", "timeweave__versioned_view_sql", "timeweave__newest_sql"):
        assert "timeweave__version_order(" in bodies[name], name
    for name, body in bodies.items():
        assert not re.search(r"__tw_seq\s+(DESC|ASC)", body) and "named_struct('t'" not in body, name
    assert render.macro("timeweave__version_order", "`t`", "`s`", "newest_first") == "`t` DESC, `s` DESC"
    assert render.macro("timeweave__version_order", "`t`", "`s`") == "named_struct('t', `t`, 's', `s`)"


@pytest.mark.spark
@pytest.mark.parametrize("slices_per_job", [None, 1])
def test_edge_states_keep_the_highest_sequence_and_the_deletes(spark, tmp_path, slices_per_job) -> None:
    """Across an edge: of two events at one time the highest sequence is in force (whatever the input order), and
    a delete before the edge leaves no version; each slice run alone (``only``) reads the state the other wrote."""
    import timeweave
    from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
    from timeweave.spark.temporal_join_backfill import run_slices

    t0 = datetime(2020, 1, 1)
    rates = spark.createDataFrame([
        ("+I", "a", 2.0, t0, 2), ("+I", "a", 1.0, t0, 1),  # same time: seq 2 wins, though read first
        ("+I", "b", 5.0, t0, 1), ("-D", "b", 5.0, t0 + timedelta(minutes=30), 2),
        ("+U", "c", 7.0, t0 + timedelta(minutes=10), 3), ("+U", "c", 8.0, t0 + timedelta(minutes=10), 4),
    ], "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP, seq BIGINT")
    orders = spark.createDataFrame([
        (f"o{i}", key, t0 + timedelta(hours=hours)) for i, (key, hours) in enumerate(
            [("a", 0.5), ("a", 1.5), ("b", 0.2), ("b", 1.5), ("c", 0.9), ("c", 1.9)])
    ], "order_id STRING, currency STRING, order_time TIMESTAMP")
    versioned = VersionedTableSpec("currency", "update_time", "changelog", op="op", sequence="seq")
    spec = TemporalJoinSpec(versioned, "order_time", how="left", right_columns=["rate"])
    paths = [str(tmp_path / name) for name in ("out", "dead", "state")]
    for only in ([0], [1]):
        run_slices(orders, rates, spec, t0, t0 + timedelta(hours=2), 2, *paths, only=only, slices_per_job=slices_per_job)
    door = timeweave.temporal_join(orders, rates, "order_time", key="currency", time="update_time", format="changelog",
                                   op="op", sequence="seq", how="left", right_columns=["rate"])
    got = sorted(tuple(r) for r in spark.read.parquet(paths[0]).select("order_id", "rate").collect())
    assert got == sorted(tuple(r) for r in door.select("order_id", "rate").collect())
    assert got == [("o0", 2.0), ("o1", 2.0), ("o2", 5.0), ("o3", None), ("o4", 8.0), ("o5", 8.0)]


# -- one writer: both backfill paths write their slices through the writer's slice target ----------------------


def test_the_backfill_paths_write_slices_only_through_the_writer() -> None:
    """No ``.write`` in the keyed driver; in the set-based path only the run's scratch relations (its versions,
    under ``state/_run_*``), never a slice's output, dead letters or state."""
    import ast
    from pathlib import Path

    root = Path(host.__file__).resolve().parents[1]
    found = []
    for path in (root / "host" / "backfill.py", root / "temporal_join_backfill.py"):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse(path.read_text())):
            writer = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "writer"
            if isinstance(node, ast.Attribute) and node.attr == "write" and not writer:  # DataFrame.write
                line = lines[node.lineno - 1]
                if "stats_path" not in line and "intervals_path" not in line:
                    found.append(f"{path.name}:{node.lineno}: {line.strip()}")
            if isinstance(node, ast.Name) and node.id == "HadoopFiles" and path.name == "temporal_join_backfill.py":
                found.append(f"{path.name}:{node.lineno}: HadoopFiles (slice directories are the writer's)")
    assert not found, "\n".join(found)


@pytest.mark.spark
def test_the_slice_writer_replaces_exactly_the_slices_it_writes(spark, tmp_path) -> None:
    """One slice's directory replaced whole; a grouped write replaces exactly its slices (also those it gives no
    row: cleared, or left empty with ``keep_empty``); other slices and outputs untouched; rows from footers."""
    from timeweave.spark.host.writer import SliceTarget, SliceWriter

    target = SliceTarget({"main": str(tmp_path / "out"), "late": str(tmp_path / "late"),
                          "dead_letter": str(tmp_path / "dead"), "state": str(tmp_path / "out" / "_state")})
    writer = SliceWriter(spark, target)

    def rows(n: int, label: str | None = None):
        df = spark.range(n).selectExpr("id AS v")
        return df if label is None else df.selectExpr("v", f"'{label}' AS slice")

    def read(output: str, label: str) -> list[int]:
        return sorted(r.v for r in spark.read.parquet(target.directory(output, label)).collect())

    for output in ("main", "late", "dead_letter", "state"):
        writer.write(rows(5), output, "a")
        writer.write(rows(3), output, "b")
    writer.write(rows(2), "main", "a")  # a re-run of slice a: its directory replaced, b's kept
    assert read("main", "a") == [0, 1] and read("main", "b") == [0, 1, 2] and read("late", "a") == [0, 1, 2, 3, 4]
    assert writer.rows("main", ["a", "b"]) == 5 and writer.rows("main", ["missing"]) == 0

    writer.write_slices(rows(4, "b"), "main", ["b", "c"])  # c gets no row: no directory left
    assert read("main", "a") == [0, 1] and read("main", "b") == [0, 1, 2, 3]
    assert not writer.exists("main", "c")
    writer.write_slices(rows(1, "a"), "state", ["a", "b"], keep_empty=True)  # b's state: now none, an empty directory
    assert read("state", "a") == [0] and writer.exists("state", "b") and writer.rows("state", ["b"]) == 0
    assert read("dead_letter", "b") == [0, 1, 2]  # another output: untouched

    writer.clear("late", ["a", "none"])
    assert not writer.exists("late", "a") and read("late", "b") == [0, 1, 2]
    assert spark.read.parquet(str(tmp_path / "out")).count() == 6  # main read whole: `_state` is hidden


@pytest.mark.spark
def test_a_batch_commit_replaces_its_replayed_files_and_a_discard_drops_them(spark, tmp_path) -> None:
    """The micro-batch writer's file moves (HadoopFiles.commit / discard): a replayed batch's files are replaced,
    another batch's kept; a batch without rows drops its staging and a replay's files; staging leaves no trace."""
    from timeweave.spark.hadoop import HadoopFiles

    files, target = HadoopFiles(spark), tmp_path / "out"

    def stage(batch: int, names: list[str]) -> str:
        staging = target / "_tw_staging" / f"batch-{batch}"
        staging.mkdir(parents=True)
        for name in names:
            (staging / name).write_text(name)
        return str(staging)

    files.commit(stage(1, ["part-0.parquet", "part-1.parquet", "_SUCCESS"]), str(target), "part-b1-")
    files.commit(stage(2, ["part-0.parquet"]), str(target), "part-b2-")
    files.commit(stage(1, ["part-9.parquet"]), str(target), "part-b1-")  # batch 1 replayed: one file now
    assert sorted(p.name for p in target.iterdir()) == ["part-b1-00000.parquet", "part-b2-00000.parquet"]
    assert (target / "part-b1-00000.parquet").read_text() == "part-9.parquet"

    files.discard(stage(2, ["part-0.parquet"]), str(target), "part-b2-")  # batch 2 replayed without rows
    assert sorted(p.name for p in target.iterdir()) == ["part-b1-00000.parquet"]
