"""Event-time windows, engine-free: Flink's window TVFs (TUMBLE, HOP, CUMULATE, SESSION) and window aggregation.

One concept per module:

* :mod:`~runtime.core.windows.spec`: the window specs (frozen, validated with Flink's rules), :class:`Window`;
* :mod:`~runtime.core.windows.slicing`: row time -> slice, window -> slices (HOP and CUMULATE share slices);
* :mod:`~runtime.core.windows.sessions`: session merging (Flink's ``MergingWindowSet``);
* :mod:`~runtime.core.windows.late`: the late rule and the late output's record;
* :mod:`~runtime.core.windows.accumulators`: create / add / merge / result accumulators;
* :mod:`~runtime.core.windows.operator`: the keyed streaming window-aggregate operator (KeyContext contract);
* :mod:`~runtime.core.windows.batch`: batch window aggregation (all rows count);
* :mod:`~runtime.core.windows.tvf_sql`: the TVF call as Flink's SQL writes it, parsed with positioned errors;
* :mod:`~runtime.core.windows.zones`: TIMESTAMP_LTZ windows on a session time zone's wall clock.
"""

from runtime.core.windows.accumulators import (
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
from runtime.core.windows.batch import Assigned, BatchResult, assign_windows, evaluate
from runtime.core.windows.late import LateRow, is_fired, missed_windows, timer_us, watermark_ms
from runtime.core.windows.operator import DeadLetter, WindowAggregateOperator, WindowRow
from runtime.core.windows.sessions import add_window, session_window, sessionize
from runtime.core.windows.slicing import Slicing
from runtime.core.windows.spec import (
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
from runtime.core.windows.tvf_sql import WindowTvf, find_window_tvfs
from runtime.core.windows.zones import TimeShift

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
