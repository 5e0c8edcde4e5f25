"""The window TVF call as Flink's SQL writes it: forms, named arguments, intervals, positioned errors."""

from __future__ import annotations

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.windows import CumulateSpec, HopSpec, SessionSpec, TumbleSpec, find_window_tvfs

MIN = 60_000


def one(query: str):
    [call] = find_window_tvfs(query)
    return call


def test_with_and_without_the_table_wrapper() -> None:
    q = "SELECT * FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) AS w"
    call = one(q)
    assert q[call.start : call.end] == "TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))"
    assert (call.function, call.relation, call.time_column, call.spec) == ("TUMBLE", "Bid", "bidtime", TumbleSpec(10 * MIN))
    q = "SELECT * FROM TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTE) w"
    call = one(q)
    assert q[call.start : call.end] == "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTE)"
    assert q[call.relation_start :].startswith("Bid") and q[call.time_position :].startswith("bidtime")


@pytest.mark.parametrize(("call", "spec"), [
    ("HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)", HopSpec(5 * MIN, 10 * MIN)),
    ("HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES, INTERVAL '1' MINUTE)",
     HopSpec(5 * MIN, 10 * MIN, MIN)),
    ("CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES)", CumulateSpec(2 * MIN, 10 * MIN)),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' DAY, INTERVAL '-8' HOURS)", TumbleSpec(86_400_000, -8 * 3_600_000)),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' DAY, - INTERVAL '8' HOUR)", TumbleSpec(86_400_000, -8 * 3_600_000)),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' DAY, INTERVAL -'8' HOUR)", TumbleSpec(86_400_000, -8 * 3_600_000)),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1.5' SECONDS)", TumbleSpec(1500)),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '250' MILLISECOND)", TumbleSpec(250)),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1 02:30:00' DAY TO SECOND)", TumbleSpec(86_400_000 + 9_000_000)),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1:30' HOUR TO MINUTE)", TumbleSpec(90 * MIN)),
    ("SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL '2' MINUTES)", SessionSpec(2 * MIN)),
    ("SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '2' MINUTES)", SessionSpec(2 * MIN, ("k",))),
    ("SESSION(TABLE t PARTITION BY (k1, `k 2`), DESCRIPTOR(ts), INTERVAL '2' MINUTES)", SessionSpec(2 * MIN, ("k1", "k 2"))),
    # named arguments, in any order after the positional ones
    ("TUMBLE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' MINUTES)", TumbleSpec(10 * MIN)),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), OFFSET => INTERVAL '1' MINUTE, SIZE => INTERVAL '10' MINUTES)",
     TumbleSpec(10 * MIN, MIN)),
    ("HOP(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' MINUTES, SLIDE => INTERVAL '5' MINUTES)",
     HopSpec(5 * MIN, 10 * MIN)),
    ("CUMULATE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), STEP => INTERVAL '2' MINUTES, MAX_SIZE => INTERVAL '10' MINUTES)",
     CumulateSpec(2 * MIN, 10 * MIN)),
    ("CUMULATE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' MINUTES, STEP => INTERVAL '2' MINUTES)",
     CumulateSpec(2 * MIN, 10 * MIN)),  # Flink names CUMULATE's max size SIZE
    ("SESSION(DATA => TABLE t PARTITION BY k, TIMECOL => DESCRIPTOR(ts), GAP => INTERVAL '2' MINUTES)",
     SessionSpec(2 * MIN, ("k",))),
    ("tumble(table t, descriptor(ts), interval '10' minutes)", TumbleSpec(10 * MIN)),
])  # fmt: skip
def test_forms(call: str, spec) -> None:
    assert one(f"SELECT * FROM {call}").spec == spec
    assert one(f"SELECT * FROM TABLE({call})").spec == spec


def test_relations() -> None:
    assert one("SELECT * FROM TUMBLE(TABLE db.`my bids`, DESCRIPTOR(`ts`), INTERVAL '1' MINUTE)").relation == "db.`my bids`"
    q = "SELECT * FROM TUMBLE(TABLE (SELECT * FROM b WHERE p > 1), DESCRIPTOR(ts), INTERVAL '1' MINUTE)"
    assert one(q).relation == "(SELECT * FROM b WHERE p > 1)"


def test_several_calls_and_what_is_not_a_call() -> None:
    q = ("SELECT * FROM TUMBLE(TABLE a, DESCRIPTOR(ts), INTERVAL '1' MINUTE) x "
         "JOIN TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '1' MINUTE) y ON x.window_start = y.window_start")
    assert [c.relation for c in find_window_tvfs(q)] == ["a", "b"]
    # Flink's legacy group windows, a column called session, a qualified function: not window TVFs
    assert find_window_tvfs("SELECT TUMBLE_START(ts, INTERVAL '1' HOUR) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' HOUR)") == []
    assert find_window_tvfs("SELECT session, hop FROM t WHERE session(x) > 0") == []
    assert find_window_tvfs("SELECT * FROM t WHERE s = 'TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL ''0'' MINUTE)'") == []


def error(query: str) -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as caught:
        find_window_tvfs(query)
    return caught.value


