"""A brute-force reference of Flink's DataStream windows with the default event-time trigger and allowed
lateness, written from the documented rules (seed 002, Flink's WindowOperator), not from the operator's code.

Input: events in arrival order, ``("row", key, row)`` (``row``: ``{"id", "t", "v"}``; ``t`` ms or None; ``v`` an
int, or ``"boom"``, on which the aggregate's ``add`` raises) and ``("watermark", W)`` (ms, non-decreasing).  The
function is SUM of ``v``.  Rules, per key:

1. A row with no time is a dead letter (step ``event time``).
2. Aligned windows (tumbling, sliding: the assigner's windows, newest first).  A window is *gone* once the watermark
   has reached ``max_timestamp + lateness``; a row skips its gone windows.  In each other window, in order: a
   ``"boom"`` row is a dead letter (step ``aggregate add``) and goes nowhere; else it is added, and when the
   watermark has already reached the window's ``max_timestamp`` the window fires at once with its new sum (a late
   firing).  A row that skipped every window is late output; a row in no window at all (a sliding gap, size <
   slide) is a dead letter (step ``window assigner``).
3. Sessions (gap g): the row's window ``[t, t + g)`` and the key's live sessions it touches (``a.start <= w.end and
   a.end >= w.start``) become one session covering them; if that session is gone the row is late output; a
   ``"boom"`` row is a dead letter and changes nothing; else the row is added (sums of the merged sessions plus v)
   and, when the watermark has reached the session's ``max_timestamp``, it fires at once.  A session that grew is a
   new window: its firing count starts at 0 and it names the fired sessions it absorbed (``merged_from``).
4. When the watermark advances from W to W', every live window with ``W < max_timestamp <= W'`` fires, in order of
   (``max_timestamp``, start, end); then windows with ``max_timestamp + lateness <= W'`` are gone.
5. A firing's kind: ``on_time`` for a window's first firing at or after its end (a session merged from one that
   fired so counts as fired), ``late`` after; ``at`` is the watermark (rule 2/3) or the window's max_timestamp (4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from timeweave.core.datastream.assigners import Session, Sliding, Tumbling
from timeweave.core.windows.spec import Window


@dataclass
class _Win:
    window: Window
    total: int = 0
    fires: int = 0
    on_time: bool = False
    merged_from: list[Window] = field(default_factory=list)


@dataclass
class Outputs:
    """Per key: firings ``(start, end, values, kind, sequence, replaces_previous, merged_from, at)``, late row
    ids, dead letters ``(row id, step, window)``."""

    firings: dict[Any, list[tuple]] = field(default_factory=dict)
    late: dict[Any, list[Any]] = field(default_factory=dict)
    dead: dict[Any, list[tuple]] = field(default_factory=dict)


def _end(w: Window) -> int:
    return w.end - 1


def reference(assigner: Tumbling | Sliding | Session, lateness: int, events: list[tuple]) -> Outputs:
    """The outputs the rules above give for ``events`` (see the module docstring)."""
    out = Outputs()
    watermark = -(2**63)
    live: dict[Any, dict[Window, _Win]] = {}

    def fire(key: Any, win: _Win, at: int) -> None:
        kind = "late" if win.on_time else "on_time"
        win.on_time = True
        out.firings.setdefault(key, []).append((win.window.start, win.window.end, (win.total,), kind, win.fires,
                                                win.fires > 0, tuple(win.merged_from), at))
        win.fires += 1
        win.merged_from = []

    for event in events:
        if event[0] == "watermark":
            new = event[1]
            for key, windows in live.items():
                for win in sorted(windows.values(), key=lambda w: (_end(w.window), w.window.start, w.window.end)):
                    if watermark < _end(win.window) <= new:
                        fire(key, win, _end(win.window))
                for w in [w for w in windows if _end(w) + lateness <= new]:
                    del windows[w]
            watermark = new
            continue
        _, key, row = event
        windows = live.setdefault(key, {})
        t, v = row["t"], row["v"]
        if t is None:
            out.dead.setdefault(key, []).append((row["id"], "event time", None))
            continue
        if isinstance(assigner, Session):
            own = Window(t, t + assigner.gap)
            touched = [w for w in windows if w.start <= own.end and w.end >= own.start]
            cover = Window(min([own.start, *(w.start for w in touched)]), max([own.end, *(w.end for w in touched)]))
            if _end(cover) + lateness <= watermark:
                assert not touched, "live sessions are never gone"
                out.late.setdefault(key, []).append(row["id"])
                continue
            if v == "boom":
                out.dead.setdefault(key, []).append((row["id"], "aggregate add", None))
                continue
            if touched == [cover]:
                win = windows[cover]
            else:
                olds = [windows.pop(w) for w in sorted(touched)]
                win = windows[cover] = _Win(cover, sum(o.total for o in olds), 0, any(o.on_time for o in olds))
                for o in olds:
                    win.merged_from.extend(o.merged_from)
                    if o.fires:
                        win.merged_from.append(o.window)
            win.total += v
            if _end(cover) <= watermark:
                fire(key, win, watermark)
            continue
        own = assigner.assign(row, t, None)
        if not own:
            out.dead.setdefault(key, []).append((row["id"], "window assigner", None))
            continue
        skipped = True
        for w in own:
            if _end(w) + lateness <= watermark:
                continue
            skipped = False
            if v == "boom":
                out.dead.setdefault(key, []).append((row["id"], "aggregate add", None))
                break
            win = windows.setdefault(w, _Win(w))
            win.total += v
            if _end(w) <= watermark:
                fire(key, win, watermark)
        if skipped:
            out.late.setdefault(key, []).append(row["id"])
    return out


__all__ = ["Outputs", "reference"]
