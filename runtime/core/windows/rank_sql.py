"""Recognise Flink's window Top-N and window deduplication over one window TVF in a query, for the streaming SQL
door to run them as the streaming rank operator (the batch door runs them as Spark's ranking over the TVF's rows).

What a window ranking is, is :func:`timeweave.core.windows.ops_sql.window_rankings`' rule (a ranking function
whose PARTITION BY names ``window_start`` and ``window_end``).  The shape read here, as Flink's docs write it
(names may be qualified by the TVF's alias)::

    SELECT ... FROM (
        SELECT <items>, ROW_NUMBER() | RANK() | DENSE_RANK() OVER (
            PARTITION BY window_start, window_end [, key, ...] ORDER BY col [ASC | DESC] [NULLS FIRST | LAST], ...
        ) [AS] rownum [, <items>]
        FROM <TUMBLE | HOP | CUMULATE call> [[AS] alias]
    ) [[AS] alias] WHERE ... rownum <= N | rownum < N | rownum = N | rownum BETWEEN a AND b ... [AND ...]

The rank bound is one conjunct of the outer WHERE (the others, and the WHERE itself, stay in the query and
apply to the ranked rows).  A Top-1 by ROW_NUMBER ordered by the TVF's time column alone is Flink's window
deduplication (``keep`` first ascending, last descending).  Anything else is
:class:`~timeweave.core.windows.aggregate_sql.Declined` with the reason and its position: a WHERE inside the
ranked block (it filters before ranking), a ranked window aggregation (two operators), an expression in the
OVER clause, no rank bound...  Engine-free, runs no query.

>>> query = ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, item "
...          "ORDER BY price DESC) AS rownum FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(bidtime), "
...          "INTERVAL '10' MINUTES))) WHERE rownum <= 3")
>>> [call] = find_window_tvfs(query)
>>> shape = window_rank_query(query, call)
>>> shape.keys, shape.order, shape.ranks, shape.alias, shape.keep
(('item',), (SortKey(column='price', descending=True, nulls_first=False),), RankRange(function='ROW_NUMBER', lower=1, upper=3), 'rownum', None)
>>> query[shape.ranking[0] : shape.ranking[1]][-20:], [query[a:b] for a, b in shape.stars]
('ORDER BY price DESC)', ['*'])
>>> unbounded = query.replace(" WHERE rownum <= 3", "")
>>> print(window_rank_query(unbounded, call).describe(unbounded))
the end of the query: a window Top-N keeps the ranks its outer WHERE bounds (WHERE rownum <= N) (line 1, col 195)
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.errors import SpecError
from timeweave.core.sql_tokens import Token, TokenType
from timeweave.core.windows.aggregate_sql import Declined
from timeweave.core.windows.ops_sql import QueryTokens, WindowRanking, window_rankings
from timeweave.core.windows.ranking import RankRange, SortKey
from timeweave.core.windows.spec import WINDOW_COLUMNS, SessionSpec
from timeweave.core.windows.tvf_sql import WindowTvf, find_window_tvfs  # noqa: F401 (the doctests find the calls)

_NAMES = (TokenType.WORD, TokenType.QUOTED)
#: Words that cannot be a bare alias after a relation or subquery.
_NOT_ALIAS = frozenset(("FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "JOIN", "LEFT", "RIGHT", "FULL", "INNER", "OUTER",
                        "CROSS", "SEMI", "ANTI", "NATURAL", "LATERAL", "ON", "USING", "UNION", "INTERSECT", "EXCEPT",
                        "MINUS", "WINDOW", "QUALIFY", "SORT", "CLUSTER", "DISTRIBUTE", "PIVOT", "UNPIVOT",
                        "TABLESAMPLE"))
#: Words that end a WHERE condition at its depth.
_WHERE_ENDS = frozenset(("GROUP", "HAVING", "ORDER", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "MINUS", "WINDOW",
                         "QUALIFY", "SORT", "CLUSTER", "DISTRIBUTE", "OFFSET"))


@dataclass(frozen=True)
class WindowRankQuery:
    """A window Top-N / deduplication the streaming rank operator runs.

    Character spans of the query: ``ranking`` (``ROW_NUMBER() OVER (...)``, which the door replaces by the
    operator's rank column) and ``stars`` (the ranked block's ``*`` / ``alias.*`` select items, which must not
    list that column).  ``alias``: the rank's output name; ``keys``: the PARTITION BY columns besides the window
    columns; ``order``: the ORDER BY; ``ranks``: the function and the bounds the outer WHERE keeps; ``keep``:
    ``first`` / ``last`` for a window deduplication (None: a Top-N)."""

    call: WindowTvf
    ranking: tuple[int, int]
    stars: tuple[tuple[int, int], ...]
    alias: str
    keys: tuple[str, ...]
    order: tuple[SortKey, ...]
    ranks: RankRange
    keep: str | None = None


class _Decline(Exception):
    def __init__(self, reason: str, position: int) -> None:
        super().__init__(reason)
        self.declined = Declined(reason, position)


class _Reader:
    """The query's tokens around one window ranking."""

    def __init__(self, q: QueryTokens, ranking: WindowRanking) -> None:
        self.q, self.ranking = q, ranking
        self.alias: str | None = None  # the TVF's alias, the one qualifier names may carry

    def tok(self, j: int) -> Token | None:
        return self.q.tokens[j] if 0 <= j < len(self.q.tokens) else None

    def position(self, j: int) -> int:
        tok = self.tok(j)
        return tok.start if tok is not None else len(self.q.text)

    def text(self, lo: int, hi: int) -> str:
        return self.q.text[self.position(lo) : self.q.tokens[hi - 1].end] if hi > lo else ""

    def items(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Token ranges of the comma-separated items in ``[lo, hi)`` at ``lo``'s depth."""
        depth = self.q.depth[lo] if lo < len(self.q.tokens) else 0
        items, first = [], lo
        for j in range(lo, hi):
            if self.q.depth[j] == depth and self.q.tokens[j].text == ",":
                items.append((first, j))
                first = j + 1
        items.append((first, hi))
        return items

    def column(self, lo: int, hi: int, what: str) -> str:
        """The column tokens ``[lo, hi)`` name (``name`` or ``alias.name``); declined otherwise."""
        span = self.q.tokens[lo:hi]
        if len(span) == 1 and span[0].type in _NAMES:
            return span[0].name
        if len(span) == 3 and span[0].type in _NAMES and span[1].text == "." and span[2].type in _NAMES:
            if self.alias is not None and span[0].name.lower() == self.alias.lower():
                return span[2].name
            raise _Decline(f"{what} {self.text(lo, hi)}: qualified by a name other than the TVF's alias",
                           self.position(lo))
        raise _Decline(f"{what} {self.text(lo, hi)}: the streaming rank operator takes plain columns only",
                       self.position(lo))

    def alias_at(self, j: int) -> tuple[str | None, int]:
        """The alias at token ``j`` (``AS x`` or ``x``) and the index after it."""
        tok = self.tok(j)
        if tok is not None and tok.upper == "AS" and self.tok(j + 1) is not None and self.q.tokens[j + 1].type in _NAMES:
            return self.q.tokens[j + 1].name, j + 2
        if tok is not None and (tok.type is TokenType.QUOTED or (tok.type is TokenType.WORD and tok.upper not in _NOT_ALIAS)):
            return tok.name, j + 1
        return None, j


def _from_clause(r: _Reader, call: WindowTvf) -> None:
    """The ranked block's FROM clause is the TVF call and its alias, nothing after it in the block."""
    q, ranking = r.q, r.ranking
    first = ranking.source + 1
    if r.position(first) != call.start:
        raise _Decline(f"{r.text(first, ranking.stop)[:40]}: in streaming mode the ranked block reads the window "
                       "TVF call itself (a Top-N of a window aggregation runs two operators)", r.position(first))
    last = next(j for j in range(first, len(q.tokens)) if q.tokens[j].end == call.end)
    r.alias, j = r.alias_at(last + 1)
    tok = r.tok(j)
    if tok is not None and q.depth[j] >= q.depth[ranking.source] and tok.text != ";":
        raise _Decline(f"{tok.text}: the streaming rank operator ranks the TVF's rows as they are (a {tok.upper} in "
                       "the ranked block would apply before ranking: filter in the outer query, after the ranking)",
                       tok.start)


def _over(r: _Reader, call: WindowTvf) -> tuple[tuple[str, ...], tuple[SortKey, ...]]:
    """The OVER clause's PARTITION BY keys (besides the window columns) and ORDER BY keys."""
    q, ranking = r.q, r.ranking
    lo, hi = ranking.function + 5, ranking.over_end  # after "FN ( ) OVER (", up to ")"
    order_at = next((j for j in range(lo, hi) if q.word(j) == "ORDER" and q.word(j + 1) == "BY"
                     and q.depth[j] == q.depth[lo]), None)
    if order_at is None:
        raise _Decline("OVER: a window Top-N needs an ORDER BY", r.position(ranking.function + 4))
    if q.word(lo + 1) != "BY":
        raise _Decline("PARTITION: expected PARTITION BY", r.position(lo))
    keys: list[str] = []
    for a, b in r.items(lo + 2, order_at):
        name = r.column(a, b, "PARTITION BY")
        if name.lower() not in WINDOW_COLUMNS and name.lower() not in (k.lower() for k in keys):
            keys.append(name)
    order = []
    for a, b in r.items(order_at + 2, hi):
        words = [t.upper for t in q.tokens[a:b]]
        end = b
        while end > a and words[end - a - 1] in ("ASC", "DESC", "NULLS", "FIRST", "LAST"):
            end -= 1
        column = r.column(a, end, "ORDER BY")
        try:
            key = SortKey.parse("`" + column.replace("`", "``") + "` " + r.text(end, b))
        except SpecError as error:
            raise _Decline(f"ORDER BY {r.text(a, b)}: {error.message}", r.position(a)) from None
        order.append(key)
    return tuple(keys), tuple(order)


def _ranking_item(r: _Reader, select: int) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The rank's alias (the select item the ranking is) and the ``*`` items' character spans."""
    q, ranking = r.q, r.ranking
    if q.word(select + 1) in ("DISTINCT", "ALL"):
        raise _Decline(f"SELECT {q.tokens[select + 1].text}: the ranked block takes a plain select list",
                       r.position(select + 1))
    alias, stars = None, []
    for a, b in r.items(select + 1, ranking.source):
        if a <= ranking.function < b:
            if a != ranking.function:
                raise _Decline(f"{r.text(a, b)[:40]}: the ranking is a select item of its own (ROW_NUMBER() OVER "
                               "(...) AS rownum)", r.position(a))
            alias, after = r.alias_at(ranking.over_end + 1)
            if alias is None or after != b:
                raise _Decline(f"{r.text(a, b)[:60]}: name the rank (... OVER (...) AS rownum) for the outer WHERE "
                               "to bound it", r.position(ranking.over_end + 1))
        elif b - a == 1 and q.tokens[a].text == "*":
            stars.append((q.tokens[a].start, q.tokens[a].end))
        elif b - a == 3 and q.tokens[a].type in _NAMES and q.tokens[a + 1].text == "." and q.tokens[a + 2].text == "*":
            stars.append((q.tokens[a].start, q.tokens[a + 2].end))
    assert alias is not None  # the ranking is one of the block's items
    return alias, tuple(stars)


def _rank_bound(r: _Reader, alias: str, block_open: int, function: str) -> RankRange:
    """The ranks the outer WHERE keeps: its conjuncts ``alias <= N`` / ``< N`` / ``= N`` / ``BETWEEN a AND b``."""
    q = r.q
    close = q.group_end(block_open)
    _, j = r.alias_at(close + 1)
    if q.word(j) != "WHERE":
        tok = r.tok(j)
        found = "the end of the query" if tok is None or q.depth[j] < q.depth[block_open] else tok.text
        raise _Decline(f"{found}: a window Top-N keeps the ranks its outer WHERE bounds (WHERE {alias} <= N)",
                       r.position(j))
    depth = q.depth[j]
    end = j + 1
    while end < len(q.tokens) and q.depth[end] >= depth and not (q.depth[end] == depth and (
            q.word(end) in _WHERE_ENDS or q.tokens[end].text == ";")):
        end += 1
    conjuncts, first, between = [], j + 1, False
    for k in range(j + 1, end):
        if q.depth[k] != depth:
            continue
        if q.word(k) == "OR":
            raise _Decline(f"OR: the rank bound is a conjunct of the outer WHERE ({alias} <= N AND ...)", r.position(k))
        if q.word(k) == "BETWEEN":
            between = True
        elif q.word(k) == "AND":
            if between:
                between = False
                continue
            conjuncts.append((first, k))
            first = k + 1
    conjuncts.append((first, end))
    lower, upper = 1, None
    for a, b in conjuncts:
        bound = _bound(q, a, b, alias)
        if bound is not None:
            lower, upper = max(lower, bound[0]), bound[1] if upper is None else min(upper, bound[1])
    if upper is None:
        raise _Decline(f"WHERE: a window Top-N keeps the ranks its outer WHERE bounds ({alias} <= N, {alias} < N, "
                       f"{alias} = N or {alias} BETWEEN a AND b)", r.position(j))
    try:
        return RankRange(function, lower, upper)
    except SpecError as error:
        raise _Decline(f"WHERE: {error.message}", r.position(j)) from None


def _bound(q: QueryTokens, a: int, b: int, alias: str) -> tuple[int, int] | None:
    """``(lower, upper)`` of the conjunct in tokens ``[a, b)`` when it bounds the rank ``alias``, else None."""
    span = q.tokens[a:b]
    if len(span) >= 3 and span[1].text == "." and span[0].type in _NAMES:
        span = span[2:]  # the subquery's alias as qualifier
    if not span or span[0].type not in _NAMES or span[0].name.lower() != alias.lower():
        return None
    rest = span[1:]
    numbers = [t for t in rest if t.type is TokenType.NUMBER]
    if len(rest) == 2 and rest[1].type is TokenType.NUMBER and rest[1].text.isdigit():
        n = int(rest[1].text)
        return {"<=": (1, n), "<": (1, n - 1), "=": (n, n)}.get(rest[0].text)
    if (len(rest) == 4 and rest[0].upper == "BETWEEN" and rest[2].upper == "AND" and len(numbers) == 2
            and all(t.text.isdigit() for t in numbers)):
        return int(rest[1].text), int(rest[3].text)
    return None


def _recognise(q: QueryTokens, ranking: WindowRanking) -> WindowRankQuery:
    call = ranking.call
    function = q.tokens[ranking.function]
    if call is None or ranking.aggregated:
        raise _Decline(f"{function.text}: in streaming mode a window Top-N ranks the rows of one TUMBLE / HOP / "
                       "CUMULATE call (a Top-N of a window aggregation runs two operators)", function.start)
    if isinstance(call.spec, SessionSpec):
        raise _Decline(f"{call.function}: Flink ranks TUMBLE, HOP or CUMULATE windows, not SESSION windows",
                       call.start)
    r = _Reader(q, ranking)
    _from_clause(r, call)
    keys, order = _over(r, call)
    select = q.scan(ranking.function, -1, frozenset(("SELECT",)))
    if not (0 <= select < len(q.tokens)) or q.word(select) != "SELECT" or q.word(select - 1) != "(":
        raise _Decline(f"{function.text}: the ranked block is a subquery in FROM, its rank bounded by the outer WHERE",
                       function.start)
    alias, stars = _ranking_item(r, select)
    ranks = _rank_bound(r, alias, select - 1, function.upper)
    keep = None
    if (ranks.function == "ROW_NUMBER" and ranks.upper == 1 and len(order) == 1
            and order[0].column.lower() == call.time_column.lower()):
        keep = "last" if order[0].descending else "first"
    span = (function.start, q.tokens[ranking.over_end].end)
    return WindowRankQuery(call, span, stars, alias, keys, order, ranks, keep)


def window_rank_query(text: str, call: WindowTvf) -> WindowRankQuery | Declined | None:
    """The window Top-N / deduplication ranking ``call``'s rows (one of :func:`find_window_tvfs` of ``text``)
    when it has the module's shape, else why not; None when no window ranking reads ``call``.

    >>> query = "SELECT * FROM (SELECT *, RANK() OVER (PARTITION BY window_start, window_end ORDER BY price) r FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE) WHERE price > 0) WHERE r <= 2"
    >>> print(window_rank_query(query, find_window_tvfs(query)[0]).describe(query))
    WHERE: the streaming rank operator ranks the TVF's rows as they are (a WHERE in the ranked block would apply before ranking: filter in the outer query, after the ranking) (line 1, col 153)
    """
    q = QueryTokens(text)
    for ranking in window_rankings(q):
        if ranking.call is not None and ranking.call.start != call.start:
            continue
        if ranking.call is None and not (q.tokens[ranking.source].start < call.start < _end(q, ranking)):
            continue
        try:
            return _recognise(q, ranking)
        except _Decline as declined:
            return declined.declined
    return None


def _end(q: QueryTokens, ranking: WindowRanking) -> int:
    """Where the ranking's FROM clause ends (a character offset)."""
    return q.tokens[ranking.stop].start if ranking.stop < len(q.tokens) else len(q.text)


__all__ = ["WindowRankQuery", "window_rank_query"]
