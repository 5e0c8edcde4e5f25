"""The keyed window join operator (Flink's ``WindowJoinOperator``), on the :class:`~timeweave.core.state.KeyContext`
contract.

One instance serves every key; it sees one key (the join key's values) at a time, both inputs' rows of that
key.  Its elements are ``(side, row)`` pairs, ``side`` :data:`LEFT` or :data:`RIGHT`.  The rules reused, none
restated: which windows a row belongs to is :class:`~timeweave.core.windows.slicing.Slicing`'s (both inputs use
the same window TVF, :func:`~timeweave.core.windows.ranking.check_join_windows`), which (row, window) pairs are
late is :func:`~timeweave.core.windows.ranking.split_late`'s (the context's watermark: the host's one watermark
for both inputs, Spark's minimum of the inputs').

* **State** (plain data): each side's rows per *slice* (:data:`LEFT_ROWS`, :data:`RIGHT_ROWS`, slice end -> rows in
  arrival order; a HOP row is kept once, not once per window), the watermark through which the key's windows
  fired (:data:`FIRED`) and the one timer (:data:`TIMER`).
* **The join of a window** (Flink's, SQL's ``=``): the key's left and right rows of the window pair up when the
  key has no NULL value (a NULL key joins nothing); ``INNER`` the pairs; ``LEFT`` / ``RIGHT`` / ``FULL`` also
  the rows of the outer side(s) without a match, with None for the other side; ``SEMI`` the left rows with a
  match, ``ANTI`` those without (:class:`JoinedRow`).
* **Timers drive output**: a window is joined and emitted once, when the watermark reaches its ``window_time``
  (append-only, final); rows late for some windows go to the late output (:class:`~timeweave.core.windows.late.LateRow`
  whose ``row`` is the ``(side, row)`` element) and still join in their unfired windows; a NULL event time is a
  :class:`~timeweave.core.windows.operator.DeadLetter` (its ``row`` the element).

Units: row times and windows are epoch milliseconds (wall-clock milliseconds with a ``time_zone``, as the window
aggregate's); the context's watermark and timers are µs.

>>> from timeweave.core.state import InMemoryKeyContext
>>> from timeweave.core.windows.spec import tumble
>>> op = WindowJoinOperator(tumble(5), "FULL", left_time="t", right_time="t", left_keys=("num",), right_keys=("num",))
>>> ctx = InMemoryKeyContext()
>>> op.process_elements(ctx, [(LEFT, {"t": 2, "num": 3, "id": "L3"}), (RIGHT, {"t": 4, "num": 3, "id": "R3"})])
[]
>>> [(j.window.start, j.left["id"], j.right["id"]) for j in op.finish(ctx)]
[(0, 'L3', 'R3')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from timeweave.core.errors import SpecError
from timeweave.core.operator import StateLayout, Tag, ValueState
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, KeyContext
from timeweave.core.windows.late import LateRow, keep_one_timer, next_window_end, timer_us, watermark_ms
from timeweave.core.windows.operator import DeadLetter
from timeweave.core.windows.ranking import check_join_windows, join_type, split_late
from timeweave.core.windows.slicing import Slicing
from timeweave.core.windows.spec import Window, WindowSpec, event_time_ms
from timeweave.core.windows.zones import TimeShift

LEFT, RIGHT = 0, 1

# State names, declared once.
LEFT_ROWS = "join-left"  # dict[int, list]: slice end (ms) -> the left rows of the slice, arrival order
RIGHT_ROWS = "join-right"  # dict[int, list]: slice end (ms) -> the right rows of the slice, arrival order
FIRED = "join-fired"  # int: the watermark (ms) through which the key's windows have fired
TIMER = "join-timer"  # int: the one registered core timer (µs): the next window's window_time
STATE_NAMES = (LEFT_ROWS, RIGHT_ROWS, FIRED, TIMER)
#: The operator's declared per-key state (the keyed-operator contract).  Version 1.
LAYOUT = StateLayout(1, (
    ValueState(LEFT_ROWS, "slice end (ms) -> the key's left rows of the slice"),
    ValueState(RIGHT_ROWS, "slice end (ms) -> the key's right rows of the slice"),
    ValueState(FIRED, "the watermark (ms) through which the key's windows have fired"),
    ValueState(TIMER, "the one registered core timer (µs): the next window's window_time"),
))
_SIDES = (LEFT_ROWS, RIGHT_ROWS)


@dataclass(frozen=True, slots=True)
class JoinedRow:
    """A row of a fired window's join: the window, the left row and the right row (None: the outer side's row had
    no match; SEMI / ANTI: ``right`` is None)."""

    window: Window
    left: Any | None
    right: Any | None
    tag: ClassVar[Tag] = Tag.MAIN


Output = JoinedRow | LateRow | DeadLetter


class WindowJoinOperator:
    """Window join of one join key of two event-time streams; see the module docstring for the rules.

    ``spec`` is the inputs' TUMBLE, HOP or CUMULATE spec (``right_spec``, when given, must equal it: Flink's
    rule); ``how`` one of inner, left, right, full, semi, anti; ``left_time`` / ``right_time`` the inputs'
    event-time columns (read with :func:`~timeweave.core.windows.spec.event_time_ms` unless ``time_of(side, row)``
    gives epoch ms or None); ``left_keys`` / ``right_keys`` the join key columns (a NULL value joins nothing),
    read with ``read(row, column)`` (default ``row[column]``).  ``time_zone`` (an IANA name): windows on that zone's
    wall clock (TIMESTAMP_LTZ in a session time zone, as the window aggregate's).

    >>> from timeweave.core.windows.spec import hop
    >>> WindowJoinOperator(hop(5, 10), "anti", left_time="t", right_time="t").layout.names
    ('join-left', 'join-right', 'join-fired', 'join-timer')
    """

    def __init__(
        self,
        spec: WindowSpec,
        how: str,
        *,
        left_time: str,
        right_time: str,
        left_keys: Sequence[str] = (),
        right_keys: Sequence[str] = (),
        right_spec: WindowSpec | None = None,
        time_of: Callable[[int, Any], int | None] | None = None,
        read: Callable[[Any, str], Any] | None = None,
        time_zone: str | None = None,
    ) -> None:
        check_join_windows(spec, spec if right_spec is None else right_spec)
        if len(left_keys) != len(right_keys):
            raise SpecError("right_keys", f"as many join keys on each side: left {list(left_keys)}, right "
                            f"{list(right_keys)}", where="window join")
        self.spec = spec
        self.how = join_type(how)
        #: the declared per-key state (:data:`LAYOUT`)
        self.layout = LAYOUT
        self.times = (left_time, right_time)
        self.keys = (tuple(left_keys), tuple(right_keys))
        read_time = time_of or (lambda side, row: event_time_ms(row[self.times[side]]))
        self.shift = TimeShift.of(time_zone)
        if self.shift is None:
            self.time_of = read_time
        else:
            local = self.shift.local
            self.time_of = lambda side, row: None if (t := read_time(side, row)) is None else local(t)
        self.read = read or (lambda row, column: row[column])
        self.dead_reasons = (null_event_time_reason(left_time), null_event_time_reason(right_time))
        self._slicing = Slicing.of(spec)

    def fire_time(self, end: int) -> int:
        """The watermark (epoch ms) at which the window ending at ``end`` fires (``end - 1``; in a time zone, the
        instant of that wall-clock time)."""
        return end - 1 if self.shift is None else self.shift.fire_time(end - 1)

    def _watermark(self, ctx: KeyContext) -> int:
        watermark = watermark_ms(ctx.watermark)
        fired = ctx.get(FIRED)
        return fired if fired is not None and fired > watermark else watermark

    # -- element handler ------------------------------------------------------------------------------
    def process_elements(self, ctx: KeyContext, elements: Iterable[tuple[int, Any]]) -> list[Output]:
        """Add ``(side, row)`` elements (in arrival order, all at the context's watermark) to the key's slices.

        Returns the windows the watermark had already passed (joined first), then dead letters and late reports.
        """
        watermark = self._watermark(ctx)
        out: list[Output] = list(self._fire(ctx, watermark))
        time_of, windows_of = self.time_of, self._slicing.windows_of
        timed: list[tuple[tuple[int, Any], int]] = []
        for element in elements:
            side, row = element
            if side not in (LEFT, RIGHT):
                raise SpecError("side", f"expected LEFT (0) or RIGHT (1), got {side!r}", where="window join")
            time = time_of(side, row)
            if time is None:
                out.append(DeadLetter(element, self.dead_reasons[side]))
            else:
                timed.append((element, time))
        if timed:
            times = {id(element): time for element, time in timed}
            kept, late = split_late(((element, w) for element, time in timed for w in windows_of(time)),
                                    time_of=lambda element: times[id(element)], watermark_of=lambda element: watermark,
                                    fire_time=None if self.shift is None else self.fire_time)
            out.extend(late)
            counted = {id(element) for element, _ in kept}
            sides = [ctx.get(name) or {} for name in _SIDES]
            slice_end = self._slicing.slice_end
            for element, time in timed:
                if id(element) in counted:  # in at least one window that has not fired
                    sides[element[0]].setdefault(slice_end(time), []).append(element[1])
            self._store(ctx, sides, watermark)
        self._schedule(ctx, watermark)
        return out

    def _store(self, ctx: KeyContext, sides: list[dict[int, list[Any]]], watermark: int) -> None:
        for name, slices in zip(_SIDES, sides, strict=True):
            if slices:
                ctx.put(name, slices)
            else:
                ctx.clear(name)
        if any(sides):
            ctx.put(FIRED, watermark)
        else:
            ctx.clear(FIRED)

    # -- the watermark produces output ------------------------------------------------------------------
    def on_watermark(self, ctx: KeyContext) -> list[Output]:
        """Join and emit every window whose ``window_time`` the watermark has reached (once, by window end)."""
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

    def _joinable(self, left: list[Any], right: list[Any]) -> bool:
        """Whether the key's rows pair up: it has rows on both sides and no NULL key value (SQL's ``=``)."""
        if not left or not right:
            return False
        read = self.read
        return (all(read(left[0], c) is not None for c in self.keys[0])
                and all(read(right[0], c) is not None for c in self.keys[1]))

    def join(self, window: Window, left: list[Any], right: list[Any]) -> list[JoinedRow]:
        """One window's join of the key's ``left`` and ``right`` rows (the module docstring's rule)."""
        how = self.how
        if self._joinable(left, right):
            if how == "SEMI":
                return [JoinedRow(window, row, None) for row in left]
            if how == "ANTI":
                return []
            return [JoinedRow(window, lrow, rrow) for lrow in left for rrow in right]
        if how in ("LEFT", "FULL", "ANTI"):
            out = [JoinedRow(window, row, None) for row in left]
        else:
            out = []
        if how in ("RIGHT", "FULL"):
            out += [JoinedRow(window, None, row) for row in right]
        return out

    def _fire(self, ctx: KeyContext, watermark: int) -> list[JoinedRow]:
        sides: list[dict[int, list[Any]]] = [ctx.get(name) or {} for name in _SIDES]
        if not any(sides):
            return []
        fired = ctx.get(FIRED)
        low = NO_WATERMARK if fired is None else fired
        if watermark <= low:
            return []
        slicing, fire = self._slicing, self.fire_time
        ends = sorted({end for slices in sides for s in slices for end in slicing.window_ends(s)
                       if low < fire(end) <= watermark})
        out: list[JoinedRow] = []
        for end in ends:
            window = Window(slicing.window_start(end), end)
            parts = [[row for s in slicing.slices_of(end) for row in slices.get(s, ())] for slices in sides]
            out += self.join(window, parts[LEFT], parts[RIGHT])
        for slices in sides:
            for s in [s for s in slices if fire(slicing.last_window_end(s)) <= watermark]:
                del slices[s]  # no unfired window needs it
        self._store(ctx, sides, watermark)
        return out

    # -- the one timer ----------------------------------------------------------------------------------
    def _schedule(self, ctx: KeyContext, watermark: int) -> None:
        next_end = next_window_end(self._slicing, [ctx.get(name) for name in _SIDES], self.fire_time, watermark)
        keep_one_timer(ctx, TIMER, None if next_end is None else timer_us(self.fire_time(next_end)))


__all__ = ["FIRED", "LAYOUT", "LEFT", "LEFT_ROWS", "RIGHT", "RIGHT_ROWS", "STATE_NAMES", "TIMER", "JoinedRow",
           "WindowJoinOperator"]
