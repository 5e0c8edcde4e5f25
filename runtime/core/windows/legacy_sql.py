"""Flink's legacy group windows (``GROUP BY TUMBLE(ts, INTERVAL ...)``) rewritten to the window TVFs.

Flink SQL before the window TVFs grouped by a window function and read the window's bounds through auxiliary
functions; seed 003's and many Flink jobs' queries are written this way::

    SELECT user, TUMBLE_END(cTime, INTERVAL '1' HOUR) AS endT, COUNT(url) AS cnt
    FROM clicks
    GROUP BY user, TUMBLE(cTime, INTERVAL '1' HOUR)

is the window aggregation over a TUMBLE TVF, which is what it becomes here (then the window TVF rewrite runs)::

    SELECT user, window_end AS endT, COUNT(url) AS cnt
    FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(cTime), INTERVAL '1' HOUR)) AS clicks
    GROUP BY user, window_start, window_end, window_time

The group windows and their auxiliary functions (Flink's "Group Windows" page):

* ``TUMBLE(time, size)``, ``HOP(time, slide, size)``, ``SESSION(time, gap)`` as one item of GROUP BY (one group
  window per GROUP BY, as Flink requires); the TVF's ``DESCRIPTOR`` is the time column.  SESSION's sessions are
  per group: the other GROUP BY columns become the TVF's ``PARTITION BY``.
* ``<W>_START(...)`` -> ``window_start``; ``<W>_END(...)`` -> ``window_end`` (exclusive, as Flink);
  ``<W>_ROWTIME(...)`` -> ``window_time`` (end - 1 ms, a time attribute: windows cascade); anywhere in the
  SELECT list, HAVING or ORDER BY of that query, with the group window's own arguments (Flink's rule).
  ``<W>_PROCTIME`` is refused (no processing-time windows in SQL).
* ``WHERE`` filters rows before they are windowed (it matters for sessions): it moves into the TVF's input,
  ``TABLE (SELECT * FROM t WHERE ...)``.

The query's FROM must be one table or subquery (``FROM t [AS a]``), or one with its MATCH_RECOGNIZE (``FROM t
MATCH_RECOGNIZE (...) [AS] a``: the windows group the matches, by a measure such as ``MATCH_ROWTIME()``); joins and
comma lists are refused with the position (write the TVF form).  Every error is positioned in the query as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.sql_tokens import Token, TokenType, tokenize
from timeweave.core.windows.tvf_sql import find_window_tvfs

#: The group-window functions and their arguments after the time column.
GROUP_WINDOWS = {"TUMBLE": ("size",), "HOP": ("slide", "size"), "SESSION": ("gap",)}
#: Auxiliary function suffix -> the window TVF column it reads.
AUXILIARIES = {"START": "window_start", "END": "window_end", "ROWTIME": "window_time", "PROCTIME": None}
_NAMES = (TokenType.WORD, TokenType.QUOTED)
#: Words that end a query block's clause list at its own depth.
_BLOCK_ENDS = frozenset(("UNION", "INTERSECT", "EXCEPT", "MINUS"))
#: Words that end the FROM clause / the GROUP BY list.
_FROM_ENDS = frozenset(("WHERE", "GROUP"))
_GROUP_ENDS = frozenset(("HAVING", "ORDER", "LIMIT", "WINDOW", "QUALIFY", "CLUSTER", "DISTRIBUTE", "SORT", "OFFSET"))
_RELATION_WORDS = frozenset(("JOIN", "LEFT", "RIGHT", "FULL", "INNER", "OUTER", "CROSS", "SEMI", "ANTI", "NATURAL",
                             "LATERAL", "ON", "USING", "PIVOT", "UNPIVOT", "TABLESAMPLE"))
#: At most this many group windows are rewritten in one query (each pass rewrites one query block).
MAX_BLOCKS = 64


def _depths(tokens: list[Token]) -> list[int]:
    depths, depth = [], 0
    for tok in tokens:
        if tok.type is TokenType.RPAREN:
            depth -= 1
        depths.append(depth)
        if tok.type is TokenType.LPAREN:
            depth += 1
    return depths


def _fail(message: str, text: str, tok: Token | None) -> QuerySyntaxError:
    return QuerySyntaxError(message, text=text, position=tok.start if tok is not None else len(text))


def _is_call(tokens: list[Token], i: int, names: object) -> bool:
    return (tokens[i].type is TokenType.WORD and tokens[i].upper in names and i + 1 < len(tokens)  # type: ignore[operator]
            and tokens[i + 1].type is TokenType.LPAREN and not (i > 0 and tokens[i - 1].text == "."))


def _is_group_window(tokens: list[Token], i: int) -> bool:
    """A legacy group window call at ``i``: ``TUMBLE(`` whose first argument is not a TVF's (``TABLE`` / ``DATA =>``)."""
    if not _is_call(tokens, i, GROUP_WINDOWS) or i + 2 >= len(tokens):
        return False
    first = tokens[i + 2]
    named = i + 4 < len(tokens) and tokens[i + 3].text == "=" and tokens[i + 4].text == ">"
    return not (first.upper == "TABLE" or (first.type is TokenType.WORD and named))


def _closing(tokens: list[Token], i: int) -> int:
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].type is TokenType.LPAREN:
            depth += 1
        elif tokens[j].type is TokenType.RPAREN:
            depth -= 1
            if depth == 0:
                return j
    return -1


