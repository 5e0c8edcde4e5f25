"""The DataStream window backfill (timeweave.spark.datastream_backfill, on the keyed backfill driver).

* Without a JVM: the slice operator on the driver's executor loop (``run_keyed_slice``), fed the rows of 1, 3 and
  7 slices cut by stream time, each key's state carried across the edges as bytes and every slice's Arrow batches
  cut at random places (inside arrival steps too), gives exactly ``run_batch``'s per-key run (``_BatchRunner``) over
  the same steps: main (append and retract / upsert changelogs), late and dead-letter rows, for random rows with
  out-of-order, late, NULL-time and failing rows, tumbling / sliding / session windows, early firings and allowed
  lateness.  Processing-time windows and triggers are refused, naming them.
* With Spark: a backfill in 1, 3 and 7 slices writes the rows of ``run_batch`` and of the flushed streaming job
  (main, late, dead letter; an early-firing retract changelog), a re-run of one slice replaces only its files, and
  the job (``python -m timeweave.jobs backfill``) runs the pipeline its config names.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark import cloudpickle

from tests.spark.test_datastream import (
    SCHEMA,
    SumCount,
    _as_counters,
    _Frame,
    _keyed,
    _us,
    _write_batches,
    ddl,
    job_config,
    pipelines,
    random_rows,
    wire_text,
)
from timeweave.core.datastream import Tumbling
from timeweave.core.datastream.triggers import EventTime, ProcessingTime, Purging
from timeweave.core.errors import SpecError
from timeweave.spark import datastream as D
from timeweave.spark import datastream_backfill as DB
from timeweave.spark.host import backfill as host
from timeweave.spark.host.schema import KEY_TEXT, OP, ROW
from timeweave.spark.host.stream import DATA_ROW

cloudpickle.register_pickle_by_value(sys.modules[__name__])

TAGGED = (D.KIND, D.OUT, D.IN_ROW, D.REASON, D.SIDE, D.WATERMARK)


# =================================================================================================
# Without a JVM: the slice operator on the driver's executor loop = run_batch's per-key run
# =================================================================================================
def _steps(rows: list[dict[str, Any]]) -> dict[int, tuple[int | None, int]]:
    """Per arrival step: the largest event time (ms) of the earlier steps (None: none), its stream time (µs)."""
    out, before, upto = {}, None, None
    for batch in sorted({r["batch"] for r in rows}):
        times = [_us(r["ts"]) for r in rows if r["batch"] == batch and r["ts"] is not None]
        if times:
            upto = max([upto, *times]) if upto is not None else max(times)
        out[batch] = (before, upto)
        if times:
            before = upto // 1000
    return out


def _by_run_batch(pipeline: D.Pipeline, rows: list[dict[str, Any]], emit: str) -> Counter:
    """run_batch's per-key runner (what its applyInPandas runs) over the rows with an event time."""
    runner = D._BatchRunner(pipeline.keyed_operator(emit), SCHEMA.json(), pipeline.output_schema.json(), "ts",
                            10_000)
    steps, got = _steps(rows), Counter()
    for key in sorted({r["k"] for r in rows}):
        mine = [(i, r) for i, r in enumerate(rows) if r["k"] == key and r["ts"] is not None]
        frame = pd.DataFrame({
            KEY_TEXT: [key] * len(mine), OP: [DATA_ROW] * len(mine), ROW: [wire_text(r) for _, r in mine],
            "__tw_step": [r["batch"] for _, r in mine], "__tw_order": [i for i, _ in mine],
            "__tw_before": [steps[r["batch"]][0] for _, r in mine]})
        out = runner(frame)
        out = out[out[D.KIND] != D.STATS]
        got.update(tuple(None if pd.isna(v) else v for v in values) for values in zip(*(out[c] for c in TAGGED), strict=True))
    return got


class _Counter:
    def __init__(self) -> None:
        self.value = 0

    def add(self, n: int) -> None:
        self.value += n


