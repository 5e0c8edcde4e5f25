"""The keyed state and timer interface operators are written against (Flink's operator contract, small).

An operator sees one key at a time through a :class:`KeyContext`: named values it may read and
write, event-time timers it may register or delete, and the current watermark.  Adapters implement
the context: :class:`InMemoryKeyContext` here (unit tests, the pure reference), Spark's
``transformWithState`` handles in ``timeweave.spark.host.state``.  Values must be what
:mod:`timeweave.core.state_codec` stores: plain data and the core's state objects (never pickled).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

#: The watermark before any has been seen (Spark and Flink both start at the minimum).
NO_WATERMARK = -(2**63)
#: The watermark at end of input: every event time has passed (Flink's ``MAX_WATERMARK``).
END_OF_TIME = 2**63 - 1


class KeyContext(Protocol):
    """What an operator may touch while handling one key."""

    def get(self, name: str) -> Any | None: ...

    def put(self, name: str, value: Any) -> None: ...

    def clear(self, name: str) -> None: ...

    def register_timer(self, time: int) -> None: ...

    def delete_timer(self, time: int) -> None: ...

    def timers(self) -> list[int]: ...

    @property
    def watermark(self) -> int: ...

    # Optional: ``processing_time`` (µs, ``NO_WATERMARK`` when unset), the host's processing clock of the step;
    # read only by operators with processing-time timers (the DataStream window operator).


@dataclass
class InMemoryKeyContext:
    """A dict-backed :class:`KeyContext` for one key, with a timer set the harness fires."""

    values: dict[str, Any] = field(default_factory=dict)
    timer_set: set[int] = field(default_factory=set)
    current_watermark: int = NO_WATERMARK
    #: the host's processing time of the step (µs), for processing-time windows; NO_WATERMARK: unset
    current_processing_time: int = NO_WATERMARK

    def get(self, name: str) -> Any | None:
        return self.values.get(name)

    def put(self, name: str, value: Any) -> None:
        self.values[name] = value

    def clear(self, name: str) -> None:
        self.values.pop(name, None)

    def register_timer(self, time: int) -> None:
        self.timer_set.add(time)

    def delete_timer(self, time: int) -> None:
        self.timer_set.discard(time)

    def timers(self) -> list[int]:
        return sorted(self.timer_set)

    @property
    def watermark(self) -> int:
        return self.current_watermark

    @property
    def processing_time(self) -> int:
        return self.current_processing_time

    def is_empty(self) -> bool:
        return not self.values and not self.timer_set
