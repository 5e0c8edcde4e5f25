"""One ``INSERT INTO`` of a Flink SQL script as a streaming job (:mod:`timeweave.jobs.registry` entry ``sql_insert``).

``timeweave-job sql --file job.sql --mode streaming`` (:func:`timeweave.jobs.sql_script.run_sql_script`) registers
the script's tables as streams and runs each insert through the streaming driver
(:func:`timeweave.jobs.streaming.run_streaming`) with a :class:`SqlInsertJob`: a checkpointed query
(:func:`timeweave.spark.sql_streaming.streaming_sql`) whose main rows, cast to the sink's columns, go to the sink's
path, its late rows to ``<path>_late`` and its dead letters to ``<path>_dead_letter``, each micro-batch exactly
once.  A restart from the checkpoint (after a crash or a kill) goes on where the last committed micro-batch ended.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from timeweave.core.ddl.insert import InsertInto
from timeweave.core.ddl.script import in_place
from timeweave.jobs.config import ConfigError, SourceConfig

if TYPE_CHECKING:
    from timeweave.jobs.streaming import StreamingRun


@dataclass(frozen=True)
class SqlInsertJob:
    """One streaming insert of a script: the insert, where its outputs and checkpoint go, its trigger, and
    ``finish`` (the script's cast of the query's rows to the sink's columns).  Built by the script runner, never
    read from a JSON config."""

    insert: InsertInto
    output_path: str
    late_path: str
    dead_letter_path: str
    checkpoint: str
    finish: Callable[[Any], Any]
    available_now: bool = True
    processing_time: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def mode(self) -> str:
        """The script's mode (the query's clock, event or processing time, is its operator's)."""
        return "streaming"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SqlInsertJob:
        raise ConfigError("sql_insert", "a streaming SQL insert comes from a script: run it with timeweave-job sql "
                          "--file job.sql --mode streaming")


def sources(job: SqlInsertJob) -> dict[str, SourceConfig]:
    """None the driver reads: the script's CREATE TABLE statements registered the query's streams."""
    return {}


def describe(job: SqlInsertJob) -> str:
    """One line naming the sink and its path."""
    return f"streaming SQL insert into {job.insert.table} -> output {job.output_path}"


def stream(spark: Any, job: SqlInsertJob, rows: Mapping[str, Any], control: Any) -> StreamingRun:
    """The insert's streaming query over the script's streams and the heartbeat source ``control``."""
    from timeweave.jobs.streaming import StreamingRun
    from timeweave.spark.sql_streaming import streaming_sql
    from timeweave.spark.temporal_join_streaming import DEAD as JOIN_DEAD
    from timeweave.spark.temporal_join_streaming import KIND, L_ROW, OUT_SIDE, REASON, StreamingJoin

    insert = job.insert
    query = streaming_sql(spark, in_place(insert.script, insert.query_start, insert.query), heartbeat=control,
                          finish=job.finish)
    if isinstance(query.operator, StreamingJoin):  # two inputs, counted apart
        metrics = {"rows_in_left": 0, "rows_in_right": 0, "rows_out": 0, "late": 0, "dead_letter": 0, "batches": 0}
    else:
        metrics = {"rows_in": 0, "rows_out": 0, "late": 0, "dead_letter": 0, "batches": 0}
    # The dead-letter columns take a source's malformed records in: the driver reads no source here, so none come.
    return StreamingRun(query, {KIND: f"={JOIN_DEAD}", OUT_SIDE: "side", REASON: "reason", L_ROW: "row"}, metrics,
                        {"kind": "sql", "table": insert.table})


def backfill(spark: Any, job: SqlInsertJob, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Not a backfill: a script's batch mode writes the whole input once."""
    raise ConfigError("sql_insert", "a SQL script has no sliced backfill: run it with --mode batch")


__all__ = ["SqlInsertJob", "backfill", "describe", "sources", "stream"]