def _by_slices(pipeline: D.Pipeline, rows: list[dict[str, Any]], emit: str, slices: int, seed: int) -> Counter:
    """The backfill's executor side over ``slices`` slices cut by stream time, Arrow batches cut at random."""
    rnd = random.Random(seed)
    steps = _steps(rows)
    timed = [(i, r) for i, r in enumerate(rows) if r["ts"] is not None]
    low, high = min(_us(r["ts"]) for _, r in timed), max(steps[r["batch"]][1] for _, r in timed) + 1
    edges = [low + (high - low) * j // slices for j in range(slices + 1)]
    output = D.tagged_schema()
    result_json = pipeline.output_schema.json()
    from pyspark.sql import types as T

    out_schema = T.StructType([T.StructField("k", T.StringType()), *output.fields])
    carried: dict[str, bytes] = {}
    got = Counter()
    for j in range(slices):
        last = j == slices - 1
        mine = sorted(((r["k"], r["batch"], i, r) for i, r in timed if edges[j] <= steps[r["batch"]][1] < edges[j + 1]),
                      key=lambda t: t[:3])
        entries: list[tuple[str, bytes | None, dict | None, int | None]] = []
        for key in sorted({k for k, *_ in mine} | set(carried)):
            if key in carried:
                entries.append((key, carried[key], None, None))
            entries += [(key, None, r, i) for k, _, i, r in mine if k == key]
        runner = DB._SliceRunner(pipeline.keyed_operator(emit), ("k",), SCHEMA.json(), result_json,
                                 out_schema.json(), 10_000, last, (_Counter(), _Counter(), _Counter()))
        batches, at = [], 0
        while at < len(entries) or not batches:
            size = rnd.randint(1, 5)
            part = entries[at:at + size]
            at += size
            batches.append(pa.record_batch({
                "k": pa.array([e[0] for e in part], pa.string()),
                DB.WIRE: pa.array([wire_text(e[2]) if e[2] else None for e in part], pa.string()),
                DB.STEP: pa.array([e[2]["batch"] if e[2] else None for e in part], pa.int32()),
                DB.ORDER: pa.array([e[3] for e in part], pa.int64()),
                DB.BEFORE: pa.array([steps[e[2]["batch"]][0] if e[2] else None for e in part], pa.int64()),
                DB.STREAM_TIME: pa.array([steps[e[2]["batch"]][1] if e[2] else None for e in part], pa.int64()),
                host.STATE: pa.array([e[1] for e in part], pa.binary()),
            }))
        carried = {}
        for batch in runner(iter(batches)):
            data = batch.to_pydict()
            for i, state in enumerate(data[host.STATE]):
                if state is not None:
                    carried[data["k"][i]] = state
                else:
                    got[tuple(data[c][i] for c in TAGGED)] += 1
        assert not last or not carried
    return got


PIPELINE_EMITS = [("tumble_early_lateness", "append"), ("tumble_early_lateness", "retract"),
                  ("tumble_early_keyed", "upsert"), ("session_process", "append"), ("session_process", "retract"),
                  ("sliding_evictor_reduce", "append")]


@pytest.mark.parametrize("name, emit", PIPELINE_EMITS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_slices_with_carried_state_give_run_batchs_rows(name: str, emit: str, seed: int) -> None:
    pipeline = pipelines()[name]
    rows = random_rows(seed)
    expected = _by_run_batch(pipeline, rows, emit)
    kinds = Counter(k for (k, *_), n in expected.items() for _ in range(n))
    assert kinds[D.MAIN] > 5 and kinds[D.LATE]  # the data has late rows
    if seed == 1 and name.startswith("tumble"):
        assert kinds[D.DEAD_WIRE]  # seed 1 has rows the aggregate fails on
    for slices in (1, 3, 7):
        assert _by_slices(pipeline, rows, emit, slices, seed * 10 + slices) == expected, (name, emit, slices)


def test_without_arrival_the_range_is_one_step_with_no_late_row() -> None:
    """No arrival column: every row arrives at once (one step, Flink's batch mode), whose stream time is the range's
    largest event time: the slices before the last get no row, and the last gives run_batch's rows."""
    pipeline = pipelines()["session_process"]
    rows = [{**r, "batch": 0} for r in random_rows(2)]
    expected = _by_run_batch(pipeline, rows, "append")
    assert not any(kind == D.LATE for kind, *_ in expected) and expected
    assert _by_slices(pipeline, rows, "append", 3, seed=5) == expected


def test_the_last_step_of_a_batch_waits_for_the_rest_of_its_step() -> None:
    """A changelog changes each window once per arrival step: a step cut by an Arrow batch edge is still one step
    (three rows of one window in one step: one +I, not +I then -U/+U)."""
    pipeline = _keyed(Tumbling.of("1 min")).aggregate(SumCount(), output_schema=ddl("n BIGINT, total BIGINT"))
    base = datetime(2026, 11, 26, 12)
    rows = [{"id": f"r{i}", "k": "a", "ts": base + timedelta(seconds=i), "v": 1, "batch": 0} for i in range(3)]
    got = _by_slices(pipeline, rows, "retract", 1, seed=4)
    assert sorted(json.loads(out)["op"] for (kind, out, *_), n in got.items() if kind == D.MAIN) == ["+I"]


@pytest.mark.parametrize("build, message", [
    (lambda p: p.key_by("k").window(Tumbling.of("1 min", processing_time=True)).reduce(max),
     "argument 'window': TumblingProcessingTimeWindows runs on a processing clock, which a backfill does not have"),
    (lambda p: p.key_by("k").window(Tumbling.of("1 min")).trigger(Purging.of(ProcessingTime())).reduce(max),
     "argument 'trigger': ProcessingTime fires on the processing clock, which a backfill does not have"),
])
def test_processing_time_is_refused_naming_it(build, message) -> None:
    pipeline = build(D.stream(_Frame(SCHEMA), time="ts", watermark="10 seconds"))
    with pytest.raises(SpecError) as caught:
        DB.backfill_datastream(pipeline, start=datetime(2026, 1, 1), end=datetime(2026, 1, 2), slices=3, output="o")
    assert message in str(caught.value)


@pytest.mark.parametrize("name", ["timeweave.spark.datastream_backfill", "timeweave.spark.host.backfill"])
def test_docstring_examples_run(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_processing_time_parts_finds_nested_triggers() -> None:
    assert DB.processing_time_parts(EventTime().with_early(ProcessingTime())) == ["ProcessingTime"]
    assert DB.processing_time_parts(None) == []


# =================================================================================================
# With Spark
# =================================================================================================
def _read(spark, path: Path):
    df = spark.read.parquet(str(path))
    return df.drop("slice")


def _outputs(spark, root: Path, schema) -> tuple[Counter, Counter, Counter]:
    return _as_counters(_read(spark, root), _read(spark, Path(f"{root}_late")), _read(spark, Path(f"{root}_dead_letter")),
                        schema)


def _files(root: Path) -> dict[str, int]:
    """Every slice directory's parquet files under the outputs of ``root`` (main, late, dead letter, state)."""
    roots = [root, Path(f"{root}_late"), Path(f"{root}_dead_letter"), root / "_state"]
    return {str(f): f.stat().st_mtime_ns for r in roots for f in r.glob("slice=*/*.parquet")}


@pytest.mark.spark
@pytest.mark.slow
def test_the_backfill_in_1_3_and_7_slices_writes_the_flushed_streams_and_run_batchs_rows(spark, tmp_path: Path) -> None:
    """The job config's pipeline (an early-firing tumbling window with allowed lateness, a retract changelog) over
    random rows in 4 files (out of order, late, NULL-time and failing rows, three keys): streamed file by file and
    flushed, run_batch(arrival="batch") over the same rows, and backfilled through ``run_backfill`` in 1, 3 and 7
    slices (``arrival``: the file's batch number) write the same main, late and dead-letter rows; then slice 1 of
    the 3-slice run alone replaces only its own files."""
    from timeweave.jobs.backfill import run_backfill
    from timeweave.jobs.streaming import run_streaming

    rows = random_rows(4, n=40, batches=4)  # 4 late rows, 2 failing ones, 4 NULL times
    _write_batches(tmp_path / "in", rows, [0, 1, 2, 3])
    reference = "tests.spark.test_datastream_backfill:job_pipeline"
    run_streaming(job_config(tmp_path, datastream={"pipeline": reference, "emit": "retract"}), spark, flush=True)
    pipeline = job_pipeline(spark.createDataFrame([tuple(r.values()) for r in rows], SCHEMA))
    schema = pipeline.changelog_schema
    streamed = _outputs(spark, tmp_path / "out", schema)
    assert all(streamed) and {op for (*_, op) in streamed[0]} == {"+I", "-U", "+U"}
    assert _as_counters(*pipeline.run_batch(arrival="batch", emit="retract"), schema) == streamed
    for slices in (1, 3, 7):
        out = tmp_path / f"bf{slices}"
        metrics = run_backfill(config_of(tmp_path, out), "2026-11-26T11:00", "2026-11-26T13:00", slices, spark=spark)
        assert _outputs(spark, out, schema) == streamed, slices
        assert (metrics["slices"], metrics["late"], metrics["dead_letter"]) == (
            slices, sum(streamed[1].values()), sum(streamed[2].values()))

    out = tmp_path / "bf3"
    before = _files(out)
    metrics = run_backfill(config_of(tmp_path, out), "2026-11-26T11:00", "2026-11-26T13:00", 3, spark=spark, only=[1])
    label = metrics["per_slice"][0]["label"]
    changed = {f for f in before.keys() | _files(out).keys() if before.get(f) != _files(out).get(f)}
    # slice 1's main, late, dead-letter and state files, and the rows of no slice (NULL times, malformed records),
    # which every run writes again
    others = [f for f in changed if f"slice={label}/" not in f and "slice=none/" not in f and "slice=malformed/" not in f]
    assert not others, others
    assert any(f"slice={label}/" in f for f in changed)
    assert _outputs(spark, out, schema) == streamed


@pytest.mark.spark
@pytest.mark.slow
def test_a_backfill_killed_mid_slice_and_resumed_loses_and_duplicates_nothing(spark, tmp_path: Path) -> None:
    """``python -m timeweave.jobs backfill`` in 2 slices killed with SIGKILL (its whole session) while slice 1 is
    written, then resumed from that slice (``--only 1``: slice 0's state is there): the outputs are run_batch's
    rows."""
    from tests.helpers.chaos import launch

    rows = random_rows(4, n=40, batches=4)
    _write_batches(tmp_path / "in", rows, [0, 1, 2, 3])
    out = tmp_path / "bf"
    config = tmp_path / "job.json"
    config.write_text(json.dumps(config_of(tmp_path, out)))
    argv = [sys.executable, "-m", "timeweave.jobs", "backfill", "--config", str(config), "--start",
            "2026-11-26T11:00", "--end", "2026-11-26T13:00", "--slices", "2"]
    killed = launch(argv, tmp_path / "run", lambda _: len(list(out.glob("slice=*"))) >= 2, "slice_dirs")
    assert killed.killed, Path(killed.log).read_text()[-2000:]
    resumed = launch([*argv, "--only", "1"], tmp_path / "run", None, None)
    assert resumed.returncode == 0, Path(resumed.log).read_text()[-2000:]
    pipeline = job_pipeline(spark.createDataFrame([tuple(r.values()) for r in rows], SCHEMA))
    expected = _as_counters(*pipeline.run_batch(arrival="batch", emit="retract"), pipeline.changelog_schema)
    assert all(expected) and _outputs(spark, out, pipeline.changelog_schema) == expected


def config_of(tmp_path: Path, out: Path) -> dict[str, Any]:
    return job_config(tmp_path, datastream={"pipeline": "tests.spark.test_datastream_backfill:job_pipeline",
                                            "emit": "retract", "arrival": "batch"}, output={"path": str(out)})


def job_pipeline(df):
    """The job's pipeline (``tests.spark.test_datastream_backfill:job_pipeline``): an early-firing tumbling window
    with allowed lateness."""
    return pipelines(df)["tumble_early_lateness"]


def test_the_job_config_reads_the_arrival_column(tmp_path: Path) -> None:
    from timeweave.jobs.config import load_job_config

    job = load_job_config(job_config(tmp_path, datastream={"pipeline": "m:f", "arrival": "batch"}))
    assert job.arrival == "batch"
    assert load_job_config(job_config(tmp_path)).arrival is None
