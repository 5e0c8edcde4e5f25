"""Durations as job configs and doors write them (``"90 seconds"``, ``"2 hours"``), read as microseconds.

Engine-free: the streaming adapters (``timeweave.spark``) and the job configs (``timeweave.jobs``) read watermark
delays and retention times with the one rule here.
"""

from __future__ import annotations

import re

from timeweave.core.errors import SpecError

_DURATION = re.compile(r"^\s*(\d+)\s*(microseconds?|milliseconds?|ms|seconds?|s|minutes?|min|hours?|h|days?|d)\s*$", re.I)
_UNIT_US = {
    "microsecond": 1, "millisecond": 1_000, "ms": 1_000, "second": 1_000_000, "s": 1_000_000,
    "minute": 60_000_000, "min": 60_000_000, "hour": 3_600_000_000, "h": 3_600_000_000,
    "day": 86_400_000_000, "d": 86_400_000_000,
}


def parse_duration(text: str | int, argument: str) -> int:
    """Microseconds in a duration such as ``"90 seconds"`` or ``"2 hours"`` (ints are microseconds).

    >>> parse_duration("2 hours", "max_idle")
    7200000000
    """
    if isinstance(text, int):
        return text
    match = _DURATION.match(str(text))
    if not match:
        raise SpecError(argument, f"cannot read duration {text!r}; write e.g. '10 seconds' or '2 hours'", where="job config")
    unit = match.group(2).lower()
    unit = unit[:-1] if unit.endswith("s") and unit not in ("s", "ms") else unit
    return int(match.group(1)) * _UNIT_US[unit]
