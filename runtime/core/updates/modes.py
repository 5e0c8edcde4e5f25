"""Changelog modes: how an output carries a result that changes (seed 003, "Table to stream conversion").

A continuous query's result is a *dynamic table*; writing it out encodes its changes in one of three ways
(Flink's ``ChangelogMode``):

* **append**: only inserts (``+I``).  Right for results that never change once emitted (a window aggregate
  firing once per window); an updating result refuses it.
* **retract**: an insert is ``+I``, an update is a retraction of the previous row (``-U``) then the new row
  (``+U``), a delete is ``-D`` of the row.  Needs no key: the table is a multiset of rows.
* **upsert**: an insert or update is one message by the unique key (``+I`` first, then ``+U``), a delete is
  ``-D`` with the key.  Needs a unique key (the GROUP BY columns of a continuous aggregate); cheaper than
  retract (one message per update) and what key-value sinks apply.

>>> ChangelogMode.parse(" Retract "), ChangelogMode.UPSERT.kinds
(<ChangelogMode.RETRACT: 'retract'>, ('+I', '+U', '-D'))
>>> ChangelogMode.APPEND.check("clicks_per_user", updating=True)
Traceback (most recent call last):
...
timeweave.core.errors.SpecError: clicks_per_user: argument 'changelog': an append-only output cannot carry updates: ask for changelog='retract' or 'upsert'
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from timeweave.core.errors import SpecError
from timeweave.core.operator import RowKind


class ChangelogMode(StrEnum):
    """The encoding of an output's changes (see the module docstring)."""

    APPEND = "append"
    RETRACT = "retract"
    UPSERT = "upsert"

    @classmethod
    def parse(cls, text: object, *, where: str | None = None) -> ChangelogMode:
        """The mode named by ``text`` (case and surrounding blanks ignored); a clear error otherwise.

        >>> ChangelogMode.parse("upsert")
        <ChangelogMode.UPSERT: 'upsert'>
        >>> ChangelogMode.parse("retraction", where="job.changelog")
        Traceback (most recent call last):
        ...
        timeweave.core.errors.SpecError: job.changelog: argument 'changelog': expected 'append', 'retract' or 'upsert', got 'retraction'
        """
        if isinstance(text, ChangelogMode):
            return text
        if isinstance(text, str):
            try:
                return cls(text.strip().lower())
            except ValueError:
                pass
        raise SpecError("changelog", f"expected 'append', 'retract' or 'upsert', got {text!r}", where=where)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The row kinds an output in this mode carries (their op codes)."""
        if self is ChangelogMode.APPEND:
            return (RowKind.INSERT.value,)
        if self is ChangelogMode.UPSERT:
            return (RowKind.INSERT.value, RowKind.UPDATE_AFTER.value, RowKind.DELETE.value)
        return tuple(kind.value for kind in RowKind)

    def check(self, output: str, *, updating: bool, unique_key: Sequence[str] | None = None) -> None:
        """Refuse an output this mode cannot carry: updates in append mode, upserts without a unique key.

        ``output`` names the output in the error; ``updating``: whether the result changes rows it emitted;
        ``unique_key``: the result's unique key columns (None: it has none).

        >>> ChangelogMode.UPSERT.check("clicks_per_user", updating=True, unique_key=())
        Traceback (most recent call last):
        ...
        timeweave.core.errors.SpecError: clicks_per_user: argument 'changelog': an upsert output needs a unique key to apply its rows by: name the result's key columns, or ask for changelog='retract'
        """
        if self is ChangelogMode.APPEND and updating:
            raise SpecError("changelog", "an append-only output cannot carry updates: ask for changelog='retract' "
                            "or 'upsert'", where=output)
        if self is ChangelogMode.UPSERT and not unique_key:
            raise SpecError("changelog", "an upsert output needs a unique key to apply its rows by: name the "
                            "result's key columns, or ask for changelog='retract'", where=output)


__all__ = ["ChangelogMode"]
