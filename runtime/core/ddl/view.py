"""``CREATE [TEMPORARY] VIEW name AS query`` and Flink's versioned-view shape (seed 004)::

    SELECT [column_list] FROM (
        SELECT [column_list], ROW_NUMBER() OVER ([PARTITION BY k, ...] ORDER BY time_attr DESC) AS rownum
        FROM table_name)
    WHERE rownum = 1

``DESC`` keeps each key's last row: a versioned table whose versions are every row of the relation, keyed by
the PARTITION BY columns, valid from ``time_attr``.  ``ASC`` keeps each key's first row (Flink's keep-first
deduplication): one version per key, valid from its first time on.

A view that is exactly ``SELECT * FROM t`` is ``t`` under another name (:attr:`CreateView.selects_all_of`): in
Flink it keeps ``t``'s primary key and time attribute, so over a versioned table it is versioned too (Flink's
``TemporalJoinITCase``: ``CREATE VIEW v1 AS SELECT * FROM versioned_currency_with_single_key``).  Any other view
is a plain view.
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.ddl.cursor import Cursor
from timeweave.core.ddl.script import Statement
from timeweave.core.sql_tokens import TokenType


@dataclass(frozen=True)
class VersionedShape:
    """What makes a view versioned: the key, the time column, which row a key keeps, where the filter is.

    ``history`` is the view's query without its ``WHERE rownum = 1``: every row with its number (for ``last``,
    the versions); ``keep`` is ``last`` (``DESC``) or ``first`` (``ASC``).
    """

    key: tuple[str, ...]
    time: str
    keep: str
    history: str


@dataclass(frozen=True)
class CreateView:
    """A parsed ``CREATE VIEW``: ``query`` is the text after ``AS``, ``versioned`` its shape when it has Flink's.

    >>> from timeweave.core.ddl.script import split_statements
    >>> v = parse_create_view(split_statements('''CREATE VIEW versioned_rates AS
    ...   SELECT currency, rate, update_time FROM (
    ...     SELECT *, ROW_NUMBER() OVER (PARTITION BY currency ORDER BY update_time DESC) AS rownum
    ...     FROM currency_rates)
    ...   WHERE rownum = 1''')[0])
    >>> v.name, v.versioned.key, v.versioned.time, v.versioned.keep
    ('versioned_rates', ('currency',), 'update_time', 'last')
    """

    name: str
    temporary: bool
    if_not_exists: bool
    query: str
    versioned: VersionedShape | None
    script: str
    position: int
    #: the one table the query is ``SELECT * FROM`` (as written), when that is the whole query
    selects_all_of: str | None = None


def is_create_view(statement: Statement) -> bool:
    """``CREATE [TEMPORARY] VIEW`` (Flink's spelling; Spark's ``CREATE OR REPLACE`` / ``TEMP`` / ``GLOBAL`` go to
    Spark as written)."""
    return statement.starts_with("CREATE", "VIEW") or statement.starts_with("CREATE", "TEMPORARY", "VIEW")


def parse_create_view(statement: Statement) -> CreateView:
    """The :class:`CreateView` of ``statement`` (positioned :class:`QuerySyntaxError` on a malformed head)."""
    cursor = Cursor(statement)
    cursor.expect_word("CREATE")
    temporary = cursor.accept_word("TEMPORARY") is not None
    cursor.expect_word("VIEW")
    if_not_exists = False
    if cursor.accept_word("IF"):
        cursor.expect_word("NOT")
        cursor.expect_word("EXISTS")
        if_not_exists = True
    name, name_token = cursor.qualified_name("a view name")
    if cursor.peek() is not None and cursor.peek().type is TokenType.LPAREN:
        raise cursor.error(f"CREATE VIEW {name}: a column list after the view name is not supported "
                           "(name the columns in the SELECT)")
    cursor.expect_word("AS")
    if cursor.at_end():
        raise cursor.error(f"CREATE VIEW {name}: expected the view's query")
    body = cursor.i
    query = statement.script[statement.tokens[body].start : statement.end]
    return CreateView(name, temporary, if_not_exists, query, _versioned_shape(statement, body),
                      statement.script, name_token.start, _selects_all_of(statement, body))


def _selects_all_of(statement: Statement, body: int) -> str | None:
    """``t`` when the query from token ``body`` is exactly ``SELECT * FROM t`` (``t`` a name, maybe qualified).

    >>> from timeweave.core.ddl.script import split_statements
    >>> [parse_create_view(split_statements(f"CREATE VIEW v AS {q}")[0]).selects_all_of
    ...  for q in ("SELECT * FROM `my rates`", "select * from db.rates", "SELECT * FROM r WHERE x > 1", "SELECT a FROM r")]
    ['`my rates`', 'db.rates', None, None]
    """
    cursor = Cursor(statement, body)
    if not (cursor.accept_word("SELECT") and cursor.accept_symbol("*") and cursor.accept_word("FROM")):
        return None
    start = cursor.peek()
    if start is None or start.type not in (TokenType.WORD, TokenType.QUOTED):
        return None
    name, _ = cursor.qualified_name()
    return name if cursor.at_end() else None


def _versioned_shape(statement: Statement, body: int) -> VersionedShape | None:
    """The shape's key, time and order when the query from token ``body`` has it exactly; None otherwise."""
    cursor = Cursor(statement, body)
    if not cursor.accept_word("SELECT"):
        return None
    while not cursor.at_end() and not cursor.is_word("FROM"):
        if cursor.peek().type is TokenType.LPAREN:
            cursor.i = cursor.balanced_end()
        else:
            cursor.i += 1
    if not cursor.accept_word("FROM") or cursor.peek() is None or cursor.peek().type is not TokenType.LPAREN:
        return None
    sub_end = cursor.balanced_end()
    inner = Cursor(statement, cursor.i + 1, sub_end - 1)
    found = _row_number(inner)
    if found is None:
        return None
    key, time, keep, rownum = found
    cursor.i = sub_end
    if cursor.accept_word("AS"):
        cursor.identifier()
    elif cursor.peek() is not None and cursor.peek().type in (TokenType.WORD, TokenType.QUOTED) \
            and not cursor.is_word("WHERE"):
        cursor.i += 1
    where = cursor.peek()
    if not cursor.accept_word("WHERE"):
        return None
    column = cursor.peek()
    if column is None or column.type not in (TokenType.WORD, TokenType.QUOTED) or column.name.lower() != rownum.lower():
        return None
    cursor.i += 1
    if not (cursor.accept_symbol("=") and cursor.peek() is not None and cursor.peek().text == "1"):
        return None
    cursor.i += 1
    if not cursor.at_end():
        return None
    script = statement.script
    history = script[statement.tokens[body].start : where.start].rstrip()
    return VersionedShape(key, time, keep, history)


