"""The reference rule for applying a changelog to a table: what a sink of an updating output must do.

Seed 003: a dynamic table *is* the changelog applied.  This module applies :class:`~timeweave.core.updates.
encoder.Change` rows (or written rows with an ``op`` column, :meth:`MaterializedTable.apply_rows`) to a table
held in memory; the Spark sink helper applies the same rule to stored tables, and tests check every operator's
changelog against a batch query with it.

* **upsert**: the table is a map from the unique key to the row.  ``+I`` / ``+U`` put the row by its key (an
  insert over an existing key overwrites it: a key forgotten by idle-state retention and seen again);
  ``-D`` removes the key, which must be present.  An upsert stream carries no ``-U``.
* **retract**: the table is a multiset of rows.  ``+I`` / ``+U`` add one copy of the row; ``-U`` / ``-D`` take
  one copy away, which must be present.
* **append**: every row is an insert (``+I`` only), added to the multiset.

A ``-U`` / ``-D`` of a row (or key) the table does not hold is an error naming the table and the row: the stream
and the table disagree, and applying it anyway would hide a lost or duplicated row.

**Idempotence per micro-batch.**  A streaming sink applies each micro-batch once, even when the engine runs a
batch again after a failure (Spark's ``foreachBatch`` re-delivers the last batch id, with the same rows).  The
rule: batch ids increase; the table remembers the last batch id it applied, *in the same commit as the rows*;
a batch whose id is at or below it was applied already and changes nothing.  ``apply(changes, batch_id=n)``
follows it; without a batch id the changes are applied unconditionally.

>>> from timeweave.core.operator import RowKind
>>> t = MaterializedTable("upsert", key_names=("user",), value_names=("cnt",), name="clicks_per_user")
>>> t.apply([Change(RowKind.INSERT, ("Mary",), (1,)), Change(RowKind.UPDATE_AFTER, ("Mary",), (2,))], batch_id=0)
2
>>> t.apply([Change(RowKind.UPDATE_AFTER, ("Mary",), (3,))], batch_id=0), t.rows()
(0, [{'user': 'Mary', 'cnt': 2}])
>>> t.apply([Change(RowKind.DELETE, ("Bob",), (1,))])
Traceback (most recent call last):
...
timeweave.core.errors.ChangelogError: clicks_per_user: -D of key ('Bob',) (row {'user': 'Bob', 'cnt': 1}), which the table does not hold
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from timeweave.core.errors import ChangelogError, SpecError
from timeweave.core.operator import RowKind
from timeweave.core.updates.encoder import Change
from timeweave.core.updates.modes import ChangelogMode

_ADDS = (RowKind.INSERT, RowKind.UPDATE_AFTER)

#: What each op code does to a table, by mode (the rule, for a sink that applies it elsewhere, such as Spark's
#: :func:`timeweave.spark.changelog_sink.apply_changelog`): in a multiset table (retract, append) the change in the
#: row's number of copies; in an upsert table ``+1`` puts the row by its key and ``-1`` deletes the key.  An op code
#: a mode does not list is an error there.
EFFECTS: Mapping[ChangelogMode, Mapping[str, int]] = {
    ChangelogMode.APPEND: {RowKind.INSERT.value: 1},
    ChangelogMode.RETRACT: {RowKind.INSERT.value: 1, RowKind.UPDATE_BEFORE.value: -1,
                            RowKind.UPDATE_AFTER.value: 1, RowKind.DELETE.value: -1},
    ChangelogMode.UPSERT: {RowKind.INSERT.value: 1, RowKind.UPDATE_AFTER.value: 1, RowKind.DELETE.value: -1},
}


def check_batch_id(batch_id: object, where: str) -> int:
    """``batch_id`` if it is a micro-batch id (an integer >= 0); a clear error otherwise.

    >>> check_batch_id(-1, "clicks_per_user")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: clicks_per_user: argument 'batch_id': expected a micro-batch id (an integer >= 0), got -1
    """
    if isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0:
        raise SpecError("batch_id", f"expected a micro-batch id (an integer >= 0), got {batch_id!r}", where=where)
    return batch_id


def already_applied(last_batch: int | None, batch_id: int) -> bool:
    """Whether micro-batch ``batch_id`` was applied already to a table whose last applied batch is ``last_batch``
    (None: none): batch ids increase, so a batch at or below the last one is a replay and changes nothing.

    >>> already_applied(None, 0), already_applied(3, 3), already_applied(3, 2), already_applied(3, 4)
    (False, True, True, False)
    """
    return last_batch is not None and batch_id <= last_batch


class MaterializedTable:
    """A table maintained by applying a changelog in one :class:`ChangelogMode` (module docstring).

    ``key_names`` / ``value_names`` name the columns of a change's key and values (rows read and shown as
    dicts); ``name`` names the table in errors.  Upsert needs at least one key column.
    """

    def __init__(self, mode: ChangelogMode | str, *, key_names: Sequence[str], value_names: Sequence[str],
                 name: str = "table") -> None:
        self.mode = ChangelogMode.parse(mode, where=name)
        self.key_names, self.value_names, self.name = tuple(key_names), tuple(value_names), name
        if self.mode is ChangelogMode.UPSERT and not self.key_names:
            raise SpecError("key_names", "an upsert table needs its unique key columns", where=name)
        self._by_key: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._rows: Counter[tuple[Any, ...]] = Counter()
        #: the last micro-batch id applied (None: none)
        self.last_batch: int | None = None

    def _show(self, change: Change) -> dict[str, Any]:
        return {**dict(zip(self.key_names, change.key, strict=False)),
                **dict(zip(self.value_names, change.values, strict=False))}

    def _fail(self, change: Change, what: str) -> ChangelogError:
        return ChangelogError(f"{self.name}: {change.op} of {what} (row {self._show(change)}), which the table "
                              "does not hold")

    def apply(self, changes: Iterable[Change], *, batch_id: int | None = None) -> int:
        """Apply ``changes`` in order; returns how many were applied (0: the batch was applied before).

        The batch is applied whole or not at all: a change that cannot be applied raises before the table
        changes."""
        if batch_id is not None and already_applied(self.last_batch, check_batch_id(batch_id, self.name)):
            return 0
        by_key, rows = dict(self._by_key), Counter(self._rows)
        count = 0
        for change in changes:
            if not isinstance(change, Change):
                raise ChangelogError(f"{self.name}: expected changelog rows (Change), got {change!r}")
            kind = change.kind
            if self.mode is ChangelogMode.UPSERT:
                if kind in _ADDS:
                    by_key[change.key] = change.values
                elif kind is RowKind.DELETE:
                    if change.key not in by_key:
                        raise self._fail(change, f"key {change.key}")
                    del by_key[change.key]
                else:
                    raise ChangelogError(f"{self.name}: an upsert stream carries no {change.op} "
                                         f"(row {self._show(change)}): was it written in retract mode?")
            else:
                if self.mode is ChangelogMode.APPEND and kind is not RowKind.INSERT:
                    raise ChangelogError(f"{self.name}: an append-only stream carries no {change.op} "
                                         f"(row {self._show(change)})")
                row = change.key + change.values
                if kind in _ADDS:
                    rows[row] += 1
                else:
                    if rows[row] <= 0:
                        raise self._fail(change, "a row")
                    rows[row] -= 1
                    if not rows[row]:
                        del rows[row]
            count += 1
        self._by_key, self._rows = by_key, +rows
        if batch_id is not None:
            self.last_batch = batch_id
        return count

    def apply_rows(self, rows: Iterable[Mapping[str, Any]], *, op_column: str = "op",
                   batch_id: int | None = None) -> int:
        """:meth:`apply` for written rows (key columns, value columns and the op code in ``op_column``).

        >>> t = MaterializedTable("retract", key_names=("user",), value_names=("cnt",))
        >>> t.apply_rows([{"user": "Mary", "cnt": 1, "op": "+I"}, {"user": "Mary", "cnt": 1, "op": "-X"}])
        Traceback (most recent call last):
        ...
        timeweave.core.errors.ChangelogError: table: unknown op '-X' in column op of row {'user': 'Mary', 'cnt': 1, 'op': '-X'}
        """
        changes = []
        for row in rows:
            try:
                kind = RowKind(row[op_column])
                key = tuple(row[c] for c in self.key_names)
                values = tuple(row[c] for c in self.value_names)
            except KeyError as exc:
                raise ChangelogError(f"{self.name}: column {exc.args[0]!r} is missing in row {dict(row)}") from None
            except ValueError:
                raise ChangelogError(f"{self.name}: unknown op {row[op_column]!r} in column {op_column} of row "
                                     f"{dict(row)}") from None
            changes.append(Change(kind, key, values))
        return self.apply(changes, batch_id=batch_id)

    def rows(self) -> list[dict[str, Any]]:
        """The table's rows as dicts (a retract table repeats a row it holds twice), in a stable order."""
        names = self.key_names + self.value_names
        if self.mode is ChangelogMode.UPSERT:
            items = [k + v for k, v in self._by_key.items()]
        else:
            items = [row for row, n in self._rows.items() for _ in range(n)]
        return [dict(zip(names, row, strict=True)) for row in sorted(items, key=repr)]

    def as_multiset(self) -> Counter[tuple[Any, ...]]:
        """The table's rows (key + values tuples) with their multiplicities: compare tables with ``==``."""
        if self.mode is ChangelogMode.UPSERT:
            return Counter(k + v for k, v in self._by_key.items())
        return Counter(self._rows)


__all__ = ["EFFECTS", "MaterializedTable", "already_applied", "check_batch_id"]
