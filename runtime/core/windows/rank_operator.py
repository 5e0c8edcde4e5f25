"""The keyed window Top-N / window deduplication operator (Flink's ``WindowRankOperator``), on the
:class:`~timeweave.core.state.KeyContext` contract.

One instance serves every key; it sees one key (the Top-N's PARTITION BY values besides the window) at a time.
The rules are the core's, none restated here: which windows a row belongs to is
:class:`~timeweave.core.windows.slicing.Slicing`'s, which (row, window) pairs are late is
:func:`~timeweave.core.windows.ranking.split_late`'s, and how a window's rows are ranked and filtered is
:func:`~timeweave.core.windows.ranking.top_n`'s (ROW_NUMBER / RANK / DENSE_RANK, a :class:`RankRange`).
Window deduplication is Top-1 by ROW_NUMBER on the time column (:meth:`WindowRankOperator.deduplicate`,
:func:`~timeweave.core.windows.ranking.dedup_order`), as in Flink.

* **State** (declared here, plain data the state codec stores): the candidate rows of each *slice* of the key
  (:data:`ROWS`, slice end -> rows in arrival order: HOP and CUMULATE windows share slices), the watermark
  through which the key's windows have fired (:data:`FIRED`) and the one registered timer (:data:`TIMER`).
  A slice keeps only its rows that can still rank within ``upper`` in some window: a row with ``upper`` or more
  strictly better rows in its own slice (DENSE_RANK: ``upper`` or more better values) ranks below ``upper`` in
  every window holding that slice, so it is forgotten (Flink's Top-N buffer keeps ``upper`` rows too).
* **Rows** arriving at watermark ``W`` (ms) count in their windows that have not fired at ``W``; the pairs
  they miss make one :class:`~timeweave.core.windows.late.LateRow` per row (``dropped`` when it counts
  nowhere).  A NULL event time is a :class:`~timeweave.core.windows.operator.DeadLetter` with the reason.
* **Timers drive output**: one core timer per key at the ``window_time`` of its next window to fire;
  :meth:`WindowRankOperator.on_watermark` emits each window the watermark reached, by window end, once:
  its rows ranked in the range (:class:`RankedRow`, append-only and final), then frees the slices no unfired
  window needs.  The element handler first fires what the watermark already passed (either order is safe).

Units: row times and windows are epoch milliseconds (wall-clock milliseconds with a ``time_zone``: TIMESTAMP_LTZ
windows follow the session time zone, as the window aggregate's, :mod:`~timeweave.core.windows.zones`); the
context's watermark and timers are the core's µs.

>>> from timeweave.core.state import InMemoryKeyContext
>>> from timeweave.core.windows.ranking import RankRange
>>> from timeweave.core.windows.spec import tumble
>>> op = WindowRankOperator(tumble(10), "p DESC", RankRange.top(2), time_column="t")
>>> ctx = InMemoryKeyContext()
>>> op.process_elements(ctx, [{"t": 1, "p": 3}, {"t": 2, "p": 5}, {"t": 4, "p": 4}, {"t": None, "p": 9}])
[DeadLetter(row={'t': None, 'p': 9}, reason='NULL event time column t')]
>>> ctx.current_watermark = 9_000   # 9 ms (µs here): the window [0, 10) fires
>>> [(r.window.start, r.row["p"], r.rank) for r in op.on_watermark(ctx)]
[(0, 5, 1), (0, 4, 2)]
>>> op.process_elements(ctx, [{"t": 7, "p": 1}])[0].reason.endswith("dropped from every window")
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any, ClassVar

from timeweave.core.errors import SpecError
from timeweave.core.operator import StateLayout, Tag, ValueState
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, KeyContext
from timeweave.core.windows.late import LateRow, keep_one_timer, next_window_end, timer_us, watermark_ms
from timeweave.core.windows.operator import DeadLetter
from timeweave.core.windows.ranking import (
    RankRange,
    SortKey,
    check_not_session,
    dedup_order,
    row_order,
    sort_keys,
    split_late,
    top_n,
)
from timeweave.core.windows.slicing import Slicing
from timeweave.core.windows.spec import CumulateSpec, HopSpec, TumbleSpec, Window, WindowSpec, event_time_ms
from timeweave.core.windows.zones import TimeShift

# State names, declared once.
ROWS = "rank-rows"  # dict[int, list]: slice end (ms) -> the slice's candidate rows, arrival order among ties
FIRED = "rank-fired"  # int: the watermark (ms) through which the key's windows have fired
TIMER = "rank-timer"  # int: the one registered core timer (µs): the next window's window_time
STATE_NAMES = (ROWS, FIRED, TIMER)
#: The operator's declared per-key state (the keyed-operator contract).  Version 1.
LAYOUT = StateLayout(1, (
    ValueState(ROWS, "slice end (ms) -> the slice's candidate rows (those that can still rank in range)"),
    ValueState(FIRED, "the watermark (ms) through which the key's windows have fired"),
    ValueState(TIMER, "the one registered core timer (µs): the next window's window_time"),
))

#: A slice's row list is pruned to its candidates once it holds this many rows more than twice the range's upper
#: bound (amortised: a prune sorts the slice).
_SLACK = 16


@dataclass(frozen=True, slots=True)
class RankedRow:
    """A row of a fired window kept by the rank range: the window, the input row and its rank (from 1)."""

    window: Window
    row: Any
    rank: int
    tag: ClassVar[Tag] = Tag.MAIN


Output = RankedRow | LateRow | DeadLetter


class WindowRankOperator:
    """Window Top-N of one key of an event-time stream; see the module docstring for the rules.

    ``spec`` is a TUMBLE, HOP or CUMULATE spec (Flink ranks no SESSION TVF directly); ``order`` the ORDER BY
    (``"price DESC"``, a list, or :class:`SortKey` values); ``ranks`` the function and range kept;
    ``time_column`` the event-time column (read with :func:`~timeweave.core.windows.spec.event_time_ms` unless
    ``time_of`` gives epoch ms or None); ``read(row, column)`` reads an ORDER BY value (default ``row[column]``).  ``prune_above``: a slice is cut to
