"""How change operations map onto version events: the single table every door uses.

Flink's changelog kinds (+I, -U, +U, -D) and Debezium's op codes (c, r, u, d) both reduce to two
events on a versioned table: *upsert* (a new version starts at its time) and *delete* (no version
from its time on).  ``-U`` counts as a delete at its time; because an update arrives as ``-U`` then
``+U`` at the same time and the last event per (key, time) wins, the ``+U`` prevails, exactly as in
Flink's ``TemporalRowTimeJoinOperator`` (a retraction found as the latest row means "no match").
"""

from __future__ import annotations

from enum import StrEnum


class ChangeKind(StrEnum):
    UPSERT = "upsert"
    DELETE = "delete"


UPSERT_OPS: tuple[str, ...] = ("+I", "+U", "c", "r", "u", "I", "U", "INSERT", "UPDATE_AFTER")
DELETE_OPS: tuple[str, ...] = ("-D", "-U", "d", "D", "DELETE", "UPDATE_BEFORE")


def classify_op(op: object) -> ChangeKind | None:
    """Map an op code to its change kind; None means unknown (the row goes to the dead-letter output).

    >>> classify_op("+U"), classify_op("d"), classify_op("?")
    (<ChangeKind.UPSERT: 'upsert'>, <ChangeKind.DELETE: 'delete'>, None)
    """
    if not isinstance(op, str):
        return None
    op = op.strip()
    if op in UPSERT_OPS:
        return ChangeKind.UPSERT
    if op in DELETE_OPS:
        return ChangeKind.DELETE
    return None
