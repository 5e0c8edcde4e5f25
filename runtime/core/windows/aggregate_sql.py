"""Recognise Flink's window aggregation over one window TVF in a query, for the SQL door to compute it with
shared slices (the DataFrame door's sliced plan) instead of grouping the TVF's rows.

The shape, one SELECT block as Flink writes it (names may be qualified by the TVF's alias)::

    SELECT <item>, ... FROM <TUMBLE | HOP | CUMULATE call> [[AS] alias]
    GROUP BY window_start, window_end [, window_time] [, key, ...]
    [ORDER BY <output name or position> [ASC | DESC] [NULLS FIRST | LAST], ...] [LIMIT <n>]

where an item is a grouped column (a window column or a key) or ``COUNT(*)``, ``COUNT(1)`` or COUNT / SUM /
MIN / MAX / AVG of one column, each with an optional alias, and at least one item is an aggregate.  The
block's span (``SELECT`` to the end of the GROUP BY list) is what the door replaces; ORDER BY and LIMIT stay
in the query and apply to the replacement, whose output names are the block's.

Anything else is :class:`Declined` with the reason and its position in the query (HAVING, WHERE, DISTINCT,
GROUPING SETS / ROLLUP / CUBE, expressions, other aggregates, a join, a SESSION TVF...): the door then
rewrites only the TVF call and Spark groups its rows, as before.  Whether each aggregate's merge is exact
for its column's type is the door's to decide (it knows the types).  Engine-free, runs no query.

>>> query = ("SELECT window_start, window_end, item, COUNT(*) AS n, SUM(b.price) FROM TABLE(HOP(TABLE bids, "
...          "DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)) AS b "
...          "GROUP BY window_start, window_end, item ORDER BY n DESC")
>>> [call] = find_window_tvfs(query)
>>> shape = window_aggregate_query(query, call)
>>> shape.keys, [item.aggregate or item.column for item in shape.items]
(('item',), ['window_start', 'window_end', 'item', 'COUNT(*)', 'SUM(`price`)'])
>>> query[shape.start : shape.end][-33:]
'BY window_start, window_end, item'
>>> having = query.replace("ORDER BY n DESC", "HAVING COUNT(*) > 1")
>>> print(window_aggregate_query(having, call).describe(having))
HAVING: the sliced plan takes no HAVING (line 1, col 207)
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.sql_tokens import Token, TokenType, tokenize
from timeweave.core.windows.spec import WINDOW_COLUMNS, SessionSpec
from timeweave.core.windows.tvf_sql import WindowTvf, find_window_tvfs  # noqa: F401 (the doctests find the calls)

#: The aggregates a slice partial can carry (the door's ``SliceAggregate`` reads the same ones).
AGGREGATES = frozenset(("COUNT", "SUM", "MIN", "MAX", "AVG"))
#: Words that end the GROUP BY list; those the sliced plan cannot take are declined.
_GROUP_ENDS = frozenset(("HAVING", "ORDER", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "MINUS", "WINDOW", "QUALIFY",
                         "SORT", "CLUSTER", "DISTRIBUTE", "WITH", "OFFSET"))
_SET_OPERATIONS = frozenset(("UNION", "INTERSECT", "EXCEPT", "MINUS"))
#: Words that cannot be a bare alias (what may follow a relation in a FROM clause).
_NOT_ALIAS = frozenset(("GROUP", "WHERE", "JOIN", "LEFT", "RIGHT", "FULL", "INNER", "OUTER", "CROSS", "SEMI",
                        "ANTI", "NATURAL", "LATERAL", "ON", "USING", "PIVOT", "UNPIVOT", "TABLESAMPLE", "WINDOW",
                        *_GROUP_ENDS))
_NAMES = (TokenType.WORD, TokenType.QUOTED)


@dataclass(frozen=True)
class SelectItem:
    """One select-list item: a grouped ``column`` (as written, without its qualifier) or an ``aggregate``, the
    call's text with its column back-quoted (``SUM(`price`)``, ``COUNT(*)``)."""

    column: str | None = None
    aggregate: str | None = None


@dataclass(frozen=True)
class WindowAggregateQuery:
    """A window aggregation the sliced plan computes: characters ``[start, end)`` of the query are its SELECT
    block up to the end of the GROUP BY list; ``items`` the select list in order; ``keys`` the GROUP BY's
    columns besides the window columns, in order (each once)."""

    start: int
    end: int
    call: WindowTvf
    items: tuple[SelectItem, ...]
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Declined:
    """Why a TVF's query is not a window aggregation the sliced plan computes, at ``position`` in the query."""

    reason: str
    position: int

    def describe(self, text: str) -> str:
        """The reason with its line and column in ``text`` (the style of the SQL door's errors)."""
        before = text[: self.position]
        return f"{self.reason} (line {before.count(chr(10)) + 1}, col {self.position - before.rfind(chr(10))})"