def _row_number(cursor: Cursor) -> tuple[tuple[str, ...], str, str, str] | None:
    """In a subquery's tokens: ``SELECT ..., ROW_NUMBER() OVER (PARTITION BY ... ORDER BY t [ASC|DESC]) AS n FROM ...``."""
    if not cursor.accept_word("SELECT"):
        return None
    while not cursor.at_end() and not (cursor.is_word("ROW_NUMBER") and cursor.peek(1) is not None
                                       and cursor.peek(1).type is TokenType.LPAREN):
        if cursor.is_word("FROM"):
            return None
        cursor.i += 1
    if cursor.at_end():
        return None
    cursor.i += 1
    cursor.i = cursor.balanced_end()
    if not cursor.accept_word("OVER") or cursor.peek() is None or cursor.peek().type is not TokenType.LPAREN:
        return None
    over_end = cursor.balanced_end()
    window = Cursor(cursor.statement, cursor.i + 1, over_end - 1)
    key: list[str] = []
    if window.accept_word("PARTITION"):
        if not window.accept_word("BY"):
            return None
        while True:
            token = window.peek()
            if token is None or token.type not in (TokenType.WORD, TokenType.QUOTED):
                return None
            key.append(token.name)
            window.i += 1
            if not window.accept_symbol(","):
                break
    if not (window.accept_word("ORDER") and window.accept_word("BY")):
        return None
    time = window.peek()
    if time is None or time.type not in (TokenType.WORD, TokenType.QUOTED):
        return None
    window.i += 1
    keep = "first"
    if window.accept_word("DESC"):
        keep = "last"
    else:
        window.accept_word("ASC")
    if not window.at_end() or not key:
        return None  # a second ORDER BY column, or no PARTITION BY (one global key): not Flink's versioned view
    cursor.i = over_end
    cursor.accept_word("AS")
    rownum = cursor.peek()
    if rownum is None or rownum.type not in (TokenType.WORD, TokenType.QUOTED):
        return None
    cursor.i += 1
    if not cursor.accept_word("FROM"):
        return None
    return tuple(key), time.name, keep, rownum.name


__all__ = ["CreateView", "VersionedShape", "is_create_view", "parse_create_view"]
