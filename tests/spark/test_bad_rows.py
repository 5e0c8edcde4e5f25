"""Malformed records are dead letters with their reason and raw text, the same in every door that reads files.

Regressions (issue 20, "Doors disagree on bad rows"), measured on the jobs' CSV / JSON sources before the fix:
unparsable time text became a NULL time (dead letter "NULL time", the text lost; a LEFT join output the row),
a CSV record with an added column shifted its fields silently, and ``price = sixty`` became a NULL price and
joined.  Now each goes to the dead letter (``side``, ``reason``, ``row``) with a reason naming the column and
type, or the wrong column count, and ``row`` holding the fields as read plus the raw record
(``_corrupt_record``); counted in the metrics; the streaming job and the backfill agree, and their main
outputs equal the DataFrame door's over the well-formed rows.  A value that is empty in the input stays a
NULL (here a NULL time a LEFT join outputs unmatched).
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

import timeweave
from timeweave.core.errors import SpecError
from timeweave.core.spec import VersionedTableSpec
from timeweave.jobs.backfill import run_backfill
from timeweave.jobs.streaming import run_streaming

pytestmark = pytest.mark.spark

ORDERS = "order_id STRING, price DECIMAL(10,2), currency STRING, order_time TIMESTAMP"
RATES = "op STRING, currency STRING, rate DECIMAL(10,2), update_time TIMESTAMP"
ORDER_LINES = [
    "o1,10.00,USD,2024-01-01 00:10:00",
    "o2,sixty,USD,2024-01-01 00:20:00",         # unparsable price
    "o3,3.00,USD,yesterday",                    # unparsable time
    "o4,4.00,EXTRA,USD,2024-01-01 00:30:00",    # an added column
    "o5,5.00,EUR,2024-01-01 00:40:00",          # no EUR rate: unmatched
    "o6,6.00,USD,",                             # empty time: a NULL time, output unmatched (LEFT)
]
RATE_LINES = [
    "+I,USD,1.10,2024-01-01 00:00:00",
    "+U,USD,abc,2024-01-01 00:15:00",           # unparsable rate: not a version (o2 would take it)
    "+U,USD,1.30,2024-01-01 00:25:00",
]
EXPECTED_DEAD = {
    ("left", "unparsable value in column price of type DECIMAL(10,2)",
     '{"order_id":"o2","price":"sixty","currency":"USD","order_time":"2024-01-01 00:20:00",'
     '"_corrupt_record":"o2,sixty,USD,2024-01-01 00:20:00"}'),
    ("left", "unparsable value in column order_time of type TIMESTAMP",
     '{"order_id":"o3","price":"3.00","currency":"USD","order_time":"yesterday","_corrupt_record":"o3,3.00,USD,yesterday"}'),
    ("left", "malformed record: wrong column count (the schema has 4 columns)",
     '{"order_id":"o4","price":"4.00","currency":"EXTRA","order_time":"USD",'
     '"_corrupt_record":"o4,4.00,EXTRA,USD,2024-01-01 00:30:00"}'),
    ("right", "unparsable value in column rate of type DECIMAL(10,2)",
     '{"op":"+U","currency":"USD","rate":"abc","update_time":"2024-01-01 00:15:00",'
     '"_corrupt_record":"+U,USD,abc,2024-01-01 00:15:00"}'),
}


def _csv(path: Path, header: str, lines: list[str]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "part-0.csv").write_text("\n".join([header, *lines]) + "\n")


def _dead(spark, path: str) -> set[tuple]:
    return {(r["side"], r["reason"], r["row"]) for r in spark.read.parquet(path).collect()}


def _join_config(tmp_path: Path, name: str) -> dict:
    return {
        "left": {"path": str(tmp_path / "orders"), "format": "csv", "options": {"header": "true"}, "schema": ORDERS},
        "right": {"path": str(tmp_path / "rates"), "format": "csv", "options": {"header": "true"}, "schema": RATES},
        "versioned": {"key": "currency", "time": "update_time", "format": "changelog", "op": "op"},
        "join": {"left_time": "order_time", "how": "left", "right_columns": ["rate"]},
        "output": {"path": str(tmp_path / name)},
        "checkpoint": str(tmp_path / f"{name}_checkpoint"),
        "trigger": {"available_now": True},
    }


@pytest.mark.slow
def test_malformed_csv_rows_are_dead_letters_in_the_streaming_job_and_the_backfill(spark, tmp_path: Path) -> None:
    _csv(tmp_path / "orders", "order_id,price,currency,order_time", ORDER_LINES)
    _csv(tmp_path / "rates", "op,currency,rate,update_time", RATE_LINES)
    # The DataFrame door over the well-formed rows (what the files mean without the malformed records).
    orders = spark.createDataFrame([
        ("o1", Decimal("10.00"), "USD", datetime(2024, 1, 1, 0, 10)), ("o5", Decimal("5.00"), "EUR", datetime(2024, 1, 1, 0, 40)),
        ("o6", Decimal("6.00"), "USD", None)], ORDERS)
    rates = spark.createDataFrame([
        ("+I", "USD", Decimal("1.10"), datetime(2024, 1, 1)), ("+U", "USD", Decimal("1.30"), datetime(2024, 1, 1, 0, 25))],
        RATES)
    expected = sorted((r["order_id"], r["rate"]) for r in timeweave.temporal_join(
        orders, rates, "order_time", key="currency", time="update_time", format="changelog", op="op", how="left",
        right_columns=["rate"]).collect())
    assert expected == [("o1", Decimal("1.10")), ("o5", None), ("o6", None)]

    stream = run_streaming(_join_config(tmp_path, "stream"), spark, flush=True)
    assert sorted((r["order_id"], r["rate"]) for r in spark.read.parquet(str(tmp_path / "stream")).collect()) == expected
    assert _dead(spark, str(tmp_path / "stream_dead_letter")) == EXPECTED_DEAD
    assert (stream["dead_letter"], stream["rows_in_left"], stream["rows_in_right"], stream["rows_out"]) == (4, 6, 3, 3)

    backfill = run_backfill(_join_config(tmp_path, "backfill"), "2024-01-01T00:00", "2024-01-02T00:00", 2, spark=spark)
    main = spark.read.parquet(str(tmp_path / "backfill"))
    assert sorted((r["order_id"], r["rate"]) for r in main.collect()) == expected
    assert _dead(spark, str(tmp_path / "backfill_dead_letter" / "slice=malformed")) == EXPECTED_DEAD
    assert _dead(spark, str(tmp_path / "backfill_dead_letter")) == EXPECTED_DEAD  # nothing else is rejected
    assert (backfill["malformed"], backfill["dead_letter"], backfill["rows_in_left"]) == (4, 4, 6)


def test_a_backfill_parses_each_csv_source_once(spark, tmp_path: Path) -> None:
    """The sources' malformed records and the operator's rows come from one parse (issue 20: the temporal join
    re-parsed each CSV for every read, and the dead letter parsed it once more: ~3.4 times the CSV's bytes read
    from disk, bench/bench_malformed_sources.py).  Hadoop's local file system statistics count the bytes read;
    the CSVs are most of them."""
    lines = [f"o{i},{i % 97}.25,USD,2024-01-01 {i % 24:02d}:{i % 60:02d}:00" for i in range(6_000)]
    _csv(tmp_path / "orders", "order_id,price,currency,order_time", [*lines, *ORDER_LINES])
    _csv(tmp_path / "rates", "op,currency,rate,update_time", RATE_LINES)
    csv_bytes = sum((tmp_path / side / "part-0.csv").stat().st_size for side in ("orders", "rates"))
    def read() -> int:
        stats = spark._jvm.org.apache.hadoop.fs.FileSystem.getAllStatistics()
        return sum(s.getBytesRead() for s in stats if s.getScheme() == "file")

    before = read()
    metrics = run_backfill(_join_config(tmp_path, "once"), "2024-01-01T00:00", "2024-01-02T00:00", 2, spark=spark)
    assert read() - before < 1.5 * csv_bytes
    assert _dead(spark, str(tmp_path / "once_dead_letter" / "slice=malformed")) == EXPECTED_DEAD  # the same dead letters
    assert (metrics["malformed"], metrics["rows_in_left"]) == (4, len(lines) + len(ORDER_LINES))


MR_CLAUSE = """PARTITION BY symbol ORDER BY rowtime MEASURES FIRST(A.price) AS p0, LAST(B.price) AS p1
    ONE ROW PER MATCH PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)"""
TICKS = "symbol STRING, rowtime TIMESTAMP, price DOUBLE"


@pytest.mark.slow
def test_malformed_json_rows_are_dead_letters_in_match_recognize_streaming_and_backfill(spark, tmp_path: Path) -> None:
    lines = [
        '{"symbol":"A","rowtime":"2024-01-01T10:00:00","price":10}',
        '{"symbol":"A","rowtime":"2024-01-01T10:01:00","price":"eleven"}',
        '{"symbol":"A","rowtime":"2024-01-01T10:02:00","price":12}',
        '{"symbol":"A","rowtime":"noon","price":13}',
        '{"symbol":"A", "rowtime": broken',
        '{"symbol":"A","rowtime":"2024-01-01T10:04:00","price":9}',
    ]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "part-0.json").write_text("\n".join(lines) + "\n")
    expected_dead = {
        ("input", "unparsable value in column price of type DOUBLE",
         '{"symbol":"A","rowtime":"2024-01-01T10:01:00","price":"eleven","_corrupt_record":' + json.dumps(lines[1]) + "}"),
        ("input", "unparsable value in column rowtime of type TIMESTAMP",
         '{"symbol":"A","rowtime":"noon","price":"13","_corrupt_record":' + json.dumps(lines[3]) + "}"),
        ("input", "malformed record: not a JSON record", '{"_corrupt_record":' + json.dumps(lines[4]) + "}"),
    }

    def config(name: str) -> dict:
        return {"match_recognize": {"clause": MR_CLAUSE},
                "input": {"path": str(tmp_path / "in"), "format": "json", "schema": TICKS},
                "output": {"path": str(tmp_path / name)}, "checkpoint": str(tmp_path / f"{name}_chk"),
                "trigger": {"available_now": True}}

    good = spark.createDataFrame([("A", datetime(2024, 1, 1, 10), 10.0), ("A", datetime(2024, 1, 1, 10, 2), 12.0),
                                  ("A", datetime(2024, 1, 1, 10, 4), 9.0)], TICKS)
    expected = sorted(tuple(r) for r in timeweave.match_recognize(good, MR_CLAUSE).collect())
    assert expected == [("A", 10.0, 12.0)]

    stream = run_streaming(config("stream"), spark, flush=True)
    assert sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "stream")).collect()) == expected
    assert _dead(spark, str(tmp_path / "stream_dead_letter")) == expected_dead
    assert (stream["dead_letter"], stream["rows_in"]) == (3, 6)

    backfill = run_backfill(config("backfill"), "2024-01-01T00:00", "2024-01-02T00:00", 2, spark=spark)
    main = spark.read.parquet(str(tmp_path / "backfill")).drop("slice")
    assert sorted(tuple(r) for r in main.collect()) == expected
    assert _dead(spark, str(tmp_path / "backfill_dead_letter")) == expected_dead
    assert (backfill["malformed"], backfill["dead_letter"]) == (3, 3)


def test_a_query_reading_some_columns_sees_the_same_malformed_rows(spark, tmp_path: Path) -> None:
    """Spark converts only the columns a query reads; the split does not depend on them (a count of one
    column still leaves out ``price = sixty``, and a record with too few fields)."""
    from timeweave.spark.sources import read_source, split_malformed

    _csv(tmp_path / "orders", "order_id,price,currency,order_time", [*ORDER_LINES, "o7,7.00"])
    good, dead = split_malformed(read_source(spark.read, "csv", ORDERS, {"header": "true"}, str(tmp_path / "orders")),
                                 "left")
    assert sorted(r["order_id"] for r in good.select("order_id").collect()) == ["o1", "o5", "o6"]
    assert good.select("order_time").count() == 3
    assert dead.count() == 4


def test_the_readers_refuse_modes_that_lose_or_stop_on_malformed_records(spark, tmp_path: Path) -> None:
    from timeweave.spark.sources import read_source

    with pytest.raises(SpecError, match=r"options\.mode.*DROPMALFORMED"):
        read_source(spark.read, "csv", ORDERS, {"mode": "DROPMALFORMED"}, str(tmp_path))
    with pytest.raises(SpecError, match="column '_corrupt_record' is reserved"):
        read_source(spark.read, "json", "_corrupt_record STRING, t TIMESTAMP", {}, str(tmp_path))


def test_the_dataframe_door_refuses_a_string_time_column_naming_it(spark) -> None:
    """The DataFrame door casts nothing: a string event time is refused (the user parses it, and decides what
    an unparsable text means) with an error naming the column."""
    orders = spark.createDataFrame([("o1", "USD", "2024-01-01 00:10:00")], "order_id STRING, currency STRING, t STRING")
    rates = spark.createDataFrame([("USD", 1.0, datetime(2024, 1, 1))], "currency STRING, rate DOUBLE, update_time TIMESTAMP")
    with pytest.raises(SpecError, match="column 't' must be a timestamp, date or number \\(an orderable time\\), found string"):
        timeweave.temporal_join(orders, rates, "t", key="currency", time="update_time")


def test_a_user_column_named_reason_stays_in_the_dead_letter_row(spark) -> None:
    """The DataFrame and SQL doors' dead letter listed the row as ``struct(* EXCEPT (reason))``: a user column
    named ``reason`` was dropped from ``row`` (and clashed with the added ``reason``)."""
    orders = spark.createDataFrame(
        [("o1", "USD", datetime(2024, 1, 1, 0, 10), "gift"), ("o2", None, datetime(2024, 1, 1, 0, 20), "refund")],
        "order_id STRING, currency STRING, order_time TIMESTAMP, reason STRING")
    rates = spark.createDataFrame([("USD", 1.0, datetime(2024, 1, 1))], "currency STRING, rate DOUBLE, update_time TIMESTAMP")
    _, rejected = timeweave.temporal_join_with_rejects(orders, rates, "order_time", key="currency", time="update_time")
    expected = [("left", "NULL key column currency",
                 {"order_id": "o2", "order_time": "2024-01-01T00:20:00.000Z", "reason": "refund"})]
    assert [(r["side"], r["reason"], json.loads(r["row"])) for r in rejected.collect()] == expected

    orders.createOrReplaceTempView("orders_reason")
    timeweave.register_versioned(spark, "rates_reason", rates, VersionedTableSpec("currency", "update_time"))
    query = ("SELECT o.order_id, r.rate FROM orders_reason AS o JOIN rates_reason FOR SYSTEM_TIME AS OF o.order_time "
             "AS r ON o.currency = r.currency")
    dead = timeweave.dead_letters(spark, query).collect()
    assert [(r["side"], r["reason"], json.loads(r["row"])) for r in dead] == expected
