"""DataStream windows' job registration (:mod:`timeweave.jobs.registry`): a job config naming a Python function
that builds the pipeline, its source, its streaming query and its one-line description.

The config's ``datastream`` section names ``pipeline``, ``"package.module:function"``: the function takes the
input DataFrame (the ``input`` source, streaming) and returns the :class:`~timeweave.spark.datastream.Pipeline`
built over it (``timeweave.stream(df, time=..., watermark=...)...``): the event time and the watermark are the
pipeline's, so ``input.watermark_delay`` is refused here.  The module is imported when the job runs, not when the
config is read (``validate`` and Airflow's DAG parse import no user code and no Spark)::

    {"datastream": {"pipeline": "jobs.clicks:pipeline"},
     "input": {"path": "data/clicks", "format": "json", "schema": "user STRING, ts TIMESTAMP, url STRING"},
     "output": {"path": "out/clicks"}, "checkpoint": "chk/clicks"}

``datastream.emit`` (optional): ``"append"`` (the default: every firing a row), ``"retract"`` or ``"upsert"``:
the output is the window results' changelog with an ``op`` column (see
:meth:`~timeweave.spark.datastream.Pipeline.start`), which
:func:`timeweave.spark.changelog_sink.apply_changelog` materialises.

``datastream.arrival`` (optional, backfill only): the input column whose order is the rows' arrival order (equal
values arrive together, as one micro-batch: a file's batch number, an ingestion time); without it the range arrives
at once (Flink's batch mode: no row is late).

Streaming: the pipeline's tagged stream on the host (:meth:`~timeweave.spark.datastream.Pipeline.streaming`), the
job's heartbeats (``--flush``: every window fires) unioned in.  Backfill (``python -m timeweave.jobs backfill
--slices N``): :func:`timeweave.spark.datastream_backfill.backfill_datastream`, the pipeline's bounded run
(``run_batch(arrival=...)``) cut into slices with each key's windows carried across the edges; main, late and
dead-letter rows under ``<path>/slice=<label>/``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from timeweave.core.errors import SpecError
from timeweave.core.updates.modes import ChangelogMode
from timeweave.jobs.config import (
    _OUTPUT,
    _SOURCE,
    _TEXT,
    _TRIGGER,
    ConfigError,
    Key,
    SourceConfig,
    _output_paths,
    _read_json,
    _trigger,
    check_keys,
)

if TYPE_CHECKING:
    from timeweave.jobs.streaming import StreamingRun

#: Every key a DataStream job config reads; anything else is an error.
DATASTREAM_SCHEMA: Mapping[str, Key] = {
    "datastream": Key((dict,), required=True, keys={"pipeline": Key((str,), required=True), "emit": Key((str,)),
                                                    "arrival": Key((str,))}),
    "input": _SOURCE,
    "output": _OUTPUT,
    "checkpoint": _TEXT,
    "trigger": _TRIGGER,
}
_REFERENCE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")


@dataclass(frozen=True)
class DataStreamJobConfig:
    """A DataStream window job (streaming or backfill); see the module docstring for the JSON shape.

    >>> job = DataStreamJobConfig.from_dict({"datastream": {"pipeline": "jobs.clicks:pipeline"},
    ...     "input": {"path": "in", "format": "json", "schema": "k STRING, ts TIMESTAMP"}, "output": {"path": "out"}})
    >>> job.pipeline, job.late_path, job.emit
    ('jobs.clicks:pipeline', 'out_late', <ChangelogMode.APPEND: 'append'>)
    >>> DataStreamJobConfig.from_dict({"datastream": {"pipeline": "jobs.clicks:pipeline", "emit": "retraction"},
    ...     "input": {"path": "in", "format": "json", "schema": "k STRING"}, "output": {"path": "out"}})
    Traceback (most recent call last):
    ...
    timeweave.jobs.config.ConfigError: job config: datastream.emit: expected 'append', 'retract' or 'upsert', got 'retraction'
    >>> DataStreamJobConfig.from_dict({"datastream": {"pipeline": "clicks.pipeline"},
    ...     "input": {"path": "in", "format": "json", "schema": "k STRING"}, "output": {"path": "out"}})
    Traceback (most recent call last):
    ...
    timeweave.jobs.config.ConfigError: job config: datastream.pipeline: expected 'package.module:function', got 'clicks.pipeline'
    """

    pipeline: str
    input: SourceConfig
    output_path: str
    late_path: str
    dead_letter_path: str
    checkpoint: str | None = None
    available_now: bool = True
    processing_time: str | None = None
    emit: ChangelogMode = ChangelogMode.APPEND
    arrival: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def mode(self) -> str:
        """Always ``event_time`` (the pipeline's watermark)."""
        return "event_time"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DataStreamJobConfig:
        if isinstance(data, Mapping):
            for section in ("left", "right", "versioned", "join", "match_recognize", "window"):
                if section in data:
                    raise ConfigError(section, "this section belongs to another operator's job, not a DataStream "
                                      "job (a config with a 'datastream' section)")
        check_keys(data, DATASTREAM_SCHEMA)
        reference = data["datastream"]["pipeline"]
        if not _REFERENCE.match(reference):
            raise ConfigError("datastream.pipeline", f"expected 'package.module:function', got {reference!r}")
        if "watermark_delay" in data["input"]:
            raise ConfigError("input.watermark_delay", "a DataStream pipeline names its own watermark "
                              "(timeweave.stream(df, time=..., watermark=...)); remove this key")
        try:
            emit = ChangelogMode.parse(data["datastream"].get("emit", "append"))
        except SpecError as exc:
            raise ConfigError("datastream.emit", exc.message) from None
        available_now, processing_time = _trigger(data)
        return cls(pipeline=reference, input=SourceConfig.from_dict(data["input"], "input"), **_output_paths(data),
                   checkpoint=data.get("checkpoint"), available_now=available_now, processing_time=processing_time,
                   emit=emit, arrival=data["datastream"].get("arrival"), raw=dict(data))

    @classmethod
    def load(cls, source: Any) -> DataStreamJobConfig:
        """From a dict, a JSON string or a path to a JSON file."""
        return cls.from_dict(_read_json(source))


def sources(job: DataStreamJobConfig) -> dict[str, SourceConfig]:
    """The job's file source (side ``input``)."""
    return {"input": job.input}


def describe(job: DataStreamJobConfig) -> str:
    """One line naming the pipeline function, the input and the output.

    >>> describe(DataStreamJobConfig.from_dict({"datastream": {"pipeline": "jobs.clicks:pipeline"},
    ...     "input": {"path": "in", "format": "json", "schema": "k STRING"}, "output": {"path": "out"}}))
    'DataStream window job: pipeline jobs.clicks:pipeline; input in -> output out'
    """
    emitted = "" if job.emit is ChangelogMode.APPEND else f", {job.emit.value} changelog"
    return (f"DataStream window job: pipeline {job.pipeline}{emitted}; input {job.input.path} -> output "
            f"{job.output_path}")


def build_pipeline(reference: str, df: Any) -> Any:
    """Import ``module:function`` and build the pipeline over ``df``; errors name the reference."""
    from timeweave.spark.datastream import Pipeline

    module_name, _, name = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError("datastream.pipeline", f"cannot import {module_name!r}: {exc}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ConfigError("datastream.pipeline", f"{module_name!r} has no function {name!r}")
    pipeline = function(df)
    if not isinstance(pipeline, Pipeline):
        raise ConfigError("datastream.pipeline", f"{reference} returned {type(pipeline).__name__}, not a pipeline "
                          "(timeweave.stream(df, ...)...)")
    if pipeline.df is not df:
        raise ConfigError("datastream.pipeline", f"{reference} built its pipeline over another DataFrame than the "
                          "one it was given (the job's input)")
    return pipeline


def stream(spark: Any, job: DataStreamJobConfig, rows: Mapping[str, Any], control: Any) -> StreamingRun:
    """The streaming query of the job's pipeline over the input's well-formed rows and the heartbeats ``control``."""
    from timeweave.jobs.streaming import StreamingRun
    from timeweave.spark import datastream as D

    outputs = build_pipeline(job.pipeline, rows["input"]).streaming(heartbeat=control, emit=job.emit.value)
    return StreamingRun(
        outputs, {D.KIND: f"={D.DEAD_JSON}", D.SIDE: "side", D.REASON: "reason", D.IN_ROW: "row"},
        {"rows_in": 0, "rows_out": 0, "late": 0, "dead_letter": 0, "batches": 0},
        {"kind": "datastream", "emit": job.emit.value},
    )


def backfill(
    spark: Any, job: DataStreamJobConfig, rows: Mapping[str, Any], start: datetime, end: datetime, slices: int,
    only: Sequence[int] | None, slices_per_job: int | None, on_slice: Callable[[dict], None],
) -> dict[str, Any]:
    """The sliced backfill of the job's pipeline over the input's well-formed rows (``slices_per_job`` does not
    apply: the registry says so before this is called); its metrics."""
    from timeweave.spark.datastream_backfill import backfill_datastream

    pipeline = build_pipeline(job.pipeline, rows["input"])
    return backfill_datastream(
        pipeline, start=start, end=end, slices=slices, output=job.output_path, late_output=job.late_path,
        dead_letter=job.dead_letter_path, arrival=job.arrival, emit=job.emit.value, only=only, on_slice=on_slice)


__all__ = ["DATASTREAM_SCHEMA", "DataStreamJobConfig", "backfill", "build_pipeline", "describe", "sources", "stream"]
