"""Window Top-N, deduplication and join rules (core, no JVM): rank ranges, sort keys, the ranking reference,
the late rule per window, Flink's same-window rule for joins and the SQL text checks with positions."""

from __future__ import annotations

import pytest

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.windows import Window, cumulate, hop, session, tumble
from timeweave.core.windows.ops_sql import check_window_ops
from timeweave.core.windows.ranking import (
    RankRange,
    SortKey,
    check_join_windows,
    dedup_order,
    join_type,
    sort_keys,
    split_late,
    top_n,
)

W1, W2 = Window(0, 10), Window(10, 20)


def test_rank_range_rules() -> None:
    assert RankRange.top(3) == RankRange("ROW_NUMBER", 1, 3)
    assert RankRange("rank", 2, 2).function == "RANK"
    for bad, argument in ((("ROW_NUMBER", 0, 3), "lower"), (("ROW_NUMBER", 1, 0), "upper"),
                          (("ROW_NUMBER", 3, 2), "upper"), (("PERCENT_RANK", 1, 2), "function"),
                          (("ROW_NUMBER", True, 2), "lower"), (("ROW_NUMBER", 1, 2.5), "upper")):
        with pytest.raises(SpecError) as error:
            RankRange(*bad)
        assert error.value.argument == argument


def test_sort_keys_parse_directions_and_null_placement() -> None:
    assert sort_keys("price DESC") == (SortKey("price", True, False),)
    assert sort_keys(["a", "b desc nulls first"]) == (SortKey("a", False, True), SortKey("b", True, True))
    assert SortKey.parse("`odd name` ASC").column == "odd name"
    assert SortKey("x").sql_direction == "ASC NULLS FIRST"
    with pytest.raises(SpecError, match="order_by"):
        sort_keys([])
    with pytest.raises(SpecError, match="order_by"):
        SortKey.parse("price sideways")
    assert dedup_order("ts", "first") == SortKey("ts") and dedup_order("ts", "last").descending
    with pytest.raises(SpecError, match="keep"):
        dedup_order("ts", "middle")


def test_join_types() -> None:
    assert [join_type(h) for h in ("inner", "LEFT OUTER", "full outer", "semi", "left anti")] == [
        "INNER", "LEFT", "FULL", "SEMI", "ANTI"]
    with pytest.raises(SpecError, match="how"):
        join_type("cross")


def _values(out):
    return [(w.start, r["p"], rank) for r, w, rank in out]


def test_top_n_row_number_rank_dense_rank_and_ranges() -> None:
    rows = [{"p": p} for p in (5, 3, 5, 1, 3)]
    pairs = [(r, W1) for r in rows] + [({"p": 7}, W2)]
    order = [SortKey("p", descending=True)]
    assert [rank for _, _, rank in top_n(pairs, order, RankRange("ROW_NUMBER", 1, 5))] == [1, 2, 3, 4, 5, 1]
    assert _values(top_n(pairs, order, RankRange("RANK", 1, 3))) == [(0, 5, 1), (0, 5, 1), (0, 3, 3), (0, 3, 3),
                                                                     (10, 7, 1)]
    assert _values(top_n(pairs, order, RankRange("DENSE_RANK", 2, 3))) == [(0, 3, 2), (0, 3, 2), (0, 1, 3)]
    assert _values(top_n(pairs, order, RankRange("ROW_NUMBER", 2, 2))) == [(0, 5, 2)]


def test_top_n_partitions_and_nulls() -> None:
    rows = [{"k": "a", "p": None}, {"k": "a", "p": 2}, {"k": "b", "p": 1}]
    pairs = [(r, W1) for r in rows]
    out = top_n(pairs, [SortKey("p")], RankRange.top(1), key_of=lambda r: r["k"])
    assert [(r["k"], r["p"]) for r, _, _ in out] == [("a", None), ("b", 1)]  # NULL smallest ascending
    out = top_n(pairs, [SortKey("p", descending=True)], RankRange.top(1), key_of=lambda r: r["k"])
    assert [(r["k"], r["p"]) for r, _, _ in out] == [("a", 2), ("b", 1)]  # ... and last descending


