"""A tiny brute-force temporal join, written independently of timeweave.core, to test it against.

For each left row: among the right events of its key with time <= left time, take the one with the
greatest (time, arrival index); no such event, or a delete -> no match.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RightRow:
    key: str | None
    time: int | None
    deleted: bool
    value: int


@dataclass(frozen=True)
class LeftRowIn:
    key: str | None
    time: int | None
    ident: int


def brute_force(left: list[LeftRowIn], right: list[RightRow]) -> dict[int, int | None]:
    """left ident -> matched right value (None: no version).  Rows with NULL key/time are excluded."""
    out: dict[int, int | None] = {}
    for row in left:
        if row.key is None or row.time is None:
            continue
        best = None
        for index, r in enumerate(right):
            if r.key != row.key or r.time is None or r.time > row.time:
                continue
            if best is None or (r.time, index) > (best[0], best[1]):
                best = (r.time, index, r)
        out[row.ident] = None if best is None or best[2].deleted else best[2].value
    return out