class _Decline(Exception):
    def __init__(self, reason: str, position: int) -> None:
        super().__init__(reason)
        self.declined = Declined(reason, position)


def _depths(tokens: list[Token]) -> list[int]:
    depths, depth = [], 0
    for tok in tokens:
        if tok.type is TokenType.RPAREN:
            depth -= 1
        depths.append(depth)
        if tok.type is TokenType.LPAREN:
            depth += 1
    return depths


def _split(tokens: list[Token], depths: list[int], lo: int, hi: int, depth: int) -> list[tuple[int, int]]:
    """Token ranges of the comma-separated items in ``[lo, hi)`` at ``depth``."""
    items, first = [], lo
    for j in range(lo, hi):
        if depths[j] == depth and tokens[j].text == ",":
            items.append((first, j))
            first = j + 1
    items.append((first, hi))
    return items


class _Block:
    def __init__(self, text: str, call: WindowTvf, sessions: bool = False) -> None:
        self.text, self.call, self.sessions = text, call, sessions
        self.tokens = tokenize(text)
        self.depths = _depths(self.tokens)
        self.alias: str | None = None

    def at(self, j: int) -> Token | None:
        return self.tokens[j] if 0 <= j < len(self.tokens) else None

    def word(self, j: int) -> str:
        tok = self.at(j)
        return tok.upper if tok is not None else ""

    def position(self, j: int) -> int:
        tok = self.at(j)
        return tok.start if tok is not None else len(self.text)

    def column(self, lo: int, hi: int, what: str) -> str | None:
        """The column named by tokens ``[lo, hi)`` (``name`` or ``alias.name``), or None when they are not one."""
        span = self.tokens[lo:hi]
        if len(span) == 1 and span[0].type in _NAMES:
            if span[0].type is TokenType.WORD and span[0].upper in ("ALL", "NULL", "TRUE", "FALSE"):
                return None
            return span[0].name
        if len(span) == 3 and span[0].type in _NAMES and span[1].text == "." and span[2].type in _NAMES:
            if self.alias is None or span[0].name.lower() != self.alias.lower():
                raise _Decline(f"{what} {span[0].text}.{span[2].text}: qualified by a name other than the TVF's alias",
                               span[0].start)
            return span[2].name
        return None


def _alias(block: _Block, j: int) -> tuple[str | None, int]:
    """The relation's alias at token ``j`` (``AS x`` or ``x``) and the index after it."""
    if block.word(j) == "AS" and block.at(j + 1) is not None and block.tokens[j + 1].type in _NAMES:
        return block.tokens[j + 1].name, j + 2
    tok = block.at(j)
    if tok is not None and (tok.type is TokenType.QUOTED or (tok.type is TokenType.WORD and tok.upper not in _NOT_ALIAS)):
        return tok.name, j + 1
    return None, j


def _select_item(block: _Block, lo: int, hi: int) -> tuple[SelectItem, str | None]:
    """The item in tokens ``[lo, hi)`` and its alias."""
    tokens = block.tokens
    if lo >= hi:
        raise _Decline("an empty select item", block.position(lo))
    alias = None
    if hi - lo >= 3 and tokens[hi - 2].upper == "AS" and tokens[hi - 1].type in _NAMES:
        alias, hi = tokens[hi - 1].name, hi - 2
    elif (hi - lo >= 2 and tokens[hi - 2].text != "." and (tokens[hi - 1].type is TokenType.QUOTED or (
            tokens[hi - 1].type is TokenType.WORD and tokens[hi - 1].upper not in _NOT_ALIAS))):
        alias, hi = tokens[hi - 1].name, hi - 1  # COUNT(*) n, item k
    column = block.column(lo, hi, "select item")
    if column is not None:
        return SelectItem(column=column), alias
    first = tokens[lo]
    if (first.type is TokenType.WORD and first.upper in AGGREGATES and hi - lo >= 4
            and tokens[lo + 1].type is TokenType.LPAREN and tokens[hi - 1].type is TokenType.RPAREN
            and block.depths[hi - 1] == block.depths[lo]):
        inner = tokens[lo + 2 : hi - 1]
        if first.upper == "COUNT" and len(inner) == 1 and inner[0].text in ("*", "1"):
            return SelectItem(aggregate="COUNT(*)"), alias
        argument = block.column(lo + 2, hi - 1, f"{first.upper} argument")
        if argument is not None:
            return SelectItem(aggregate=f"{first.upper}(`{argument.replace('`', '``')}`)"), alias
    raise _Decline(f"select item {block.text[first.start : tokens[hi - 1].end]}: the sliced plan takes grouped "
                   "columns and COUNT(*) or COUNT / SUM / MIN / MAX / AVG of one column", first.start)


