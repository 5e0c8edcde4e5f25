"""The version history of one key: pure data and the lookups every operator shares.

Rules (each lives here and nowhere else in the core):

* a version is valid from its time, inclusive, to the next event of its key, exclusive;
* a delete event at ``t`` means "no version from ``t`` on" until a later upsert;
* several events for one key at one time: the one with the highest sequence (the last in input
  order) wins;
* expiry keeps the newest event older than the watermark, because it is still the version valid
  at the watermark (Flink's ``TemporalRowTimeJoinOperator`` cleanup).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from timeweave.core.state_data import expect


@dataclass(frozen=True, slots=True)
class VersionEvent:
    """One change of a versioned table: at ``time`` (µs since epoch) the key gets ``payload`` or is deleted."""

    time: int
    seq: int
    deleted: bool
    payload: Any = None

    def to_state(self) -> list[Any]:
        """The event as plain data for :mod:`timeweave.core.state_codec`.

        >>> VersionEvent.from_state(VersionEvent(5, 1, False, "a").to_state())
        VersionEvent(time=5, seq=1, deleted=False, payload='a')
        """
        return [self.time, self.seq, self.deleted, self.payload]

    @classmethod
    def from_state(cls, data: Any) -> VersionEvent:
        """The event :meth:`to_state` gave (checked)."""
        expect(isinstance(data, list) and len(data) == 4, "version event: expected [time, seq, deleted, payload]")
        time, seq, deleted, payload = data
        expect(type(time) is int and type(seq) is int and type(deleted) is bool,
               "version event: time and seq must be integers, deleted a boolean")
        return cls(time, seq, deleted, payload)


@dataclass(frozen=True, slots=True)
class Match:
    """The version valid at some time, with its validity interval (``valid_to`` None = still open)."""

    event: VersionEvent
    valid_to: int | None


@dataclass(slots=True)
class VersionHistory:
    """Events of one key sorted by time; at most one event per time.

    >>> h = VersionHistory()
    >>> for e in (VersionEvent(10, 0, False, "a"), VersionEvent(20, 1, True), VersionEvent(30, 2, False, "b")):
    ...     h.apply(e)
    >>> [h.version_at(t) and h.version_at(t).event.payload for t in (5, 10, 25, 30)]
    [None, 'a', None, 'b']
    """

    events: list[VersionEvent] = field(default_factory=list)
    _times: list[int] = field(default_factory=list)

    def apply(self, event: VersionEvent) -> None:
        """Insert ``event``; at an occupied time the higher sequence wins."""
        i = bisect_left(self._times, event.time)
        if i < len(self._times) and self._times[i] == event.time:
            if event.seq >= self.events[i].seq:
                self.events[i] = event
            return
        self._times.insert(i, event.time)
        self.events.insert(i, event)

    def version_at(self, time: int) -> Match | None:
        """The upsert in force at ``time``, or None (before the first version, or inside a deleted span)."""
        i = bisect_right(self._times, time) - 1
        if i < 0 or self.events[i].deleted:
            return None
        valid_to = self._times[i + 1] if i + 1 < len(self._times) else None
        return Match(self.events[i], valid_to)

    def versions_at(self, times: list[int]) -> list[Match | None]:
        """:meth:`version_at` of each of ``times``, which must be ascending (see :meth:`version_runs`); rows in
        the same validity interval share one :class:`Match`.

        >>> h = VersionHistory.of([VersionEvent(10, 0, False, "a"), VersionEvent(20, 1, True), VersionEvent(30, 2, False, "b")])
        >>> [m and (m.event.payload, m.valid_to) for m in h.versions_at([5, 10, 12, 25, 30, 31])]
        [None, ('a', 20), ('a', 20), None, ('b', None), ('b', None)]
        """
        out: list[Match | None] = []
        for count, match in self.version_runs(times):
            out += [match] * count
        return out

    def version_runs(self, times: list[int]) -> list[tuple[int, Match | None]]:
        """:meth:`versions_at` as runs: (how many consecutive ``times``, the version valid at each of them).

        ``times`` must be ascending.  Two bisections per version the times reach, none per time:
        emission asks for a key's ready rows in time order, typically many rows per version, and a
        run lets the adapter encode the version once for all its rows.

        >>> h = VersionHistory.of([VersionEvent(10, 0, False, "a"), VersionEvent(20, 1, True), VersionEvent(30, 2, False, "b")])
        >>> [(n, m and m.event.payload) for n, m in h.version_runs([5, 10, 12, 25, 30, 31])]
        [(1, None), (2, 'a'), (1, None), (2, 'b')]
        """
        events, event_times = self.events, self._times
        last = len(event_times) - 1
        n = len(times)
        # Times before the first event have no version; then a version covers the times up to the
        # next event's time, exclusive.
        pos = bisect_left(times, event_times[0]) if events else n
        runs: list[tuple[int, Match | None]] = [(pos, None)] if pos else []
        while pos < n:
            i = bisect_right(event_times, times[pos]) - 1  # the last event at or before times[pos]: i >= 0
            event = events[i]
            if i < last:
                valid_to = event_times[i + 1]
                end = bisect_left(times, valid_to, pos)
            else:
                valid_to, end = None, n
            runs.append((end - pos, None if event.deleted else Match(event, valid_to)))
            pos = end
        return runs

    def expire_before(self, watermark: int) -> int:
        """Drop events older than ``watermark`` except the newest of them; returns how many were dropped."""
        older = bisect_left(self._times, watermark)
        drop = max(older - 1, 0)
        if drop:
            del self.events[:drop]
            del self._times[:drop]
        return drop

    def __len__(self) -> int:
        return len(self.events)

    def to_state(self) -> list[list[Any]]:
        """The history as plain data for :mod:`timeweave.core.state_codec`: its events column-wise.

        >>> h = VersionHistory.of([VersionEvent(10, 0, False, "a"), VersionEvent(20, 1, True)])
        >>> VersionHistory.from_state(h.to_state()) == h
        True
        """
        events = self.events
        return [self._times, [e.seq for e in events], [e.deleted for e in events], [e.payload for e in events]]

    @classmethod
    def from_state(cls, data: Any) -> VersionHistory:
        """The history :meth:`to_state` gave (checked: columns of one length, times strictly ascending)."""
        expect(isinstance(data, list) and len(data) == 4 and all(isinstance(c, list) for c in data)
               and len({len(c) for c in data}) == 1, "version history: expected four columns of one length")
        times, seqs, deleted, payloads = data
        expect(all(type(t) is int for t in times) and all(type(s) is int for s in seqs)
               and all(type(d) is bool for d in deleted), "version history: bad time, sequence or deleted value")
        expect(all(a < b for a, b in pairwise(times)), "version history: times must be strictly ascending")
        return cls(list(map(VersionEvent, times, seqs, deleted, payloads)), list(times))

    @classmethod
    def of(cls, events: list[VersionEvent]) -> VersionHistory:
        history = cls()
        for event in events:
            history.apply(event)
        return history
