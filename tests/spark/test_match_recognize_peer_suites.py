"""Flink's ``MatchRecognizeITCase`` and the peers' validation suites through ``timeweave.sql``.

* :mod:`tests.helpers.mr_suites.flink_itcase`: Flink's queries verbatim over its test collections, with
  Flink's results (where the standard answers otherwise, the standard's, with Flink's rows and the reason
  in ``DIFFERENCES``); two queries need Java UDFs and are listed in ``SKIPPED``.
* :mod:`tests.helpers.mr_suites.analyzer_errors`: IoTDB's port of Trino's row-pattern analysis tests and
  Flink's ``MatchRecognizeValidationTest``.  A failing case must fail before any Spark job, with an error
  positioned in the query; a passing case must analyse (``timeweave.sql`` returns a DataFrame).
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

import timeweave
from tests.helpers.mr_suites import analyzer_errors, flink_itcase
from timeweave.core.errors import QuerySyntaxError

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def peers(spark):
    flink_itcase.setup(spark)
    analyzer_errors.setup(spark)
    return spark


@pytest.mark.parametrize(("name", "query", "expected"), flink_itcase.CASES, ids=[c[0] for c in flink_itcase.CASES])
def test_flink_match_recognize_itcase(peers, name: str, query: str, expected: list[tuple]) -> None:
    zone = peers.conf.get("spark.sql.session.timeZone")
    peers.conf.set("spark.sql.session.timeZone", flink_itcase.SESSION_TIME_ZONES.get(name, zone))
    try:
        got = [tuple(r) for r in timeweave.sql(peers, query).collect()]
    finally:
        peers.conf.set("spark.sql.session.timeZone", zone)
    assert Counter(got) == Counter(expected), f"{name}: {got}"


def test_flink_differences_and_skips_are_accounted_for() -> None:
    names = {c[0] for c in flink_itcase.CASES}
    assert set(flink_itcase.DIFFERENCES) <= names and not set(flink_itcase.SKIPPED) & names
    for name, (theirs, why) in flink_itcase.DIFFERENCES.items():
        assert theirs != next(c[2] for c in flink_itcase.CASES if c[0] == name) and why
    assert len(names) + len(flink_itcase.SKIPPED) == 15  # every @TestTemplate of the ITCase


@pytest.mark.parametrize(("name", "query", "expected"), analyzer_errors.CASES,
                         ids=[c[0] for c in analyzer_errors.CASES])
def test_peer_validation_suites(peers, name: str, query: str, expected: object) -> None:
    if expected == analyzer_errors.RUNS:
        timeweave.sql(peers, query)  # analysed (columns, types, variables) without running a job
        return
    assert isinstance(expected, analyzer_errors.Error)
    with pytest.raises(QuerySyntaxError) as info:  # PatternValidationError is one too
        timeweave.sql(peers, query)
    message = str(info.value)
    assert re.search(expected.pattern, message), message
    assert 0 <= info.value.position < len(query), message  # positioned in the query as written


def test_a_define_condition_must_be_boolean(peers) -> None:
    query = "SELECT * FROM table1 MATCH_RECOGNIZE (ORDER BY time MEASURES A.s1 AS c PATTERN (A B+) DEFINE B AS B.s2)"
    with pytest.raises(QuerySyntaxError, match="the condition defining B must be boolean, not bigint") as info:
        timeweave.sql(peers, query)
    assert info.value.position == query.index("B.s2)")
    # NULL is a (never true) predicate, as in Trino and ydb's suite
    assert timeweave.sql(peers, query.replace("B AS B.s2", "B AS NULL")).collect() == []


def test_current_timestamp_is_one_value_per_query(peers) -> None:
    query = ("SELECT m.n FROM (VALUES (1, TIMESTAMP '2000-01-01 00:00:00'), (2, TIMESTAMP '2999-01-01 00:00:00')) "
             "t(id, ts) MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n, CURRENT_DATE AS d PATTERN (A+) "
             "DEFINE A AS A.ts < CURRENT_TIMESTAMP) AS m")
    assert [tuple(r) for r in timeweave.sql(peers, query).collect()] == [(1,)]
