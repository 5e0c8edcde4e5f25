"""Flink DDL in the core (no JVM): scripts, types, CREATE TABLE, connector options, the versioned-view shape."""

from __future__ import annotations

import json

import pytest

from timeweave.core.ddl.connectors import FileSource, KafkaSource, source_of
from timeweave.core.ddl.script import split_statements
from timeweave.core.ddl.table import (
    ComputedColumn,
    MetadataColumn,
    PhysicalColumn,
    is_create_table,
    parse_create_table,
)
from timeweave.core.ddl.types import parse_type_text
from timeweave.core.ddl.view import is_create_view, parse_create_view
from timeweave.core.errors import QuerySyntaxError


def _table(text: str):
    return parse_create_table(split_statements(text)[0])


def _fails(text: str, match: str, at: str, occurrence: int = 0):
    """Parse ``text`` as a table and its source; the error must match and point at the ``occurrence``-th ``at``."""
    with pytest.raises(QuerySyntaxError, match=match) as error:
        source_of(_table(text))
    position = -1
    for _ in range(occurrence + 1):
        position = text.index(at, position + 1)
    assert error.value.position == position, (error.value.position, position, str(error.value))
    return error.value


FS = "'connector' = 'filesystem', 'path' = '/data/x'"


# --- scripts ---------------------------------------------------------------------------------------------------

def test_statements_split_at_semicolons_outside_strings_names_and_comments():
    script = "CREATE VIEW v AS SELECT 'a;b' AS `c;d` /* ; */ ; -- ;\n;  SELECT * FROM v ;"
    statements = split_statements(script)
    assert [s.text for s in statements] == ["CREATE VIEW v AS SELECT 'a;b' AS `c;d`", "SELECT * FROM v"]
    assert statements[1].start == script.index("SELECT * FROM v")
    assert split_statements("-- nothing\n;;") == ()


# --- types -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("flink", "spark"), [
    ("STRING", "STRING"), ("VARCHAR(20)", "STRING"), ("CHAR(3)", "STRING"), ("BYTES", "BINARY"),
    ("VARBINARY(8)", "BINARY"), ("DECIMAL", "DECIMAL(10, 0)"), ("DECIMAL(32, 2)", "DECIMAL(32, 2)"),
    ("NUMERIC(5)", "DECIMAL(5, 0)"), ("TINYINT", "TINYINT"), ("INTEGER", "INT"), ("BIGINT NOT NULL", "BIGINT"),
    ("DOUBLE PRECISION", "DOUBLE"), ("FLOAT", "FLOAT"), ("BOOLEAN", "BOOLEAN"), ("DATE", "DATE"),
    ("TIMESTAMP", "TIMESTAMP_NTZ"), ("TIMESTAMP(3)", "TIMESTAMP_NTZ"), ("TIMESTAMP(9) WITHOUT TIME ZONE", "TIMESTAMP_NTZ"),
    ("TIMESTAMP_LTZ(3)", "TIMESTAMP"), ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP"),
    ("ARRAY<INT NOT NULL>", "ARRAY<INT>"), ("MAP<STRING, ARRAY<DOUBLE>>", "MAP<STRING, ARRAY<DOUBLE>>"),
    ("ROW<a INT, `b c` STRING>", "STRUCT<`a`: INT, `b c`: STRING>"), ("ROW(x BIGINT)", "STRUCT<`x`: BIGINT>"),
])
def test_flink_types_map_to_spark_type_text(flink, spark):
    assert parse_type_text(flink).spark == spark


def test_not_null_is_kept_and_time_kinds_are_named():
    assert parse_type_text("INT NOT NULL").nullable is False
    assert parse_type_text("TIMESTAMP(3)").time_kind == "timestamp_ntz"
    assert parse_type_text("TIMESTAMP_LTZ(3)").time_kind == "timestamp_ltz"
    assert parse_type_text("STRING").time_kind is None


def test_a_row_field_name_with_a_backquote_is_quoted_like_the_spark_floor_quotes():
    from timeweave.spark.render import quote

    assert parse_type_text("ROW<`a``b` INT>").spark == f"STRUCT<{quote('a`b')}: INT>"


