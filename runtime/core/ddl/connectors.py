"""A DDL table's ``WITH`` options checked and mapped onto what Spark reads: a file source (path, Spark format,
reader options, the changelog format) or Kafka source options.

Every option is either mapped or refused: an unknown or unsupported option, connector or format is a
:class:`QuerySyntaxError` naming it at its position in the statement.  The mapping tables below are the
README's "Flink DDL" tables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from timeweave.core.ddl.table import CreateTable, MetadataColumn, Option

#: Flink's file formats and the Spark data source that reads them (the changelog formats are JSON lines).
FILE_FORMATS = {"csv": "csv", "json": "json", "parquet": "parquet", "debezium-json": "json", "canal-json": "json"}
CHANGELOG_FORMATS = ("debezium-json", "canal-json")

#: Flink format option (without the ``<format>.`` prefix) -> Spark reader option, per Spark data source.
#: A value of None: accepted, nothing to pass (Spark's default already reads what Flink reads).
_CSV_OPTIONS = {"field-delimiter": "sep", "quote-character": "quote", "escape-character": "escape",
                "null-literal": "nullValue", "allow-comments": "comment", "ignore-parse-errors": "mode",
                "disable-quote-character": "quote"}
_JSON_OPTIONS = {"ignore-parse-errors": "mode", "timestamp-format.standard": None, "fail-on-missing-field": None}
_CHANGELOG_OPTIONS = {"ignore-parse-errors": "mode", "timestamp-format.standard": None}
_DEBEZIUM_OPTIONS = {**_CHANGELOG_OPTIONS, "schema-include": None}
_CANAL_OPTIONS = {**_CHANGELOG_OPTIONS, "database.include": None, "table.include": None}
_FORMAT_OPTIONS = {"csv": _CSV_OPTIONS, "json": _JSON_OPTIONS, "parquet": {}, "debezium-json": _DEBEZIUM_OPTIONS,
                   "canal-json": _CANAL_OPTIONS}

#: Metadata keys of the changelog formats (bare or with Kafka's ``value.`` prefix) -> the JSON field holding it.
CHANGELOG_METADATA = {
    "debezium-json": {"ingestion-timestamp": "ts_ms", "source.timestamp": "source.ts_ms",
                      "source.database": "source.db", "source.table": "source.table"},
    "canal-json": {"ingestion-timestamp": "ts", "event-timestamp": "es", "database": "database", "table": "table"},
}


#: Flink's filesystem metadata keys (every format) -> fields of Spark's hidden ``_metadata`` file column.
FILE_METADATA = {"file.path": "file_path", "file.name": "file_name", "file.size": "file_size",
                 "file.modification-time": "file_modification_time"}


@dataclass(frozen=True)
class FileSource:
    """``'connector' = 'filesystem'``: what Spark reads and how.

    ``reader_options`` go to ``spark.read.options``; ``changelog`` is the changelog format or None;
    ``metadata`` maps each metadata column to where it is read: ``("file", <_metadata field>)`` or
    ``("envelope", <dotted JSON field of the changelog record>)``.
    """

    path: str
    format: str
    spark_format: str
    reader_options: tuple[tuple[str, str], ...]
    changelog: str | None = None
    schema_include: bool = False
    database_include: str | None = None
    table_include: str | None = None
    metadata: tuple[tuple[str, tuple[str, str]], ...] = ()


@dataclass(frozen=True)
class KafkaSource:
    """``'connector' = 'kafka' | 'upsert-kafka'``: Spark's Kafka source options and how values decode;
    ``metadata`` maps each metadata column to the Kafka source's column holding it."""

    options: tuple[tuple[str, str], ...]
    value_format: str
    key_format: str | None
    key_fields: tuple[str, ...]
    key_fields_prefix: str
    value_fields_include: str
    upsert: bool
    metadata: tuple[tuple[str, str], ...] = ()


