"""The plain-data helpers of keyed state: what a state class's ``to_state`` / ``from_state`` use.

The state classes (:class:`~timeweave.core.versioned.VersionHistory`, :class:`~timeweave.core.temporal_join.LeftBuffer`,
:class:`~timeweave.core.pattern.operator.HeldMatcher`, ...) import these; the codec
(:mod:`timeweave.core.state_codec`), which knows the closed set of state classes it rebuilds, imports them
too and sits above the classes.  Nothing here imports a state class.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

from timeweave.core.errors import StateFormatError

_BIG_ENDIAN = sys.byteorder == "big"


def malformed(message: str) -> StateFormatError:
    """A :class:`StateFormatError` for state whose structure is not what ``to_state`` writes."""
    return StateFormatError(f"malformed state: {message}")


def expect(condition: bool, message: str) -> None:
    """For ``from_state`` functions: a structure that is not what ``to_state`` writes is malformed state.

    >>> expect(False, "left buffer: columns of unequal length")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.StateFormatError: malformed state: left buffer: columns of unequal length
    """
    if not condition:
        raise malformed(message)


def int64s(values: list[int]) -> bytes:
    """``values`` (integers within 64 bits) as little-endian int64 bytes: a column of times or sequences
    packs and unpacks as one memory copy, and the bytes can only hold integers.

    >>> from_int64s(int64s([1, -(2**63), 2**63 - 1]), "times")
    [1, -9223372036854775808, 9223372036854775807]
    """
    column = array("q", values)
    if _BIG_ENDIAN:
        column.byteswap()
    return column.tobytes()


def from_int64s(data: Any, what: str) -> list[int]:
    """The integers :func:`int64s` stored (``what`` names them in the error for anything else)."""
    if not isinstance(data, bytes) or len(data) % 8:
        raise malformed(f"{what}: expected 64-bit integers")
    column = array("q")
    column.frombytes(data)
    if _BIG_ENDIAN:
        column.byteswap()
    return column.tolist()


__all__ = ["expect", "from_int64s", "int64s", "malformed"]
