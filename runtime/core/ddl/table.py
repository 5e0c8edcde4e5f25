"""``CREATE [TEMPORARY] TABLE`` as Flink writes it, parsed to a frozen :class:`CreateTable`.

Grammar read (Flink's, less ``LIKE`` and ``PARTITIONED BY``, which fail naming their position)::

    CREATE [TEMPORARY] TABLE [IF NOT EXISTS] name (
        col TYPE [NOT NULL] [PRIMARY KEY NOT ENFORCED] [COMMENT '...'],
        col TYPE METADATA [FROM 'key'] [VIRTUAL],
        col AS expression [COMMENT '...'],
        [CONSTRAINT c] PRIMARY KEY (k, ...) NOT ENFORCED,
        WATERMARK FOR col AS expression
    ) [COMMENT '...'] WITH ('key' = 'value', ...)

Computed columns keep their expression text; the Flink functions Spark names differently (``PROCTIME()``,
``TO_TIMESTAMP``) are renamed on the tokens (:func:`spark_expression`), everything else is Spark SQL as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from timeweave.core.ddl.cursor import Cursor
from timeweave.core.ddl.script import Statement
from timeweave.core.ddl.types import FlinkType, parse_type
from timeweave.core.durations import parse_duration
from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.sql_tokens import Token, TokenType


@dataclass(frozen=True)
class PhysicalColumn:
    """A column read from the source."""

    name: str
    type: FlinkType
    position: int


@dataclass(frozen=True)
class MetadataColumn:
    """``col TYPE METADATA [FROM 'key'] [VIRTUAL]``: a value the format or connector carries (``key`` defaults to the name)."""

    name: str
    type: FlinkType
    key: str
    virtual: bool
    position: int


@dataclass(frozen=True)
class ComputedColumn:
    """``col AS expression``: ``expression`` is Spark SQL text (:func:`spark_expression` of what was written)."""

    name: str
    expression: str
    position: int

    @property
    def proctime(self) -> bool:
        """``col AS PROCTIME()``: Flink's processing-time attribute (the wall clock when a row is processed).

        >>> ComputedColumn("p", "current_timestamp()", 0).proctime, ComputedColumn("t", "to_timestamp_ntz(s)", 0).proctime
        (True, False)
        """
        return "".join(self.expression.split()).lower() == "current_timestamp()"


Column = PhysicalColumn | MetadataColumn | ComputedColumn


@dataclass(frozen=True)
class Watermark:
    """``WATERMARK FOR column AS expression``: ``delay_micros`` when the expression is ``column [- INTERVAL ...]``."""

    column: str
    expression: str
    delay_micros: int | None
    position: int


@dataclass(frozen=True)
class Option:
    """One ``'key' = 'value'`` of the ``WITH`` clause, with the positions of both strings in the script."""

    key: str
    value: str
    key_position: int
    value_position: int


@dataclass(frozen=True)
class CreateTable:
    """A parsed ``CREATE TABLE``; ``script`` is the text its positions point into.

    >>> from timeweave.core.ddl.script import split_statements
    >>> t = parse_create_table(split_statements('''CREATE TABLE rates (currency STRING, rate DECIMAL(32, 10),
    ...   update_time TIMESTAMP(3), PRIMARY KEY (currency) NOT ENFORCED,
    ...   WATERMARK FOR update_time AS update_time - INTERVAL '5' SECOND)
    ...   WITH ('connector' = 'filesystem', 'path' = '/data/rates', 'format' = 'csv')''')[0])
    >>> t.name, t.primary_key, t.watermark.column, t.watermark.delay_micros, t.option("format").value
    ('rates', ('currency',), 'update_time', 5000000, 'csv')
    """

    name: str
    temporary: bool
    if_not_exists: bool
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    watermark: Watermark | None
    options: tuple[Option, ...]
    script: str
    position: int

    def option(self, key: str) -> Option | None:
        return next((o for o in self.options if o.key == key), None)

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    @property
    def physical(self) -> tuple[PhysicalColumn, ...]:
        return tuple(c for c in self.columns if isinstance(c, PhysicalColumn))

    @property
    def proctime_columns(self) -> tuple[str, ...]:
        """The columns declared ``AS PROCTIME()`` (processing-time attributes)."""
        return tuple(c.name for c in self.columns if isinstance(c, ComputedColumn) and c.proctime)

    @property
    def versioned(self) -> bool:
        """A PRIMARY KEY and a WATERMARK: Flink's versioned table (seed 004)."""
        return bool(self.primary_key) and self.watermark is not None

    def error(self, message: str, position: int) -> QuerySyntaxError:
        return QuerySyntaxError(f"CREATE TABLE {self.name}: {message}", text=self.script, position=position)