@pytest.mark.parametrize(("flink", "match", "at"), [
    ("TIME(3)", "TIME has no Spark column type", "TIME"),
    ("INTERVAL", "INTERVAL has no Spark column type", "INTERVAL"),
    ("TIMESTAMP WITH TIME ZONE", "not a Flink column type", "TIMESTAMP"),
    ("DECIMAL(40, 2)", "precision must be 1..38", "DECIMAL"),
    ("TIMESTAMP(12)", "precision must be 0..9", "TIMESTAMP"),
    ("GEOMETRY", "unknown Flink type GEOMETRY", "GEOMETRY"),
    ("MAP<STRING>", "expected ','", ">"),
    ("ROW<a INT, a INT>", "duplicate ROW field 'a'", "a INT>"),
])
def test_types_without_a_spark_type_fail_at_their_position(flink, match, at):
    with pytest.raises(QuerySyntaxError, match=match) as error:
        parse_type_text(flink)
    assert error.value.position == flink.index(at)


# --- CREATE TABLE ----------------------------------------------------------------------------------------------

SEED_004 = f"""CREATE TABLE products (
    product_id    STRING,
    product_name  STRING,
    price         DECIMAL(32, 2),
    update_time   TIMESTAMP(3) METADATA FROM 'value.source.timestamp' VIRTUAL,
    PRIMARY KEY (product_id) NOT ENFORCED,
    WATERMARK FOR update_time AS update_time
) WITH ({FS}, 'format' = 'debezium-json')"""


def test_seed_004_versioned_table_source_parses():
    table = _table(SEED_004)
    assert table.name == "products" and table.primary_key == ("product_id",) and table.versioned
    assert [type(c) for c in table.columns] == [PhysicalColumn] * 3 + [MetadataColumn]
    metadata = table.columns[3]
    assert (metadata.key, metadata.virtual, metadata.type.spark) == ("value.source.timestamp", True, "TIMESTAMP_NTZ")
    assert table.watermark.column == "update_time" and table.watermark.delay_micros == 0
    source = source_of(table)
    assert isinstance(source, FileSource) and source.changelog == "debezium-json" and source.spark_format == "json"
    assert source.metadata == (("update_time", ("envelope", "source.ts_ms")),)


def test_computed_columns_inline_keys_comments_and_watermark_delays():
    table = _table(f"""CREATE TEMPORARY TABLE IF NOT EXISTS `my t` (
        id BIGINT PRIMARY KEY NOT ENFORCED COMMENT 'the key',
        s STRING,
        ts AS TO_TIMESTAMP(s, 'yyyy-MM-dd HH:mm:ss') COMMENT 'parsed',
        proc AS PROCTIME(),
        n AS CAST(id AS INT) + 1,
        WATERMARK FOR ts AS ts - INTERVAL '90' SECOND
    ) COMMENT 'a table' WITH ({FS}, 'format' = 'json')""")
    assert (table.name, table.temporary, table.if_not_exists, table.primary_key) == ("`my t`", True, True, ("id",))
    computed = {c.name: c.expression for c in table.columns if isinstance(c, ComputedColumn)}
    assert computed == {"ts": "to_timestamp_ntz(s, 'yyyy-MM-dd HH:mm:ss')", "proc": "current_timestamp()",
                        "n": "CAST(id AS INT) + 1"}
    assert table.watermark.delay_micros == 90_000_000
    assert not table.versioned or table.watermark.column == "ts"


def test_a_watermark_strategy_other_than_a_delay_keeps_its_text():
    table = _table(f"CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND * 2) WITH ({FS}, "
                   "'format' = 'csv')")
    assert table.watermark.delay_micros is None and table.watermark.expression == "ts - INTERVAL '1' SECOND * 2"
    assert _table(f"CREATE TABLE t (ts TIMESTAMP(3), CONSTRAINT pk PRIMARY KEY (k) NOT ENFORCED, k INT, "
                  f"WATERMARK FOR ts AS ts - INTERVAL '5' MINUTE) WITH ({FS}, 'format' = 'csv')"
                  ).watermark.delay_micros == 300_000_000


