"""Invalid specs fail at construction / bind time with errors naming the argument."""

from __future__ import annotations

import pytest

from timeweave.core.errors import SpecError
from timeweave.core.spec import StateRetention, TemporalJoinSpec, VersionedTableSpec

RIGHT = {"currency": "string", "rate": "decimal", "update_time": "timestamp", "op": "string"}
LEFT = {"order_id": "string", "currency": "string", "order_time": "timestamp"}


@pytest.mark.parametrize(
    ("kwargs", "argument", "text"),
    [
        ({"key": "k", "time": ""}, "time", "required"),
        ({"key": "k", "time": "t", "format": "cdc"}, "format", "unknown format"),
        ({"key": "k", "time": "t", "format": "changelog"}, "op", "needs the op column"),
        ({"key": "k", "time": "t", "op": "op"}, "op", "only applies to format 'changelog'"),
        ({"key": "k", "time": "t", "delete_flag": "d"}, "delete_flag", "only applies to format 'upsert'"),
        ({"key": ["k", "k"], "time": "t"}, "key", "duplicate"),
        ({"key": "k", "time": "k"}, "time", "also a key"),
    ],
)
def test_versioned_spec_errors_name_the_argument(kwargs, argument, text) -> None:
    with pytest.raises(SpecError, match=text) as err:
        VersionedTableSpec(**kwargs)
    assert err.value.argument == argument


def test_bind_reports_unknown_and_mistyped_columns() -> None:
    with pytest.raises(SpecError, match="column 'ccy' not found") as err:
        VersionedTableSpec("ccy", "update_time").bind(RIGHT)
    assert err.value.argument == "key"
    with pytest.raises(SpecError, match="must be a timestamp, date or number \\(an orderable time\\), found string"):
        VersionedTableSpec("currency", "op").bind(RIGHT)
    spec = TemporalJoinSpec(VersionedTableSpec("currency", "update_time"), left_time="order_id")
    with pytest.raises(SpecError, match="'order_id' must be a timestamp") as err:
        spec.bind(LEFT, RIGHT)
    assert err.value.argument == "left_time"


def test_join_spec_errors() -> None:
    v = VersionedTableSpec("currency", "update_time")
    with pytest.raises(SpecError, match="unknown join type") as err:
        TemporalJoinSpec(v, left_time="order_time", how="full")
    assert err.value.argument == "how"
    with pytest.raises(SpecError, match="1 versioned key"):
        TemporalJoinSpec(v, left_time="order_time", left_key=["a", "b"])
    clash = TemporalJoinSpec(v, left_time="order_time", right_columns=["currency"])
    with pytest.raises(SpecError, match="exists on the left side too"):
        clash.bind(LEFT, RIGHT)
    assert TemporalJoinSpec(v, left_time="order_time", right_columns=["currency"], right_prefix="r_").bind(LEFT, RIGHT)
    with pytest.raises(SpecError, match="empty predicate"):
        TemporalJoinSpec(v, left_time="order_time", predicate="  ")


def test_retention_bounds() -> None:
    with pytest.raises(SpecError, match="max_idle"):
        StateRetention(10, 5)


def test_a_keyless_versioned_table_is_one_history() -> None:
    for key in (None, [], ()):
        spec = TemporalJoinSpec(VersionedTableSpec(key, "update_time"), left_time="order_time", right_prefix="r_")
        assert spec.keyless and spec.left_key == () and spec.unmatchable_left_columns == ("order_time",)
        assert spec.bind(LEFT, RIGHT) is spec
    with pytest.raises(SpecError, match="1 left key column\\(s\\) \\['currency'\\] for 0 versioned key") as err:
        TemporalJoinSpec(VersionedTableSpec([], "update_time"), left_time="order_time", left_key="currency")
    assert err.value.argument == "left_key"


@pytest.mark.parametrize(
    ("left", "right", "domain"),
    [("timestamp", "timestamp_ntz", "timestamp"), ("timestamp_ntz", "timestamp", "timestamp"), ("date", "date", "date"),
     ("integer", "decimal", "numeric"), ("floating", "integer", "numeric"), ("decimal", "decimal", "numeric")],
)
def test_any_orderable_time_in_one_domain(left, right, domain) -> None:
    spec = TemporalJoinSpec(VersionedTableSpec("currency", "since"), left_time="at")
    left_schema, right_schema = {"currency": "string", "at": left}, {"currency": "string", "since": right, "x": "string"}
    assert spec.bind(left_schema, right_schema).time_domain(left_schema, right_schema) == domain


@pytest.mark.parametrize(("left", "right"), [("date", "timestamp"), ("integer", "date"), ("timestamp_ntz", "floating")])
def test_mixed_time_domains_name_both_columns_and_kinds(left, right) -> None:
    spec = TemporalJoinSpec(VersionedTableSpec("currency", "since"), left_time="at")
    with pytest.raises(SpecError, match=f"left time 'at' \\({left}\\) and version time 'since' \\({right}\\) cannot be compared") as err:
        spec.bind({"currency": "string", "at": left}, {"currency": "string", "since": right})
    assert err.value.argument == "left_time"


@pytest.mark.parametrize("kind", ["string", "boolean", "other"])
def test_unorderable_times_are_refused_on_either_side(kind) -> None:
    spec = TemporalJoinSpec(VersionedTableSpec("currency", "since"), left_time="at")
    with pytest.raises(SpecError, match=f"column 'since' must be a timestamp, date or number .*found {kind}") as err:
        spec.bind({"currency": "string", "at": "date"}, {"currency": "string", "since": kind})
    assert err.value.argument == "time"
    with pytest.raises(SpecError, match=f"column 'at' must be a timestamp, date or number .*found {kind}") as err:
        spec.bind({"currency": "string", "at": kind}, {"currency": "string", "since": "date"})
    assert err.value.argument == "left_time"


def test_streaming_needs_keys_and_timestamps() -> None:
    keyless = TemporalJoinSpec(VersionedTableSpec([], "update_time"), left_time="order_time")
    with pytest.raises(SpecError, match="a streaming temporal join needs key columns") as err:
        keyless.check_streaming(LEFT, RIGHT)
    assert err.value.argument == "key"
    keyed = TemporalJoinSpec(VersionedTableSpec("currency", "since"), left_time="at")
    keyed.check_streaming({"currency": "string", "at": "timestamp_ntz"}, {"currency": "string", "since": "timestamp"})
    with pytest.raises(SpecError, match=r"column 'at' must be a timestamp in a streaming temporal join.*found integer") as err:
        keyed.check_streaming({"currency": "string", "at": "integer"}, {"currency": "string", "since": "integer"})
    assert err.value.argument == "left_time"
    with pytest.raises(SpecError, match=r"column 'since' must be a timestamp in a streaming.*found date") as err:
        keyed.check_streaming({"currency": "string", "at": "timestamp"}, {"currency": "string", "since": "date"})
    assert err.value.argument == "time"