def is_create_table(statement: Statement) -> bool:
    """``CREATE [TEMPORARY] TABLE`` with Flink's ``WITH (...)`` options after its column list (Spark's own
    ``CREATE TABLE ... USING`` goes to Spark as written).

    >>> from timeweave.core.ddl.script import split_statements
    >>> [is_create_table(s) for s in split_statements("CREATE TABLE a (x INT) WITH ('connector'='filesystem');"
    ...                                                "CREATE TABLE b (x INT) USING parquet")]
    [True, False]
    """
    cursor = Cursor(statement)
    if not cursor.accept_word("CREATE"):
        return False
    cursor.accept_word("TEMPORARY")
    if not cursor.accept_word("TABLE"):
        return False
    while not cursor.at_end() and cursor.peek().type is not TokenType.LPAREN:
        cursor.i += 1
    if cursor.at_end():
        return False
    try:
        cursor.i = cursor.balanced_end()
    except QuerySyntaxError:
        return True  # ours to report: an unclosed column list
    if cursor.is_word("COMMENT"):
        cursor.i += 2
    return cursor.is_word("WITH", "PARTITIONED", "LIKE")


def parse_create_table(statement: Statement) -> CreateTable:
    """The :class:`CreateTable` of ``statement``; a :class:`QuerySyntaxError` names what is wrong and where."""
    cursor = Cursor(statement)
    cursor.expect_word("CREATE")
    temporary = cursor.accept_word("TEMPORARY") is not None
    cursor.expect_word("TABLE")
    if_not_exists = _if_not_exists(cursor)
    name, name_token = cursor.qualified_name()
    columns, primary_key, watermark = _column_list(cursor)
    if cursor.accept_word("COMMENT"):
        cursor.expect(TokenType.STRING, "a comment string")
    for unsupported in ("PARTITIONED", "LIKE"):
        if cursor.is_word(unsupported):
            clause = "PARTITIONED BY" if unsupported == "PARTITIONED" else "LIKE"
            raise cursor.error(f"CREATE TABLE {name}: {clause} is not supported by timeweave's DDL")
    cursor.expect_word("WITH")
    options = _options(cursor)
    if not cursor.at_end():
        raise cursor.error(f"CREATE TABLE {name}: unexpected {cursor.describe()} after the WITH options")
    table = CreateTable(name, temporary, if_not_exists, columns, primary_key, watermark, options,
                        statement.script, name_token.start)
    _check(table)
    return table


def _if_not_exists(cursor: Cursor) -> bool:
    if cursor.accept_word("IF"):
        cursor.expect_word("NOT")
        cursor.expect_word("EXISTS")
        return True
    return False


def _column_list(cursor: Cursor) -> tuple[tuple[Column, ...], tuple[str, ...], Watermark | None]:
    end = cursor.balanced_end()
    cursor.i += 1
    inner = Cursor(cursor.statement, cursor.i, end - 1)
    columns: list[Column] = []
    primary_key: tuple[str, ...] = ()
    primary_key_token: Token | None = None
    watermark: Watermark | None = None
    while True:
        if inner.at_end():
            raise inner.error("expected a column, PRIMARY KEY or WATERMARK")
        token = inner.peek()
        if inner.is_word("CONSTRAINT") or (inner.is_word("PRIMARY") and inner.is_word("KEY", ahead=1)):
            if primary_key_token is not None:
                raise inner.error("a table has one PRIMARY KEY", token)
            primary_key_token = token
            primary_key = _table_primary_key(inner)
        elif inner.is_word("WATERMARK") and inner.is_word("FOR", ahead=1):
            if watermark is not None:
                raise inner.error("a table has one WATERMARK", token)
            watermark = _watermark(inner)
        else:
            column, inline_key = _column(inner)
            if any(c.name == column.name for c in columns):
                raise inner.error(f"duplicate column {column.name!r}", token)
            columns.append(column)
            if inline_key:
                if primary_key_token is not None:
                    raise inner.error("a table has one PRIMARY KEY", token)
                primary_key_token = token
                primary_key = (column.name,)
        if inner.accept_symbol(","):
            continue
        if not inner.at_end():
            raise inner.error(f"expected ',' or ')', found {inner.describe()}")
        break
    cursor.i = end
    return tuple(columns), primary_key, watermark


