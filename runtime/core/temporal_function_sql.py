"""Flink's temporal table function join, ``LATERAL TABLE (Rates(o.rowtime))``, as the temporal join it means.

Flink's older form of the event-time temporal join names a *temporal table function* (a history table with
its time attribute and primary key, created by ``createTemporalTableFunction``) and calls it with the left
row's time::

    SELECT o.amount * r.rate FROM Orders AS o, LATERAL TABLE (Rates(o.rowtime)) AS r
    WHERE r.currency = o.currency

It is an INNER join (Flink supports no other kind for it) of each order with the version of its currency's
rate valid at ``o.rowtime``: exactly ``JOIN <history> FOR SYSTEM_TIME AS OF o.rowtime AS r ON r.currency =
o.currency``.  Several such joins after one relation (``FROM Orders AS o, LATERAL TABLE (Prices(o.rowtime)) AS p,
LATERAL TABLE (Rates(o.rowtime)) AS r WHERE o.productId = p.productId AND r.currency = p.currency``, Flink's
``testNestedTemporalJoin``) become chained temporal joins, a later one keyed by the earlier ones' columns.  :func:`rewrite_temporal_functions` writes that form, moving the WHERE conjuncts that equate a
right-side key column with a left-side expression into the ON clause (the rest stay in WHERE, which filters
an inner join's rows as a residual ON predicate would); ``JOIN LATERAL TABLE (...) AS r ON ...`` keeps its ON
clause (``ON TRUE`` takes the key from WHERE too).  The temporal join's own rewrite then runs it, so every rule
(versions, deletes, late rows, dead letters) is the temporal join's.

Which names are temporal table functions, and the versioned table each one reads, is the caller's (the SQL
door's session registry): :class:`TemporalFunction`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.sql_tokens import Token, TokenType, tokenize

_NAMES = (TokenType.WORD, TokenType.QUOTED)
#: Words that end a FROM clause's join list or a WHERE condition at the same depth.
_CLAUSE_ENDS = frozenset({"GROUP", "HAVING", "ORDER", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "MINUS", "WINDOW",
                          "QUALIFY", "CLUSTER", "DISTRIBUTE", "SORT", "OFFSET"})
_JOIN_WORDS = frozenset({"JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "OUTER", "SEMI", "ANTI", "NATURAL"})
_NOT_ALIASES = frozenset({"WHERE", "ON", "USING", *_JOIN_WORDS, *_CLAUSE_ENDS})


@dataclass(frozen=True)
class TemporalFunction:
    """A registered temporal table function: the versioned table it reads (SQL text naming a table the SQL door
    knows as versioned, quoted by the caller) and that table's key columns (Flink: one primary-key column)."""

    table: str
    key: tuple[str, ...]


def _fail(message: str, text: str, tok: Token | None) -> QuerySyntaxError:
    return QuerySyntaxError(message, text=text, position=tok.start if tok is not None else len(text))


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


def _depths(tokens: list[Token]) -> list[int]:
    depths, depth = [], 0
    for tok in tokens:
        if tok.type is TokenType.RPAREN:
            depth -= 1
        depths.append(depth)
        if tok.type is TokenType.LPAREN:
            depth += 1
    return depths


def _find_lateral(tokens: list[Token]) -> int:
    """The last ``LATERAL TABLE (`` (rewritten first: the text before it, where the others are, keeps its
    positions)."""
    for i in range(len(tokens) - 3, -1, -1):
        if tokens[i].upper == "LATERAL" and tokens[i + 1].upper == "TABLE" and tokens[i + 2].type is TokenType.LPAREN:
            return i
    return -1


@dataclass(frozen=True)
class _Call:
    """``LATERAL TABLE ( name ( time ) ) [AS] alias``: token indices and texts."""

    lateral: int  # LATERAL
    end: int  # one past the alias
    function: Token
    time_text: str
    alias: str


