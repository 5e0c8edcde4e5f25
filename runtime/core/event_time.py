"""Event time's range, and the one rule turning it into Spark's millisecond watermarks and timers and back.

The core counts event time in µs since the epoch (a Python int): TIMESTAMP's whole range,
0001-01-01 00:00:00 (:data:`MIN_TIME_US`) to 9999-12-31 23:59:59.999999 (:data:`MAX_TIME_US`), 1970 no
boundary.  Watermarks add two values outside that range: ``NO_WATERMARK`` (none yet) and
``END_OF_TIME`` (end of input: every time has passed), both in :mod:`timeweave.core.state`.

Spark's event-time watermark and timers are milliseconds, and Spark's watermark cannot reach either end:

* **Below 1970.**  Spark's watermark starts at 0 and only moves forward (``WatermarkTracker``), so 0
  means "none yet" and Spark never reports a pre-1970 watermark.  A Spark timer at or below 0 ms fires
  in the first batch, while the watermark still reads as none, so the handler finds nothing due and
  asks for the same timer again, and PySpark deletes the fired timer *after* the handler returns
  (``_handle_expired_timers``: ``handleExpiredTimer`` then ``delete_timer``).  The bucket was left
  without a Spark timer and its keys' buffered rows were never emitted, not even by the flush
  (measured: an order at 1900-01-01 among the sample orders, 8 of 10 written, late 0, dead letters 0;
  the order and its key's other order were lost).  So a Spark timer is never below 1 ms: the smallest
  watermark Spark reports that is one, and at it every pre-1970 time has passed.
* **The end.**  The streaming job's end-of-input (flush) heartbeat stands at :data:`END_OF_INPUT_MS`, one
  millisecond past TIMESTAMP's last value (10000-01-01 00:00:00.000 UTC, a time Spark's TIMESTAMP holds but
  no row can have), and moves the watermark to it minus the allowed delay (``end_ms``).  A watermark at or
  past ``end_ms`` is the end of input, ``END_OF_TIME``: every buffered row leaves, whatever its µs (a
  watermark of 9999-12-31 00:00 left a row at 12:00 of that day in state for ever).  The heartbeat once
  stood at TIMESTAMP's last millisecond itself, so a real row at 9999-12-31 23:59:59.999 (its .999xxx µs)
  moved the watermark there and was taken for the end of input: the stream closed behind it and later rows
  went late (issue 20).  No row's time reaches the sentinel now: such a row moves the watermark to
  9999-12-31 23:59:59.999 (minus the delay) like any other.  A Spark timer is never above ``end_ms``: a
  later one could never fire.

Rows are compared with the watermark by the core, in µs; these rules only decide when Spark wakes a
bucket up and what its watermark means, so they can make a row wait for a later watermark, never drop it.

>>> spark_timer_ms(MIN_TIME_US), spark_timer_ms(1_001), spark_timer_ms(MAX_TIME_US)
(1, 2, 253402300800000)
>>> watermark_us(0) == NO_WATERMARK, watermark_us(2), watermark_us(END_OF_INPUT_MS) == END_OF_TIME
(True, 2000, True)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from timeweave.core.state import END_OF_TIME, NO_WATERMARK

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: 0001-01-01 00:00:00 UTC in µs since the epoch: TIMESTAMP's first value.
MIN_TIME_US = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1)
#: 9999-12-31 23:59:59.999999 UTC in µs since the epoch: TIMESTAMP's last value.
MAX_TIME_US = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1)
#: The streaming job's end-of-input (flush) heartbeat in ms: one ms past TIMESTAMP's last value
#: (10000-01-01 00:00:00.000 UTC), so no row's event time can produce it (see "The end" above).
END_OF_INPUT_MS = MAX_TIME_US // 1000 + 1
#: The smallest Spark timer (ms): Spark's watermark 0 means "none yet" (see the module docstring).
FIRST_TIMER_MS = 1


def end_of_input_ms(delay_ms: int = 0) -> int:
    """The watermark (ms) the flush heartbeat produces on an input whose allowed delay is ``delay_ms``.

    With several inputs Spark's watermark is their minimum: pass the largest delay.

    >>> end_of_input_ms(0) == END_OF_INPUT_MS, END_OF_INPUT_MS - end_of_input_ms(5_000)
    (True, 5000)
    """
    return END_OF_INPUT_MS - max(delay_ms, 0)


def spark_timer_ms(time_us: int, end_ms: int = END_OF_INPUT_MS) -> int:
    """The Spark timer (ms) that fires once the watermark has passed core time ``time_us`` (µs).

    ``ceil(time_us / 1000)``, kept within ``[FIRST_TIMER_MS, end_ms]``: Spark fires a timer once its
    watermark (ms) reaches it, and :func:`watermark_us` of that watermark is at or past ``time_us``.

    >>> spark_timer_ms(1_000), spark_timer_ms(1_001), spark_timer_ms(-1_500), spark_timer_ms(0)
    (1, 2, 1, 1)
    >>> spark_timer_ms(MAX_TIME_US, end_of_input_ms(5_000)) == END_OF_INPUT_MS - 5_000
    True
    """
    return min(max(-(-time_us // 1000), FIRST_TIMER_MS), end_ms)


def watermark_us(watermark_ms: int, end_ms: int = END_OF_INPUT_MS) -> int:
    """Spark's watermark (ms) as the core's (µs): ``NO_WATERMARK`` at 0 or below (none yet),
    ``END_OF_TIME`` at or past ``end_ms`` (the flush heartbeat's, :func:`end_of_input_ms`), else ``ms * 1000``.

    >>> watermark_us(1577872800000), watermark_us(0) == NO_WATERMARK, watermark_us(-5) == NO_WATERMARK
    (1577872800000000, True, True)
    >>> watermark_us(END_OF_INPUT_MS - 1) == (END_OF_INPUT_MS - 1) * 1000, watermark_us(END_OF_INPUT_MS) == END_OF_TIME
    (True, True)
    """
    if watermark_ms <= 0:
        return NO_WATERMARK
    if watermark_ms >= end_ms:
        return END_OF_TIME
    return watermark_ms * 1000


def watermark_after(latest_us: int | None, delay_ms: int) -> int:
    """The core's watermark (µs) of a Spark stream that has read rows up to event time ``latest_us`` (None: no row
    yet) with a watermark ``delay_ms`` behind: Spark's ``max(event time in ms) - delay``, then :func:`watermark_us`.
    A backfill slice that stands for one micro-batch takes the watermark its stream would have.

    >>> watermark_after(1577872800123456, 5000), watermark_after(None, 5000) == NO_WATERMARK
    (1577872795123000, True)
    """
    if latest_us is None:
        return NO_WATERMARK
    return watermark_us(latest_us // 1000 - delay_ms)


def watermark_as_time(watermark: int) -> int:
    """A core watermark as a TIMESTAMP value (µs) for an output column: ``END_OF_TIME`` and ``NO_WATERMARK``
    become TIMESTAMP's last and first value (a late row's ``watermark`` column must be a readable timestamp).

    >>> watermark_as_time(END_OF_TIME) == MAX_TIME_US, watermark_as_time(NO_WATERMARK) == MIN_TIME_US, watermark_as_time(7)
    (True, True, 7)
    """
    return min(max(watermark, MIN_TIME_US), MAX_TIME_US)


__all__ = [
    "END_OF_INPUT_MS",
    "FIRST_TIMER_MS",
    "MAX_TIME_US",
    "MIN_TIME_US",
    "end_of_input_ms",
    "spark_timer_ms",
    "watermark_after",
    "watermark_as_time",
    "watermark_us",
]
