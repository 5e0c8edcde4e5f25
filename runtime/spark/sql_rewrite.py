"""The SQL door's registry of clause rewriters: how ``timeweave.sql`` learns each operator's SQL syntax.

Each operator with SQL syntax of its own (``MATCH_RECOGNIZE (...)``, ``JOIN r FOR SYSTEM_TIME AS OF ...``)
registers a :class:`ClauseRewriter` when its module is imported; :func:`rewrite` applies every registered
one, in ``order``, and :func:`run` runs the result.  The registry sits below the operators and the door
(it imports neither), so an operator whose SQL nests other SQL (MATCH_RECOGNIZE's input relation and its
subqueries may hold a temporal join) runs that SQL through :func:`run` without importing the SQL door,
and the door imports the operators: the imports point one way, with no cycle.

A module that runs SQL which may hold an operator's syntax imports that operator's module (so its
rewriter is registered); :mod:`timeweave.spark.sql_door` imports all of them.

>>> [r.name for r in rewriters()]  # doctest: +SKIP
['MATCH_RECOGNIZE', 'temporal join']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: ``rewrite(spark, query)``: ``query`` with each of the operator's clauses replaced by plain Spark SQL.
Rewrite = Callable[[Any, str], str]


@dataclass(frozen=True)
class ClauseRewriter:
    """One operator's SQL syntax: its ``rewrite`` runs before those of a higher ``order``.

    MATCH_RECOGNIZE runs first (order 10): its input relation may hold a temporal join (order 20), which
    its rewrite resolves through :func:`run`.
    """

    name: str
    order: int
    rewrite: Rewrite


_REWRITERS: dict[str, ClauseRewriter] = {}


def register(rewriter: ClauseRewriter) -> ClauseRewriter:
    """Add ``rewriter`` (replacing one of the same name: re-importing a module is harmless); returns it."""
    _REWRITERS[rewriter.name] = rewriter
    return rewriter


def rewriters() -> tuple[ClauseRewriter, ...]:
    """The registered rewriters, in the order :func:`rewrite` applies them."""
    return tuple(sorted(_REWRITERS.values(), key=lambda r: (r.order, r.name)))


def rewrite(spark: Any, query: str) -> str:
    """``query`` with every registered operator's clauses rewritten to plain Spark SQL."""
    for rewriter in rewriters():
        query = rewriter.rewrite(spark, query)
    return query


def run(spark: Any, query: str) -> Any:
    """``spark.sql`` of :func:`rewrite` (a DataFrame): SQL text an operator nests, run as the SQL door runs it."""
    return spark.sql(rewrite(spark, query))


__all__ = ["ClauseRewriter", "Rewrite", "register", "rewrite", "rewriters", "run"]