def _call(text: str, tokens: list[Token], at: int, functions: Mapping[str, TemporalFunction]) -> tuple[_Call, str]:
    outer = _closing(tokens, at + 2)
    if outer < 0:
        raise _fail("LATERAL TABLE ( is never closed", text, tokens[at + 2])
    name = tokens[at + 3] if at + 3 < outer else None
    if name is None or name.type not in _NAMES or at + 4 >= outer or tokens[at + 4].type is not TokenType.LPAREN:
        raise _fail("LATERAL TABLE (...) takes a temporal table function call, e.g. LATERAL TABLE (Rates(o.rowtime))",
                    text, name or tokens[at + 2])
    key = name.name.lower()
    if key not in functions:
        known = ", ".join(sorted(functions)) or "none registered"
        raise _fail(f"LATERAL TABLE ({name.text}(...)): {name.text} is not a temporal table function (known: {known}); "
                    "create one with timeweave.create_temporal_table_function(spark, name, history, time=, key=)",
                    text, name)
    inner = _closing(tokens, at + 4)
    if inner != outer - 1:
        raise _fail(f"LATERAL TABLE ({name.text}(...)) holds one call and nothing else", text, tokens[inner + 1]
                    if 0 <= inner < outer - 1 else tokens[outer])
    depths = _depths(tokens)
    arguments = [j for j in range(at + 5, inner) if tokens[j].text == "," and depths[j] == depths[at + 5]]
    if inner == at + 5 or arguments:
        raise _fail(f"{name.text}(...) takes one argument, the left row's time attribute (e.g. {name.text}(o.rowtime))",
                    text, tokens[arguments[0]] if arguments else tokens[inner])
    time_text = text[tokens[at + 5].start:tokens[inner - 1].end]
    after = outer + 1
    alias = None
    if after < len(tokens) and tokens[after].upper == "AS":
        after += 1
        if after >= len(tokens) or tokens[after].type not in _NAMES:
            raise _fail("AS needs an alias for the temporal table function's rows", text,
                        tokens[after] if after < len(tokens) else None)
    if after < len(tokens) and tokens[after].type in _NAMES and tokens[after].upper not in _NOT_ALIASES:
        alias = tokens[after].text
        after += 1
        if after < len(tokens) and tokens[after].type is TokenType.LPAREN:
            raise _fail("column aliases after a temporal table function's alias are not supported; rename in SELECT",
                        text, tokens[after])
    if alias is None:
        raise _fail(f"LATERAL TABLE ({name.text}(...)) needs an alias (AS r) to name its columns in the condition",
                    text, tokens[after] if after < len(tokens) else None)
    return _Call(at, after, name, time_text, alias), key


def _conjuncts(tokens: list[Token], depths: list[int], lo: int, hi: int) -> list[tuple[int, int]]:
    """The top-level ``AND`` operands of the condition in tokens ``[lo, hi)`` (none when an ``OR`` joins them)."""
    depth = depths[lo] if lo < hi else 0
    parts, first, between = [], lo, False
    for j in range(lo, hi):
        if depths[j] != depth or tokens[j].type is not TokenType.WORD:
            continue
        if tokens[j].upper == "OR":
            return [(lo, hi)]
        if tokens[j].upper == "BETWEEN":
            between = True
        elif tokens[j].upper == "AND":
            if between:  # x BETWEEN a AND b
                between = False
                continue
            parts.append((first, j))
            first = j + 1
    parts.append((first, hi))
    return parts


def _is_key_equality(tokens: list[Token], depths: list[int], span: tuple[int, int], alias: str,
                     key: tuple[str, ...]) -> bool:
    """``alias.k = <expression not naming alias>`` (or reversed) for a key column ``k``."""
    lo, hi = span
    depth = depths[lo] if lo < hi else 0
    equals = [j for j in range(lo, hi) if depths[j] == depth and tokens[j].text == "="
              and not (j > lo and tokens[j - 1].text in ("<", ">", "!", "="))
              and not (j + 1 < hi and tokens[j + 1].text in (">", "="))]
    if len(equals) != 1:
        return False
    keys = {k.lower() for k in key}

    def right_key(a: int, b: int) -> bool:
        return (b - a == 3 and tokens[a].type in _NAMES and tokens[a].name.lower() == alias.lower()
                and tokens[a + 1].text == "." and tokens[a + 2].type in _NAMES and tokens[a + 2].name.lower() in keys)

    def names_alias(a: int, b: int) -> bool:
        return any(tokens[j].type in _NAMES and tokens[j].name.lower() == alias.lower() and j + 1 < b
                   and tokens[j + 1].text == "." for j in range(a, b))

    eq = equals[0]
    return ((right_key(lo, eq) and eq + 1 < hi and not names_alias(eq + 1, hi))
            or (right_key(eq + 1, hi) and eq > lo and not names_alias(lo, eq)))


