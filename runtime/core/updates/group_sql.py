"""Flink's continuous ``GROUP BY`` written as SQL (seed 003's first query), read into the operator's parts.

The shape, one SELECT block::

    SELECT key, ..., aggregate [[AS] name], ...
    FROM relation [[AS] alias]
    [WHERE condition]
    GROUP BY key, ...

* the select list: the GROUP BY columns (each once, first, as plain columns: the changelog's unique key), then
  one or more aggregates ``COUNT(*)``, ``COUNT(x)``, ``COUNT(DISTINCT x)``, ``SUM(x)``, ``MIN(x)``, ``MAX(x)``,
  ``AVG(x)``, each optionally ``FILTER (WHERE c)`` with ``c`` a BOOLEAN column (what
  :mod:`timeweave.core.windows.calls` reads: the keys / aggregates form of the same query);
* an unnamed aggregate gets Spark's name for it (``count(url)``, ``count(1)`` for ``COUNT(*)``);
* ``WHERE``: a condition on the input's rows, kept as written: the door filters the input with it before the
  operator (Spark evaluates it; nothing here does);
* names may be back-quoted and qualified by the relation's alias (or its name).

Anything else is a :class:`~timeweave.core.errors.QuerySyntaxError` at its position: ``HAVING`` (a filter on
an updating result; filter the materialised table), ``ORDER BY`` / ``LIMIT`` (a continuous result has no
order), ``SELECT DISTINCT``, ``SUM(DISTINCT x)`` and other DISTINCT aggregates but ``COUNT``, expressions,
joins, subqueries, window TVFs and group windows (``GROUP BY TUMBLE(...)``: the window aggregation's),
``GROUPING SETS`` / ``ROLLUP`` / ``CUBE``, set operations, ``WITH``, a global aggregate without GROUP BY.
Engine-free: it runs nothing.

>>> q = parse_group_aggregate_query("SELECT user, COUNT(url) FROM clicks GROUP BY user")
>>> q.relation, q.keys, q.aggregates, q.where
('clicks', ('user',), (('count(url)', 'COUNT(`url`)'),), None)
>>> parse_group_aggregate_query("SELECT user, COUNT(url) AS n FROM clicks GROUP BY user HAVING COUNT(url) > 1")
Traceback (most recent call last):
...
timeweave.core.errors.QuerySyntaxError: HAVING: the continuous GROUP BY takes no HAVING (filter the materialised table instead) (line 1, col 56)
SELECT user, COUNT(url) AS n FROM clicks GROUP BY user HAVING COUNT(url) > 1
                                                       ^
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.sql_tokens import Token, TokenType, split_qualified_name, tokenize

#: The aggregates the operator computes (with accumulators that can take values back).
FUNCTIONS = frozenset(("COUNT", "SUM", "MIN", "MAX", "AVG"))
_NAMES = (TokenType.WORD, TokenType.QUOTED)
#: Words that cannot be a bare alias of the relation or of a select item.
_KEYWORDS = frozenset(("FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "JOIN", "LEFT", "RIGHT", "FULL",
                       "INNER", "OUTER", "CROSS", "SEMI", "ANTI", "NATURAL", "LATERAL", "ON", "USING", "UNION",
                       "INTERSECT", "EXCEPT", "MINUS", "WINDOW", "QUALIFY", "FOR", "PIVOT", "UNPIVOT",
                       "TABLESAMPLE", "SORT", "CLUSTER", "DISTRIBUTE", "OFFSET", "FILTER", "OVER", "AS"))
_JOINS = frozenset(("JOIN", "LEFT", "RIGHT", "FULL", "INNER", "OUTER", "CROSS", "SEMI", "ANTI", "NATURAL",
                    "LATERAL"))
_GROUP_WINDOWS = frozenset(("TUMBLE", "HOP", "SESSION", "CUMULATE"))


@dataclass(frozen=True)
class GroupAggregateSql:
    """A continuous GROUP BY read from its SQL text.

    ``relation``: the FROM relation as written (a table or view name); ``alias``: its alias (None: none);
    ``keys``: the GROUP BY columns in the select list's order; ``aggregates``: (output name, aggregate text)
    pairs in order, the text as :mod:`timeweave.core.windows.calls` reads it; ``where``: the WHERE condition's
    text as written (None: none).
    """

    text: str
    relation: str
    alias: str | None
    keys: tuple[str, ...]
    aggregates: tuple[tuple[str, str], ...]
    where: str | None = None

    @property
    def aggregate_texts(self) -> dict[str, str]:
        """The aggregates as the keys / aggregates form takes them (output name -> text), in order."""
        return dict(self.aggregates)

    @property
    def qualifier(self) -> str:
        """The name columns may be qualified by: the alias, else the relation's last name part."""
        if self.alias is not None:
            return self.alias
        return _last_part(self.relation)


