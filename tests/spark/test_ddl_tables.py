"""Flink DDL through ``timeweave.sql``: tables from csv / json / parquet / debezium-json / canal-json files,
versioned tables and views joined FOR SYSTEM_TIME AS OF (Flink's conformance outputs), scripts, Kafka decoding."""

from __future__ import annotations

import csv
import json
import uuid
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import types as T

import timeweave
from tests.helpers.flink_cases import CASES, load_case, rows_as_text
from timeweave.core.ddl.connectors import source_of
from timeweave.core.ddl.script import split_statements
from timeweave.core.ddl.table import parse_create_table
from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.spark.ddl import decode_kafka

pytestmark = pytest.mark.spark

JOIN = """SELECT o.order_id, o.price, o.currency, r.conversion_rate, o.order_time, r.update_time AS rate_time
FROM {orders} AS o
{how} JOIN {rates} FOR SYSTEM_TIME AS OF o.order_time AS r
ON o.currency = r.currency"""


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _data_rows(case: str, file: str) -> list[list[str]]:
    with open(CASES / case / file, newline="") as f:
        return list(csv.reader(f))[1:]


def _headerless_csv(tmp_path: Path, case: str, file: str) -> str:
    """A conformance CSV without its header line (Flink's csv format reads none)."""
    out = tmp_path / case / file.removesuffix(".csv")
    out.mkdir(parents=True)
    with open(out / "part-0.csv", "w", newline="") as f:
        csv.writer(f).writerows(_data_rows(case, file))
    return str(out)


def _orders(spark, tmp_path: Path, case: str) -> str:
    name = _name("orders")
    timeweave.sql(spark, f"""CREATE TEMPORARY TABLE {name} (
        order_id STRING, price DECIMAL(32, 2), currency STRING, order_time TIMESTAMP(3),
        WATERMARK FOR order_time AS order_time
    ) WITH ('connector' = 'filesystem', 'path' = '{_headerless_csv(tmp_path, case, "orders.csv")}', 'format' = 'csv')""")
    return name


def _expected(case: str) -> list[tuple]:
    _, rows = load_case(case).expected()
    return sorted(rows, key=lambda row: tuple((v is None, v or "") for v in row))


COLUMNS = ["order_id", "price", "currency", "conversion_rate", "order_time", "rate_time"]


def test_csv_json_parquet_tables_read_the_declared_columns_and_types(spark, tmp_path) -> None:
    rows = [("a", 1, Decimal("1.50"), datetime(2020, 1, 1, 9, 0), True), ("b", 2, None, datetime(2020, 1, 1, 10, 30), False)]
    source = spark.createDataFrame(rows, "id STRING, n BIGINT, amount DECIMAL(10, 2), ts TIMESTAMP_NTZ, ok BOOLEAN")
    (tmp_path / "csv").mkdir()
    with open(tmp_path / "csv" / "part-0.csv", "w") as f:
        f.write("a;1;1.50;2020-01-01 09:00:00;true\nb;2;;2020-01-01 10:30:00;false\n")
    source.write.json(str(tmp_path / "json"))
    source.write.parquet(str(tmp_path / "parquet"))
    for fmt, extra in (("csv", ", 'csv.field-delimiter' = ';'"), ("json", ""), ("parquet", "")):
        name = _name(f"t_{fmt}")
        timeweave.sql(spark, f"""CREATE TABLE {name} (
            id STRING, n BIGINT, amount DECIMAL(10, 2), ts TIMESTAMP(3), ok BOOLEAN,
            ts_text AS CAST(ts AS STRING), file_name STRING METADATA FROM 'file.name' VIRTUAL
        ) WITH ('connector' = 'filesystem', 'path' = '{tmp_path / fmt}', 'format' = '{fmt}'{extra})""")
        df = spark.table(name)
        assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
            ("id", "string"), ("n", "bigint"), ("amount", "decimal(10,2)"), ("ts", "timestamp_ntz"),
            ("ok", "boolean"), ("ts_text", "string"), ("file_name", "string")], fmt
        got = sorted((r.id, r.n, r.amount, r.ts, r.ok, r.ts_text) for r in df.collect())
        assert got == [("a", 1, Decimal("1.50"), datetime(2020, 1, 1, 9, 0), True, "2020-01-01 09:00:00"),
                       ("b", 2, None, datetime(2020, 1, 1, 10, 30), False, "2020-01-01 10:30:00")], fmt
        assert all(r.file_name.endswith("." + fmt) or fmt == "csv" for r in df.collect())


