"""Session merging (Flink's MergingWindowSet): one gap apart merges, bridging, order does not matter in batch."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from timeweave.core.windows import Window, add_window, session_window, sessionize
from timeweave.core.windows.sessions import intersects


def test_exactly_one_gap_apart_merges() -> None:
    assert sessionize([0, 5], gap=5) == [Window(0, 10)]
    assert sessionize([0, 6], gap=5) == [Window(0, 5), Window(6, 11)]
    assert intersects(session_window(0, 5), session_window(5, 5))


def test_bridging_two_sessions() -> None:
    sessions = [[0, 5, "a"], [10, 15, "b"], [30, 35, "c"]]
    merged, lo, hi = add_window(sessions, session_window(5, 5))  # touches both [0, 5) and [10, 15)
    assert (merged, lo, hi) == (Window(0, 15), 0, 2)
    merged, lo, hi = add_window(sessions, session_window(20, 5))  # between, touching neither
    assert (merged, lo, hi) == (Window(20, 25), 2, 2)
    merged, lo, hi = add_window(sessions, session_window(-10, 40))  # covers everything
    assert (merged, lo, hi) == (Window(-10, 35), 0, 3)
    assert sessions == [[0, 5, "a"], [10, 15, "b"], [30, 35, "c"]]  # not modified


def test_docs_example() -> None:
    # Flink's docs, SESSION(TABLE Bid PARTITION BY supplier_id, ..., INTERVAL '2' MINUTES): minutes of supplier1
    assert sessionize([5, 7, 13], gap=2) == [Window(5, 9), Window(13, 15)]
    assert sessionize([9, 11, 17], gap=2) == [Window(9, 13), Window(17, 19)]


def _reference(times: list[int], gap: int) -> list[Window]:
    """Sessions from the definition: sort, cut where the next row is more than a gap after the previous."""
    out: list[Window] = []
    for t in sorted(times):
        if out and t <= out[-1].end:
            out[-1] = Window(out[-1].start, max(out[-1].end, t + gap))
        else:
            out.append(Window(t, t + gap))
    return out


@given(st.lists(st.integers(-100, 100), max_size=30), st.integers(1, 15), st.randoms(use_true_random=False))
def test_any_arrival_order_gives_the_same_sessions(times, gap, rnd: random.Random) -> None:
    shuffled = times[:]
    rnd.shuffle(shuffled)
    assert sessionize(shuffled, gap) == sessionize(times, gap) == _reference(times, gap)
