"""Errors of the MATCH_RECOGNIZE core, all positioned in the clause text where a position exists.

Syntax errors are :class:`timeweave.core.errors.QuerySyntaxError` (line, col, highlight).  Errors found
after parsing (an undefined variable, an aggregate over two variables...) are
:class:`PatternValidationError`, a subclass, so callers that catch "the clause is wrong" catch both
and still get the position.  :class:`MatchRuntimeError` is raised while matching, for the
standard's runtime exceptions (``AFTER MATCH SKIP TO FIRST A`` landing on the match's first row).
"""

from __future__ import annotations

from timeweave.core.errors import QuerySyntaxError, TimeweaveError


class PatternValidationError(QuerySyntaxError):
    """The clause parses but breaks a MATCH_RECOGNIZE rule; ``position`` points at the offending part.

    >>> err = PatternValidationError("unknown pattern variable 'C'", text="PATTERN (A B) DEFINE C AS x > 1", position=21)
    >>> (err.line, err.col)
    (1, 22)
    """


class MatchRuntimeError(TimeweaveError, RuntimeError):
    """A row-pattern matching error the SQL standard raises at run time (data dependent).

    >>> str(MatchRuntimeError("AFTER MATCH SKIP TO FIRST A: cannot skip to the first row of the match", match_number=1))
    'AFTER MATCH SKIP TO FIRST A: cannot skip to the first row of the match (match 1)'
    """

    def __init__(self, message: str, *, match_number: int | None = None) -> None:
        self.match_number = match_number
        super().__init__(message if match_number is None else f"{message} (match {match_number})")
