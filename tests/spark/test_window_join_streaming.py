"""The streaming window join (timeweave.spark.window_join_streaming).

* The processor on the streaming host without a JVM (PySpark's TwsTester plays Spark): Flink's documented FULL
  JOIN (LeftTable / RightTable, 5-minute TUMBLE windows) with its published rows; late and dead rows per side.
* Through Spark (file streams, flushed by a heartbeat): Flink's documented examples for every join kind = the
  DataFrame door's rows; random inputs with late and NULL-time rows = the DataFrame door over the on-time pairs.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.streaming.tws_tester import TwsTester

import timeweave
from tests.helpers.window_random import SCHEMA, random_rows
from timeweave.core.event_time import END_OF_INPUT_MS
from timeweave.core.windows import Slicing, event_time_ms, tumble
from timeweave.core.windows.ranking import split_late
from timeweave.jobs import cli
from timeweave.spark import window_join_streaming as J
from timeweave.spark.host import BUCKET, KEY_TEXT, OP, ROW, TIME, pack_rows
from timeweave.spark.windows import window_tvf

MINUTE = 60_000_000
NOON = int((datetime(2020, 4, 15, 12) - datetime(1970, 1, 1)).total_seconds()) * 1_000_000


def _send(tester: TwsTester, side: int, minute: int | None, num: int | None, ident: str) -> Any:
    us = None if minute is None else NOON + minute * MINUTE
    text = json.dumps({"num": num, "id": ident} | ({} if us is None else {"row_time": us}))
    op = (J.LEFT_ROW, J.RIGHT_ROW)[side] if us is not None else (J.DEAD_LEFT, J.DEAD_RIGHT)[side]
    batch = pa.record_batch({
        BUCKET: pa.array([0], pa.int32()), KEY_TEXT: pa.array([json.dumps({"k0": num}) if num is not None else "{}"]),
        OP: pa.array([op], pa.int8()), TIME: pa.array([us or 0], pa.int64()), ROW: pa.array([text], pa.string())})
    return tester.testInPandas(0, next(pack_rows(iter([batch]))).to_pandas())


def _ids(frame, column: str) -> list[str | None]:
    return [None if t is None else json.loads(t)["id"] for t in frame[column]]


def test_flink_docs_full_join_through_the_processor_without_a_jvm() -> None:
    tester = TwsTester(J.JoinProcessor(tumble("5 minutes"), "FULL", ("row_time", "row_time"), 1),
                       timeMode="EventTime", eventTimeExtractor=lambda _r: 2**62)
    for side, minute, num, ident in [(0, 2, 1, "L1"), (0, 6, 2, "L2"), (0, 3, 3, "L3"), (1, 1, 2, "R2"),
                                     (1, 4, 3, "R3"), (1, 5, 4, "R4"), (0, 4, None, "LN")]:
        _send(tester, side, minute, num, ident)
    out = tester.setWatermark((NOON + 5 * MINUTE) // 1000 - 1)  # 12:04:59.999: [12:00, 12:05) fires
    main = out[out[J.KIND] == J.MAIN]
    assert sorted(zip(_ids(main, J.L_ROW), _ids(main, J.R_ROW), strict=True), key=str) == sorted(
        [("L1", None), (None, "R2"), ("L3", "R3"), ("LN", None)], key=str)  # a NULL key joins nothing
    late = _send(tester, 1, 2, 1, "RL")  # the right row for L1 comes after its window fired
    assert late[late[J.KIND] == J.LATE][J.SIDE].tolist() == ["right"]
    dead = _send(tester, 0, None, 9, "LD")
    assert dead[J.SIDE].tolist() == ["left"] and dead[J.REASON].tolist() == ["NULL event time column row_time"]
    out = tester.setWatermark(END_OF_INPUT_MS)
    main = out[out[J.KIND] == J.MAIN]
    assert sorted(zip(_ids(main, J.L_ROW), _ids(main, J.R_ROW), strict=True), key=str) == sorted(
        [("L2", None), (None, "R4")], key=str)
    assert set(main[J.W_START]) == {NOON + 5 * MINUTE}
    assert tester.peekMapState(J.STATE.keys, 0) == {}


# -- through Spark: the streaming job ------------------------------------------------------------------------------
_EPOCH = datetime(1970, 1, 1)
LR_SCHEMA = "row_time TIMESTAMP, num INT, id STRING"
LEFT_ROWS = [("12:02", 1, "L1"), ("12:06", 2, "L2"), ("12:03", 3, "L3")]
RIGHT_ROWS = [("12:01", 2, "R2"), ("12:04", 3, "R3"), ("12:05", 4, "R4")]


def _write(path: Path, rows: list[dict[str, Any]], extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)

    def value(v: Any) -> Any:
        return v.isoformat() if isinstance(v, datetime) else float(v) if isinstance(v, Decimal) else v

    path.write_text("".join(json.dumps({k: value(v) for k, v in r.items()}) + "\n" for r in rows) + extra)


def _rows(df, columns=None) -> list[tuple]:
    columns = columns or df.columns
    return sorted((tuple(r[c] for c in columns) for r in df.collect()), key=str)


def _metrics(capsys) -> dict[str, Any]:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1].removeprefix(cli.METRICS_PREFIX))


@pytest.mark.spark
def test_flink_docs_window_joins_through_the_streaming_job(spark, tmp_path: Path, capsys) -> None:
    tables = {}
    for side, rows in (("left", LEFT_ROWS), ("right", RIGHT_ROWS)):
        data = [{"row_time": datetime.fromisoformat(f"2020-04-15 {t}"), "num": n, "id": i} for t, n, i in rows]
        _write(tmp_path / side / "a.json", data)
        tables[side] = spark.read.schema(LR_SCHEMA).json(str(tmp_path / side))
    for how in ("full", "semi", "anti"):
        config = {"window_join": {"function": "tumble", "time": "row_time", "size": "5 minutes", "on": "num",
                                  "how": how, "left_prefix": "L_", "right_prefix": "R_"},
                  "left": {"path": str(tmp_path / "left"), "format": "json", "schema": LR_SCHEMA},
                  "right": {"path": str(tmp_path / "right"), "format": "json", "schema": LR_SCHEMA},
                  "output": {"path": str(tmp_path / how)}, "checkpoint": str(tmp_path / f"chk_{how}")}
        assert cli.main(["streaming", "--config", json.dumps(config), "--flush"]) == 0
        metrics = _metrics(capsys)
        door = timeweave.window_join(tables["left"], tables["right"], on="num", how=how, time="row_time",
                                     window=tumble("5 minutes"), left_prefix="L_", right_prefix="R_")
        got = spark.read.parquet(str(tmp_path / how))
        assert [(f.name, f.dataType) for f in got.schema] == [(f.name, f.dataType) for f in door.schema], how
        assert _rows(got) == _rows(door), how
        assert (metrics["rows_in"], metrics["late"], metrics["kind"]) == (6, 0, "window_join")
        if how == "full":  # Flink's docs' rows
            assert sorted(((r["L_id"], r["R_id"], r["window_start"].strftime("%H:%M")) for r in got.collect()),
                          key=str) == sorted(
                [("L1", None, "12:00"), (None, "R2", "12:00"), ("L3", "R3", "12:00"), ("L2", None, "12:05"),
                 (None, "R4", "12:05")], key=str)


DELAY = timedelta(minutes=5)


def _reference_late(runs: list[tuple[list[dict], list[dict]]], spec) -> list:
    """The late rule over the runs (each one micro-batch at the watermark of the earlier runs' largest time of
    either input minus the delay): the late rows as (side, id, missed windows)."""
    slicing, watermark, latest, late = Slicing.of(spec), None, None, []
    for run in runs:
        for side, rows in enumerate(run):
            pairs = [((side, r), w) for r in rows if r["ts"] is not None for w in slicing.windows_of(event_time_ms(r["ts"]))]
            if watermark is not None:
                _, found = split_late(pairs, time_of=lambda e: event_time_ms(e[1]["ts"]), watermark_of=lambda e, w=watermark: w)
                late += [(("left", "right")[o.row[0]], o.row[1]["id"], o.missed) for o in found]
        times = [event_time_ms(r["ts"]) for rows in run for r in rows if r["ts"] is not None]
        if times:
            latest = max(times) if latest is None else max(latest, max(times))
            watermark = latest - DELAY // timedelta(milliseconds=1)
    return late


@pytest.mark.spark
@pytest.mark.slow  # two streaming runs (a restart) and a flush
def test_the_join_job_restarted_and_flushed_is_the_dataframe_door_over_on_time_rows(
        spark, tmp_path: Path, capsys) -> None:
    spec = tumble("10 minutes")
    sides = {"left": random_rows(51, n=40), "right": random_rows(52, n=40)}
    for name, rows in sides.items():
        for r in rows:
            r["id"] = f"{name[0]}{r['id']}"
    runs = [(sides["left"][:20], sides["right"][:20]), (sides["left"][20:], sides["right"][20:])]
    config = {"window_join": {"function": "tumble", "time": "ts", "size": "10 minutes", "on": "k", "how": "full",
                              "left_prefix": "L_", "right_prefix": "R_"},
              "left": {"path": str(tmp_path / "left"), "format": "json", "schema": SCHEMA,
                       "watermark_delay": f"{DELAY.seconds} seconds"},
              "right": {"path": str(tmp_path / "right"), "format": "json", "schema": SCHEMA},
              "output": {"path": str(tmp_path / "out")}, "checkpoint": str(tmp_path / "chk")}
    for i, (left, right) in enumerate(runs):
        _write(tmp_path / "left" / f"{i}.json", left)
        _write(tmp_path / "right" / f"{i}.json", right)
        args = ["streaming", "--config", json.dumps(config)] + (["--flush"] if i == len(runs) - 1 else [])
        assert cli.main(args) == 0
        _metrics(capsys)
    late = _reference_late(runs, spec)
    assert late, "the random rows must have late ones"
    late_out = spark.read.parquet(f"{tmp_path / 'out'}_late").collect()
    assert sorted((r["side"], json.loads(r["row"])["id"], tuple(
        (int((w["window_start"] - _EPOCH).total_seconds() * 1000), int((w["window_end"] - _EPOCH).total_seconds() * 1000))
        for w in r["missed_windows"])) for r in late_out) == sorted(
        (side, ident, tuple((w.start, w.end) for w in missed)) for side, ident, missed in late)
    dead = spark.read.parquet(f"{tmp_path / 'out'}_dead_letter").collect()
    assert sorted((r["side"], json.loads(r["row"])["id"]) for r in dead) == sorted(
        (name, r["id"]) for name, rows in sides.items() for r in rows if r["ts"] is None)

    on_time = {}
    for name in ("left", "right"):
        source = spark.read.schema(SCHEMA).json(str(tmp_path / name))
        missed = spark.createDataFrame([(ident, _EPOCH + timedelta(milliseconds=w.start)) for side, ident, ws in late
                                        if side == name for w in ws] or [("", _EPOCH)], "id STRING, window_start TIMESTAMP")
        on_time[name] = window_tvf(source, "ts", spec).join(missed, ["id", "window_start"], "left_anti")
    expected = timeweave.window_join(on_time["left"], on_time["right"], on="k", how="full", left_prefix="L_",
                                     right_prefix="R_")
    got = spark.read.parquet(str(tmp_path / "out"))
    assert _rows(got) == _rows(expected.select(*got.columns)) and len(_rows(got)) > 10


# -- the backfill's slice operator without a JVM: rows of both sides carried across edges ---------------------------
def test_join_backfill_slices_carry_both_sides_across_edges_without_a_jvm() -> None:
    from pyspark.sql import types as T

    from timeweave.core.windows import hop
    from timeweave.spark import window_join_backfill as JB
    from timeweave.spark.host.backfill import STATE

    class Counter:
        value = 0

        def add(self, n: int) -> None:
            self.value += n

    arrow_side = pa.struct([("id", pa.string()), ("k", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
    spec = hop("5 minutes", "15 minutes")
    columns = (("window_start", None, "window_start"), ("window_end", None, "window_end"),
               ("window_time", None, "window_time"), ("L_id", 0, "id"), ("L_k", 0, "k"), ("L_ts", 0, "ts"),
               ("R_id", 1, "id"), ("R_k", 1, "k"), ("R_ts", 1, "ts"))
    query = JB.JoinQuery(spec, "FULL", ("ts", "ts"), (("k",), ("k",)), (T.StringType(),), None, columns)  # type: ignore[arg-type]
    output = T.StructType([*(T.StructField(n, T.TimestampType() if n.endswith(("_start", "_end", "_time", "_ts"))
                                           else T.StringType()) for n, _, _ in columns),
                           T.StructField("__tw_jk0", T.StringType())])
    names = (JB.SIDE_COL, "__tw_jk0", JB.TIME_COL, *JB.ROW_COLS)
    rows = []
    for side, seed in ((0, 61), (1, 62)):
        for r in random_rows(seed, n=50, null_times=0, late=0):
            rows.append({JB.SIDE_COL: side, "__tw_jk0": r["k"], JB.TIME_COL: r["ts"],
                         "row": {"id": f"{'lr'[side]}{r['id']}", "k": r["k"], "ts": r["ts"]}})

    def batch(part: list[dict], states: list[tuple]) -> pa.RecordBatch:
        items = [((str(k), 0, datetime.min), {"__tw_jk0": k, STATE: blob}) for k, blob in states]
        items += [((str(r["__tw_jk0"]), 1, r[JB.TIME_COL]), r) for r in part]
        items.sort(key=lambda item: item[0])
        ordered = [row for _, row in items]
        return pa.record_batch({
            JB.SIDE_COL: pa.array([r.get(JB.SIDE_COL) for r in ordered], pa.int32()),
            "__tw_jk0": [r.get("__tw_jk0") for r in ordered],
            JB.TIME_COL: pa.array([r.get(JB.TIME_COL) for r in ordered], pa.timestamp("us", tz="UTC")),
            JB.ROW_COLS[0]: pa.array([r["row"] if r.get(JB.SIDE_COL) == 0 else None for r in ordered], arrow_side),
            JB.ROW_COLS[1]: pa.array([r["row"] if r.get(JB.SIDE_COL) == 1 else None for r in ordered], arrow_side),
            STATE: pa.array([r.get(STATE) for r in ordered], pa.binary()),
        })

    first, last = min(r[JB.TIME_COL] for r in rows), max(r[JB.TIME_COL] for r in rows) + timedelta(seconds=1)
    edges = [first + (last - first) / 5 * i for i in range(6)]

    def run(bounds: list) -> list[tuple]:
        joined, states = [], []
        for i in range(len(bounds) - 1):
            part = [r for r in rows if bounds[i] <= r[JB.TIME_COL] < bounds[i + 1]]
            runner = JB._SliceRunner(query, names, output.json(), i == len(bounds) - 2, (Counter(), Counter(), Counter()))
            table = pa.Table.from_batches(list(runner(iter([batch(part, states)])))).to_pylist()
            joined += [tuple(r[n] for n, _, _ in columns) for r in table if r[STATE] is None]
            states = [(r["__tw_jk0"], r[STATE]) for r in table if r[STATE] is not None]
            assert i == len(bounds) - 2 or states or not part
        return sorted(joined, key=str)

    whole = run([edges[0], edges[-1]])
    assert len(whole) > 20 and any(r[3] and r[6] for r in whole)  # matched pairs, not only outer rows
    assert run(edges) == whole


@pytest.mark.spark
@pytest.mark.slow  # 1 + 3 slice runs of a few Spark jobs each
def test_the_join_backfill_in_1_and_3_slices_equals_the_dataframe_door(spark, tmp_path: Path, capsys) -> None:
    from timeweave.core.windows import hop

    sides = {"left": random_rows(71, n=40), "right": random_rows(72, n=40)}
    for name, rows in sides.items():
        for r in rows:
            r["id"] = f"{name[0]}{r['id']}"
        _write(tmp_path / name / "a.json", rows)
    begin, end = min(r["ts"] for rows in sides.values() for r in rows if r["ts"]), datetime(2030, 1, 1)
    config = {"window_join": {"function": "hop", "time": "ts", "slide": "5 minutes", "size": "15 minutes",
                              "on": "k", "how": "left", "left_prefix": "L_", "right_prefix": "R_"},
              "left": {"path": str(tmp_path / "left"), "format": "json", "schema": SCHEMA},
              "right": {"path": str(tmp_path / "right"), "format": "json", "schema": SCHEMA},
              "output": {"path": str(tmp_path / "out")}}
    tables = {name: spark.read.schema(SCHEMA).json(str(tmp_path / name)) for name in sides}
    expected = timeweave.window_join(tables["left"], tables["right"], on="k", how="left", time="ts",
                                     window=hop("5 minutes", "15 minutes"), left_prefix="L_", right_prefix="R_")
    expected_rows = _rows(expected)
    assert len(expected_rows) > 20
    for slices in (1, 3):
        config["output"]["path"] = str(tmp_path / f"out{slices}")
        assert cli.main(["backfill", "--config", json.dumps(config), "--start", (begin - timedelta(hours=1)).isoformat(),
                         "--end", end.isoformat(), "--slices", str(slices)]) == 0
        metrics = _metrics(capsys)
        got = spark.read.parquet(config["output"]["path"]).drop("slice")
        assert got.columns == expected.columns and _rows(got) == expected_rows, slices
        assert metrics["job"] == "window_join" and metrics["dead_letter"] == 4
    dead = spark.read.parquet(f"{tmp_path / 'out1'}_dead_letter").collect()
    assert sorted((r["side"], json.loads(r["row"])["id"]) for r in dead) == sorted(
        (name, r["id"]) for name, rows in sides.items() for r in rows if r["ts"] is None)
