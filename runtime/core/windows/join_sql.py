"""Recognise Flink's window join of two window TVF calls in a query, for the streaming SQL door to run it as the
streaming window join operator (the batch door runs it as Spark's join of the TVFs' rows).

What a window join is, is :func:`timeweave.core.windows.ops_sql.window_joins`' rule (a join whose ON names
``window_start`` and ``window_end``; both sides the same TVF and sizes is checked there too).  The shape read
here, as Flink's docs write it::

    SELECT ... FROM <side> [AS] L [INNER | LEFT [OUTER] | RIGHT [OUTER] | FULL [OUTER]] JOIN <side> [AS] R
    ON L.window_start = R.window_start AND L.window_end = R.window_end [AND L.key = R.key ...] ...

where a side is ``(SELECT * FROM <TUMBLE | HOP | CUMULATE call>)`` or the call itself, and every conjunct of the
ON condition equates a column of one side with a column of the other.  Anything else is
:class:`~timeweave.core.windows.aggregate_sql.Declined` with its position (another condition, USING, a third
relation, a side that projects or filters...).  Engine-free, runs no query.

>>> tvf = "SELECT * FROM TABLE(TUMBLE(TABLE {}, DESCRIPTOR(ts), INTERVAL '5' MINUTES))"
>>> query = (f"SELECT L.id, R.id FROM ({tvf.format('a')}) L LEFT JOIN ({tvf.format('b')}) R ON L.num = R.k "
...          "AND L.window_start = R.window_start AND R.window_end = L.window_end")
>>> [shape] = window_join_queries(query)
>>> shape.how, shape.aliases, shape.on, query[shape.start : shape.end][-27:]
('LEFT', ('L', 'R'), (('num', 'k'),), 'R.window_end = L.window_end')
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.sql_tokens import TokenType
from timeweave.core.windows.aggregate_sql import Declined
from timeweave.core.windows.ops_sql import QueryTokens, WindowJoin, window_joins
from timeweave.core.windows.spec import SessionSpec
from timeweave.core.windows.tvf_sql import WindowTvf

_NAMES = (TokenType.WORD, TokenType.QUOTED)
#: The join words of the joins the operator runs, by the type it runs them as.
_HOW = {("JOIN",): "INNER", ("INNER", "JOIN"): "INNER", ("LEFT", "JOIN"): "LEFT", ("LEFT", "OUTER", "JOIN"): "LEFT",
        ("RIGHT", "JOIN"): "RIGHT", ("RIGHT", "OUTER", "JOIN"): "RIGHT", ("FULL", "JOIN"): "FULL",
        ("FULL", "OUTER", "JOIN"): "FULL"}
_WINDOWS = ("window_start", "window_end")
#: Words that follow a relation and are no alias of it.
_CLAUSES = frozenset(("WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "WINDOW", "QUALIFY", "UNION", "INTERSECT", "EXCEPT",
                      "MINUS", "JOIN", "LEFT", "RIGHT", "FULL", "INNER", "CROSS", "NATURAL", "LATERAL"))


@dataclass(frozen=True)
class WindowJoinQuery:
    """A window join the streaming window join operator runs: characters ``[start, end)`` are the join (the left
    side to the end of the ON condition), which the door replaces by the operator's rows; ``calls`` and ``aliases``
    each side's TVF call and name; ``how`` the join type; ``on`` the key column pairs (left, right) besides the
    window columns; ``stars`` the character spans of the block's bare ``*`` select items."""

    start: int
    end: int
    calls: tuple[WindowTvf, WindowTvf]
    aliases: tuple[str, str]
    how: str
    on: tuple[tuple[str, str], ...]
    stars: tuple[tuple[int, int], ...]


class _Decline(Exception):
    def __init__(self, reason: str, position: int) -> None:
        super().__init__(reason)
        self.declined = Declined(reason, position)


def _at(q: QueryTokens, j: int) -> int:
    return q.tokens[j].start if j < len(q.tokens) else len(q.text)


def _side(q: QueryTokens, lo: int, hi: int, call: WindowTvf | None, which: str) -> str:
    """The alias of the side in tokens ``[lo, hi)``: ``(SELECT * FROM call [[AS] x]) [AS] alias`` or ``call [AS]
    alias``."""
    tokens = q.tokens
    if call is None or isinstance(call.spec, SessionSpec):
        raise _Decline(f"the {which} side of the window join: in streaming mode each side is one TUMBLE / HOP / "
                       "CUMULATE call (or SELECT * FROM it)", _at(q, lo))
    j = lo
    if tokens[j].start != call.start:
        if not (tokens[j].type is TokenType.LPAREN and q.word(j + 1) == "SELECT" and q.word(j + 2) == "*"
                and q.word(j + 3) == "FROM" and _at(q, j + 4) == call.start):
            raise _Decline(f"the {which} side of the window join: in streaming mode a side is the TVF's rows as they "
                           "are (the call, or (SELECT * FROM call))", _at(q, lo))
        close = q.group_end(j)
        inner = next(k for k in range(j, close) if tokens[k].end == call.end) + 1
        if q.word(inner) == "AS":
            inner += 1
        if inner < close and (tokens[inner].type is TokenType.QUOTED or (
                tokens[inner].type is TokenType.WORD and tokens[inner].upper not in _CLAUSES)):
            inner += 1  # the call's alias inside the side
        if inner != close:
            raise _Decline(f"{tokens[inner].text}: in streaming mode a side of the window join is the TVF's rows as "
                           "they are", tokens[inner].start)
        j = close + 1
    else:
        j = next(k for k in range(j, hi) if tokens[k].end == call.end) + 1
    if q.word(j) == "AS":
        j += 1
    if j + 1 != hi or tokens[j].type not in _NAMES:
        raise _Decline(f"the {which} side of the window join: name it (... ) AS L), the ON condition's qualifier",
                       _at(q, j))
    return tokens[j].name


