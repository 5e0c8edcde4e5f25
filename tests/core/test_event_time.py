"""The event-time range and its one conversion rule to Spark's ms watermarks and timers, at both ends (no JVM)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from timeweave.core.event_time import (
    END_OF_INPUT_MS,
    FIRST_TIMER_MS,
    MAX_TIME_US,
    MIN_TIME_US,
    end_of_input_ms,
    spark_timer_ms,
    watermark_as_time,
    watermark_us,
)
from timeweave.core.state import END_OF_TIME, NO_WATERMARK

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _us(*args: int) -> int:
    return (datetime(*args, tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1)


#: Core times across TIMESTAMP's whole range: both ends, the epoch and its neighbours, the issue's rows.
TIMES = [
    MIN_TIME_US, MIN_TIME_US + 1, _us(1, 1, 1, 0, 0, 0, 999), _us(1900, 1, 1), _us(1969, 12, 31, 23, 59, 59, 999999),
    -1_000, -999, -1, 0, 1, 999, 1_000, 1_001, _us(2026, 1, 1, 2), _us(9999, 12, 31),
    _us(9999, 12, 31, 12), _us(9999, 12, 31, 23, 59, 59, 998999), _us(9999, 12, 31, 23, 59, 59, 999000),
    MAX_TIME_US - 1, MAX_TIME_US,
]
DELAYS_MS = [0, 1, 5_000, 86_400_000]


def test_the_range_is_timestamps_whole_range() -> None:
    assert MIN_TIME_US == _us(1, 1, 1) == -62_135_596_800_000_000
    assert MAX_TIME_US == _us(9999, 12, 31, 23, 59, 59, 999999) == 253_402_300_799_999_999
    assert END_OF_INPUT_MS == MAX_TIME_US // 1000 + 1  # 10000-01-01 00:00:00.000: the flush, past every row
    assert NO_WATERMARK < MIN_TIME_US and MAX_TIME_US < END_OF_TIME


@pytest.mark.parametrize("delay_ms", DELAYS_MS)
@pytest.mark.parametrize("time_us", TIMES)
def test_a_fired_timer_always_finds_its_time_passed(time_us: int, delay_ms: int) -> None:
    """Spark fires a timer once its watermark (ms) reaches it; the core must then see the time as passed, or
    the bucket's keys are not due, the same timer is asked for again and PySpark deletes it (rows lost)."""
    end_ms = end_of_input_ms(delay_ms)
    timer = spark_timer_ms(time_us, end_ms)
    assert FIRST_TIMER_MS <= timer <= end_ms  # never at 0 (Spark's "no watermark yet"), never past the end
    for watermark_ms in (timer, timer + 1, end_ms, end_ms + 1):
        if watermark_ms >= timer:
            assert watermark_us(watermark_ms, end_ms) >= time_us, (time_us, watermark_ms)


@pytest.mark.parametrize("time_us", TIMES)
def test_a_timer_never_fires_while_the_time_is_still_ahead(time_us: int) -> None:
    """One ms before a timer the watermark has not passed its time (no row leaves early), except at the lower
    clamp, where Spark's watermark is 0: none yet."""
    timer = spark_timer_ms(time_us)
    assert watermark_us(timer - 1) < time_us or timer - 1 == 0
    if timer - 1 == 0:
        assert watermark_us(0) == NO_WATERMARK


@pytest.mark.parametrize("delay_ms", DELAYS_MS)
@pytest.mark.parametrize("time_us", TIMES)
def test_no_row_time_is_the_end_of_input(time_us: int, delay_ms: int) -> None:
    """Issue 20: the flush heartbeat stood at TIMESTAMP's last ms, so a row at 9999-12-31 23:59:59.999xxx moved
    Spark's watermark (its ms minus the delay) to the end of input and closed the stream behind it."""
    end_ms = end_of_input_ms(delay_ms)
    row_watermark_ms = time_us // 1000 - delay_ms  # Spark: the largest event time seen (ms) minus the delay
    assert watermark_us(row_watermark_ms, end_ms) != END_OF_TIME
    assert watermark_us(end_ms, end_ms) == END_OF_TIME  # only the flush heartbeat's


def test_spark_timers_at_the_extremes() -> None:
    # Pre-1970 times (negative µs) get the first timer Spark can fire with a watermark set: 1 ms.
    assert spark_timer_ms(MIN_TIME_US) == spark_timer_ms(_us(1900, 1, 1)) == spark_timer_ms(-1) == 1
    assert spark_timer_ms(0) == spark_timer_ms(1) == spark_timer_ms(1_000) == 1
    assert spark_timer_ms(1_001) == 2
    # Times in the last ms, and within the watermark delay of the end, fire with the flush's watermark.
    assert spark_timer_ms(MAX_TIME_US) == END_OF_INPUT_MS
    assert spark_timer_ms(_us(9999, 12, 31, 23, 59, 59, 999001)) == END_OF_INPUT_MS
    assert spark_timer_ms(_us(9999, 12, 31, 23, 59, 59, 998001)) == END_OF_INPUT_MS - 1
    assert spark_timer_ms(_us(9999, 12, 31, 12), end_of_input_ms(86_400_000)) == end_of_input_ms(86_400_000)


def test_watermarks_at_the_extremes() -> None:
    assert watermark_us(0) == NO_WATERMARK  # Spark's watermark before the first batch ends
    assert watermark_us(-62_135_596_800_000) == NO_WATERMARK  # never reported by Spark; still "none"
    assert watermark_us(1) == 1_000
    assert watermark_us(END_OF_INPUT_MS - 1) == (END_OF_INPUT_MS - 1) * 1000
    assert watermark_us(END_OF_INPUT_MS) == END_OF_TIME  # the flush: every time up to MAX_TIME_US has passed
    assert watermark_us(END_OF_INPUT_MS + 1) == END_OF_TIME
    # With a delay the flush heartbeat's watermark is END_OF_INPUT_MS - delay: that is the end.
    end = end_of_input_ms(5_000)
    assert (watermark_us(end - 1, end), watermark_us(end, end)) == ((end - 1) * 1000, END_OF_TIME)
    assert end_of_input_ms(-3) == END_OF_INPUT_MS


def test_a_watermark_as_an_output_timestamp_stays_in_range() -> None:
    assert watermark_as_time(END_OF_TIME) == MAX_TIME_US
    assert watermark_as_time(NO_WATERMARK) == MIN_TIME_US
    assert [watermark_as_time(t) for t in TIMES] == TIMES
