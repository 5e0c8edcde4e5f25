"""How change operations map onto version events: the single table every door uses.

Flink's changelog kinds (+I, -U, +U, -D) and Debezium's op codes (c, r, u, d) both reduce to two
events on a versioned table: *upsert* (a new version starts at its time) and *delete* (no version
from its time on).  ``-U`` counts as a delete at its time; because an update arrives as ``-U`` then
``+U`` at the same time and the last event per (key, time) wins, the ``+U`` prevails, exactly as in
Flink's ``TemporalRowTimeJoinOperator`` (a retraction found as the latest row means "no match").

An aggregate over a changelog reads the same op codes differently (:func:`direction_of`): a row is
*accumulated* (``+I``, ``+U``) or *retracted* (``-U``, ``-D``), as Flink's ``RowDataUtil.isAccumulateMsg``.
An upsert without its previous row (Debezium's ``u``, ``U``) cannot be retracted from an aggregate: it is
neither (the row goes to the dead letter; the upsert source needs its ``-U`` rows first).
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


class Direction(StrEnum):
    """What a changelog row does to an aggregate over it."""

    ACCUMULATE = "accumulate"
    RETRACT = "retract"


ACCUMULATE_OPS: tuple[str, ...] = ("+I", "+U", "c", "r", "I", "INSERT", "UPDATE_AFTER")
RETRACT_OPS: tuple[str, ...] = ("-U", "-D", "d", "D", "DELETE", "UPDATE_BEFORE")
#: Upserts without the previous row: an aggregate cannot retract what they replace.
UPSERT_ONLY_OPS: tuple[str, ...] = ("u", "U")


def direction_of(op: object) -> Direction | None:
    """Map an op code to what it does to an aggregate; None means unusable (the row goes to the dead letter).

    >>> direction_of("+U"), direction_of("-U"), direction_of("u"), direction_of(None)
    (<Direction.ACCUMULATE: 'accumulate'>, <Direction.RETRACT: 'retract'>, None, None)
    """
    if not isinstance(op, str):
        return None
    op = op.strip()
    if op in ACCUMULATE_OPS:
        return Direction.ACCUMULATE
    if op in RETRACT_OPS:
        return Direction.RETRACT
    return None