def _condition(q: QueryTokens, join: WindowJoin, aliases: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    """The ON condition's key pairs (left, right); each conjunct equates a left column with a right one."""
    tokens = q.tokens
    depth = q.depth[join.on]
    cuts = [join.on] + [k for k in range(join.on + 1, join.end) if q.depth[k] == depth and q.word(k) == "AND"]
    lowered = [a.lower() for a in aliases]
    pairs: list[tuple[str, str]] = []
    for a, b in zip(cuts, [*cuts[1:], join.end], strict=True):
        span = tokens[a + 1 : b]
        if (len(span) != 7 or span[3].text != "=" or span[1].text != "." or span[5].text != "."
                or any(span[k].type not in _NAMES for k in (0, 2, 4, 6))):
            raise _Decline(f"{q.text[_at(q, a + 1) : tokens[b - 1].end][:60]}: in streaming mode the window join's ON "
                           "condition equates columns of the two sides (L.col = R.col) and nothing else",
                           _at(q, a + 1))
        sides = [span[0].name.lower(), span[4].name.lower()]
        if sorted(sides) != sorted(lowered) or lowered[0] == lowered[1]:
            raise _Decline(f"{span[0].text}.{span[2].text} = {span[4].text}.{span[6].text}: one column of each side",
                           span[0].start)
        left, right = (span[2].name, span[6].name) if sides[0] == lowered[0] else (span[6].name, span[2].name)
        pairs.append((left, right))
    for window in _WINDOWS:
        if (window, window) not in {(x.lower(), y.lower()) for x, y in pairs}:
            raise _Decline(f"ON: a window join equates {window} of both sides", _at(q, join.on))
    keys = tuple(p for p in pairs if not {p[0].lower(), p[1].lower()} & {"window_start", "window_end", "window_time"})
    if len(keys) + 2 != len(pairs) or len(set(map(str.lower, (x for x, _ in pairs)))) != len(pairs):
        raise _Decline("ON: in streaming mode the window columns are equated once each, to themselves",
                       _at(q, join.on))
    return keys


def _stars(q: QueryTokens, join: WindowJoin) -> tuple[tuple[int, int], ...]:
    """The bare ``*`` items of the join's SELECT block."""
    source = join.left[0] - 1
    select = q.scan(source, -1, frozenset(("SELECT",)))
    if not (0 <= select < len(q.tokens)) or q.word(select) != "SELECT":
        return ()
    return tuple((q.tokens[k].start, q.tokens[k].end) for k in range(select + 1, source)
                 if q.tokens[k].text == "*" and q.depth[k] == q.depth[select]
                 and q.word(k - 1) in ("SELECT", ",") and q.word(k + 1) in (",", "FROM"))


def _recognise(q: QueryTokens, join: WindowJoin) -> WindowJoinQuery:
    tokens = q.tokens
    words = tuple(t.upper for t in tokens[join.first : join.join + 1])
    how = _HOW.get(words)
    if how is None:
        raise _Decline(f"{' '.join(words)}: in streaming mode a window join is INNER, LEFT, RIGHT or FULL", _at(q, join.first))
    if q.word(join.left[0] - 1) != "FROM":
        raise _Decline("the window join's left side: in streaming mode the join is the whole FROM clause (no third "
                       "relation)", _at(q, join.left[0]))
    left = _side(q, *join.left, join.calls[0], "left")
    right = _side(q, *join.right, join.calls[1], "right")
    stop = tokens[join.end] if join.end < len(tokens) else None
    if stop is not None and q.depth[join.end] == q.depth[join.join] and stop.upper in ("JOIN", "LEFT", "RIGHT", "FULL",
                                                                                        "INNER", "CROSS"):
        raise _Decline(f"{stop.text}: in streaming mode a query runs one operator (a window join of two inputs)",
                       stop.start)
    on = _condition(q, join, (left, right))
    calls = (join.calls[0], join.calls[1])
    return WindowJoinQuery(_at(q, join.left[0]), tokens[join.end - 1].end, calls, (left, right), how, on,  # type: ignore[arg-type]
                           _stars(q, join))


def window_join_queries(text: str) -> list[WindowJoinQuery | Declined]:
    """Each window join of ``text`` (:func:`~timeweave.core.windows.ops_sql.window_joins`) in the module's shape,
    else why not."""
    q = QueryTokens(text)
    found: list[WindowJoinQuery | Declined] = []
    for join in window_joins(q):
        try:
            found.append(_recognise(q, join))
        except _Decline as declined:
            found.append(declined.declined)
    return found


__all__ = ["WindowJoinQuery", "window_join_queries"]