def test_computed_columns_to_timestamp_and_proctime(spark, tmp_path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "part-0.csv").write_text("k1,2020-01-01 09:00:00\n")
    name = _name("computed")
    df = timeweave.sql(spark, f"""CREATE TABLE {name} (
        k STRING, s STRING, ts AS TO_TIMESTAMP(s), proc AS PROCTIME(), ltz TIMESTAMP_LTZ(3) METADATA FROM
        'file.modification-time'
    ) WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "t"}', 'format' = 'csv');
    SELECT * FROM {name}""")
    types = {f.name: f.dataType for f in df.schema.fields}
    assert isinstance(types["ts"], T.TimestampNTZType)  # Flink's TO_TIMESTAMP: a zone-less TIMESTAMP(3)
    assert isinstance(types["proc"], T.TimestampType) and isinstance(types["ltz"], T.TimestampType)
    assert df.first().ts == datetime(2020, 1, 1, 9, 0)


@pytest.mark.parametrize("how", ["", "LEFT"])
def test_ddl_versioned_table_joins_as_flink_and_as_versioned_table(spark, tmp_path, how) -> None:
    case = "tj_pk_inner" if not how else "tj_pk_left"
    orders = _orders(spark, tmp_path, case)
    rates = _name("rates")
    timeweave.sql(spark, f"""CREATE TABLE {rates} (
        currency STRING, conversion_rate DECIMAL(32, 4), update_time TIMESTAMP(3),
        PRIMARY KEY (currency) NOT ENFORCED, WATERMARK FOR update_time AS update_time - INTERVAL '5' SECOND
    ) WITH ('connector' = 'filesystem', 'path' = '{_headerless_csv(tmp_path, case, "currency_rates.csv")}',
            'format' = 'csv')""")
    ddl_join = timeweave.sql(spark, JOIN.format(orders=orders, how=how, rates=rates))
    assert rows_as_text(ddl_join, COLUMNS) == _expected(case)
    same = _name("rates_df")
    timeweave.versioned_table(spark.table(rates), key="currency", time="update_time", name=same)
    via_versioned_table = timeweave.sql(spark, JOIN.format(orders=orders, how=how, rates=same))
    assert rows_as_text(ddl_join, COLUMNS) == rows_as_text(via_versioned_table, COLUMNS)


def _debezium_lines(case: str) -> list[str]:
    """The case's +I/-U/+U/-D changelog as Debezium records (an update is one 'u' with both images)."""
    lines, pending = [], None
    for op, currency, rate, time in _data_rows(case, "currency_rates.csv"):
        row = {"currency": currency, "conversion_rate": float(rate), "update_time": time}
        if op == "-U":
            pending = row
            continue
        record = {"+I": {"op": "c", "before": None, "after": row}, "+U": {"op": "u", "before": pending, "after": row},
                  "-D": {"op": "d", "before": row, "after": None}}[op]
        lines.append(json.dumps({**record, "ts_ms": 0, "source": {"ts_ms": 0, "db": "shop", "table": "rates"}}))
    return lines


@pytest.mark.parametrize("case", ["tj_changelog_inner", "tj_changelog_left"])
def test_debezium_changelog_is_a_versioned_table_with_deletes(spark, tmp_path, case) -> None:
    path = tmp_path / "debezium"
    path.mkdir()
    (path / "part-0.json").write_text("\n".join(_debezium_lines(case)) + "\n")
    orders, rates = _orders(spark, tmp_path, case), _name("rates_cdc")
    joined = timeweave.sql(spark, f"""CREATE TABLE {rates} (
        currency STRING, conversion_rate DECIMAL(32, 4), update_time TIMESTAMP(3),
        PRIMARY KEY (currency) NOT ENFORCED, WATERMARK FOR update_time AS update_time
    ) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'debezium-json');
    {JOIN.format(orders=orders, how="LEFT" if case.endswith("left") else "", rates=rates)}""")
    assert rows_as_text(joined, COLUMNS) == _expected(case)
    kinds = [r.row_kind for r in spark.table(rates).orderBy("update_time", "currency").collect()]
    assert kinds.count("-D") == 2 and kinds.count("+U") == 2 and kinds.count("+I") == 4


