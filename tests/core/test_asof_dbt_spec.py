"""The dbt temporal-join macros' time and key checks (dbt_macros/macros/_timeweave_internal.sql, restated in Jinja
because dbt cannot import timeweave.core) accept, compute and reject what the core spec does: keyless tables, the
time domains of dbt-spark's type names, and the error for times of two domains.  No JVM, no dbt."""

from __future__ import annotations

import pytest

from tests.helpers.dbt_jinja import CompilerError, dbt_macros
from timeweave.core import spec as core
from timeweave.core.errors import SpecError

DBT = dbt_macros("_timeweave_internal.sql")

#: dbt-spark's spelling of Spark types (``Column.dtype``) -> the core's kind (what spark/schema.py's kind_of gives).
SPARK_TYPES = {
    "timestamp": core.TIMESTAMP, "timestamp_ntz": core.TIMESTAMP_NTZ, "date": core.DATE, "tinyint": core.INTEGER,
    "smallint": core.INTEGER, "int": core.INTEGER, "bigint": core.INTEGER, "decimal(32,4)": core.DECIMAL,
    "float": core.FLOATING, "double": core.FLOATING, "string": core.STRING, "boolean": core.BOOLEAN,
    "array<int>": "other", "binary": "other",
}


def _side(types: dict[str, str]) -> dict:
    return {"columns": list(types), "types": types, "sql": "t", "label": "side t"}


@pytest.mark.parametrize(("dtype", "kind"), SPARK_TYPES.items())
def test_dbt_time_domain_of_each_spark_type_is_the_cores(dtype, kind) -> None:
    assert DBT._kind_of(dtype) == kind
    core_domain = core.TIME_DOMAINS.get(kind)
    if core_domain is None:
        with pytest.raises(SpecError) as expected:
            core.time_domain_of({"t": kind}, "t", "time", "versioned")
        with pytest.raises(CompilerError) as found:
            DBT._time_domain(_side({"t": dtype}), "t", "time", "versioned")
        assert str(found.value) == str(expected.value)
    else:
        assert DBT._time_domain(_side({"t": dtype}), "t", "time", "versioned") == core_domain


@pytest.mark.parametrize(("left", "right"), [("date", "timestamp"), ("bigint", "date"), ("timestamp_ntz", "double"),
                                             ("decimal(10,2)", "int"), ("timestamp", "timestamp_ntz")])
def test_dbt_join_time_domain_agrees_with_the_core(left, right) -> None:
    left_kind, right_kind = DBT._kind_of(left), DBT._kind_of(right)
    spec = core.TemporalJoinSpec(core.VersionedTableSpec([], "since"), left_time="at")
    try:
        expected = spec.time_domain({"at": left_kind}, {"since": right_kind})
    except SpecError as error:
        with pytest.raises(CompilerError) as found:
            DBT._join_time_domain(_side({"at": left}), _side({"since": right}), "at", "since", "temporal_join")
        assert str(found.value) == str(error)
    else:
        assert DBT._join_time_domain(_side({"at": left}), _side({"since": right}), "at", "since", "temporal_join") == expected


@pytest.mark.parametrize("key", [[], None])
def test_dbt_takes_a_keyless_versioned_table(key) -> None:
    assert DBT._check_versioned(key, "t", "append", None, None, None) == []
    assert DBT._check_join_keys(key, "t", "append", None, None, None, None, "ts", "temporal_join") == {"versioned": [], "left": []}
    assert core.VersionedTableSpec(key, "t").key == ()
