"""Flink's legacy group windows rewritten to window TVFs (core: text only, no JVM)."""

from __future__ import annotations

import re

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.windows import find_window_tvfs
from timeweave.core.windows.legacy_sql import rewrite_group_windows
from timeweave.core.windows.spec import HopSpec, SessionSpec, TumbleSpec


def _one_call(query: str):
    [call] = find_window_tvfs(rewrite_group_windows(query))
    return call


def test_tumble_with_all_auxiliaries_and_having() -> None:
    q = ("SELECT user, TUMBLE_START(cTime, INTERVAL '1' HOUR) AS s, tumble_end(cTime, interval '1' hour) AS e, "
         "TUMBLE_ROWTIME(cTime, INTERVAL '1' HOUR) AS rt, COUNT(url) AS cnt FROM clicks "
         "GROUP BY TUMBLE(cTime, INTERVAL '1' HOUR), user HAVING COUNT(url) > TUMBLE_END(cTime, INTERVAL '1' HOUR) "
         "IS NOT NULL ORDER BY TUMBLE_START(cTime, INTERVAL '1' HOUR)")
    out = rewrite_group_windows(q)
    assert "TUMBLE_" not in out.upper()
    assert "window_start AS s, window_end AS e, window_time AS rt" in out
    assert "GROUP BY window_start, window_end, window_time, user HAVING COUNT(url) > window_end IS NOT NULL" in out
    assert out.endswith("ORDER BY window_start")
    call = _one_call(q)
    assert call.spec == TumbleSpec(size=3_600_000, offset=0) and call.time_column == "cTime"
    assert call.relation == "clicks"


def test_hop_keeps_alias_and_qualified_columns() -> None:
    q = ("SELECT c.item, HOP_END(c.t, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE) AS e, SUM(c.price) FROM db.bids AS c "
         "GROUP BY HOP(c.t, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE), c.item")
    out = rewrite_group_windows(q)
    assert "FROM TABLE(HOP(TABLE db.bids, DESCRIPTOR(t), INTERVAL '1' MINUTE, INTERVAL '5' MINUTE)) AS c GROUP BY" in out
    assert _one_call(q).spec == HopSpec(slide=60_000, size=300_000, offset=0)


def test_unaliased_table_keeps_its_name_for_qualified_references() -> None:
    out = rewrite_group_windows("SELECT bids.item, COUNT(*) FROM db.bids GROUP BY bids.item, "
                                "TUMBLE(bids.t, INTERVAL '1' MINUTE)")
    assert "DESCRIPTOR(t), INTERVAL '1' MINUTE)) AS bids GROUP BY bids.item, window_start, window_end, window_time" in out


def test_session_partitions_by_the_other_keys_and_filters_first() -> None:
    q = ("SELECT `user`, k2, SESSION_END(t, INTERVAL '30' SECOND), COUNT(*) FROM clicks WHERE url LIKE 'a%' "
         "GROUP BY `user`, SESSION(t, INTERVAL '30' SECOND), k2")
    call = _one_call(q)
    assert call.spec == SessionSpec(gap=30_000, partition_by=("user", "k2"))
    assert call.relation == "(SELECT * FROM clicks WHERE url LIKE 'a%')"
    assert "WHERE" not in rewrite_group_windows(q).split("DESCRIPTOR")[1]


def test_global_session_and_subquery_input_and_nested_blocks() -> None:
    inner = ("SELECT user, TUMBLE_ROWTIME(t, INTERVAL '1' MINUTE) AS rt, COUNT(*) AS n FROM clicks "
             "GROUP BY user, TUMBLE(t, INTERVAL '1' MINUTE)")
    q = (f"SELECT SESSION_START(rt, INTERVAL '5' MINUTE) AS s, SUM(n) FROM ({inner}) x "
         "GROUP BY SESSION(rt, INTERVAL '5' MINUTE)")
    out = rewrite_group_windows(q)
    calls = find_window_tvfs(out)
    assert sorted(c.function for c in calls) == ["SESSION", "TUMBLE"]
    session = next(c for c in calls if c.function == "SESSION")
    assert session.spec == SessionSpec(gap=300_000, partition_by=())
    assert "window_time AS rt" in out and out.startswith("SELECT window_start AS s, SUM(n) FROM TABLE(SESSION(")