def test_canal_json_changelog_with_table_filter_and_event_timestamp(spark, tmp_path) -> None:
    path = tmp_path / "canal"
    path.mkdir()
    records = [
        {"data": [{"id": "1", "price": "1.5"}, {"id": "2", "price": "2.0"}], "type": "INSERT", "database": "shop",
         "table": "prices", "es": 1577869200000, "ts": 0},  # 2020-01-01 09:00:00 UTC
        {"data": [{"id": "1", "price": "1.75"}], "old": [{"price": "1.5"}], "type": "UPDATE", "database": "shop",
         "table": "prices", "es": 1577872800000, "ts": 0},  # 10:00
        {"data": [{"id": "2", "price": "2.0"}], "type": "DELETE", "database": "shop", "table": "prices",
         "es": 1577876400000, "ts": 0},  # 11:00
        {"data": [{"id": "9", "price": "9"}], "type": "INSERT", "database": "shop", "table": "other",
         "es": 1577869200000, "ts": 0},
    ]
    (path / "part-0.json").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    name = _name("canal")
    timeweave.sql(spark, f"""CREATE TABLE {name} (
        id BIGINT, price DECIMAL(10, 2), changed TIMESTAMP_LTZ(3) METADATA FROM 'event-timestamp',
        PRIMARY KEY (id) NOT ENFORCED, WATERMARK FOR changed AS changed
    ) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'canal-json',
            'canal-json.table.include' = 'pri.*')""")
    rows = sorted((r.id, r.price, r.changed.hour, r.row_kind) for r in spark.table(name).collect())
    assert rows == [(1, Decimal("1.50"), 9, "+I"), (1, Decimal("1.75"), 10, "+U"), (2, Decimal("2.00"), 9, "+I"),
                    (2, Decimal("2.00"), 11, "-D")]
    bad = tmp_path / "canal_bad"
    bad.mkdir()
    (bad / "part-0.json").write_text(json.dumps({"data": [{"id": "x", "price": "1"}], "type": "INSERT"}) + "\n")
    lenient = _name("canal_lenient")
    timeweave.sql(spark, f"""CREATE TABLE {lenient} (id BIGINT, price DECIMAL(10, 2)) WITH ('connector' = 'filesystem',
        'path' = '{bad}', 'format' = 'canal-json', 'canal-json.ignore-parse-errors' = 'true')""")
    assert [(r.id, r.price) for r in spark.table(lenient).collect()] == [(None, Decimal("1.00"))]
    probes = spark.createDataFrame([(1, datetime(2020, 1, 1, 10, 30)), (2, datetime(2020, 1, 1, 10, 30)),
                                    (2, datetime(2020, 1, 1, 11, 30))], "id BIGINT, t TIMESTAMP")
    got = timeweave.sql(spark, f"SELECT p.id, p.t, v.price FROM {{probes}} AS p LEFT JOIN {name} FOR SYSTEM_TIME AS OF "
                               "p.t AS v ON p.id = v.id", probes=probes)
    assert sorted((r.id, r.t.hour, r.price) for r in got.collect()) == [
        (1, 10, Decimal("1.75")), (2, 10, Decimal("2.00")), (2, 11, None)]


def _history_table(spark, tmp_path, case: str) -> str:
    name = _name("history")
    timeweave.sql(spark, f"""CREATE TABLE {name} (
        currency STRING, conversion_rate DECIMAL(32, 4), update_time TIMESTAMP(3),
        WATERMARK FOR update_time AS update_time
    ) WITH ('connector' = 'filesystem', 'path' = '{_headerless_csv(tmp_path, case, "currency_rates_history.csv")}',
            'format' = 'csv')""")
    return name


@pytest.mark.parametrize("case", ["tj_view_inner", "tj_view_left"])
def test_versioned_view_joins_as_flink_and_as_the_versioned_table(spark, tmp_path, case) -> None:
    orders, history, view = _orders(spark, tmp_path, case), _history_table(spark, tmp_path, case), _name("versioned")
    how = "LEFT" if case.endswith("left") else ""
    joined = timeweave.sql(spark, f"""
        CREATE VIEW {view} AS
        SELECT currency, conversion_rate, update_time
        FROM (
          SELECT *, ROW_NUMBER() OVER (PARTITION BY currency ORDER BY update_time DESC) AS rownum
          FROM {history})
        WHERE rownum = 1;
        {JOIN.format(orders=orders, how=how, rates=view)}""")
    assert rows_as_text(joined, COLUMNS) == _expected(case)
    same = _name("same")
    timeweave.versioned_table(spark.table(history), key="currency", time="update_time", name=same)
    assert rows_as_text(joined, COLUMNS) == rows_as_text(
        timeweave.sql(spark, JOIN.format(orders=orders, how=how, rates=same)), COLUMNS)