@pytest.mark.parametrize(("interval", "micros"), [
    ("'0.001' SECOND", 1_000), ("'1.5' SECONDS", 1_500_000), ("'0.000001' SECOND", 1), ("'2' DAYS", 172_800_000_000)])
def test_a_watermark_delay_takes_fractional_seconds(interval: str, micros: int) -> None:
    # Flink's TemporalJoinITCase declares WATERMARK FOR t AS t - interval '0.001' SECOND (SQL's fractional seconds)
    table = _table(f"CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS ts - interval {interval}) "
                   f"WITH ({FS}, 'format' = 'csv')")
    assert table.watermark.delay_micros == micros


def test_flink_tables_are_told_from_sparks_create_table():
    texts = [f"CREATE TABLE a (x INT) WITH ({FS})", f"create temporary table a (x INT) COMMENT 'c' WITH ({FS})",
             "CREATE TABLE b (x INT) USING parquet", "CREATE TABLE c AS SELECT 1", "CREATE TABLE d (x INT"]
    assert [is_create_table(split_statements(t)[0]) for t in texts] == [True, True, False, False, True]


@pytest.mark.parametrize(("columns", "match", "at"), [
    ("k INT, PRIMARY KEY (k)", "only PRIMARY KEY ... NOT ENFORCED", ") WITH"),
    ("k INT, PRIMARY KEY (z) NOT ENFORCED", "PRIMARY KEY column 'z' is not a column", "t"),
    ("k INT, WATERMARK FOR k AS k", "must be TIMESTAMP\\(p\\) or TIMESTAMP_LTZ\\(p\\), not INT", "WATERMARK"),
    ("k INT, WATERMARK FOR ts AS ts", "WATERMARK column 'ts' is not a column", "WATERMARK"),
    ("ts TIMESTAMP(3), PRIMARY KEY (ts) NOT ENFORCED, WATERMARK FOR ts AS ts", "also a PRIMARY KEY column", "WATERMARK"),
    ("k INT, k STRING", "duplicate column 'k'", "k STRING"),
    ("k INT PRIMARY KEY NOT ENFORCED, PRIMARY KEY (k) NOT ENFORCED", "one PRIMARY KEY", "PRIMARY KEY (k)"),
    ("k INT,", "expected a column, PRIMARY KEY or WATERMARK", ")"),
    ("k INT j INT", "expected ',' or '\\)', found 'j'", "j INT"),
    ("c AS k + 1", "at least one physical column", "t"),
    ("ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' FORTNIGHT", "watermark delay", "'5'"),
    ("ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '0.0000001' SECOND", "watermark delay", "'0.0000001'"),
    ("ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1.5' MINUTE", "watermark delay", "'1.5'"),
])
def test_column_list_errors_name_their_position(columns, match, at):
    text = f"CREATE TABLE t ({columns}) WITH ({FS}, 'format' = 'csv')"
    if at == "t":
        _fails_at_name(text, match)
    else:
        _fails(text, match, at)


def _fails_at_name(text: str, match: str):
    with pytest.raises(QuerySyntaxError, match=match) as error:
        _table(text)
    assert error.value.position == text.index("t (")


@pytest.mark.parametrize(("tail", "match", "at"), [
    ("PARTITIONED BY (k) WITH ('connector' = 'filesystem')", "PARTITIONED BY is not supported", "PARTITIONED"),
    ("WITH ('connector' = 'filesystem', 'connector' = 'kafka')", "option 'connector' is given twice", "'connector'"),
    ("WITH ('connector' 'filesystem')", "expected '='", "'filesystem'"),
    ("WITH ('connector' = 'filesystem') EXTRA", "unexpected 'EXTRA'", "EXTRA"),
])
def test_table_tail_errors_name_their_position(tail, match, at):
    text = f"CREATE TABLE t (k INT) {tail}"
    with pytest.raises(QuerySyntaxError, match=match) as error:
        _table(text)
    position = text.index(at) if at != "'connector'" else text.index(at, text.index(at) + 1)
    assert error.value.position == position