def _last_part(relation: str) -> str:
    return split_qualified_name(relation)[-1]


class _Query:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        depths, depth = [], 0
        for tok in self.tokens:
            if tok.type is TokenType.RPAREN:
                depth -= 1
            depths.append(depth)
            if tok.type is TokenType.LPAREN:
                depth += 1
        self.depths = depths
        self.qualifiers: tuple[str, ...] = ()

    def at(self, j: int) -> Token | None:
        return self.tokens[j] if 0 <= j < len(self.tokens) else None

    def word(self, j: int) -> str:
        tok = self.at(j)
        return tok.upper if tok is not None and tok.type is TokenType.WORD else ""

    def fail(self, message: str, j: int) -> QuerySyntaxError:
        tok = self.at(j)
        return QuerySyntaxError(message, text=self.text, position=len(self.text) if tok is None else tok.start)

    def span(self, lo: int, hi: int) -> str:
        return self.text[self.tokens[lo].start : self.tokens[hi - 1].end] if hi > lo else ""

    def find(self, lo: int, words: frozenset[str] | set[str]) -> int:
        """The first token at depth 0 from ``lo`` that is one of ``words`` (or the end)."""
        j = lo
        while j < len(self.tokens) and not (self.depths[j] == 0 and self.word(j) in words):
            j += 1
        return j

    def split(self, lo: int, hi: int) -> list[tuple[int, int]]:
        items, first = [], lo
        for j in range(lo, hi):
            if self.depths[j] == 0 and self.tokens[j].text == ",":
                items.append((first, j))
                first = j + 1
        items.append((first, hi))
        return items

    def column(self, lo: int, hi: int) -> str | None:
        """The column named by tokens ``[lo, hi)``: ``name`` or ``qualifier.name``; None when not a column."""
        span = self.tokens[lo:hi]
        if len(span) == 1 and span[0].type in _NAMES:
            if span[0].type is TokenType.WORD and span[0].upper in ("NULL", "TRUE", "FALSE", *_KEYWORDS):
                return None
            return span[0].name
        if len(span) == 3 and span[0].type in _NAMES and span[1].text == "." and span[2].type in _NAMES:
            if span[0].name.lower() not in self.qualifiers:
                raise QuerySyntaxError(f"{span[0].text}.{span[2].text}: qualified by a name that is not the FROM "
                                       "relation's", text=self.text, position=span[0].start)
            return span[2].name
        return None


