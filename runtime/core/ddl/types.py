"""Flink's SQL types as Spark type text (engine-free: the Spark door hands the text to Spark's DDL parser).

The mapping, one decision per type:

* ``TIMESTAMP(p)`` / ``TIMESTAMP(p) WITHOUT TIME ZONE`` is zone-less in Flink (a wall-clock reading), so it is
  Spark's ``TIMESTAMP_NTZ``; ``TIMESTAMP_LTZ(p)`` / ``TIMESTAMP(p) WITH LOCAL TIME ZONE`` is an instant, Spark's
  ``TIMESTAMP``.  Spark keeps microseconds: a precision above 6 is accepted and read at microseconds.
* ``STRING``, ``VARCHAR(n)``, ``CHAR(n)`` are ``STRING`` (Flink does not pad or cut on read either);
  ``BYTES``, ``BINARY(n)``, ``VARBINARY(n)`` are ``BINARY``.
* ``DECIMAL(p, s)`` (also ``DEC`` / ``NUMERIC``; ``DECIMAL`` alone is ``DECIMAL(10, 0)`` in both), ``TINYINT``,
  ``SMALLINT``, ``INT`` / ``INTEGER``, ``BIGINT``, ``FLOAT``, ``DOUBLE [PRECISION]``, ``BOOLEAN``, ``DATE``
  keep their names.
* ``ARRAY<T>``, ``MAP<K, V>``, ``ROW<name T, ...>`` (or ``ROW(name T, ...)``) are ``ARRAY``, ``MAP``,
  ``STRUCT``; field names are quoted.
* ``NOT NULL`` is accepted: Flink trusts a source's nullability, and so does the read.
* ``TIME``, ``INTERVAL``, ``MULTISET``, ``RAW``, ``TIMESTAMP WITH TIME ZONE`` have no Spark column type: an
  error naming the type and its position.
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.ddl.cursor import Cursor
from timeweave.core.sql_tokens import TokenType

#: Flink type names whose Spark type has the same name and no parameters.
_SAME = {"TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INT", "INTEGER": "INT", "BIGINT": "BIGINT",
         "FLOAT": "FLOAT", "DOUBLE": "DOUBLE", "BOOLEAN": "BOOLEAN", "DATE": "DATE", "STRING": "STRING",
         "BYTES": "BINARY"}
_SIZED_STRING = {"VARCHAR": "STRING", "CHAR": "STRING", "BINARY": "BINARY", "VARBINARY": "BINARY"}
_NO_SPARK_TYPE = {"TIME", "INTERVAL", "MULTISET", "RAW", "NULL", "TIMESTAMP_TZ"}

#: Kinds of the time columns the DDL reasons about (a watermark's column must be one).
NTZ = "timestamp_ntz"
LTZ = "timestamp_ltz"


@dataclass(frozen=True)
class FlinkType:
    """A column type as Flink wrote it and as Spark type text.

    >>> parse_type_text("ARRAY<ROW<id BIGINT, tags MAP<STRING, INT>>>").spark
    'ARRAY<STRUCT<`id`: BIGINT, `tags`: MAP<STRING, INT>>>'
    >>> parse_type_text("TIMESTAMP(3)").spark, parse_type_text("TIMESTAMP_LTZ(3)").spark
    ('TIMESTAMP_NTZ', 'TIMESTAMP')
    """

    flink: str
    spark: str
    nullable: bool = True

    @property
    def time_kind(self) -> str | None:
        """``timestamp_ntz`` / ``timestamp_ltz`` for the two timestamp types, else None."""
        return {"TIMESTAMP_NTZ": NTZ, "TIMESTAMP": LTZ}.get(self.spark)


def parse_type(cursor: Cursor) -> FlinkType:
    """The type at the cursor (and its ``NOT NULL`` / ``NULL``), the cursor moved past it."""
    start = cursor.position()
    spark = _spark_type(cursor)
    nullable = True
    if cursor.is_word("NOT") and cursor.is_word("NULL", ahead=1):
        cursor.i += 2
        nullable = False
    elif cursor.is_word("NULL"):
        cursor.i += 1
    end = cursor.tokens[cursor.i - 1].end
    return FlinkType(cursor.script[start:end], spark, nullable)


def parse_type_text(text: str) -> FlinkType:
    """:func:`parse_type` of a whole text (tests, docs)."""
    from timeweave.core.ddl.script import split_statements

    cursor = Cursor(split_statements(text)[0])
    parsed = parse_type(cursor)
    if not cursor.at_end():
        raise cursor.error(f"unexpected {cursor.describe()} after the type")
    return parsed


def _spark_type(cursor: Cursor) -> str:
    token = cursor.expect(TokenType.WORD, "a type")
    name = token.upper
    if name in _NO_SPARK_TYPE:
        raise cursor.error(f"Flink type {token.text} has no Spark column type", token)
    if name in _SAME:
        if name == "DOUBLE":
            cursor.accept_word("PRECISION")
        return _SAME[name]
    if name in _SIZED_STRING:
        if name in ("CHAR", "BINARY") or name == "VARCHAR":
            _optional_numbers(cursor, 1, token)
        if name == "VARBINARY":
            _optional_numbers(cursor, 1, token)
        return _SIZED_STRING[name]
    if name in ("DECIMAL", "DEC", "NUMERIC"):
        numbers = _optional_numbers(cursor, 2, token)
        precision = numbers[0] if numbers else 10
        scale = numbers[1] if len(numbers) > 1 else 0
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise cursor.error(f"DECIMAL({precision}, {scale}): precision must be 1..38 and scale 0..precision", token)
        return f"DECIMAL({precision}, {scale})"
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        numbers = _optional_numbers(cursor, 1, token)
        if numbers and not 0 <= numbers[0] <= 9:
            raise cursor.error(f"{token.text}({numbers[0]}): precision must be 0..9", token)
        if name == "TIMESTAMP_LTZ":
            return "TIMESTAMP"
        if cursor.is_word("WITH") and cursor.is_word("LOCAL", ahead=1):
            cursor.i += 2
            cursor.expect_word("TIME")
            cursor.expect_word("ZONE")
            return "TIMESTAMP"
        if cursor.is_word("WITH"):
            raise cursor.error("TIMESTAMP WITH TIME ZONE is not a Flink column type (use TIMESTAMP_LTZ)", token)
        if cursor.accept_word("WITHOUT"):
            cursor.expect_word("TIME")
            cursor.expect_word("ZONE")
        return "TIMESTAMP_NTZ"
    if name == "ARRAY":
        return f"ARRAY<{_one_argument(cursor, token)}>"
    if name == "MAP":
        cursor.expect_symbol("<")
        key = _spark_type(cursor)
        cursor.expect_symbol(",")
        value = _spark_type(cursor)
        _skip_not_null(cursor)
        cursor.expect_symbol(">")
        return f"MAP<{key}, {value}>"
    if name == "ROW":
        return _row(cursor)
    raise cursor.error(f"unknown Flink type {token.text}", token)


def _one_argument(cursor: Cursor, token) -> str:
    cursor.expect_symbol("<")
    inner = _spark_type(cursor)
    _skip_not_null(cursor)
    cursor.expect_symbol(">")
    return inner


def _skip_not_null(cursor: Cursor) -> None:
    if cursor.is_word("NOT") and cursor.is_word("NULL", ahead=1):
        cursor.i += 2


def _row(cursor: Cursor) -> str:
    close = ">" if cursor.accept_symbol("<") else None
    if close is None:
        cursor.expect(TokenType.LPAREN, "'<' or '(' after ROW")
    fields: list[str] = []
    seen: set[str] = set()
    while True:
        field = cursor.identifier("a ROW field name")
        if field.name in seen:
            raise cursor.error(f"duplicate ROW field {field.name!r}", field)
        seen.add(field.name)
        spark = _spark_type(cursor)
        _skip_not_null(cursor)
        if cursor.is_word("COMMENT"):
            cursor.i += 1
            cursor.expect(TokenType.STRING, "a comment string")
        fields.append(f"{_quote(field.name)}: {spark}")
        if cursor.accept_symbol(","):
            continue
        break
    if close:
        cursor.expect_symbol(">")
    else:
        cursor.expect(TokenType.RPAREN, "')' closing ROW(...)")
    return f"STRUCT<{', '.join(fields)}>"


def _optional_numbers(cursor: Cursor, most: int, token) -> list[int]:
    if cursor.peek() is None or cursor.peek().type is not TokenType.LPAREN:
        return []
    cursor.i += 1
    numbers = []
    while True:
        number = cursor.expect(TokenType.NUMBER, "a number")
        if not number.text.isdigit():
            raise cursor.error(f"expected a whole number, found {number.text!r}", number)
        numbers.append(int(number.text))
        if not cursor.accept_symbol(","):
            break
    if len(numbers) > most:
        raise cursor.error(f"{token.text} takes at most {most} parameter(s)", token)
    cursor.expect(TokenType.RPAREN, "')'")
    return numbers


def _quote(name: str) -> str:
    # The Spark floor's render.quote rule (backquoted, backquotes doubled), restated here because the core
    # cannot import the Spark floor; tests/core/test_ddl.py checks both agree on hostile names.
    return "`" + name.replace("`", "``") + "`"


__all__ = ["LTZ", "NTZ", "FlinkType", "parse_type", "parse_type_text"]