@dataclass(frozen=True)
class _Call:
    """A group-window or auxiliary call: tokens ``[at, close]``; its arguments' token ranges."""

    at: int
    close: int
    arguments: tuple[tuple[int, int], ...]


def _call(text: str, tokens: list[Token], depths: list[int], at: int) -> _Call:
    close = _closing(tokens, at + 1)
    if close < 0:
        raise _fail(f"{tokens[at].upper}( is never closed", text, tokens[at + 1])
    inner = depths[at] + 1
    arguments, first = [], at + 2
    for j in range(at + 2, close):
        if depths[j] == inner and tokens[j].text == ",":
            arguments.append((first, j))
            first = j + 1
    arguments.append((first, close))
    if arguments == [(close, close)]:
        arguments = []
    return _Call(at, close, tuple(arguments))


def _argument_key(tokens: list[Token], span: tuple[int, int]) -> tuple[str, ...]:
    """An argument's tokens, case-folded (the comparison of an auxiliary's arguments with the window's)."""
    return tuple(t.upper if t.type is TokenType.WORD else t.text for t in tokens[span[0]:span[1]])


def _column(tokens: list[Token], span: tuple[int, int]) -> Token | None:
    """The column token of ``name`` or ``qualifier.name`` in ``span``, else None."""
    lo, hi = span
    if hi - lo == 1 and tokens[lo].type in _NAMES:
        return tokens[lo]
    if hi - lo == 3 and tokens[lo].type in _NAMES and tokens[lo + 1].text == "." and tokens[hi - 1].type in _NAMES:
        return tokens[hi - 1]
    return None


def _block_bounds(text: str, tokens: list[Token], depths: list[int], at: int) -> tuple[int, int, int] | None:
    """``(select, group, end)`` token indices of the query block whose GROUP BY holds the call at ``at`` (None when
    the call is not an item of a GROUP BY at its block's depth)."""
    depth = depths[at]
    group = None
    for j in range(at - 1, -1, -1):
        if depths[j] < depth:
            return None
        if depths[j] != depth:
            continue
        word = tokens[j].upper if tokens[j].type is TokenType.WORD else ""
        if word == "BY" and j > 0 and tokens[j - 1].upper == "GROUP" and group is None:
            group = j - 1
        elif word == "SELECT":
            if group is None:
                return None
            end = len(tokens)
            for k in range(at + 1, len(tokens)):
                if depths[k] < depth or (depths[k] == depth and (tokens[k].text == ";" or (
                        tokens[k].type is TokenType.WORD and tokens[k].upper in _BLOCK_ENDS))):
                    end = k
                    break
            return j, group, end
        elif word in _GROUP_ENDS or word in _FROM_ENDS - {"GROUP"}:
            if group is None:
                return None  # the call is in HAVING / ORDER BY / WHERE..., not in GROUP BY
    return None


