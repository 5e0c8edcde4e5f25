"""Find Flink's window TVF calls in a query (TUMBLE, HOP, CUMULATE, SESSION), for the SQL door to rewrite.

Supported shapes, as Flink writes them (with or without the ``TABLE(...)`` wrapper)::

    TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTES [, offset]))
    HOP(TABLE t, DESCRIPTOR(ts), slide, size [, offset])
    CUMULATE(TABLE t, DESCRIPTOR(ts), step, max_size [, offset])
    SESSION(TABLE t [PARTITION BY k | PARTITION BY (k1, k2)], DESCRIPTOR(ts), gap)

and with named arguments, in any order after the positional ones: ``DATA =>``, ``TIMECOL =>``,
``SIZE =>``, ``SLIDE =>``, ``STEP =>``, ``MAX_SIZE =>`` (CUMULATE also takes Flink's ``SIZE =>`` for it),
``GAP =>``, ``OFFSET =>``.  The data argument is ``TABLE <name>`` or ``TABLE (<subquery>)``.  Durations are
``INTERVAL [-]'<n>' <unit>`` with units MILLISECOND, SECOND, MINUTE, HOUR, DAY (singular or plural; a
fractional count such as ``'1.5' SECOND`` down to the millisecond) or ``INTERVAL '<d> <h>:<m>[:<s>]' DAY TO
SECOND``-style ranges.  The spec is validated here (:mod:`~timeweave.core.windows.spec`), so a bad size, gap,
step or offset is reported with its position in the query and the argument's name, before any job runs;
:meth:`WindowTvf.check_columns` checks DESCRIPTOR and PARTITION BY against the input's columns.

A call is recognised by its first argument (``TABLE ...`` or ``DATA =>``): Flink's legacy group-window
functions ``TUMBLE(ts, INTERVAL ...)`` in GROUP BY are left alone here; :mod:`timeweave.core.windows.legacy_sql`
rewrites them to these calls first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.sql_tokens import Token, TokenType, tokenize
from timeweave.core.windows.spec import CumulateSpec, HopSpec, SessionSpec, TumbleSpec, WindowSpec

FUNCTIONS = ("TUMBLE", "HOP", "CUMULATE", "SESSION")
#: Positional parameter order per function (Flink's operand order) and the optional ones.
_PARAMETERS = {
    "TUMBLE": ("DATA", "TIMECOL", "SIZE", "OFFSET"),
    "HOP": ("DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"),
    "CUMULATE": ("DATA", "TIMECOL", "STEP", "MAX_SIZE", "OFFSET"),
    "SESSION": ("DATA", "TIMECOL", "GAP"),
}
_OPTIONAL = frozenset(("OFFSET",))
_ALIASES = {("CUMULATE", "SIZE"): "MAX_SIZE"}  # Flink names CUMULATE's max size SIZE
_UNIT_MS = {"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}
_RANGE_FIELDS = ("DAY", "HOUR", "MINUTE", "SECOND")


@dataclass(frozen=True)
class WindowTvf:
    """One window TVF call in a query.

    ``start``/``end`` span the whole call in the query (the ``TABLE(...)`` wrapper included, when written);
    ``relation`` is the data argument's table name or ``(subquery)`` text (at ``relation_start``);
    ``time_column`` the DESCRIPTOR's column (at ``time_position``); ``spec`` the validated window spec
    (SESSION's ``partition_by`` included); ``positions`` the query offset of each argument by parameter
    name (``DATA``, ``TIMECOL``, ``SIZE``, ``PARTITION BY``...).
    """

    start: int
    end: int
    function: str
    relation: str
    relation_start: int
    time_column: str
    time_position: int
    spec: WindowSpec
    positions: Mapping[str, int] = field(default_factory=dict)

    def check_columns(self, columns: Mapping[str, str], query: str) -> None:
        """Check the DESCRIPTOR and PARTITION BY columns against the input's columns (name -> type name,
        e.g. Spark's ``timestamp`` / ``timestamp_ntz``; names compared case-insensitively, as Spark does).
        A missing column, or a time column that is not a timestamp, is a positioned
        :class:`~timeweave.core.errors.QuerySyntaxError` naming the argument.

        >>> [call] = find_window_tvfs("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)")
        >>> call.check_columns({"ts": "string"}, "SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)")
        Traceback (most recent call last):
        ...
        timeweave.core.errors.QuerySyntaxError: TUMBLE argument TIMECOL: column ts of t is a string, not a timestamp (line 1, col 42)
        ...
        """
        types = {name.lower(): type_name for name, type_name in columns.items()}
        found = types.get(self.time_column.lower())
        if found is None:
            raise _argument_error(self.function, "TIMECOL", f"column {self.time_column} not found in "
                                  f"{self.relation} (columns: {', '.join(columns)})", query, self.time_position)
        if not found.lower().startswith("timestamp"):
            raise _argument_error(self.function, "TIMECOL", f"column {self.time_column} of {self.relation} is a "
                                  f"{found}, not a timestamp", query, self.time_position)
        if isinstance(self.spec, SessionSpec):
            for column in self.spec.partition_by:
                if column.lower() not in types:
                    raise _argument_error(self.function, "PARTITION BY", f"column {column} not found in "
                                          f"{self.relation} (columns: {', '.join(columns)})", query,
                                          self.positions.get("PARTITION BY", self.relation_start))


def _argument_error(function: str, argument: str, message: str, text: str, position: int) -> QuerySyntaxError:
    error = QuerySyntaxError(f"{function} argument {argument}: {message}", text=text, position=position)
    error.argument = argument  # type: ignore[attr-defined]
    return error


def _fail(message: str, text: str, tok: Token | None) -> QuerySyntaxError:
    return QuerySyntaxError(message, text=text, position=tok.start if tok else len(text))


def _matching(tokens: list[Token], i: int) -> int:
    """Index of the ')' closing the '(' at ``tokens[i]`` (-1 when none)."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].type is TokenType.LPAREN:
            depth += 1
        elif tokens[j].type is TokenType.RPAREN:
            depth -= 1
            if depth == 0:
                return j
    return -1


def _named(tokens: list[Token], i: int, stop: int) -> bool:
    """Whether ``tokens[i:]`` starts with ``NAME =>``."""
    return (i + 2 < stop and tokens[i].type is TokenType.WORD and tokens[i + 1].text == "="
            and tokens[i + 2].text == ">" and tokens[i + 1].end == tokens[i + 2].start)


def find_window_tvfs(text: str) -> list[WindowTvf]:
    """All window TVF calls of ``text``, in order of appearance.

    >>> [c] = find_window_tvfs("SELECT window_start, SUM(price) FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), "
    ...                        "INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)) GROUP BY window_start")
    >>> c.function, c.relation, c.time_column, c.spec
    ('HOP', 'Bid', 'bidtime', HopSpec(slide=300000, size=600000, offset=0))
    >>> [c] = find_window_tvfs("SELECT * FROM SESSION(DATA => TABLE Bid PARTITION BY supplier_id, "
    ...                        "TIMECOL => DESCRIPTOR(bidtime), GAP => INTERVAL '2' MINUTES)")
    >>> c.spec
    SessionSpec(gap=120000, partition_by=('supplier_id',))
    >>> find_window_tvfs("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '0' MINUTES)")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.QuerySyntaxError: TUMBLE argument SIZE: must be greater than 0, but got size 0 ms (line 1, col 47)
    ...
    """
    tokens = tokenize(text)
    found: list[WindowTvf] = []
    for i, tok in enumerate(tokens):
        if (tok.type is TokenType.WORD and tok.upper in FUNCTIONS and i + 2 < len(tokens)
                and tokens[i + 1].type is TokenType.LPAREN
                and (tokens[i + 2].upper == "TABLE" or _named(tokens, i + 2, len(tokens)))
                and not (i > 0 and tokens[i - 1].text == ".")):
            found.append(_parse_call(text, tokens, i))
    return found


def _parse_call(text: str, tokens: list[Token], at: int) -> WindowTvf:
    function = tokens[at].upper
    close = _matching(tokens, at + 1)
    if close < 0:
        raise _fail(f"{function}( is never closed", text, tokens[at + 1])
    # -- split the arguments at top-level commas ---------------------------------------------------------
    arguments: list[tuple[int, int]] = []  # token index ranges [first, stop)
    depth, first = 0, at + 2
    for j in range(at + 2, close):
        kind = tokens[j].type
        if kind is TokenType.LPAREN:
            depth += 1
        elif kind is TokenType.RPAREN:
            depth -= 1
        elif depth == 0 and tokens[j].text == ",":
            arguments.append((first, j))
            first = j + 1
    arguments.append((first, close))
    parameters = _PARAMETERS[function]
    given: dict[str, tuple[int, int]] = {}
    named_seen = False
    for index, (lo, hi) in enumerate(arguments):
        if lo >= hi:
            raise _fail(f"{function}: empty argument", text, tokens[lo] if lo < len(tokens) else None)
        if _named(tokens, lo, hi):
            name = tokens[lo].upper
            name = _ALIASES.get((function, name), name)
            if name not in parameters:
                raise _fail(f"{function} has no argument {tokens[lo].text}; its arguments are "
                            f"{', '.join(parameters)}", text, tokens[lo])
            if name in given:
                raise _fail(f"{function} argument {name} is given twice", text, tokens[lo])
            named_seen = True
            lo += 3
            if lo >= hi:
                raise _fail(f"{function} argument {name}: a value must follow =>", text, tokens[lo - 1])
        else:
            if named_seen:
                raise _fail(f"{function}: a positional argument cannot follow named arguments", text, tokens[lo])
            if index >= len(parameters):
                raise _fail(f"{function} takes at most {len(parameters)} arguments "
                            f"({', '.join(parameters)})", text, tokens[lo])
            name = parameters[index]
        given[name] = (lo, hi)
    for name in parameters:
        if name not in given and name not in _OPTIONAL:
            raise _fail(f"{function} is missing its {name} argument (arguments: {', '.join(parameters)})",
                        text, tokens[close])
    positions = {name: tokens[lo].start for name, (lo, _) in given.items()}
    # -- DATA: TABLE name | TABLE (subquery) [PARTITION BY ...] -------------------------------------------
    lo, hi = given["DATA"]
    if tokens[lo].upper != "TABLE":
        raise _fail(f"{function} argument DATA: expected TABLE <name> or TABLE (<subquery>)", text, tokens[lo])
    j = lo + 1
    if j >= hi:
        raise _fail(f"{function} argument DATA: TABLE must be followed by a table name or (subquery)", text,
                    tokens[lo])
    relation_start = tokens[j].start
    if tokens[j].type is TokenType.LPAREN:
        k = _matching(tokens, j)
        relation = text[tokens[j].start : tokens[k].end]
        j = k + 1
    elif tokens[j].type in (TokenType.WORD, TokenType.QUOTED):
        k = j
        while k + 2 < hi and tokens[k + 1].text == "." and tokens[k + 2].type in (TokenType.WORD, TokenType.QUOTED):
            k += 2
        relation = text[tokens[j].start : tokens[k].end]
        j = k + 1
    else:
        raise _fail(f"{function} argument DATA: expected a table name or (subquery) after TABLE", text, tokens[j])
    partition_by: tuple[str, ...] = ()
    if j < hi and tokens[j].upper == "PARTITION":
        if j + 1 >= hi or tokens[j + 1].upper != "BY":
            raise _fail(f"{function} argument DATA: expected BY after PARTITION", text,
                        tokens[j + 1] if j + 1 < hi else tokens[hi - 1])
        if function != "SESSION":
            raise _fail(f"{function} does not take PARTITION BY (only SESSION does, in Flink)", text, tokens[j])
        positions["PARTITION BY"] = tokens[j].start
        partition_by, j = _column_list(text, tokens, j + 2, hi, function)
    if j < hi:
        raise _fail(f"{function} argument DATA: unexpected {tokens[j].text!r} after the table", text, tokens[j])
    # -- TIMECOL: DESCRIPTOR(column) -------------------------------------------------------------------
    lo, hi = given["TIMECOL"]
    if (tokens[lo].upper != "DESCRIPTOR" or lo + 1 >= hi or tokens[lo + 1].type is not TokenType.LPAREN
            or _matching(tokens, lo + 1) != hi - 1):
        raise _fail(f"{function} argument TIMECOL: expected DESCRIPTOR(<time column>)", text, tokens[lo])
    inner = tokens[lo + 2 : hi - 1]
    if len(inner) != 1 or inner[0].type not in (TokenType.WORD, TokenType.QUOTED):
        raise _fail(f"{function} argument TIMECOL: DESCRIPTOR names exactly one time column", text,
                    inner[0] if inner else tokens[hi - 1])
    time_column, time_position = inner[0].name, inner[0].start
    # -- durations and the spec --------------------------------------------------------------------------
    values = {name: _interval(text, tokens, *given[name], function, name)
              for name in ("SIZE", "SLIDE", "STEP", "MAX_SIZE", "GAP", "OFFSET") if name in given}
    try:
        spec = _spec(function, values, partition_by)
    except SpecError as error:
        name = "PARTITION BY" if error.argument == "partition_by" else error.argument.upper()
        position = positions.get(name, tokens[at].start)
        raise _argument_error(function, name, error.message, text, position) from None
    start, end = tokens[at].start, tokens[close].end
    # the TABLE(...) wrapper: TABLE ( <call> )
    if (at >= 2 and tokens[at - 1].type is TokenType.LPAREN and tokens[at - 2].upper == "TABLE"
            and close + 1 < len(tokens) and tokens[close + 1].type is TokenType.RPAREN):
        start, end = tokens[at - 2].start, tokens[close + 1].end
    return WindowTvf(start, end, function, relation, relation_start, time_column, time_position, spec, positions)


def _column_list(text: str, tokens: list[Token], j: int, hi: int, function: str) -> tuple[tuple[str, ...], int]:
    """``k`` or ``(k1, k2)`` (qualified names keep their last part); returns the names and the next index."""
    if j >= hi:
        raise _fail(f"{function}: PARTITION BY needs a column", text, tokens[hi - 1])
    if tokens[j].type is TokenType.LPAREN:
        k = _matching(tokens, j)
        items, names = tokens[j + 1 : k], []
        expect_name = True
        for tok in items:
            if expect_name and tok.type in (TokenType.WORD, TokenType.QUOTED):
                names.append(tok.name)
                expect_name = False
            elif not expect_name and tok.text in (",", "."):
                expect_name = True
                if tok.text == ".":
                    names.pop()
            else:
                raise _fail(f"{function}: PARTITION BY takes column names", text, tok)
        if not names or expect_name:
            raise _fail(f"{function}: PARTITION BY takes column names", text, tokens[k])
        return tuple(names), k + 1
    if tokens[j].type not in (TokenType.WORD, TokenType.QUOTED):
        raise _fail(f"{function}: PARTITION BY takes column names", text, tokens[j])
    while j + 2 < hi and tokens[j + 1].text == "." and tokens[j + 2].type in (TokenType.WORD, TokenType.QUOTED):
        j += 2
    names = [tokens[j].name]
    j += 1
    while j + 1 < hi and tokens[j].text == "," and tokens[j + 1].type in (TokenType.WORD, TokenType.QUOTED):
        names.append(tokens[j + 1].name)  # PARTITION BY a, b (unparenthesised) is Calcite's too
        j += 2
    return tuple(names), j


def _interval(text: str, tokens: list[Token], lo: int, hi: int, function: str, name: str) -> int:
    """Milliseconds of ``[-] INTERVAL [-]'n' UNIT`` (or a ``'d h:m:s' DAY TO SECOND`` range) in tokens[lo:hi]."""
    def fail(message: str, tok: Token) -> QuerySyntaxError:
        return _argument_error(function, name, message, text, tok.start)

    first = tokens[lo]
    negative = False
    j = lo
    if tokens[j].text in ("-", "+"):
        negative = tokens[j].text == "-"
        j += 1
    if j >= hi or tokens[j].upper != "INTERVAL":
        raise fail("expected an interval such as INTERVAL '10' MINUTES", first)
    j += 1
    if j < hi and tokens[j].text in ("-", "+"):
        negative ^= tokens[j].text == "-"
        j += 1
    if j >= hi or tokens[j].type not in (TokenType.STRING, TokenType.NUMBER):
        raise fail("expected the interval's value, such as '10'", tokens[min(j, hi - 1)])
    value_tok = tokens[j]
    raw = value_tok.text[1:-1].strip() if value_tok.type is TokenType.STRING else value_tok.text
    j += 1
    if j >= hi or tokens[j].type is not TokenType.WORD:
        raise fail("expected an interval unit (MILLISECOND, SECOND, MINUTE, HOUR or DAY)", tokens[min(j, hi - 1)])
    unit_tok = tokens[j]
    unit = _unit(unit_tok.upper)
    if unit is None:
        message = ("year-month intervals cannot size a window" if unit_tok.upper.rstrip("S") in ("YEAR", "MONTH")
                   else "expected an interval unit (MILLISECOND, SECOND, MINUTE, HOUR or DAY)")
        raise fail(message, unit_tok)
    j += 1
    if raw.startswith("-"):
        negative, raw = not negative, raw[1:].strip()
    elif raw.startswith("+"):
        raw = raw[1:].strip()
    if j < hi and tokens[j].upper == "TO":  # a range: '1 02:00' DAY TO MINUTE
        if j + 1 >= hi or _unit(tokens[j + 1].upper) is None:
            raise fail("expected the end unit of the interval range", tokens[min(j + 1, hi - 1)])
        last = _unit(tokens[j + 1].upper)
        ms = _range_ms(raw, unit, last)
        if ms is None:
            raise fail(f"cannot read {value_tok.text} as a {unit} TO {last} interval", value_tok)
        j += 2
    else:
        try:
            amount = Decimal(raw) * _UNIT_MS[unit]
        except (InvalidOperation, ValueError):
            raise fail(f"cannot read {value_tok.text} as a number of {unit.lower()}s", value_tok) from None
        if not amount.is_finite() or amount != amount.to_integral_value():
            raise fail(f"{value_tok.text} {unit} is not a whole number of milliseconds", value_tok)
        ms = int(amount)
    if j < hi:
        raise fail(f"unexpected {tokens[j].text!r} after the interval", tokens[j])
    return -ms if negative else ms


def _unit(word: str) -> str | None:
    for unit in _UNIT_MS:
        if word in (unit, unit + "S"):
            return unit
    return None


def _range_ms(raw: str, first: str, last: str) -> int | None:
    """``'1 02:30:00.5'`` as DAY TO SECOND (fields from ``first`` to ``last``) in ms, or None."""
    if first not in _RANGE_FIELDS or last not in _RANGE_FIELDS:
        return None
    fields = _RANGE_FIELDS[_RANGE_FIELDS.index(first) : _RANGE_FIELDS.index(last) + 1]
    if len(fields) < 2:
        return None
    parts: list[str] = []
    rest = raw
    if fields[0] == "DAY":
        day, _, rest = rest.partition(" ")
        parts.append(day)
    parts.extend(rest.split(":") if rest else [])
    if len(parts) != len(fields):
        return None
    total = Decimal(0)
    try:
        for value, unit in zip(parts, fields, strict=True):
            number = Decimal(value)
            if number < 0 or (unit != "SECOND" and number != number.to_integral_value()):
                return None
            total += number * _UNIT_MS[unit]
    except InvalidOperation:
        return None
    return int(total) if total == total.to_integral_value() else None


def _spec(function: str, values: dict[str, int], partition_by: tuple[str, ...]) -> WindowSpec:
    offset = values.get("OFFSET", 0)
    if function == "TUMBLE":
        return TumbleSpec(values["SIZE"], offset)
    if function == "HOP":
        return HopSpec(values["SLIDE"], values["SIZE"], offset)
    if function == "CUMULATE":
        return CumulateSpec(values["STEP"], values["MAX_SIZE"], offset)
    return SessionSpec(values["GAP"], partition_by)


__all__ = ["FUNCTIONS", "WindowTvf", "find_window_tvfs"]
