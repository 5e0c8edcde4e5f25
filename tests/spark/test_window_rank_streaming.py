"""Window Top-N and window deduplication as a streaming job and a sliced backfill
(timeweave.spark.window_rank_streaming, timeweave.spark.window_rank_backfill, the ``window_top_n`` /
``window_deduplicate`` job configs).

* Flink's documented examples (the docs' Bid table and outputs) through the streaming job, flushed.
* Random rows with out-of-order, late and NULL-time rows, read in three runs with restarts from the checkpoint
  and flushed: main = the DataFrame door over the on-time (row, window) pairs (each late row left out of the
  windows it missed), late = the rows the core's late rule names for those micro-batches (the uninterrupted
  engine-free run, :func:`tests.helpers.window_random.reference_stream`), dead letter = the NULL-time rows.
* The backfill in 1 and 3 slices = the DataFrame door over the rows in ``[start, end)`` (a batch run: no row
  is late); a re-run of one slice replaces only that slice.
* The slice operator without a JVM: 5 slices with state carried across the edges = 1 slice.
* Errors come before any Spark job.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import types as T

import timeweave
from tests.helpers.spark_jobs import no_spark_job
from tests.helpers.window_random import SCHEMA, START, random_rows, reference_stream
from timeweave.core.errors import SpecError
from timeweave.core.windows import cumulate, hop, session, tumble
from timeweave.core.windows.ranking import RankRange, SortKey
from timeweave.jobs import cli
from timeweave.jobs.config import load_job_config
from timeweave.jobs.streaming import run_streaming
from timeweave.spark import window_rank_streaming as R
from timeweave.spark.host.backfill import STATE
from timeweave.spark.window_rank_backfill import _SliceRunner, backfill_window_deduplicate, backfill_window_top_n
from timeweave.spark.window_rank_streaming import bind_rank_query
from timeweave.spark.windows import window_tvf

_EPOCH = datetime(1970, 1, 1)
DELAY = timedelta(minutes=5)
BEGIN, END = START - timedelta(hours=1), START + timedelta(hours=4)


def _write_json(path: Path, rows: list[dict[str, Any]], extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)

    def value(v: Any) -> Any:
        return v.isoformat() if isinstance(v, datetime) else float(v) if isinstance(v, Decimal) else v

    path.write_text("".join(json.dumps({k: value(v) for k, v in r.items()}) + "\n" for r in rows) + extra)


def _rows(df, columns=None) -> list[tuple]:
    columns = columns or df.columns
    return sorted((tuple(r[c] for c in columns) for r in df.collect()), key=str)


def _types(df) -> list[tuple[str, Any]]:
    """Column names and types (a parquet read makes every column nullable)."""
    return [(f.name, f.dataType) for f in df.schema.fields]


def _metrics(capsys) -> dict[str, Any]:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1].removeprefix(cli.METRICS_PREFIX))


# -- Flink's documented examples through the streaming job -----------------------------------------------------
BIDS = [("08:05", "4.00", "A", "supplier1"), ("08:06", "4.00", "C", "supplier2"), ("08:07", "2.00", "G", "supplier1"),
        ("08:08", "2.00", "B", "supplier3"), ("08:09", "5.00", "D", "supplier4"), ("08:11", "2.00", "B", "supplier3"),
        ("08:13", "1.00", "E", "supplier1"), ("08:15", "3.00", "H", "supplier2"), ("08:17", "6.00", "F", "supplier5")]
BID_SCHEMA = "bidtime TIMESTAMP, price DECIMAL(10,2), item STRING, supplier_id STRING"
TOP3_OUT = [  # bidtime, price, item, supplier_id, window_start, window_end, rownum (Flink's docs)
    ("08:05", "4.00", "A", "supplier1", "08:00", "08:10", "2|3"), ("08:06", "4.00", "C", "supplier2", "08:00", "08:10", "2|3"),
    ("08:09", "5.00", "D", "supplier4", "08:00", "08:10", "1"), ("08:11", "2.00", "B", "supplier3", "08:10", "08:20", "3"),
    ("08:15", "3.00", "H", "supplier2", "08:10", "08:20", "2"), ("08:17", "6.00", "F", "supplier5", "08:10", "08:20", "1")]
DEDUP_OUT = [("08:09", "5.00", "D", "supplier4", "08:00", "08:10", "1"),
             ("08:17", "6.00", "F", "supplier5", "08:10", "08:20", "1")]


def _docs_text(row, tied: bool) -> tuple:
    def text(v: Any) -> str:
        return v.strftime("%H:%M") if isinstance(v, datetime) else f"{v:.2f}" if isinstance(v, Decimal) else str(v)

    out = tuple(text(row[c]) for c in ("bidtime", "price", "item", "supplier_id", "window_start", "window_end"))
    # A and C tie on 4.00: SQL leaves which one is row 2 open (Flink's docs show one order)
    return (*out, "2|3" if tied and out[1] == "4.00" else text(row["rownum"]))


@pytest.mark.spark
def test_flink_docs_top_n_and_deduplication_through_the_streaming_job(spark, tmp_path: Path, capsys) -> None:
    rows = [{"bidtime": datetime.fromisoformat(f"2020-04-15 {t}"), "price": Decimal(p), "item": i, "supplier_id": s}
            for t, p, i, s in BIDS]
    _write_json(tmp_path / "in" / "bids.json", rows)
    source = {"path": str(tmp_path / "in"), "format": "json", "schema": BID_SCHEMA, "watermark_delay": "1 minute"}
    top = {"window_top_n": {"tvf": "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)",
                            "order_by": "price DESC", "n": 3},
           "input": source, "output": {"path": str(tmp_path / "top3")}, "checkpoint": str(tmp_path / "chk_top")}
    assert cli.main(["streaming", "--config", json.dumps(top), "--flush"]) == 0
    metrics = _metrics(capsys)
    assert (metrics["rows_in"], metrics["rows_out"], metrics["late"], metrics["kind"]) == (9, 6, 0, "window_top_n")
    out = spark.read.parquet(top["output"]["path"])
    assert out.columns == ["bidtime", "price", "item", "supplier_id", "window_start", "window_end", "window_time",
                           "rownum"]
    assert sorted(_docs_text(r, True) for r in out.collect()) == sorted(TOP3_OUT)
    assert sorted(r["rownum"] for r in out.collect() if str(r["price"]) == "4.00") == [2, 3]

    dedup = {"window_deduplicate": {"function": "tumble", "time": "bidtime", "size": "10 minutes", "keep": "last",
                                    "rank_column": "rownum"},
             "input": source, "output": {"path": str(tmp_path / "last")}, "checkpoint": str(tmp_path / "chk_last")}
    assert cli.main(["streaming", "--config", json.dumps(dedup), "--flush"]) == 0
    assert _metrics(capsys)["kind"] == "window_deduplicate"
    got = spark.read.parquet(dedup["output"]["path"])
    assert sorted(_docs_text(r, False) for r in got.collect()) == sorted(DEDUP_OUT)
    # the same rows as the DataFrame door's (schema included)
    door = timeweave.window_deduplicate(spark.createDataFrame([(datetime.fromisoformat(f"2020-04-15 {t}").replace(
        tzinfo=UTC), Decimal(p), i, s) for t, p, i, s in BIDS], BID_SCHEMA), time="bidtime", keep="last",
        window=tumble("10 minutes"), rank_column="rownum")
    assert _types(got) == _types(door) and _rows(got) == _rows(door)


# -- random rows: the job restarted and flushed = the DataFrame door over the on-time pairs ----------------------
def _unique_times(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """No two rows share an event time (µs apart): which of two tied rows a ROW_NUMBER keeps is left open by SQL."""
    for i, r in enumerate(rows):
        if r["ts"] is not None:
            r["ts"] = r["ts"] + timedelta(microseconds=i)
    return rows


OPERATIONS = {
    "top_n_hop": ({"function": "hop", "time": "ts", "slide": "5 minutes", "size": "15 minutes", "keys": ["k"],
                   "order_by": ["p DESC", "id"], "n": 2}, hop("5 minutes", "15 minutes")),
    "dedup_cumulate": ({"function": "cumulate", "time": "ts", "step": "5 minutes", "max_size": "20 minutes",
                        "keys": "k", "keep": "last"}, cumulate("5 minutes", "20 minutes")),
}


def _door(df, op_id: str, spec, **kwargs):
    """The DataFrame door of the operation (``df`` a window TVF's output unless ``time``/``window`` are given)."""
    if op_id.startswith("top_n"):
        return timeweave.window_top_n(df, 2, order_by=["p DESC", "id"], partition_by="k", **kwargs)
    return timeweave.window_deduplicate(df, **{"time": "ts", "keys": "k", "keep": "last", **kwargs})


@pytest.mark.spark
@pytest.mark.slow  # three streaming runs (two restarts) and a flush
@pytest.mark.parametrize("op_id", list(OPERATIONS))
def test_the_job_restarted_and_flushed_is_the_dataframe_door_over_on_time_rows(
        spark, tmp_path: Path, op_id: str, capsys) -> None:
    section, spec = OPERATIONS[op_id]
    name = "window_top_n" if op_id.startswith("top_n") else "window_deduplicate"
    rows = _unique_times(random_rows(41 if op_id.startswith("top_n") else 42))
    runs = [rows[:25], rows[25:45], rows[45:]]
    config = {name: section, "output": {"path": str(tmp_path / "out")}, "checkpoint": str(tmp_path / "chk"),
              "input": {"path": str(tmp_path / "in"), "format": "json", "schema": SCHEMA,
                        "watermark_delay": f"{DELAY.seconds} seconds"}}
    job = load_job_config(config)
    _write_json(tmp_path / "in" / "a.json", runs[0])
    first = run_streaming(config, spark)
    _write_json(tmp_path / "in" / "b.json", runs[1])
    second = run_streaming(config, spark)  # a restart from the checkpoint
    _write_json(tmp_path / "in" / "c.json", runs[2], extra='{"id": "bad", "ts": "not a time", "k": "a"}\n')
    assert cli.main(["streaming", "--config", json.dumps(config), "--flush"]) == 0
    third = _metrics(capsys)

    # the late rule of the same micro-batches, run without interruption (engine-free)
    _, late, dead = reference_stream(runs, job.spec, ("k",), DELAY)
    assert late, "the random rows must have late ones"
    late_out = spark.read.parquet(f"{config['output']['path']}_late")
    assert late_out.columns == ["id", "k", "ts", "v", "p", "flag", "reason", "watermark", "missed_windows"]
    got_late = {r["id"]: r for r in late_out.collect()}
    assert set(got_late) == {r.row["id"] for r in late}
    for r in late:
        out = got_late[r.row["id"]]
        assert out["reason"] == r.reason
        assert out["watermark"] == _EPOCH + timedelta(milliseconds=r.watermark)
        assert [(w["window_start"], w["window_end"]) for w in out["missed_windows"]] == [
            (_EPOCH + timedelta(milliseconds=w.start), _EPOCH + timedelta(milliseconds=w.end)) for w in r.missed]
    dead_out = spark.read.parquet(f"{config['output']['path']}_dead_letter").collect()
    assert sorted(json.loads(r["row"]).get("id") for r in dead_out if r["reason"].startswith("NULL")) == sorted(
        r["id"] for r in dead)
    assert any("bad" in r["row"] for r in dead_out if not r["reason"].startswith("NULL"))  # the unparsable record

    # main = the DataFrame door over the on-time (row, window) pairs
    source = spark.read.schema(SCHEMA).json(str(tmp_path / "in")).where("id != 'bad'")
    missed = spark.createDataFrame(
        [(r.row["id"], _EPOCH + timedelta(milliseconds=w.start)) for r in late for w in r.missed],
        "id STRING, window_start TIMESTAMP")
    on_time = window_tvf(source, "ts", spec).join(missed, ["id", "window_start"], "left_anti")
    expected = _door(on_time, op_id, spec)
    main = spark.read.parquet(config["output"]["path"])
    assert _types(main) == _types(_door(source, op_id, spec, time="ts", window=spec))
    expected_rows = _rows(expected.select(*main.columns))
    assert len(expected_rows) > 10 and _rows(main) == expected_rows
    counts = [(m["rows_in"], m["late"], m["dead_letter"], m["rows_out"]) for m in (first, second, third)]
    assert sum(c[0] for c in counts) == len(rows) + 1
    assert sum(c[1] for c in counts) == len(late) and sum(c[2] for c in counts) == len(dead) + 1
    assert sum(c[3] for c in counts) == len(expected_rows) and third["kind"] == name


# -- the backfill ------------------------------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.slow  # 1 + 3 + 1 slice runs of a few Spark jobs each
def test_backfill_in_1_and_3_slices_equals_the_dataframe_door(spark, tmp_path: Path) -> None:
    spec = hop("5 minutes", "15 minutes")
    rows = _unique_times(random_rows(43))
    df = spark.createDataFrame(rows, SCHEMA)
    inside = df.where(f"ts >= '{BEGIN}' AND ts < '{END}'")
    expected = timeweave.window_top_n(inside, 2, order_by=["p DESC", "id"], partition_by="k", time="ts", window=spec)
    expected_rows = _rows(expected)
    assert len(expected_rows) > 20
    for slices in (1, 3):
        out = tmp_path / f"out{slices}"
        metrics = backfill_window_top_n(df, 2, order_by=["p DESC", "id"], partition_by="k", time="ts", window=spec,
                                        start=BEGIN, end=END, slices=slices, output=str(out))
        got = spark.read.parquet(str(out)).drop("slice")
        assert _types(got) == _types(expected)
        assert _rows(got) == expected_rows, slices
        assert metrics["rows_out"] == len(expected_rows) and metrics["dead_letter"] == 2
        if slices == 3:  # windows were open at the edges: their keys' candidate rows were carried
            assert sum(m["state_keys_out"] for m in metrics["per_slice"][:-1]) > 0
    dead = spark.read.parquet(f"{tmp_path / 'out1'}_dead_letter/slice=none").collect()
    assert sorted(json.loads(r["row"])["id"] for r in dead) == sorted(r["id"] for r in rows if r["ts"] is None)

    # --only 1 re-runs slice 1 from the state slice 0 left: its files are replaced, no other slice's
    out = tmp_path / "out3"
    before = {d.name: sorted(f.stat().st_mtime for f in d.glob("*.parquet")) for d in sorted(out.glob("slice=*"))}
    backfill_window_top_n(df, 2, order_by=["p DESC", "id"], partition_by="k", time="ts", window=spec, start=BEGIN,
                          end=END, slices=3, output=str(out), only=[1])
    after = {d.name: sorted(f.stat().st_mtime for f in d.glob("*.parquet")) for d in sorted(out.glob("slice=*"))}
    assert [n for n in before if before[n] != after[n]] == [sorted(before)[1]]
    assert _rows(spark.read.parquet(str(out)).drop("slice")) == expected_rows


@pytest.mark.spark
def test_the_backfill_job_runs_a_deduplication_config(spark, tmp_path: Path, capsys) -> None:
    rows = _unique_times(random_rows(44, n=40))
    _write_json(tmp_path / "in" / "a.json", rows)
    config = {"window_deduplicate": {"function": "cumulate", "time": "ts", "step": "5 minutes",
                                     "max_size": "20 minutes", "keys": ["k"], "keep": "first"},
              "input": {"path": str(tmp_path / "in"), "format": "json", "schema": SCHEMA},
              "output": {"path": str(tmp_path / "out")}}
    assert cli.main(["backfill", "--config", json.dumps(config), "--start", BEGIN.isoformat(), "--end", END.isoformat(),
                     "--slices", "3"]) == 0
    metrics = _metrics(capsys)
    source = spark.read.schema(SCHEMA).json(str(tmp_path / "in"))
    expected = timeweave.window_deduplicate(source, time="ts", keys="k", window=cumulate("5 minutes", "20 minutes"))
    assert _rows(spark.read.parquet(str(tmp_path / "out")).drop("slice")) == _rows(expected)
    assert metrics["job"] == "window_rank" and metrics["slices"] == 3 and metrics["dead_letter"] == 2


# -- the slice operator without a JVM: state carried across edges ------------------------------------------------
_INPUT = T.StructType([T.StructField("id", T.StringType()), T.StructField("k", T.StringType()),
                       T.StructField("ts", T.TimestampType()), T.StructField("v", T.LongType()),
                       T.StructField("p", T.DecimalType(10, 2)), T.StructField("flag", T.BooleanType())])


def _slice_batch(rows: list[dict], states: list[tuple]) -> pa.RecordBatch:
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


@pytest.mark.parametrize(("spec", "keep"), [(hop("5 minutes", "15 minutes"), None), (cumulate("5 minutes", "20 minutes"), None),
                                            (tumble("10 minutes"), "last")], ids=["top_n_hop", "top_n_cumulate", "dedup"])
def test_slices_carry_candidate_rows_across_edges_without_a_jvm(spec, keep) -> None:
    rows = [r for r in _unique_times(random_rows(45, n=80)) if r["ts"] is not None]
    first, last = min(r["ts"] for r in rows), max(r["ts"] for r in rows) + timedelta(seconds=1)
    step = (last - first) / 5
    edges = [first + step * i for i in range(6)]
    output = T.StructType([*_INPUT.fields, *(T.StructField(n, T.TimestampType()) for n in ("window_start", "window_end",
                                                                                            "window_time")),
                           T.StructField("rownum", T.IntegerType())])
    order = (SortKey("ts", keep == "last"),) if keep else (SortKey("p", True), SortKey("id"))
    query = R.RankQuery(spec, "ts", ("k",), order, RankRange.top(1 if keep else 2, "ROW_NUMBER" if keep else "RANK"),
                        "rownum", None, "test", keep)  # type: ignore[arg-type]

    def run(bounds: list) -> list[tuple]:
        ranked, states = [], []
        for i in range(len(bounds) - 1):
            part = [r for r in rows if bounds[i] <= r["ts"] < bounds[i + 1]]
            last_slice = i == len(bounds) - 2
            runner = _SliceRunner(query, _INPUT.json(), output.json(), last_slice, (_Counter(), _Counter(), _Counter()))
            table = pa.Table.from_batches(list(runner(iter([_slice_batch(part, states)])))).to_pylist()
            ranked += [tuple(r[f.name] for f in output.fields) for r in table if r[STATE] is None]
            states = [(r["k"], r[STATE]) for r in table if r[STATE] is not None]
        assert not states
        return sorted(ranked, key=str)

    whole = run([edges[0], edges[-1]])
    assert len(whole) > 10
    assert run(edges) == whole


# -- errors before any Spark job ---------------------------------------------------------------------------------
@pytest.mark.spark
def test_errors_come_before_any_spark_job(spark) -> None:
    df = spark.createDataFrame([], SCHEMA)
    window = tumble("10 minutes")

    def expect(match: str, call) -> None:
        with pytest.raises(SpecError, match=match):
            no_spark_job(spark, call)

    expect(r"window Top-N stream: argument 'watermark': a streaming window Top-N needs an event-time watermark",
           lambda: R.window_top_n_stream(df, 3, order_by="p DESC", time="ts", window=window, watermark=None))
    expect(r"argument 'watermark': a streaming window deduplication needs",
           lambda: R.window_deduplicate_stream(df, time="ts", window=window, watermark=" "))
    expect(r"argument 'order_by': column 'nope' not found",
           lambda: R.window_top_n_stream(df, 3, order_by="nope", time="ts", window=window, watermark="1 minute"))
    expect(r"argument 'partition_by': column 'kk' not found",
           lambda: R.window_top_n_stream(df, 3, order_by="p", partition_by="kk", time="ts", window=window,
                                         watermark="1 minute"))
    expect(r"argument 'n': pass exactly one of n",
           lambda: R.window_top_n_stream(df, order_by="p", time="ts", window=window, watermark="1 minute"))
    expect(r"argument 'window': Flink runs window Top-N over TUMBLE, HOP or CUMULATE",
           lambda: R.window_top_n_stream(df, 1, order_by="p", time="ts", window=session("1 minute"),
                                         watermark="1 minute"))
    expect(r"argument 'time': column 'ts' must be a TIMESTAMP or TIMESTAMP_NTZ, found string",
           lambda: R.window_top_n_stream(spark.createDataFrame([], "ts STRING, p INT"), 1, order_by="p",
                                         time="ts", window=window, watermark="1 minute"))
    expect(r"argument 'df': column 'reason' is added by the late output",
           lambda: R.window_deduplicate_stream(spark.createDataFrame([], "ts TIMESTAMP, reason STRING"), time="ts",
                                               window=window, watermark="1 minute"))
    expect(r"window Top-N backfill: argument 'output': an output path is required",
           lambda: backfill_window_top_n(df, 1, order_by="p", time="ts", window=window, start=BEGIN, end=END,
                                         slices=1, output=""))
    expect(r"window deduplication: argument 'keep': expected 'first' or 'last'",
           lambda: backfill_window_deduplicate(df, time="ts", keep="middle", window=window, start=BEGIN, end=END,
                                               slices=1, output="x"))
    spark.conf.set("spark.sql.session.timeZone", "PST")  # Spark takes its short IDs; the windows want the region
    try:
        expect(r"window: argument 'spark.sql.session.timeZone': unknown time zone 'PST' \(expected an IANA name",
               lambda: bind_rank_query(df, order_by="p", ranks=RankRange.top(1), partition_by=(), time="ts",
                                       window=window, rank_column=None, where="window Top-N stream"))
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.mark.spark
def test_a_backfill_in_a_session_time_zone_follows_its_wall_clock(spark, tmp_path: Path) -> None:
    """1-day windows in Los Angeles across its 2021 fall-back change (a 25-hour day): 3 slices = the DataFrame door,
    whose windows run from local midnight."""
    rows = [{"id": f"r{i}", "k": "ab"[i % 2], "ts": datetime(2021, 11, 6, 12) + timedelta(minutes=47 * i),
             "v": i % 7, "p": Decimal(i * 37 % 101), "flag": None} for i in range(80)]
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        df = spark.createDataFrame(rows, SCHEMA)
        begin, end = datetime(2021, 11, 6), datetime(2021, 11, 10)
        expected = timeweave.window_top_n(df, 2, order_by=["p DESC", "id"], partition_by="k", time="ts",
                                          window=tumble("1 day"))
        backfill_window_top_n(df, 2, order_by=["p DESC", "id"], partition_by="k", time="ts", window=tumble("1 day"),
                              start=begin, end=end, slices=3, output=str(tmp_path / "out"))
        got = spark.read.parquet(str(tmp_path / "out")).drop("slice")
        assert _rows(got) == _rows(expected) and len(_rows(got)) >= 8
        lengths = {r["window_end"] - r["window_start"] for r in got.collect()}  # local midnight to local midnight
        assert timedelta(hours=25) in lengths and timedelta(hours=24) in lengths
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.mark.parametrize("name", ["timeweave.jobs.window_ranks", "timeweave.core.windows.rank_operator"])
def test_docstring_examples_run(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


# -- the processor on the streaming host without a JVM (PySpark's TwsTester plays Spark) ------------------------
def test_the_processor_ranks_fired_windows_and_reports_late_rows_without_a_jvm() -> None:
    from pyspark.sql.streaming.tws_tester import TwsTester

    from timeweave.core.event_time import END_OF_INPUT_MS
    from timeweave.spark.host import BUCKET, KEY_TEXT, OP, ROW, TIME, pack_rows
    from timeweave.spark.host.stream import DATA_ROW, DEAD_ROW

    schema = T.StructType([T.StructField("bidtime", T.TimestampType()), T.StructField("price", T.DecimalType(10, 2)),
                           T.StructField("item", T.StringType())])
    query = R.RankQuery(tumble("10 minutes"), "bidtime", (), (SortKey("price", True),), RankRange.top(2), "rownum",
                        None, "window Top-N stream")  # type: ignore[arg-type]
    tester = TwsTester(R.RankProcessor(query, schema.json()), timeMode="EventTime", eventTimeExtractor=lambda _r: 2**62)
    minute = 60_000_000

    def send(minutes: int | None, price: str, item: str) -> Any:
        us = None if minutes is None else minutes * minute
        text = json.dumps({"price": float(price), "item": item} | ({} if us is None else {"bidtime": us}))
        batch = pa.record_batch({
            BUCKET: pa.array([0], pa.int32()), KEY_TEXT: pa.array([""], pa.string()),
            OP: pa.array([DATA_ROW if us is not None else DEAD_ROW], pa.int8()),
            TIME: pa.array([us or 0], pa.int64()), ROW: pa.array([text], pa.string())})
        return tester.testInPandas(0, next(pack_rows(iter([batch]))).to_pandas())

    send(5, "4.00", "A")
    send(9, "5.00", "D")
    send(7, "2.00", "G")
    out = tester.setWatermark(10 * 60_000 - 1)  # 09:59.999: [0, 10) fires
    main = out[out[R.KIND] == R.MAIN]
    assert [(json.loads(t)["item"], r, s, e) for t, r, s, e in zip(main[R.IN_ROW], main[R.RANK], main[R.W_START],
                                                                    main[R.W_END], strict=True)] == [
        ("D", 1, 0, 10 * minute), ("A", 2, 0, 10 * minute)]
    late = send(8, "9.00", "L")  # its only window fired: late, dropped
    assert late[late[R.KIND] == R.LATE][R.REASON].tolist() == [
        "late: event time 1970-01-01 00:08:00.000 missed window [1970-01-01 00:00:00.000, 1970-01-01 00:10:00.000) "
        "fired at watermark 1970-01-01 00:09:59.999; dropped from every window"]
    dead = send(None, "1.00", "N")
    assert dead[R.KIND].tolist() == [R.DEAD] and dead[R.REASON].tolist() == ["NULL event time column bidtime"]
    send(12, "1.00", "E")
    out = tester.setWatermark(END_OF_INPUT_MS)
    assert [json.loads(t)["item"] for t in out[out[R.KIND] == R.MAIN][R.IN_ROW]] == ["E"]
    assert tester.peekMapState(R.STATE.keys, 0) == {}