def test_an_unclosed_column_list_points_at_its_parenthesis():
    text = "CREATE TABLE t (k INT WITH ('connector' = 'filesystem')"
    with pytest.raises(QuerySyntaxError, match="unclosed") as error:
        _table(text)
    assert error.value.position == text.index("(")


# --- connector options -----------------------------------------------------------------------------------------

def test_csv_options_map_to_sparks_reader_options():
    source = source_of(_table(f"""CREATE TABLE t (a INT) WITH ({FS}, 'format' = 'csv', 'csv.field-delimiter' = '|',
        'csv.quote-character' = '''', 'csv.allow-comments' = 'true', 'csv.ignore-parse-errors' = 'true',
        'csv.escape-character' = '\\\\', 'csv.null-literal' = 'n/a', 'csv.disable-quote-character' = 'false')"""))
    assert source.path == "/data/x" and source.spark_format == "csv"
    assert dict(source.reader_options) == {"header": "false", "mode": "PERMISSIVE", "sep": "|", "quote": "'",
                                           "comment": "#", "escape": "\\", "nullValue": "n/a"}


def test_json_and_changelog_format_options():
    source = source_of(_table(f"CREATE TABLE t (a INT) WITH ({FS}, 'format' = 'json', "
                              "'json.timestamp-format.standard' = 'ISO-8601', 'json.fail-on-missing-field' = 'false')"))
    assert dict(source.reader_options) == {"mode": "FAILFAST"}
    canal = source_of(_table(f"CREATE TABLE t (a INT, db STRING METADATA FROM 'value.database', f STRING METADATA "
                             f"FROM 'file.path') WITH ({FS}, 'format' = 'canal-json', 'canal-json.table.include' = "
                             "'orders_.*')"))
    assert canal.changelog == "canal-json" and canal.table_include == "orders_.*"
    assert canal.metadata == (("db", ("envelope", "database")), ("f", ("file", "file_path")))
    debezium = source_of(_table(f"CREATE TABLE t (a INT) WITH ({FS}, 'format' = 'debezium-json', "
                                "'debezium-json.schema-include' = 'true')"))
    assert debezium.schema_include is True
    assert dict(source_of(_table(f"CREATE TABLE t (a INT) WITH ({FS}, 'format' = 'parquet')")).reader_options) == {}


@pytest.mark.parametrize(("options", "match", "at"), [
    ("'connector' = 'jdbc'", "connector 'jdbc' is not supported", "'jdbc'"),
    ("'connector' = 'filesystem', 'format' = 'csv'", "option 'path' is required", "t ("),
    (f"{FS}, 'format' = 'avro'", "format 'avro' is not supported", "'avro'"),
    (f"{FS}, 'format' = 'csv', 'csv.array-element-delimiter' = ';'", "option 'csv.array-element-delimiter' is not "
     "supported for the filesystem connector with format 'csv'", "'csv.array-element-delimiter'"),
    (f"{FS}, 'format' = 'csv', 'json.ignore-parse-errors' = 'true'", "option 'json.ignore-parse-errors' is not "
     "supported", "'json.ignore-parse-errors'"),
    (f"{FS}, 'format' = 'csv', 'sink.rolling-policy.file-size' = '1MB'", "option 'sink.rolling-policy.file-size'",
     "'sink.rolling-policy.file-size'"),
    (f"{FS}, 'format' = 'json', 'json.ignore-parse-errors' = 'yes'", "takes 'true' or 'false'", "'yes'"),
    (f"{FS}, 'format' = 'json', 'json.fail-on-missing-field' = 'true'", "is not supported", "'true'"),
    (f"{FS}, 'format' = 'json', 'json.timestamp-format.standard' = 'RFC'", "takes 'SQL' or 'ISO-8601'", "'RFC'"),
    ("'format' = 'csv'", "option 'connector' is required", "t ("),
])
def test_unsupported_options_fail_naming_the_option_and_its_position(options, match, at):
    _fails(f"CREATE TABLE t (a INT) WITH ({options})", match, at)


