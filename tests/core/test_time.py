"""timeweave.core.time: the one slicing rule below every adapter, and the end of input the streaming job flushes with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from timeweave.core.errors import SpecError
from timeweave.core.event_time import END_OF_INPUT_MS, MAX_TIME_US
from timeweave.core.time import (
    END_OF_INPUT,
    END_OF_INPUT_US,
    consecutive_runs,
    micros,
    slice_label,
    slices_of,
    wanted_slices,
)


def test_slices_cover_the_range_without_gaps() -> None:
    start, end = datetime(1, 1, 1), datetime(1, 1, 1, 0, 0, 0, 7)
    plan = slices_of(start, end, 3)
    assert plan[0].start == start and plan[-1].end == end
    assert all(a.end == b.start for a, b in pairwise(plan))
    assert len({s.label for s in plan}) == 3  # µs-precise labels: narrow slices never collide
    with pytest.raises(SpecError, match="slices"):
        slices_of(start, end, 0)


def test_exact_micros_and_labels_across_the_calendar() -> None:
    aware = datetime(2020, 1, 1, 1, tzinfo=UTC) + timedelta(microseconds=1)
    assert micros(aware) == micros(datetime(2020, 1, 1, 1)) + 1 == 1577840400000001
    assert micros(datetime(9999, 12, 31, 23, 59, 59, 999999)) == MAX_TIME_US
    assert slice_label(datetime(1, 1, 1, 0, 0, 0, 5)) == "0001-01-01T00-00-00.000005"


def test_end_of_input_is_the_flush_heartbeat() -> None:
    assert END_OF_INPUT_US == END_OF_INPUT_MS * 1000 > MAX_TIME_US  # past every row's time
    assert repr(END_OF_INPUT) == "END_OF_INPUT" and not isinstance(END_OF_INPUT, datetime)  # a flag, not a time
    from timeweave.jobs.streaming import END_OF_INPUT as JOB_END

    assert JOB_END is END_OF_INPUT  # the job flushes with the core's, not a copy


def test_wanted_slices_and_runs() -> None:
    plan = slices_of(datetime(2020, 1, 1), datetime(2020, 1, 2), 5)
    assert wanted_slices(plan, [4, 1, 2]) == [1, 2, 4]
    assert consecutive_runs([1, 2, 4], 5) == [[1, 2], [4]]
    with pytest.raises(SpecError, match=r"slice indexes \['x', True\] are not in 0..4"):
        wanted_slices(plan, [True, "x"])
