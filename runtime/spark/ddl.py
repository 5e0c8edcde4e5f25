"""Flink DDL on a Spark session: ``CREATE TABLE`` / ``CREATE VIEW`` statements (parsed by
:mod:`timeweave.core.ddl`) registered as temporary views, versioned ones where Flink's would be versioned.

* A table is a batch read of its source: ``filesystem`` paths in csv / json / parquet / debezium-json /
  canal-json, or Kafka (``spark.read.format("kafka")`` with the options :func:`timeweave.core.ddl.connectors.source_of`
  maps).  Its columns are the declared ones, in order: physical columns read with the declared types, metadata
  columns from the format's envelope or the file (``file.path``...), computed columns as Spark expressions.
* A changelog table (debezium-json, canal-json, upsert-kafka) has one row per change and a ``row_kind`` column
  (``+I`` / ``+U`` / ``-D``): an update is its new row (``+U``), a delete its old row (``-D``).  With a PRIMARY
  KEY and a WATERMARK it is a versioned table in the ``changelog`` format (a ``-D`` ends its key's version, as
  :mod:`timeweave.core.versioned` rules); an append table (csv, json, parquet, kafka) with both is a versioned
  table in the ``append`` format.
* A view of Flink's versioned-view shape (:mod:`timeweave.core.ddl.view`) reads as written (each key's kept
  row) and joins ``FOR SYSTEM_TIME AS OF`` against its versions; ``SELECT * FROM t`` over a versioned ``t`` is
  versioned as ``t`` is (the same key, time and versions); any other view is a plain temporary view.

Names are one part (temporary views); an existing name is an error unless ``IF NOT EXISTS`` (Flink's rule).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.ddl.connectors import FileSource, KafkaSource, source_of
from timeweave.core.ddl.table import ComputedColumn, CreateTable, MetadataColumn, PhysicalColumn
from timeweave.core.ddl.view import CreateView
from timeweave.core.errors import QuerySyntaxError
from timeweave.core.spec import VersionedTableSpec
from timeweave.core.sql_tokens import split_qualified_name
from timeweave.spark import render, sql_rewrite
from timeweave.spark.registration import (
    history_view_name,
    register_time_attributes,
    register_versioned,
    register_versioned_view,
    unregister_versioned,
    versioned_relation,
    versioned_spec,
)
from timeweave.spark.schema import column, schema_kinds

#: The change column of a changelog table: Flink's row kind of each row.
ROW_KIND = "row_kind"
#: Debezium's op codes and Canal's types as Flink's row kinds (an update is its new row, a delete its old one).
_DEBEZIUM_KINDS = {"c": "+I", "r": "+I", "u": "+U", "d": "-D"}
_CANAL_KINDS = {"INSERT": "+I", "UPDATE": "+U", "DELETE": "-D"}


def create_table(spark: Any, table: CreateTable, streaming: bool = False) -> DataFrame | None:
    """Register ``table`` as a temporary view (versioned when it has a PRIMARY KEY and a WATERMARK); its DataFrame.

    None when ``IF NOT EXISTS`` found the name taken.  ``streaming``: the view reads its source as a stream
    (``spark.readStream``: a Flink SQL script in streaming mode); its WATERMARK and PROCTIME() columns are
    remembered either way (:func:`timeweave.spark.registration.time_attributes`).

    Example::

        from timeweave.core.ddl.script import split_statements
        from timeweave.core.ddl.table import parse_create_table
        create_table(spark, parse_create_table(split_statements(ddl_text)[0]))
    """
    name = _view_name(table.name, table.error, table.position)
    if _exists(spark, name, table.if_not_exists, table.error, table.position):
        return None
    source = source_of(table)
    if any(c.name == ROW_KIND for c in table.columns) and _is_changelog(source):
        raise table.error(f"a changelog table carries its own '{ROW_KIND}' column; rename the column",
                          table.column(ROW_KIND).position)
    reader = spark.readStream if streaming else spark.read
    df = _file_table(reader, table, source) if isinstance(source, FileSource) else _kafka_table(reader, table, source)
    watermark = table.watermark
    register_time_attributes(
        spark, name, None if watermark is None or watermark.delay_micros is None
        else (watermark.column, watermark.delay_micros), table.proctime_columns)
    if table.versioned:
        changelog = _is_changelog(source)
        spec = VersionedTableSpec(
            table.primary_key, table.watermark.column, "changelog" if changelog else "append",
            op=ROW_KIND if changelog else None, where=f"CREATE TABLE {name}",
        ).bind(schema_kinds(df.schema))
        register_versioned(spark, name, df, spec)
    else:
        unregister_versioned(spark, name)
        df.createOrReplaceTempView(name)
    return df


def create_view(spark: Any, view: CreateView) -> DataFrame | None:
    """Register ``view`` as a temporary view, versioned when it has Flink's versioned-view shape; its DataFrame.

    Example::

        from timeweave.core.ddl.script import split_statements
        from timeweave.core.ddl.view import parse_create_view
        create_view(spark, parse_create_view(split_statements("CREATE VIEW v AS SELECT ...")[0]))
    """
    name = _view_name(view.name, lambda m, p: _view_error(view, m, p), view.position)
    if _exists(spark, name, view.if_not_exists, lambda m, p: _view_error(view, m, p), view.position):
        return None
    df = sql_rewrite.run(spark, view.query)
    shape = view.versioned
    if shape is None and view.selects_all_of is not None:
        source = versioned_spec(spark, view.selects_all_of)
        if source is not None:
            # `SELECT * FROM t` keeps t's primary key and time attribute (Flink's rule): versioned as t is
            spec = replace(source, where=f"CREATE VIEW {name}")
            hidden = versioned_relation(spark, view.selects_all_of)
            if hidden is None:
                register_versioned(spark, name, df, spec.bind(schema_kinds(df.schema)))
            else:
                history = spark.table(render.quote(hidden))
                register_versioned_view(spark, name, df, history, spec.bind(schema_kinds(history.schema)))
            return df
    if shape is None:
        unregister_versioned(spark, name)
        df.createOrReplaceTempView(name)
        return df
    # keep-last: the versions are every row of the relation; keep-first: each key's first row is its one version
    history = sql_rewrite.run(spark, shape.history) if shape.keep == "last" else df
    spec = VersionedTableSpec(shape.key, shape.time, where=f"CREATE VIEW {name}").bind(schema_kinds(history.schema))
    register_versioned_view(spark, name, df, history, spec)
    return df


def drop_declared(spark: Any, name: str) -> None:
    """Forget a table or view :func:`create_table` / :func:`create_view` registered: the temporary view, its versions
    and its time attributes (a script's tables live for the script's run).

    Example::

        drop_declared(spark, "rates")
    """
    name = _view_name(name, lambda m, p: QuerySyntaxError(m, text=name, position=p), 0)
    spark.catalog.dropTempView(name)
    spark.catalog.dropTempView(history_view_name(name))
    unregister_versioned(spark, name)
    register_time_attributes(spark, name, None, ())


def _view_error(view: CreateView, message: str, position: int) -> QuerySyntaxError:
    return QuerySyntaxError(f"CREATE VIEW {view.name}: {message}", text=view.script, position=position)


def _view_name(written: str, error, position: int) -> str:
    parts = split_qualified_name(written)
    if len(parts) != 1:
        raise error(f"'{written}' names a catalog object; timeweave registers DDL tables and views as temporary "
                    "views, which have one-part names", position)
    return parts[0]


def _exists(spark: Any, name: str, if_not_exists: bool, error, position: int) -> bool:
    if not spark.catalog.tableExists(render.quote(name)):
        return False
    if if_not_exists:
        return True
    raise error(f"'{name}' already exists (drop it first: DROP VIEW {name}; or write IF NOT EXISTS)", position)


def _is_changelog(source: FileSource | KafkaSource) -> bool:
    return (isinstance(source, FileSource) and source.changelog is not None) or (
        isinstance(source, KafkaSource) and source.upsert)


def _schema_ddl(columns: list[PhysicalColumn], as_text: bool = False) -> str:
    """Spark DDL of ``columns`` (names quoted); with ``as_text`` every scalar column is read as STRING (then cast)."""
    return ", ".join(f"{render.quote(c.name)} {_read_type(c, as_text)}" for c in columns)


def _read_type(c: PhysicalColumn, as_text: bool) -> str:
    nested = c.type.spark.startswith(("ARRAY<", "MAP<", "STRUCT<"))
    return "STRING" if as_text and not nested else c.type.spark


def _file_table(reader: Any, table: CreateTable, source: FileSource) -> DataFrame:
    physical = list(table.physical)
    reader = reader.format(source.spark_format).options(**dict(source.reader_options))
    if source.changelog is None:
        df = reader.schema(_schema_ddl(physical)).load(source.path)
        base = {c.name: column(c.name) for c in physical}
        rows = df
    else:
        rows, base = _changelog_rows(reader, table, source, physical)
    for c in table.columns:
        if isinstance(c, MetadataColumn):
            base[c.name] = _metadata_value(table, source, c).cast(c.type.spark)
    return _declared(rows, table, base, changelog=source.changelog is not None)


def _changelog_rows(reader, table: CreateTable, source: FileSource, physical: list[PhysicalColumn]):
    """The change rows of a debezium-json / canal-json file: one row per changed row, its image's columns."""
    image = f"STRUCT<{', '.join(f'{render.quote(c.name)}: {_read_type(c, True)}' for c in physical)}>"
    if source.changelog == "debezium-json":
        df = reader.schema(_debezium_schema(image, source.schema_include)).load(source.path)
        if source.schema_include:
            df = df.select("payload.*")
        kind = F.coalesce(*[F.when(F.col("op") == op, F.lit(k)) for op, k in _DEBEZIUM_KINDS.items()], F.col("op"))
        rows = df.withColumn(ROW_KIND, kind).withColumn(
            "__tw_image", F.when(F.col(ROW_KIND) == "-D", F.col("before")).otherwise(F.col("after")))
    else:
        df = reader.schema(f"data ARRAY<{image}>, type STRING, database STRING, `table` STRING, ts BIGINT, "
                           "es BIGINT").load(source.path)
        if source.database_include:
            df = df.where(F.col("database").rlike(f"^(?:{source.database_include})$"))
        if source.table_include:
            df = df.where(F.col("table").rlike(f"^(?:{source.table_include})$"))
        kind = F.coalesce(*[F.when(F.col("type") == t, F.lit(k)) for t, k in _CANAL_KINDS.items()], F.col("type"))
        rows = df.withColumn(ROW_KIND, kind).withColumn("__tw_image", F.explode("data"))
    lenient = dict(source.reader_options).get("mode") == "PERMISSIVE"
    base = {c.name: _typed(F.col("__tw_image").getField(c.name), c, lenient) for c in physical}
    return rows, base


