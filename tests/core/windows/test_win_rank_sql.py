"""The window Top-N / deduplication shape the streaming SQL door runs as the rank operator
(``core/windows/rank_sql.py``): which queries are recognised (keys, order, ranks, spans) and why the others are
declined, with the position; a query with no window ranking is not this module's (None)."""

from __future__ import annotations

import pytest

from timeweave.core.windows import find_window_tvfs
from timeweave.core.windows.aggregate_sql import Declined
from timeweave.core.windows.rank_sql import WindowRankQuery, window_rank_query
from timeweave.core.windows.ranking import RankRange, SortKey

TUMBLE = "TABLE(TUMBLE(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))"


def shape(query: str):
    [call] = find_window_tvfs(query)
    return window_rank_query(query, call)


@pytest.mark.parametrize(("query", "keys", "order", "ranks", "keep"), [
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS "
     f"rownum FROM {TUMBLE}) WHERE rownum <= 3",
     (), (SortKey("price", True),), RankRange("ROW_NUMBER", 1, 3), None),
    # RANK, keys, a bare alias, two keys with NULLS, the subquery's alias as qualifier, < N and another condition
    (f"SELECT * FROM (SELECT w.*, rank() OVER (PARTITION BY window_start, w.window_end, item, `supplier id` ORDER BY "
     f"price DESC NULLS FIRST, w.bidtime) rk FROM {TUMBLE} w) AS t WHERE t.rk < 3 AND price > 1",
     ("item", "supplier id"), (SortKey("price", True, True), SortKey("bidtime")), RankRange("RANK", 1, 2), None),
    # BETWEEN, and a second bound narrowing it
    (f"SELECT * FROM (SELECT *, DENSE_RANK() OVER (PARTITION BY window_start, window_end ORDER BY price) AS r "
     f"FROM {TUMBLE}) WHERE r BETWEEN 2 AND 5 AND r <= 4",
     (), (SortKey("price"),), RankRange("DENSE_RANK", 2, 4), None),
    # deduplication: Top-1 by ROW_NUMBER on the TVF's time column
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, item ORDER BY bidtime "
     f"DESC) AS rownum FROM {TUMBLE}) WHERE rownum = 1",
     ("item",), (SortKey("bidtime", True),), RankRange("ROW_NUMBER", 1, 1), "last"),
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY BidTime) AS n "
     f"FROM {TUMBLE}) WHERE n <= 1",
     (), (SortKey("BidTime"),), RankRange("ROW_NUMBER", 1, 1), "first"),
])  # fmt: skip
def test_recognised_shapes(query: str, keys, order, ranks, keep) -> None:
    found = shape(query)
    assert isinstance(found, WindowRankQuery), found.describe(query)
    assert (found.keys, found.order, found.ranks, found.keep) == (keys, order, ranks, keep)
    ranking = query[found.ranking[0] : found.ranking[1]]
    assert ranking.upper().startswith(("ROW_NUMBER", "RANK", "DENSE_RANK")) and ranking.endswith(")")
    assert all(query[a:b].endswith("*") for a, b in found.stars) and len(found.stars) == 1


@pytest.mark.parametrize(("query", "reason", "at"), [
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY p) AS rn FROM "
     f"(SELECT window_start, window_end, SUM(price) AS p FROM {TUMBLE} GROUP BY window_start, window_end)) "
     "WHERE rn <= 3", "runs two operators", "(SELECT window_start"),
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price) AS rn "
     f"FROM {TUMBLE} WHERE price > 1) WHERE rn <= 3", "would apply before ranking", "WHERE price"),
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price) AS rn "
     f"FROM {TUMBLE}) WHERE rn <= 3 OR price > 1", "a conjunct of the outer WHERE", "OR price"),
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price) AS rn "
     f"FROM {TUMBLE}) WHERE rn >= 3", "keeps the ranks its outer WHERE bounds", "WHERE rn"),
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price * 2) AS rn "
     f"FROM {TUMBLE}) WHERE rn <= 3", "plain columns only", "price * 2"),
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end) AS rn "
     f"FROM {TUMBLE}) WHERE rn <= 3", "needs an ORDER BY", "(PARTITION"),
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price) "
     f"FROM {TUMBLE}) WHERE 1 = 1", "name the rank", "FROM TABLE"),
    (f"SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price) AS rn FROM {TUMBLE}",
     "its rank bounded by the outer WHERE", "ROW_NUMBER"),
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY x.price) AS rn "
     f"FROM {TUMBLE} b) WHERE rn <= 3", "other than the TVF's alias", "x.price"),
])  # fmt: skip
def test_declined_shapes_are_positioned(query: str, reason: str, at: str) -> None:
    found = shape(query)
    assert isinstance(found, Declined) and reason in found.reason, found
    assert query[found.position :].startswith(at), query[found.position :]


def test_a_query_without_a_window_ranking_is_not_this_modules() -> None:
    assert shape(f"SELECT window_start, COUNT(*) FROM {TUMBLE} GROUP BY window_start, window_end") is None
    # a ranking that is no window ranking (no window columns in its PARTITION BY)
    assert shape(f"SELECT *, ROW_NUMBER() OVER (PARTITION BY item ORDER BY price) AS rn FROM {TUMBLE}") is None
