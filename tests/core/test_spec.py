"""Invalid specs fail at construction / bind time with errors naming the argument."""

from __future__ import annotations

import pytest

from timeweave.core.errors import SpecError
from timeweave.core.spec import StateRetention, TemporalJoinSpec, VersionedTableSpec

RIGHT = {"currency": "string", "rate": "numeric", "update_time": "timestamp", "op": "string"}
LEFT = {"order_id": "string", "currency": "string", "order_time": "timestamp"}


@pytest.mark.parametrize(
    ("kwargs", "argument", "text"),
    [
        ({"key": [], "time": "t"}, "key", "at least one key"),
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
    with pytest.raises(SpecError, match="must be a timestamp, found string"):
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