def _debezium_schema(image: str, schema_include: bool) -> str:
    fields = [("before", image), ("after", image), ("op", "STRING"), ("ts_ms", "BIGINT"),
              ("source", "STRUCT<ts_ms: BIGINT, db: STRING, `table`: STRING>")]
    if schema_include:
        return f"payload STRUCT<{', '.join(f'{n}: {t}' for n, t in fields)}>"
    return ", ".join(f"{n} {t}" for n, t in fields)


def _typed(value: Column, c: PhysicalColumn, lenient: bool) -> Column:
    """A changelog field read as text, cast to its declared type (Flink's JSON reads "1.5" into a DECIMAL too);
    ``lenient`` (``ignore-parse-errors``): a value that does not cast is NULL, as Spark's PERMISSIVE mode reads."""
    if _read_type(c, True) != "STRING" or c.type.spark == "STRING":
        return value
    return value.try_cast(c.type.spark) if lenient else value.cast(c.type.spark)


def _metadata_value(table: CreateTable, source: FileSource, c: MetadataColumn) -> Column:
    where, field = dict(source.metadata)[c.name]
    if where == "file":
        return F.col("_metadata").getField(field)
    value = F.col(field.split(".")[0])
    for part in field.split(".")[1:]:
        value = value.getField(part)
    if c.key.endswith("timestamp"):
        return F.timestamp_millis(value)  # epoch milliseconds in both envelopes: an instant, TIMESTAMP_LTZ(3)
    return value


