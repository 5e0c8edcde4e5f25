"""The keyed window-aggregate operator (Flink's ``WindowAggOperator``), on the :class:`~timeweave.core.state.KeyContext` contract.

One instance serves every key; it sees one key (the GROUP BY values besides the window) at a time.

* **State** (declared here, plain data :mod:`timeweave.core.state_codec` stores): aligned windows keep one
  accumulator row per *slice* (:data:`SLICES`, see :mod:`~timeweave.core.windows.slicing`) and the watermark
  through which the key's windows have fired (:data:`FIRED`); sessions keep the key's in-flight sessions
  with their accumulator rows (:data:`SESSIONS`); both keep the one registered timer (:data:`TIMER`).
* **Rows** update one slice (HOP and CUMULATE share slices between windows) or merge into the key's
  sessions (Flink's ``MergingWindowSet``: a row may bridge two sessions).  A row with a NULL event time
  is a :class:`DeadLetter` with the reason.
* **The late rule** (:mod:`~timeweave.core.windows.late`): a row is dropped only from windows that have
  fired at the watermark of its arrival (``window_end - 1 <= watermark``) and still counts in the others;
  every row dropped from at least one window is reported as a :class:`~timeweave.core.windows.late.LateRow`.
  CUMULATE folds a row whose own slice has fired into its period's running accumulator (Flink's merge
  target), so it counts in the period's later windows.  A session row is first merged; it is dropped only
  when the merged session has fired (it then merged with nothing: fired sessions are gone).
* **Timers drive output**: one core timer per key, at the ``window_time`` of the next window to fire;
  :meth:`~WindowAggregateOperator.on_watermark` emits every non-empty window whose ``window_time`` the
  watermark has reached, in window-end order, once (append-only final rows, :class:`WindowRow`), then
  frees the slices no unfired window needs.  The element handler first fires what the watermark has
  already passed, so hosts may call the two in either order.

Units: row times and windows are epoch milliseconds (wall-clock milliseconds with a ``time_zone``: TIMESTAMP_LTZ
windows follow the session time zone, :mod:`~timeweave.core.windows.zones`); the context's watermark and
timers are the core's µs.

>>> from datetime import datetime
>>> from timeweave.core.state import InMemoryKeyContext
>>> from timeweave.core.windows.accumulators import AggregateCall, CountStar, Sum
>>> from timeweave.core.windows.spec import tumble
>>> op = WindowAggregateOperator(tumble("10 minutes"), [AggregateCall(CountStar(), name="cnt"),
...                              AggregateCall(Sum(), "price", name="total")], time_column="ts")
>>> ctx = InMemoryKeyContext()
>>> op.process_elements(ctx, [{"ts": datetime(2020, 4, 15, 8, 5), "price": 4}, {"ts": None, "price": 1}])
[DeadLetter(row={'ts': None, 'price': 1}, reason='NULL event time column ts')]
>>> ctx.current_watermark = 1586938199999_000   # 08:09:59.999: the window [08:00, 08:10) fires
>>> [(format_ms(r.window.start), r.values) for r in op.on_watermark(ctx)]
[('2020-04-15 08:00:00.000', (1, 4))]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from timeweave.core.errors import SpecError
from timeweave.core.operator import StateLayout, Tag, ValueState
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.state import END_OF_TIME, NO_WATERMARK, KeyContext
from timeweave.core.windows.accumulators import AggregateCall, Aggregates
from timeweave.core.windows.late import LateRow, format_ms, keep_one_timer, next_window_end, timer_us, watermark_ms
from timeweave.core.windows.sessions import add_window, session_window
from timeweave.core.windows.slicing import _CUMULATE, _HOP, _TUMBLE, Slicing
from timeweave.core.windows.spec import (
    CumulateSpec,
    HopSpec,
    SessionSpec,
    TumbleSpec,
    Window,
    WindowSpec,
    event_time_ms,
)
from timeweave.core.windows.zones import TimeShift

# State names, declared once (Flink declares its state handles in open()).
SLICES = "win-slices"  # dict[int, list]: slice end (ms) -> accumulator row [row_count, acc_1, ...]
FIRED = "win-fired"  # int: the watermark (ms) through which the key's aligned windows have fired
SESSIONS = "win-sessions"  # list[[start, end, accumulator row]]: in-flight sessions, sorted, disjoint
TIMER = "win-timer"  # int: the one registered core timer (µs): the next window's window_time
STATE_NAMES = (SLICES, FIRED, SESSIONS, TIMER)
#: The operator's declared per-key state (the keyed-operator contract): what hosts snapshot and restore (a
#: backfill slice edge), refusing any other name.  Version 1.
LAYOUT = StateLayout(1, (
    ValueState(SLICES, "aligned windows: slice end (ms) -> accumulator row [row_count, acc_1, ...]"),
    ValueState(FIRED, "aligned windows: the watermark (ms) through which the key's windows have fired"),
    ValueState(SESSIONS, "sessions: the in-flight sessions [start, end, accumulator row], sorted, disjoint"),
    ValueState(TIMER, "the one registered core timer (µs): the next window's window_time"),
))


@dataclass(frozen=True, slots=True)
class WindowRow:
    """A fired window of the key: the window and the aggregates' results (in the aggregates' order)."""

    window: Window
    values: tuple[Any, ...]
    #: the output it goes to (the keyed-operator contract's tag names: main, late, dead_letter)
    tag: ClassVar[Tag] = Tag.MAIN

    @property
    def start(self) -> int:
        return self.window.start

    @property
    def end(self) -> int:
        return self.window.end

    @property
    def time(self) -> int:
        """``window_time`` (ms): ``end - 1``."""
        return self.window.end - 1


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An input row the operator cannot place in any window (its event time is NULL), with the reason."""

    row: Any
    reason: str
    tag: ClassVar[Tag] = Tag.DEAD_LETTER