def test_versioned_view_reads_as_flink_batch_reads_it(spark, tmp_path) -> None:
    case = "tj_versioned_view_changelog"
    history, view = _history_table(spark, tmp_path, case), _name("latest")
    latest = timeweave.sql(spark, f"""CREATE TEMPORARY VIEW {view} AS
        SELECT currency, conversion_rate, update_time FROM (
          SELECT *, ROW_NUMBER() OVER (PARTITION BY currency ORDER BY update_time DESC) AS rownum
          FROM {history}) WHERE rownum = 1;
        SELECT * FROM {view}""")
    header, expected = load_case(case).expected("batch")
    assert rows_as_text(latest, header) == sorted(expected)


def test_keep_first_view_is_one_version_per_key_from_its_first_time(spark, tmp_path) -> None:
    history, view = _history_table(spark, tmp_path, "tj_view_inner"), _name("first")
    probes = spark.createDataFrame([("EUR", datetime(2020, 1, 1, 8, 0)), ("EUR", datetime(2020, 1, 1, 12, 0))],
                                   "currency STRING, t TIMESTAMP_NTZ")
    got = timeweave.sql(spark, f"""CREATE VIEW {view} AS SELECT currency, conversion_rate, update_time FROM (
          SELECT *, ROW_NUMBER() OVER (PARTITION BY currency ORDER BY update_time ASC) AS rownum FROM {history})
        WHERE rownum = 1;
        SELECT p.t, r.conversion_rate FROM {{probes}} AS p LEFT JOIN {view} FOR SYSTEM_TIME AS OF p.t AS r
        ON p.currency = r.currency""", probes=probes)
    assert sorted((r.t.hour, r.conversion_rate) for r in got.collect()) == [(8, None), (12, Decimal("1.1400"))]


def test_plain_view_script_and_ddl_results(spark, tmp_path) -> None:
    history, view = _history_table(spark, tmp_path, "tj_view_inner"), _name("plain")
    empty = timeweave.sql(spark, f"CREATE VIEW {view} AS SELECT currency FROM {history} WHERE currency = 'EUR'")
    assert empty.columns == [] and empty.count() == 0
    assert timeweave.sql(spark, f"SELECT count(*) AS n FROM {view};").first().n == 3
    with pytest.raises(SpecError, match="is not a versioned table"):
        timeweave.sql(spark, f"SELECT * FROM {history} AS h JOIN {view} FOR SYSTEM_TIME AS OF h.update_time AS v "
                             "ON h.currency = v.currency")
    with pytest.raises(QuerySyntaxError, match="already exists") as error:
        timeweave.sql(spark, f"SELECT 1; CREATE VIEW {view} AS SELECT 1")
    assert error.value.col == len("SELECT 1; CREATE VIEW ") + 1
    timeweave.sql(spark, f"CREATE VIEW IF NOT EXISTS {view} AS SELECT 1")  # taken: nothing happens
    assert timeweave.sql(spark, f"SELECT count(*) AS n FROM {view}").first().n == 3


@pytest.mark.parametrize("case", ["tj_view_inner", "tj_view_left"])
def test_a_view_selecting_all_of_a_versioned_table_or_view_is_versioned_as_it_is(spark, tmp_path, case) -> None:
    # Flink keeps the primary key and time attribute through SELECT * (TemporalJoinITCase's CREATE VIEW v1)
    orders, history, view = _orders(spark, tmp_path, case), _history_table(spark, tmp_path, case), _name("versioned")
    how = "LEFT" if case.endswith("left") else ""
    of_table, of_view = _name("of_table"), _name("of_view")
    timeweave.versioned_table(spark.table(history), key="currency", time="update_time", name=view)
    timeweave.sql(spark, f"""CREATE VIEW {of_table} AS SELECT * FROM {view};
        CREATE VIEW {view}_latest AS SELECT currency, conversion_rate, update_time FROM (
          SELECT *, ROW_NUMBER() OVER (PARTITION BY currency ORDER BY update_time DESC) AS rownum FROM {history})
        WHERE rownum = 1;
        CREATE VIEW {of_view} AS SELECT * FROM {view}_latest""")
    for rates in (of_table, of_view):
        assert rows_as_text(timeweave.sql(spark, JOIN.format(orders=orders, how=how, rates=rates)), COLUMNS) \
            == _expected(case), rates
    # what the view reads is the source's rows (a versioned view: each key's latest row)
    assert timeweave.sql(spark, f"SELECT count(*) AS n FROM {of_view}").first().n \
        == timeweave.sql(spark, f"SELECT count(*) AS n FROM {view}_latest").first().n
    # anything more than SELECT * is a plain view, as before
    plain = _name("plain")
    timeweave.sql(spark, f"CREATE VIEW {plain} AS SELECT * FROM {view} WHERE conversion_rate > 0")
    with pytest.raises(SpecError, match="is not a versioned table"):
        timeweave.sql(spark, JOIN.format(orders=orders, how=how, rates=plain))


