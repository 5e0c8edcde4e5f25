"""The streaming job's control flow around Spark (no JVM): when the flush heartbeat is written, and stops.

Fake queries stand in for Spark's; what is checked is the order of events: the heartbeat is written only
after a query has read the available input (issue 20), and a stop request ends the run after the running
query without a flush.  The Spark-level behaviour is in test_streaming_flush.py / test_streaming_stop.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from timeweave.jobs import streaming as S


class FakeQuery:
    """A query that runs ``batches`` micro-batches, one per poll, then terminates (available_now) or idles."""

    def __init__(self, events: list[str], name: str, batches: int, terminates: bool) -> None:
        self.events, self.name, self.terminates = events, name, terminates
        self.batch, self.last, self.isActive = -1, batches - 1, True
        self.pause = 0  # polls before the next batch starts (a slow file listing)
        events.append(f"start {name}")

    def awaitTermination(self, timeout: float | None = None) -> bool:
        assert timeout is None or timeout > 0
        if self.pause:
            self.pause -= 1
        elif self.batch < self.last:
            self.batch += 1
            self.events.append(f"{self.name} batch {self.batch}")
        elif self.terminates:
            self.isActive = False
        return not self.isActive

    @property
    def lastProgress(self) -> dict[str, Any] | None:
        return {"batchId": self.batch, "runId": self.name} if self.batch >= 0 else None

    @property
    def recentProgress(self) -> list[dict[str, Any]]:
        return [{"batchId": b, "runId": self.name} for b in range(self.batch + 1)]

    @property
    def status(self) -> dict[str, bool]:
        return {"isDataAvailable": False, "isTriggerActive": False}

    def exception(self) -> None:
        return None

    def stop(self) -> None:
        self.isActive = False
        self.events.append(f"stop {self.name}")


def _run(monkeypatch, trigger: dict[str, Any], batches: list[int], stop_after: int | None = None,
         timeout: float | None = None) -> tuple[list[str], tuple[list[Any], bool]]:
    events: list[str] = []
    made: list[FakeQuery] = []

    def start(_spark: Any, _writer: Any) -> FakeQuery:
        query = FakeQuery(events, f"q{len(made)}", batches[len(made)], terminates="available_now" in trigger)
        made.append(query)
        return query

    def stop_after_batch(_spark: Any, query: FakeQuery) -> None:
        query.isActive = False
        events.append(f"graceful stop {query.name}")

    monkeypatch.setattr(S, "_start", start)
    monkeypatch.setattr(S, "_stop_after_batch", stop_after_batch)
    monkeypatch.setattr(S.time, "sleep", lambda _s: None)
    if stop_after is not None:
        original = FakeQuery.awaitTermination

        def await_and_maybe_stop(self: FakeQuery, timeout: float | None = None) -> bool:
            done = original(self, timeout)
            if self.batch >= stop_after:
                S.request_stop("SIGTERM")
            return done

        monkeypatch.setattr(FakeQuery, "awaitTermination", await_and_maybe_stop)
    job = SimpleNamespace(available_now="available_now" in trigger, processing_time=trigger.get("processing_time"))
    writer = SimpleNamespace(batch_counts={})
    try:
        result = S._run_bounded(None, None, job, timeout, True, lambda: events.append("heartbeat"),
                                S._ProgressLog(writer))
    finally:
        S._STOP.clear()
    return events, result


def test_available_now_writes_the_heartbeat_after_the_first_query_read_everything(monkeypatch) -> None:
    events, (queries, marked) = _run(monkeypatch, {"available_now": True}, [4, 2])
    assert events == ["start q0", "q0 batch 0", "q0 batch 1", "q0 batch 2", "q0 batch 3",
                      "heartbeat", "start q1", "q1 batch 0", "q1 batch 1"]
    assert marked and len(queries) == 2


def test_processing_time_writes_the_heartbeat_when_idle_and_waits_for_a_batch_that_read_it(monkeypatch) -> None:
    monkeypatch.setattr(S, "_interval_seconds", lambda _text: 0.0)
    clock = iter(range(0, 10_000, 1))
    monkeypatch.setattr(S.time, "monotonic", lambda: float(next(clock)))
    events: list[str] = []
    # one query: 3 batches before the heartbeat; after it, idle counts only once batch 3 (which read it) ran
    original_mark_batches = 3

    def start(_spark: Any, _writer: Any) -> FakeQuery:
        query = FakeQuery(events, "q0", original_mark_batches, terminates=False)
        started.append(query)
        return query

    started: list[FakeQuery] = []
    monkeypatch.setattr(S, "_start", start)

    def mark() -> None:
        events.append("heartbeat")
        started[0].last += 2  # the heartbeat's micro-batch and the no-data batch after it
        started[0].pause = 20  # ... which start only after a listing longer than the quiet period

    job = SimpleNamespace(available_now=False, processing_time="1 second")
    _queries, marked = S._run_bounded(None, None, job, None, True, mark, S._ProgressLog(SimpleNamespace(batch_counts={})))
    assert events == ["start q0", "q0 batch 0", "q0 batch 1", "q0 batch 2", "heartbeat", "q0 batch 3", "q0 batch 4",
                      "stop q0"]
    assert marked


@pytest.mark.parametrize("trigger", [{"available_now": True}, {"processing_time": "1 second"}])
def test_a_stop_request_ends_after_the_batch_and_skips_the_flush(monkeypatch, trigger) -> None:
    monkeypatch.setattr(S, "_interval_seconds", lambda _text: 0.0)
    events, (queries, marked) = _run(monkeypatch, trigger, [5, 1], stop_after=1)
    assert "heartbeat" not in events and not marked and len(queries) == 1
    assert events[-1] == "graceful stop q0" and "q0 batch 2" not in events


def test_a_timeout_before_the_input_is_read_skips_the_flush(monkeypatch) -> None:
    clock = iter(range(0, 10_000, 7))
    monkeypatch.setattr(S.time, "monotonic", lambda: float(next(clock)))
    events, (_queries, marked) = _run(monkeypatch, {"available_now": True}, [1000, 1], timeout=20)
    assert "heartbeat" not in events and not marked and events[-1] == "stop q0"