def _declared(rows: DataFrame, table: CreateTable, base: dict[str, Column], changelog: bool) -> DataFrame:
    """The declared columns in order (computed ones over the physical and metadata columns), and the row kind."""
    selected: list[Column] = []
    for c in table.columns:
        if isinstance(c, ComputedColumn):
            selected.append(F.expr(c.expression).alias(c.name))
        else:
            selected.append(base[c.name].alias(c.name))
    if changelog:
        selected.append(F.col(ROW_KIND))
    if not any(isinstance(c, ComputedColumn) for c in table.columns):
        return rows.select(*selected)
    # computed columns name the physical and metadata columns, so those are projected first, by name
    named = rows.select(*[v.alias(n) for n, v in base.items()], *([F.col(ROW_KIND)] if changelog else []))
    return named.select(*[
        F.expr(c.expression).alias(c.name) if isinstance(c, ComputedColumn) else column(c.name) for c in table.columns
    ], *([F.col(ROW_KIND)] if changelog else []))


def _kafka_table(reader: Any, table: CreateTable, source: KafkaSource) -> DataFrame:
    records = reader.format("kafka").options(**dict(source.options)).load()
    return decode_kafka(records, table, source)


def decode_kafka(records: DataFrame, table: CreateTable, source: KafkaSource) -> DataFrame:
    """A Kafka source's records (``key``, ``value``, ``topic``... as Spark's Kafka source gives them) as the table's
    declared columns: the value decoded by its format, key fields from the key, metadata from the record.

    An ``upsert-kafka`` table's records with a NULL value (tombstones) are deletes of their key: ``row_kind`` ``-D``,
    the others ``+U``.

    Example::

        decode_kafka(spark.read.format("kafka").options(**dict(source.options)).load(), table, source)
    """
    physical = list(table.physical)
    key_columns = [c for c in physical if c.name in source.key_fields]
    value_columns = [c for c in physical if source.value_fields_include == "ALL" or c.name not in source.key_fields]
    if source.value_format not in ("json", "csv"):
        raise table.error(f"value format '{source.value_format}' is not decoded here (use 'json' or 'csv')",
                          table.option("value.format").value_position if table.option("value.format")
                          else table.position)
    value = _decode(F.col("value").cast("string"), source.value_format, value_columns)
    base: dict[str, Column] = {c.name: value.getField(c.name) for c in value_columns}
    if key_columns:
        if source.key_format not in ("json", "csv"):
            raise table.error(f"key format '{source.key_format}' is not decoded here (use 'json' or 'csv')",
                              table.position)
        prefix = source.key_fields_prefix
        stripped = [PhysicalColumn(c.name.removeprefix(prefix), c.type, c.position) for c in key_columns]
        key = _decode(F.col("key").cast("string"), source.key_format, stripped)
        for c, s in zip(key_columns, stripped, strict=True):
            base[c.name] = key.getField(s.name)
    fields = dict(source.metadata)
    for c in table.columns:
        if isinstance(c, MetadataColumn):
            base[c.name] = F.col(fields[c.name]).cast(c.type.spark)
    rows = records
    if source.upsert:
        rows = records.withColumn(ROW_KIND, F.when(F.col("value").isNull(), F.lit("-D")).otherwise(F.lit("+U")))
    return _declared(rows, table, base, changelog=source.upsert)


def _decode(text: Column, fmt: str, columns: list[PhysicalColumn]) -> Column:
    schema = T.StructType.fromDDL(_schema_ddl(columns)) if columns else T.StructType([])
    if fmt == "json":
        return F.from_json(text, schema, {"mode": "FAILFAST"})
    return F.from_csv(text, _schema_ddl(columns), {"mode": "FAILFAST"})


__all__ = ["ROW_KIND", "create_table", "create_view", "decode_kafka", "drop_declared"]
