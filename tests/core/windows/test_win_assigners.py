"""Assigners and slices: each row's windows (offsets, negative offsets, before 1970), slices shared by windows."""

from __future__ import annotations

from datetime import datetime
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from timeweave.core.windows import Slicing, Window, cumulate, event_time_ms, hop, tumble, window_start
from timeweave.core.windows.late import format_ms

MIN = 60_000
HOUR = 60 * MIN


def _ms(text: str) -> int:
    return event_time_ms(datetime.fromisoformat(text))


def _windows(spec, text: str) -> list[tuple[str, str]]:
    return [(format_ms(w.start), format_ms(w.end)) for w in Slicing.of(spec).windows_of(_ms(text))]


def test_tumble() -> None:
    assert _windows(tumble(10 * MIN), "2020-04-15 08:05:00") == [("2020-04-15 08:00:00.000", "2020-04-15 08:10:00.000")]
    # [start, end): a row at the end belongs to the next window
    assert _windows(tumble(10 * MIN), "2020-04-15 08:10:00") == [("2020-04-15 08:10:00.000", "2020-04-15 08:20:00.000")]
    assert _windows(tumble(10 * MIN), "2020-04-15 08:09:59.999") == [("2020-04-15 08:00:00.000", "2020-04-15 08:10:00.000")]


def test_tumble_offsets_as_flink_documents() -> None:
    # Flink's docs: a record at 2021-06-30 00:00:04, TUMBLE of 10 minutes
    expect = {-6: ("2021-06-29 23:54:00.000", "2021-06-30 00:04:00.000"),
              -4: ("2021-06-29 23:56:00.000", "2021-06-30 00:06:00.000"),
              0: ("2021-06-30 00:00:00.000", "2021-06-30 00:10:00.000"),
              4: ("2021-06-29 23:54:00.000", "2021-06-30 00:04:00.000"),
              6: ("2021-06-29 23:56:00.000", "2021-06-30 00:06:00.000")}
    for offset, window in expect.items():
        assert _windows(tumble(10 * MIN, offset * MIN), "2021-06-30 00:00:04") == [window], offset


def test_one_day_in_utc_plus_8() -> None:
    # a day in UTC+8 is [16:00 the day before, 16:00) in UTC
    assert _windows(tumble("1 day", "-8 hours"), "2024-01-01 15:59:59.999") == [("2023-12-31 16:00:00.000", "2024-01-01 16:00:00.000")]
    assert _windows(tumble("1 day", "-8 hours"), "2024-01-01 16:00:00") == [("2024-01-01 16:00:00.000", "2024-01-02 16:00:00.000")]


def test_before_1970() -> None:
    assert _windows(tumble(HOUR), "1969-12-31 23:30:00") == [("1969-12-31 23:00:00.000", "1970-01-01 00:00:00.000")]
    assert window_start(-1, 0, 10) == -10 and window_start(-10, 0, 10) == -10


def test_hop() -> None:
    assert _windows(hop(5 * MIN, 10 * MIN), "2020-04-15 08:07:00") == [
        ("2020-04-15 08:00:00.000", "2020-04-15 08:10:00.000"), ("2020-04-15 08:05:00.000", "2020-04-15 08:15:00.000")]
    assert _windows(hop(5 * MIN, 10 * MIN, offset=MIN), "2020-04-15 08:07:00") == [
        ("2020-04-15 08:01:00.000", "2020-04-15 08:11:00.000"), ("2020-04-15 08:06:00.000", "2020-04-15 08:16:00.000")]
    assert _windows(hop(5 * MIN, 10 * MIN, offset=-MIN), "2020-04-15 08:07:00") == [
        ("2020-04-15 07:59:00.000", "2020-04-15 08:09:00.000"), ("2020-04-15 08:04:00.000", "2020-04-15 08:14:00.000")]


def test_cumulate() -> None:
    assert _windows(cumulate(2 * MIN, 10 * MIN), "2020-04-15 08:05:00") == [
        ("2020-04-15 08:00:00.000", f"2020-04-15 08:{m:02d}:00.000") for m in (6, 8, 10)]
    # periods start at 07:57, 08:07...; steps end at odd minutes: 08:05 is in the period's last step
    assert _windows(cumulate(2 * MIN, 10 * MIN, offset=-3 * MIN), "2020-04-15 08:05:00") == [
        ("2020-04-15 07:57:00.000", "2020-04-15 08:07:00.000")]
    assert _windows(cumulate(2 * MIN, 10 * MIN, offset=-3 * MIN), "2020-04-15 08:07:00") == [
        ("2020-04-15 08:07:00.000", f"2020-04-15 08:{m:02d}:00.000") for m in (9, 11, 13, 15, 17)]


def _brute_force(spec, t: int) -> list[Window]:
    """Windows holding t, from the definitions (no slices): every window start near t, checked."""
    if spec.kind == "TUMBLE":
        starts = range(t - 2 * spec.size, t + 1)
        return [Window(s, s + spec.size) for s in starts if (s - spec.offset) % spec.size == 0 and s <= t < s + spec.size]
    if spec.kind == "HOP":
        starts = range(t - spec.size, t + 1)
        return [Window(s, s + spec.size) for s in starts if (s - spec.offset) % spec.slide == 0 and s <= t < s + spec.size]
    period_start = t - (t - spec.offset) % spec.max_size
    return [Window(period_start, e) for e in range(period_start + spec.step, period_start + spec.max_size + 1, spec.step) if t < e]


SPECS = st.one_of(
    st.builds(lambda size, k: tumble(size, k % size - size // 2), st.integers(1, 40), st.integers(0, 1000)),
    st.builds(lambda slide, n, off: hop(slide, slide * n, off), st.integers(1, 12), st.integers(1, 5), st.integers(-50, 50)),
    st.builds(lambda step, n, off: cumulate(step, step * n, off), st.integers(1, 12), st.integers(1, 5), st.integers(-50, 50)),
)


@given(SPECS, st.integers(-500, 500))
def test_windows_of_is_the_definition(spec, t) -> None:
    slicing = Slicing.of(spec)
    windows = slicing.windows_of(t)
    assert windows == sorted(_brute_force(spec, t), key=lambda w: w.end)
    assert len(windows) <= spec.windows_per_row
    assert all(w.contains(t) for w in windows)


@given(SPECS, st.integers(-500, 500))
def test_a_window_is_exactly_its_slices(spec, t) -> None:
    """Slice sharing: a row updates one slice, and each of its windows is made of slices including that one;
    the slices of a window tile it exactly."""
    slicing = Slicing.of(spec)
    s = slicing.slice_end(t)
    assert s - slicing.slice_size <= t < s
    for window in slicing.windows_of(t):
        slices = slicing.slices_of(window.end)
        assert s in slices
        assert slices[0] - slicing.slice_size == window.start and slices[-1] == window.end
        assert all(b - a == slicing.slice_size for a, b in pairwise(slices))
    assert [w.end for w in slicing.windows_of(t)] == list(slicing.window_ends(s))
    assert slicing.last_window_end(s) == slicing.windows_of(t)[-1].end


def test_hop_costs_one_slice_per_row() -> None:
    slicing = Slicing.of(hop(MIN, 60 * MIN))
    assert slicing.slice_size == MIN and slicing.shared
    assert len(slicing.windows_of(_ms("2020-04-15 08:05:00"))) == 60  # 60 windows, one slice
    assert len(slicing.slices_of(_ms("2020-04-15 09:00:00"))) == 60
    assert not Slicing.of(tumble(MIN)).shared
