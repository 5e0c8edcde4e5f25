"""Event time over TIMESTAMP's whole range (0001-01-01 .. 9999-12-31 23:59:59.999999) through every door.

Issue 20: a streaming temporal join given an order at 1900-01-01 among ordinary orders wrote 8 of 10 rows
(late 0, dead letters 0): the bucket's Spark timer for the old row (negative ms) fired while Spark's
watermark was still 0 ("none yet"), nothing was due, the handler asked for the same timer again and
PySpark deleted it after the handler returned, so the bucket never woke up again.  A row at 9999-12-31
12:00 stayed buffered for ever: the flush watermark was 9999-12-31 00:00.  The rule now lives in
:mod:`timeweave.core.event_time` (its own unit tests: ``tests/core/test_event_time.py``).

The JVM-free tests drive the processors with PySpark's ``TwsTester`` (Spark's timer contract: a timer
fires at ``expiry <= watermark``, is deleted after the handler, and cannot be registered at or below the
watermark).  The JVM tests run one flushed streaming job per operator (each ~30-60 s) and compare it with
the DataFrame door, ``timeweave.sql`` and a 3-slice backfill over [0001-01-01, 9999-12-31 23:59:59.999999).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.sql.streaming.tws_tester import TwsTester

import timeweave
from tests.spark.test_state_bridge import B, _index, _out, _rows, _spark_timers, _spec
from timeweave.core.event_time import END_OF_INPUT_MS, MAX_TIME_US, MIN_TIME_US, end_of_input_ms
from timeweave.jobs.backfill import run_backfill
from timeweave.jobs.streaming import run_streaming
from timeweave.spark import temporal_join_streaming as TJ
from timeweave.spark.host import state as HS

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "dags" / "sample_data"
US_1900 = -2_208_988_800_000_000  # 1900-01-01 00:00:00 UTC
US_2026 = 1_767_229_200_000_000  # 2026-01-01 01:00:00 UTC
US_9999_NOON = MAX_TIME_US - 43_199_999_999  # 9999-12-31 12:00:00
FIRST_TS, LAST_TS = datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59, 999999)


# =================================================================================================
# The processors under Spark's timer contract (no JVM)
# =================================================================================================
def _tester(**kwargs: Any) -> TwsTester:
    processor = TJ.TemporalJoinProcessor(_spec(), "event_time", None, **kwargs)
    return TwsTester(processor, timeMode="EventTime", eventTimeExtractor=lambda _row: 2**62)


def test_a_pre_1970_row_keeps_its_bucket_awake_until_a_watermark_passes_it() -> None:
    """The issue's row at 1900-01-01, with rows of another key in the same bucket."""
    tester = _tester()
    tester.testInPandas(B, pd.concat([
        _rows(("R", US_1900 - 1, '{"rate": 0.5}', "r1"), ("L", US_1900, '{"id": "p2"}', "l1"),
              ("L", US_2026, '{"id": "o02"}', "l1"), key="USD"),
        _rows(("R", US_2026 - 1, '{"rate": 1.1}', "r1"), ("L", US_2026, '{"id": "o01"}', "l1")),
    ], ignore_index=True))
    assert _spark_timers(tester) == [1]  # Spark's first real watermark: before, a timer at -2208988800000 ms
    # Spark's first batch processes timers with its watermark still 0 ("none yet"): nothing is due, the timer
    # stays.  (TwsTester's watermark starts at 0 and only moves forward: run its timer pass at 0 directly.)
    assert _out(tester._handleExpiredTimers()) == []
    assert _spark_timers(tester) == [1] and _index(tester)[1] == 1
    assert sorted(_out(tester.setWatermark(US_2026 // 1000))) == [
        ("joined", "o01", 1.1), ("joined", "o02", 0.5), ("joined", "p2", 0.5)]
    assert _index(tester) is None and _spark_timers(tester) == []


def test_rows_up_to_the_last_microsecond_leave_with_the_flush_watermark() -> None:
    """9999-12-31 12:00 and 23:59:59.999999 wait for the watermark, and the flush (minus the delay) releases them."""
    end_ms = end_of_input_ms(5_000)
    tester = _tester(end_ms=end_ms)
    tester.testInPandas(B, _rows(("R", US_2026, '{"rate": 1.1}', "r1"), ("L", US_9999_NOON, '{"id": "f1"}', "l1"),
                                 ("L", MAX_TIME_US, '{"id": "f2"}', "l1")))
    assert _spark_timers(tester) == [-(-US_9999_NOON // 1000)]
    assert _out(tester.setWatermark(end_ms - 1)) == [("joined", "f1", 1.1)]
    # The last µs: its timer is the end of input's (a timer past it could never fire).
    assert _spark_timers(tester) == [end_ms]
    assert _out(tester.setWatermark(end_ms)) == [("joined", "f2", 1.1)]
    assert _index(tester) is None and _spark_timers(tester) == []


def test_a_late_row_after_the_flush_carries_a_readable_watermark() -> None:
    tester = _tester()
    tester.setWatermark(END_OF_INPUT_MS)
    out = tester.testInPandas(B, _rows(("L", MAX_TIME_US, '{"id": "after"}', "l1")))
    late = out[out[TJ.KIND] == TJ.LATE]
    assert late[TJ.WATERMARK].tolist() == [MAX_TIME_US]  # END_OF_TIME as TIMESTAMP's last value
    assert late[TJ.REASON].tolist()[0].startswith("late: event time ")


class _Handle:
    def __init__(self) -> None:
        self.timers: set[int] = set()

    def registerTimer(self, ms: int) -> None:
        self.timers.add(ms)

    def deleteTimer(self, ms: int) -> None:
        self.timers.discard(ms)


class _Cell:
    def __init__(self) -> None:
        self.value = None

    def get(self):
        return self.value

    def update(self, value) -> None:
        self.value = value

    def clear(self) -> None:
        self.value = None


def test_a_bucket_never_asks_again_for_the_timer_spark_is_about_to_delete() -> None:
    """Whatever the watermark made due, the bucket's next timer differs from the one that fired: PySpark
    deletes the fired timer after ``handleExpiredTimer`` returns."""
    handle, cell = _Handle(), _Cell()
    index = HS.TimerIndex({"USD": 5_000}, 5)
    handle.timers.add(5)
    index.fired(5)  # e.g. a watermark the core did not find the key due at
    index.store(cell, handle)
    handle.timers.discard(5)  # what PySpark does next
    assert handle.timers == {6} and index.spark == 6


# =================================================================================================
# Every door: temporal join
# =================================================================================================
ORDERS_SCHEMA = "order_id STRING, price DOUBLE, currency STRING, order_time TIMESTAMP"
RATES_SCHEMA = "op STRING, currency STRING, conversion_rate DOUBLE, update_time TIMESTAMP"
#: Added to the sample orders of 2026-01-01: the issue's rows, both ends of TIMESTAMP, a dead letter.
EXTRA_ORDERS = [
    "p2,1.0,USD,1900-01-01 00:00:00",  # the row, among ordinary orders
    "p3,2.0,EUR,1950-06-01 12:00:00",
    "p4,3.0,GBP,0001-01-01 00:00:00",  # TIMESTAMP's first value
    "p5,4.0,JPY,1969-12-31 23:59:59.999999",
    "p6,5.0,USD,1899-12-31 23:00:00",  # before USD's first version: no match (LEFT: NULLs)
    "f1,6.0,EUR,9999-12-31 12:00:00",  # the far-future row
    "f2,7.0,USD,9999-12-31 23:59:59.999999",  # TIMESTAMP's last value
    "d1,8.0,EUR,",  # NULL time: dead letter
]
EXTRA_RATES = [
    "+I,GBP,2.0,0001-01-01 00:00:00",
    "+I,USD,0.5,1899-12-31 23:30:00",
    "+I,JPY,0.01,1969-12-31 23:59:59.999999",
    "+U,EUR,1.5,9999-12-31 06:00:00",
]
JOIN_COLUMNS = ["order_id", "order_time", "conversion_rate"]


def _join_inputs(root: Path) -> dict[str, Any]:
    for side, name, extra in (("orders", "orders", EXTRA_ORDERS), ("rates", "rates", EXTRA_RATES)):
        lines = (SAMPLE / name / "2026-01-01.csv").read_text().splitlines()
        (root / side).mkdir(parents=True)
        (root / side / "a.csv").write_text("\n".join([*lines, *extra]) + "\n")
    csv = {"format": "csv", "options": {"header": "true"}}
    return {
        "left": {"path": str(root / "orders"), **csv, "schema": ORDERS_SCHEMA},
        "right": {"path": str(root / "rates"), **csv, "schema": RATES_SCHEMA},
        "versioned": {"key": "currency", "time": "update_time", "format": "changelog", "op": "op"},
        "join": {"left_time": "order_time", "how": "left"},
        "output": {"path": str(root / "out")},
        "checkpoint": str(root / "chk"),
    }


def _rows_of(df, columns: list[str]) -> list[tuple]:
    """The rows' ``columns``, timestamps as µs: PySpark's ``collect`` cannot make a Python datetime of year 1
    (``datetime.fromtimestamp`` in the driver's local time: "year 0 is out of range")."""
    kinds = dict(df.dtypes)
    selected = [F.unix_micros(c).alias(c) if kinds[c] == "timestamp" else F.col(c) for c in columns]
    return sorted((tuple(r) for r in df.select(*selected).collect()), key=repr)


@pytest.mark.spark
def test_temporal_join_every_door_over_the_whole_range(spark, tmp_path: Path) -> None:
    config = _join_inputs(tmp_path)
    orders = spark.read.schema(ORDERS_SCHEMA).option("header", "true").csv(config["left"]["path"])
    rates = spark.read.schema(RATES_SCHEMA).option("header", "true").csv(config["right"]["path"])
    assert orders.where(F.col("order_time").isNull()).count() == 1  # the CSV reader kept every extreme time
    assert {r[0] for r in orders.select(F.unix_micros("order_time")).collect()} >= {MIN_TIME_US, MAX_TIME_US}

    door = timeweave.temporal_join(orders, rates, "order_time", how="left", key="currency", time="update_time",
                                 format="changelog", op="op")
    expected = _rows_of(door, JOIN_COLUMNS)
    assert len(expected) == orders.count()  # a LEFT join keeps every order: d1 (NULL time) unmatched
    by_id = {r[0]: r for r in expected}
    assert by_id["d1"][1:] == (None, None)
    assert (by_id["p4"][1], by_id["f2"][1]) == (MIN_TIME_US, MAX_TIME_US)
    assert (by_id["p2"][2], by_id["p4"][2], by_id["p5"][2], by_id["p6"][2]) == (0.5, 2.0, 0.01, None)
    assert (by_id["f1"][2], by_id["f2"][2]) == (1.5, 1.0)

    timeweave.versioned_table(rates, key="currency", time="update_time", format="changelog", op="op",
                            name="tw_range_rates")
    by_sql = timeweave.sql(spark, """
        SELECT o.order_id, o.order_time, r.conversion_rate
        FROM {orders} AS o LEFT JOIN tw_range_rates FOR SYSTEM_TIME AS OF o.order_time AS r
        ON o.currency = r.currency""", orders=orders)
    assert _rows_of(by_sql, JOIN_COLUMNS) == expected

    metrics = run_streaming(config, spark, flush=True)
    assert _rows_of(spark.read.parquet(config["output"]["path"]), JOIN_COLUMNS) == expected
    n_orders = len(EXTRA_ORDERS) + len((SAMPLE / "orders" / "2026-01-01.csv").read_text().splitlines()) - 1
    assert (metrics["rows_in_left"], metrics["rows_out"], metrics["late"], metrics["dead_letter"]) == (
        n_orders, n_orders, 0, 0)
    assert metrics["watermark"] == "+10000-01-01T00:00:00.000Z"  # the end of input: past every TIMESTAMP

    # The backfill's range is [start, end): the last µs of TIMESTAMP cannot be inside it.  Its bounds were
    # Spark literals of Python datetimes, rebased from the Julian calendar (0001-01-01 -> 0001-01-03): p4, at
    # the range's start, belonged to no slice (issue 20).  d1 (NULL time) is output under slice=none.
    out, dead = tmp_path / "backfill", tmp_path / "backfill_dead"
    backfill = {**config, "output": {"path": str(out), "dead_letter_path": str(dead)},
                "checkpoint": str(tmp_path / "backfill_chk")}
    filled = run_backfill(backfill, FIRST_TS, LAST_TS, slices=3, spark=spark)
    inside = [r for r in expected if r[1] is None or r[1] < MAX_TIME_US]
    assert {"p4", "p6", "f1", "d1"} <= {r[0] for r in inside} and "f2" not in {r[0] for r in inside}
    assert _rows_of(spark.read.parquet(str(out)), JOIN_COLUMNS) == inside
    assert (filled["rows_in_left"], filled["rows_out"], filled["late"], filled["dead_letter"]) == (
        len(inside), len(inside), 0, 0)


# =================================================================================================
# Every door: MATCH_RECOGNIZE
# =================================================================================================
MR_SCHEMA = "id STRING, k STRING, t TIMESTAMP, v BIGINT"
MR_CLAUSE = """PARTITION BY k ORDER BY t
    MEASURES FIRST(A.id) AS first_id, LAST(B.id) AS last_id, COUNT(*) AS n
    PATTERN (A B+) DEFINE B AS B.v > PREV(B.v)"""
MR_ROWS = [
    ("n1", "now", "2026-01-01T00:00:00", 1), ("n2", "now", "2026-01-01T01:00:00", 2),
    ("o1", "old", "1900-01-01T00:00:00", 1), ("o2", "old", "1900-01-01T00:00:01", 2),  # the old partition
    ("o3", "old", "1969-12-31T23:59:59.999999", 3),
    ("a1", "anc", "0001-01-01T00:00:00", 1), ("a2", "anc", "0001-01-01T00:00:00.000001", 5),
    ("f1", "far", "9999-12-31T12:00:00", 1), ("f2", "far", "9999-12-31T23:59:59.999999", 2),
    ("x1", "now", None, 9),  # NULL time: dead letter
]


@pytest.mark.spark
def test_match_recognize_every_door_over_the_whole_range(spark, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text(
        "".join(json.dumps(dict(zip(("id", "k", "t", "v"), row, strict=True))) + "\n" for row in MR_ROWS))
    config = {
        "match_recognize": {"clause": MR_CLAUSE},
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": MR_SCHEMA},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
    }
    df = spark.read.schema(MR_SCHEMA).json(str(tmp_path / "in"))
    timed = df.where("t IS NOT NULL")
    door = timeweave.match_recognize(timed, MR_CLAUSE)
    columns = door.columns
    expected = Counter(tuple(r) for r in door.select(*columns).collect())
    assert expected == Counter({("anc", "a1", "a2", 2): 1, ("far", "f1", "f2", 2): 1, ("now", "n1", "n2", 2): 1,
                                ("old", "o1", "o3", 3): 1})
    by_sql = timeweave.sql(spark, f"SELECT * FROM {{src}} MATCH_RECOGNIZE ({MR_CLAUSE}) AS m", src=timed)
    assert Counter(tuple(r) for r in by_sql.select(*columns).collect()) == expected

    metrics = run_streaming(config, spark, flush=True)
    streamed = Counter(tuple(r) for r in spark.read.parquet(config["output"]["path"]).select(*columns).collect())
    assert streamed == expected
    assert (metrics["rows_in"], metrics["rows_out"], metrics["late"], metrics["dead_letter"]) == (
        len(MR_ROWS), len(expected), 0, 1)

    # [0001-01-01, 9999-12-31 23:59:59.999999) in 3 slices: f2 (the last µs) is outside, so "far" has no match.
    out = tmp_path / "backfill"
    backfill = {**config, "output": {"path": str(out), "dead_letter_path": str(tmp_path / "backfill_dead")}}
    filled = run_backfill(backfill, FIRST_TS, LAST_TS, slices=3, spark=spark)
    inside = timeweave.match_recognize(timed.where(F.col("t") < F.lit(LAST_TS)), MR_CLAUSE)
    expected_inside = Counter(tuple(r) for r in inside.select(*columns).collect())
    assert ("far", "f1", "f2", 2) not in expected_inside and len(expected_inside) == 3
    assert Counter(tuple(r) for r in spark.read.parquet(str(out)).select(*columns).collect()) == expected_inside
    assert (filled["rows_in"], filled["rows_out"]) == (len(MR_ROWS) - 2, 3)


# =================================================================================================
# The last millisecond of 9999 is an ordinary time (issue 20: it was the end-of-input heartbeat's)
# =================================================================================================
LAST_MS = "9999-12-31 23:59:59.999"


@pytest.mark.spark
@pytest.mark.slow
def test_a_row_in_the_last_millisecond_does_not_close_the_stream(spark, tmp_path: Path) -> None:
    """A temporal join and a MATCH_RECOGNIZE fed a row at 9999-12-31 23:59:59.999 in a first run, then rows
    later in the same millisecond in a flushed second run.  The flush heartbeat stood at that millisecond, so
    the first run's watermark was the end of input: the second run's rows went late (the temporal join lost
    o2 and o3, MATCH_RECOGNIZE the match f1 -> f2).  Every door and a backfill give the same rows."""
    join = _join_inputs_at(tmp_path / "tj")
    _append_csv(join["left"]["path"], "a.csv", ["o1,1.0,EUR,9999-12-31 23:59:59.999"])
    _append_csv(join["right"]["path"], "a.csv", ["+U,EUR,2.0,9999-12-31 23:59:59.999"])
    first = run_streaming(join, spark)
    assert first["watermark"] == "9999-12-31T23:59:59.999Z" and first["flushed"] is False
    _append_csv(join["left"]["path"], "b.csv", ["o2,2.0,EUR,9999-12-31 23:59:59.9995", f"o3,3.0,EUR,{LAST_TS}"])
    _append_csv(join["right"]["path"], "b.csv", ["+U,EUR,3.0,9999-12-31 23:59:59.9997"])
    second = run_streaming(join, spark, flush=True)
    assert (first["late"] + second["late"], first["rows_out"] + second["rows_out"]) == (0, 4)
    orders = spark.read.schema(ORDERS_SCHEMA).option("header", "true").csv(join["left"]["path"])
    rates = spark.read.schema(RATES_SCHEMA).option("header", "true").csv(join["right"]["path"])
    door = timeweave.temporal_join(orders, rates, "order_time", how="left", key="currency", time="update_time",
                                 format="changelog", op="op")
    expected = _rows_of(door, JOIN_COLUMNS)
    assert [(r[0], r[2]) for r in expected if r[0] != "o0"] == [("o1", 2.0), ("o2", 2.0), ("o3", 3.0)]
    assert _rows_of(spark.read.parquet(join["output"]["path"]), JOIN_COLUMNS) == expected
    out = tmp_path / "tj_backfill"
    run_backfill({**join, "output": {"path": str(out), "dead_letter_path": str(tmp_path / "tj_dead")},
                  "checkpoint": str(tmp_path / "tj_bchk")}, FIRST_TS, LAST_TS, slices=2, spark=spark)
    assert _rows_of(spark.read.parquet(str(out)), JOIN_COLUMNS) == [r for r in expected if r[1] < MAX_TIME_US]

    (tmp_path / "mr" / "in").mkdir(parents=True)
    config = {
        "match_recognize": {"clause": MR_CLAUSE},
        "input": {"path": str(tmp_path / "mr" / "in"), "format": "json", "schema": MR_SCHEMA},
        "output": {"path": str(tmp_path / "mr" / "out")},
        "checkpoint": str(tmp_path / "mr" / "chk"),
    }
    rows = [("f1", "far", "9999-12-31T23:59:59.999", 1), ("f2", "far", "9999-12-31T23:59:59.9995", 2),
            ("f3", "far", "9999-12-31T23:59:59.999999", 3)]
    _json_lines(tmp_path / "mr" / "in" / "a.json", rows[:1])
    first = run_streaming(config, spark)
    _json_lines(tmp_path / "mr" / "in" / "b.json", rows[1:])
    second = run_streaming(config, spark, flush=True)
    assert (first["late"] + second["late"], first["rows_out"] + second["rows_out"]) == (0, 1)
    df = spark.read.schema(MR_SCHEMA).json(str(tmp_path / "mr" / "in"))
    door = timeweave.match_recognize(df, MR_CLAUSE)
    assert [tuple(r) for r in door.collect()] == [("far", "f1", "f3", 3)]
    assert [tuple(r) for r in spark.read.parquet(config["output"]["path"]).select(*door.columns).collect()] == [
        ("far", "f1", "f3", 3)]
    out = tmp_path / "mr" / "backfill"
    run_backfill({**config, "output": {"path": str(out), "dead_letter_path": str(tmp_path / "mr" / "dead")}},
                 FIRST_TS, LAST_TS, slices=2, spark=spark)
    assert [tuple(r) for r in spark.read.parquet(str(out)).select(*door.columns).collect()] == [("far", "f1", "f2", 2)]


def _join_inputs_at(root: Path) -> dict[str, Any]:
    """A LEFT temporal join job over CSV directories under ``root`` holding one ordinary order and rate."""
    header = {"orders": "order_id,price,currency,order_time", "rates": "op,currency,conversion_rate,update_time"}
    _append_csv(str(root / "orders"), "0.csv", [header["orders"], "o0,1.0,EUR,2026-01-01 00:00:00"])
    _append_csv(str(root / "rates"), "0.csv", [header["rates"], "+I,EUR,1.0,2026-01-01 00:00:00"])
    csv = {"format": "csv", "options": {"header": "true"}}
    return {
        "left": {"path": str(root / "orders"), **csv, "schema": ORDERS_SCHEMA},
        "right": {"path": str(root / "rates"), **csv, "schema": RATES_SCHEMA},
        "versioned": {"key": "currency", "time": "update_time", "format": "changelog", "op": "op"},
        "join": {"left_time": "order_time", "how": "left"},
        "output": {"path": str(root / "out")},
        "checkpoint": str(root / "chk"),
    }


def _append_csv(directory: str, name: str, lines: list[str]) -> None:
    """Write ``lines`` as file ``name`` of ``directory``; a data file after the first gets the header too."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    if name != "0.csv":
        first = (folder / "0.csv").read_text().splitlines()[0]
        lines = [first, *lines]
    (folder / name).write_text("\n".join(lines) + "\n")


def _json_lines(path: Path, rows: list[tuple]) -> None:
    path.write_text("".join(json.dumps(dict(zip(("id", "k", "t", "v"), r, strict=True))) + "\n" for r in rows))


# =================================================================================================
# A session time zone other than UTC
# =================================================================================================
ZONE_ROWS = [
    ("a1", "anc", "0001-01-01T00:00:00", 1), ("a2", "anc", "0001-01-01T00:00:01", 5),  # year 1 on the zone's clock
    ("e1", "edge", "2026-01-01T08:30:00", 1), ("e2", "edge", "2026-01-01T09:30:00", 2),  # Tokyo: either side of
    ("e3", "edge", "2026-01-01T16:30:00", 3), ("e4", "edge", "2026-01-01T17:30:00", 4),  # 2026-01-01T00:00Z (LA:
    ("m1", "mid", "2026-01-01T12:00:00", 1), ("m2", "mid", "2026-01-01T12:00:01", 2),   # 16:00 and 17:00 local)
]
ZONE_START, ZONE_END = datetime(2026, 1, 1), datetime(2026, 1, 2)  # naive bounds: UTC, whatever the session's zone


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("zone", ["Asia/Tokyo", "America/Los_Angeles"])
def test_match_recognize_under_a_session_time_zone(spark, tmp_path: Path, zone: str) -> None:
    """Year 1 on a zone's clock through every MATCH_RECOGNIZE door (its instant is in year 0 UTC east of
    Greenwich: decoding it through a UTC datetime overflowed), and a backfill's bounds as UTC instants under
    a non-UTC session (they were cast on the session's clock, so its slices disagreed with the DataFrame door)."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        (tmp_path / "in").mkdir()
        _json_lines(tmp_path / "in" / "a.json", ZONE_ROWS)
        config = {
            "match_recognize": {"clause": MR_CLAUSE},
            "input": {"path": str(tmp_path / "in"), "format": "json", "schema": MR_SCHEMA},
            "output": {"path": str(tmp_path / "out")},
            "checkpoint": str(tmp_path / "chk"),
        }
        df = spark.read.schema(MR_SCHEMA).json(str(tmp_path / "in"))
        door = timeweave.match_recognize(df, MR_CLAUSE)
        columns = door.columns
        expected = Counter(tuple(r) for r in door.select(*columns).collect())
        assert expected == Counter({("anc", "a1", "a2", 2): 1, ("edge", "e1", "e4", 4): 1, ("mid", "m1", "m2", 2): 1})
        metrics = run_streaming(config, spark, flush=True)
        assert (metrics["late"], metrics["dead_letter"]) == (0, 0)
        assert Counter(tuple(r) for r in spark.read.parquet(str(tmp_path / "out")).select(*columns).collect()) == expected

        out = tmp_path / "backfill"
        run_backfill({**config, "output": {"path": str(out), "dead_letter_path": str(tmp_path / "dead")}},
                     ZONE_START, ZONE_END, slices=2, spark=spark)
        start_us, end_us = (int((b - datetime(1970, 1, 1)).total_seconds()) * 1_000_000 for b in (ZONE_START, ZONE_END))
        inside = df.where((F.unix_micros("t") >= start_us) & (F.unix_micros("t") < end_us))
        expected_inside = Counter(tuple(r) for r in timeweave.match_recognize(inside, MR_CLAUSE).select(*columns).collect())
        assert Counter(tuple(r) for r in spark.read.parquet(str(out)).select(*columns).collect()) == expected_inside
        assert sum(expected_inside.values()) >= 1
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