def _where_bounds(tokens: list[Token], depths: list[int], start: int, depth: int) -> tuple[int, int] | None:
    """``(WHERE index, end)`` of the block's WHERE clause after token ``start``, else None."""
    where = None
    for j in range(start, len(tokens)):
        if depths[j] < depth or (depths[j] == depth and tokens[j].text == ";"):
            return None if where is None else (where, j)
        if depths[j] != depth or tokens[j].type is not TokenType.WORD:
            continue
        if tokens[j].upper == "WHERE" and where is None:
            where = j
        elif tokens[j].upper in _CLAUSE_ENDS or tokens[j].upper == "SELECT":
            return None if where is None else (where, j)
    return None if where is None else (where, len(tokens))


def _rewrite_one(text: str, functions: Mapping[str, TemporalFunction]) -> tuple[str, int] | None:
    """``text`` with its last temporal table function join rewritten, and the first character changed."""
    tokens = tokenize(text)
    at = _find_lateral(tokens)
    if at < 0:
        return None
    depths = _depths(tokens)
    call, key = _call(text, tokens, at, functions)
    function = functions[key]
    depth = depths[at]
    before = tokens[at - 1] if at > 0 else None
    # The joined form: `, LATERAL TABLE (...)` (comma join + WHERE) or `[INNER] JOIN LATERAL TABLE (...) ON ...`.
    if before is not None and before.text == ",":
        join_start, has_on = at - 1, False
    elif before is not None and before.upper == "JOIN":
        join_start = at - 1
        kind = tokens[at - 2].upper if at >= 2 else ""
        if kind in ("LEFT", "RIGHT", "FULL", "OUTER", "CROSS", "SEMI", "ANTI"):
            raise _fail(f"a temporal table function join is an INNER join (Flink supports no other); for a LEFT join "
                        f"write LEFT JOIN <history> FOR SYSTEM_TIME AS OF {call.time_text} AS {call.alias} ON ...",
                        text, tokens[at - 2])
        if kind == "INNER":
            join_start = at - 2
        has_on = call.end < len(tokens) and tokens[call.end].upper == "ON"
        if not has_on:
            raise _fail(f"JOIN LATERAL TABLE ({call.function.text}(...)) AS {call.alias} needs an ON clause "
                        "(ON TRUE with the key equality in WHERE, as Flink writes it)", text,
                        tokens[call.end] if call.end < len(tokens) else None)
    else:
        raise _fail("LATERAL TABLE (...) joins the table before it: write FROM Orders AS o, LATERAL TABLE "
                    f"({call.function.text}(o.rowtime)) AS r WHERE r.<key> = o.<key>", text, tokens[at])
    # Only one relation may precede it in its FROM, the temporal join's left side, or that relation's temporal
    # table function joins (rewritten after this one: the temporal joins chain, each reading the ones before).
    for j in range(join_start - 1, -1, -1):
        if depths[j] < depth:
            break
        lateral = j + 2 < len(tokens) and tokens[j + 1].upper == "LATERAL" and tokens[j + 2].upper == "TABLE"
        if depths[j] == depth and (tokens[j].text == "," or tokens[j].upper == "JOIN") and not lateral:
            raise _fail("a temporal table function joins one relation (FROM Orders AS o, LATERAL TABLE (...) AS r); "
                        "join the others in a subquery first", text, tokens[at])
        if depths[j] == depth and tokens[j].upper == "FROM":
            break
    on_text = ""
    on_end = call.end
    if has_on:
        on_lo = call.end + 1
        on_hi = on_lo
        while on_hi < len(tokens) and not (depths[on_hi] < depth or (depths[on_hi] == depth and (
                tokens[on_hi].text in (",", ";") or (tokens[on_hi].type is TokenType.WORD and (
                    tokens[on_hi].upper in _CLAUSE_ENDS or tokens[on_hi].upper in ("WHERE", "JOIN", "INNER", "LEFT",
                                                                                   "RIGHT", "FULL", "CROSS")))))):
            on_hi += 1
        if on_hi == on_lo:
            raise _fail("ON needs a condition", text, tokens[call.end])
        on_end = on_hi
        is_true = on_hi - on_lo == 1 and tokens[on_lo].upper == "TRUE"
        on_text = "" if is_true else text[tokens[on_lo].start:tokens[on_hi - 1].end]
    pieces: list[tuple[int, int, str]] = []  # (start char, end char, replacement), applied right to left
    moved: list[str] = []
    where = _where_bounds(tokens, depths, on_end, depth)
    if not on_text or not _has_key_equality(tokens, depths, call, function, has_on, on_end):
        if where is None:
            raise _fail(f"the temporal table function {call.function.text} needs a condition equating its key "
                        f"{call.alias}.{function.key[0]} with a left-side column (WHERE {call.alias}.{function.key[0]} "
                        "= o.<column>)", text, tokens[call.end - 1])
        w, end = where
        parts = _conjuncts(tokens, depths, w + 1, end)
        keep = [p for p in parts if not _is_key_equality(tokens, depths, p, call.alias, function.key)]
        moved = [text[tokens[a].start:tokens[b - 1].end] for a, b in parts
                 if _is_key_equality(tokens, depths, (a, b), call.alias, function.key)]
        if not moved:
            raise _fail(f"the temporal table function {call.function.text} needs WHERE {call.alias}."
                        f"{function.key[0]} = <left-side expression> (its primary key equated with the left row); "
                        "found no such equality among the WHERE condition's AND terms", text, tokens[w])
        end_char = tokens[end - 1].end
        if keep:
            # AND operands of a condition with no top-level OR: joined again by AND, no parentheses needed
            kept = " AND ".join(text[tokens[a].start:tokens[b - 1].end] for a, b in keep)
            pieces.append((tokens[w].start, end_char, f"WHERE {kept}"))
        else:
            pieces.append((tokens[w].start, end_char, ""))
    condition = " AND ".join(moved + ([f"({on_text})" if moved else on_text] if on_text else []))
    join = (f" JOIN {function.table} FOR SYSTEM_TIME AS OF {call.time_text} AS {call.alias} ON {condition}")
    start_char = tokens[join_start].start
    end_char = tokens[on_end - 1].end
    pieces.append((start_char, end_char, join))
    for lo, hi, replacement in sorted(pieces, reverse=True):
        text = text[:lo] + replacement + text[hi:]
    return text, min(lo for lo, _, _ in pieces)