def test_metadata_a_format_cannot_read_fails_at_its_column():
    _fails(f"CREATE TABLE t (a INT, m STRING METADATA FROM 'value.source.timestamp') WITH ({FS}, 'format' = 'csv')",
           "metadata key 'value.source.timestamp' is not readable with format 'csv'", "m STRING")


KAFKA = "'connector' = 'kafka', 'topic' = 'a;b', 'properties.bootstrap.servers' = 'k1:9092,k2:9092', 'format' = 'json'"


def test_kafka_options_map_to_sparks_kafka_source_options():
    source = source_of(_table(f"""CREATE TABLE t (a INT) WITH ({KAFKA}, 'properties.group.id' = 'g',
        'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '1577869200000',
        'scan.bounded.mode' = 'latest-offset')"""))
    assert isinstance(source, KafkaSource) and source.value_format == "json" and not source.upsert
    assert dict(source.options) == {"subscribe": "a,b", "kafka.bootstrap.servers": "k1:9092,k2:9092",
                                    "kafka.group.id": "g", "startingTimestamp": "1577869200000",
                                    "endingOffsets": "latest"}


def test_kafka_specific_offsets_and_topic_pattern():
    source = source_of(_table("""CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'topic' = 'orders',
        'properties.bootstrap.servers' = 'k:9092', 'value.format' = 'csv',
        'scan.startup.mode' = 'specific-offsets', 'scan.startup.specific-offsets' = 'partition:0,offset:42;partition:1,offset:300')"""))
    options = dict(source.options)
    assert json.loads(options["startingOffsets"]) == {"orders": {"0": 42, "1": 300}}
    pattern = source_of(_table("CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'topic-pattern' = 'orders-.*', "
                               "'properties.bootstrap.servers' = 'k:9092', 'format' = 'json', "
                               "'scan.startup.mode' = 'earliest-offset')"))
    assert dict(pattern.options) == {"subscribePattern": "orders-.*", "kafka.bootstrap.servers": "k:9092",
                                     "startingOffsets": "earliest"}


def test_upsert_kafka_reads_from_the_start_keyed_by_the_primary_key():
    source = source_of(_table("""CREATE TABLE t (k STRING, v INT, PRIMARY KEY (k) NOT ENFORCED) WITH (
        'connector' = 'upsert-kafka', 'topic' = 'kv', 'properties.bootstrap.servers' = 'k:9092',
        'key.format' = 'json', 'value.format' = 'json', 'value.fields-include' = 'EXCEPT_KEY')"""))
    assert source.upsert and source.key_fields == ("k",) and source.value_fields_include == "EXCEPT_KEY"
    assert dict(source.options)["startingOffsets"] == "earliest"


@pytest.mark.parametrize(("options", "match", "at"), [
    (f"{KAFKA}, 'scan.startup.mode' = 'group-offsets'", "group-offsets' is not supported", "'group-offsets'"),
    (f"{KAFKA}, 'properties.auto.offset.reset' = 'earliest'", "set by Spark's Kafka source itself",
     "'properties.auto.offset.reset'"),
    (f"{KAFKA}, 'scan.startup.timestamp-millis' = '5'", "needs 'scan.startup.mode' = 'timestamp'",
     "'scan.startup.timestamp-millis'"),
    (f"{KAFKA}, 'sink.partitioner' = 'fixed'", "option 'sink.partitioner' is not supported for connector 'kafka'",
     "'sink.partitioner'"),
    (f"{KAFKA}, 'scan.startup.mode' = 'specific-offsets', 'scan.startup.specific-offsets' = 'p0'",
     "'scan.startup.mode' = 'specific-offsets' needs", "'specific-offsets'"),
    ("'connector' = 'kafka', 'topic' = 't', 'format' = 'json'", "'properties.bootstrap.servers' is required", "t ("),
    ("'connector' = 'upsert-kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'k', 'value.format' = 'json'",
     "'key.format' is required", "t ("),
])
def test_kafka_option_errors_name_their_position(options, match, at):
    _fails(f"CREATE TABLE t (a INT) WITH ({options})", match, at)


# --- CREATE VIEW -----------------------------------------------------------------------------------------------

