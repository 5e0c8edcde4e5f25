"""Flink's rules on window Top-N, deduplication and joins, checked on a query's text before it runs.

Spark runs Flink's window Top-N / deduplication (``ROW_NUMBER() OVER (PARTITION BY window_start, window_end
...)`` filtered on the rank) and window joins (``ON L.window_start = R.window_start AND L.window_end =
R.window_end ...``, ``IN`` / ``EXISTS`` subqueries) as written once the window TVFs are rewritten, with
the same rows.  What Spark would run but Flink refuses is refused here, with the position in the query:

* a window join whose inputs use different window TVFs or sizes (Flink: "the windowing TVFs must be the
  same of left and right inputs"), for ``JOIN ... ON`` and for ``IN`` / ``EXISTS`` subqueries;
* a window join, Top-N or deduplication directly over a SESSION TVF (Flink runs them over TUMBLE, HOP and
  CUMULATE only; over a window aggregation of sessions they are fine).

A join is a window join when its condition names both ``window_start`` and ``window_end``; a ranking is a
window ranking when its PARTITION BY names both.  An input that is a table or view (not a TVF call in the
query) is not checked: its windows are not visible in the text.

>>> check_window_ops("SELECT * FROM (SELECT * FROM TABLE(TUMBLE(TABLE l, DESCRIPTOR(ts), INTERVAL '5' MINUTES))) L "
...                  "JOIN (SELECT * FROM TABLE(HOP(TABLE r, DESCRIPTOR(ts), INTERVAL '5' MINUTES, "
...                  "INTERVAL '10' MINUTES))) R ON L.window_start = R.window_start AND L.window_end = R.window_end")
Traceback (most recent call last):
...
timeweave.core.errors.QuerySyntaxError: window join: both inputs must use the same window TVF (Flink's rule): left TUMBLE(size 300000 ms) at line 1, col 30, right HOP(slide 300000 ms, size 600000 ms) (line 1, col 114)
...
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.sql_tokens import Token, TokenType, tokenize
from timeweave.core.windows.ranking import RANK_FUNCTIONS, check_join_windows, describe
from timeweave.core.windows.spec import SessionSpec
from timeweave.core.windows.tvf_sql import WindowTvf, find_window_tvfs

_JOIN_WORDS = frozenset(("LEFT", "RIGHT", "FULL", "INNER", "OUTER", "CROSS", "SEMI", "ANTI", "NATURAL"))
_CLAUSE_ENDS = frozenset(("WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "JOIN",
                          "WINDOW", "QUALIFY", "CLUSTER", "DISTRIBUTE", "SORT", *_JOIN_WORDS))
_ON_SEARCH_ENDS = frozenset(("ON", "USING", *_CLAUSE_ENDS))


class QueryTokens:
    """The query's tokens, each token's parenthesis depth and its TVF calls (also read by the streaming SQL
    door's shape readers, :mod:`timeweave.core.windows.rank_sql`)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.calls = find_window_tvfs(text)
        self.depth: list[int] = []
        depth = 0
        for tok in self.tokens:
            if tok.type is TokenType.RPAREN:
                depth -= 1
            self.depth.append(depth)
            if tok.type is TokenType.LPAREN:
                depth += 1

    def word(self, i: int) -> str:
        return self.tokens[i].upper if 0 <= i < len(self.tokens) else ""

    def group_end(self, i: int) -> int:
        """The index of the ')' closing the '(' at ``i``."""
        for j in range(i + 1, len(self.tokens)):
            if self.tokens[j].type is TokenType.RPAREN and self.depth[j] == self.depth[i]:
                return j
        return len(self.tokens) - 1

    def scan(self, i: int, step: int, stop: frozenset[str]) -> int:
        """From ``i`` (exclusive) in direction ``step``, the first token at ``i``'s depth whose word is in
        ``stop``, or the edge of the enclosing parentheses (the index just past the last token inside)."""
        d = self.depth[i]
        j = i + step
        while 0 <= j < len(self.tokens):
            if self.depth[j] < d:  # the enclosing parenthesis (a group's own parentheses have its depth)
                return j
            if self.depth[j] == d and self.tokens[j].upper in stop:
                return j
            j += step
        return j

    def outermost(self, lo: int, hi: int) -> list[WindowTvf]:
        """The TVF calls within characters ``[lo, hi)`` not inside another such call."""
        inside = [c for c in self.calls if lo <= c.start and c.end <= hi]
        return [c for c in inside if not any(o is not c and o.start <= c.start and c.end <= o.end for o in inside)]

    def names(self, lo: int, hi: int) -> set[str]:
        """The (last parts of the) words and quoted names in token range ``[lo, hi)``, lowercased."""
        return {t.name.lower() for t in self.tokens[lo:hi] if t.type in (TokenType.WORD, TokenType.QUOTED)}

    def aggregates_after(self, call: WindowTvf, lo: int, hi: int) -> bool:
        """Whether a GROUP BY outside ``call`` lies within characters ``[lo, hi)`` (its windows aggregated)."""
        return any(t.upper == "GROUP" and lo <= t.start < hi and not (call.start <= t.start < call.end)
                   for t in self.tokens)

    def at(self, call: WindowTvf) -> str:
        before = self.text[: call.start]
        return f"line {before.count(chr(10)) + 1}, col {call.start - (before.rfind(chr(10)) + 1) + 1}"


def _char_span(q: QueryTokens, lo: int, hi: int) -> tuple[int, int]:
    """Characters covered by token range ``[lo, hi)``."""
    if lo >= hi or lo >= len(q.tokens):
        return (0, 0)
    return q.tokens[lo].start, q.tokens[min(hi, len(q.tokens)) - 1].end


def _side(q: QueryTokens, lo: int, hi: int) -> WindowTvf | None:
    start, end = _char_span(q, lo, hi)
    calls = q.outermost(start, end)
    return calls[0] if len(calls) == 1 else None


def _fail(message: str, q: QueryTokens, tok: Token | WindowTvf) -> QuerySyntaxError:
    return QuerySyntaxError(message, text=q.text, position=tok.start)


def _check_pair(q: QueryTokens, left: WindowTvf | None, right: WindowTvf | None, spans: tuple[tuple[int, int], ...]) -> None:
    if left is None or right is None:
        return
    for call, (lo, hi) in zip((left, right), spans, strict=True):
        if isinstance(call.spec, SessionSpec) and not q.aggregates_after(call, lo, hi):
            raise _fail("window join: Flink joins TUMBLE, HOP or CUMULATE windows, not SESSION windows directly; "
                        "aggregate the sessions first, then join the results", q, call)
    if isinstance(left.spec, SessionSpec) or isinstance(right.spec, SessionSpec):
        if left.spec != right.spec:
            raise _fail(f"window join: both inputs must use the same window TVF (Flink's rule): left "
                        f"{describe(left.spec)} at {q.at(left)}, right {describe(right.spec)}", q, right)
        return
    try:
        check_join_windows(left.spec, right.spec)
    except SpecError:
        raise _fail(f"window join: both inputs must use the same window TVF (Flink's rule): left "
                    f"{describe(left.spec)} at {q.at(left)}, right {describe(right.spec)}", q, right) from None


@dataclass(frozen=True)
class WindowJoin:
    """A window join of a query: ``... JOIN ... ON`` whose condition names both ``window_start`` and
    ``window_end``.  Token indices into :class:`QueryTokens`' tokens: ``first`` (the join's first word, e.g.
    LEFT), ``join`` (JOIN), ``on`` (ON) and ``end`` (the token ending the condition, or the number of tokens);
    ``left`` / ``right``: each side's token range; ``calls``: each side's one outermost TVF call (None: none,
    or several)."""

    first: int
    join: int
    on: int
    end: int
    left: tuple[int, int]
    right: tuple[int, int]
    calls: tuple[WindowTvf | None, WindowTvf | None]


def window_joins(q: QueryTokens) -> list[WindowJoin]:
    """The window joins of ``q`` (the one rule of what a window join is: its ON names both window columns)."""
    tokens = q.tokens
    found = []
    for i, tok in enumerate(tokens):
        if tok.upper != "JOIN":
            continue
        # the join's own ON: a later JOIN's (after a JOIN without a condition) is not this join's
        on = q.scan(i, 1, _ON_SEARCH_ENDS)
        if on >= len(tokens) or tokens[on].upper != "ON":
            continue
        cond_end = q.scan(on, 1, _CLAUSE_ENDS)
        if not {"window_start", "window_end"} <= q.names(on + 1, cond_end):
            continue
        first = i
        while first - 1 >= 0 and tokens[first - 1].upper in _JOIN_WORDS and q.depth[first - 1] == q.depth[i]:
            first -= 1
        left_from = q.scan(first, -1, frozenset(("FROM", "JOIN", "ON")))
        left_lo = left_from + 1
        if 0 <= left_from < len(tokens) and tokens[left_from].upper == "ON":  # a chain: skip the previous condition
            left_lo = q.scan(left_from, 1, _CLAUSE_ENDS)
        left_span, right_span = (left_lo, first), (i + 1, on)
        found.append(WindowJoin(first, i, on, cond_end, left_span, right_span,
                                (_side(q, *left_span), _side(q, *right_span))))
    return found


def _check_joins(q: QueryTokens) -> None:
    for join in window_joins(q):
        spans = tuple(_char_span(q, *s) for s in (join.left, join.right))
        _check_pair(q, *join.calls, spans)


def _check_subqueries(q: QueryTokens) -> None:
    tokens = q.tokens
    for i, tok in enumerate(tokens):
        if tok.upper not in ("IN", "EXISTS") or i + 1 >= len(tokens) or tokens[i + 1].type is not TokenType.LPAREN:
            continue
        close = q.group_end(i + 1)
        if q.word(i + 2) not in ("SELECT", "WITH") or not {"window_start", "window_end"} <= q.names(i + 2, close):
            continue
        where = q.scan(i, -1, frozenset(("WHERE", "HAVING", "ON")))
        if not (0 <= where < len(tokens)) or tokens[where].upper not in ("WHERE", "HAVING"):
            continue
        source = q.scan(where, -1, frozenset(("FROM",)))
        if not (0 <= source < len(tokens)) or tokens[source].upper != "FROM":
            continue
        left_span, right_span = (source + 1, where), (i + 2, close)
        spans = tuple(_char_span(q, *s) for s in (left_span, right_span))
        _check_pair(q, _side(q, *left_span), _side(q, *right_span), spans)


@dataclass(frozen=True)
class WindowRanking:
    """A window ranking of a query: ``RANK_FUNCTION() OVER (PARTITION BY ... window_start ... window_end ...)``.

    Token indices into :class:`QueryTokens`' tokens: ``function`` (the ranking function's name), ``over_end``
    (the OVER clause's closing parenthesis), ``source`` (its block's FROM) and ``stop`` (the token ending that
    FROM clause, or the number of tokens).  ``call``: the one outermost TVF call in the FROM clause (None: none,
    or several); ``aggregated``: the block itself has a GROUP BY (it ranks its own aggregated rows).
    """

    function: int
    over_end: int
    source: int
    stop: int
    call: WindowTvf | None
    aggregated: bool


def window_rankings(q: QueryTokens) -> list[WindowRanking]:
    """The window rankings of ``q``: a ranking function whose PARTITION BY names both ``window_start`` and
    ``window_end``, in a block with a FROM clause (the one rule of what a window Top-N / deduplication is)."""
    tokens = q.tokens
    found = []
    for i, tok in enumerate(tokens):
        if tok.upper not in RANK_FUNCTIONS or q.word(i + 1) != "(" or q.word(i + 2) != ")" or q.word(i + 3) != "OVER":
            continue
        if i + 4 >= len(tokens) or tokens[i + 4].type is not TokenType.LPAREN:
            continue
        over_end = q.group_end(i + 4)
        names = q.names(i + 5, over_end)
        if q.word(i + 5) != "PARTITION" or not {"window_start", "window_end"} <= names:
            continue
        source = q.scan(i, 1, frozenset(("FROM",)))
        if not (0 <= source < len(tokens)) or tokens[source].upper != "FROM":
            continue
        stop = q.scan(source, 1, _CLAUSE_ENDS - {"JOIN", *_JOIN_WORDS})
        aggregated = 0 <= stop < len(tokens) and tokens[stop].upper == "GROUP"
        found.append(WindowRanking(i, over_end, source, stop, _side(q, source + 1, stop), aggregated))
    return found


def _check_rankings(q: QueryTokens) -> None:
    for ranking in window_rankings(q):
        if ranking.aggregated:
            continue  # ranks aggregated rows of this very SELECT
        call = ranking.call
        span = _char_span(q, ranking.source + 1, ranking.stop)
        if call is not None and isinstance(call.spec, SessionSpec) and not q.aggregates_after(call, *span):
            raise _fail(f"window Top-N / deduplication: Flink ranks TUMBLE, HOP or CUMULATE "
                        f"windows, not SESSION windows directly (SESSION TVF at {q.at(call)}); aggregate the "
                        "sessions first, then rank the result", q, q.tokens[ranking.function])


def check_window_ops(query: str) -> None:
    """Raise a positioned :class:`~timeweave.core.errors.QuerySyntaxError` for a window join, Top-N or
    deduplication Flink refuses (see the module); return None otherwise.  Engine-free, runs no query.

    >>> check_window_ops("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
    ...                  "ORDER BY price DESC) AS rownum FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), "
    ...                  "INTERVAL '10' MINUTES))) WHERE rownum <= 3")
    """
    q = QueryTokens(query)
    if not q.calls:
        return
    _check_joins(q)
    _check_subqueries(q)
    _check_rankings(q)


__all__ = ["QueryTokens", "WindowJoin", "WindowRanking", "check_window_ops", "window_joins", "window_rankings"]
