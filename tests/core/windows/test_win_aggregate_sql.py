"""The window aggregation shape the SQL door computes with shared slices (``core/windows/aggregate_sql.py``):
which queries are recognised (span, items, keys) and why the others are declined, with the position."""

from __future__ import annotations

import pytest

from timeweave.core.windows import find_window_tvfs
from timeweave.core.windows.aggregate_sql import Declined, SelectItem, WindowAggregateQuery, window_aggregate_query

HOP = "TABLE(HOP(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))"
GROUP = "GROUP BY window_start, window_end, item"


def shape(query: str):
    [call] = find_window_tvfs(query)
    return window_aggregate_query(query, call)


def test_the_brief_query_is_recognised() -> None:
    query = f"SELECT window_start, window_end, item, COUNT(*) FROM {HOP} {GROUP}"
    found = shape(query)
    assert isinstance(found, WindowAggregateQuery)
    assert (found.start, found.end) == (0, len(query))
    assert found.items == (SelectItem("window_start"), SelectItem("window_end"), SelectItem("item"),
                           SelectItem(aggregate="COUNT(*)"))
    assert found.keys == ("item",)
    assert found.call.function == "HOP"


@pytest.mark.parametrize(("query", "items", "keys"), [
    # aliases (AS and bare), the TVF's alias as qualifier, back-quoted names, COUNT(1), every function
    (f"SELECT w.window_start AS s, window_end e, `item`, count(1) n, SUM(w.price) AS total, min(`odd``name`), "
     f"MAX(price), AVG(v) FROM {HOP} AS w {GROUP}",
     ["window_start", "window_end", "item", "COUNT(*)", "SUM(`price`)", "MIN(`odd``name`)", "MAX(`price`)",
      "AVG(`v`)"], ("item",)),
    # no TABLE wrapper, window_time grouped and selected, several keys, a key repeated, no key selected
    ("SELECT window_time, COUNT(v) FROM CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '5' MINUTES) x "
     "GROUP BY window_start, window_end, window_time, a, b, A",
     ["window_time", "COUNT(`v`)"], ("a", "b")),
    # TUMBLE, no keys, ORDER BY output names / positions, LIMIT
    ("SELECT window_start, COUNT(*) AS n FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE) "
     "GROUP BY window_end, window_start ORDER BY n DESC NULLS LAST, 1 LIMIT 10",
     ["window_start", "COUNT(*)"], ()),
])  # fmt: skip
def test_recognised_shapes(query: str, items: list[str], keys: tuple[str, ...]) -> None:
    found = shape(query)
    assert isinstance(found, WindowAggregateQuery), found.describe(query)
    assert [i.aggregate or i.column for i in found.items] == items
    assert found.keys == keys
    assert query[found.start : found.end].startswith("SELECT") and "GROUP BY" in query[found.start : found.end]
    assert "ORDER" not in query[found.start : found.end]


def test_a_block_inside_a_larger_query() -> None:
    inner = f"SELECT window_time AS rowtime, item, SUM(price) AS s FROM {HOP} GROUP BY window_start, window_end, window_time, item"
    query = f"WITH x AS ({inner}) SELECT * FROM x UNION ALL SELECT * FROM y"
    found = shape(query)
    assert isinstance(found, WindowAggregateQuery)
    assert query[found.start : found.end] == inner
    query = f"SELECT * FROM ({inner}) t JOIN y ON t.item = y.item"
    found = shape(query)
    assert isinstance(found, WindowAggregateQuery) and query[found.start : found.end] == inner


