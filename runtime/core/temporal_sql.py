"""Find Flink's ``JOIN r FOR SYSTEM_TIME AS OF l.t ON ...`` in a query, for the SQL door to rewrite.

Supported shape (Flink's, restricted to what has one meaning)::

    FROM <table or (subquery)> [AS] l
    [LEFT [OUTER] | INNER] JOIN <versioned table> FOR SYSTEM_TIME AS OF l.<time column> [AS] r
    ON <left expression> = r.k1 [AND <left expression> = r.k2 ...] [AND <extra predicate>]

An equality between a key column of the versioned side (``r.<column>``) and an expression over the left side
is a join key (:class:`KeyEquality`): ``o.currency``, and, as in Flink, any deterministic expression reading
``o.`` columns (``o.nested.currency``, ``o.attrs['currency']``, ``upper(o.cur)``, ``CASE ... END``).  The SQL
door computes such an expression as a hidden key column of the left side before the join.  Every other
conjunct is the extra predicate, applied to the version found.  Refused with the position: a key expression
that calls a non-deterministic function (``rand()``, ``current_timestamp``...: the key would change between
doors and re-runs) or also reads the versioned side, and an expression on the versioned side (``upper(r.k)``:
Flink looks versions up by the primary key itself).  A keyless versioned table (one history) takes any ON condition (``ON TRUE``, or only a predicate): there every
conjunct, equalities too, is the extra predicate (:meth:`TemporalJoinClause.join_keys` decides, once the versioned
table's key is known).  An equality on a column outside the versioned table's key is part of the
predicate (Flink's join keys need only contain the primary key).  The left side must be one table or subquery
directly after FROM, or the temporal joins right before this one (chained joins, Flink's ``FROM o JOIN a FOR
SYSTEM_TIME AS OF o.t AS r ON ... LEFT JOIN b FOR SYSTEM_TIME AS OF o.t AS r1 ON o.k = r1.k``): a chained join's
AS OF and ON may read every alias before it (:attr:`TemporalJoinClause.chain`); any other earlier join must be
wrapped in a subquery.  Errors say so with the position.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.sql_tokens import Token, TokenType, tokenize

_END_WORDS = {
    "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "MINUS", "JOIN", "LEFT", "RIGHT",
    "INNER", "FULL", "CROSS", "NATURAL", "WINDOW", "QUALIFY", "CLUSTER", "DISTRIBUTE", "SORT", "LATERAL", "OFFSET",
    "MATCH_RECOGNIZE",
}
_NOT_ALIAS = _END_WORDS | {"ON", "USING", "FOR", "AS", "SELECT", "FROM"}
#: Functions whose value is not a function of the row (Spark's and Flink's names): a join key computed with one
#: would differ between doors, slices and re-runs, so the finder refuses them in key expressions.
NON_DETERMINISTIC_FUNCTIONS = frozenset({
    "RAND", "RANDN", "RANDOM", "UNIFORM", "RANDSTR", "RAND_INTEGER", "UUID", "SHUFFLE", "MONOTONICALLY_INCREASING_ID",
    "SPARK_PARTITION_ID", "INPUT_FILE_NAME", "INPUT_FILE_BLOCK_START", "INPUT_FILE_BLOCK_LENGTH", "CURRENT_TIMESTAMP",
    "CURRENT_DATE", "CURRENT_TIME", "NOW", "LOCALTIMESTAMP", "LOCALTIME", "CURDATE", "PROCTIME",
    "CURRENT_ROW_TIMESTAMP", "UNIX_TIMESTAMP", "REFLECT", "JAVA_METHOD", "TRY_REFLECT",
})


@dataclass(frozen=True)
class KeyEquality:
    """One equality of the ON condition between the left side and a versioned column: ``<left> = r.<right>``.

    ``left_column`` is set when the left side is a plain ``o.<column>``; otherwise ``left_expression`` is the
    expression as written (over the left alias), which the SQL door computes as a hidden column named
    :attr:`left_name`.  ``conjunct`` is the equality's index among the ON condition's conjuncts, ``position``
    where it starts in the query.  ``refusal`` is why the expression cannot be a key (message, position), which
    counts only when ``right`` is a key column (:meth:`TemporalJoinClause.for_key`); otherwise the equality is
    part of the predicate, as any other conjunct.

    >>> KeyEquality("cur", None, "upper(o.cur)", 0, 0).left_name
    'upper(o.cur)'
    """

    right: str
    left_column: str | None
    left_expression: str | None
    conjunct: int
    position: int
    refusal: tuple[str, int] | None = None

    def __post_init__(self) -> None:
        if (self.left_column is None) == (self.left_expression is None):
            raise ValueError("KeyEquality: give exactly one of left_column and left_expression")

    @property
    def left_name(self) -> str:
        """The left column the join keys on: the column itself, or the hidden column holding the expression."""
        return self.left_column if self.left_column is not None else re.sub(r"\s+", " ", self.left_expression or "")


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
    keys: tuple[KeyEquality, ...]
    #: the ON condition's conjuncts as written; those that are not :attr:`keys` form the :attr:`predicate`
    conditions: tuple[str, ...]
    #: text positions of bare ``*`` items in the select list of the query block holding the join; the
    #: SQL door turns them into ``* EXCEPT (<aliases>)`` so its alias struct columns stay out of ``SELECT *``
    select_stars: tuple[int, ...] = ()
    #: the query the clause was found in (its errors are positioned in it)
    query: str = field(default="", repr=False, compare=False)
    #: why the ON condition has no key equality (message, position), raised for a keyed versioned table
    no_key: tuple[str, int] | None = None
    #: the aliases of a chained join's left side (the previous joins' aliases, in order); empty for one join
    chain: tuple[str, ...] = ()
    #: a chained join's AS OF expression as written (``o.order_time``), computed as :data:`CHAIN_TIME`
    time_expression: str | None = None

    @property
    def chained(self) -> bool:
        """Whether the left side is the temporal joins before this one in the same FROM (``FROM o JOIN r FOR
        SYSTEM_TIME AS OF o.t AS r ON ... JOIN r1 FOR SYSTEM_TIME AS OF o.t AS r1 ON ...``): its
        :attr:`left_relation` is empty until the SQL door fills it with the previous join's plan."""
        return bool(self.chain)

    @property
    def predicate(self) -> str | None:
        """The extra predicate: every conjunct that is not a key, in the query's order (None: none)."""
        used = {k.conjunct for k in self.keys}
        rest = [c for i, c in enumerate(self.conditions) if i not in used and c.strip().upper() != "TRUE"]
        return " AND ".join(f"({r})" if len(rest) > 1 else r for r in rest) or None

    def for_key(self, key: Sequence[str]) -> TemporalJoinClause:
        """The clause once the versioned table's ``key`` is known: an equality whose right column is no key column
        is part of the predicate (a condition on the version found: Flink's join keys need only *contain* the
        primary key, ``ON o.currency = r.currency AND o.currency_no = r.currency_no`` against a table keyed by
        ``currency``); one on a key column that cannot be a key raises its positioned error.

        >>> [c] = find_temporal_joins("SELECT o.id FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
        ...                           "ON upper(o.cur) = r.cur AND o.price * 2 = r.rate AND o.no = r.no")
        >>> c.key_pairs, c.predicate
        ((('upper(o.cur)', 'cur'), ('o.price * 2', 'rate'), ('no', 'no')), None)
        >>> c.for_key(["cur"]).key_pairs, c.for_key(["cur"]).predicate
        ((('upper(o.cur)', 'cur'),), '(o.price * 2 = r.rate) AND (o.no = r.no)')
        """
        keys = tuple(k for k in self.keys if k.right in key)
        for k in keys:
            if k.refusal is not None:
                raise QuerySyntaxError(k.refusal[0], text=self.query, position=k.refusal[1])
        return replace(self, keys=keys)

    @property
    def key_pairs(self) -> tuple[tuple[str, str], ...]:
        """(left column, right key column) per key; an expression's left column is its hidden column."""
        return tuple((k.left_name, k.right) for k in self.keys)

    @property
    def key_expressions(self) -> tuple[KeyEquality, ...]:
        """The keys whose left side is an expression (computed as hidden columns), first occurrence per text."""
        seen: dict[str, KeyEquality] = {}
        for k in self.keys:
            if k.left_expression is not None:
                seen.setdefault(k.left_name, k)
        return tuple(seen.values())

    def join_keys(self, versioned_key: Sequence[str], where: str
                  ) -> tuple[TemporalJoinClause, tuple[str, ...], str | None]:
        """(the clause for that key (:meth:`for_key`), the left key columns in the order of ``versioned_key``, the
        extra predicate) for a versioned table with that key: the equalities must equate the whole key (Flink's
        rule); a keyless table (``()``) joins one history and every conjunct of ON is the predicate (``ON TRUE``
        is none).

        >>> [c] = find_temporal_joins("SELECT * FROM o JOIN r FOR SYSTEM_TIME AS OF o.t ON o.c = r.c AND r.x > 1")
        >>> c.join_keys(("c",), "join")[1:], c.join_keys((), "join")[1:]
        ((('c',), 'r.x > 1'), ((), '(o.c = r.c) AND (r.x > 1)'))
        >>> c.join_keys(("d",), "join")
        Traceback (most recent call last):
        ...
        timeweave.core.errors.SpecError: join: argument 'ON': the equalities join on ['c'], but the versioned table's key is ['d'] (a temporal join must equate the whole key, as in Flink)
        """
        if not versioned_key:
            keyless = replace(self, keys=())
            return keyless, (), keyless.predicate
        clause = self.for_key(versioned_key)
        if not self.keys:
            message, position = self.no_key or ("the ON condition needs at least one equality", 0)
            raise QuerySyntaxError(f"{message} (the versioned table {self.right_name} has the key "
                                   f"{list(versioned_key)})", text=self.query, position=position)
        right_keys = [r for _, r in clause.key_pairs]
        if sorted(right_keys) != sorted(versioned_key):
            raise SpecError(
                "ON",
                f"the equalities join on {[r for _, r in self.key_pairs]}, but the versioned table's key is "
                f"{list(versioned_key)} (a temporal join must equate the whole key, as in Flink)",
                where=where,
            )
        by_right = {r: left for left, r in clause.key_pairs}
        return clause, tuple(by_right[k] for k in versioned_key), clause.predicate


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
    found: list[TemporalJoinClause] = []
    for i in range(len(tokens) - 3):
        if [t.upper for t in tokens[i : i + 4]] == ["FOR", "SYSTEM_TIME", "AS", "OF"]:
            found.append(_parse_one(text, tokens, i, found[-1] if found else None))
    return found


