"""The sliced MATCH_RECOGNIZE backfill: N slices == one DataFrame-door run over [start, end).

Random inputs and clauses come from tests/helpers/mr_random.py (ties broken by a secondary ORDER BY
column, NULLs in value columns and keys).  The range starts and ends inside the data, so rows outside
it must be ignored; 7 slices put edges inside match attempts.  Two more clauses run through every door
(1, 3 and 7 slices included) in tests/spark/test_match_recognize_every_door.py.
"""

from __future__ import annotations

import doctest
import importlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

import timeweave
from tests.helpers.mr_random import CLAUSES, COLUMNS, SCHEMA, SPAN, T0, as_tuples, canonical, in_range, random_events
from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.pattern import match_recognize, parse_clause
from timeweave.jobs.cli import METRICS_PREFIX, main
from timeweave.spark.match_recognize import plan
from timeweave.spark.match_recognize_backfill import STATE, _SliceRunner, backfill_match_recognize

pytestmark = pytest.mark.spark

START = T0 + timedelta(minutes=5)
END = T0 + SPAN - timedelta(minutes=7)
# (clause, slices) through Spark: a lookahead (NEXT), no PARTITION BY, 1 slice.  Every clause runs through
# the executor function in 5 slices without the JVM below, and 1/3/7 slices in the every-door test.
SLICED = [("one-row-greedy-avg", 3), ("omit-empty-next", 3), ("no-partition-anchor", 3), ("show-empty-prev", 1)]


def door_rows(df, clause: str, rows, start=START, end=END):
    """The DataFrame door over [start, end), checked against the core over the same rows."""
    door = timeweave.match_recognize(df.where((F.col("t") >= start) & (F.col("t") < end)), clause)
    columns = door.columns
    expected = canonical(door.collect(), columns)
    assert expected == canonical(match_recognize(parse_clause(clause), in_range(rows, start, end)), columns)
    return columns, expected


@pytest.mark.parametrize(("name", "slices"), SLICED, ids=[f"{n}-{s}" for n, s in SLICED])
def test_slices_equal_the_dataframe_door(spark, tmp_path, name, slices) -> None:
    clause = CLAUSES[name]
    rows = random_events(len(name) + slices, n=80, ties=slices != 1)
    df = spark.createDataFrame(as_tuples(rows), SCHEMA)
    columns, expected = door_rows(df, clause, rows)
    assert sum(expected.values()) > 0
    out = str(tmp_path / "out")
    metrics = backfill_match_recognize(df, clause, START, END, slices, out)
    got = spark.read.parquet(out)
    assert got.columns == [*columns, "slice"]
    assert canonical(got.collect(), columns) == expected
    assert metrics["slices"] == slices == len(metrics["per_slice"])
    assert metrics["rows_in"] == len(in_range(rows, START, END))
    assert metrics["rows_out"] == sum(expected.values())
    assert [m["rows_in"] for m in metrics["per_slice"]] == [
        len(in_range(rows, *edges)) for edges in zip(
            [START + (END - START) / slices * i for i in range(slices)],
            [START + (END - START) / slices * (i + 1) for i in range(slices)], strict=True)]
    keys = {r["k"] for r in in_range(rows, START, END)} if "PARTITION BY" in clause else {()}
    # every key seen so far is carried over each inner edge; nothing after the last slice
    assert metrics["per_slice"][-1]["state_keys_out"] == metrics["state_keys_carried"] == 0
    if slices > 1:
        assert metrics["per_slice"][-2]["state_keys_out"] <= len(keys)
        assert metrics["per_slice"][-2]["state_keys_out"] >= 1
    assert metrics["dead_letter"] == 0 and metrics["seconds"] > 0


def test_rerunning_one_slice_replaces_exactly_its_output(spark, tmp_path) -> None:
    clause = CLAUSES["all-rows-reluctant-subset"]
    rows = random_events(5, n=80)
    df = spark.createDataFrame(as_tuples(rows), SCHEMA)
    columns, expected = door_rows(df, clause, rows)
    out = tmp_path / "out"
    first = backfill_match_recognize(df, clause, START, END, 3, str(out))
    slice_dirs = sorted(p for p in out.iterdir() if p.name.startswith("slice="))
    assert len(slice_dirs) == 3
    before = {p.name: canonical(spark.read.parquet(str(p)).collect(), columns) for p in slice_dirs}
    untouched = {p.name: sorted(f.stat().st_mtime_ns for f in p.iterdir()) for p in (slice_dirs[0], slice_dirs[2])}
    again = backfill_match_recognize(df, clause, START, END, 3, str(out), only=[1])
    assert again["slices"] == 1 and again["per_slice"][0] == {**first["per_slice"][1], "seconds": again["per_slice"][0]["seconds"]}
    after = {p.name: canonical(spark.read.parquet(str(p)).collect(), columns) for p in slice_dirs}
    assert after == before
    assert {p.name: sorted(f.stat().st_mtime_ns for f in p.iterdir()) for p in (slice_dirs[0], slice_dirs[2])} == untouched
    assert canonical(spark.read.parquet(str(out)).collect(), columns) == expected
    # the state a re-run starts from is the one the first run left: the last slice again gives the same rows
    backfill_match_recognize(df, clause, START, END, 3, str(out), only=[2])
    assert canonical(spark.read.parquet(str(out)).collect(), columns) == expected
    # a slice whose start state was never written is refused with the slice to run first
    with pytest.raises(SpecError, match=r"slice 2 needs the state .* run slice 1 first"):
        backfill_match_recognize(df, clause, START, END, 3, str(tmp_path / "fresh"), only=[2])


