"""``INSERT INTO`` statements and statement sets of a Flink SQL script: what a SQL job writes where.

A Flink job file declares its tables, then writes query results into sinks::

    CREATE TABLE orders (...) WITH (...);
    CREATE TABLE orders_eur (...) WITH ('connector' = 'filesystem', 'path' = '/out/eur', 'format' = 'parquet');
    INSERT INTO orders_eur SELECT ... FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.t AS r ON ...;

Several inserts may form one statement set (one job in Flink), in either of Flink's spellings:
``EXECUTE STATEMENT SET BEGIN INSERT ...; INSERT ...; END;`` or ``BEGIN STATEMENT SET; INSERT ...; END;``.
:func:`plan_script` splits a script into :class:`InsertSet` steps and the other statements, in order, with every
position in the script the user wrote.
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.ddl.script import Statement, split_statements
from timeweave.core.errors import QuerySyntaxError
from timeweave.core.sql_tokens import TokenType

_NAMES = (TokenType.WORD, TokenType.QUOTED)


@dataclass(frozen=True)
class InsertInto:
    """``INSERT {INTO | OVERWRITE} [TABLE] table [(col, ...)] <query>``: ``table`` as written (one part),
    ``columns`` the target column list (empty: by position), ``query`` the query's text, ``position`` where the
    table name is in the script."""

    table: str
    overwrite: bool
    columns: tuple[str, ...]
    query: str
    query_start: int
    position: int
    script: str

    def error(self, message: str) -> QuerySyntaxError:
        """A syntax error positioned at the target table's name."""
        return QuerySyntaxError(message, text=self.script, position=self.position)


@dataclass(frozen=True)
class InsertSet:
    """The inserts of one statement set (or one lone ``INSERT``), in order."""

    inserts: tuple[InsertInto, ...]


def is_insert(statement: Statement) -> bool:
    """Whether ``statement`` is an ``INSERT INTO`` / ``INSERT OVERWRITE``.

    >>> is_insert(split_statements("insert into t select 1")[0])
    True
    """
    return statement.starts_with("INSERT", "INTO") or statement.starts_with("INSERT", "OVERWRITE")


def parse_insert(statement: Statement) -> InsertInto:
    """The insert ``statement`` holds; a :class:`QuerySyntaxError` positioned in the script otherwise.

    >>> i = parse_insert(split_statements("INSERT INTO sink (a, b) SELECT x, y FROM t")[0])
    >>> i.table, i.columns, i.query, i.overwrite
    ('sink', ('a', 'b'), 'SELECT x, y FROM t', False)
    """
    tokens, script = statement.tokens, statement.script
    overwrite = tokens[1].upper == "OVERWRITE"
    i = 2
    if i < len(tokens) and tokens[i].upper == "TABLE":
        i += 1
    if i >= len(tokens) or tokens[i].type not in _NAMES:
        raise QuerySyntaxError("INSERT needs the target table's name", text=script,
                               position=tokens[i].start if i < len(tokens) else statement.end)
    name = tokens[i]
    if i + 1 < len(tokens) and tokens[i + 1].text == ".":
        raise QuerySyntaxError("INSERT targets a table the script declares with CREATE TABLE (one-part name)",
                               text=script, position=name.start)
    i += 1
    columns: list[str] = []
    if i < len(tokens) and tokens[i].type is TokenType.LPAREN and not (
            i + 1 < len(tokens) and tokens[i + 1].upper in ("SELECT", "WITH", "VALUES")):
        i += 1
        while True:
            if i >= len(tokens) or tokens[i].type not in _NAMES:
                raise QuerySyntaxError("the target column list holds column names", text=script,
                                       position=tokens[i].start if i < len(tokens) else statement.end)
            columns.append(tokens[i].name)
            i += 1
            if i < len(tokens) and tokens[i].text == ",":
                i += 1
                continue
            if i < len(tokens) and tokens[i].type is TokenType.RPAREN:
                i += 1
                break
            raise QuerySyntaxError("the target column list ends with )", text=script,
                                   position=tokens[i].start if i < len(tokens) else statement.end)
    if i < len(tokens) and tokens[i].upper == "PARTITION":
        raise QuerySyntaxError("INSERT ... PARTITION (...) is not supported: write the partition columns in the query",
                               text=script, position=tokens[i].start)
    if i >= len(tokens) or tokens[i].upper not in ("SELECT", "WITH", "VALUES", "(", "TABLE"):
        raise QuerySyntaxError("INSERT needs a query after the target (SELECT ..., WITH ..., VALUES ...)",
                               text=script, position=tokens[i].start if i < len(tokens) else statement.end)
    start = tokens[i].start
    return InsertInto(name.name, overwrite, tuple(columns), script[start:statement.end], start, name.start, script)


def _rest(statement: Statement, words: int) -> Statement | None:
    """``statement`` without its first ``words`` tokens (None when nothing is left)."""
    tokens = statement.tokens[words:]
    return Statement(statement.script, tokens) if tokens else None


def plan_script(script: str) -> tuple[Statement | InsertSet, ...]:
    """The script's steps in order: each statement set (or lone insert) as an :class:`InsertSet`, every other
    statement as it is.

    >>> steps = plan_script("CREATE TABLE s (a INT) WITH ('connector' = 'filesystem', 'path' = '/o', "
    ...                     "'format' = 'csv'); EXECUTE STATEMENT SET BEGIN INSERT INTO s SELECT 1; "
    ...                     "INSERT INTO s SELECT 2; END; INSERT OVERWRITE s SELECT 3")
    >>> [len(s.inserts) if isinstance(s, InsertSet) else s.tokens[0].text for s in steps]
    ['CREATE', 2, 1]
    """
    steps: list[Statement | InsertSet] = []
    open_set: list[InsertInto] | None = None
    opened_at = 0
    for statement in split_statements(script):
        if statement.starts_with("EXECUTE", "STATEMENT", "SET", "BEGIN") or statement.starts_with(
                "BEGIN", "STATEMENT", "SET"):
            if open_set is not None:
                raise QuerySyntaxError("a statement set is already open (END; closes it)", text=script,
                                       position=statement.start)
            open_set, opened_at = [], statement.start
            words = 4 if statement.starts_with("EXECUTE") else 3
            statement = _rest(statement, words)
            if statement is None:
                continue
        if open_set is not None:
            if len(statement.tokens) == 1 and statement.tokens[0].upper == "END":
                if not open_set:
                    raise QuerySyntaxError("an empty statement set", text=script, position=statement.start)
                steps.append(InsertSet(tuple(open_set)))
                open_set = None
                continue
            if not is_insert(statement):
                raise QuerySyntaxError("a statement set holds only INSERT statements (END; closes it)", text=script,
                                       position=statement.start)
            open_set.append(parse_insert(statement))
        elif is_insert(statement):
            steps.append(InsertSet((parse_insert(statement),)))
        elif len(statement.tokens) == 1 and statement.tokens[0].upper == "END":
            raise QuerySyntaxError("END without a statement set", text=script, position=statement.start)
        else:
            steps.append(statement)
    if open_set is not None:
        raise QuerySyntaxError("the statement set is never closed (END;)", text=script, position=opened_at)
    return tuple(steps)


__all__ = ["InsertInto", "InsertSet", "is_insert", "parse_insert", "plan_script"]