SEED_004_VIEW = """CREATE VIEW versioned_rates AS
SELECT currency, rate, update_time              -- (1) `update_time` keeps the event time
  FROM (
      SELECT *,
      ROW_NUMBER() OVER (PARTITION BY currency  -- (2) the inferred unique key `currency` can be a primary key
         ORDER BY update_time DESC) AS rownum
      FROM currency_rates)
WHERE rownum = 1"""


def test_seed_004_versioned_view_is_recognised():
    statement = split_statements(SEED_004_VIEW + ";")[0]
    assert is_create_view(statement)
    view = parse_create_view(statement)
    assert view.versioned.key == ("currency",) and view.versioned.time == "update_time"
    assert view.versioned.keep == "last"
    assert view.versioned.history.endswith("FROM currency_rates)") and "rownum = 1" not in view.versioned.history
    assert view.query.startswith("SELECT currency, rate")


@pytest.mark.parametrize(("query", "shape"), [
    ("SELECT a, t FROM (SELECT a, t, ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY t ASC) AS rn FROM h) x "
     "WHERE rn = 1", (("a", "b"), "t", "first")),
    ("SELECT * FROM (SELECT *, row_number() over (partition by `a` order by `t`) rn FROM h) AS x WHERE rn = 1",
     (("a",), "t", "first")),
    ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY t DESC) AS rn FROM h) WHERE rn <= 2", None),
    ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY t DESC) AS rn FROM h) WHERE rn = 1", None),
    ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY t DESC, s) AS rn FROM h) WHERE rn = 1", None),
    ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY t DESC) AS rn FROM h) WHERE rn = 1 AND a > 0",
     None),
    ("SELECT * FROM (SELECT *, RANK() OVER (PARTITION BY a ORDER BY t DESC) AS rn FROM h) WHERE rn = 1", None),
    ("SELECT a FROM h", None),
])
def test_versioned_view_shapes_and_plain_views(query, shape):
    view = parse_create_view(split_statements(f"CREATE TEMPORARY VIEW v AS {query}")[0])
    got = None if view.versioned is None else (view.versioned.key, view.versioned.time, view.versioned.keep)
    assert got == shape


def test_views_spark_spells_its_own_way_pass_to_spark_and_head_errors_are_positioned():
    spark_views = ["CREATE OR REPLACE TEMP VIEW v AS SELECT 1", "CREATE GLOBAL TEMPORARY VIEW v AS SELECT 1"]
    assert not any(is_create_view(split_statements(t)[0]) for t in spark_views)
    text = "CREATE VIEW v (a, b) AS SELECT 1, 2"
    with pytest.raises(QuerySyntaxError, match="column list after the view name") as error:
        parse_create_view(split_statements(text)[0])
    assert error.value.position == text.index("(")
    with pytest.raises(QuerySyntaxError, match="expected the view's query"):
        parse_create_view(split_statements("CREATE VIEW v AS")[0])


def test_a_tab_delimiter_is_written_as_flink_writes_it():
    source = source_of(_table(f"CREATE TABLE t (a INT) WITH ({FS}, 'format' = 'csv', 'csv.field-delimiter' = '\\t')"))
    assert dict(source.reader_options)["sep"] == "\t"


def test_kafka_metadata_columns_and_headers():
    source = source_of(_table(f"CREATE TABLE t (a INT, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', h MAP<STRING, "
                              f"BYTES> METADATA FROM 'headers') WITH ({KAFKA})"))
    assert source.metadata == (("ts", "timestamp"), ("h", "headers")) and dict(source.options)["includeHeaders"] == "true"
    _fails(f"CREATE TABLE t (a INT, m STRING METADATA FROM 'file.path') WITH ({KAFKA})",
           "metadata key 'file.path' is not readable from Kafka", "m STRING")


def test_a_primary_key_on_a_computed_column_is_refused_at_the_column():
    text = f"CREATE TABLE t (a INT, c AS a + 1, PRIMARY KEY (c) NOT ENFORCED) WITH ({FS}, 'format' = 'csv')"
    with pytest.raises(QuerySyntaxError, match="not a physical column") as error:
        _table(text)
    assert error.value.position == text.index("c AS")