def test_split_late_excludes_only_fired_windows_per_row() -> None:
    spec = hop(5, 10)
    from timeweave.core.windows import Slicing

    rows = [{"t": 8, "wm": 3}, {"t": 8, "wm": 9}, {"t": 8, "wm": 20}, {"t": 2, "wm": None}]
    pairs = [(r, w) for r in rows[:3] for w in Slicing.of(spec).windows_of(r["t"])]
    kept, late = split_late(pairs, time_of=lambda r: r["t"], watermark_of=lambda r: r["wm"])
    assert [(r["wm"], w.start) for r, w in kept] == [(3, 0), (3, 5), (9, 5)]
    assert [(x.row["wm"], x.missed, x.dropped) for x in late] == [(9, (Window(0, 10),), False),
                                                                  (20, (Window(0, 10), Window(5, 15)), True)]
    assert "missed window [" in late[0].reason
    # batch: no watermark, nothing is late
    assert split_late(pairs, time_of=lambda r: r["t"], watermark_of=None) == (pairs, [])


def test_join_windows_must_be_the_same_tvf() -> None:
    check_join_windows(tumble("5 minutes"), tumble(300_000))
    check_join_windows(cumulate("1 minute", "5 minutes"), cumulate(60_000, 300_000))
    for left, right in ((tumble("5 minutes"), tumble("10 minutes")), (tumble("10 minutes"), hop("5 minutes", "10 minutes")),
                        (tumble("5 minutes"), tumble("5 minutes", offset="1 minute"))):
        with pytest.raises(SpecError, match="same window TVF"):
            check_join_windows(left, right)
    with pytest.raises(SpecError, match="SESSION"):
        check_join_windows(session("1 minute"), session("1 minute"))


# -- the SQL text checks --------------------------------------------------------------------------------

T5 = "TABLE(TUMBLE(TABLE {t}, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))"
H = "TABLE(HOP(TABLE {t}, DESCRIPTOR(row_time), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))"
S = "TABLE(SESSION(TABLE {t} PARTITION BY id, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))"


def _join(left: str, right: str, kind: str = "FULL") -> str:
    return (f"SELECT L.num, R.num FROM (SELECT * FROM {left.format(t='LeftTable')}) L\n{kind} JOIN (SELECT * FROM "
            f"{right.format(t='RightTable')}) R\nON L.num = R.num AND L.window_start = R.window_start AND "
            "L.window_end = R.window_end")


def _subquery(left: str, right: str, kind: str) -> str:
    inner = "SELECT num" if "IN" in kind else "SELECT *"
    corr = "" if "IN" in kind else "L.num = R.num AND "
    lhs = "L.num " if "IN" in kind else ""
    return (f"SELECT * FROM (SELECT * FROM {left.format(t='LeftTable')}) L WHERE {lhs}{kind} (\n  {inner} FROM "
            f"(SELECT * FROM {right.format(t='RightTable')}) R WHERE {corr}L.window_start = R.window_start AND "
            "L.window_end = R.window_end)")


@pytest.mark.parametrize("kind", ["", "LEFT", "RIGHT OUTER", "FULL", "INNER"])
def test_flink_join_queries_pass_and_mismatched_windows_fail_at_the_right_input(kind: str) -> None:
    check_window_ops(_join(T5, T5, kind))
    query = _join(T5, H, kind)
    with pytest.raises(QuerySyntaxError, match="same window TVF") as error:
        check_window_ops(query)
    assert error.value.line == 2 and query[error.value.position:].startswith("TABLE(HOP")
    assert "left TUMBLE(size 300000 ms) at line 1" in str(error.value)


@pytest.mark.parametrize("kind", ["IN", "NOT IN", "EXISTS", "NOT EXISTS"])
def test_semi_and_anti_subqueries(kind: str) -> None:
    check_window_ops(_subquery(T5, T5, kind))
    query = _subquery(H, T5, kind)
    with pytest.raises(QuerySyntaxError, match="same window TVF") as error:
        check_window_ops(query)
    assert error.value.line == 2 and query[error.value.position:].startswith("TABLE(TUMBLE")