Output = WindowRow | LateRow | DeadLetter


class WindowAggregateOperator:
    """Window aggregation of one key of an event-time stream; see the module docstring for the rules.

    ``spec`` is a TUMBLE, HOP, CUMULATE or SESSION spec; ``aggregates`` the aggregate calls (or an
    :class:`~timeweave.core.windows.accumulators.Aggregates`); ``time_column`` names the event-time column (read
    with :func:`~timeweave.core.windows.spec.event_time_ms`, and named in dead-letter reasons); ``time_of``
    replaces the reading (a function of the row giving epoch ms or None).  ``time_zone`` (an IANA name) is for a
    TIMESTAMP_LTZ time attribute: windows follow that zone's wall clock, as Flink's session time zone does
    (row times, windows and late rows' ``time`` / ``missed`` are then wall-clock ms; watermarks stay instants).  The host keys the operator by the
    GROUP BY values; for SESSION they must include the spec's ``partition_by`` columns (sessions are kept
    apart by them, as Flink's SESSION window aggregation requires).

    >>> from timeweave.core.windows.spec import tumble
    >>> WindowAggregateOperator(tumble("1 minute"), [], time_column="ts").layout.names
    ('win-slices', 'win-fired', 'win-sessions', 'win-timer')
    >>> WindowAggregateOperator("TUMBLE", [], time_column="ts")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: argument 'spec': expected a TUMBLE, HOP, CUMULATE or SESSION spec, got 'TUMBLE'
    """

    def __init__(
        self,
        spec: WindowSpec,
        aggregates: Aggregates | Sequence[AggregateCall],
        *,
        time_column: str,
        time_of: Callable[[Any], int | None] | None = None,
        time_zone: str | None = None,
    ) -> None:
        if not isinstance(spec, TumbleSpec | HopSpec | CumulateSpec | SessionSpec):
            raise SpecError("spec", f"expected a TUMBLE, HOP, CUMULATE or SESSION spec, got {spec!r}")
        if not isinstance(time_column, str) or not time_column:
            raise SpecError("time_column", f"expected the event-time column's name, got {time_column!r}")
        self.spec = spec
        #: the declared per-key state (:data:`LAYOUT`)
        self.layout = LAYOUT
        self.aggregates = aggregates if isinstance(aggregates, Aggregates) else Aggregates(aggregates)
        self.time_column = time_column
        read_time = time_of or (lambda row: event_time_ms(row[time_column]))
        #: TIMESTAMP_LTZ in a session time zone: windows on its wall clock (see :mod:`~timeweave.core.windows.zones`)
        self.shift = TimeShift.of(time_zone)
        if self.shift is None:
            self.time_of = read_time
        else:
            local = self.shift.local
            self.time_of = lambda row: None if (t := read_time(row)) is None else local(t)
        self.dead_reason = null_event_time_reason(time_column)
        self._slicing = None if isinstance(spec, SessionSpec) else Slicing.of(spec)

    def fire_time(self, end: int) -> int:
        """The watermark (epoch ms) at which the window ending at ``end`` fires: its ``window_time``, ``end - 1``
        (for a shifted time zone, the instant of that wall-clock time, :meth:`TimeShift.fire_time
        <timeweave.core.windows.zones.TimeShift.fire_time>`)."""
        return end - 1 if self.shift is None else self.shift.fire_time(end - 1)

    def _watermark(self, ctx: KeyContext) -> int:
        """The context's watermark in ms, never below the one the key's windows have fired through: a host
        handing an older watermark (it must not) cannot make a fired window take rows it will never emit."""
        watermark = watermark_ms(ctx.watermark)
        fired = ctx.get(FIRED) if self._slicing is not None else None
        return fired if fired is not None and fired > watermark else watermark

    # -- element handler ------------------------------------------------------------------------------
    def process_element(self, ctx: KeyContext, row: Any) -> list[Output]:
        """:meth:`process_elements` for one row."""
        return self.process_elements(ctx, (row,))

    def process_elements(self, ctx: KeyContext, rows: Iterable[Any]) -> list[Output]:
        """Add ``rows`` (in arrival order, all at the context's watermark) to the key's windows.

        Returns the windows the watermark had already passed (fired first, so a row arriving late is never
        counted in them), then the rows' late reports and dead letters, in arrival order.
        """
        watermark = self._watermark(ctx)
        out: list[Output] = list(self._fire(ctx, watermark))
        if self._slicing is None:
            self._add_to_sessions(ctx, rows, watermark, out)
        else:
            self._add_to_slices(ctx, rows, watermark, out)
        self._schedule(ctx, watermark)
        return out

    def process_partials(self, ctx: KeyContext, partials: Sequence[tuple[int, list[Any]]],
                         rows_of: Callable[[int], Iterable[Any]]) -> list[Output]:
        """Add pre-aggregated slices (:mod:`~timeweave.core.windows.partials`): ``(slice_end, accumulator row)``
        per slice of rows that arrived together at the context's watermark, the row built as :meth:`process_elements`
        would have built it from them.  A slice whose first window has fired at this watermark is late for some
        window: its partial is dropped and ``rows_of(i)`` (``i``: its position in ``partials``) gives its rows, which
        are added one by one (late reports as :meth:`process_elements` makes them).  Aligned windows on the UTC
        clock only (sessions and shifted clocks assign each row by its own time).
        """
        slicing = self._slicing
        if slicing is None or self.shift is not None:
            raise SpecError("partials", "slice partials need an aligned window (TUMBLE, HOP, CUMULATE) on the UTC clock")
        watermark = self._watermark(ctx)
        out: list[Output] = list(self._fire(ctx, watermark))
        fire, aggregates = self.fire_time, self.aggregates
        slices: dict[int, list[Any]] | None = None
        late: list[int] = []
        for i, (target, accs) in enumerate(partials):
            if fire(target) <= watermark:
                late.append(i)
                continue
            if slices is None:
                slices = ctx.get(SLICES) or {}
            held = slices.get(target)
            if held is None:
                slices[target] = accs
            else:
                aggregates.merge(held, accs)
        if slices is not None:
            ctx.put(SLICES, slices)
            ctx.put(FIRED, watermark)
        for i in late:
            self._add_to_slices(ctx, rows_of(i), watermark, out)
        self._schedule(ctx, watermark)
        return out

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

    # -- aligned windows: slices ------------------------------------------------------------------------
    def _add_to_slices(self, ctx: KeyContext, rows: Iterable[Any], watermark: int, out: list[Output]) -> None:
        slicing = self._slicing
        assert slicing is not None
        aggregates = self.aggregates
        time_of, slice_end, dead_reason, fire = self.time_of, slicing.slice_end, self.dead_reason, self.fire_time
        cumulate = slicing.shape == _CUMULATE
        slices: dict[int, list[Any]] | None = None
        for row in rows:
            time = time_of(row)
            if time is None:
                out.append(DeadLetter(row, dead_reason))
                continue
            target = slice_end(time)
            if fire(target) <= watermark:  # its first window has fired: late for some or all of its windows
                windows = slicing.windows_of(time)
                missed = tuple(w for w in windows if fire(w.end) <= watermark)
                dropped = len(missed) == len(windows)
                out.append(LateRow(row, time, watermark, missed, dropped))
                if dropped:
                    continue
                if cumulate:  # the slice was folded into its period's running accumulator: add it there
                    target = slicing.first_slice_end(target)
            if slices is None:
                slices = ctx.get(SLICES) or {}
            accs = slices.get(target)
            if accs is None:
                slices[target] = accs = aggregates.create()
            aggregates.add(accs, row)
        if slices is not None:
            ctx.put(SLICES, slices)
            ctx.put(FIRED, watermark)  # _fire brought the key to this watermark; the new rows are after it

    def _fire(self, ctx: KeyContext, watermark: int) -> list[WindowRow]:
        if self._slicing is None:
            return self._fire_sessions(ctx, watermark)
        slices: dict[int, list[Any]] | None = ctx.get(SLICES)
        if not slices:
            return []
        fired = ctx.get(FIRED)
        low = NO_WATERMARK if fired is None else fired
        if watermark <= low:
            return []
        slicing, aggregates = self._slicing, self.aggregates
        fire = self.fire_time
        ends = sorted({end for s in slices for end in slicing.window_ends(s) if low < fire(end) <= watermark})
        out: list[WindowRow] = []
        shape = slicing.shape
        for end in ends:
            if shape == _TUMBLE:
                accs = slices.pop(end, None)
            elif shape == _HOP:
                accs = aggregates.create()
                for s in slicing.slices_of(end):
                    part = slices.get(s)
                    if part is not None:
                        aggregates.merge(accs, part)
            else:  # CUMULATE: fold the window's last slice into the period's running accumulator
                first = slicing.first_slice_end(end)
                accs = slices.get(first)
                if end != first:
                    part = slices.pop(end, None)
                    if part is not None:
                        if accs is None:
                            slices[first] = accs = aggregates.create()
                        aggregates.merge(accs, part)
            if not Aggregates.is_empty(accs):
                assert accs is not None
                out.append(WindowRow(Window(slicing.window_start(end), end), aggregates.results(accs)))
        last_window_end = slicing.last_window_end
        for s in [s for s in slices if fire(last_window_end(s)) <= watermark]:
            del slices[s]  # no unfired window needs it
        if slices:
            ctx.put(SLICES, slices)
            ctx.put(FIRED, watermark)
        else:
            ctx.clear(SLICES)
            ctx.clear(FIRED)
        return out

    # -- sessions ---------------------------------------------------------------------------------------
    def _add_to_sessions(self, ctx: KeyContext, rows: Iterable[Any], watermark: int, out: list[Output]) -> None:
        assert isinstance(self.spec, SessionSpec)
        gap, aggregates, time_of = self.spec.gap, self.aggregates, self.time_of
        sessions: list[list[Any]] | None = None
        for row in rows:
            time = time_of(row)
            if time is None:
                out.append(DeadLetter(row, self.dead_reason))
                continue
            if sessions is None:
                sessions = ctx.get(SESSIONS) or []
            own = session_window(time, gap)
            merged, lo, hi = add_window(sessions, own)
            if self.fire_time(merged.end) <= watermark:
                # Fired sessions are gone (emitted, then cleared), so a merged session that has fired merged
                # with nothing: the row's own session fired before it arrived (Flink: isWindowLate, retire).
                out.append(LateRow(row, time, watermark, (merged,), True))
                continue
            if lo == hi:
                accs = aggregates.create()
            else:
                accs = sessions[lo][2]
                for entry in sessions[lo + 1 : hi]:  # the row bridges these sessions: one session now
                    aggregates.merge(accs, entry[2])
            aggregates.add(accs, row)
            sessions[lo:hi] = [[merged.start, merged.end, accs]]
        if sessions is not None:
            if sessions:
                ctx.put(SESSIONS, sessions)
            else:
                ctx.clear(SESSIONS)

    def _fire_sessions(self, ctx: KeyContext, watermark: int) -> list[WindowRow]:
        sessions: list[list[Any]] | None = ctx.get(SESSIONS)
        fire = self.fire_time
        if not sessions or fire(sessions[0][1]) > watermark:
            return []
        # sorted and disjoint: ends ascend with starts (and fire times with ends), so the fired ones are a prefix
        count = 0
        while count < len(sessions) and fire(sessions[count][1]) <= watermark:
            count += 1
        results = self.aggregates.results
        out = [WindowRow(Window(s[0], s[1]), results(s[2])) for s in sessions[:count]]
        del sessions[:count]
        if sessions:
            ctx.put(SESSIONS, sessions)
        else:
            ctx.clear(SESSIONS)
        return out

    # -- the one timer ----------------------------------------------------------------------------------
    def _schedule(self, ctx: KeyContext, watermark: int) -> None:
        """Keep one core timer: the ``window_time`` of the next window of the key to fire (none: no timer)."""
        next_end: int | None = None
        if self._slicing is None:
            sessions = ctx.get(SESSIONS)
            if sessions:
                next_end = sessions[0][1]
        else:
            next_end = next_window_end(self._slicing, [ctx.get(SLICES)], self.fire_time, watermark)
        keep_one_timer(ctx, TIMER, None if next_end is None else timer_us(self.fire_time(next_end)))


__all__ = ["FIRED", "LAYOUT", "SESSIONS", "SLICES", "STATE_NAMES", "TIMER", "DeadLetter", "Output", "WindowAggregateOperator",
           "WindowRow", "format_ms"]
