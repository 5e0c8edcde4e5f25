"""A DataStream window's firings as a changelog: retract (``+I`` / ``-U`` / ``+U`` / ``-D``) or upsert rows.

:class:`~timeweave.core.datastream.operator.WindowOperator` emits one :class:`~.operator.Firing` per firing (the
window, its values, early / on time / late, its sequence, whether it replaces the window's previous firing, the
fired windows merged into it).  That is Flink's DataStream output: an append stream in which a refined window
(early firings, late firings within the allowed lateness, a continuous trigger) appears once per firing.
:class:`WindowChangelog` runs the same operator and turns its firings into the changes of a *table of window
results* through the one encoder (:class:`~timeweave.core.updates.encoder.ChangelogEncoder`):

=========================================================  ====================  ==================
the firing                                                 retract               upsert
=========================================================  ====================  ==================
a window's first firing (values X)                         ``+I X``              ``+I X``
a later firing that replaces it (values Y)                 ``-U X``, ``+U Y``    ``+U Y``
a later firing with the same values                        nothing               nothing
a firing of a session merged from fired windows W1, W2..  ``-D`` of each Wi's   ``-D`` of each Wi
                                                           rows, then ``+I``     key, then ``+I``
a firing with no values (an evictor left nothing)          ``-D X`` (if any)     ``-D`` (if any)
=========================================================  ====================  ==================

**The rows' key.**  A result row is identified by (the key, the window, its *pane*), :data:`UNIQUE_KEY`; each
:class:`~timeweave.core.updates.encoder.Change` carries it as ``key`` and one result value as ``values`` (a
process function emitting several values gives several changes of the same kind; an upsert output holds one
row per key, so there a firing with more than one value is a dead letter naming the window).

**Purging (the pane).**  A trigger answering ``FIRE_AND_PURGE`` (``Purging.of(...)``) or ``PURGE`` clears the
window's contents: in Flink the next firing of that window is computed over the elements that came after the
purge only, and it does not supersede the earlier firing (its ``replaces_previous`` is False): both are results
(Beam calls this discarding accumulation).  So a purge starts the window over *as a new row*: the purged pane's
last result stays in the table, final (never retracted), and the window's next firing is a ``+I`` of a new pane,
numbered by the firing sequence it starts at (0 for the window's first firing; the pane of ``firings`` after a
purge).  Without purges every window has one pane, 0.  Retracting the purged result instead would make the table
hold only the elements since the last purge, which is neither what Flink emitted nor what a sum of the panes is.

**Session merges.**  When sessions merge, the merged window's next firing lists the fired (unpurged) windows it
absorbed (``merged_from``): their rows are retracted (``-D``) in the same step as the merged window's ``+I``, so
the table never holds a session twice.  Until the merged window fires, the absorbed windows' rows stay.

**One change per window and step.**  ``process_elements`` runs the whole step (the elements, then every timer
the clocks reached, as a host's ``on_watermark`` right after would), and a window that fired several times in
it (an early count trigger reached twice, an early and the on-time firing) gives one change from its result
before the step to its result after it, as Flink's mini-batch aggregation and
:class:`~timeweave.core.updates.GroupAggregateOperator` do: a micro-batch names each row's key once, which an
upsert sink needs.  ``per_firing=True`` encodes after every firing instead.

**State.**  The encoder keeps each pane's emitted result (:data:`~timeweave.core.updates.encoder.EMITTED`, by
slot ``(window start, window end, pane)``) and :data:`PANES` each purged window's current pane, declared in
:attr:`WindowChangelog.layout` beside the window operator's state (snapshot, restore and the state codec carry
them).  A window's entries go when the window's state goes (its cleanup time: the watermark passed its end plus
the allowed lateness): its last result stays in the table, final, as in Flink.

``convert`` maps each result value onto the row it is written as (a door's output schema; an error it raises
makes the firing a dead letter, step ``output schema``, and encodes nothing): results are compared and kept in
state as written.  Append is not an encoding of this module: append output is the operator's firings themselves
(every firing a row, with its kind and sequence).

>>> from timeweave.core.datastream import Tumbling, WindowOperator, reduce
>>> from timeweave.core.datastream import triggers as tr
>>> from timeweave.core.state import InMemoryKeyContext
>>> op = WindowOperator(Tumbling.of(10), reduce(lambda a, b: a + b), time_of=lambda v: v,
...                     trigger=tr.EventTime().with_early(tr.Count.of(1)))
>>> changes = WindowChangelog(op, "retract")
>>> ctx = InMemoryKeyContext()
>>> [str(c) for c in changes.process_elements(ctx, [3]) + changes.process_elements(ctx, [4])]
['+I (None, 0, 10, 0) (3,)', '-U (None, 0, 10, 0) (3,)', '+U (None, 0, 10, 0) (7,)']
>>> ctx.current_watermark = 9_000   # µs: the window's end; its on-time firing repeats 7: nothing
>>> changes.on_watermark(ctx), ctx.values
([], {})
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from timeweave.core.datastream.operator import WINDOWS, CheckedLayout, DeadLetter, Firing, WindowOperator
from timeweave.core.errors import SpecError
from timeweave.core.operator import MapState
from timeweave.core.state import KeyContext
from timeweave.core.updates.encoder import Change, ChangelogEncoder
from timeweave.core.updates.modes import ChangelogMode
from timeweave.core.windows.spec import Window

WHERE = "DataStream window changelog"
#: The names of a change's key values: the window operator's key, the window's bounds (ms), the pane.
UNIQUE_KEY = ("key", "window_start", "window_end", "pane")
#: The state name of each purged window's current pane ((start, end) -> the firing sequence it started at).
PANES = "ds-changelog-panes"

Slot = tuple[int, int, int]


class WindowChangelog:
    """The changelog of ``operator``'s firings in ``mode`` (``"retract"`` or ``"upsert"``; see the module
    docstring).  ``per_firing``: a change per firing, not per window and step.  ``convert``: a result value as
    written (default: as it is).  ``output`` names the output in errors.

    >>> from timeweave.core.datastream import Tumbling, WindowOperator, reduce
    >>> WindowChangelog(WindowOperator(Tumbling.of(5), reduce(max), time_column="t"), "append")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: DataStream window changelog: argument 'changelog': append output is the window operator's firings themselves (every firing a row, with its kind and sequence); a changelog is 'retract' or 'upsert'
    """

    def __init__(self, operator: WindowOperator, mode: ChangelogMode | str, *, per_firing: bool = False,
                 convert: Callable[[Any], Any] | None = None, output: str = WHERE) -> None:
        if not isinstance(operator, WindowOperator):
            raise SpecError("operator", f"expected a WindowOperator, got {operator!r:.60}", where=output)
        parsed = ChangelogMode.parse(mode, where=output)
        if parsed is ChangelogMode.APPEND:
            raise SpecError("changelog", "append output is the window operator's firings themselves (every firing a "
                            "row, with its kind and sequence); a changelog is 'retract' or 'upsert'", where=output)
        self.operator = operator
        self.mode = parsed
        self.per_firing = per_firing
        self.convert = convert
        self.encoder = ChangelogEncoder(parsed, output=output, unique_key=UNIQUE_KEY)
        self._panes = MapState(PANES, "each purged window's current pane: (start, end) -> the firing sequence it "
                                      "started at (absent: pane 0)")
        #: the declared per-key state: the window operator's, the emitted results, the panes
        self.layout = CheckedLayout(operator.layout.version, (*operator.layout.states, self.encoder.state,
                                                              self._panes))

    # -- the contract ----------------------------------------------------------------------------------
    def process_elements(self, ctx: KeyContext, elements: Iterable[Any]) -> list[Any]:
        """A key's elements of one step, then the timers the clocks reached (the whole step: see the module
        docstring); the step's changes, late elements and dead letters."""
        outputs = self.operator.process_elements(ctx, elements)
        outputs += self.operator.on_watermark(ctx)
        return self._encode(ctx, outputs)

    def on_watermark(self, ctx: KeyContext) -> list[Any]:
        """The key's timers the clocks reached; their changes."""
        return self._encode(ctx, self.operator.on_watermark(ctx))

    def next_processing_timer(self, ctx: KeyContext) -> int | None:
        """The key's earliest processing-time timer (ms), as :meth:`WindowOperator.next_processing_timer`."""
        return self.operator.next_processing_timer(ctx)

    # -- encoding --------------------------------------------------------------------------------------
    def _encode(self, ctx: KeyContext, outputs: list[Any]) -> list[Any]:
        out: list[Any] = []
        pending: dict[Slot, tuple[Any, tuple[Any, ...] | None]] = {}  # slot -> (key, result): the step's last
        final: list[Slot] = []  # panes a purge closed: encoded, then forgotten
        panes = self._panes.of(ctx)
        for o in outputs:
            if o.__class__ is not Firing:
                out.append(o)
                continue
            for w in o.merged_from:  # absorbed by a session merge: their rows go
                pending[_slot(w, panes.get((w.start, w.end)))] = (o.key, None)
                panes.remove((w.start, w.end))
            bounds = (o.window.start, o.window.end)
            if o.replaces_previous:
                pane = panes.get(bounds) or 0
            else:
                if o.fired_before:  # purged since its last firing: that pane's result is final
                    final.append(_slot(o.window, panes.get(bounds)))
                pane = o.sequence
                if pane:
                    panes.put(bounds, pane)
                else:
                    panes.remove(bounds)
            slot = (o.window.start, o.window.end, pane)
            result = self._result(o, out)
            if result is not False:
                pending[slot] = (o.key, result)
            if o.purged:  # the pane is final: no later firing replaces it
                final.append(slot)
                panes.remove(bounds)
            if self.per_firing:
                self._flush(ctx, pending, final, out)
        self._flush(ctx, pending, final, out)
        self._drop_gone(ctx)
        return out

    def _result(self, firing: Firing, out: list[Any]) -> tuple[Any, ...] | bool | None:
        """The firing's result as written (None: no values), or False when it is a dead letter."""
        values = firing.values
        if self.convert is not None:
            converted = []
            for i, value in enumerate(values):
                try:
                    converted.append(self.convert(value))
                except (ValueError, TypeError) as exc:
                    out.append(DeadLetter(None, "output schema", f"output schema: firing {firing.sequence}, result "
                                          f"{i}: {exc}", firing.window, firing.key))
                    return False
            values = tuple(converted)
        if self.mode is ChangelogMode.UPSERT and len(values) > 1:
            out.append(DeadLetter(None, "changelog", f"changelog: firing {firing.sequence} emitted {len(values)} "
                                  "results; an upsert changelog holds one row per key and window (emit 'retract' "
                                  "takes any number)", firing.window, firing.key))
            return False
        return tuple(values) or None

    def _flush(self, ctx: KeyContext, pending: dict[Slot, tuple[Any, tuple[Any, ...] | None]], final: list[Slot],
               out: list[Any]) -> None:
        encoder = self.encoder
        for slot, (key, result) in pending.items():
            for change in encoder.update(ctx, (key, *slot), result, slot):
                out.extend(Change(change.kind, change.key, (value,)) for value in change.values)
        for slot in final:
            encoder.forget(ctx, slot)
        pending.clear()
        final.clear()

    def _drop_gone(self, ctx: KeyContext) -> None:
        """Forget the entries of windows whose state went (cleanup): a window absorbed by a session merge is
        kept while the merged window (which covers it) lives, for the ``-D`` of its next firing."""
        emitted = self.encoder.state.of(ctx)
        slots = emitted.items()
        panes = self._panes.of(ctx)
        purged = panes.items()
        if not slots and not purged:
            return
        live = [(entry[0], entry[1]) for entry in ctx.get(WINDOWS) or ()]
        exact = set(live)

        def gone(start: int, end: int) -> bool:
            return (start, end) not in exact and not any(s <= start and end <= e for s, e in live)

        for slot, _ in slots:
            if gone(slot[0], slot[1]):
                emitted.remove(slot)
        for bounds, _ in purged:
            if gone(bounds[0], bounds[1]):
                panes.remove(bounds)


def _slot(window: Window, pane: int | None) -> Slot:
    return (window.start, window.end, pane or 0)


__all__ = ["PANES", "UNIQUE_KEY", "WindowChangelog"]