def _column(cursor: Cursor) -> tuple[Column, bool]:
    name = cursor.identifier("a column name")
    if cursor.accept_word("AS"):
        expression = _expression_until_comma(cursor)
        if cursor.accept_word("COMMENT"):
            cursor.expect(TokenType.STRING, "a comment string")
        return ComputedColumn(name.name, expression, name.start), False
    column_type = parse_type(cursor)
    if cursor.accept_word("METADATA"):
        key = name.name
        if cursor.accept_word("FROM"):
            key = _string(cursor.expect(TokenType.STRING, "the metadata key (a string)"))
        virtual = cursor.accept_word("VIRTUAL") is not None
        if cursor.accept_word("COMMENT"):
            cursor.expect(TokenType.STRING, "a comment string")
        return MetadataColumn(name.name, column_type, key, virtual, name.start), False
    inline_key = False
    if cursor.is_word("PRIMARY"):
        cursor.i += 1
        cursor.expect_word("KEY")
        _not_enforced(cursor)
        inline_key = True
    if cursor.accept_word("COMMENT"):
        cursor.expect(TokenType.STRING, "a comment string")
    return PhysicalColumn(name.name, column_type, name.start), inline_key


def _table_primary_key(cursor: Cursor) -> tuple[str, ...]:
    if cursor.accept_word("CONSTRAINT"):
        cursor.identifier("a constraint name")
    cursor.expect_word("PRIMARY")
    cursor.expect_word("KEY")
    cursor.expect(TokenType.LPAREN, "'(' and the key columns")
    names: list[str] = []
    while True:
        names.append(cursor.identifier("a key column").name)
        if not cursor.accept_symbol(","):
            break
    cursor.expect(TokenType.RPAREN, "')' closing the key columns")
    _not_enforced(cursor)
    return tuple(names)


def _not_enforced(cursor: Cursor) -> None:
    if not (cursor.is_word("NOT") and cursor.is_word("ENFORCED", ahead=1)):
        raise cursor.error("Flink supports only PRIMARY KEY ... NOT ENFORCED (the key is not checked on read)")
    cursor.i += 2


def _watermark(cursor: Cursor) -> Watermark:
    start = cursor.expect_word("WATERMARK")
    cursor.expect_word("FOR")
    column = cursor.identifier("the watermark's time column")
    cursor.expect_word("AS")
    expression_start = cursor.i
    expression = _expression_until_comma(cursor)
    return Watermark(column.name, expression, _delay(cursor, expression_start, cursor.i, column.name), start.start)


#: ``INTERVAL 'n.fff' SECOND``'s amount: whole seconds and a fraction.
_FRACTIONAL_SECONDS = re.compile(r"^(\d+)\.(\d+)$")


def _delay(cursor: Cursor, start: int, stop: int, column: str) -> int | None:
    """``column`` alone (0) or ``column - INTERVAL 'n' UNIT`` (n units, µs; ``'n.fff' SECOND`` a fraction of
    seconds, at most µs); any other strategy: None."""
    tokens = cursor.tokens[start:stop]
    if not tokens or tokens[0].type not in (TokenType.WORD, TokenType.QUOTED) or tokens[0].name != column:
        return None
    if len(tokens) == 1:
        return 0
    if len(tokens) == 5 and tokens[1].text == "-" and tokens[2].upper == "INTERVAL" and tokens[3].type is TokenType.STRING:
        amount = _string(tokens[3]).strip()
        seconds = _FRACTIONAL_SECONDS.match(amount)
        if seconds and tokens[4].upper in ("SECOND", "SECONDS"):
            # SQL's (and Flink's) INTERVAL 'n.fff' SECOND: a fraction of seconds, down to the µs
            whole, fraction = seconds.groups()
            if len(fraction) <= 6:
                return int(whole) * 1_000_000 + int(fraction.ljust(6, "0"))
        try:
            return parse_duration(f"{amount} {tokens[4].text}", "WATERMARK")
        except SpecError as error:
            raise cursor.error(f"watermark delay INTERVAL {tokens[3].text} {tokens[4].text}: {error.message}",
                               tokens[3]) from None
    return None


def _expression_until_comma(cursor: Cursor) -> str:
    """The Spark SQL text of the expression from the cursor to the next ``,`` at its depth (or the list's end)."""
    start = cursor.i
    depth = 0
    while not cursor.at_end():
        token = cursor.peek()
        if token.type is TokenType.LPAREN:
            depth += 1
        elif token.type is TokenType.RPAREN:
            depth -= 1
        elif depth == 0 and token.type is TokenType.SYMBOL and token.text == ",":
            break
        elif depth == 0 and cursor.is_word("COMMENT") and cursor.peek(1) is not None and cursor.peek(1).type is TokenType.STRING:
            break
        cursor.i += 1
    if cursor.i == start:
        raise cursor.error("expected an expression")
    return spark_expression(cursor.statement, start, cursor.i)