def _spark_name(function: str, argument: str, distinct: bool, condition: str | None) -> str:
    """Spark's name for an unnamed aggregate (``count(url)``, ``count(1)``, ``count(DISTINCT url)``)."""
    name = f"{function.lower()}({'DISTINCT ' if distinct else ''}{argument})"
    return name if condition is None else f"{name} FILTER (WHERE {condition})"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _aggregate(q: _Query, lo: int, hi: int) -> tuple[str, str] | None:
    """``(Spark's name, aggregate text)`` of the aggregate call in tokens ``[lo, hi)``; None when it is none."""
    tokens = q.tokens
    first = tokens[lo]
    if first.type is not TokenType.WORD or q.at(lo + 1) is None or tokens[lo + 1].type is not TokenType.LPAREN:
        return None
    close = next((j for j in range(lo + 2, hi) if tokens[j].type is TokenType.RPAREN and q.depths[j] == q.depths[lo]),
                 None)
    if close is None:
        return None
    function = first.upper
    if function in _GROUP_WINDOWS:
        raise q.fail(f"{first.text}(...): a group window; run it as a window aggregation (the window job, or "
                     "timeweave.sql with a window TVF)", lo)
    if function not in FUNCTIONS:
        raise q.fail(f"{first.text}(...): the continuous GROUP BY computes COUNT, SUM, MIN, MAX and AVG only", lo)
    inner_lo, distinct = lo + 2, False
    if q.word(inner_lo) == "DISTINCT":
        if function != "COUNT":
            raise q.fail(f"{first.text}(DISTINCT ...): only COUNT takes DISTINCT here (COUNT(DISTINCT column))",
                         inner_lo)
        distinct, inner_lo = True, inner_lo + 1
    elif q.word(inner_lo) == "ALL":
        inner_lo += 1
    inner = tokens[inner_lo:close]
    if function == "COUNT" and not distinct and len(inner) == 1 and inner[0].text in ("*", "1"):
        text, name = "COUNT(*)", "count(1)"
    else:
        argument = q.column(inner_lo, close) if inner else None
        if argument is None:
            raise q.fail(f"{q.span(lo, close + 1)}: an aggregate of one column (compute expressions in the input "
                         "first)", inner_lo if inner else close)
        text = f"{function}({'DISTINCT ' if distinct else ''}{_quote(argument)})"
        name = _spark_name(function, argument, distinct, None)
    j = close + 1
    if q.word(j) == "FILTER":
        if q.at(j + 1) is None or tokens[j + 1].type is not TokenType.LPAREN or q.word(j + 2) != "WHERE":
            raise q.fail("FILTER: expected FILTER (WHERE column)", j)
        end = next((k for k in range(j + 3, hi) if tokens[k].type is TokenType.RPAREN and q.depths[k] == q.depths[lo]),
                   None)
        condition = q.column(j + 3, end) if end is not None else None
        if condition is None:
            raise q.fail("FILTER (WHERE ...): the condition must be one BOOLEAN column (compute it in the input "
                         "first)", j + 3)
        text += f" FILTER (WHERE {_quote(condition)})"
        name = f"{name} FILTER (WHERE {condition})"
        j = end + 1
    if j != hi:
        raise q.fail(f"{q.span(j, hi)}: an expression around an aggregate is not supported (compute it from the "
                     "materialised table)", j)
    return name, text


def _item(q: _Query, lo: int, hi: int) -> tuple[str | None, tuple[str, str] | None, str | None]:
    """One select item: (grouped column | None, (name, aggregate text) | None, alias | None)."""
    tokens = q.tokens
    if lo >= hi:
        raise q.fail("an empty select item", lo)
    alias = None
    if hi - lo >= 3 and q.word(hi - 2) == "AS" and tokens[hi - 1].type in _NAMES:
        alias, hi = tokens[hi - 1].name, hi - 2
    elif (hi - lo >= 2 and (tokens[hi - 1].type is TokenType.QUOTED or (
            tokens[hi - 1].type is TokenType.WORD and tokens[hi - 1].upper not in _KEYWORDS))
            and (tokens[hi - 2].type is TokenType.RPAREN or tokens[hi - 2].type in _NAMES)):
        alias, hi = tokens[hi - 1].name, hi - 1  # COUNT(url) n, user u
    if hi - lo == 1 and tokens[lo].text == "*":
        raise q.fail("SELECT *: name the GROUP BY columns and the aggregates", lo)
    column = q.column(lo, hi)
    if column is not None:
        return column, None, alias
    found = _aggregate(q, lo, hi)
    if found is None:
        raise q.fail(f"select item {q.span(lo, hi)}: the continuous GROUP BY takes the GROUP BY columns and COUNT(*) "
                     "or COUNT / SUM / MIN / MAX / AVG of one column (COUNT(DISTINCT column), FILTER (WHERE column)); "
                     "compute expressions in the input first", lo)
    return None, found, alias


