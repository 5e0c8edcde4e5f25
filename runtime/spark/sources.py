"""File sources read by timeweave's jobs: malformed records go to the dead letter, never become NULLs.

Spark's CSV and JSON readers turn a field they cannot parse into NULL (``price = sixty``, a time
``yesterday``) and a CSV record with an added or missing field into shifted or NULL columns, silently.
:func:`read_source` reads a CSV / JSON source in ``PERMISSIVE`` mode with a hidden corrupt-record column,
and tags every record Spark flagged: ``__tw_malformed`` is its reason (:mod:`timeweave.core.bad_rows`:
wrong column count, or the column and type whose value did not parse) and ``__tw_bad_row`` its dead-letter
``row``: the record's fields as the text read, plus the raw record under ``_corrupt_record``.
:func:`split_malformed` splits such a frame into the rows the door uses and the dead letter (``side``,
``reason``, ``row``: the layout of every door's dead letter).  Parquet sources carry their own types and
are read as they are.

The reason expression reads every typed column: Spark converts only the columns a query needs, so a
record's corrupt flag would depend on the query (a count over the time column would pass ``price =
sixty``).  Any query that filters on ``__tw_malformed`` needs them all, and every query sees the same
malformed rows (a CSV record's field count included: with all columns needed, column pruning parses
every field).

Example::

    df = read_source(spark.readStream, "csv", "id STRING, price DOUBLE, t TIMESTAMP", {"header": "true"}, "in/")
    good, dead = split_malformed(df, "left")   # good: the schema's columns; dead: side, reason, row
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core import bad_rows
from timeweave.core.errors import SpecError
from timeweave.spark.schema import column as named

#: The hidden corrupt-record column the reader fills (Spark's ``columnNameOfCorruptRecord``).
CORRUPT = "__tw_corrupt_record"
#: The reason a record is malformed (NULL for every well-formed record).
MALFORMED = "__tw_malformed"
#: A malformed record's dead-letter ``row`` (NULL for every well-formed record).
BAD_ROW = "__tw_bad_row"
_TEXT_CHECK = "__tw_text_corrupt"
# Reader options the text re-parse (from_csv / from_json of the raw record) has no use for.
_READER_ONLY = frozenset(o.lower() for o in (
    "header", "enforceSchema", "inferSchema", "samplingRatio", "mode", "columnNameOfCorruptRecord", "path",
    "pathGlobFilter", "recursiveFileLookup", "modifiedBefore", "modifiedAfter", "maxFilesPerTrigger",
    "maxBytesPerTrigger", "latestFirst", "fileNameOnly", "maxFileAge", "cleanSource", "sourceArchiveDir",
    "multiLine", "encoding", "charset", "lineSep",
))


def read_source(reader: Any, file_format: str, schema: str, options: Mapping[str, str], path: str) -> DataFrame:
    """``reader`` (``spark.read`` or ``spark.readStream``) over ``path`` with ``schema``; CSV / JSON records
    tagged with :data:`MALFORMED` and :data:`BAD_ROW` (see the module docstring).

    A ``mode`` other than ``PERMISSIVE`` is refused for CSV / JSON (``DROPMALFORMED`` loses rows silently;
    ``FAILFAST`` stops the job on the first bad record instead of dead-lettering it), as is a
    ``columnNameOfCorruptRecord`` of the user's own.

    Example::

        df = read_source(spark.read, "json", "k STRING, t TIMESTAMP, v INT", {}, "in/")
        df.where("__tw_malformed IS NOT NULL").select("__tw_malformed", "__tw_bad_row").show()
    """
    user = reader.format(file_format).schema(schema).options(**dict(options))
    if file_format not in bad_rows.TEXT_FORMATS:
        return user.load(path)
    bad_rows.check_reader_options(file_format, options, f"{file_format} source {path}")
    fields = user.load(path).schema.fields  # the parsed DDL (no file is read: the schema is given)
    reserved = {n.lower() for n in (CORRUPT, MALFORMED, BAD_ROW, bad_rows.RAW_FIELD, _TEXT_CHECK)}
    for field in fields:
        if field.name.lower() in reserved:  # Spark resolves names case-insensitively
            raise SpecError("schema", f"column '{field.name}' is reserved for malformed records; rename it",
                            where=f"{file_format} source {path}")
    full = T.StructType([*fields, T.StructField(CORRUPT, T.StringType())])
    df = (reader.format(file_format).schema(full).options(**dict(options))
          .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT).load(path))
    return tag_malformed(df, T.StructType(list(fields)), file_format, options)


def tag_malformed(df: DataFrame, schema: T.StructType, file_format: str, options: Mapping[str, str]) -> DataFrame:
    """``df`` (``schema``'s columns and :data:`CORRUPT`) as ``schema``'s columns, :data:`MALFORMED` and :data:`BAD_ROW`."""
    raw = F.col(CORRUPT)
    texts = T.StructType([T.StructField(f.name, T.StringType()) for f in schema.fields]
                         + [T.StructField(_TEXT_CHECK, T.StringType())])
    parse_options = {k: str(v) for k, v in options.items() if k.lower() not in _READER_ONLY}
    parse_options |= {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _TEXT_CHECK}
    # from_csv takes its schema as DDL text (a literal column: names quoted, so any name parses).
    text = (F.from_csv(raw, F.lit(texts.toDDL()), parse_options) if file_format == "csv"
            else F.from_json(raw, texts, parse_options))
    # Every field is a string here, so a record the text parse flags is malformed as a whole: a CSV record
    # with a wrong field count, a JSON text that is no JSON object.
    whole = (bad_rows.wrong_column_count(len(schema.fields)) if file_format == "csv"
             else bad_rows.unreadable_record(file_format))
    # Every column is checked, strings too (their text and value are NULL together, so they never fire):
    # the filter on the reason then needs every column, and Spark converts them all (module docstring).
    unparsable = [
        F.when(text.getField(f.name).isNotNull() & named(f.name).isNull(),
               F.lit(bad_rows.unparsable_value(f.name, f.dataType.simpleString().upper())))
        for f in schema.fields
    ]
    # The fallback reads `raw` (NULL-able to Spark, though never NULL here): were the reason provably
    # non-NULL for a corrupt record, Spark would reduce `reason IS NULL` to `raw IS NULL` and drop the
    # column checks, and with them the conversions that decide whether a record is corrupt.
    fallback = F.concat(F.lit(bad_rows.MALFORMED_RECORD), F.substring(raw, 1, 0))
    fields_reason = F.coalesce(F.nullif(F.concat_ws("; ", *unparsable), F.lit("")), fallback)
    reason = F.when(raw.isNull(), F.lit(None).cast("string")).when(
        text.isNull() | text.getField(_TEXT_CHECK).isNotNull(), F.lit(whole)
    ).otherwise(fields_reason)
    bad_row = F.when(raw.isNotNull(), F.to_json(F.struct(
        *[text.getField(f.name).alias(f.name) for f in schema.fields], raw.alias(bad_rows.RAW_FIELD)
    )))
    return df.select(*[named(f.name) for f in schema.fields], reason.alias(MALFORMED), bad_row.alias(BAD_ROW))


def is_tagged(df: DataFrame) -> bool:
    """Whether ``df`` came from :func:`read_source` with malformed-record tags (a CSV / JSON source)."""
    return MALFORMED in df.columns and BAD_ROW in df.columns


def split_malformed(df: DataFrame, side: str) -> tuple[DataFrame, DataFrame | None]:
    """(well-formed rows with the source's columns only, dead letter ``side``/``reason``/``row`` of the rest).

    An untagged ``df`` (parquet) passes whole, with an empty dead letter (None for a stream: no empty
    stream to give).  Both are lazy and work on streams.

    Example::

        orders, rejected = split_malformed(read_source(spark.read, "csv", schema, opts, "in/"), "left")
    """
    if not is_tagged(df):
        empty = df.sparkSession.createDataFrame([], "side STRING, reason STRING, row STRING") if not df.isStreaming \
            else None
        return df, empty
    columns = [named(c) for c in df.columns if c not in (MALFORMED, BAD_ROW)]
    good = df.where(F.col(MALFORMED).isNull()).select(*columns)
    dead = df.where(F.col(MALFORMED).isNotNull()).select(
        F.lit(side).alias("side"), F.col(MALFORMED).alias("reason"), F.col(BAD_ROW).alias("row")
    )
    return good, dead


@dataclass
class MalformedSource:
    """A source's tagged frame (:func:`read_source`) behind the well-formed rows a job hands an operator: an
    operator whose input projection reads the tagged frame itself (:func:`timeweave.spark.host.stream.keyed_packs`)
    routes the malformed records through its own dead letters, in the same scan as the rows, and sets
    ``consumed``; the job then adds no second scan of the source for them (see :func:`carry_malformed`)."""

    tagged: DataFrame
    side: str
    consumed: bool = False


_CARRIED = "_tw_malformed_source"


def carry_malformed(good: DataFrame, tagged: DataFrame, side: str) -> MalformedSource:
    """Attach ``tagged`` (the frame ``good`` was split from, :func:`split_malformed`) to ``good``; the returned
    record says whether an operator took the malformed records (``consumed``).  Only an operator handed this very
    ``good`` object (no projection in between) can see it: any other keeps the job's separate dead-letter branch."""
    source = MalformedSource(tagged, side)
    setattr(good, _CARRIED, source)
    return source


def malformed_source(df: DataFrame) -> MalformedSource | None:
    """The :class:`MalformedSource` attached to ``df`` by :func:`carry_malformed`, if any."""
    source = getattr(df, _CARRIED, None)
    return source if isinstance(source, MalformedSource) else None


def take_malformed(df: DataFrame) -> tuple[DataFrame, Column | None, Column | None]:
    """``(frame, reason, row)`` for an operator's one input projection over ``df`` (see :func:`carry_malformed`).

    When a tagged source is attached to ``df``, ``frame`` is that tagged frame (the projection reads it instead
    of ``df``: every column of ``df`` is there by name), ``reason`` / ``row`` are its malformed records' reason
    and dead-letter row (NULL for a well-formed record), and the source is marked consumed; otherwise ``(df,
    None, None)`` and the job keeps its separate dead-letter branch for the source.
    """
    carried = malformed_source(df)
    if carried is None:
        return df, None, None
    carried.consumed = True
    return carried.tagged, F.col(MALFORMED), F.col(BAD_ROW)


def as_tagged_dead(dead: DataFrame, schema: T.StructType, columns: Mapping[str, str]) -> DataFrame:
    """``dead`` (side, reason, row) in a streaming operator's tagged output ``schema``.

    ``columns`` maps ``schema``'s column names to ``dead``'s columns or to ``"=<constant>"``; every other
    column is NULL.  The jobs union this with the operator's output, so a malformed record reaches the
    dead-letter output, and its counts, as the operator's own dead letters do.
    """
    out = []
    for field in schema.fields:
        source = columns.get(field.name)
        if source is None:
            value = F.lit(None)
        elif source.startswith("="):
            value = F.lit(source[1:])
        else:
            value = F.col(source)
        out.append(value.cast(field.dataType).alias(field.name))
    return dead.select(*out)


__all__ = ["BAD_ROW", "CORRUPT", "MALFORMED", "MalformedSource", "as_tagged_dead", "carry_malformed", "is_tagged",
           "malformed_source", "read_source", "split_malformed", "tag_malformed", "take_malformed"]
