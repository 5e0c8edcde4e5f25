"""Event-time windows, engine-free: Flink's window TVFs (TUMBLE, HOP, CUMULATE, SESSION) and window aggregation.

One concept per module:

* :mod:`~timeweave.core.windows.spec`: the window specs (frozen, validated with Flink's rules), :class:`Window`;
* :mod:`~timeweave.core.windows.slicing`: row time -> slice, window -> slices (HOP and CUMULATE share slices);
* :mod:`~timeweave.core.windows.sessions`: session merging (Flink's ``MergingWindowSet``);
* :mod:`~timeweave.core.windows.late`: the late rule and the late output's record;
* :mod:`~timeweave.core.windows.accumulators`: create / add / merge / result accumulators;
* :mod:`~timeweave.core.windows.operator`: the keyed streaming window-aggregate operator (KeyContext contract);
* :mod:`~timeweave.core.windows.batch`: batch window aggregation (all rows count);
* :mod:`~timeweave.core.windows.tvf_sql`: the TVF call as Flink's SQL writes it, parsed with positioned errors;
* :mod:`~timeweave.core.windows.aggregate_sql`: the window aggregation over a TVF the SQL door runs on slices;
* :mod:`~timeweave.core.windows.zones`: TIMESTAMP_LTZ windows on a session time zone's wall clock.
"""

from timeweave.core.windows.accumulators import (
    BUILT_IN,
    Accumulator,
    AggregateCall,
    Aggregates,
    Avg,
    Count,
    CountDistinct,
    CountStar,
    FunctionAccumulator,
    Max,
    Min,
    Sum,
)
from timeweave.core.windows.batch import Assigned, BatchResult, assign_windows, evaluate
from timeweave.core.windows.late import LateRow, is_fired, missed_windows, timer_us, watermark_ms
from timeweave.core.windows.operator import DeadLetter, WindowAggregateOperator, WindowRow
from timeweave.core.windows.sessions import add_window, session_window, sessionize
from timeweave.core.windows.slicing import Slicing
from timeweave.core.windows.spec import (
    AlignedSpec,
    CumulateSpec,
    HopSpec,
    SessionSpec,
    TumbleSpec,
    Window,
    WindowSpec,
    cumulate,
    duration_ms,
    event_time_ms,
    hop,
    session,
    tumble,
    window_start,
)
from timeweave.core.windows.tvf_sql import WindowTvf, find_window_tvfs
from timeweave.core.windows.zones import TimeShift

__all__ = [
    "BUILT_IN",
    "Accumulator",
    "AggregateCall",
    "Aggregates",
    "AlignedSpec",
    "Assigned",
    "Avg",
    "BatchResult",
    "Count",
    "CountDistinct",
    "CountStar",
    "CumulateSpec",
    "DeadLetter",
    "FunctionAccumulator",
    "HopSpec",
    "LateRow",
    "Max",
    "Min",
    "SessionSpec",
    "Slicing",
    "Sum",
    "TimeShift",
    "TumbleSpec",
    "Window",
    "WindowAggregateOperator",
    "WindowRow",
    "WindowSpec",
    "WindowTvf",
    "add_window",
    "assign_windows",
    "cumulate",
    "duration_ms",
    "evaluate",
    "event_time_ms",
    "find_window_tvfs",
    "hop",
    "is_fired",
    "missed_windows",
    "session",
    "session_window",
    "sessionize",
    "timer_us",
    "tumble",
    "watermark_ms",
    "window_start",
]
