"""Flink's DataStream window model, engine-free: assigners, triggers, evictors, window functions and the keyed
window operator, on the keyed-operator contract (:mod:`timeweave.core.operator`).

=================  ============================================================================================
module             what
=================  ============================================================================================
``assigners``      ``Tumbling``, ``Sliding``, ``Session`` (static gap or per-element gap function), ``Global``;
                   event or processing time; offsets (the window TVF's ``window_start`` and session helpers)
``triggers``       ``TriggerResult``, ``TriggerContext`` (timers, clocks, per-window partitioned state merged on
                   merge), the built-ins (``EventTime``, ``ProcessingTime``, ``Count``, ``Purging``,
                   ``ContinuousEventTime``, ``Never``, ``EventTime().with_early(Count(n))``) and the ``Trigger``
                   base for user triggers
``evictors``       ``Count``, ``Time``, ``Delta`` (before or after the function), ``TimestampedValue``
``functions``      ``reduce``, ``aggregate`` (``AggregateFunction``), ``process`` (``ProcessWindowFunction`` with
                   its ``ProcessContext``), and reduce/aggregate followed by process
``timers``         a key's event-time or processing-time timers, as state
``operator``       ``WindowOperator`` (Flink's ``WindowOperator`` / ``EvictingWindowOperator``: merging windows,
                   allowed lateness, late output, dead letters, ``Firing`` records) and ``window_all``
``changelog``      ``WindowChangelog``: the firings as a retract / upsert changelog through the one encoder
                   (:mod:`timeweave.core.updates.encoder`): a window refined by early or late firings updates its
                   row, a session merge deletes the rows it absorbed, a purge starts a new pane
=================  ============================================================================================

No pyspark here: a host (the in-memory reference, :func:`timeweave.core.operator.run_keyed`; Spark's
``transformWithState`` host later) runs the operator.

>>> from timeweave.core.datastream import Tumbling, WindowOperator, reduce
>>> WindowOperator(Tumbling.of("5 s"), reduce(max), time_column="t").layout.names[:2]
('ds-key', 'ds-windows')
"""

from timeweave.core.datastream.assigners import GLOBAL_WINDOW, Global, Session, Sliding, Tumbling, max_timestamp
from timeweave.core.datastream.changelog import WindowChangelog
from timeweave.core.datastream.evictors import Evictor, TimestampedValue
from timeweave.core.datastream.functions import (
    AggregateFunction,
    ProcessContext,
    ProcessWindowFunction,
    WindowFunction,
    aggregate,
    process,
    reduce,
)
from timeweave.core.datastream.operator import (
    DeadLetter,
    Firing,
    FiringKind,
    LateElement,
    StateValueError,
    WindowOperator,
    window_all,
)
from timeweave.core.datastream.triggers import Trigger, TriggerContext, TriggerResult, TriggerState

__all__ = [
    "GLOBAL_WINDOW",
    "AggregateFunction",
    "DeadLetter",
    "Evictor",
    "Firing",
    "FiringKind",
    "Global",
    "LateElement",
    "ProcessContext",
    "ProcessWindowFunction",
    "Session",
    "Sliding",
    "StateValueError",
    "TimestampedValue",
    "Trigger",
    "TriggerContext",
    "TriggerResult",
    "TriggerState",
    "Tumbling",
    "WindowChangelog",
    "WindowFunction",
    "WindowOperator",
    "aggregate",
    "max_timestamp",
    "process",
    "reduce",
    "window_all",
]
