"""Slices: how aligned windows (TUMBLE, HOP, CUMULATE) share work, as Flink's slicing assigners do.

A *slice* is a period of ``slice_size`` milliseconds, named by its end (Flink's ``SliceAssigner``): TUMBLE's
slice is its window; HOP's is ``gcd(size, slide)`` = ``slide`` (size is a multiple of slide); CUMULATE's is
``step``.  Each row updates exactly one slice's accumulator; a window is the merge of its slices, so a
HOP of ``size / slide`` windows per row costs one accumulator update per row, not ``size / slide``.

* :meth:`Slicing.slice_end` maps a row time to its slice;
* :meth:`Slicing.window_ends` lists the windows (by end) a slice belongs to, in order;
* :meth:`Slicing.slices_of` lists the slices (by end) a window is made of;
* :meth:`Slicing.windows_of` assigns a row time to all its windows (the TVF's output rows).

>>> from timeweave.core.windows.spec import hop
>>> s = Slicing.of(hop(5, 15))
>>> s.slice_size, s.slice_end(7), list(s.window_ends(10)), s.slices_of(20)
(5, 10, [10, 15, 20], [10, 15, 20])
>>> [(w.start, w.end) for w in s.windows_of(7)]
[(-5, 10), (0, 15), (5, 20)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from timeweave.core.windows.spec import AlignedSpec, CumulateSpec, HopSpec, TumbleSpec, Window, window_start

_TUMBLE, _HOP, _CUMULATE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Slicing:
    """The slice arithmetic of one aligned window spec (build it with :meth:`of`)."""

    spec: AlignedSpec
    slice_size: int
    #: TUMBLE/HOP: the window size; CUMULATE: max_size (the period a window grows within)
    period: int
    offset: int
    shape: int

    @classmethod
    def of(cls, spec: AlignedSpec) -> Slicing:
        """The slicing of ``spec``.

        >>> from timeweave.core.windows.spec import cumulate, tumble
        >>> Slicing.of(tumble(10)).slice_size, Slicing.of(cumulate(2, 10)).slice_size
        (10, 2)
        """
        if isinstance(spec, TumbleSpec):
            return cls(spec, spec.size, spec.size, spec.offset, _TUMBLE)
        if isinstance(spec, HopSpec):
            return cls(spec, spec.slide, spec.size, spec.offset, _HOP)
        if isinstance(spec, CumulateSpec):
            return cls(spec, spec.step, spec.max_size, spec.offset, _CUMULATE)
        raise TypeError(f"not an aligned window spec: {spec!r}")

    @property
    def shared(self) -> bool:
        """Whether a slice belongs to several windows (HOP, CUMULATE), so windows are merges of slices."""
        return self.shape != _TUMBLE

    def slice_end(self, timestamp: int) -> int:
        """The end of the slice holding ``timestamp``.

        >>> from timeweave.core.windows.spec import tumble
        >>> Slicing.of(tumble(10, offset=-3)).slice_end(7)
        17
        """
        return window_start(timestamp, self.offset, self.slice_size) + self.slice_size

    def window_start(self, end: int) -> int:
        """The start of the window ending at ``end``: ``end - size``, or the start of CUMULATE's period."""
        if self.shape == _CUMULATE:
            return window_start(end - 1, self.offset, self.period)
        return end - self.period

    def window_ends(self, slice_end: int) -> range:
        """The ends of the windows slice ``slice_end`` belongs to, ascending.

        >>> from timeweave.core.windows.spec import cumulate
        >>> list(Slicing.of(cumulate(2, 10)).window_ends(14))
        [14, 16, 18, 20]
        """
        step = self.slice_size
        return range(slice_end, self.last_window_end(slice_end) + 1, step)

    def last_window_end(self, slice_end: int) -> int:
        """The end of the last window slice ``slice_end`` belongs to (its state may go once that one fired)."""
        if self.shape == _TUMBLE:
            return slice_end
        if self.shape == _HOP:
            return slice_end - self.slice_size + self.period
        return window_start(slice_end - 1, self.offset, self.period) + self.period

    def first_slice_end(self, window_end: int) -> int:
        """The end of the first slice of the window ending at ``window_end``."""
        return self.window_start(window_end) + self.slice_size

    def slices_of(self, window_end: int) -> list[int]:
        """The ends of the slices making up the window ending at ``window_end``, ascending.

        >>> from timeweave.core.windows.spec import cumulate
        >>> Slicing.of(cumulate(2, 10)).slices_of(16)
        [12, 14, 16]
        """
        return list(range(self.first_slice_end(window_end), window_end + 1, self.slice_size))

    def windows_of(self, timestamp: int) -> list[Window]:
        """Every window holding ``timestamp`` (the rows a window TVF outputs for it), by end.

        >>> from timeweave.core.windows.spec import cumulate
        >>> [(w.start, w.end) for w in Slicing.of(cumulate(2, 10)).windows_of(15)]
        [(10, 16), (10, 18), (10, 20)]
        """
        window_start_of = self.window_start
        return [Window(window_start_of(end), end) for end in self.window_ends(self.slice_end(timestamp))]


#: An aggregate call a batch plan can compute per slice and merge: COUNT(*) / COUNT(1), and COUNT, SUM, MIN,
#: MAX or AVG of one column (a plain or `back-quoted` name).  Anything else (DISTINCT, FILTER, expressions,
#: other functions) is not read as mergeable and is computed on each window's rows.
_MERGEABLE = re.compile(r"\s*(count|sum|min|max|avg)\s*\(\s*(\*|1|[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)\s*\)\s*",
                        re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SliceAggregate:
    """A mergeable aggregate call: ``function`` (``count``, ``sum``, ``min``, ``max``, ``avg``) of the column
    ``argument`` (None: COUNT(*)), output as ``name``.  Build it with :meth:`of`."""

    name: str
    function: str
    argument: str | None

    @classmethod
    def of(cls, name: str, text: str) -> SliceAggregate | None:
        """``text`` (SQL) as a mergeable call, or None when it is not one.

        >>> SliceAggregate.of("n", "COUNT(*)"), SliceAggregate.of("s", " sum( `odd``name` ) ")
        (SliceAggregate(name='n', function='count', argument=None), SliceAggregate(name='s', function='sum', argument='odd`name'))
        >>> SliceAggregate.of("d", "COUNT(DISTINCT v)") is None, SliceAggregate.of("x", "SUM(v) + 1") is None
        (True, True)
        """
        found = _MERGEABLE.fullmatch(text)
        if found is None:
            return None
        function, argument = found.group(1).lower(), found.group(2)
        if argument in ("*", "1"):
            return cls(name, "count", None) if function == "count" else None
        if argument.startswith("`"):
            argument = argument[1:-1].replace("``", "`")
        return cls(name, function, argument)


__all__ = ["SliceAggregate", "Slicing"]