def _order_by(block: _Block, j: int, depth: int, outputs: list[str]) -> int:
    """Check ORDER BY's items from token ``j`` (after BY): output names (each of exactly one item) or
    positions, with ASC / DESC and NULLS FIRST / LAST; returns the index after the list."""
    stop = j
    while stop < len(block.tokens) and block.depths[stop] >= depth and not (
            block.depths[stop] == depth and block.word(stop) in _GROUP_ENDS):
        stop += 1
    for lo, hi in _split(block.tokens, block.depths, j, stop, depth):
        while hi > lo and block.word(hi - 1) in ("ASC", "DESC", "FIRST", "LAST", "NULLS"):
            hi -= 1
        tok = block.at(lo)
        if tok is None or hi - lo != 1:
            raise _Decline("ORDER BY: the sliced plan is ordered by output names or positions only",
                           block.position(lo))
        if tok.type is TokenType.NUMBER:
            continue
        if tok.type not in _NAMES or [o.lower() for o in outputs].count(tok.name.lower()) != 1:
            raise _Decline(f"ORDER BY {tok.text}: not the name of exactly one output column", tok.start)
    return stop


def _check_tail(block: _Block, j: int, depth: int, outputs: list[str]) -> None:
    """What may follow the GROUP BY list: ORDER BY, LIMIT, a set operation, the end of the block."""
    if block.word(j) == "ORDER" and block.word(j + 1) == "BY":
        j = _order_by(block, j + 2, depth, outputs)
    if block.word(j) == "LIMIT":
        if block.at(j + 1) is None or block.tokens[j + 1].type is not TokenType.NUMBER:
            raise _Decline("LIMIT: the sliced plan takes a number of rows only", block.position(j))
        j += 2
    tok = block.at(j)
    if tok is None or block.depths[j] < depth or tok.upper in _SET_OPERATIONS or tok.text == ";":
        return
    raise _Decline(f"{tok.text}: the sliced plan takes no {tok.upper}", tok.start)


def _group_by_after(block: _Block, last: int, depth: int) -> tuple[int, int]:
    """``(group_at, stop)``: the GROUP BY right after the TVF's last token ``last`` (and the relation's alias,
    which it sets on ``block``) and the index ending its list at ``depth``; ``stop`` is -1 when no GROUP BY
    follows (``group_at`` is then the token found instead)."""
    block.alias, j = _alias(block, last + 1)
    if block.word(j) != "GROUP" or block.word(j + 1) != "BY":
        return j, -1
    tokens, depths = block.tokens, block.depths
    stop = j + 2
    while stop < len(tokens) and depths[stop] >= depth and not (depths[stop] == depth and block.word(stop) in _GROUP_ENDS):
        stop += 1
    return j, stop


def _recognise(block: _Block) -> WindowAggregateQuery:
    call, tokens, depths = block.call, block.tokens, block.depths
    if isinstance(call.spec, SessionSpec) and not block.sessions:
        raise _Decline(f"{call.function}: session windows share no slices", call.start)
    first = next(i for i, t in enumerate(tokens) if t.start == call.start)
    last = next(i for i, t in enumerate(tokens) if t.end == call.end)
    if block.word(first - 1) != "FROM":
        raise _Decline(f"{call.function}: not the whole FROM clause of a SELECT", call.start)
    depth = depths[first - 1]
    select = first - 2
    while select >= 0 and not (depths[select] == depth and block.word(select) in ("SELECT", "FROM")):
        if depths[select] < depth:
            select = -1
            break
        select -= 1
    if select < 0 or block.word(select) != "SELECT":
        raise _Decline(f"{call.function}: no SELECT of its own before FROM", call.start)
    group_at, stop = _group_by_after(block, last, depth)
    if stop < 0:
        found = block.at(group_at)
        what = "the end of the query" if found is None else found.text
        raise _Decline(f"{what}: the sliced plan needs GROUP BY right after the TVF", block.position(group_at))
    grouped: list[str] = []
    for lo, hi in _split(tokens, depths, group_at + 2, stop, depth):
        name = block.column(lo, hi, "GROUP BY")
        if name is None:
            raise _Decline(f"GROUP BY {block.text[block.position(lo) : tokens[hi - 1].end if hi > lo else block.position(lo)]}"
                           ": the sliced plan groups by plain columns only", block.position(lo))
        if name.lower() not in (g.lower() for g in grouped):
            grouped.append(name)
    lowered = {g.lower() for g in grouped}
    if not {"window_start", "window_end"} <= lowered:
        raise _Decline("GROUP BY: a window aggregation groups by window_start and window_end",
                       tokens[group_at].start)
    if block.word(select + 1) in ("DISTINCT", "ALL"):
        raise _Decline(f"SELECT {tokens[select + 1].text}: the sliced plan takes plain select lists",
                       tokens[select + 1].start)
    items, outputs = [], []
    for lo, hi in _split(tokens, depths, select + 1, first - 1, depth):
        item, alias = _select_item(block, lo, hi)
        if item.column is not None and item.column.lower() not in lowered:
            raise _Decline(f"select item {item.column}: not grouped", tokens[lo].start)
        items.append(item)
        outputs.append(alias or item.column or "")
    if not any(item.aggregate for item in items):
        raise _Decline("the select list has no aggregate", tokens[select].start)
    _check_tail(block, stop, depth, outputs)
    keys = tuple(g for g in grouped if g.lower() not in WINDOW_COLUMNS)
    return WindowAggregateQuery(tokens[select].start, tokens[stop - 1].end, call, tuple(items), keys)


