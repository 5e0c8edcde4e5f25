"""TIMESTAMP_LTZ windows on a session time zone's wall clock (Flink's TimeWindowUtil), daylight saving included."""

from __future__ import annotations

import random
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
    hop,
    session,
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


# -- fixed offsets (Spark's spark.sql.session.timeZone takes them: java.time.ZoneId.of's spellings) --------------
@pytest.mark.parametrize(("spelled", "name", "seconds"), [
    ("+08:00", "+08:00", 8 * 3600), ("-05:30", "-05:30", -(5 * 3600 + 1800)), ("UTC+8", "+08:00", 8 * 3600),
    ("GMT-03:00", "-03:00", -3 * 3600), ("+8", "+08:00", 8 * 3600), ("-0930", "-09:30", -(9 * 3600 + 1800)),
    ("UT+01", "+01:00", 3600), ("+8:00", "+08:00", 8 * 3600), ("+08:3", "+08:03", 8 * 3600 + 180),
    ("-13:33:33", "-13:33:33", -(13 * 3600 + 33 * 60 + 33)), ("+183000", None, None), ("+18:00", "+18:00", 18 * 3600),
])
def test_fixed_offsets_in_each_spelling(spelled: str, name: str | None, seconds: int | None) -> None:
    if name is None:
        with pytest.raises(SpecError, match=r"argument 'time_zone': the offset '\+183000' is out of range"):
            TimeShift.of(spelled)
        return
    shift = TimeShift.of(spelled)
    assert shift == TimeShift(name, seconds * 1000)
    assert TimeShift.of(shift.zone) == shift  # the name it gives is a spelling it takes (Spark takes it too)


@pytest.mark.parametrize("zero", ["Z", "z", "UTC", "GMT", "UT", "+00:00", "-00:00", "UTC+0", "GMT-00:00", "+0"])
def test_offset_zero_is_no_shift(zero: str) -> None:
    assert TimeShift.of(zero) is None


@pytest.mark.parametrize("bad", ["+123", "UTC+", "++8", "08:00", "+08:0000", "UTC +8", "+8:0:0", "PST", "+08:00:0",
                                 "GMT+8x", ""])
def test_other_spellings_are_refused(bad: str) -> None:
    with pytest.raises(SpecError, match=r"argument 'time_zone': unknown time zone .* \(expected an IANA name such as "
                                        r"'Asia/Shanghai' or a fixed offset such as '\+08:00', 'UTC\+8'"):
        TimeShift.of(bad)
    with pytest.raises(SpecError, match=r"the offset '\+08:60' is out of range"):
        TimeShift.of("+08:60")
    with pytest.raises(SpecError, match=r"expected a time zone name, got 8"):
        TimeShift.of(8)  # type: ignore[arg-type]


@pytest.mark.parametrize(("offset", "iana"), [("+08:00", "Etc/GMT-8"), ("UTC-5", "Etc/GMT+5"), ("+14:00", "Etc/GMT-14")])
def test_a_fixed_offset_shifts_as_the_iana_zone_of_that_offset(offset: str, iana: str) -> None:
    """A constant shift: local, instant and fire_time agree with tzdata's fixed zone of the same offset, at any
    instant (no daylight saving: every wall-clock time exists once and fires at its own instant)."""
    fixed, zone = TimeShift.of(offset), TimeShift.of(iana)
    rng = random.Random(offset)
    for ms in [0, -1, 1, *(rng.randint(-10**13, 10**13) for _ in range(300))]:
        assert fixed.local(ms) == zone.local(ms)
        assert fixed.instant(ms) == zone.instant(ms) and fixed.fire_time(ms) == zone.fire_time(ms)
        assert fixed.instant(fixed.local(ms)) == ms


@pytest.mark.parametrize("spec", [tumble("1 day"), hop("6 hours", "1 day"), session("5 hours")],
                         ids=["tumble", "hop", "session"])
def test_windows_in_plus_eight_are_utc_windows_moved_by_eight_hours(spec) -> None:
    """The operator with '+08:00' (and its spelling 'UTC+8'): the windows of the rows' local times, fired at the
    instants of their ends; the same rows read 8 hours later in UTC give the same windows."""
    rng = random.Random(8)
    rows = sorted(({"t": utc("2024-01-01 00:00") + rng.randint(0, 3 * 86_400_000)} for _ in range(60)),
                  key=lambda r: r["t"])
    hours8 = 8 * 3_600_000
    for spelled in ("+08:00", "UTC+8"):
        shifted = evaluate(spec, CALLS, rows, time_column="t", time_zone=spelled)
        moved = evaluate(spec, CALLS, [{"t": r["t"] + hours8} for r in rows], time_column="t")
        assert [(r.window, r.values) for _, r in shifted.rows] == [(r.window, r.values) for _, r in moved.rows]
        op = WindowAggregateOperator(spec, CALLS, time_column="t", time_zone=spelled)
        ctx = InMemoryKeyContext()
        assert op.process_elements(ctx, rows) == []
        fired = []
        for r in rows:  # the watermark follows the rows: a window fires only once it reaches its end's instant
            ctx.current_watermark = (r["t"] - 1) * 1000
            for out in op.on_watermark(ctx):
                assert out.window.end - 1 - hours8 <= r["t"] - 1
                fired.append((out.window, out.values))
        fired += [(o.window, o.values) for o in op.finish(ctx)]
        assert sorted(fired) == sorted((r.window, r.values) for _, r in moved.rows)
