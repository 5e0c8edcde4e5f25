"""Idle-state retention on the event-time clock: one reusable piece for every keyed operator.

Flink drops a key's state once the key has been idle for a while (``table.exec.state.ttl``, and the
``minRetentionTime`` / ``maxRetentionTime`` pair of its temporal join, ``registerProcessingCleanupTimer``).
timeweave does the same on event time (:class:`~timeweave.core.spec.StateRetention`): every element pushes the
key's cleanup time to ``watermark + max_idle`` unless it is already beyond ``watermark + min_idle`` (so a busy
key does not rewrite its timer per element); when the watermark reaches the cleanup time the operator drops
the key's state, unless the key still holds rows that wait for the watermark (then it is not idle).

The cleanup time is a state value and an event-time timer of the key; a key has one timer per instant
(Flink and Spark both), so a timer the operator also uses for another purpose (``shared``) is kept when the
cleanup time moves away from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from timeweave.core.spec import StateRetention
from timeweave.core.state import NO_WATERMARK, KeyContext

#: The state name of the cleanup time (the temporal join's since its first release: checkpoints keep it).
CLEANUP = "cleanup-timestamp"


@dataclass(frozen=True, slots=True)
class IdleRetention:
    """A key's idle-state cleanup timer.

    ``shared``: the state names of the operator's other timers (a timer at the same instant is kept).

    >>> from timeweave.core.state import InMemoryKeyContext
    >>> r = IdleRetention(StateRetention(min_idle=10, max_idle=20))
    >>> ctx = InMemoryKeyContext(current_watermark=100); r.touch(ctx); ctx.values, ctx.timers()
    ({'cleanup-timestamp': 120}, [120])
    >>> ctx.current_watermark = 105; r.touch(ctx); ctx.timers()   # 105 + 10 <= 120: kept
    [120]
    >>> ctx.current_watermark = 120; r.due(ctx)
    True
    """

    retention: StateRetention
    name: str = CLEANUP
    shared: Sequence[str] = ()

    def touch(self, ctx: KeyContext) -> None:
        """The key was active: push its cleanup time forward (nothing before the first watermark)."""
        now = ctx.watermark
        if now == NO_WATERMARK:
            return
        current = ctx.get(self.name)
        if current is None or now + self.retention.min_idle > current:
            if current is not None and all(current != ctx.get(other) for other in self.shared):
                ctx.delete_timer(current)
            cleanup = now + self.retention.max_idle
            ctx.register_timer(cleanup)
            ctx.put(self.name, cleanup)

    def due(self, ctx: KeyContext) -> bool:
        """Whether the watermark has reached the key's cleanup time."""
        cleanup = ctx.get(self.name)
        return cleanup is not None and cleanup <= ctx.watermark

    def expire(self, ctx: KeyContext, state: Sequence[str], *, busy: bool) -> None:
        """The cleanup time has come: drop ``state`` and every timer of the key, or, when the key is ``busy``
        (it holds rows still waiting for the watermark: it is not idle), only the cleanup time."""
        if busy:
            ctx.clear(self.name)
            return
        for name in (*state, self.name):
            ctx.clear(name)
        for timer in ctx.timers():
            ctx.delete_timer(timer)


__all__ = ["CLEANUP", "IdleRetention"]
