"""The window join shape the streaming SQL door runs as the window join operator (``core/windows/join_sql.py``):
which joins are recognised (type, aliases, keys, spans) and why the others are declined, with the position."""

from __future__ import annotations

import pytest

from timeweave.core.windows.aggregate_sql import Declined
from timeweave.core.windows.join_sql import WindowJoinQuery, window_join_queries


def tvf(table: str) -> str:
    return f"TABLE(TUMBLE(TABLE {table}, DESCRIPTOR(ts), INTERVAL '5' MINUTES))"


WINDOWS = "L.window_start = R.window_start AND L.window_end = R.window_end"


@pytest.mark.parametrize(("query", "how", "on", "stars"), [
    (f"SELECT * FROM (SELECT * FROM {tvf('a')}) L JOIN (SELECT * FROM {tvf('b')}) R ON L.k = R.k AND {WINDOWS}",
     "INNER", (("k", "k"),), 1),
    (f"SELECT L.x FROM {tvf('a')} AS L FULL OUTER JOIN {tvf('b')} R ON {WINDOWS} AND R.j = L.i WHERE L.x > 1",
     "FULL", (("i", "j"),), 0),
    (f"SELECT L.x, * FROM (SELECT * FROM {tvf('a')} AS t) AS L RIGHT JOIN {tvf('b')} R ON {WINDOWS}", "RIGHT", (), 1),
])  # fmt: skip
def test_recognised_joins(query: str, how: str, on, stars: int) -> None:
    [found] = window_join_queries(query)
    assert isinstance(found, WindowJoinQuery), found.describe(query)
    assert (found.how, found.aliases, found.on, len(found.stars)) == (how, ("L", "R"), on, stars)
    assert query[found.start :].startswith(("(SELECT", "TABLE(")) and query[: found.end].endswith(("window_end", "L.i"))


@pytest.mark.parametrize(("query", "reason", "at"), [
    (f"SELECT * FROM (SELECT * FROM {tvf('a')}) L JOIN (SELECT * FROM {tvf('b')}) R ON {WINDOWS} AND L.t < R.t",
     "equates columns of the two sides", "L.t < R.t"),
    (f"SELECT * FROM (SELECT * FROM {tvf('a')} WHERE x > 1) L JOIN {tvf('b')} R ON {WINDOWS}",
     "as they are", "WHERE x"),
    (f"SELECT * FROM (SELECT x, window_start FROM {tvf('a')}) L JOIN {tvf('b')} R ON {WINDOWS}",
     "as they are", "(SELECT x"),
    (f"SELECT * FROM c, {tvf('a')} L JOIN {tvf('b')} R ON {WINDOWS}", "as they are", "c, TABLE"),
    (f"SELECT * FROM {tvf('a')} L JOIN {tvf('b')} R ON {WINDOWS} AND L.window_time = R.window_time",
     "equated once each", "ON L.window_start"),
    (f"SELECT * FROM {tvf('a')} L JOIN {tvf('b')} R ON {WINDOWS} JOIN c ON c.k = L.k", "one operator", "JOIN c"),
])  # fmt: skip
def test_declined_joins_are_positioned(query: str, reason: str, at: str) -> None:
    [found] = window_join_queries(query)
    assert isinstance(found, Declined) and reason in found.reason, found
    assert query[found.position :].startswith(at), query[found.position :]


def test_a_join_without_a_condition_does_not_take_the_next_joins_on() -> None:
    """``a CROSS JOIN d JOIN b ON <windows>``: the window join is ``... JOIN b``, not the cross join."""
    from timeweave.core.windows.ops_sql import QueryTokens, window_joins

    query = f"SELECT * FROM {tvf('a')} L CROSS JOIN dims d JOIN {tvf('b')} R ON {WINDOWS}"
    q = QueryTokens(query)
    [join] = window_joins(q)
    assert q.tokens[join.first].upper == "JOIN" and query[q.tokens[join.right[0]].start:].startswith("TABLE(TUMBLE(TABLE b")
    query = f"SELECT * FROM {tvf('a')} L JOIN dims d JOIN {tvf('b')} R ON {WINDOWS}"
    q = QueryTokens(query)
    assert [query[q.tokens[j.right[0]].start:].split(",")[0] for j in window_joins(q)] == ["TABLE(TUMBLE(TABLE b"]
