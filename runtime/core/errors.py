"""Every exception timeweave raises. Messages name the argument, column or position at fault."""

from __future__ import annotations


class TimeweaveError(Exception):
    """Base class of all timeweave errors."""


class SpecError(TimeweaveError, ValueError):
    """An invalid specification, raised at construction time (before any Spark job).

    ``argument`` names the offending argument (``"key"``, ``"time"``, ``"right_columns"``...) and
    ``where`` the input it refers to (``"left"``, ``"versioned"``, a dbt model name...).

    >>> str(SpecError("time", "column 'ts' not found", where="orders"))
    "orders: argument 'time': column 'ts' not found"
    """

    def __init__(self, argument: str, message: str, *, where: str | None = None) -> None:
        self.argument = argument
        self.where = where
        self.message = message
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}argument '{argument}': {message}")


class QuerySyntaxError(TimeweaveError, ValueError):
    """A query or clause timeweave rewrites could not be parsed; carries line/col and a highlight."""

    def __init__(self, message: str, *, text: str, position: int) -> None:
        self.description = message
        self.position = position
        before = text[:position]
        self.line = before.count("\n") + 1
        self.col = position - (before.rfind("\n") + 1) + 1
        # split on "\n" only, like the line count above (splitlines() also splits on \r, \x0b... and
        # drops a trailing empty line, which made an error at the end of "...\n" raise IndexError)
        line_text = text.split("\n")[self.line - 1]
        self.highlight = f"{line_text}\n{' ' * (self.col - 1)}^"
        super().__init__(f"{message} (line {self.line}, col {self.col})\n{self.highlight}")


class ChangelogError(TimeweaveError, ValueError):
    """A changelog that cannot be applied to its table: a ``-U`` / ``-D`` of a row the table does not hold, an
    op the encoding does not carry.  The message names the table and the row."""


class StateFormatError(TimeweaveError, ValueError):
    """Stored state (a checkpoint cell, a backfill state file) that is not this release's state format, or is
    damaged; nothing of it was executed (:mod:`timeweave.core.state_codec` only rebuilds plain data).

    ``where`` names the state when known.

    >>> str(StateFormatError("bad checksum", where="backfill state out/_state/slice=0"))
    'backfill state out/_state/slice=0: bad checksum'
    """

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}" if where else message)