def source_of(table: CreateTable) -> FileSource | KafkaSource:
    """The source ``table``'s options describe, every option checked.

    >>> from timeweave.core.ddl.script import split_statements
    >>> from timeweave.core.ddl.table import parse_create_table
    >>> t = parse_create_table(split_statements(
    ...     "CREATE TABLE t (a INT) WITH ('connector' = 'filesystem', 'path' = '/d', 'format' = 'csv', "
    ...     "'csv.field-delimiter' = ';')")[0])
    >>> source_of(t).reader_options
    (('header', 'false'), ('mode', 'FAILFAST'), ('sep', ';'))
    """
    connector = _required(table, "connector")
    if connector.value == "filesystem":
        return _file_source(table)
    if connector.value in ("kafka", "upsert-kafka"):
        return _kafka_source(table, upsert=connector.value == "upsert-kafka")
    raise table.error(f"connector '{connector.value}' is not supported (use 'filesystem', 'kafka' or "
                      "'upsert-kafka')", connector.value_position)


def _required(table: CreateTable, key: str) -> Option:
    option = table.option(key)
    if option is None:
        raise table.error(f"option '{key}' is required", table.position)
    return option


def _file_source(table: CreateTable) -> FileSource:
    path = _required(table, "path")
    fmt = _required(table, "format")
    if fmt.value not in FILE_FORMATS:
        raise table.error(f"format '{fmt.value}' is not supported by the filesystem connector here (use one of "
                          f"{sorted(FILE_FORMATS)})", fmt.value_position)
    reader: dict[str, str] = {}
    if fmt.value == "csv":
        reader["header"] = "false"  # Flink's CSV format reads no header line
    if fmt.value != "parquet":
        reader["mode"] = "FAILFAST"  # Flink fails on a row it cannot parse unless told to ignore it
    known = _FORMAT_OPTIONS[fmt.value]
    extra: dict[str, str] = {}
    for option in table.options:
        if option.key in ("connector", "path", "format"):
            continue
        prefix = fmt.value + "."
        if not option.key.startswith(prefix) or option.key[len(prefix):] not in known:
            raise table.error(_unsupported(option, f"the filesystem connector with format '{fmt.value}'",
                                           [prefix + k for k in known]), option.key_position)
        name = option.key[len(prefix):]
        spark_option = known[name]
        value = _translated(table, option, name)
        if spark_option is None:
            extra[name] = value
        elif value is not None:
            reader[spark_option] = value
    metadata = _changelog_metadata(table, fmt.value)
    return FileSource(
        path.value, fmt.value, FILE_FORMATS[fmt.value], tuple(reader.items()),
        changelog=fmt.value if fmt.value in CHANGELOG_FORMATS else None,
        schema_include=extra.get("schema-include") == "true",
        database_include=extra.get("database.include"), table_include=extra.get("table.include"),
        metadata=metadata,
    )


def _translated(table: CreateTable, option: Option, name: str) -> str | None:
    """The Spark value of a format option (None: nothing to set), refusing values Spark cannot honour."""
    value = option.value
    if name in ("ignore-parse-errors", "allow-comments", "disable-quote-character", "schema-include",
                "fail-on-missing-field"):
        if value.lower() not in ("true", "false"):
            raise table.error(f"option '{option.key}' takes 'true' or 'false', not '{value}'", option.value_position)
        flag = value.lower() == "true"
        if name == "ignore-parse-errors":
            return "PERMISSIVE" if flag else "FAILFAST"  # Spark's PERMISSIVE sets what it cannot parse to NULL
        if name == "allow-comments":
            return "#" if flag else None
        if name == "disable-quote-character":
            return "" if flag else None  # Spark's way to read without a quote character
        if name == "fail-on-missing-field" and flag:
            raise table.error(f"option '{option.key}' = 'true' is not supported (Spark reads a missing field as "
                              "NULL, as Flink's default does)", option.value_position)
        return "true" if flag else None
    if name == "timestamp-format.standard" and value not in ("SQL", "ISO-8601"):
        raise table.error(f"option '{option.key}' takes 'SQL' or 'ISO-8601', not '{value}'", option.value_position)
    return value


def _changelog_metadata(table: CreateTable, fmt: str) -> tuple[tuple[str, tuple[str, str]], ...]:
    fields = CHANGELOG_METADATA.get(fmt, {})
    out: list[tuple[str, tuple[str, str]]] = []
    for column in table.columns:
        if not isinstance(column, MetadataColumn):
            continue
        key = column.key.removeprefix("value.")
        if column.key in FILE_METADATA:
            out.append((column.name, ("file", FILE_METADATA[column.key])))
        elif key in fields:
            out.append((column.name, ("envelope", fields[key])))
        else:
            readable = sorted([*FILE_METADATA, *fields])
            raise table.error(f"metadata key '{column.key}' is not readable with format '{fmt}' (readable: "
                              f"{', '.join(readable)})", column.position)
    return tuple(out)