@pytest.mark.parametrize(("query", "reason", "at"), [
    (f"SELECT window_start, COUNT(*) FROM {HOP} {GROUP} HAVING COUNT(*) > 1", "HAVING:", "HAVING"),
    (f"SELECT window_start, COUNT(*) FROM {HOP} WHERE price > 1 {GROUP}", "WHERE:", "WHERE"),
    (f"SELECT window_start, SUM(price) + 1 FROM {HOP} {GROUP}", "select item SUM(price) + 1:", "SUM(price) + 1"),
    (f"SELECT window_start, COUNT(DISTINCT item) FROM {HOP} {GROUP}", "select item COUNT(DISTINCT", "COUNT(DIS"),
    (f"SELECT window_start, COUNT(*) FILTER (WHERE v > 1) FROM {HOP} {GROUP}", "select item COUNT(*) FILTER", "COUNT(*) F"),
    (f"SELECT window_start, percentile(v, 0.5) FROM {HOP} {GROUP}", "select item percentile", "percentile"),
    (f"SELECT window_start, item, SUM(price) FROM {HOP} GROUP BY window_start, window_end, GROUPING SETS ((item), ())",
     "GROUP BY GROUPING SETS", "GROUPING"),
    (f"SELECT window_start, item, SUM(price) FROM {HOP} GROUP BY window_start, window_end, ROLLUP (item)",
     "GROUP BY ROLLUP", "ROLLUP"),
    (f"SELECT window_start, item, SUM(price) FROM {HOP} {GROUP} WITH ROLLUP", "WITH:", "WITH ROLLUP"),
    (f"SELECT window_start, SUM(price) FROM {HOP} GROUP BY window_start, item", "GROUP BY: a window aggregation",
     "GROUP BY"),
    (f"SELECT window_time, SUM(price) FROM {HOP} {GROUP}", "select item window_time: not grouped", "window_time,"),
    (f"SELECT DISTINCT window_start, SUM(price) FROM {HOP} {GROUP}", "SELECT DISTINCT", "DISTINCT"),
    (f"SELECT window_start, item FROM {HOP} {GROUP}", "the select list has no aggregate", "SELECT"),
    (f"SELECT * FROM {HOP} {GROUP}", "select item *", "*"),
    (f"SELECT window_start, SUM(x.price) FROM {HOP} w {GROUP}", "SUM argument x.price", "x.price"),
    (f"SELECT window_start, SUM(price) FROM {HOP} w JOIN r ON w.item = r.item {GROUP}", "JOIN:", "JOIN"),
    (f"SELECT window_start, SUM(price) FROM {HOP} {GROUP} ORDER BY SUM(price)", "ORDER BY:", "SUM(price)"),
    (f"SELECT window_start, SUM(price) FROM {HOP} {GROUP} ORDER BY price", "ORDER BY price", "price"),
    (f"SELECT * FROM {HOP}", "the end of the query: the sliced plan needs GROUP BY", None),
    ("SELECT window_start, COUNT(*) FROM TABLE(SESSION(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)) "
     "GROUP BY window_start, window_end", "SESSION: session windows share no slices", "TABLE(SESSION"),
    (f"SELECT window_start, COUNT(*) FROM x, {HOP} {GROUP}", "HOP: not the whole FROM clause", "TABLE(HOP"),
])  # fmt: skip
def test_declined_shapes_say_why_and_where(query: str, reason: str, at: str | None) -> None:
    found = shape(query)
    assert isinstance(found, Declined), query
    assert found.reason.startswith(reason), found.reason
    if at is None:
        position = len(query)
    else:  # ORDER BY's item is the last occurrence of its text
        position = query.rindex(at) if reason.startswith("ORDER BY") else query.index(at)
    assert found.position == position, found.describe(query)
    assert found.describe(query).endswith(f"(line 1, col {position + 1})")


def test_sessions_are_recognised_when_asked() -> None:
    # the streaming SQL door runs SESSION blocks as the streaming window operator (which merges sessions)
    query = ("SELECT window_start, window_end, item, COUNT(*) FROM TABLE(SESSION(TABLE bids PARTITION BY item, "
             "DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)) GROUP BY window_start, window_end, item")
    [call] = find_window_tvfs(query)
    assert isinstance(window_aggregate_query(query, call), Declined)
    found = window_aggregate_query(query, call, sessions=True)
    assert isinstance(found, WindowAggregateQuery) and found.keys == ("item",) and (found.start, found.end) == (0, len(query))