def test_versioned_view_without_its_key_among_the_columns_fails_naming_it(spark, tmp_path) -> None:
    history = _history_table(spark, tmp_path, "tj_view_inner")
    with pytest.raises(SpecError, match="column 'currency' not found"):
        timeweave.sql(spark, f"""CREATE VIEW {_name("bad")} AS SELECT conversion_rate, update_time FROM (
            SELECT *, ROW_NUMBER() OVER (PARTITION BY currency ORDER BY update_time DESC) AS rownum FROM {history})
            WHERE rownum = 1""")


def test_kafka_records_decode_into_the_declared_columns(spark) -> None:
    table = parse_create_table(split_statements("""CREATE TABLE prices (
        id STRING, price DOUBLE, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', PRIMARY KEY (id) NOT ENFORCED,
        WATERMARK FOR ts AS ts
    ) WITH ('connector' = 'upsert-kafka', 'topic' = 'prices', 'properties.bootstrap.servers' = 'k:9092',
            'key.format' = 'json', 'value.format' = 'json', 'value.fields-include' = 'EXCEPT_KEY')""")[0])
    records = spark.createDataFrame(
        [(b'{"id": "a"}', b'{"price": 1.5}', "prices", datetime(2020, 1, 1, 9)),
         (b'{"id": "a"}', None, "prices", datetime(2020, 1, 1, 10))],
        "key BINARY, value BINARY, topic STRING, timestamp TIMESTAMP")
    rows = decode_kafka(records, table, source_of(table)).orderBy("ts").collect()
    assert [(r.id, r.price, r.ts.hour, r.row_kind) for r in rows] == [("a", 1.5, 9, "+U"), ("a", None, 10, "-D")]


def test_unsupported_connector_and_option_fail_at_their_position(spark) -> None:
    text = "CREATE TABLE t (a INT) WITH ('connector' = 'jdbc')"
    with pytest.raises(QuerySyntaxError, match="connector 'jdbc' is not supported") as error:
        timeweave.sql(spark, text)
    assert error.value.position == text.index("'jdbc'")
    text = "CREATE TABLE t (a INT) WITH ('connector' = 'filesystem', 'path' = '/x', 'format' = 'csv', 'csv.header' = 'x')"
    with pytest.raises(QuerySyntaxError, match=r"option 'csv\.header' is not supported") as error:
        timeweave.sql(spark, text)
    assert error.value.position == text.index("'csv.header'")


def test_a_scripts_dead_letters_are_its_last_querys_and_unknown_ops_are_there(spark, tmp_path) -> None:
    path = tmp_path / "debezium_bad"
    path.mkdir()
    records = [{"op": "c", "after": {"k": "a", "v": 1, "ts": "2020-01-01 09:00:00"}},
               {"op": "t", "after": {"k": "a", "v": 2, "ts": "2020-01-01 10:00:00"}}]  # a truncate: no row kind
    (path / "part-0.json").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    name = _name("cdc_bad")
    script = f"""CREATE TABLE {name} (k STRING, v INT, ts TIMESTAMP(3), PRIMARY KEY (k) NOT ENFORCED,
        WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'debezium-json');
        SELECT p.k, r.v FROM (SELECT 'a' AS k, TIMESTAMP_NTZ '2020-01-01 11:00:00' AS t) AS p
        JOIN {name} FOR SYSTEM_TIME AS OF p.t AS r ON p.k = r.k"""
    assert [(r.k, r.v) for r in timeweave.sql(spark, script).collect()] == [("a", 1)]
    rejected = timeweave.dead_letters(spark, script).collect()  # the DDL is not run again (its name is taken)
    assert [(r.side, r.reason) for r in rejected] == [("right", "unknown op t in column row_kind")]