#: Flink's Kafka metadata keys -> columns of Spark's Kafka source (``headers`` needs ``includeHeaders``).
KAFKA_METADATA = {"topic": "topic", "partition": "partition", "offset": "offset", "timestamp": "timestamp",
                  "timestamp-type": "timestampType", "headers": "headers"}
#: Flink Kafka option -> Spark Kafka source option, for options that map one to one.
KAFKA_OPTIONS = {"topic": "subscribe", "topic-pattern": "subscribePattern"}
#: ``scan.startup.mode`` / ``scan.bounded.mode`` values -> Spark's starting / ending offsets.
_STARTUP = {"earliest-offset": "earliest", "latest-offset": "latest"}
_KAFKA_DECODING = ("format", "value.format", "key.format", "key.fields", "key.fields-prefix", "value.fields-include")
#: Consumer properties Spark's Kafka source sets itself and refuses (``kafka.<name>`` is an error there).
_SPARK_OWNED = ("auto.offset.reset", "enable.auto.commit", "key.deserializer", "value.deserializer",
                "interceptor.classes")


def _kafka_source(table: CreateTable, upsert: bool) -> KafkaSource:
    spark: dict[str, str] = {}
    connector = "upsert-kafka" if upsert else "kafka"
    by_key = {o.key: o for o in table.options}
    for option in table.options:
        key = option.key
        if key in ("connector", *_KAFKA_DECODING):
            continue
        if key in KAFKA_OPTIONS and not (upsert and key == "topic-pattern"):
            value = option.value
            spark[KAFKA_OPTIONS[key]] = ",".join(t.strip() for t in value.split(";")) if key == "topic" else value
        elif key.startswith("properties.") and len(key) > len("properties."):
            name = key[len("properties."):]
            if name in _SPARK_OWNED:
                raise table.error(f"option '{key}' is set by Spark's Kafka source itself and cannot be given",
                                  option.key_position)
            spark["kafka." + name] = option.value
        elif key == "scan.startup.mode" and not upsert:
            spark.update(_startup(table, option, by_key, "starting"))
        elif key == "scan.bounded.mode" and not upsert:
            if option.value != "unbounded":
                spark.update(_startup(table, option, by_key, "ending"))
        elif key in ("scan.startup.timestamp-millis", "scan.startup.specific-offsets", "scan.bounded.timestamp-millis",
                     "scan.bounded.specific-offsets") and not upsert:
            mode = by_key.get(key.rsplit(".", 1)[0] + ".mode")
            wanted = "timestamp" if key.endswith("timestamp-millis") else "specific-offsets"
            if mode is None or mode.value != wanted:
                raise table.error(f"option '{key}' needs '{key.rsplit('.', 1)[0]}.mode' = '{wanted}'", option.key_position)
        else:
            known = sorted([*KAFKA_OPTIONS, "properties.*", *_KAFKA_DECODING]
                           + ([] if upsert else ["scan.startup.mode", "scan.bounded.mode"]))
            raise table.error(_unsupported(option, f"connector '{connector}'", known), option.key_position)
    if not any(k in spark for k in ("subscribe", "subscribePattern")):
        raise table.error("option 'topic' (or 'topic-pattern') is required", table.position)
    if "kafka.bootstrap.servers" not in spark:
        raise table.error("option 'properties.bootstrap.servers' is required", table.position)
    if upsert:
        spark["startingOffsets"] = "earliest"  # upsert-kafka reads the topic from its start, as Flink does
    value_format = by_key.get("value.format") or by_key.get("format")
    if value_format is None:
        raise table.error("option 'value.format' (or 'format') is required", table.position)
    if value_format.value not in ("json", "csv", "raw", "debezium-json", "canal-json"):
        raise table.error(f"value format '{value_format.value}' is not supported", value_format.value_position)
    key_format = by_key.get("key.format")
    key_fields_option = by_key.get("key.fields")
    key_fields = tuple(f.strip() for f in key_fields_option.value.split(";")) if key_fields_option else ()
    if upsert:
        if key_format is None:
            raise table.error("option 'key.format' is required by 'upsert-kafka'", table.position)
        if not table.primary_key:
            raise table.error("'upsert-kafka' needs a PRIMARY KEY (the message key)", table.position)
        key_fields = table.primary_key
    for name in key_fields:
        if table.column(name) is None:
            raise table.error(f"key field {name!r} is not a column", key_fields_option.value_position
                              if key_fields_option else table.position)
    include = by_key.get("value.fields-include")
    include_value = include.value if include else "ALL"
    if include_value not in ("ALL", "EXCEPT_KEY"):
        raise table.error(f"'value.fields-include' takes 'ALL' or 'EXCEPT_KEY', not '{include_value}'",
                          include.value_position)
    metadata: list[tuple[str, str]] = []
    for column in table.columns:
        if isinstance(column, MetadataColumn):
            if column.key not in KAFKA_METADATA:
                raise table.error(f"metadata key '{column.key}' is not readable from Kafka (readable: "
                                  f"{', '.join(sorted(KAFKA_METADATA))})", column.position)
            metadata.append((column.name, KAFKA_METADATA[column.key]))
            if column.key == "headers":
                spark["includeHeaders"] = "true"
    prefix = by_key.get("key.fields-prefix")
    return KafkaSource(tuple(spark.items()), value_format.value, key_format.value if key_format else None,
                       key_fields, prefix.value if prefix else "", include_value, upsert, tuple(metadata))