def test_null_event_times_are_dead_letters_with_a_reason(spark, tmp_path) -> None:
    clause = CLAUSES["unmatched-skip-to-last"]
    rows = random_events(9, n=60, null_times=3)
    df = spark.createDataFrame(as_tuples(rows), SCHEMA)
    columns, expected = door_rows(df, clause, rows)
    out = str(tmp_path / "out")
    metrics = backfill_match_recognize(df, clause, START, END, 2, out, dead_letter=str(tmp_path / "dead"))
    assert canonical(spark.read.parquet(out).collect(), columns) == expected
    assert metrics["dead_letter"] == 3
    dead = spark.read.parquet(str(tmp_path / "dead")).collect()
    assert {(r["side"], r["reason"]) for r in dead} == {("input", "NULL event time column t")}
    assert sorted(json.loads(r["row"])["seq"] for r in dead) == sorted(r["seq"] for r in rows if r["t"] is None)


def test_integer_event_time_and_the_job_cli(spark, tmp_path, capsys) -> None:
    """An integer (µs) event time column, through ``python -m timeweave.jobs backfill`` (in process)."""
    clause = ("PARTITION BY k ORDER BY ts MEASURES FIRST(A.ts) AS t0, COUNT(*) AS n "
              "PATTERN (A B+) DEFINE B AS B.v > PREV(B.v)")
    rows = random_events(4, n=50)
    epoch = datetime(1970, 1, 1)
    data = [(r["k"], (r["t"] - epoch) // timedelta(microseconds=1), r["v"]) for r in rows]
    df = spark.createDataFrame(data, "k STRING, ts BIGINT, v BIGINT")
    df.write.parquet(str(tmp_path / "input"))
    start, end = START.replace(tzinfo=UTC), END.replace(tzinfo=UTC)
    expected_df = timeweave.match_recognize(
        df.where((F.col("ts") >= (START - epoch) // timedelta(microseconds=1))
                 & (F.col("ts") < (END - epoch) // timedelta(microseconds=1))), clause)
    expected = canonical(expected_df.collect(), expected_df.columns)
    config = {
        "match_recognize": {"clause": clause},
        "input": {"path": str(tmp_path / "input"), "format": "parquet", "schema": "k STRING, ts BIGINT, v BIGINT"},
        "output": {"path": str(tmp_path / "out")},
    }
    assert main(["backfill", "--config", json.dumps(config), "--start", start.isoformat(), "--end", end.isoformat(),
                 "--slices", "3"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    metrics = json.loads(printed.removeprefix(METRICS_PREFIX))
    assert metrics["kind"] == "backfill" and metrics["job"] == "match_recognize" and metrics["slices"] == 3
    assert canonical(spark.read.parquet(str(tmp_path / "out")).collect(), expected_df.columns) == expected
    assert metrics["rows_out"] == sum(expected.values()) > 0
    assert (Path(tmp_path / "out" / "_state")).is_dir()


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"slices": 0}, SpecError, "argument 'slices': must be >= 1"),
    ({"slices": 2.5}, SpecError, "argument 'slices': must be an integer"),
    ({"end": START}, SpecError, "argument 'end': end .* must be after start"),
    ({"start": "2024-01-01"}, SpecError, "argument 'start': must be a datetime"),
    ({"only": [3]}, SpecError, r"argument 'only': slice indexes \[3\] are not in 0..1"),
    ({"output": ""}, SpecError, "argument 'output': an output path is required"),
    ({"clause": " "}, SpecError, "argument 'clause': the MATCH_RECOGNIZE clause"),
    ({"clause": "PARTITION BY k MEASURES COUNT(*) AS n PATTERN (A) DEFINE A AS A.v > 0"}, SpecError,
     "needs ORDER BY <event time column> first"),
    ({"clause": "ORDER BY t DESC PATTERN (A) DEFINE A AS A.v > 0"}, SpecError, "must be ordered ascending"),
    ({"clause": "ORDER BY s PATTERN (A) DEFINE A AS A.v > 0"}, SpecError,
     "event time s .* must be a TIMESTAMP or an integer"),
    ({"clause": "ORDER BY t PATTERN (A) DEFINE A AS A.volume > 0"}, QuerySyntaxError, "column volume not found"),
])
def test_bad_arguments_fail_before_any_job(spark, tmp_path, kwargs, error, message) -> None:
    df = spark.createDataFrame(as_tuples(random_events(1, n=3)), SCHEMA)
    arguments = {"clause": CLAUSES["show-empty-prev"], "start": START, "end": END, "slices": 2,
                 "output": str(tmp_path / "out"), **kwargs}
    with pytest.raises(error, match=message):
        backfill_match_recognize(df, **arguments)
    assert not (tmp_path / "out").exists()


def test_an_input_column_named_like_the_state_column_is_refused(spark, tmp_path) -> None:
    df = spark.createDataFrame(as_tuples(random_events(1, n=3)), SCHEMA).withColumnRenamed("w", STATE.upper())
    with pytest.raises(SpecError, match="argument 'df': the input has a column named __tw_state"):
        backfill_match_recognize(df, CLAUSES["show-empty-prev"], START, END, 2, str(tmp_path / "out"))


def test_state_is_one_row_per_key_with_the_pickled_matcher(spark, tmp_path) -> None:
    rows = random_events(2, n=40)
    df = spark.createDataFrame(as_tuples(rows), SCHEMA)
    backfill_match_recognize(df, CLAUSES["within-alternation-skip-first"], T0, T0 + SPAN, 2, str(tmp_path / "o"))
    state = spark.read.parquet(str(tmp_path / "o" / "_state")).collect()
    assert sorted((r["k"] or "") for r in state) == sorted({(r["k"] or "") for r in rows if r["t"] < T0 + SPAN / 2})
    assert all(isinstance(r[STATE], (bytes, bytearray)) and r[STATE] for r in state)


@pytest.mark.parametrize("name", ["timeweave.spark.match_recognize_backfill", "tests.helpers.mr_random"])
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


# -- the executor function alone (no JVM): state carried across slices and Arrow batch boundaries ------------


class _Counter:
    def __init__(self) -> None:
        self.value = 0

    def add(self, amount: int) -> None:
        self.value += amount


def _arrow_batches(items: list[dict], size: int) -> list[pa.RecordBatch]:
    types = {"k": pa.string(), "t": pa.timestamp("us", tz="UTC"), "seq": pa.int64(), "v": pa.int64(),
             "s": pa.string(), "w": pa.float64(), STATE: pa.binary()}
    return [pa.RecordBatch.from_pydict({c: [r.get(c) for r in items[i : i + size]] for c in types},
                                       schema=pa.schema(list(types.items())))
            for i in range(0, len(items), size)]


@pytest.mark.parametrize("name", list(CLAUSES))
def test_slice_runner_carries_state_across_slices_and_batches(name) -> None:
    """Five slices through the ``mapInArrow`` function itself, batches of 7 rows: the core's batch rows."""
    clause = CLAUSES[name]
    rows = random_events(len(name), n=90, ties=True)
    bound = plan(clause, T.StructType([T.StructField(c, t) for c, t in zip(COLUMNS, [
        T.StringType(), T.TimestampType(), T.LongType(), T.LongType(), T.StringType(), T.DoubleType()], strict=True)]))
    minutes = [0, 17, 37, 38, 80]  # five slices, one nearly empty
    edges = [*(T0 + timedelta(minutes=m) for m in minutes), T0 + SPAN]
    out_names = bound.schema.names
    got, carried = [], []
    for index in range(len(minutes)):
        last = index == len(minutes) - 1
        counters = (_Counter(), _Counter(), _Counter())
        runner = _SliceRunner(bound.spec.text, bound.input_schema.json(), bound.schema.json(), "UTC", last, counters)
        items = [*carried, *({**r, STATE: None} for r in in_range(rows, edges[index], edges[index + 1]))]
        # Spark's arrangement: key (NULLs last), the carried state first, then ORDER BY t, seq
        items.sort(key=lambda r: (r["k"] is None, r["k"] or "", r[STATE] is None, r.get("t") or T0, r.get("seq") or 0)
                   if "PARTITION BY" in clause else (r[STATE] is None, r.get("t") or T0, r.get("seq") or 0))
        carried = []
        for batch in runner(iter(_arrow_batches(items, 7))):
            for record in batch.to_pylist():
                if record[STATE] is None:
                    got.append(record)
                else:
                    carried.append({"k": record.get("k"), STATE: record[STATE]})
        assert counters[0].value == len(items) - sum(1 for r in items if r[STATE] is not None)
        assert counters[2].value == len(carried) and (not last or not carried)
    expected = canonical(match_recognize(parse_clause(clause), rows), out_names)
    tz_free = [{**r, **{c: r[c].replace(tzinfo=None) for c in out_names if isinstance(r[c], datetime)}} for r in got]
    assert canonical(tz_free, out_names) == expected


# -- state files are data: a tampered state never runs ------------------------------------------------------


class _Command:
    """A pickle that, if loaded, runs a command creating ``path`` (what a crafted state file could do)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple:
        import subprocess

        return (subprocess.call, (["touch", self.path],))


def _rewrite_state(directory: Path, replace) -> None:
    """Rewrite a slice's state parquet files in place with each ``__tw_state`` value replaced by ``replace(blob)``."""
    import pyarrow.parquet as pq

    for file in sorted(directory.glob("*.parquet")):
        table = pq.read_table(file)
        blobs = [replace(b) for b in table.column(STATE).to_pylist()]
        index = table.schema.get_field_index(STATE)
        pq.write_table(table.set_column(index, STATE, pa.array(blobs, pa.binary())), file)
        crc = file.with_name(f".{file.name}.crc")
        crc.unlink(missing_ok=True)  # Hadoop's checksum of the file we replaced


def test_a_tampered_state_file_fails_with_the_format_error_and_runs_nothing(spark, tmp_path) -> None:
    import pickle

    clause = CLAUSES["all-rows-reluctant-subset"]
    rows = random_events(5, n=60)
    df = spark.createDataFrame(as_tuples(rows), SCHEMA)
    out = tmp_path / "out"
    backfill_match_recognize(df, clause, START, END, 3, str(out))
    state_dirs = sorted((out / "_state").iterdir())
    assert len(state_dirs) == 2 and list(state_dirs[0].glob("*.parquet"))
    marker = tmp_path / "marker"
    # A pickle (every earlier release's state, here crafted to run a command) is refused and never loaded.
    _rewrite_state(state_dirs[0], lambda blob: pickle.dumps(_Command(marker)) if blob is not None else None)
    with pytest.raises(Exception, match=r"StateFormatError: backfill state .*_state/slice=.* earlier timeweave "
                                        r"release .* re-run the backfill from slice 0") as error:
        backfill_match_recognize(df, clause, START, END, 3, str(out), only=[1])
    assert state_dirs[0].name in str(error.value)
    assert not marker.exists()
    # Re-running from slice 0 rebuilds the state; then one flipped byte of a state value is caught by its checksum.
    backfill_match_recognize(df, clause, START, END, 3, str(out))
    _rewrite_state(state_dirs[0], lambda blob: None if blob is None else blob[:-1] + bytes([blob[-1] ^ 0x20]))
    with pytest.raises(Exception, match=r"StateFormatError: backfill state .*bad checksum"):
        backfill_match_recognize(df, clause, START, END, 3, str(out), only=[1])


def test_the_slice_runner_refuses_state_that_is_not_its_format(tmp_path) -> None:
    """The executor function alone (no JVM): pickles, damaged blobs, another structure, another version."""
    import pickle

    from timeweave.core.errors import StateFormatError
    from timeweave.core.state_codec import encode

    clause = CLAUSES["all-rows-reluctant-subset"]
    bound = plan(clause, T.StructType([T.StructField(c, t) for c, t in zip(COLUMNS, [
        T.StringType(), T.TimestampType(), T.LongType(), T.LongType(), T.StringType(), T.DoubleType()], strict=True)]))
    marker = tmp_path / "marker"
    good = encode([1, 2])
    blobs = {
        "earlier timeweave release": pickle.dumps(_Command(marker)),
        "bad checksum": good[:-1] + b"\x00",
        "expected a matcher": good,
        "unknown state format version 9": good[:4] + b"\x09" + good[5:],
        "not timeweave state": b"PAR1" + good,
    }
    for message, blob in blobs.items():
        runner = _SliceRunner(bound.spec.text, bound.input_schema.json(), bound.schema.json(), "UTC", False,
                              (_Counter(), _Counter(), _Counter()), "out/_state/slice=0")
        items = [{"k": "a", STATE: blob}, {"k": "a", "t": T0, "seq": 1, "v": 1, STATE: None}]
        with pytest.raises(StateFormatError, match=rf"backfill state out/_state/slice=0 \(key \('a',\)\): .*{message}"):
            list(runner(iter(_arrow_batches(items, 7))))
    assert not marker.exists()
