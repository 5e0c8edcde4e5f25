"""Every query of Trino's ``TestRowPatternMatching``, verbatim, through ``timeweave.sql`` (the SQL door).

The cases and Trino's published results live in :mod:`tests.helpers.mr_suites.trino_row_pattern_matching`
(137 queries; the one deliberate difference is listed there with Trino's rows).  Rows are compared as a
multiset, as Trino's ``QueryAssertions.matches`` does; a query Trino fails must fail here with the same
condition.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

import timeweave
from tests.helpers.mr_suites import trino_row_pattern_matching as trino

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("name", "query", "expected"), trino.CASES, ids=[c[0] for c in trino.CASES])
def test_trino_row_pattern_matching(spark, name: str, query: str, expected: list[tuple] | trino.Error) -> None:
    if isinstance(expected, trino.Error):
        # Trino raises these while matching (AFTER MATCH SKIP landing on the match's first row / an absent
        # variable); Spark wraps the worker's exception, so the condition is checked on the message
        with pytest.raises(Exception) as info:
            timeweave.sql(spark, query).collect()
        assert re.search(expected.pattern, str(info.value)), str(info.value)[:2000]
        return
    got = [tuple(r) for r in timeweave.sql(spark, query).collect()]
    assert Counter(got) == Counter(expected), f"{name}: {got}"


def test_every_deliberate_difference_names_a_case() -> None:
    names = {c[0] for c in trino.CASES}
    for name, (theirs, why) in trino.DIFFERENCES.items():
        ours = next(c[2] for c in trino.CASES if c[0] == name)
        assert name in names and theirs != ours and why


def test_a_clause_that_reads_no_column_still_sees_every_row(spark) -> None:
    # Trino's testKillThread reads no input column; the DataFrame door used to ship zero-column batches,
    # which reach Python without rows (no match at all instead of one)
    df = spark.createDataFrame([(i,) for i in range(1, 6)], "c INT")
    out = timeweave.match_recognize(df, "MEASURES 'foo' AS foo, COUNT(*) AS n PATTERN ((Y?){2,}) DEFINE Y AS true")
    assert [tuple(r) for r in out.collect()] == [("foo", 5)]