def _startup(table: CreateTable, option: Option, by_key: dict[str, Option], side: str) -> dict[str, str]:
    """``scan.startup.*`` / ``scan.bounded.*`` as Spark's ``startingOffsets`` / ``endingOffsets`` (or timestamps)."""
    scan = "scan.startup" if side == "starting" else "scan.bounded"
    mode = option.value
    if mode in _STARTUP:
        return {f"{side}Offsets": _STARTUP[mode]}
    if mode == "timestamp":
        millis = by_key.get(f"{scan}.timestamp-millis")
        if millis is None or not millis.value.isdigit():
            raise table.error(f"'{scan}.mode' = 'timestamp' needs '{scan}.timestamp-millis' (milliseconds)",
                              option.value_position)
        return {f"{side}Timestamp": millis.value}
    if mode == "specific-offsets":
        offsets = by_key.get(f"{scan}.specific-offsets")
        topic = by_key.get("topic")
        if offsets is None or topic is None or ";" in topic.value:
            raise table.error(f"'{scan}.mode' = 'specific-offsets' needs '{scan}.specific-offsets' and one 'topic'",
                              option.value_position)
        return {f"{side}Offsets": json.dumps({topic.value: _specific_offsets(table, offsets)})}
    if mode == "group-offsets":
        raise table.error("'scan.startup.mode' = 'group-offsets' is not supported: Spark's Kafka source keeps its "
                          "offsets in the checkpoint, not in the consumer group", option.value_position)
    raise table.error(f"'{option.key}' = '{mode}' is not a Flink Kafka scan mode", option.value_position)


def _specific_offsets(table: CreateTable, option: Option) -> dict[str, int]:
    """Flink's ``partition:0,offset:42;partition:1,offset:300`` as ``{"0": 42, "1": 300}``."""
    out: dict[str, int] = {}
    for part in option.value.split(";"):
        fields = dict(f.split(":", 1) for f in part.split(",") if ":" in f)
        partition, offset = fields.get("partition", "").strip(), fields.get("offset", "").strip()
        if not partition.isdigit() or not offset.lstrip("-").isdigit():
            raise table.error(f"cannot read {part!r} of '{option.key}' (write partition:0,offset:42;...)",
                              option.value_position)
        out[partition] = int(offset)
    return out


def _unsupported(option: Option, what: str, known: list[str]) -> str:
    return f"option '{option.key}' is not supported for {what} (supported: {', '.join(known)})"


__all__ = ["CHANGELOG_FORMATS", "CHANGELOG_METADATA", "FILE_FORMATS", "FILE_METADATA", "KAFKA_METADATA", "KAFKA_OPTIONS", "FileSource", "KafkaSource",
           "source_of"]
