"""``GROUPING SETS`` / ``ROLLUP`` / ``CUBE`` of a window aggregation: which key columns each output row groups by.

A window aggregation groups by ``window_start, window_end`` (and ``window_time``) plus its keys; Flink's window
aggregation also takes ``GROUP BY window_start, window_end, GROUPING SETS ((item, supplier), (item), ())``,
``ROLLUP (...)`` and ``CUBE (...)``: one aggregation per set, the columns outside a set NULL in its rows.  The
window columns belong to every set (Flink requires them in the GROUP BY), so the sets here name key columns only.

:class:`GroupingSets` is the validated value every door reads: the DataFrame door hands the sets to Spark's
``groupingSets``, the streaming and backfill doors key their operator by :attr:`GroupingSets.common` (the columns
in every set: all rows one output row aggregates then share an operator key, so a window's rows for every set
fire together) and aggregate each fired window's rows with the same sets.

>>> g = GroupingSets.of(rollup=["item", "supplier"])
>>> g.sets, g.keys, g.common
((('item', 'supplier'), ('item',), ()), ('item', 'supplier'), ())
>>> GroupingSets.of(cube=["a", "b"]).sets
(('a', 'b'), ('a',), ('b',), ())
>>> GroupingSets.of([["item", "supplier"], ["item"]]).common
('item',)
>>> GroupingSets.of([["item"], ["Item"]], where="window job")
Traceback (most recent call last):
...
timeweave.core.errors.SpecError: window job: argument 'grouping_sets': set 2 ['Item'] repeats set 1 ['item']: each set must differ
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from timeweave.core.errors import SpecError

#: The ``GROUP BY`` forms :meth:`GroupingSets.of` takes (one at a time).
FORMS = ("grouping_sets", "rollup", "cube")
#: More grouping sets than this is almost surely a mistake (a CUBE of 12 columns is 4,096 aggregations).
MAX_SETS = 1024


def _names(value: object, argument: str, where: str | None, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise SpecError(argument, f"{what}: expected a list of column names, got {value!r}", where=where)
    names = tuple(value)
    for name in names:
        if not isinstance(name, str) or not name:
            raise SpecError(argument, f"{what}: expected column names, got {name!r}", where=where)
    folded = [n.lower() for n in names]
    if len(set(folded)) != len(folded):
        raise SpecError(argument, f"{what}: a column is named twice in {list(names)}", where=where)
    return names


@dataclass(frozen=True, slots=True)
class GroupingSets:
    """The key columns of each grouping set (``sets``, in the order given), every key column once in first-seen
    order (``keys``: the output's key columns), and the columns in every set (``common``)."""

    sets: tuple[tuple[str, ...], ...]
    keys: tuple[str, ...]
    common: tuple[str, ...]

    @classmethod
    def of(cls, grouping_sets: Sequence[Sequence[str]] | None = None, *, rollup: Sequence[str] | None = None,
           cube: Sequence[str] | None = None, where: str | None = None) -> GroupingSets:
        """Validate one of the three forms: ``grouping_sets`` (a list of sets, each a list of key columns; ``[]``
        is the grand total per window), ``rollup`` (``ROLLUP (a, b)`` = sets ``(a, b), (a), ()``) or ``cube``
        (``CUBE (a, b)`` = every subset, largest first).  Names compare case-insensitively, as Spark resolves them.
        """
        given = [(name, value) for name, value in zip(FORMS, (grouping_sets, rollup, cube), strict=True)
                 if value is not None]
        if len(given) != 1:
            raise SpecError("grouping_sets", f"give exactly one of {', '.join(FORMS)}; got "
                            f"{[name for name, _ in given] or 'none'}", where=where)
        form, value = given[0]
        if form == "grouping_sets":
            if isinstance(value, str) or not isinstance(value, Sequence) or not value:
                raise SpecError(form, f"expected a non-empty list of sets (each a list of key columns), got {value!r}",
                                where=where)
            sets = tuple(_names(s, form, where, f"set {i}") for i, s in enumerate(value, 1))
        else:
            columns = _names(value, form, where, form.upper())
            if not columns:
                raise SpecError(form, f"{form.upper()} needs at least one column", where=where)
            if form == "rollup":
                sets = tuple(columns[:n] for n in range(len(columns), -1, -1))
            else:
                if 2 ** len(columns) > MAX_SETS:
                    raise SpecError(form, f"CUBE of {len(columns)} columns is {2 ** len(columns)} grouping sets, "
                                    f"more than {MAX_SETS}", where=where)
                sets = tuple(s for n in range(len(columns), -1, -1) for s in combinations(columns, n))
        if len(sets) > MAX_SETS:
            raise SpecError(form, f"{len(sets)} grouping sets, more than {MAX_SETS}", where=where)
        seen: dict[frozenset[str], int] = {}
        for i, s in enumerate(sets, 1):
            folded = frozenset(n.lower() for n in s)
            if folded in seen:
                # Spark would emit the repeated set's rows twice: a duplicated aggregate is never what is meant.
                first = seen[folded]
                raise SpecError("grouping_sets", f"set {i} {list(s)} repeats set {first} {list(sets[first - 1])}: "
                                "each set must differ", where=where)
            seen[folded] = i
        keys: list[str] = []
        for s in sets:
            keys.extend(n for n in s if n.lower() not in {k.lower() for k in keys})
        common = tuple(k for k in keys if all(k.lower() in {n.lower() for n in s} for s in sets))
        return cls(sets, tuple(keys), common)


__all__ = ["FORMS", "MAX_SETS", "GroupingSets"]