def _nested_blocks(tokens: list[Token], lo: int, hi: int) -> list[tuple[int, int]]:
    """Token ranges of the parenthesised subqueries inside ``[lo, hi)`` (their auxiliaries are their own)."""
    found, j = [], lo
    while j < hi:
        if tokens[j].type is TokenType.LPAREN and j + 1 < hi and tokens[j + 1].upper in ("SELECT", "WITH"):
            close = _closing(tokens, j)
            found.append((j, close if close >= 0 else hi))
            j = close + 1 if close >= 0 else hi
        else:
            j += 1
    return found


def _relation(text: str, tokens: list[Token], depths: list[int], lo: int, hi: int, window: str,
              from_tok: Token) -> tuple[int, int, str | None, int]:
    """The FROM clause's one relation in tokens ``[lo, hi)``: ``(first, stop)`` of the table name or subquery,
    its alias as written (None without), and the index after the alias."""
    why = (f"a {window} group window reads one table or subquery (FROM t [AS a]); for joins write the window "
           "TVF form, FROM TABLE({window}(TABLE t, DESCRIPTOR(ts), ...))")
    if lo >= hi:
        raise _fail(f"{why}: FROM names no relation", text, from_tok)
    if tokens[lo].type is TokenType.LPAREN:
        close = _closing(tokens, lo)
        if close < 0 or close >= hi:
            raise _fail("( is never closed", text, tokens[lo])
        stop = close + 1
    elif tokens[lo].type in _NAMES and tokens[lo].upper not in _RELATION_WORDS:
        stop = lo + 1
        while stop + 1 < hi and tokens[stop].text == "." and tokens[stop + 1].type in _NAMES:
            stop += 2
    else:
        raise _fail(why, text, tokens[lo])
    if stop + 1 < hi and tokens[stop].upper == "MATCH_RECOGNIZE" and tokens[stop + 1].type is TokenType.LPAREN:
        # t MATCH_RECOGNIZE (...) [AS] a: the windows group the matches (Flink's MATCH_ROWTIME() use)
        close = _closing(tokens, stop + 1)
        if close < 0 or close >= hi:
            raise _fail("( is never closed", text, tokens[stop + 1])
        stop = close + 1
    alias, after = None, stop
    if after < hi and tokens[after].upper == "AS" and after + 1 < hi and tokens[after + 1].type in _NAMES:
        alias, after = text[tokens[after].start:tokens[after + 1].end], after + 2
    elif after < hi and tokens[after].type in _NAMES and tokens[after].upper not in _RELATION_WORDS:
        alias, after = tokens[after].text, after + 1
    if after < hi:
        raise _fail(why, text, tokens[after])
    return lo, stop, alias, after