def _relation(q: _Query, j: int, stop: int) -> tuple[str, str | None, int]:
    """The FROM relation from token ``j``: its name as written, its alias and the index after them."""
    tokens = q.tokens
    tok = q.at(j)
    if tok is None or j >= stop:
        raise q.fail("FROM: expected the input relation's name", j)
    if tok.type is TokenType.LPAREN:
        raise q.fail("FROM (subquery): the continuous GROUP BY reads one table or view (register the subquery as a "
                     "view)", j)
    if q.word(j) == "TABLE" or (q.at(j + 1) is not None and tokens[j + 1].type is TokenType.LPAREN):
        raise q.fail(f"FROM {tok.text}(...): a table function (a window TVF?); a windowed GROUP BY is a window "
                     "aggregation (the window job, or timeweave.sql)", j)
    if tok.type not in _NAMES or q.word(j) in _KEYWORDS:
        raise q.fail(f"FROM {tok.text}: expected the input relation's name", j)
    first = j
    j += 1
    while q.at(j) is not None and tokens[j].text == "." and q.at(j + 1) is not None and tokens[j + 1].type in _NAMES:
        j += 2
    relation = q.text[tokens[first].start : tokens[j - 1].end]
    alias = None
    if q.word(j) == "AS" and q.at(j + 1) is not None and tokens[j + 1].type in _NAMES:
        alias, j = tokens[j + 1].name, j + 2
    elif q.at(j) is not None and j < stop and (tokens[j].type is TokenType.QUOTED or (
            tokens[j].type is TokenType.WORD and q.word(j) not in _KEYWORDS)):
        alias, j = tokens[j].name, j + 1
    if j < stop:
        found = tokens[j]
        if found.text == "," or q.word(j) in _JOINS:
            raise q.fail(f"{found.text}: the continuous GROUP BY reads one relation, no join", j)
        if q.word(j) == "FOR":
            raise q.fail("FOR SYSTEM_TIME AS OF: a temporal join; the continuous GROUP BY reads one relation", j)
        raise q.fail(f"{found.text}: expected WHERE or GROUP BY after the FROM relation", j)
    return relation, alias, j