def test_session_joins_and_rankings_fail_but_over_a_session_aggregate_pass() -> None:
    with pytest.raises(QuerySyntaxError, match="not SESSION windows directly") as error:
        check_window_ops(_join(S, S))
    assert error.value.line == 1
    ranked = ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC)"
              f" AS rownum FROM {S.format(t='Bid')}) WHERE rownum <= 3")
    with pytest.raises(QuerySyntaxError, match="ranks TUMBLE, HOP or CUMULATE") as error:
        check_window_ops(ranked)
    assert ranked[error.value.position:].startswith("ROW_NUMBER")
    aggregated = ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price "
                  "DESC) AS rownum FROM (SELECT window_start, window_end, id, SUM(price) AS price FROM "
                  f"{S.format(t='Bid')} GROUP BY window_start, window_end, id)) WHERE rownum <= 3")
    check_window_ops(aggregated)


def test_flink_doc_queries_and_unrelated_queries_pass() -> None:
    check_window_ops("""SELECT *
  FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) as rownum
    FROM (
      SELECT window_start, window_end, supplier_id, SUM(price) as price, COUNT(*) as cnt
      FROM TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)
      GROUP BY window_start, window_end, supplier_id
    )
  ) WHERE rownum <= 3""")
    check_window_ops("SELECT * FROM a JOIN b ON a.window_start = b.window_start AND a.window_end = b.window_end")
    check_window_ops(f"SELECT * FROM {T5.format(t='x')} a JOIN y b ON a.k = b.k")  # not a window join
    # a window join of a TVF with a view: the view's windows are not in the text, nothing to compare
    check_window_ops(f"SELECT * FROM (SELECT * FROM {T5.format(t='x')}) a JOIN v b ON a.window_start = "
                     "b.window_start AND a.window_end = b.window_end")


def test_late_rows_leave_the_ranking_of_fired_windows_only() -> None:
    # HOP(5, 10): a row at t=8 is in [0, 10) and [5, 15).  The late one (watermark 9 at arrival: [0, 10) has
    # fired) must not win [0, 10) but still ranks in [5, 15), and is in the late output once.
    from timeweave.core.windows import Slicing

    windows_of = Slicing.of(hop(5, 10)).windows_of
    rows = [{"id": 1, "t": 3, "p": 2, "wm": 0}, {"id": 2, "t": 8, "p": 9, "wm": 9}, {"id": 3, "t": 12, "p": 1, "wm": 9}]
    pairs = [(r, w) for r in rows for w in windows_of(r["t"])]
    kept, late = split_late(pairs, time_of=lambda r: r["t"], watermark_of=lambda r: r["wm"])
    top = top_n(kept, [SortKey("p", descending=True)], RankRange.top(1))
    assert [(w.start, r["id"]) for r, w, _ in top] == [(-5, 1), (0, 1), (5, 2), (10, 3)]
    assert [(x.row["id"], x.missed, x.dropped) for x in late] == [(2, (Window(0, 10),), False)]
    # batch (no watermark): the same rows, nothing late, the t=8 row wins [0, 10)
    top = top_n(pairs, [SortKey("p", descending=True)], RankRange.top(1))
    assert [(w.start, r["id"]) for r, w, _ in top] == [(-5, 1), (0, 2), (5, 2), (10, 3)]


def test_a_join_applies_the_late_rule_per_input_with_its_own_watermark() -> None:
    from timeweave.core.windows import Slicing

    windows_of = Slicing.of(tumble(10)).windows_of
    left = [{"k": "a", "t": 4, "wm": 12}]  # arrived after [0, 10) fired on the left
    right = [{"k": "a", "t": 6, "wm": 5}]  # on time on the right
    left_kept, left_late = split_late([(r, w) for r in left for w in windows_of(r["t"])], time_of=lambda r: r["t"],
                                      watermark_of=lambda r: r["wm"])
    right_kept, right_late = split_late([(r, w) for r in right for w in windows_of(r["t"])],
                                        time_of=lambda r: r["t"], watermark_of=lambda r: r["wm"])
    assert left_kept == [] and [x.dropped for x in left_late] == [True]
    assert len(right_kept) == 1 and right_late == []