def _rewrite_block(text: str, tokens: list[Token], depths: list[int], at: int, bounds: tuple[int, int, int]) -> str:
    select, group, end = bounds
    depth = depths[at]
    window = tokens[at].upper
    call = _call(text, tokens, depths, at)
    expected = GROUP_WINDOWS[window]
    if len(call.arguments) != 1 + len(expected):
        want = ", ".join(("time", *expected))
        raise _fail(f"{window} group window takes ({want}): {len(call.arguments)} argument(s) given; offsets "
                    f"need the window TVF form", text, tokens[at])
    time_tok = _column(tokens, call.arguments[0])
    if time_tok is None:
        raise _fail(f"{window} group window: the first argument must be the time column (a column name)", text,
                    tokens[call.arguments[0][0]] if call.arguments[0][0] < call.close else tokens[at])

    # -- the clauses of the block, at its depth ---------------------------------------------------------------
    def at_depth(word: str, lo: int, hi: int) -> int | None:
        for j in range(lo, hi):
            if depths[j] == depth and tokens[j].type is TokenType.WORD and tokens[j].upper == word:
                return j
        return None

    from_at = at_depth("FROM", select + 1, group)
    if from_at is None:
        raise _fail(f"a {window} group window groups the rows of a FROM clause; this query has none", text,
                    tokens[select])
    where_at = at_depth("WHERE", from_at + 1, group)
    first, stop, alias, _ = _relation(text, tokens, depths, from_at + 1, where_at if where_at is not None else group,
                                      window, tokens[from_at])
    group_end = end
    for j in range(group + 2, end):
        if depths[j] == depth and tokens[j].type is TokenType.WORD and tokens[j].upper in _GROUP_ENDS:
            group_end = j
            break
    items, item_first = [], group + 2
    for j in range(group + 2, group_end):
        if depths[j] == depth and tokens[j].text == ",":
            items.append((item_first, j))
            item_first = j + 1
    items.append((item_first, group_end))
    others = []
    for lo, hi in items:
        if lo == at:
            continue
        if any(_is_group_window(tokens, j) and depths[j] == depth for j in range(lo, hi)):
            raise _fail(f"GROUP BY holds a second group window; Flink allows one ({window} first)", text, tokens[lo])
        others.append((lo, hi))
        if lo < hi and tokens[lo].upper in ("GROUPING", "ROLLUP", "CUBE"):
            raise _fail(f"a {window} group window with {tokens[lo].upper}: write the window TVF form", text,
                        tokens[lo])

    # -- the window TVF call replacing the relation ---------------------------------------------------------
    relation = text[tokens[first].start:tokens[stop - 1].end]
    recognized = tokens[stop - 1].type is TokenType.RPAREN and tokens[first].type in _NAMES
    # keep "t.col" references valid: without an alias the TVF's result is named as the table was
    named = alias or (f"AS {tokens[stop - 1].text}" if tokens[first].type in _NAMES and not recognized else "")
    if where_at is not None:
        data = (f"TABLE (SELECT * FROM {relation}{' ' + alias if alias else ''} WHERE "
                f"{text[tokens[where_at + 1].start:tokens[group - 1].end]})")
    elif recognized:  # the matches of t MATCH_RECOGNIZE (...) [AS] a are the TVF's input rows
        data = f"TABLE (SELECT * FROM {relation}{' ' + alias if alias else ''})"
    else:
        data = f"TABLE {relation}"
    if window == "SESSION" and others:
        keys = []
        for lo, hi in others:
            key = _column(tokens, (lo, hi))
            if key is None:
                raise _fail("a SESSION group window's sessions are per group: the other GROUP BY items must be "
                            "columns (they become the TVF's PARTITION BY); compute expressions in a subquery",
                            text, tokens[lo])
            keys.append(key.text)
        data += f" PARTITION BY ({', '.join(keys)})"
    args = [text[tokens[lo].start:tokens[hi - 1].end] for lo, hi in call.arguments[1:]]
    tvf = f"{window}({data}, DESCRIPTOR({time_tok.text}), {', '.join(args)})"
    try:  # the TVF's own checks (sizes, HOP's multiple), reported at the group window as written
        find_window_tvfs("SELECT * FROM " + tvf)
    except QuerySyntaxError as exc:
        raise QuerySyntaxError(f"{window} group window: {exc.description}", text=text,
                               position=tokens[at].start) from None
    if where_at is None:  # the relation alone is replaced; an alias written after it stays
        added = f" {named}" if named and not alias else ""
        edits = [(tokens[first].start, tokens[stop - 1].end, f"TABLE({tvf}){added}")]
    else:  # relation, alias and WHERE: the filter now runs inside the TVF's input
        edits = [(tokens[first].start, tokens[group - 1].end, f"TABLE({tvf})" + (f" {named}" if named else ""))]
    # window_time too: Flink groups by it to select it (TUMBLE_ROWTIME), and it is a function of window_end
    edits.append((tokens[at].start, tokens[call.close].end, "window_start, window_end, window_time"))
    # -- auxiliaries of this block (not of its subqueries) ------------------------------------------------------
    window_args = [_argument_key(tokens, span) for span in call.arguments]
    nested = _nested_blocks(tokens, select + 1, end)
    for j in range(select + 1, end):
        if any(lo <= j <= hi for lo, hi in nested) or (call.at <= j <= call.close):
            continue
        tok = tokens[j]
        if tok.type is not TokenType.WORD or "_" not in tok.text or not _is_call(tokens, j, _aux_names()):
            continue
        family, suffix = tok.upper.rsplit("_", 1)
        if family != window:
            raise _fail(f"{tok.upper} reads a {family} group window; this query groups by {window}", text, tok)
        column = AUXILIARIES[suffix]
        if column is None:
            raise _fail(f"{tok.upper}: processing-time group windows are not supported in SQL; group by the event "
                        f"time ({window}_ROWTIME is the window's time attribute)", text, tok)
        aux = _call(text, tokens, depths, j)
        if [_argument_key(tokens, span) for span in aux.arguments] != window_args:
            raise _fail(f"{tok.upper} must repeat the arguments of the GROUP BY's {window}(...) (Flink's rule)",
                        text, tok)
        edits.append((tok.start, tokens[aux.close].end, column))
    for start, stop_at, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[stop_at:]
    return text


