"""Every query of Trino's ``TestAggregationsInRowPatternMatching``, verbatim, through ``timeweave.sql``.

The cases and Trino's published results live in :mod:`tests.helpers.mr_suites.trino_aggregations` (33
queries: 32 run here; ``testSeek`` is Trino's row-pattern WINDOW form, which Spark SQL's grammar has no place
for, and is listed in ``SKIPPED``).  Rows are compared as a multiset, as Trino's ``QueryAssertions.matches``
does; arrays compare element by element in order.  The column types are Trino's too (Trino's
``matches`` compares them): BIGINT sums and counts, DOUBLE averages, INTEGER MAX of an INTEGER column.
"""

from __future__ import annotations

from collections import Counter

import pytest

import timeweave
from tests.helpers.mr_suites import trino_aggregations as trino

pytestmark = pytest.mark.spark


def _hashable(row: tuple) -> tuple:
    # arrays come back as lists; a tuple keeps their order and makes the row countable
    return tuple(tuple(v) if isinstance(v, list) else v for v in row)


@pytest.mark.parametrize(("name", "query", "expected"), trino.CASES, ids=[c[0] for c in trino.CASES])
def test_trino_aggregations_in_row_pattern_matching(spark, name: str, query: str, expected: list[tuple]) -> None:
    df = timeweave.sql(spark, query)
    assert tuple(f.dataType.simpleString() for f in df.schema.fields) == trino.TYPES[name], df.schema
    got = [tuple(r) for r in df.collect()]
    assert Counter(map(_hashable, got)) == Counter(map(_hashable, expected)), f"{name}: {got}"


def test_every_query_of_the_suite_is_run_or_skipped_with_a_reason() -> None:
    names = [c[0] for c in trino.CASES]
    assert len(set(names)) == len(names)
    assert not set(trino.SKIPPED) & set(names)
    assert all(why for _, _, why in trino.SKIPPED.values())
    assert set(trino.TYPES) == set(names)
    assert len(names) + len(trino.SKIPPED) == 33  # every assertions.query(...) of the Trino class
    for name, (theirs, why) in trino.DIFFERENCES.items():
        assert name in names and theirs != next(c[2] for c in trino.CASES if c[0] == name) and why


def test_the_skipped_window_form_is_refused_before_any_job(spark) -> None:
    # Spark's parser rejects Trino's `measure OVER w` with MEASURES/PATTERN in WINDOW; if it (or ours) ever
    # accepts it, the case belongs in CASES
    query = trino.SKIPPED["testSeek"][0]
    with pytest.raises(Exception, match=r"PARSE_SYNTAX_ERROR"):
        timeweave.sql(spark, query)