def _fail(message: str, text: str, tok: Token | None) -> QuerySyntaxError:
    return QuerySyntaxError(message, text=text, position=tok.start if tok else len(text))


def _parse_one(text: str, tokens: list[Token], for_index: int,
               previous: TemporalJoinClause | None = None) -> TemporalJoinClause:
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
    if previous is not None and j >= 0 and tokens[j].end == previous.end:
        return _parse_chained(text, tokens, for_index, previous, right_name, how)
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
    return _parse_rest(text, tokens, for_index, i, right_name, how, left_relation, left_alias, left_time,
                       tokens[left_start].start, select_stars, (left_alias,), None)


#: The hidden column a chained temporal join's AS OF expression is computed as (one per chain level).
CHAIN_TIME = "__tw_as_of"


def _parse_chained(text: str, tokens: list[Token], for_index: int, previous: TemporalJoinClause, right_name: str,
                   how: str) -> TemporalJoinClause:
    """A temporal join right after another one's ON condition: its left side is that join (and the ones before),
    so its AS OF and key expressions may read every alias before it (``o.t``, ``p.currency``)."""
    aliases = (*(previous.chain or (previous.left_alias,)), previous.right_alias)
    i = for_index + 4
    at = tokens[i] if i < len(tokens) else None
    parts, i = _qualified(tokens, i)
    if len(parts) != 2 or parts[0] not in aliases:
        raise _fail(f"AS OF needs a time column of the joins before it ({' / '.join(aliases)}.<column>)", text, at)
    time_expression = text[at.start : tokens[i - 1].end]
    return _parse_rest(text, tokens, for_index, i, right_name, how, "", f"__tw_chain{len(aliases)}", CHAIN_TIME,
                       previous.start, previous.select_stars, aliases, time_expression)


