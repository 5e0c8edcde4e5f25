"""TIMESTAMP_LTZ windows on a session time zone's wall clock (Flink's TimeWindowUtil), daylight saving included."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from timeweave.core.errors import SpecError
from timeweave.core.state import InMemoryKeyContext
from timeweave.core.windows import (
    AggregateCall,
    CountStar,
    TimeShift,
    Window,
    WindowAggregateOperator,
    evaluate,
    tumble,
)

CALLS = [AggregateCall(CountStar(), name="n")]


def utc(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def test_flinks_daylight_saving_vectors() -> None:
    la = TimeShift.of("America/Los_Angeles")
    # Flink's comments in TimeWindowUtil.toEpochMillsForTimer, America/Los_Angeles, 2021
    assert la.fire_time(utc("2021-03-14 02:00:00")) == 1615716000000  # skipped hour: the first instant after it
    assert la.fire_time(utc("2021-03-14 02:59:59")) == 1615716000000
    assert la.fire_time(utc("2021-03-14 01:00:00")) == 1615712400000
    assert la.fire_time(utc("2021-11-07 01:00:00")) == 1636275600000  # repeated hour: its second occurrence
    assert la.fire_time(utc("2021-11-07 00:00:00")) == 1636268400000
    assert la.fire_time(utc("2021-11-07 02:00:00")) == 1636279200000
    assert la.local(1636272000000) == la.local(1636275600000) == utc("2021-11-07 01:00:00")  # 01:00 twice


def test_shanghai_days() -> None:
    """A 1-day TUMBLE over TIMESTAMP_LTZ in Asia/Shanghai: local days, fired at local midnight's instant."""
    op = WindowAggregateOperator(tumble("1 day"), CALLS, time_column="t", time_zone="Asia/Shanghai")
    ctx = InMemoryKeyContext()
    rows = [{"t": utc("2024-01-01 15:59:59.999")}, {"t": utc("2024-01-01 16:00:00")}]  # 23:59:59.999 / 00:00 local
    assert op.process_elements(ctx, rows) == []
    assert ctx.timers() == [utc("2024-01-01 15:59:59.999") * 1000]  # local 2024-01-01 23:59:59.999
    ctx.current_watermark = utc("2024-01-01 15:59:59.999") * 1000
    [first] = op.on_watermark(ctx)
    assert first.window == Window(utc("2024-01-01 00:00:00"), utc("2024-01-02 00:00:00")) and first.values == (1,)
    [second] = op.finish(ctx)
    assert second.window == Window(utc("2024-01-02 00:00:00"), utc("2024-01-03 00:00:00"))
    # the same rows with a UTC time attribute and offset -8 h: the same days, as UTC instants
    batch = evaluate(tumble("1 day", "-8 hours"), CALLS, rows, time_column="t")
    assert [r.window.start + 8 * 3_600_000 for _, r in batch.rows] == [first.window.start, second.window.start]
    shifted = evaluate(tumble("1 day"), CALLS, rows, time_column="t", time_zone="Asia/Shanghai")
    assert [r.window for _, r in shifted.rows] == [first.window, second.window]


def test_the_repeated_hour_fires_once_with_both_hours_rows() -> None:
    op = WindowAggregateOperator(tumble("1 hour"), CALLS, time_column="t", time_zone="America/Los_Angeles")
    ctx = InMemoryKeyContext()
    op.process_elements(ctx, [{"t": utc("2021-11-07 08:30:00")}])  # 01:30 PDT
    ctx.current_watermark = utc("2021-11-07 09:00:00") * 1000  # 01:00 PST: the local hour 01:00 comes again
    assert op.on_watermark(ctx) == []
    assert op.process_elements(ctx, [{"t": utc("2021-11-07 09:30:00")}]) == []  # 01:30 PST: not late
    ctx.current_watermark = utc("2021-11-07 09:59:59.999") * 1000
    [window] = op.on_watermark(ctx)
    assert window.window == Window(utc("2021-11-07 01:00:00"), utc("2021-11-07 02:00:00")) and window.values == (2,)
    late = op.process_elements(ctx, [{"t": utc("2021-11-07 09:45:00")}])
    assert [(x.time, x.missed) for x in late] == [(utc("2021-11-07 01:45:00"), (window.window,))]


def test_no_zone_and_bad_zones() -> None:
    assert TimeShift.of(None) is None and TimeShift.of("UTC") is None
    with pytest.raises(SpecError, match="unknown time zone 'Nowhere/Land'"):
        WindowAggregateOperator(tumble(10), CALLS, time_column="t", time_zone="Nowhere/Land")