@pytest.mark.parametrize(("alias", "where"), [(" AS T", ""), (" T", ""), ("", ""), (" AS T", " WHERE T.price > 1")])
def test_the_matches_of_a_match_recognize_are_windowed(alias: str, where: str) -> None:
    # Flink's MatchRecognizeITCase.testWindowedGroupingAppliedToMatchRecognize: FROM t MATCH_RECOGNIZE (...) AS T
    recognize = ("Ticker MATCH_RECOGNIZE ( PARTITION BY symbol ORDER BY rowtime MEASURES A.price as price, "
                 "MATCH_ROWTIME() as matchRowtime PATTERN (A) DEFINE A AS A.price > 0 )")
    q = (f"SELECT symbol, SUM(price), TUMBLE_START(matchRowtime, interval '3' second) FROM {recognize}{alias}{where} "
         "GROUP BY symbol, TUMBLE(matchRowtime, interval '3' second)")
    call = _one_call(q)
    assert call.spec == TumbleSpec(size=3_000, offset=0) and call.time_column == "matchRowtime"
    assert call.relation == f"(SELECT * FROM {recognize}{alias}{where})"
    out = rewrite_group_windows(q)
    assert out.endswith(f"){alias} GROUP BY symbol, window_start, window_end, window_time")


def test_queries_without_group_windows_are_unchanged() -> None:
    for q in ["SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))",
              "SELECT k, COUNT(*) FROM t GROUP BY k",
              "SELECT tumble(x) FROM t",  # a user's own function outside GROUP BY
              "SELECT 'GROUP BY TUMBLE(ts, INTERVAL 1 HOUR)' AS s FROM t"]:
        assert rewrite_group_windows(q) == q


def test_union_blocks_are_rewritten_apart() -> None:
    q = ("SELECT k, TUMBLE_END(t, INTERVAL '1' MINUTE) FROM a GROUP BY k, TUMBLE(t, INTERVAL '1' MINUTE) UNION ALL "
         "SELECT k, HOP_END(t, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE) FROM b GROUP BY k, "
         "HOP(t, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE)")
    assert [c.function for c in find_window_tvfs(rewrite_group_windows(q))] == ["TUMBLE", "HOP"]


@pytest.mark.parametrize(("query", "message", "at"), [
    ("SELECT k FROM a JOIN b ON a.k = b.k GROUP BY k, TUMBLE(t, INTERVAL '1' MINUTE)", "reads one table", "JOIN"),
    ("SELECT k FROM a, b GROUP BY k, TUMBLE(t, INTERVAL '1' MINUTE)", "reads one table", ","),
    ("SELECT k FROM a GROUP BY k, TUMBLE(t, INTERVAL '1' MINUTE, INTERVAL '1' SECOND)", "takes (time, size)",
     "TUMBLE"),
    ("SELECT k FROM a GROUP BY k, TUMBLE(t + 1, INTERVAL '1' MINUTE)", "the time column", "t + 1"),
    ("SELECT k FROM a GROUP BY k, TUMBLE(t, INTERVAL '0' MINUTE)", "must be greater than 0", "TUMBLE"),
    ("SELECT k FROM a GROUP BY k, HOP(t, INTERVAL '2' MINUTE, INTERVAL '3' MINUTE)", "HOP group window", "HOP"),
    ("SELECT HOP_END(t, INTERVAL '1' MINUTE) FROM a GROUP BY TUMBLE(t, INTERVAL '1' MINUTE)", "reads a HOP",
     "HOP_END"),
    ("SELECT TUMBLE_END(t, INTERVAL '2' MINUTE) FROM a GROUP BY TUMBLE(t, INTERVAL '1' MINUTE)", "must repeat",
     "TUMBLE_END"),
    ("SELECT TUMBLE_PROCTIME(t, INTERVAL '1' MINUTE) FROM a GROUP BY TUMBLE(t, INTERVAL '1' MINUTE)",
     "processing-time", "TUMBLE_PROCTIME"),
    ("SELECT 1 FROM a GROUP BY TUMBLE(t, INTERVAL '1' MINUTE), HOP(t, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE)",
     "second group window", "HOP"),
    ("SELECT 1 FROM a GROUP BY SESSION(t, INTERVAL '1' MINUTE), upper(k)", "must be columns", "upper"),
])
def test_errors_name_the_problem_at_its_position(query: str, message: str, at: str) -> None:
    with pytest.raises(QuerySyntaxError, match=re.escape(message)) as info:
        rewrite_group_windows(query)
    assert info.value.position == query.index(at)


def test_error_in_a_later_block_points_into_the_query_as_written() -> None:
    q = ("SELECT k FROM a GROUP BY k, TUMBLE(t, INTERVAL '1' MINUTE) UNION ALL "
         "SELECT k FROM b GROUP BY k, SESSION(t, INTERVAL '-1' MINUTE)")
    with pytest.raises(QuerySyntaxError, match="SESSION group window") as info:
        rewrite_group_windows(q)
    assert info.value.position == q.index("SESSION")
