"""Find ``<table or (subquery)> MATCH_RECOGNIZE ( ... ) [AS alias]`` in a query, for the SQL door.

Supported shape (Flink's, Trino's and the standard's)::

    FROM <table | (subquery) | function(args)> [[AS] t [(c1, ...)]] MATCH_RECOGNIZE ( <clause> ) [[AS] m [(o1, ...)]]

also after ``JOIN`` or ``,``.  ``t(c1, ...)`` names the input relation and its columns (Trino's tests write
``(VALUES (1, 90)) t(id, value) MATCH_RECOGNIZE (...)``); ``m(o1, ...)`` names the output columns.  The clause is parsed here (engine-free) so that syntax and validation
errors point at the line and column of the whole query.  Only outermost occurrences are returned:
a MATCH_RECOGNIZE inside another one's subquery is handled when that subquery is rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import ClauseSpec, parse_clause
from timeweave.core.sql_tokens import Token, TokenType, tokenize

_NOT_ALIAS = {
    "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "MINUS", "JOIN", "LEFT", "RIGHT",
    "INNER", "FULL", "CROSS", "NATURAL", "WINDOW", "QUALIFY", "CLUSTER", "DISTRIBUTE", "SORT", "LATERAL", "OFFSET",
    "ON", "USING", "FOR", "AS", "SELECT", "FROM", "MATCH_RECOGNIZE", "PIVOT", "UNPIVOT", "TABLESAMPLE",
}  # fmt: skip
_BEFORE_RELATION = {"FROM", "JOIN", ","}


@dataclass(frozen=True)
class MatchRecognizeClause:
    """One ``... MATCH_RECOGNIZE (...) [AS alias]`` in a query and the span ``[start, end)`` it occupies."""

    start: int
    end: int
    relation: str  # a table name, or a parenthesized subquery (parentheses included)
    clause: str  # the text between MATCH_RECOGNIZE's parentheses
    clause_start: int  # offset of ``clause`` in the query
    alias: str | None
    spec: ClauseSpec
    alias_columns: str | None = None  # ``(a, b)`` of ``AS m(a, b)``: names for the output columns, in order


def reposition(error: QuerySyntaxError, query: str, offset: int) -> QuerySyntaxError:
    """``error`` (positioned in a clause) re-positioned in ``query``, where the clause starts at ``offset``.

    >>> err = reposition(QuerySyntaxError("bad", text="PATTERN (", position=9), "SELECT 1 FROM t PATTERN (", 16)
    >>> (err.line, err.col)
    (1, 26)
    """
    moved = type(error)(error.description, text=query, position=offset + error.position)
    return moved


def _fail(message: str, text: str, tok: Token | None) -> QuerySyntaxError:
    return QuerySyntaxError(message, text=text, position=tok.start if tok else len(text))


def _matching(tokens: list[Token], i: int, step: int) -> int:
    """Index of the parenthesis matching ``tokens[i]`` (step +1 forwards from '(', -1 backwards from ')')."""
    depth = 0
    while 0 <= i < len(tokens):
        depth += {TokenType.LPAREN: 1, TokenType.RPAREN: -1}.get(tokens[i].type, 0) * step
        if depth == 0:
            return i
        i += step
    return -1


def find_match_recognize(text: str) -> list[MatchRecognizeClause]:
    """All outermost MATCH_RECOGNIZE clauses of ``text``, in order of appearance.

    >>> [c] = find_match_recognize("SELECT * FROM ticker MATCH_RECOGNIZE (ORDER BY t MEASURES COUNT(*) AS n "
    ...                            "PATTERN (A+) DEFINE A AS A.p > 0) AS m WHERE n > 1")
    >>> c.relation, c.alias, c.clause[:10], c.spec.measures[0].name
    ('ticker', 'm', 'ORDER BY t', 'n')
    """
    tokens = tokenize(text)
    found = [_parse_one(text, tokens, i) for i, t in enumerate(tokens) if t.upper == "MATCH_RECOGNIZE"]
    return [c for c in found if not any(o is not c and o.start <= c.start and c.end <= o.end for o in found)]


def _is_name(tok: Token) -> bool:
    return tok.type is TokenType.QUOTED or (tok.type is TokenType.WORD and tok.upper not in _NOT_ALIAS)


def _follows_relation(tokens: list[Token], i: int) -> bool:
    """Whether ``tokens[i]`` comes after (the end of) a relation, so a name there is an alias, not a table."""
    return i >= 0 and (tokens[i].type is TokenType.RPAREN or _is_name(tokens[i]) or tokens[i].upper == "AS")


def _opening(text: str, tokens: list[Token], closing: int) -> int:
    """Index of the '(' matching the ')' at ``closing`` (a positioned error when there is none)."""
    opening = _matching(tokens, closing, -1)
    if opening < 0:
        raise _fail("unbalanced parenthesis before MATCH_RECOGNIZE", text, tokens[closing])
    return opening


def _relation_start(text: str, tokens: list[Token], j: int, keyword: Token) -> int:
    """Index of the first token of the input relation that ends at ``tokens[j]``.

    The relation is ``<table | (subquery) | function(args)> [[AS] alias [(column, ...)]]`` (Trino's and
    the standard's ``t(id, value) MATCH_RECOGNIZE``): the alias and column list stay part of the
    relation's text, so Spark applies them when it resolves the relation.
    """
    i = j
    # -- optional alias (with optional column list): only after something that ends a relation ----------
    named = False
    if tokens[i].type is TokenType.RPAREN:
        opening = _opening(text, tokens, i)
        # `alias(col, ...)`; a function call `f(...)` follows FROM / JOIN / ',' instead
        named = opening >= 1 and _is_name(tokens[opening - 1]) and _follows_relation(tokens, opening - 2)
        if named:
            i = opening - 1
    elif _is_name(tokens[i]) and _follows_relation(tokens, i - 1):
        named = True
    if named:
        i -= 1
        if i >= 0 and tokens[i].upper == "AS":
            i -= 1
    # -- the relation itself -------------------------------------------------------------------------
    if i < 0:
        raise _fail("MATCH_RECOGNIZE needs an input table or (subquery) before it", text, keyword)
    if tokens[i].type is TokenType.RPAREN:
        k = _opening(text, tokens, i)
        if k >= 1 and _is_name(tokens[k - 1]) and not _follows_relation(tokens, k - 2):
            k -= 1  # a table-valued function call: range(10)
    elif _is_name(tokens[i]):
        k = i
        while k - 2 >= 0 and tokens[k - 1].text == "." and tokens[k - 2].type in (TokenType.WORD, TokenType.QUOTED):
            k -= 2
    else:
        raise _fail("MATCH_RECOGNIZE needs an input table or (subquery) before it", text, keyword)
    before = tokens[k - 1] if k > 0 else None
    if before is None or before.upper not in _BEFORE_RELATION:
        raise _fail("MATCH_RECOGNIZE must follow a table or (subquery) in FROM", text, tokens[k])
    return k


def _parse_one(text: str, tokens: list[Token], at: int) -> MatchRecognizeClause:
    keyword = tokens[at]
    # -- backwards: the input relation (with its alias, if any) -----------------------------------------
    j = at - 1
    if j < 0:
        raise _fail("MATCH_RECOGNIZE needs an input table or (subquery) before it", text, keyword)
    k = _relation_start(text, tokens, j, keyword)
    relation = text[tokens[k].start : tokens[j].end]
    # -- forwards: ( clause ) [AS] alias --------------------------------------------------------------
    open_index = at + 1
    if open_index >= len(tokens) or tokens[open_index].type is not TokenType.LPAREN:
        raise _fail("MATCH_RECOGNIZE must be followed by '('", text, tokens[open_index] if open_index < len(tokens) else None)
    close_index = _matching(tokens, open_index, 1)
    if close_index < 0:
        raise _fail("MATCH_RECOGNIZE ( is never closed", text, tokens[open_index])
    clause_start = tokens[open_index].end
    clause = text[clause_start : tokens[close_index].start]
    try:
        spec = parse_clause(clause)
    except QuerySyntaxError as error:
        raise reposition(error, text, clause_start) from None
    end = tokens[close_index].end
    i = close_index + 1
    alias = alias_columns = None
    if i < len(tokens) and tokens[i].upper == "AS":
        if i + 1 >= len(tokens) or tokens[i + 1].type not in (TokenType.WORD, TokenType.QUOTED):
            raise _fail("AS must be followed by an alias", text, tokens[i + 1] if i + 1 < len(tokens) else None)
        i += 1
    if i < len(tokens) and _is_name(tokens[i]):
        alias = tokens[i].name
        end = tokens[i].end
        if i + 1 < len(tokens) and tokens[i + 1].type is TokenType.LPAREN:  # AS m(a, b): names for the output columns
            closing = _matching(tokens, i + 1, 1)
            if closing < 0:
                raise _fail("the column list of the alias is never closed", text, tokens[i + 1])
            alias_columns = text[tokens[i + 1].start : tokens[closing].end]
            end = tokens[closing].end
    return MatchRecognizeClause(tokens[k].start, end, relation, clause, clause_start, alias, spec, alias_columns)

__all__ = ["MatchRecognizeClause", "find_match_recognize", "reposition"]
