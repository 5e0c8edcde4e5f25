"""Flink's ``TemporalJoinITCase`` and ``TemporalTableFunctionJoinITCase`` through ``timeweave.sql``.

:mod:`tests.helpers.tj_suites.flink_itcase`: Flink's event-time queries verbatim over its test data (Flink's DDL
through ``timeweave.sql``, changelogs as Debezium records), with Flink's results (where timeweave answers
otherwise, with Flink's rows and the reason in ``DIFFERENCES``); the processing-time tests are listed in
``SKIPPED`` with the reason; the cases timeweave cannot run yet (``LIMITS``) are strict expected failures.
"""

from __future__ import annotations

from collections import Counter

import pytest

import timeweave
from tests.helpers.tj_suites import flink_itcase
from timeweave.core.errors import QuerySyntaxError

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def flink_tables(spark, tmp_path_factory):
    flink_itcase.setup(spark, tmp_path_factory.mktemp("flink_temporal_join_itcase"))
    yield spark
    flink_itcase.teardown(spark)


def _case(name: str, statement: str, expected: list[tuple]) -> object:
    limit = flink_itcase.LIMITS.get(name)
    marks = [pytest.mark.xfail(raises=QuerySyntaxError, strict=True, reason=limit)] if limit else []
    return pytest.param(name, statement, expected, id=name, marks=marks)


@pytest.mark.parametrize(("name", "statement", "expected"), [_case(*c) for c in flink_itcase.CASES])
def test_flink_temporal_join_itcase(flink_tables, name: str, statement: str, expected: list[tuple]) -> None:
    flink_itcase.prepare(flink_tables, name)
    got = [tuple(r) for r in timeweave.sql(flink_tables, flink_itcase.select_of(statement)).collect()]
    assert Counter(got) == Counter(expected), f"{name}: {got}"


def test_flink_differences_and_skips_are_accounted_for() -> None:
    names = {c[0] for c in flink_itcase.CASES}
    assert len(names) == len(flink_itcase.CASES)
    assert set(flink_itcase.DIFFERENCES) <= names and not set(flink_itcase.SKIPPED) & names
    assert set(flink_itcase.LIMITS) <= names and not set(flink_itcase.LIMITS) & set(flink_itcase.DIFFERENCES)
    for name, (theirs, why) in flink_itcase.DIFFERENCES.items():
        assert theirs != next(c[2] for c in flink_itcase.CASES if c[0] == name) and why
    # every @TestTemplate of the two ITCases: 22 of TemporalJoinITCase, 5 of TemporalTableFunctionJoinITCase
    assert len(names) + len(flink_itcase.SKIPPED) == 27


def test_the_sink_wrapper_is_the_only_part_left_out() -> None:
    statement = next(c[1] for c in flink_itcase.CASES if c[0] == "testEventTimeTemporalJoin")
    assert statement.startswith("INSERT INTO rowtime_default_sink SELECT ")
    assert statement.endswith(" ON CONFLICT DO DEDUPLICATE")
    assert flink_itcase.select_of(statement) == statement[len("INSERT INTO rowtime_default_sink "):
                                                          -len(" ON CONFLICT DO DEDUPLICATE")]
