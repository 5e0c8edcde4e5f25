"""Per-micro-batch figures of a streaming query, and a ``StreamingQueryListener`` that reports them.

:func:`batch_figures` turns one of Spark's progress reports (``StreamingQuery.lastProgress``, or a
listener event's ``progress.json``) into the figures timeweave reports per micro-batch: rows in, rows
out, late rows, dead letters, the watermark, the lag and the rows kept in state.  Rows out, late and
dead letters are known to the sink only (the job's ``foreachBatch`` writer counts them), so they come
from ``counts`` when given, else they are None; rows in default to Spark's ``numInputRows``.

:class:`TimeweaveProgressListener` calls a function with those figures after every micro-batch; the
streaming job registers one, and a user of the streaming door (:mod:`timeweave.spark.temporal_join_streaming`) can
register their own::

    from timeweave.spark.progress import TimeweaveProgressListener

    listener = TimeweaveProgressListener(lambda figures: print(figures["batch_id"], figures["watermark"]))
    spark.streams.addListener(listener)
    ...  # start the query (temporal_join_stream(...).stream.writeStream...)
    spark.streams.removeListener(listener)

**Lag** is Flink's watermark lag: the batch's trigger time (wall clock) minus the watermark, in
milliseconds -- how far event time trails real time.  It is None before the first watermark and once
the watermark reached the end of input (a flushed job).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

_log = logging.getLogger("timeweave.streaming")
#: 9999-01-01T00:00:00Z in ms: a watermark past it is the flush's end of input (``timeweave.jobs.streaming.END_OF_INPUT``).
_YEAR_9999_MS = 253_370_764_800_000
#: 400 Gregorian years (146,097 days) in ms: the calendar repeats after them.
_CYCLE_MS = 146_097 * 86_400_000

#: The keys of :func:`batch_figures`' result, in the order the log line and the report show them.
FIGURES = ("batch_id", "run_id", "at", "rows_in", "rows_out", "late", "dead_letter", "watermark", "lag_ms",
           "state_rows", "duration_ms")


def _millis(text: str | None) -> int | None:
    """Milliseconds since the epoch of one of Spark's progress timestamps (``2020-01-01T00:00:00.000Z``).

    Years past 9999 come as ``+10000-01-01T00:00:00.000Z`` (the flush's end-of-input watermark): read exactly,
    by the Gregorian calendar's 400-year cycle (Python's datetime stops at 9999).

    >>> _millis("1970-01-01T00:00:01.000Z"), _millis("+10000-01-01T00:00:00.000Z")
    (1000, 253402300800000)
    """
    if not text:
        return None
    cycles = 0
    head, sep, rest = text.lstrip("+").partition("-")
    if sep and head.isdigit() and int(head) > 9999:  # shift into datetime's range by whole 400-year cycles
        cycles = (int(head) - 9999 + 399) // 400
        text = f"{int(head) - 400 * cycles:04d}-{rest}"
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000) + cycles * _CYCLE_MS


def batch_figures(progress: Mapping[str, Any], counts: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The figures of one micro-batch from Spark's progress report (a dict, as ``StreamingQuery.lastProgress``).

    ``counts`` (the sink's): ``rows_in`` (or ``rows_in_left`` / ``rows_in_right``), ``rows_out``, ``late``,
    ``dead_letter``; they replace Spark's figures or fill the ones Spark cannot know.  The watermark is
    None until the query has one (Spark reports the epoch then).

    >>> f = batch_figures({"batchId": 3, "runId": "r", "timestamp": "2020-01-01T00:01:00.000Z",
    ...                    "numInputRows": 7, "eventTime": {"watermark": "2020-01-01T00:00:00.000Z"},
    ...                    "stateOperators": [{"numRowsTotal": 5}], "durationMs": {"triggerExecution": 40}},
    ...                   {"rows_out": 2, "late": 1, "dead_letter": 0})
    >>> f["rows_in"], f["rows_out"], f["late"], f["lag_ms"], f["state_rows"], f["watermark"]
    (7, 2, 1, 60000, 5, '2020-01-01T00:00:00.000Z')
    """
    counts = counts or {}
    watermark = (progress.get("eventTime") or {}).get("watermark")
    mark = _millis(watermark)
    if mark is not None and (mark <= 0 or mark >= _YEAR_9999_MS):
        # the epoch: no watermark yet; year 9999 (the end of input minus a delay): the flush, no lag to show
        watermark = None if mark <= 0 else watermark
        mark = None
    at = _millis(progress.get("timestamp"))
    figures: dict[str, Any] = {
        "batch_id": int(progress["batchId"]),
        # str(): Spark 4's progress objects give a UUID through dict.get, a string through [] and in JSON
        "run_id": None if progress.get("runId") is None else str(progress.get("runId")),
        "at": progress.get("timestamp"),
        "rows_in": int(progress.get("numInputRows") or 0),
        "rows_out": None,
        "late": None,
        "dead_letter": None,
        "watermark": watermark,
        "lag_ms": at - mark if at is not None and mark is not None else None,
        "state_rows": sum(int(op.get("numRowsTotal") or 0) for op in progress.get("stateOperators") or []),
        "duration_ms": (progress.get("durationMs") or {}).get("triggerExecution"),
    }
    if "rows_in_left" in counts or "rows_in_right" in counts:
        figures["rows_in_left"] = int(counts.get("rows_in_left") or 0)
        figures["rows_in_right"] = int(counts.get("rows_in_right") or 0)
        figures["rows_in"] = figures["rows_in_left"] + figures["rows_in_right"]
    elif counts.get("rows_in") is not None:
        figures["rows_in"] = int(counts["rows_in"])
    for name in ("rows_out", "late", "dead_letter"):
        if counts.get(name) is not None:
            figures[name] = int(counts[name])
    return figures


