"""Find ``<table or (subquery)> MATCH_RECOGNIZE ( ... ) [AS alias]`` in a query, for the SQL door.

Supported shape (Flink's and the standard's)::

    FROM <table or (subquery)> MATCH_RECOGNIZE ( <clause> ) [[AS] alias]

also after ``JOIN`` or ``,``.  The clause is parsed here (engine-free) so that syntax and validation
errors point at the line and column of the whole query.  Only outermost occurrences are returned:
a MATCH_RECOGNIZE inside another one's subquery is handled when that subquery is rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.core.errors import QuerySyntaxError
from runtime.core.pattern import ClauseSpec, parse_clause
from runtime.core.sql_tokens import Token, TokenType, tokenize

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


def _parse_one(text: str, tokens: list[Token], at: int) -> MatchRecognizeClause:
    keyword = tokens[at]
    # -- backwards: the input relation --------------------------------------------------------------
    j = at - 1
    if j < 0:
        raise _fail("MATCH_RECOGNIZE needs an input table or (subquery) before it", text, keyword)
    if tokens[j].type is TokenType.RPAREN:
        k = _matching(tokens, j, -1)
        if k < 0:
            raise _fail("unbalanced parenthesis before MATCH_RECOGNIZE", text, tokens[j])
    elif tokens[j].type in (TokenType.WORD, TokenType.QUOTED) and tokens[j].upper not in _NOT_ALIAS:
        k = j
        while k - 2 >= 0 and tokens[k - 1].text == "." and tokens[k - 2].type in (TokenType.WORD, TokenType.QUOTED):
            k -= 2
    else:
        raise _fail("MATCH_RECOGNIZE needs an input table or (subquery) before it", text, keyword)
    before = tokens[k - 1] if k > 0 else None
    if before is None or before.upper not in _BEFORE_RELATION:
        if before is not None and (before.upper == "AS" or before.type in (TokenType.WORD, TokenType.QUOTED)
                                   or before.type is TokenType.RPAREN):
            raise _fail("the alias goes after MATCH_RECOGNIZE (...): write <table> MATCH_RECOGNIZE (...) AS alias",
                        text, tokens[k])
        raise _fail("MATCH_RECOGNIZE must follow a table or (subquery) in FROM", text, tokens[k])
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
    alias = None
    if i < len(tokens) and tokens[i].upper == "AS":
        if i + 1 >= len(tokens) or tokens[i + 1].type not in (TokenType.WORD, TokenType.QUOTED):
            raise _fail("AS must be followed by an alias", text, tokens[i + 1] if i + 1 < len(tokens) else None)
        i += 1
    if i < len(tokens) and (tokens[i].type is TokenType.QUOTED or (
            tokens[i].type is TokenType.WORD and tokens[i].upper not in _NOT_ALIAS)):
        alias = tokens[i].name
        end = tokens[i].end
    return MatchRecognizeClause(tokens[k].start, end, relation, clause, clause_start, alias, spec)


__all__ = ["MatchRecognizeClause", "find_match_recognize", "reposition"]