def _has_key_equality(tokens: list[Token], depths: list[int], call: _Call, function: TemporalFunction,
                      has_on: bool, on_end: int) -> bool:
    if not has_on:
        return False
    parts = _conjuncts(tokens, depths, call.end + 1, on_end)
    return any(_is_key_equality(tokens, depths, p, call.alias, function.key) for p in parts)


def rewrite_temporal_functions(text: str, functions: Mapping[str, TemporalFunction]) -> str:
    """``text`` with every ``LATERAL TABLE (F(time)) AS r`` join of a temporal table function ``F`` (``functions``:
    lower-case name -> :class:`TemporalFunction`) written as ``JOIN <F's table> FOR SYSTEM_TIME AS OF time AS r
    ON <key equalities>``; a :class:`~timeweave.core.errors.QuerySyntaxError` positioned in ``text`` otherwise.

    >>> rates = {"rates": TemporalFunction("rates_history", ("currency",))}
    >>> print(rewrite_temporal_functions(
    ...     "SELECT o.amount * r.rate FROM orders AS o, LATERAL TABLE (Rates(o.rowtime)) AS r "
    ...     "WHERE r.currency = o.currency AND o.amount > 0", rates))
    SELECT o.amount * r.rate FROM orders AS o JOIN rates_history FOR SYSTEM_TIME AS OF o.rowtime AS r ON r.currency = o.currency WHERE o.amount > 0
    """
    original, unchanged = text, len(text)  # text[:unchanged] is still the original's
    while True:
        try:
            rewritten = _rewrite_one(text, functions)
        except QuerySyntaxError as error:
            if error.position < unchanged:
                raise QuerySyntaxError(error.description, text=original, position=error.position) from None
            raise QuerySyntaxError(f"{error.description} (in the query as rewritten so far: {text})",
                                   text=original, position=unchanged) from None
        if rewritten is None:
            return text
        text, changed = rewritten
        unchanged = min(unchanged, changed)


__all__ = ["TemporalFunction", "rewrite_temporal_functions"]