def _aux_names() -> frozenset[str]:
    return frozenset(f"{w}_{s}" for w in GROUP_WINDOWS for s in AUXILIARIES)


def rewrite_group_windows(text: str) -> str:
    """``text`` with each query block that groups by a legacy group window rewritten to its window TVF (the
    module docstring); a query without one is returned unchanged.

    >>> print(rewrite_group_windows("SELECT user, TUMBLE_END(cTime, INTERVAL '1' HOUR) AS endT, COUNT(url) AS cnt "
    ...                             "FROM clicks GROUP BY user, TUMBLE(cTime, INTERVAL '1' HOUR)"))
    SELECT user, window_end AS endT, COUNT(url) AS cnt FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(cTime), INTERVAL '1' HOUR)) AS clicks GROUP BY user, window_start, window_end, window_time
    >>> print(rewrite_group_windows("SELECT user, SESSION_START(t, INTERVAL '30' MINUTE) FROM clicks c WHERE url "
    ...                             "<> '' GROUP BY SESSION(t, INTERVAL '30' MINUTE), user"))
    SELECT user, window_start FROM TABLE(SESSION(TABLE (SELECT * FROM clicks c WHERE url <> '') PARTITION BY (user), DESCRIPTOR(t), INTERVAL '30' MINUTE)) c GROUP BY window_start, window_end, window_time, user
    >>> rewrite_group_windows("SELECT k, HOP_END(t, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE) FROM a GROUP BY k, "
    ...                       "HOP(t, INTERVAL '1' MINUTE, INTERVAL '10' MINUTE)")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.QuerySyntaxError: HOP_END must repeat the arguments of the GROUP BY's HOP(...) (Flink's rule) (line 1, col 11)
    ...
    """
    original = text
    for _ in range(MAX_BLOCKS):
        tokens = tokenize(text)
        depths = _depths(tokens)
        for i in range(len(tokens)):
            if _is_group_window(tokens, i):
                bounds = _block_bounds(text, tokens, depths, i)
                if bounds is not None:
                    try:
                        text = _rewrite_block(text, tokens, depths, i, bounds)
                    except QuerySyntaxError as exc:
                        if text is original:
                            raise
                        # a later block's error: the rewritten text's positions are not the user's
                        raise QuerySyntaxError(exc.description, text=original,
                                               position=_locate(original, tokens[i])) from None
                    break
        else:
            return text
    return text


def _locate(original: str, tok: Token) -> int:
    """Where the group-window call ``tok`` (in rewritten text) was written in ``original`` (the first group window
    of its kind still unrewritten: earlier blocks' calls are gone from the rewritten text)."""
    for candidate in tokenize(original):
        if candidate.type is TokenType.WORD and candidate.upper == tok.upper:
            return candidate.start
    return 0


__all__ = ["AUXILIARIES", "GROUP_WINDOWS", "rewrite_group_windows"]