#: Flink functions Spark spells differently (Flink's TO_TIMESTAMP gives a zone-less TIMESTAMP(3)).
_RENAMED = {"PROCTIME": "current_timestamp", "TO_TIMESTAMP": "to_timestamp_ntz"}


def spark_expression(statement: Statement, start: int, stop: int) -> str:
    """The tokens ``[start, stop)`` of ``statement`` as Spark SQL text, Flink-only function names renamed.

    >>> from timeweave.core.ddl.script import split_statements
    >>> s = split_statements("x AS TO_TIMESTAMP(s, 'yyyy-MM-dd HH:mm:ss'), p AS PROCTIME()")[0]
    >>> spark_expression(s, 2, 8), spark_expression(s, 11, 14)
    ("to_timestamp_ntz(s, 'yyyy-MM-dd HH:mm:ss')", 'current_timestamp()')
    """
    tokens = statement.tokens[start:stop]
    script = statement.script
    pieces: list[str] = []
    at = tokens[0].start
    for j, token in enumerate(tokens):
        following = tokens[j + 1] if j + 1 < len(tokens) else None
        if token.type is TokenType.WORD and token.upper in _RENAMED and following is not None \
                and following.type is TokenType.LPAREN:
            pieces.append(script[at : token.start])
            pieces.append(_RENAMED[token.upper])
            at = token.end
    pieces.append(script[at : tokens[-1].end])
    return "".join(pieces)


def _options(cursor: Cursor) -> tuple[Option, ...]:
    cursor.expect(TokenType.LPAREN, "'(' and the table's options")
    options: list[Option] = []
    while True:
        key = cursor.expect(TokenType.STRING, "an option key (a string)")
        cursor.expect_symbol("=")
        value = cursor.expect(TokenType.STRING, "an option value (a string)")
        key_text = _string(key)
        if any(o.key == key_text for o in options):
            raise cursor.error(f"option '{key_text}' is given twice", key)
        options.append(Option(key_text, _string(value), key.start, value.start))
        if not cursor.accept_symbol(","):
            break
    cursor.expect(TokenType.RPAREN, "',' or ')' closing the options")
    return tuple(options)


#: Backslash escapes in option strings (Java's, which Flink's CSV format unescapes its delimiters with).
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "0": "\0"}


def _string(token: Token) -> str:
    r"""A string literal's value: ``''`` is a quote (Flink's rule); a backslash escapes the next character (the
    shared tokenizer reads strings so): ``'\t'`` is a tab, ``'\\'`` one backslash, as Flink's CSV options read them.

    >>> from timeweave.core.sql_tokens import tokenize
    >>> [_string(t) for t in tokenize(r"'it''s' '\\' '\t' '\|'")]
    ["it's", '\\', '\t', '|']
    """
    quote = token.text[0]
    body = token.text[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        elif c == quote and body[i + 1 : i + 2] == quote:
            out.append(quote)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _check(table: CreateTable) -> None:
    names = {c.name for c in table.columns}
    for key in table.primary_key:
        column = table.column(key)
        if column is None:
            raise table.error(f"PRIMARY KEY column {key!r} is not a column; columns: {sorted(names)}", table.position)
        if not isinstance(column, PhysicalColumn):
            raise table.error(f"PRIMARY KEY column {key!r} is not a physical column (Flink declares keys on "
                              "physical columns only)", column.position)
    if table.watermark is not None:
        column = table.column(table.watermark.column)
        if column is None:
            raise table.error(f"WATERMARK column {table.watermark.column!r} is not a column; columns: {sorted(names)}",
                              table.watermark.position)
        if isinstance(column, (PhysicalColumn, MetadataColumn)) and column.type.time_kind is None:
            raise table.error(f"WATERMARK column {column.name!r} must be TIMESTAMP(p) or TIMESTAMP_LTZ(p), "
                              f"not {column.type.flink}", table.watermark.position)
        if table.watermark.column in table.primary_key:
            raise table.error(f"WATERMARK column {column.name!r} is also a PRIMARY KEY column", table.watermark.position)
    if not table.physical:
        raise table.error("a table needs at least one physical column", table.position)


__all__ = ["Column", "ComputedColumn", "CreateTable", "MetadataColumn", "Option", "PhysicalColumn", "Watermark",
           "is_create_table", "parse_create_table", "spark_expression"]