def window_aggregate_query(text: str, call: WindowTvf, *, sessions: bool = False) -> WindowAggregateQuery | Declined:
    """The window aggregation around ``call`` (one of :func:`find_window_tvfs` of ``text``) when it has the
    module's shape, else why not.  ``sessions``: a SESSION call's block is recognised too (the streaming window
    operator merges sessions; the sliced plan, which shares slices, declines them).

    >>> query = "SELECT window_start, SUM(price) FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE) GROUP BY ROLLUP (window_start, window_end)"
    >>> print(window_aggregate_query(query, find_window_tvfs(query)[0]).describe(query))
    GROUP BY ROLLUP (window_start, window_end): the sliced plan groups by plain columns only (line 1, col 100)
    """
    try:
        return _recognise(_Block(text, call, sessions))
    except _Decline as declined:
        return declined.declined


def check_session_keys(text: str, call: WindowTvf) -> None:
    """Flink's rule for a window aggregation over a SESSION call: its GROUP BY is window_start, window_end and
    exactly the call's PARTITION BY columns; anything else fails positioned at the GROUP BY.

    Why: Flink's window aggregate merges sessions per group key, while the TVF's rows carry sessions per
    partition value; only when the two are the same key do they agree (Flink then refuses the query: "Group keys
    of Window Aggregate should contain and only contain window_start, window_end and partition keys of session
    window").  Every door applies this one check, so the batch and the streaming doors cannot differ.  A block
    that is not a window aggregation over the call (no GROUP BY with window_start and window_end right after
    it) is left alone.

    >>> query = "SELECT window_start, k, j, COUNT(*) FROM SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '5' MINUTE) GROUP BY window_start, window_end, k, j"
    >>> check_session_keys(query, find_window_tvfs(query)[0])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    timeweave.core.errors.QuerySyntaxError: a SESSION window aggregation ... found k, j: write PARTITION BY k, j for sessions per k, j (line 1, col 111)
    ...
    """
    if not isinstance(call.spec, SessionSpec):
        return
    block = _Block(text, call, sessions=True)
    tokens, depths = block.tokens, block.depths
    first = next((i for i, t in enumerate(tokens) if t.start == call.start), None)
    last = next((i for i, t in enumerate(tokens) if t.end == call.end), None)
    if first is None or last is None or block.word(first - 1) != "FROM":
        return
    depth = depths[first - 1]
    j, stop = _group_by_after(block, last, depth)
    if stop < 0:
        return
    items = []
    for lo, hi in _split(tokens, depths, j + 2, stop, depth):
        try:
            name = block.column(lo, hi, "GROUP BY")
        except _Decline:
            name = None
        items.append(name if name is not None else text[block.position(lo) : tokens[hi - 1].end if hi > lo else block.position(lo)])
    lowered = [i.lower() for i in items]
    if not {"window_start", "window_end"} <= set(lowered):
        return  # a regular aggregate over the TVF's rows, not a window aggregation
    keys = list(dict.fromkeys(i for i in items if i.lower() not in WINDOW_COLUMNS))
    partition = list(call.spec.partition_by)
    if sorted(k.lower() for k in keys) == sorted(c.lower() for c in partition):
        return
    listed = ", ".join(partition) or "none"
    found = ", ".join(keys) or "none"
    hint = f"write PARTITION BY {found} for sessions per {found}" if keys else "group by them too"
    raise QuerySyntaxError(
        f"a SESSION window aggregation groups by window_start, window_end and exactly its PARTITION BY columns "
        f"({listed}), found {found}: {hint}", text=text, position=tokens[j].start)


__all__ = ["AGGREGATES", "Declined", "SelectItem", "WindowAggregateQuery", "check_session_keys",
           "window_aggregate_query"]
