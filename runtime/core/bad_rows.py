"""The dead-letter reasons: records timeweave cannot read, and rows an operator cannot use (engine-free).

Every door takes its reason text from here: the batch plan renders :data:`REJECT_REASONS` (through
``timeweave.spark.render`` in Python, through the dbt package's generated ``_timeweave_core.sql`` in dbt),
and the MATCH_RECOGNIZE doors call :func:`reject_reason` with ``"null_event_time"``.

A record of a file source that does not fit the source's schema is never turned into NULLs silently:
it goes to the dead letter with one of these reasons, and with its original text (the raw record, and
each field as read).  A value that is NULL (or empty) in the input is no bad record: it stays a NULL
and takes the NULL-key / NULL-time rules of the join or clause.

``RAW_FIELD`` is the key under which a malformed record's ``row`` JSON carries the raw record (Spark's
default name for its corrupt-record column); the record's fields sit beside it as the text read.

>>> unparsable_value("price", "DECIMAL(32,2)")
'unparsable value in column price of type DECIMAL(32,2)'
>>> wrong_column_count(4)
'malformed record: wrong column count (the schema has 4 columns)'
>>> reject_reason("unknown_op", "op", op=None)
'unknown op NULL in column op'
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from timeweave.core.errors import SpecError

#: The key of the raw record in a malformed record's dead-letter ``row`` JSON.
RAW_FIELD = "_corrupt_record"
#: A record the reader could not split into fields at all (broken JSON, an unclosed quote...).
MALFORMED_RECORD = "malformed record"
#: Formats whose records timeweave parses (and so can find malformed); parquet files carry their types.
TEXT_FORMATS = ("csv", "json")


#: Why an operator cannot use a row, by code: ``{column}`` is the column as the input spells it, ``{op}`` the
#: op code read (:data:`REJECT_REASONS` ``null_op`` when it is NULL).  The temporal join dead-letters a row with
#: a NULL key or time column, and a changelog row whose op is neither an upsert nor a delete
#: (:mod:`timeweave.core.changelog`); MATCH_RECOGNIZE a row whose event time (first ORDER BY column) is NULL.
REJECT_REASONS: Mapping[str, str] = MappingProxyType({
    "null_key": "NULL key column {column}",
    "null_time": "NULL time column {column}",
    "unknown_op": "unknown op {op} in column {column}",
    "null_op": "NULL",
    "null_event_time": "NULL event time column {column}",
})


def reject_reason(code: str, column: str, *, op: object = None) -> str:
    """The reason ``code`` of :data:`REJECT_REASONS` for ``column`` (and the op code read, for ``unknown_op``).

    Substituted by replacement, not ``str.format``, as the batch plan's Jinja does: both give the same text
    for any column name.

    >>> reject_reason("null_key", "currency"), reject_reason("unknown_op", "op", op="??")
    ('NULL key column currency', 'unknown op ?? in column op')
    """
    if code not in REJECT_REASONS or code == "null_op":
        raise ValueError(f"unknown reject reason {code!r}; one of {sorted(set(REJECT_REASONS) - {'null_op'})}")
    before, has_op, after = REJECT_REASONS[code].partition("{op}")
    text = before.replace("{column}", column)
    if has_op:
        text += (REJECT_REASONS["null_op"] if op is None else str(op)) + after.replace("{column}", column)
    return text


def unparsable_value(column: str, type_name: str) -> str:
    """The reason of a field whose text is not a value of its column's type (``price = sixty``)."""
    return f"unparsable value in column {column} of type {type_name}"


def wrong_column_count(expected: int) -> str:
    """The reason of a CSV record with more or fewer fields than the schema has columns."""
    return f"{MALFORMED_RECORD}: wrong column count (the schema has {expected} columns)"


def unreadable_record(file_format: str) -> str:
    """The reason of a record that is not a record of ``file_format`` at all."""
    return f"{MALFORMED_RECORD}: not a {file_format.upper()} record"


def check_reader_options(file_format: str, options: Mapping[str, str], where: str) -> None:
    """Refuse reader options that would lose malformed records or take their column from timeweave.

    ``mode`` must be ``PERMISSIVE`` (``DROPMALFORMED`` drops records silently; ``FAILFAST`` stops the job
    at the first one instead of dead-lettering it); ``columnNameOfCorruptRecord`` is timeweave's own.

    >>> check_reader_options("csv", {"header": "true", "mode": "permissive"}, "left source")
    >>> check_reader_options("csv", {"mode": "DROPMALFORMED"}, "left source")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: left source: argument 'options.mode': mode 'DROPMALFORMED' is not supported: ...
    """
    if file_format not in TEXT_FORMATS:
        return
    for name, value in options.items():
        if name.lower() == "mode" and str(value).upper() != "PERMISSIVE":
            raise SpecError("options.mode", f"mode {value!r} is not supported: malformed records go to the dead "
                            "letter (PERMISSIVE, the default)", where=where)
        if name.lower() == "columnnameofcorruptrecord":
            raise SpecError("options.columnNameOfCorruptRecord", "is set by timeweave: malformed records go to the "
                            "dead letter with their raw text", where=where)


__all__ = ["MALFORMED_RECORD", "RAW_FIELD", "REJECT_REASONS", "TEXT_FORMATS", "check_reader_options", "reject_reason", "unparsable_value", "unreadable_record", "wrong_column_count"]
