"""Window Top-N, window deduplication and window join: the rules, engine-free (Flink is the reference).

* **Window Top-N** ranks the rows of each window (``window_start, window_end``) and partition key with
  ``ROW_NUMBER``, ``RANK`` or ``DENSE_RANK`` (the SQL standard's definitions) by an ORDER BY, and keeps the
  ranks in ``[lower, upper]`` (:class:`RankRange`: Flink's ``rownum <= N``, ``rownum < N``, ``rownum = N``,
  ``rownum BETWEEN a AND b``).
* **Window deduplication** is Top-1 by ``ROW_NUMBER`` on the time column, ascending (keep the first row) or
  descending (keep the last) (:func:`dedup_order`).
* **Window join** joins two windowed inputs on ``window_start``, ``window_end`` and keys; both inputs must
  use the same window TVF with the same sizes (:func:`check_join_windows`, Flink's rule).
* Flink runs none of the three directly over a SESSION TVF (:func:`check_not_session`).
* **Late rows** (streaming): a row counts in a window only if that window had not fired when the row
  arrived (:func:`~timeweave.core.windows.late.is_fired`), exactly as for window aggregation; the
  pairs it misses go to the late output (:func:`split_late`).  A join applies the rule to each input with
  that input's own watermark.  In batch there is no watermark, so no row is late.

:func:`top_n` is the reference evaluation of a ranking over ``(row, window)`` pairs (the window TVF's output,
:func:`~timeweave.core.windows.batch.assign_windows`).

>>> from timeweave.core.windows.spec import Window
>>> pairs = [({"p": 3}, Window(0, 10)), ({"p": 5}, Window(0, 10)), ({"p": 5}, Window(0, 10)), ({"p": 1}, Window(10, 20))]
>>> [(r["p"], w.start, rank) for r, w, rank in top_n(pairs, [SortKey("p", descending=True)], RankRange("RANK", 1, 2))]
[(5, 0, 1), (5, 0, 1), (1, 10, 1)]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from functools import cmp_to_key
from typing import Any

from timeweave.core.errors import SpecError
from timeweave.core.windows.late import LateRow, missed_windows
from timeweave.core.windows.spec import SessionSpec, Window, WindowSpec

#: The ranking functions a window Top-N may use.
RANK_FUNCTIONS = ("ROW_NUMBER", "RANK", "DENSE_RANK")
#: The join types of a window join (SEMI and ANTI are Flink's IN / EXISTS and NOT IN / NOT EXISTS).
JOIN_TYPES = ("INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI")
_JOIN_ALIASES = {"LEFT OUTER": "LEFT", "RIGHT OUTER": "RIGHT", "FULL OUTER": "FULL", "OUTER": "FULL",
                 "LEFT SEMI": "SEMI", "LEFT ANTI": "ANTI"}


@dataclass(frozen=True)
class RankRange:
    """The ranking function and the ranks kept, ``lower <= rank <= upper`` (both from 1).

    >>> RankRange.top(3)
    RankRange(function='ROW_NUMBER', lower=1, upper=3)
    >>> RankRange("NTILE", 1, 3)
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: window Top-N: argument 'function': expected one of ROW_NUMBER, RANK, DENSE_RANK, got 'NTILE'
    """

    function: str = "ROW_NUMBER"
    lower: int = 1
    upper: int = 1

    def __post_init__(self) -> None:
        where = "window Top-N"
        function = self.function.upper() if isinstance(self.function, str) else self.function
        if function not in RANK_FUNCTIONS:
            raise SpecError("function", f"expected one of {', '.join(RANK_FUNCTIONS)}, got {self.function!r}",
                            where=where)
        object.__setattr__(self, "function", function)
        for name in ("lower", "upper"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(name, f"a rank bound is an integer >= 1 (ranks start at 1), got {value!r}",
                                where=where)
        if self.lower > self.upper:
            raise SpecError("upper", f"the rank range is empty: lower {self.lower} > upper {self.upper}",
                            where=where)

    @classmethod
    def top(cls, n: int, function: str = "ROW_NUMBER") -> RankRange:
        """``rank <= n``."""
        return cls(function, 1, n)

    def keeps(self, rank: int) -> bool:
        """Whether ``rank`` is in the range."""
        return self.lower <= rank <= self.upper


_SORT = re.compile(r"^\s*(?P<column>`(?:[^`]|``)+`|[^\s`]+)(?:\s+(?P<direction>ASC|DESC))?"
                   r"(?:\s+NULLS\s+(?P<nulls>FIRST|LAST))?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class SortKey:
    """One ORDER BY key: a column, its direction and where NULLs sort.  The default NULL placement is
    Flink's and Spark's: NULLs are the smallest values (first ascending, last descending).

    >>> SortKey.parse("price DESC")
    SortKey(column='price', descending=True, nulls_first=False)
    >>> SortKey.parse("`bid time` ASC NULLS LAST")
    SortKey(column='bid time', descending=False, nulls_first=False)
    """

    column: str
    descending: bool = False
    nulls_first: bool | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise SpecError("order_by", f"expected a column name, got {self.column!r}", where="window Top-N")
        if self.nulls_first is None:
            object.__setattr__(self, "nulls_first", not self.descending)

    @classmethod
    def parse(cls, text: str | SortKey) -> SortKey:
        """``"col [ASC|DESC] [NULLS FIRST|LAST]"`` (a backquoted name may hold spaces)."""
        if isinstance(text, SortKey):
            return text
        match = _SORT.match(text) if isinstance(text, str) else None
        if match is None:
            raise SpecError("order_by", f"expected 'column [ASC|DESC] [NULLS FIRST|LAST]', got {text!r}",
                            where="window Top-N")
        column = match.group("column")
        if column.startswith("`"):
            column = column[1:-1].replace("``", "`")
        descending = (match.group("direction") or "ASC").upper() == "DESC"
        nulls = match.group("nulls")
        return cls(column, descending, None if nulls is None else nulls.upper() == "FIRST")

    @property
    def sql_direction(self) -> str:
        """``ASC NULLS FIRST``... (explicit, so no engine default enters)."""
        return ("DESC" if self.descending else "ASC") + (" NULLS FIRST" if self.nulls_first else " NULLS LAST")


def sort_keys(order_by: str | SortKey | Sequence[str | SortKey]) -> tuple[SortKey, ...]:
    """``order_by`` (one key or a list) as :class:`SortKey` values; at least one key (Flink's Top-N needs
    an ORDER BY).

    >>> [k.column for k in sort_keys(["price DESC", "bidtime"])]
    ['price', 'bidtime']
    """
    items = [order_by] if isinstance(order_by, (str, SortKey)) else list(order_by)
    if not items:
        raise SpecError("order_by", "a window Top-N needs at least one ORDER BY key", where="window Top-N")
    return tuple(SortKey.parse(item) for item in items)


def dedup_order(time: str, keep: str) -> SortKey:
    """Window deduplication's ORDER BY: the time column ascending (``keep="first"``) or descending
    (``"last"``).

    >>> dedup_order("bidtime", "last")
    SortKey(column='bidtime', descending=True, nulls_first=False)
    """
    if keep not in ("first", "last"):
        raise SpecError("keep", f"expected 'first' or 'last', got {keep!r}", where="window deduplication")
    return SortKey(time, descending=keep == "last")


def join_type(how: str) -> str:
    """The window join type of ``how`` (``inner``, ``left``, ``left outer``, ``full``, ``semi``, ``anti``...).

    >>> join_type("left outer"), join_type("anti")
    ('LEFT', 'ANTI')
    """
    name = " ".join(how.upper().split()) if isinstance(how, str) else how
    name = _JOIN_ALIASES.get(name, name)
    if name not in JOIN_TYPES:
        raise SpecError("how", f"expected one of {', '.join(t.lower() for t in JOIN_TYPES)}, got {how!r}",
                        where="window join")
    return name


def describe(spec: WindowSpec) -> str:
    """A window spec as Flink writes its TVF, in ms (for messages).

    >>> from timeweave.core.windows.spec import hop
    >>> describe(hop("5 minutes", "10 minutes"))
    'HOP(slide 300000 ms, size 600000 ms)'
    """
    values = ", ".join(f"{f.name.replace('_', ' ')} {getattr(spec, f.name)} ms" for f in fields(spec)
                       if f.name != "partition_by" and not (f.name == "offset" and getattr(spec, f.name) == 0))
    return f"{spec.kind}({values})"


def check_not_session(spec: WindowSpec, operation: str) -> None:
    """Flink runs window Top-N, deduplication and join over TUMBLE, HOP and CUMULATE only, not directly over a
    SESSION TVF (its docs' limitation, and no batch SESSION at all): a :class:`SpecError` naming ``window``."""
    if isinstance(spec, SessionSpec):
        raise SpecError("window", f"Flink runs {operation} over TUMBLE, HOP or CUMULATE windows, not directly over "
                        "SESSION windows; aggregate the sessions first (window_aggregate), then rank or join the "
                        "result", where=operation)


def check_join_windows(left: WindowSpec, right: WindowSpec) -> None:
    """Flink's rule: both inputs of a window join use the same window TVF with the same sizes and offset.

    >>> from timeweave.core.windows.spec import tumble, hop
    >>> check_join_windows(tumble("5 minutes"), tumble(300_000))
    >>> check_join_windows(tumble("10 minutes"), hop("5 minutes", "10 minutes"))
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: window join: argument 'right_window': both inputs must use the same window TVF (Flink's rule): left TUMBLE(size 600000 ms), right HOP(slide 300000 ms, size 600000 ms)
    """
    check_not_session(left, "window join")
    check_not_session(right, "window join")
    if left != right:
        raise SpecError("right_window", f"both inputs must use the same window TVF (Flink's rule): left "
                        f"{describe(left)}, right {describe(right)}", where="window join")


def split_late(pairs: Iterable[tuple[Any, Window]], *, time_of: Callable[[Any], int],
               watermark_of: Callable[[Any], int] | None,
               fire_time: Callable[[int], int] | None = None) -> tuple[list[tuple[Any, Window]], list[LateRow]]:
    """The window-op late rule: ``pairs`` (row, window) whose window had not fired when the row arrived
    (``watermark_of(row)``, ms; None: batch, nothing is late) and the late rows, one per row that missed at
    least one window (in the order of their first pair), with the windows it missed.  ``fire_time``: when a
    window fires, by its end (:func:`~timeweave.core.windows.late.missed_windows`; default ``end - 1``).

    >>> from timeweave.core.windows.spec import Window
    >>> row = {"t": 8}
    >>> kept, late = split_late([(row, Window(0, 10)), (row, Window(5, 15))], time_of=lambda r: r["t"],
    ...                         watermark_of=lambda r: 12)
    >>> [w.start for _, w in kept], [(x.missed, x.dropped) for x in late]
    ([5], [((Window(start=0, end=10),), False)])
    """
    pairs = list(pairs)
    if watermark_of is None:
        return pairs, []
    kept: list[tuple[Any, Window]] = []
    windows: dict[int, list[Window]] = {}
    rows: dict[int, Any] = {}
    for row, window in pairs:
        rows.setdefault(id(row), row)
        windows.setdefault(id(row), []).append(window)
        if not missed_windows((window,), watermark_of(row), fire_time):
            kept.append((row, window))
    late = []
    for ident, row in rows.items():
        watermark = watermark_of(row)
        missed = missed_windows(windows[ident], watermark, fire_time)
        if missed:
            late.append(LateRow(row, time_of(row), watermark, missed, len(missed) == len(windows[ident])))
    return kept, late


def row_order(keys: Sequence[SortKey], read: Callable[[Any, str], Any]) -> Callable[[Any, Any], int]:
    """The comparison (-1 / 0 / 1) of two rows by ``keys`` (``read(row, column)`` reads a value), NULLs placed
    as each key says: the one ordering :func:`top_n` ranks by (and the keyed operator keeps its candidates by).

    >>> row_order([SortKey("p", descending=True)], lambda r, c: r[c])({"p": 1}, {"p": None})
    -1
    """

    def compare(a: Any, b: Any) -> int:
        for key in keys:
            x, y = read(a, key.column), read(b, key.column)
            if x is None or y is None:
                if x is None and y is None:
                    continue
                return (-1 if x is None else 1) * (1 if key.nulls_first else -1)
            if x != y:
                return (-1 if x < y else 1) * (-1 if key.descending else 1)
        return 0
    return compare


def top_n(pairs: Iterable[tuple[Any, Window]], order: Sequence[SortKey], ranks: RankRange, *,
          key_of: Callable[[Any], Any] = lambda row: (),
          read: Callable[[Any, str], Any] = lambda row, column: row[column]) -> list[tuple[Any, Window, int]]:
    """Rank each window's rows (per ``key_of(row)``) by ``order`` and keep ``ranks``: (row, window, rank),
    windows by end then start, rows by rank.  ROW_NUMBER numbers tied rows in their input order (SQL leaves
    it open; so compare ties by their sort values, not by which tied row came first).
    """
    groups: dict[tuple[Window, Any], list[Any]] = {}
    for row, window in pairs:
        groups.setdefault((window, key_of(row)), []).append(row)
    compare = row_order(order, read)
    out: list[tuple[Any, Window, int]] = []
    for window, key in sorted(groups, key=lambda g: (g[0].end, g[0].start, repr(g[1]))):
        ranked = sorted(groups[(window, key)], key=cmp_to_key(compare))
        rank = dense = 0
        previous = None
        for number, row in enumerate(ranked, start=1):
            if previous is None or compare(previous, row) != 0:
                rank, dense = number, dense + 1
            previous = row
            value = {"ROW_NUMBER": number, "RANK": rank, "DENSE_RANK": dense}[ranks.function]
            if ranks.keeps(value):
                out.append((row, window, value))
    return out


__all__ = [
    "JOIN_TYPES",
    "RANK_FUNCTIONS",
    "RankRange",
    "SortKey",
    "check_join_windows",
    "check_not_session",
    "dedup_order",
    "describe",
    "join_type",
    "row_order",
    "sort_keys",
    "split_late",
    "top_n",
]
