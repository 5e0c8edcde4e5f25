"""Window specs: durations, Flink's validation rules (errors name the argument), event times, windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from timeweave.core.errors import SpecError
from timeweave.core.windows import (
    CumulateSpec,
    HopSpec,
    SessionSpec,
    TumbleSpec,
    Window,
    cumulate,
    duration_ms,
    event_time_ms,
    hop,
    session,
    tumble,
)

MIN = 60_000


@pytest.mark.parametrize(("text", "ms"), [
    ("10 minutes", 10 * MIN), ("10 MINUTE", 10 * MIN), ("1 day", 86_400_000), ("-8 hours", -8 * 3_600_000),
    ("1.5 seconds", 1500), ("250 ms", 250), ("2 min", 2 * MIN), ("3s", 3000), (" 4 h ", 4 * 3_600_000),
    (timedelta(minutes=-3), -3 * MIN), (1234, 1234),
])  # fmt: skip
def test_durations(text, ms) -> None:
    assert duration_ms(text, "size") == ms


@pytest.mark.parametrize("bad", ["ten minutes", "10 fortnights", "", "1.0005 seconds", timedelta(microseconds=5), True, 1.5])
def test_bad_durations_name_the_argument(bad) -> None:
    with pytest.raises(SpecError) as error:
        duration_ms(bad, "gap", where="SESSION")
    assert error.value.argument == "gap"
    assert str(error.value).startswith("SESSION: argument 'gap': ")


@pytest.mark.parametrize(("build", "argument", "message"), [
    (lambda: tumble(0), "size", "must be greater than 0, but got size 0 ms"),
    (lambda: tumble("-1 minute"), "size", "must be greater than 0"),
    (lambda: tumble("10 minutes", "10 minutes"), "offset", "abs(offset) < size"),
    (lambda: tumble("10 minutes", "-11 minutes"), "offset", "abs(offset) < size"),
    (lambda: hop(0, 10), "slide", "must be greater than 0"),
    (lambda: hop(5, -10), "size", "must be greater than 0"),
    (lambda: hop("2 seconds", "5 seconds"), "size", "integral multiple of slide, but got size 5000 ms and slide 2000 ms"),
    (lambda: hop("10 minutes", "5 minutes"), "size", "integral multiple of slide"),  # slide > size
    (lambda: cumulate(0, 10), "step", "must be greater than 0"),
    (lambda: cumulate(2, 0), "max_size", "must be greater than 0"),
    (lambda: cumulate(3, 10), "max_size", "integral multiple of step"),
    (lambda: session(0), "gap", "must be greater than 0"),
    (lambda: session("-2 minutes"), "gap", "must be greater than 0"),
    (lambda: session(5, ("k", "k")), "partition_by", "named twice"),
    (lambda: SessionSpec(5, ["k"]), "partition_by", "tuple of column names"),
    (lambda: TumbleSpec(10.0), "size", "integer milliseconds"),
])  # fmt: skip
def test_flink_validation_rules(build, argument, message) -> None:
    with pytest.raises(SpecError) as error:
        build()
    assert error.value.argument == argument
    assert message in str(error.value)


def test_valid_specs() -> None:
    assert tumble("1 day", "-8 hours") == TumbleSpec(86_400_000, -28_800_000)
    assert hop("5 minutes", "10 minutes", "1 minute") == HopSpec(5 * MIN, 10 * MIN, MIN)
    assert hop(5, 5) == HopSpec(5, 5)  # slide == size: tumbling
    assert cumulate("2 minutes", "10 minutes") == CumulateSpec(2 * MIN, 10 * MIN)
    assert session("2 minutes", ["a", "b"]).partition_by == ("a", "b")
    # HOP and CUMULATE offsets beyond one period are accepted (Flink checks only TUMBLE's), as alignment
    assert hop(5, 10, offset=17).offset == 17
    with pytest.raises(AttributeError):
        tumble(10).size = 5  # frozen


def test_event_time_ms() -> None:
    assert event_time_ms(datetime(1970, 1, 1, 0, 0, 1, 999_999)) == 1999  # sub-ms digits cut (TIMESTAMP(3))
    assert event_time_ms(datetime(1969, 12, 31, 23, 59, 59, 999_500)) == -1  # floor, before 1970 too
    assert event_time_ms(datetime(1970, 1, 1, 8, tzinfo=timezone(timedelta(hours=8)))) == 0
    assert event_time_ms(datetime(2020, 4, 15, 8, 5, tzinfo=UTC)) == event_time_ms(datetime(2020, 4, 15, 8, 5))
    assert event_time_ms(None) is None
    with pytest.raises(SpecError, match="timestamp or integer epoch milliseconds"):
        event_time_ms("2020-04-15")


def test_window() -> None:
    w = Window(600_000, 1_200_000)
    assert w.time == 1_199_999 and w.contains(600_000) and not w.contains(1_200_000)
    assert sorted([Window(5, 10), Window(0, 10), Window(0, 5)]) == [Window(0, 5), Window(0, 10), Window(5, 10)]