def format_figures(figures: Mapping[str, Any]) -> str:
    """The log line of one micro-batch's figures.

    >>> format_figures({"batch_id": 1, "rows_in": 4, "rows_out": 3, "late": 1, "dead_letter": 0,
    ...                 "watermark": None, "lag_ms": None, "state_rows": 2, "duration_ms": 10})
    'batch 1: rows in 4, out 3, late 1, dead letter 0; watermark none yet, lag -; state rows 2; 10 ms'
    >>> format_figures({"batch_id": 2, "rows_in": 0, "rows_out": None, "watermark": "2020-01-01T00:00:00.000Z",
    ...                 "lag_ms": 1500, "state_rows": 0, "duration_ms": 5})
    'batch 2: input rows 0; watermark 2020-01-01T00:00:00.000Z, lag 1.5 s; state rows 0; 5 ms'
    """
    lag = figures.get("lag_ms")
    tail = (f"watermark {figures.get('watermark') or 'none yet'}, lag {'-' if lag is None else f'{lag / 1000:.1f} s'}; "
            f"state rows {figures.get('state_rows')}; {figures.get('duration_ms')} ms")
    if figures.get("rows_out") is None:  # no sink counts: a batch without rows (the watermark moved), or a door user's
        return f"batch {figures['batch_id']}: input rows {figures.get('rows_in')}; {tail}"
    if "rows_in_left" in figures:
        rows_in = f"{figures['rows_in_left']} left / {figures['rows_in_right']} right"
    else:
        rows_in = str(figures.get("rows_in"))

    def shown(value: Any) -> str:
        return "-" if value is None else str(value)

    return (f"batch {figures['batch_id']}: rows in {rows_in}, out {figures['rows_out']}, "
            f"late {shown(figures.get('late'))}, dead letter {shown(figures.get('dead_letter'))}; {tail}")


class TimeweaveProgressListener(StreamingQueryListener):
    """Calls ``on_batch(figures)`` (:func:`batch_figures`) after every micro-batch of the session's streaming queries.

    ``query_name``: only that query's batches (default: every query of the session).  ``counts``:
    ``counts(run_id, batch_id)`` gives the sink's counts of a batch (rows out, late, dead letter), or None.
    ``on_batch`` runs on Spark's listener thread: keep it short; an exception it raises is logged, not
    raised into Spark.  Register with ``spark.streams.addListener(listener)``.

    Example::

        seen = []
        listener = TimeweaveProgressListener(seen.append, query_name="orders_enriched")
        spark.streams.addListener(listener)
    """

    def __init__(
        self,
        on_batch: Callable[[dict[str, Any]], None],
        query_name: str | None = None,
        counts: Callable[[str | None, int], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self._on_batch = on_batch
        self._query_name = query_name
        self._counts = counts

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        try:
            progress = json.loads(event.progress.json)
            if self._query_name is not None and progress.get("name") != self._query_name:
                return
            counts = self._counts(progress.get("runId"), int(progress["batchId"])) if self._counts else None
            self._on_batch(batch_figures(progress, counts))
        except Exception:  # a listener must not break the query; say what went wrong
            _log.exception("timeweave progress listener failed on a progress event")

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass


__all__ = ["FIGURES", "TimeweaveProgressListener", "batch_figures", "format_figures"]