its candidates once it holds more rows than this (default ``2 * upper + 16``: amortised, a prune sorts the slice).
``time_zone`` (an IANA name): windows on that zone's wall clock, as :class:`~timeweave.core.windows.operator.
WindowAggregateOperator` takes it (row times, windows and late rows' ``time`` / ``missed`` are then wall-clock ms).

    >>> from timeweave.core.windows.spec import hop
    >>> WindowRankOperator(hop(5, 10), "p", RankRange.top(1), time_column="t").layout.names
    ('rank-rows', 'rank-fired', 'rank-timer')
    """

    def __init__(
        self,
        spec: WindowSpec,
        order: str | SortKey | Sequence[str | SortKey],
        ranks: RankRange,
        *,
        time_column: str,
        time_of: Callable[[Any], int | None] | None = None,
        read: Callable[[Any, str], Any] | None = None,
        where: str = "window Top-N",
        prune_above: int | None = None,
        time_zone: str | None = None,
    ) -> None:
        check_not_session(spec, where)
        if not isinstance(spec, TumbleSpec | HopSpec | CumulateSpec):
            raise SpecError("spec", f"expected a TUMBLE, HOP or CUMULATE spec, got {spec!r}", where=where)
        if not isinstance(ranks, RankRange):
            raise SpecError("ranks", f"expected a RankRange, got {ranks!r}", where=where)
        if not isinstance(time_column, str) or not time_column:
            raise SpecError("time_column", f"expected the event-time column's name, got {time_column!r}", where=where)
        self.spec = spec
        self.order = sort_keys(order)
        self.ranks = ranks
        #: the declared per-key state (:data:`LAYOUT`)
        self.layout = LAYOUT
        self.time_column = time_column
        read_time = time_of or (lambda row: event_time_ms(row[time_column]))
        #: TIMESTAMP_LTZ in a session time zone: windows on its wall clock (see :mod:`~timeweave.core.windows.zones`)
        self.shift = TimeShift.of(time_zone)
        if self.shift is None:
            self.time_of = read_time
        else:
            local = self.shift.local
            self.time_of = lambda row: None if (t := read_time(row)) is None else local(t)
        self.read = read or (lambda row, column: row[column])
        self.dead_reason = null_event_time_reason(time_column)
        self._slicing = Slicing.of(spec)
        self._compare = row_order(self.order, self.read)
        self._limit = 2 * ranks.upper + _SLACK if prune_above is None else prune_above

    def fire_time(self, end: int) -> int:
        """The watermark (epoch ms) at which the window ending at ``end`` fires: its ``window_time``, ``end - 1``
        (in a time zone, the instant of that wall-clock time)."""
        return end - 1 if self.shift is None else self.shift.fire_time(end - 1)

    @classmethod
    def deduplicate(cls, spec: WindowSpec, *, time_column: str, keep: str = "first",
                    time_of: Callable[[Any], int | None] | None = None,
                    read: Callable[[Any, str], Any] | None = None, time_zone: str | None = None) -> WindowRankOperator:
        """Window deduplication: per window and key the first (``keep="first"``) or last (``"last"``) row by the
        time column, Top-1 by ROW_NUMBER (Flink's rule).

        >>> from timeweave.core.windows.spec import tumble
        >>> WindowRankOperator.deduplicate(tumble(10), time_column="t", keep="last").order
        (SortKey(column='t', descending=True, nulls_first=False),)
        """
        # Each step cuts its slices to their first / last rows (and the rows tied with it): Flink's state too.
        return cls(spec, [dedup_order(time_column, keep)], RankRange.top(1), time_column=time_column,
                   time_of=time_of, read=read, where="window deduplication", prune_above=0, time_zone=time_zone)

    def _watermark(self, ctx: KeyContext) -> int:
        """The context's watermark in ms, never below the one the key's windows have fired through."""
        watermark = watermark_ms(ctx.watermark)
        fired = ctx.get(FIRED)
        return fired if fired is not None and fired > watermark else watermark

    # -- element handler ------------------------------------------------------------------------------
    def process_elements(self, ctx: KeyContext, rows: Iterable[Any]) -> list[Output]:
        """Add ``rows`` (in arrival order, all at the context's watermark) to the key's slices.

        Returns the windows the watermark had already passed (fired first, so a late row never enters them),
        then the rows' dead letters and late reports.
        """
        watermark = self._watermark(ctx)
        out: list[Output] = list(self._fire(ctx, watermark))
        time_of, windows_of = self.time_of, self._slicing.windows_of
        timed: list[tuple[Any, int]] = []
        for row in rows:
            time = time_of(row)
            if time is None:
                out.append(DeadLetter(row, self.dead_reason))
            else:
                timed.append((row, time))
        if timed:
            times = {id(row): time for row, time in timed}
            kept, late = split_late(((row, w) for row, time in timed for w in windows_of(time)),
                                    time_of=lambda row: times[id(row)], watermark_of=lambda row: watermark,
                                    fire_time=None if self.shift is None else self.fire_time)
            out.extend(late)
            counted = {id(row) for row, _ in kept}
            slices: dict[int, list[Any]] = ctx.get(ROWS) or {}
            slice_end = self._slicing.slice_end
            touched = set()
            for row, time in timed:
                if id(row) in counted:  # in at least one window that has not fired
                    end = slice_end(time)
                    slices.setdefault(end, []).append(row)
                    touched.add(end)
            for end in touched:
                if len(slices[end]) > self._limit:
                    slices[end] = self._candidates(slices[end])
            if slices:
                ctx.put(ROWS, slices)
                ctx.put(FIRED, watermark)  # _fire brought the key to this watermark; the new rows are after it
        self._schedule(ctx, watermark)
        return out

    def _candidates(self, rows: list[Any]) -> list[Any]:
        """The rows of one slice that can still rank within ``upper`` in a window (see the module docstring),
        sorted (stable: tied rows keep their arrival order)."""
        ordered = sorted(rows, key=cmp_to_key(self._compare))
        compare, upper, dense_only = self._compare, self.ranks.upper, self.ranks.function == "DENSE_RANK"
        rank = dense = 0
        previous = None
        for number, row in enumerate(ordered, start=1):
            if previous is None or compare(previous, row) != 0:
                rank, dense = number, dense + 1
                if (dense if dense_only else rank) > upper:
                    return ordered[: number - 1]
            previous = row
        return ordered

    # -- the watermark produces output ------------------------------------------------------------------
    def on_watermark(self, ctx: KeyContext) -> list[Output]:
        """Emit every window whose ``window_time`` the watermark has reached (once, by window end)."""
        watermark = self._watermark(ctx)
        out: list[Output] = list(self._fire(ctx, watermark))
        self._schedule(ctx, watermark)
        return out

    def finish(self, ctx: KeyContext) -> list[Output]:
        """End of input: every window fires; the key's state and timers are cleared."""
        out: list[Output] = list(self._fire(ctx, END_OF_TIME))
        for name in STATE_NAMES:
            ctx.clear(name)
        for timer in ctx.timers():
            ctx.delete_timer(timer)
        return out

    def _fire(self, ctx: KeyContext, watermark: int) -> list[RankedRow]:
        slices: dict[int, list[Any]] | None = ctx.get(ROWS)
        if not slices:
            return []
        fired = ctx.get(FIRED)
        low = NO_WATERMARK if fired is None else fired
        if watermark <= low:
            return []
        slicing, fire = self._slicing, self.fire_time
        ends = sorted({end for s in slices for end in slicing.window_ends(s) if low < fire(end) <= watermark})
        out: list[RankedRow] = []
        for end in ends:
            window = Window(slicing.window_start(end), end)
            pairs = [(row, window) for s in slicing.slices_of(end) for row in slices.get(s, ())]
            out.extend(RankedRow(w, row, rank) for row, w, rank in top_n(pairs, self.order, self.ranks, read=self.read))
        for s in [s for s in slices if fire(slicing.last_window_end(s)) <= watermark]:
            del slices[s]  # no unfired window needs it
        if slices:
            ctx.put(ROWS, slices)
            ctx.put(FIRED, watermark)
        else:
            ctx.clear(ROWS)
            ctx.clear(FIRED)
        return out

    # -- the one timer ----------------------------------------------------------------------------------
    def _schedule(self, ctx: KeyContext, watermark: int) -> None:
        """Keep one core timer: the ``window_time`` of the key's next window to fire (none: no timer)."""
        next_end = next_window_end(self._slicing, [ctx.get(ROWS)], self.fire_time, watermark)
        keep_one_timer(ctx, TIMER, None if next_end is None else timer_us(self.fire_time(next_end)))


__all__ = ["FIRED", "LAYOUT", "ROWS", "STATE_NAMES", "TIMER", "RankedRow", "WindowRankOperator"]