def parse_group_aggregate_query(text: str) -> GroupAggregateSql:
    """Read a continuous GROUP BY query (see the module docstring); anything else raises a positioned
    :class:`~timeweave.core.errors.QuerySyntaxError`.

    >>> q = parse_group_aggregate_query("SELECT c.user, SUM(c.v) FILTER (WHERE big) AS total, COUNT(*) "
    ...                                 "FROM db.clicks AS c WHERE c.url IS NOT NULL GROUP BY user")
    >>> q.relation, q.alias, q.keys, q.aggregates, q.where
    ('db.clicks', 'c', ('user',), (('total', 'SUM(`v`) FILTER (WHERE `big`)'), ('count(1)', 'COUNT(*)')), 'c.url IS NOT NULL')
    >>> parse_group_aggregate_query("SELECT user, SUM(DISTINCT v) FROM clicks GROUP BY user")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.QuerySyntaxError: SUM(DISTINCT ...): only COUNT takes DISTINCT here (COUNT(DISTINCT column)) (line 1, col 18)
    SELECT user, SUM(DISTINCT v) FROM clicks GROUP BY user
                     ^
    """
    if not isinstance(text, str) or not text.strip():
        raise QuerySyntaxError("expected a query: SELECT keys, aggregates FROM relation GROUP BY keys",
                               text=str(text or ""), position=0)
    q = _Query(text)
    tokens = q.tokens
    n = len(tokens)
    while n and tokens[n - 1].text == ";":
        n -= 1
    if q.word(0) == "WITH":
        raise q.fail("WITH: the continuous GROUP BY is one SELECT block (register the CTE as a view)", 0)
    if q.word(0) != "SELECT":
        raise q.fail("expected SELECT: the continuous GROUP BY is one SELECT block", 0)
    if q.word(1) in ("DISTINCT", "ALL"):
        raise q.fail(f"SELECT {tokens[1].text}: the continuous GROUP BY takes a plain select list", 1)
    for j in range(n):  # what a single block cannot hold, wherever it is
        if q.depths[j] == 0 and q.word(j) in ("UNION", "INTERSECT", "EXCEPT", "MINUS"):
            raise q.fail(f"{tokens[j].text}: a set operation; the continuous GROUP BY is one SELECT block", j)
        if tokens[j].text == ";":
            raise q.fail("; : one statement only", j)
    source = q.find(1, frozenset(("FROM",)))
    if source >= n:
        raise q.fail("expected FROM: the continuous GROUP BY reads one relation", source)
    clause = q.find(source + 1, frozenset(("WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "WINDOW", "QUALIFY")))
    clause = min(clause, n)
    relation, alias, _ = _relation(q, source + 1, clause)
    q.qualifiers = tuple(x.lower() for x in {alias or "", _last_part(relation)} if x)
    where = None
    group = clause
    if q.word(clause) == "WHERE":
        group = min(q.find(clause + 1, frozenset(("GROUP", "HAVING", "ORDER", "LIMIT", "WINDOW", "QUALIFY"))), n)
        if group == clause + 1:
            raise q.fail("WHERE: expected a condition", clause + 1)
        where = q.span(clause + 1, group)
    if q.word(group) != "GROUP" or q.word(group + 1) != "BY":
        what = "the end of the query" if group >= n else tokens[group].text
        raise q.fail(f"{what}: expected GROUP BY (a continuous GROUP BY groups by one or more columns; a global "
                     "aggregate is not supported)", group)
    tail = min(q.find(group + 2, frozenset(("HAVING", "ORDER", "LIMIT", "WINDOW", "QUALIFY", "SORT", "CLUSTER",
                                            "DISTRIBUTE", "OFFSET"))), n)
    grouped: list[str] = []
    for lo, hi in q.split(group + 2, tail):
        word = q.word(lo)
        if word in ("ROLLUP", "CUBE", "GROUPING"):
            raise q.fail(f"GROUP BY {tokens[lo].text}: grouping sets are not supported by the continuous GROUP BY", lo)
        if word in _GROUP_WINDOWS and q.at(lo + 1) is not None and tokens[lo + 1].type is TokenType.LPAREN:
            raise q.fail(f"GROUP BY {tokens[lo].text}(...): a group window; run it as a window aggregation (the "
                         "window job, or timeweave.sql)", lo)
        name = q.column(lo, hi) if hi > lo else None
        if name is None:
            raise q.fail(f"GROUP BY {q.span(lo, hi) or '(nothing)'}: the continuous GROUP BY groups by plain columns "
                         "only", lo)
        if name.lower() in (g.lower() for g in grouped):
            raise q.fail(f"GROUP BY {tokens[lo].text}: the column is named twice", lo)
        grouped.append(name)
    if tail < n:
        word = q.word(tail)
        if word == "HAVING":
            raise q.fail("HAVING: the continuous GROUP BY takes no HAVING (filter the materialised table instead)",
                         tail)
        if word in ("ORDER", "LIMIT", "OFFSET", "SORT", "CLUSTER", "DISTRIBUTE"):
            raise q.fail(f"{tokens[tail].text}: a continuous result has no order (order the materialised table)",
                         tail)
        raise q.fail(f"{tokens[tail].text}: the continuous GROUP BY takes no {word or tokens[tail].text}", tail)
    keys: list[str] = []
    aggregates: list[tuple[str, str]] = []
    names: set[str] = set()
    for lo, hi in q.split(1, source):
        column, aggregate, alias_name = _item(q, lo, hi)
        if column is not None:
            if column.lower() not in (g.lower() for g in grouped):
                raise q.fail(f"select item {q.span(lo, hi)}: not a GROUP BY column", lo)
            if aggregates:
                raise q.fail(f"select item {q.span(lo, hi)}: list the GROUP BY columns before the aggregates (the "
                             "changelog's unique key comes first)", lo)
            if alias_name is not None and alias_name != column:
                raise q.fail(f"select item {q.span(lo, hi)}: a GROUP BY column keeps its name (rename it in the "
                             "input)", lo)
            if column.lower() in (k.lower() for k in keys):
                raise q.fail(f"select item {q.span(lo, hi)}: the GROUP BY column is selected twice", lo)
            keys.append(next(g for g in grouped if g.lower() == column.lower()))
            names.add(column.lower())
            continue
        assert aggregate is not None
        name = alias_name or aggregate[0]
        if name.lower() in names:
            raise q.fail(f"select item {q.span(lo, hi)}: the output name {name!r} is taken", lo)
        names.add(name.lower())
        aggregates.append((name, aggregate[1]))
    missing = [g for g in grouped if g.lower() not in (k.lower() for k in keys)]
    if missing:
        raise q.fail(f"GROUP BY {missing[0]}: every GROUP BY column must be selected (the changelog's unique key)",
                     group)
    if not aggregates:
        raise q.fail("the select list has no aggregate (a GROUP BY without one is a DISTINCT: not supported)", 1)
    return GroupAggregateSql(text, relation, alias, tuple(keys), tuple(aggregates), where)


__all__ = ["FUNCTIONS", "GroupAggregateSql", "parse_group_aggregate_query"]