def _parse_rest(text: str, tokens: list[Token], for_index: int, i: int, right_name: str, how: str,
                left_relation: str, left_alias: str, left_time: str, start: int, select_stars: tuple[int, ...],
                aliases: tuple[str, ...], time_expression: str | None) -> TemporalJoinClause:
    """The clause from its right alias on: ``[AS] r ON <condition>``."""
    chained = time_expression is not None
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
    keys: list[KeyEquality] = []
    refused: Token | None = None  # an equality with an expression on the versioned side, for the error
    for n, conj in enumerate(conjuncts):
        key = _key_equality(text, conj, n, aliases, right_alias, None if chained else left_alias)
        if isinstance(key, KeyEquality):
            keys.append(key)
        elif key is not None:
            refused = refused or key
    no_key = None  # raised only for a keyed versioned table (a keyless one takes any ON): join_keys
    if not keys and refused is not None:
        no_key = (f"the versioned side of a key equality must be a key column {right_alias}.<key>, not an "
                  f"expression: Flink looks versions up by the versioned table's primary key (compute on the left "
                  f"side instead)", refused.start)
    elif not keys:
        no_key = (f"the ON condition needs at least one equality {aliases[0]}.<key> = {right_alias}.<key> (the left "
                  f"side may be any deterministic expression over {aliases[0]}.<columns>)", tokens[cond_start].start)
    return TemporalJoinClause(
        start=start,
        end=tokens[k - 1].end,
        left_relation=left_relation,
        left_alias=left_alias,
        right_name=right_name,
        right_alias=right_alias,
        how=how,
        left_time=left_time,
        keys=tuple(keys),
        conditions=tuple(text[c[0].start : c[-1].end] for c in conjuncts),
        select_stars=select_stars,
        query=text,
        no_key=no_key,
        chain=aliases if chained else (),
        time_expression=time_expression,
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


def _key_equality(
    text: str, conj: list[Token], conjunct: int, left_aliases: tuple[str, ...], right_alias: str,
    plain_alias: str | None,
) -> KeyEquality | Token | None:
    """The conjunct as a key equality; otherwise None (it belongs to the predicate), or, for an equality between
    the left side and an expression over the versioned side, that expression's first token (refused when no
    other conjunct is a key).  The left side reads ``left_aliases`` (a chained join's: every alias before it);
    ``<plain_alias>.<column>`` is a plain left column (None: every left side is an expression)."""
    sides = _equality_sides(conj)
    if sides is None:
        return None
    a, b = sides

    def reads(side: list[Token]) -> tuple[Token, Token] | None:
        return next((ref for ref in (_reference(side, alias) for alias in left_aliases) if ref), None)

    for right, left in ((a, b), (b, a)):
        column = _right_column(right, right_alias)
        if column is None:
            continue
        reads_left, mixed = reads(left), _reference(left, right_alias)
        if reads_left is None:
            continue
        refusal = None
        if mixed is not None:
            refusal = (f"a key expression cannot read the versioned side ({right_alias}.{mixed[1].name}): the key "
                       "picks the version, so it is computed from the left row alone", mixed[0].start)
        for i, tok in enumerate(left):
            called = tok.type is TokenType.WORD and tok.upper in NON_DETERMINISTIC_FUNCTIONS
            qualified = (i > 0 and left[i - 1].text == ".") or (i + 1 < len(left) and left[i + 1].text == ".")
            if called and not qualified and refusal is None:
                refusal = (f"a key expression must be deterministic; {tok.text} gives another value at every call, "
                           "so the version a row finds would change between runs and doors", tok.start)
        if len(left) == 3 and left[1].text == "." and left[0].name == plain_alias and refusal is None:
            return KeyEquality(column, left[2].name, None, conjunct, conj[0].start)
        return KeyEquality(column, None, text[left[0].start : left[-1].end], conjunct, conj[0].start, refusal)
    for right, left in ((a, b), (b, a)):
        if _reference(right, right_alias) is not None and reads(right) is None \
                and reads(left) is not None and _reference(left, right_alias) is None:
            return right[0]
    return None


_OPEN_WORDS, _CLOSE_WORDS = {"CASE"}, {"END"}


def _equality_sides(conj: list[Token]) -> tuple[list[Token], list[Token]] | None:
    """``(a, b)`` when the conjunct is ``a = b`` with one ``=`` outside parentheses, brackets and CASE."""
    depth, at = 0, []
    for i, t in enumerate(conj):
        if t.type is TokenType.LPAREN or t.text == "[" or (t.type is TokenType.WORD and t.upper in _OPEN_WORDS):
            depth += 1
        elif t.type is TokenType.RPAREN or t.text == "]" or (t.type is TokenType.WORD and t.upper in _CLOSE_WORDS):
            depth -= 1
        elif depth == 0 and t.type is TokenType.SYMBOL and t.text in ("=", "=="):
            at.append(i)
        elif depth == 0 and t.type is TokenType.SYMBOL and t.text in ("<", ">", "<=", ">=", "<>", "!=", "<=>"):
            return None
        elif depth == 0 and t.type is TokenType.WORD and t.upper in ("OR", "AND", "NOT", "IS", "IN", "LIKE"):
            return None
    if len(at) != 1 or at[0] == 0 or at[0] == len(conj) - 1:
        return None
    return conj[: at[0]], conj[at[0] + 1 :]


def _right_column(side: list[Token], right_alias: str) -> str | None:
    """``c`` when ``side`` is exactly ``<right alias>.c``."""
    if len(side) == 3 and side[1].text == "." and side[0].name == right_alias and _is_name(side[0]) \
            and _is_name(side[2]):
        return side[2].name
    return None


def _reference(side: list[Token], alias: str) -> tuple[Token, Token] | None:
    """The first ``<alias>.<name>`` in ``side`` (not itself a field of something): the alias and name tokens."""
    for i in range(len(side) - 2):
        if _is_name(side[i]) and side[i].name == alias and side[i + 1].text == "." and _is_name(side[i + 2]) \
                and (i == 0 or side[i - 1].text != "."):
            return side[i], side[i + 2]
    return None


def _is_name(tok: Token) -> bool:
    return tok.type in (TokenType.WORD, TokenType.QUOTED)