@pytest.mark.parametrize(("call", "message", "at"), [
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '0' MINUTES)", "TUMBLE argument SIZE: must be greater than 0", "INTERVAL '0'"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTES, INTERVAL '10' MINUTES)",
     "TUMBLE argument OFFSET: must satisfy abs(offset) < size", "INTERVAL '10' MINUTES)"),
    ("HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '2' SECONDS, INTERVAL '5' SECONDS)",
     "HOP argument SIZE: must be an integral multiple of slide, but got size 5000 ms and slide 2000 ms", "INTERVAL '5'"),
    ("HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTES, INTERVAL '5' MINUTES)", "HOP argument SIZE", "INTERVAL '5'"),
    ("HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '-1' MINUTES, INTERVAL '5' MINUTES)", "HOP argument SLIDE", "INTERVAL '-1'"),
    ("CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '3' MINUTES, INTERVAL '10' MINUTES)",
     "CUMULATE argument MAX_SIZE: must be an integral multiple of step", "INTERVAL '10'"),
    ("CUMULATE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' MINUTES, STEP => INTERVAL '0' SECOND)",
     "CUMULATE argument STEP: must be greater than 0", "INTERVAL '0'"),
    ("SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL '-2' MINUTES)", "SESSION argument GAP: must be greater than 0", "INTERVAL"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), SIZE => INTERVAL '1' MINUTE, WIDTH => INTERVAL '1' MINUTE)",
     "TUMBLE has no argument WIDTH; its arguments are DATA, TIMECOL, SIZE, OFFSET", "WIDTH"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), SIZE => INTERVAL '1' MINUTE, SIZE => INTERVAL '2' MINUTE)",
     "TUMBLE argument SIZE is given twice", "SIZE => INTERVAL '2'"),
    ("TUMBLE(DATA => TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)",
     "a positional argument cannot follow named arguments", "DESCRIPTOR"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts))", "TUMBLE is missing its SIZE argument", ")\n"),
    ("HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)", "HOP is missing its SIZE argument", ")\n"),
    ("SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' MINUTE)", "SESSION takes at most 3 arguments",
     "INTERVAL '1' MINUTE)"),
    ("TUMBLE(TABLE t, ts, INTERVAL '1' MINUTE)", "TUMBLE argument TIMECOL: expected DESCRIPTOR(<time column>)", "ts,"),
    ("TUMBLE(TABLE t, DESCRIPTOR(a, b), INTERVAL '1' MINUTE)", "DESCRIPTOR names exactly one time column", "a, b"),
    ("TUMBLE(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '1' MINUTE)",
     "TUMBLE does not take PARTITION BY (only SESSION does, in Flink)", "PARTITION"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), 600)", "TUMBLE argument SIZE: expected an interval such as INTERVAL '10' MINUTES", "600"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MONTH)", "year-month intervals cannot size a window", "MONTH"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 'ten' MINUTES)", "cannot read 'ten' as a number of minutes", "'ten'"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '0.0001' SECOND)", "is not a whole number of milliseconds", "'0.0001'"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' FORTNIGHT)", "expected an interval unit", "FORTNIGHT"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE", "TUMBLE( is never closed", "(TABLE"),
    ("TUMBLE(TABLE t WHERE x, DESCRIPTOR(ts), INTERVAL '1' MINUTE)", "unexpected 'WHERE' after the table", "WHERE"),
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), , INTERVAL '1' MINUTE)", "TUMBLE: empty argument", ", INTERVAL"),
])  # fmt: skip
def test_positioned_errors(call: str, message: str, at: str) -> None:
    query = f"SELECT window_start, COUNT(*)\n  FROM {call}\n  GROUP BY window_start"
    caught = error(query)
    assert message in caught.description
    position = query.index(at, query.index("FROM"))
    assert (caught.line, caught.col) == (2, position - query.index("\n") - 1 + 1), (caught.line, caught.col, str(caught))
    assert str(caught).endswith("^")


def test_argument_attribute_for_spec_errors() -> None:
    caught = error("SELECT * FROM HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '5' SECOND)")
    assert caught.argument == "SIZE"


def _column_error(call, columns, query) -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as caught:
        call.check_columns(columns, query)
    return caught.value


def test_check_columns() -> None:
    q = "SELECT * FROM SESSION(TABLE bids PARTITION BY (item, region), DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)"
    call = one(q)
    call.check_columns({"BidTime": "timestamp", "item": "string", "region": "string"}, q)  # case-insensitive
    caught = _column_error(call, {"ts": "timestamp", "item": "string"}, q)
    assert "SESSION argument TIMECOL: column bidtime not found in bids (columns: ts, item)" in caught.description
    assert caught.position == q.index("bidtime")
    caught = _column_error(call, {"bidtime": "bigint", "item": "string"}, q)
    assert "column bidtime of bids is a bigint, not a timestamp" in caught.description
    caught = _column_error(call, {"bidtime": "timestamp_ntz", "item": "string"}, q)
    assert "SESSION argument PARTITION BY: column region not found" in caught.description
    assert caught.position == q.index("PARTITION")
