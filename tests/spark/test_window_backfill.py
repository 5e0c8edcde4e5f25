"""The sliced window-aggregation backfill (timeweave.spark.window_backfill) and the window backfill job.

A backfill is a batch run: every row in ``[start, end)`` counts (no watermark, so no late row: a row behind the
others is simply in its windows, as in the DataFrame door and Flink's batch mode).  The union of its slices
equals the DataFrame door over those rows, in 1, 3 or 7 slices, sessions and HOP windows crossing slice edges
included; a re-run of one slice replaces only that slice's files; NULL event times are dead letters.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from tests.helpers.window_random import AGGREGATES, SCHEMA, START, random_rows
from timeweave.core.windows import cumulate, hop, session
from timeweave.core.windows.calls import read_aggregates
from timeweave.jobs import cli
from timeweave.spark.host.backfill import STATE
from timeweave.spark.window_backfill import _SliceRunner, backfill_window_aggregate
from timeweave.spark.windows import window_aggregate

BEGIN, END = START - timedelta(hours=1), START + timedelta(hours=4)


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=str)


def _slice_files(path: Path) -> dict[str, list[float]]:
    return {d.name: sorted(f.stat().st_mtime for f in d.glob("*.parquet")) for d in sorted(path.glob("slice=*"))}


@pytest.mark.spark
@pytest.mark.slow  # 12 slice runs of a few Spark jobs each
@pytest.mark.parametrize("window_id", ["session", "hop"])
def test_backfill_in_1_3_7_slices_equals_the_dataframe_door(spark, tmp_path: Path, window_id: str) -> None:
    spec = session("4 minutes", "k") if window_id == "session" else hop("5 minutes", "15 minutes")
    rows = random_rows(21)
    df = spark.createDataFrame(rows, SCHEMA)
    inside = df.where(f"ts >= '{BEGIN}' AND ts < '{END}'")
    expected = window_aggregate(inside, AGGREGATES, keys=["k"], time="ts", window=spec)
    expected_rows = _rows(expected)
    assert len(expected_rows) > 20
    for slices in (1, 3, 7):
        out = tmp_path / f"out{slices}"
        metrics = backfill_window_aggregate(df, AGGREGATES, keys="k", time="ts", window=spec, start=BEGIN, end=END,
                                            slices=slices, output=str(out))
        got = spark.read.parquet(str(out))
        assert [(f.name, f.dataType) for f in got.drop("slice").schema] == [(f.name, f.dataType) for f in expected.schema]
        assert _rows(got.drop("slice")) == expected_rows, slices
        assert metrics["rows_in"] == len([r for r in rows if r["ts"] is not None and BEGIN <= r["ts"] < END])
        assert metrics["rows_out"] == len(expected_rows) and metrics["dead_letter"] == 2
        if slices == 7:  # windows were open at the edges: their keys' state was carried
            assert sum(m["state_keys_out"] for m in metrics["per_slice"][:-1]) > 0
    dead = spark.read.parquet(f"{tmp_path / 'out1'}_dead_letter/slice=none").collect()
    assert sorted(json.loads(r["row"])["id"] for r in dead) == sorted(r["id"] for r in rows if r["ts"] is None)
    assert {r["reason"] for r in dead} == {"NULL event time column ts"}

    # --only 1 re-runs slice 1 from the state slice 0 left: its files are replaced, no other slice's.
    out = tmp_path / "out3"
    before = _slice_files(out)
    backfill_window_aggregate(df, AGGREGATES, keys="k", time="ts", window=spec, start=BEGIN, end=END, slices=3,
                              output=str(out), only=[1])
    after = _slice_files(out)
    changed = [name for name in before if before[name] != after[name]]
    assert changed == [sorted(before)[1]]
    assert _rows(spark.read.parquet(str(out)).drop("slice")) == expected_rows


@pytest.mark.spark
def test_the_backfill_job_runs_a_window_config(spark, tmp_path: Path, capsys) -> None:
    rows = random_rows(22, n=30)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text("".join(
        json.dumps({k: (v.isoformat() if hasattr(v, "isoformat") else float(v) if k == "p" else v)
                    for k, v in r.items()}) + "\n" for r in rows))
    config = {
        "window": {"function": "cumulate", "time": "ts", "step": "5 minutes", "max_size": "20 minutes", "keys": ["k"],
                   "aggregates": AGGREGATES},
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": SCHEMA},
        "output": {"path": str(tmp_path / "out")},
    }
    assert cli.main(["backfill", "--config", json.dumps(config), "--start", BEGIN.isoformat(), "--end", END.isoformat(),
                     "--slices", "3"]) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1].removeprefix(cli.METRICS_PREFIX))
    source = spark.read.schema(SCHEMA).json(str(tmp_path / "in"))
    expected = window_aggregate(source, AGGREGATES, keys=["k"], time="ts",
                                window=cumulate("5 minutes", "20 minutes"))
    assert _rows(spark.read.parquet(str(tmp_path / "out")).drop("slice")) == _rows(expected)
    assert metrics["job"] == "window" and metrics["slices"] == 3 and metrics["dead_letter"] == 2


# -- the slice operator without a JVM: state carried across edges ------------------------------------------------
def _slice_batch(rows: list[dict], states: list[tuple]) -> pa.RecordBatch:
    """One slice's operator input as the driver arranges it: by key, a key's carried state row first, then its rows
    by event time."""
    items = [((str(k), 0, 0), {"k": k, STATE: blob}) for k, blob in states]
    items += [((str(r["k"]), 1, r["ts"]), r) for r in rows]
    items.sort(key=lambda item: item[0])
    ordered = [row for _, row in items]
    return pa.record_batch({
        "id": [r.get("id") for r in ordered], "k": [r.get("k") for r in ordered],
        "ts": pa.array([r.get("ts") for r in ordered], pa.timestamp("us", tz="UTC")),
        "v": pa.array([r.get("v") for r in ordered], pa.int64()),
        "p": pa.array([r.get("p") for r in ordered], pa.decimal128(10, 2)),
        "flag": pa.array([r.get("flag") for r in ordered], pa.bool_()),
        STATE: pa.array([r.get(STATE) for r in ordered], pa.binary()),
    })


class _Counter:
    def __init__(self) -> None:
        self.value = 0

    def add(self, n: int) -> None:
        self.value += n


@pytest.mark.parametrize("spec", [session("4 minutes", "k"), hop("5 minutes", "15 minutes"),
                                  cumulate("5 minutes", "20 minutes")], ids=["session", "hop", "cumulate"])
def test_slices_carry_open_windows_across_edges_without_a_jvm(spec) -> None:
    """The union of 5 slices' windows (each key's open windows carried as state bytes) = one slice's windows."""
    rows = [r for r in random_rows(31, n=80) if r["ts"] is not None]
    first, last = min(r["ts"] for r in rows), max(r["ts"] for r in rows) + timedelta(seconds=1)
    step = (last - first) / 5
    edges = [first + step * i for i in range(6)]
    input_json = T.StructType([T.StructField("id", T.StringType()), T.StructField("k", T.StringType()),
                               T.StructField("ts", T.TimestampType()), T.StructField("v", T.LongType()),
                               T.StructField("p", T.DecimalType(10, 2)), T.StructField("flag", T.BooleanType())]).json()
    aggregates = read_aggregates(AGGREGATES)
    output = T.StructType([T.StructField(n, t) for n, t in [
        ("window_start", T.TimestampType()), ("window_end", T.TimestampType()), ("window_time", T.TimestampType()),
        ("k", T.StringType()), ("cnt", T.LongType()), ("total", T.DecimalType(20, 2)), ("hi", T.LongType()),
        ("lo_ts", T.TimestampType()), ("n_v", T.LongType()), ("avg_p", T.DecimalType(14, 6)), ("flagged", T.LongType())]])

    def run(bounds: list) -> list[tuple]:
        windows, states = [], []
        for i in range(len(bounds) - 1):
            part = [r for r in rows if bounds[i] <= r["ts"] < bounds[i + 1]]
            last_slice = i == len(bounds) - 2
            runner = _SliceRunner(spec, aggregates, "ts", ("k",), input_json, output.json(), None, last_slice,
                                  (_Counter(), _Counter(), _Counter()))
            out = pa.Table.from_batches(list(runner(iter([_slice_batch(part, states)]))))
            table = out.to_pylist()
            windows += [tuple(r[f.name] for f in output.fields) for r in table if r[STATE] is None]
            states = [(r["k"], r[STATE]) for r in table if r[STATE] is not None]
            assert last_slice or states or not part
        assert not states
        return sorted(windows, key=str)

    whole = run([edges[0], edges[-1]])
    assert len(whole) > 20
    assert run(edges) == whole
