"""Job configuration shared by the streaming job, the backfill job, the CLI and the Airflow operator.

A job config is plain JSON (so Airflow can template it and spark-submit can ship it)::

    {
      "left":  {"path": "data/orders", "format": "csv", "options": {"header": "true"},
                "schema": "order_id STRING, price DECIMAL(32,2), currency STRING, order_time TIMESTAMP",
                "watermark_delay": "0 seconds"},
      "right": {"path": "data/rates", "format": "csv", "options": {"header": "true"},
                "schema": "op STRING, currency STRING, conversion_rate DECIMAL(32,4), update_time TIMESTAMP"},
      "versioned": {"key": ["currency"], "time": "update_time", "format": "changelog", "op": "op"},
      "join": {"left_time": "order_time", "left_key": ["currency"], "how": "left"},
      "output": {"path": "out/orders_enriched"},
      "checkpoint": "chk/orders_enriched",
      "trigger": {"available_now": true},
      "mode": "event_time",
      "retention": {"min_idle": "1 hour", "max_idle": "2 hours"}
    }

``output.late_path`` and ``output.dead_letter_path`` default to ``<output.path>_late`` and
``<output.path>_dead_letter``.  ``from_dict`` validates everything before a Spark job starts.

A MATCH_RECOGNIZE job (:class:`MatchRecognizeJobConfig`) has one input and the clause instead of the
join sections; the first ORDER BY column is the event time (the watermark's column)::

    {
      "match_recognize": {"clause": "PARTITION BY symbol ORDER BY rowtime MEASURES ... PATTERN (A B+) DEFINE ..."},
      "input":  {"path": "data/ticker", "format": "csv", "options": {"header": "true"},
                 "schema": "symbol STRING, rowtime TIMESTAMP, price DOUBLE", "watermark_delay": "5 seconds"},
      "output": {"path": "out/ticker_matches"},
      "checkpoint": "chk/ticker_matches",
      "trigger": {"available_now": true}
    }

:func:`load_job_config` reads either shape (a ``match_recognize`` section selects the MATCH_RECOGNIZE one).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runtime.core.errors import SpecError
from runtime.core.pattern import ClauseSpec, PatternValidationError, parse_clause
from runtime.core.spec import StateRetention, TemporalJoinSpec, ValidityColumns, VersionedTableSpec

SOURCE_FORMATS = ("csv", "json", "parquet")
_DURATION = re.compile(r"^\s*(\d+)\s*(microseconds?|milliseconds?|ms|seconds?|s|minutes?|min|hours?|h|days?|d)\s*$", re.I)
_UNIT_US = {
    "microsecond": 1, "millisecond": 1_000, "ms": 1_000, "second": 1_000_000, "s": 1_000_000,
    "minute": 60_000_000, "min": 60_000_000, "hour": 3_600_000_000, "h": 3_600_000_000,
    "day": 86_400_000_000, "d": 86_400_000_000,
}


def parse_duration(text: str | int, argument: str) -> int:
    """Microseconds in a duration such as ``"90 seconds"`` or ``"2 hours"`` (ints are microseconds).

    >>> parse_duration("2 hours", "max_idle")
    7200000000
    """
    if isinstance(text, int):
        return text
    match = _DURATION.match(str(text))
    if not match:
        raise SpecError(argument, f"cannot read duration {text!r}; write e.g. '10 seconds' or '2 hours'", where="job config")
    unit = match.group(2).lower()
    unit = unit[:-1] if unit.endswith("s") and unit not in ("s", "ms") else unit
    return int(match.group(1)) * _UNIT_US[unit]


def _output_paths(data: Mapping[str, Any]) -> dict[str, str]:
    """``output.path`` and the late / dead-letter paths (defaulting to ``<path>_late`` / ``<path>_dead_letter``)."""
    out = data["output"]
    if not out.get("path"):
        raise SpecError("output.path", "an output path is required", where="job config")
    return {
        "output_path": out["path"],
        "late_path": out.get("late_path") or f"{out['path']}_late",
        "dead_letter_path": out.get("dead_letter_path") or f"{out['path']}_dead_letter",
    }


def parse_utc_timestamp(value: datetime | str, argument: str, where: str = "job") -> datetime:
    """A naive UTC datetime from an ISO string or a datetime (Spark sessions here run in UTC).

    >>> parse_utc_timestamp("2020-01-01T02:00:00+02:00", "start")
    datetime.datetime(2020, 1, 1, 0, 0)
    """
    if isinstance(value, datetime):
        parsed = value
    else:
        try:
            parsed = datetime.fromisoformat(str(value))
        except ValueError:
            raise SpecError(argument, f"cannot read {value!r} as an ISO timestamp", where=where) from None
    return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo is not None else parsed


@dataclass(frozen=True)
class SourceConfig:
    """A file source (a directory of CSV / JSON / parquet files) read as batch or stream."""

    path: str
    format: str
    schema: str
    options: Mapping[str, str] = field(default_factory=dict)
    watermark_delay: str = "0 seconds"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], side: str) -> SourceConfig:
        for required in ("path", "format", "schema"):
            if not data.get(required):
                raise SpecError(required, f"the {side} source needs '{required}'", where="job config")
        if data["format"] not in SOURCE_FORMATS:
            raise SpecError("format", f"{side} source format {data['format']!r} not in {SOURCE_FORMATS}", where="job config")
        parse_duration(data.get("watermark_delay", "0 seconds"), f"{side}.watermark_delay")
        return cls(
            path=str(data["path"]),
            format=data["format"],
            schema=data["schema"],
            options=dict(data.get("options", {})),
            watermark_delay=data.get("watermark_delay", "0 seconds"),
        )


@dataclass(frozen=True)
class JobConfig:
    """Everything a streaming or backfill job needs; see the module docstring for the JSON shape."""

    left: SourceConfig
    right: SourceConfig
    join: TemporalJoinSpec
    output_path: str
    late_path: str
    dead_letter_path: str
    checkpoint: str | None = None
    available_now: bool = True
    processing_time: str | None = None
    mode: str = "event_time"
    retention: StateRetention | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobConfig:
        for section in ("left", "right", "versioned", "join", "output"):
            if section not in data:
                raise SpecError(section, f"missing section '{section}'", where="job config")
        v = data["versioned"]
        versioned = VersionedTableSpec(
            key=v.get("key"), time=v.get("time"), format=v.get("format", "append"), op=v.get("op"),
            delete_flag=v.get("delete_flag"), sequence=v.get("sequence"), where="job config: versioned",
        )
        j = data["join"]
        validity = None
        if j.get("valid_from") or j.get("valid_to"):
            validity = ValidityColumns(valid_from=j.get("valid_from") or "valid_from", valid_to=j.get("valid_to"))
        join = TemporalJoinSpec(
            versioned, left_time=j.get("left_time"), left_key=j.get("left_key"), how=j.get("how", "inner"),
            right_columns=j.get("right_columns"), right_prefix=j.get("right_prefix", ""), validity=validity,
            predicate=j.get("predicate"), where="job config: join",
        )
        mode = data.get("mode", "event_time")
        if mode not in ("event_time", "processing_time"):
            raise SpecError("mode", f"unknown mode {mode!r}; use 'event_time' or 'processing_time'", where="job config")
        available_now, processing_time = _trigger(data)
        retention = None
        if data.get("retention"):
            r = data["retention"]
            retention = StateRetention(
                parse_duration(r.get("min_idle", 0), "retention.min_idle"),
                parse_duration(r.get("max_idle", r.get("min_idle", 0)), "retention.max_idle"),
            )
        return cls(
            left=SourceConfig.from_dict(data["left"], "left"),
            right=SourceConfig.from_dict(data["right"], "right"),
            join=join,
            **_output_paths(data),
            checkpoint=data.get("checkpoint"),
            available_now=available_now,
            processing_time=processing_time,
            mode=mode,
            retention=retention,
            raw=dict(data),
        )

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any]) -> JobConfig:
        """From a dict, a JSON string or a path to a JSON file."""
        return cls.from_dict(_read_json(source))


def _read_json(source: str | Path | Mapping[str, Any]) -> Mapping[str, Any]:
    """A config dict from a dict, a JSON string or a path to a JSON file."""
    if isinstance(source, Mapping):
        return source
    text = str(source)
    if text.lstrip().startswith("{"):
        return json.loads(text)
    return json.loads(Path(text).read_text())


def _trigger(data: Mapping[str, Any]) -> tuple[bool, str | None]:
    """``(available_now, processing_time)`` of the ``trigger`` section (exactly one must be set)."""
    trigger = data.get("trigger", {"available_now": True})
    if bool(trigger.get("available_now")) == bool(trigger.get("processing_time")):
        raise SpecError("trigger", "set exactly one of available_now / processing_time", where="job config")
    return bool(trigger.get("available_now")), trigger.get("processing_time")


def streaming_clause(clause: str) -> ClauseSpec:
    """Parse ``clause`` for an event-time stream: ORDER BY must start with the event time, ascending.

    Errors are positioned in the clause text (:class:`~runtime.core.errors.QuerySyntaxError`).

    >>> streaming_clause("PARTITION BY k ORDER BY t PATTERN (A) DEFINE A AS A.v > 0").order_by[0].column
    't'
    >>> streaming_clause("PARTITION BY k ORDER BY t DESC PATTERN (A) DEFINE A AS A.v > 0")
    Traceback (most recent call last):
    ...
    runtime.core.pattern.errors.PatternValidationError: ORDER BY must start with the event time column ... (line 1, col 25)
    ...
    """
    if not isinstance(clause, str) or not clause.strip():
        raise SpecError("match_recognize.clause", "the clause text (between the parentheses) is required",
                        where="job config")
    spec = parse_clause(clause)
    if not spec.order_by:
        at = clause.upper().find("PATTERN")
        raise PatternValidationError(
            "a streaming MATCH_RECOGNIZE needs ORDER BY <event time column> (the column the watermark follows)",
            text=clause, position=max(at, 0),
        )
    first = spec.order_by[0]
    if first.descending:
        raise PatternValidationError(
            f"ORDER BY must start with the event time column in ascending order ({first}): "
            "the watermark moves forward only",
            text=clause, position=first.start,
        )
    return spec


@dataclass(frozen=True)
class MatchRecognizeJobConfig:
    """A MATCH_RECOGNIZE streaming or backfill job; see the module docstring for the JSON shape.

    ``spec`` is the parsed clause; ``event_time`` its first ORDER BY column, the column the
    watermark follows (``input.watermark_delay`` is its allowed out-of-orderness).

    >>> job = MatchRecognizeJobConfig.from_dict({
    ...     "match_recognize": {"clause": "PARTITION BY s ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+) "
    ...                                   "DEFINE A AS A.p > 0"},
    ...     "input": {"path": "in", "format": "json", "schema": "s STRING, t TIMESTAMP, p DOUBLE"},
    ...     "output": {"path": "out"}})
    >>> job.event_time, job.late_path, job.dead_letter_path, job.available_now
    ('t', 'out_late', 'out_dead_letter', True)
    """

    clause: str
    spec: ClauseSpec
    input: SourceConfig
    output_path: str
    late_path: str
    dead_letter_path: str
    checkpoint: str | None = None
    available_now: bool = True
    processing_time: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def event_time(self) -> str:
        """The event-time column: the first ORDER BY column of the clause."""
        return self.spec.order_by[0].column

    @property
    def mode(self) -> str:
        """Always ``event_time`` (MATCH_RECOGNIZE orders rows by event time; no processing-time mode)."""
        return "event_time"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchRecognizeJobConfig:
        for section in ("match_recognize", "input", "output"):
            if section not in data:
                raise SpecError(section, f"missing section '{section}'", where="job config")
        for section in ("left", "right", "versioned", "join"):
            if section in data:
                raise SpecError(section, f"section '{section}' belongs to a temporal-join job, not a "
                                "MATCH_RECOGNIZE job", where="job config")
        mr = data["match_recognize"]
        if not isinstance(mr, Mapping):
            raise SpecError("match_recognize", "must be an object with a 'clause'", where="job config")
        unknown = sorted(set(mr) - {"clause"})
        if unknown:
            raise SpecError("match_recognize", f"unknown keys {unknown}; only 'clause' is read", where="job config")
        clause = mr.get("clause")
        spec = streaming_clause(clause)
        available_now, processing_time = _trigger(data)
        return cls(
            clause=clause,
            spec=spec,
            input=SourceConfig.from_dict(data["input"], "input"),
            **_output_paths(data),
            checkpoint=data.get("checkpoint"),
            available_now=available_now,
            processing_time=processing_time,
            raw=dict(data),
        )

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any]) -> MatchRecognizeJobConfig:
        """From a dict, a JSON string or a path to a JSON file."""
        return cls.from_dict(_read_json(source))


def load_job_config(source: str | Path | Mapping[str, Any] | JobConfig | MatchRecognizeJobConfig,
                    ) -> JobConfig | MatchRecognizeJobConfig:
    """The job config of either kind: a ``match_recognize`` section makes a :class:`MatchRecognizeJobConfig`.

    >>> type(load_job_config('{"match_recognize": {"clause": "ORDER BY t PATTERN (A) DEFINE A AS A.v > 0"}, '
    ...     '"input": {"path": "in", "format": "json", "schema": "t TIMESTAMP, v INT"}, '
    ...     '"output": {"path": "out"}}')).__name__
    'MatchRecognizeJobConfig'
    """
    if isinstance(source, (JobConfig, MatchRecognizeJobConfig)):
        return source
    data = _read_json(source)
    if "match_recognize" in data:
        return MatchRecognizeJobConfig.from_dict(data)
    return JobConfig.from_dict(data)
