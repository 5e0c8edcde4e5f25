"""Find Flink's ``JOIN r FOR SYSTEM_TIME AS OF l.t ON ...`` in a query, for the SQL door to rewrite.

Supported shape (Flink's, restricted to what has one meaning)::

    FROM <table or (subquery)> [AS] l
    [LEFT [OUTER] | INNER] JOIN <versioned table> FOR SYSTEM_TIME AS OF l.<time column> [AS] r
    ON l.k1 = r.k1 [AND l.k2 = r.k2 ...] [AND <extra predicate>]

Equalities between a left and a right column are the join keys; every other conjunct is the extra
predicate, applied to the version found.  A keyless versioned table (one history) takes any ON condition
(``ON TRUE``, or only a predicate): there every conjunct, equalities too, is the extra predicate
(:meth:`TemporalJoinClause.join_keys` decides, once the versioned table's key is known).  The left side must be one table or subquery directly after
FROM (wrap earlier joins in a subquery); errors say so with the position.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.sql_tokens import Token, TokenType, tokenize

_END_WORDS = {
    "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "MINUS", "JOIN", "LEFT", "RIGHT",
    "INNER", "FULL", "CROSS", "NATURAL", "WINDOW", "QUALIFY", "CLUSTER", "DISTRIBUTE", "SORT", "LATERAL", "OFFSET",
    "MATCH_RECOGNIZE",
}
_NOT_ALIAS = _END_WORDS | {"ON", "USING", "FOR", "AS", "SELECT", "FROM"}


@dataclass(frozen=True)
class TemporalJoinClause:
    """One ``FOR SYSTEM_TIME AS OF`` join found in a query, with the text span it occupies."""

    start: int
    end: int
    left_relation: str
    left_alias: str
    right_name: str
    right_alias: str
    how: str
    left_time: str
    key_pairs: tuple[tuple[str, str], ...]
    predicate: str | None
    #: text positions of bare ``*`` items in the select list of the query block holding the join; the
    #: SQL door turns them into ``* EXCEPT (<aliases>)`` so its alias struct columns stay out of ``SELECT *``
    select_stars: tuple[int, ...] = ()
    #: the text of each equality of ``key_pairs``, in order (a keyless table's predicates)
    key_texts: tuple[str, ...] = ()
    #: where the ON condition starts in ``text``, the query the clause was found in
    on_position: int = 0
    text: str = field(default="", repr=False, compare=False)

    def join_keys(self, versioned_key: tuple[str, ...], where: str) -> tuple[tuple[str, ...], str | None]:
        """(the left key columns in the order of ``versioned_key``, the extra predicate) for a versioned table
        with that key: the equalities must equate the whole key (Flink's rule); a keyless table (``()``) joins
        one history and every conjunct of ON is the predicate (``ON TRUE`` is none).

        >>> [c] = find_temporal_joins("SELECT * FROM o JOIN r FOR SYSTEM_TIME AS OF o.t ON o.c = r.c AND r.x > 1")
        >>> c.join_keys(("c",), "join"), c.join_keys((), "join")
        ((('c',), 'r.x > 1'), ((), '(o.c = r.c) AND (r.x > 1)'))
        >>> c.join_keys(("d",), "join")
        Traceback (most recent call last):
        ...
        timeweave.core.errors.SpecError: join: argument 'ON': the equalities join on ['c'], but the versioned table's key is ['d'] (a temporal join must equate the whole key, as in Flink)
        """
        if not versioned_key:
            rest = [*self.key_texts, *([self.predicate] if self.predicate else [])]
            rest = [r for r in rest if r.strip().upper() != "TRUE"]
            return (), " AND ".join(f"({r})" if len(rest) > 1 else r for r in rest) or None
        if not self.key_pairs:
            raise QuerySyntaxError(
                f"the ON condition needs at least one equality {self.left_alias}.<key> = {self.right_alias}.<key> "
                f"(the versioned table {self.right_name} has the key {list(versioned_key)})",
                text=self.text, position=self.on_position,
            )
        right_keys = [r for _, r in self.key_pairs]
        if sorted(right_keys) != sorted(versioned_key):
            raise SpecError(
                "ON",
                f"the equalities join on {right_keys}, but the versioned table's key is {list(versioned_key)} "
                "(a temporal join must equate the whole key, as in Flink)",
                where=where,
            )
        by_right = {r: left for left, r in self.key_pairs}
        return tuple(by_right[k] for k in versioned_key), self.predicate


def _is_ident(tok: Token) -> bool:
    return tok.type is TokenType.QUOTED or (tok.type is TokenType.WORD and tok.upper not in _NOT_ALIAS)


def _qualified(tokens: list[Token], i: int) -> tuple[list[str], int]:
    """Read ``a.b.c`` starting at i; returns (parts, next index)."""
    parts = []
    while i < len(tokens) and tokens[i].type in (TokenType.WORD, TokenType.QUOTED):
        parts.append(tokens[i].name)
        if i + 1 < len(tokens) and tokens[i + 1].text == ".":
            i += 2
            continue
        return parts, i + 1
    return parts, i


def find_temporal_joins(text: str) -> list[TemporalJoinClause]:
    """All temporal joins in ``text``, in order of appearance.

    >>> [c] = find_temporal_joins("SELECT * FROM orders AS o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
    ...                           "ON o.cur = r.cur AND r.rate > 1 WHERE o.id > 0")
    >>> c.left_relation, c.left_alias, c.right_name, c.how, c.left_time, c.key_pairs, c.predicate
    ('orders', 'o', 'rates', 'left', 'ts', (('cur', 'cur'),), 'r.rate > 1')
    >>> c.select_stars  # the position of the bare ``*`` in ``SELECT *``
    (7,)
    """
    tokens = tokenize(text)
    found = []
    for i in range(len(tokens) - 3):
        if [t.upper for t in tokens[i : i + 4]] == ["FOR", "SYSTEM_TIME", "AS", "OF"]:
            found.append(_parse_one(text, tokens, i))
    return found


def _fail(message: str, text: str, tok: Token | None) -> QuerySyntaxError:
    return QuerySyntaxError(message, text=text, position=tok.start if tok else len(text))


def _parse_one(text: str, tokens: list[Token], for_index: int) -> TemporalJoinClause:
    # -- backwards: right table name, JOIN, join type, left alias, left relation, FROM ------------------
    j = for_index - 1
    name_end = j
    while j >= 0 and (tokens[j].type in (TokenType.WORD, TokenType.QUOTED) or tokens[j].text == "."):
        if tokens[j].type is TokenType.WORD and tokens[j].upper == "JOIN":
            break
        j -= 1
    if j < 0 or tokens[j].upper != "JOIN" or j == name_end:
        raise _fail("FOR SYSTEM_TIME AS OF must follow 'JOIN <versioned table>'", text, tokens[for_index])
    right_name = text[tokens[j + 1].start : tokens[name_end].end]
    join_tok = j
    how = "inner"
    j -= 1
    if j >= 0 and tokens[j].upper == "OUTER":
        j -= 1
        if j < 0 or tokens[j].upper != "LEFT":
            raise _fail("only INNER and LEFT [OUTER] temporal joins exist (Flink)", text, tokens[j + 1])
    if j >= 0 and tokens[j].upper in ("LEFT", "INNER"):
        how = "left" if tokens[j].upper == "LEFT" else "inner"
        j -= 1
    elif j >= 0 and tokens[j].upper in ("RIGHT", "FULL", "CROSS", "NATURAL"):
        raise _fail(f"{tokens[j].upper} temporal joins are not supported; use INNER or LEFT (as Flink)", text, tokens[j])
    # left alias
    left_alias = None
    if j >= 1 and _is_ident(tokens[j]) and (tokens[j - 1].upper == "AS" or tokens[j - 1].type is TokenType.RPAREN
                                            or _is_ident(tokens[j - 1])):
        left_alias = tokens[j].name
        j -= 1
        if tokens[j].upper == "AS":
            j -= 1
    if j < 0:
        raise _fail("missing left side before the temporal join", text, tokens[join_tok])
    if tokens[j].type is TokenType.RPAREN:
        depth, k = 0, j
        while k >= 0:
            depth += {TokenType.RPAREN: 1, TokenType.LPAREN: -1}.get(tokens[k].type, 0)
            if depth == 0:
                break
            k -= 1
        left_start, left_end = k, j
    else:
        k = j
        while k - 2 >= 0 and tokens[k - 1].text == "." and tokens[k - 2].type in (TokenType.WORD, TokenType.QUOTED):
            k -= 2
        left_start, left_end = k, j
        if left_alias is None:
            left_alias = tokens[j].name
    if left_alias is None:
        raise _fail("a subquery on the left of a temporal join needs an alias", text, tokens[left_end])
    before = tokens[left_start - 1] if left_start > 0 else None
    if before is None or before.upper != "FROM":
        raise _fail(
            "the left side of FOR SYSTEM_TIME AS OF must be one table or subquery right after FROM; "
            "wrap earlier joins in a subquery",
            text, tokens[left_start],
        )
    left_relation = text[tokens[left_start].start : tokens[left_end].end]
    select_stars = _bare_stars(tokens, left_start - 1)
    # -- forwards: AS OF <alias.col> [AS] r ON <condition> --------------------------------------------
    i = for_index + 4
    parts, i = _qualified(tokens, i)
    if not parts or len(parts) > 2 or (len(parts) == 2 and parts[0] != left_alias):
        at = tokens[for_index + 4] if for_index + 4 < len(tokens) else None
        raise _fail(f"AS OF needs a time column of the left side ({left_alias}.<column>)", text, at)
    left_time = parts[-1]
    if i < len(tokens) and tokens[i].upper == "AS":
        i += 1
    right_alias = right_name.split(".")[-1].strip("`")
    if i < len(tokens) and _is_ident(tokens[i]):
        right_alias = tokens[i].name
        i += 1
    if i >= len(tokens) or tokens[i].upper != "ON":
        raise _fail("a temporal join needs ON <key equalities>", text, tokens[i] if i < len(tokens) else None)
    cond_start = i + 1
    depth, k = 0, cond_start
    while k < len(tokens):
        t = tokens[k]
        if t.type is TokenType.LPAREN:
            depth += 1
        elif t.type is TokenType.RPAREN:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (t.upper in _END_WORDS or t.text == ","):
            break
        k += 1
    if k == cond_start:
        raise _fail("empty ON condition", text, tokens[i])
    conjuncts = _split_and(tokens[cond_start:k])
    key_pairs: list[tuple[str, str]] = []
    key_texts: list[str] = []
    rest: list[str] = []
    for conj in conjuncts:
        pair = _key_pair(conj, left_alias, right_alias)
        if pair:
            key_pairs.append(pair)
            key_texts.append(text[conj[0].start : conj[-1].end])
        else:
            rest.append(text[conj[0].start : conj[-1].end])
    return TemporalJoinClause(
        start=tokens[left_start].start,
        end=tokens[k - 1].end,
        left_relation=left_relation,
        left_alias=left_alias,
        right_name=right_name,
        right_alias=right_alias,
        how=how,
        left_time=left_time,
        key_pairs=tuple(key_pairs),
        predicate=" AND ".join(f"({r})" if len(rest) > 1 else r for r in rest) or None,
        select_stars=select_stars,
        key_texts=tuple(key_texts),
        on_position=tokens[cond_start].start,
        text=text,
    )


def _bare_stars(tokens: list[Token], from_index: int) -> tuple[int, ...]:
    """Positions of select items that are a lone ``*`` in the query block whose FROM is at ``from_index``."""
    depth, j = 0, from_index - 1
    while j >= 0:
        t = tokens[j]
        if t.type is TokenType.RPAREN:
            depth += 1
        elif t.type is TokenType.LPAREN:
            if depth == 0:
                return ()
            depth -= 1
        elif depth == 0 and t.upper == "SELECT":
            break
        j -= 1
    if j < 0:
        return ()
    items: list[list[Token]] = [[]]
    depth = 0
    for t in tokens[j + 1 : from_index]:
        if t.type is TokenType.LPAREN:
            depth += 1
        elif t.type is TokenType.RPAREN:
            depth -= 1
        if depth == 0 and t.text == ",":
            items.append([])
            continue
        items[-1].append(t)
    stars = []
    for item in items:
        words = [t for t in item if t.upper not in ("DISTINCT", "ALL")]
        if len(words) == 1 and words[0].text == "*":
            stars.append(words[0].start)
    return tuple(stars)


def _split_and(tokens: list[Token]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    depth, between = 0, False
    for t in tokens:
        if t.type is TokenType.LPAREN:
            depth += 1
        elif t.type is TokenType.RPAREN:
            depth -= 1
        if depth == 0 and t.upper == "BETWEEN":
            between = True
        if depth == 0 and t.upper == "AND":
            if between:
                between = False
            else:
                parts.append([])
                continue
        parts[-1].append(t)
    return [p for p in parts if p]


def _key_pair(conj: list[Token], left_alias: str, right_alias: str) -> tuple[str, str] | None:
    if len(conj) != 7 or conj[3].text != "=" or conj[1].text != "." or conj[5].text != ".":
        return None
    a, b = (conj[0].name, conj[2].name), (conj[4].name, conj[6].name)
    if a[0] == left_alias and b[0] == right_alias:
        return a[1], b[1]
    if a[0] == right_alias and b[0] == left_alias:
        return b[1], a[1]
    return None
