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
``<output.path>_dead_letter``.  ``from_dict`` validates everything before a Spark job starts: the keys
against :data:`TEMPORAL_JOIN_SCHEMA` / :data:`MATCH_RECOGNIZE_SCHEMA` first (:func:`check_keys`: an
unknown key is an error with a did-you-mean, a missing one names its path, ``trigger.timeout`` is the
processing-time run's default timeout), then the values.  ``timeweave-job validate job.json`` runs it alone.

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

A window aggregation job (:class:`WindowJobConfig`) has one input and a ``window`` section: the TVF
(``function`` with ``size`` / ``slide`` / ``step`` / ``max_size`` / ``gap`` / ``offset`` / ``partition_by``, the
arguments of :mod:`timeweave.core.windows.spec`; or ``tvf``, the call as Flink's SQL writes it), the event-time
column ``time``, the GROUP BY ``keys`` (or one of ``grouping_sets`` / ``rollup`` / ``cube``:
:class:`~timeweave.core.windows.grouping.GroupingSets`) and the ``aggregates`` (output name -> any Spark aggregate
as SQL text, the DataFrame door's ``window_aggregate`` arguments; those :mod:`timeweave.core.windows.calls` reads
are accumulated per slice, any other keeps the windows' rows until they fire).  ``functions`` registers Python
UDFs, pandas UDAFs among them, under the names the aggregates call them by (name -> ``"package.module:attr"``,
a ``pyspark.sql.functions.pandas_udf`` / ``udf`` result)::

    {
      "window": {"function": "hop", "time": "bidtime", "slide": "5 minutes", "size": "10 minutes",
                 "keys": ["item"], "aggregates": {"cnt": "COUNT(*)", "total": "SUM(price)"}},
      "input":  {"path": "data/bids", "format": "json", "watermark_delay": "1 minute",
                 "schema": "bidtime TIMESTAMP, price DECIMAL(10,2), item STRING"},
      "output": {"path": "out/bid_windows"}
    }

A window Top-N / deduplication job (:class:`WindowTopNJobConfig`, :class:`WindowDeduplicateJobConfig`) has one
input and a ``window_top_n`` (the TVF, ``keys``, ``order_by``, ``n`` or ``ranks``, ``rank_function``,
``rank_column``) or ``window_deduplicate`` section (the TVF, ``keys``, ``keep``); a window join job
(:class:`WindowJoinJobConfig`) has ``left`` and ``right`` sources and a ``window_join`` section (the TVF,
``time`` / ``right_time``, ``on`` / ``right_on``, ``how``, ``left_prefix`` / ``right_prefix``)::

    {
      "window_top_n": {"function": "tumble", "time": "bidtime", "size": "10 minutes", "keys": ["supplier_id"],
                       "order_by": ["price DESC"], "n": 3},
      "input":  {"path": "data/bids", "format": "json", "watermark_delay": "1 minute",
                 "schema": "bidtime TIMESTAMP, price DECIMAL(10,2), item STRING, supplier_id STRING"},
      "output": {"path": "out/top3"}
    }

:func:`load_job_config` reads any operator's shape: the config's section selects the operator
(:mod:`timeweave.jobs.registry`; a ``match_recognize`` section selects the MATCH_RECOGNIZE one, a ``window``
section the window aggregation).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from timeweave.core.bad_rows import check_reader_options
from timeweave.core.durations import parse_duration
from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.pattern import ClauseSpec, MatchBudget, PatternValidationError, RowsPerMatch, parse_clause
from timeweave.core.spec import (
    BOOLEAN,
    DATE,
    DECIMAL,
    FLOATING,
    INTEGER,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    StateRetention,
    TemporalJoinSpec,
    ValidityColumns,
    VersionedTableSpec,
)
from timeweave.core.sql_tokens import Token, TokenType, tokenize
from timeweave.core.updates.group_sql import parse_group_aggregate_query
from timeweave.core.updates.modes import ChangelogMode
from timeweave.core.windows import spec as window_specs
from timeweave.core.windows.calls import read_aggregates
from timeweave.core.windows.grouping import FORMS as GROUPING_FORMS
from timeweave.core.windows.grouping import GroupingSets
from timeweave.core.windows.ranking import RankRange, check_not_session, dedup_order, join_type, sort_keys
from timeweave.core.windows.spec import WindowSpec
from timeweave.core.windows.tvf_sql import find_window_tvfs
from timeweave.jobs.registry import config_classes, operator_for

SOURCE_FORMATS = ("csv", "json", "parquet")
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


class ConfigError(SpecError):
    """A job config that does not fit :data:`TEMPORAL_JOIN_SCHEMA` / :data:`MATCH_RECOGNIZE_SCHEMA`.

    ``argument`` is the key's dotted path; the message is one line that names it.

    >>> str(ConfigError("join.left_tme", "unknown key; did you mean 'left_time'?"))
    "job config: join.left_tme: unknown key; did you mean 'left_time'?"
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, message, where="job config")
        self.args = (f"job config: {path}: {message}",)


@dataclass(frozen=True)
class Key:
    """One key of a job config: the JSON types its value takes, whether it is required, and, for an
    object, its own keys (``keys=None`` with ``dict`` in ``types``: any keys, e.g. reader options)."""

    types: tuple[type, ...]
    required: bool = False
    keys: Mapping[str, Key] | None = None
    items: type | None = None  # a list's item type

    def describe(self) -> str:
        names = {str: "a string", int: "an integer", bool: "true/false", list: "a list", dict: "an object"}
        text = " or ".join(names[t] for t in self.types)
        return f"{text} of {names[self.items][2:]}s" if self.items and self.types == (list,) else text


_TEXT, _TEXTS = Key((str,)), Key((str, list), items=str)
_DURATION_KEY = Key((str, int))
_SOURCE = Key((dict,), required=True, keys={
    "path": Key((str,), required=True), "format": Key((str,), required=True), "schema": Key((str,), required=True),
    "options": Key((dict,)), "watermark_delay": _DURATION_KEY,
})
_OUTPUT = Key((dict,), required=True, keys={"path": Key((str,), required=True), "late_path": _TEXT,
                                            "dead_letter_path": _TEXT})
_TRIGGER = Key((dict,), keys={"available_now": Key((bool,)), "processing_time": _TEXT, "timeout": _DURATION_KEY})
#: Every key a temporal-join job config reads (module docstring); anything else is an error.
TEMPORAL_JOIN_SCHEMA: Mapping[str, Key] = {
    "left": _SOURCE,
    "right": _SOURCE,
    "versioned": Key((dict,), required=True, keys={
        "key": Key((str, list), required=True, items=str), "time": Key((str,), required=True), "format": _TEXT,
        "op": _TEXT, "delete_flag": _TEXT, "sequence": _TEXT,
    }),
    "join": Key((dict,), required=True, keys={
        "left_time": Key((str,), required=True), "left_key": _TEXTS, "how": _TEXT,
        "right_columns": Key((list,), items=str), "right_prefix": _TEXT, "valid_from": _TEXT, "valid_to": _TEXT,
        "predicate": _TEXT,
    }),
    "output": _OUTPUT,
    "checkpoint": _TEXT,
    "trigger": _TRIGGER,
    "mode": _TEXT,
    "retention": Key((dict,), keys={"min_idle": _DURATION_KEY, "max_idle": _DURATION_KEY}),
}
#: Every key a MATCH_RECOGNIZE job config reads.
MATCH_RECOGNIZE_SCHEMA: Mapping[str, Key] = {
    "match_recognize": Key((dict,), required=True, keys={
        "clause": Key((str,), required=True),
        # the per-key matching budget (timeweave.core.pattern.budget.MatchBudget); absent: the default
        "budget": Key((dict,), keys={"max_threads": Key((int,)), "work_per_row": Key((int,)),
                                     "base_work": Key((int,))}),
    }),
    "input": _SOURCE,
    "output": _OUTPUT,
    "checkpoint": _TEXT,
    "trigger": _TRIGGER,
}


def check_keys(data: Any, schema: Mapping[str, Key], path: str = "") -> None:
    """Raise :class:`ConfigError` for the first unknown key (with a did-you-mean), missing key or wrong type.

    >>> check_keys({"join": {"left_tme": "t"}}, {"join": Key((dict,), keys={"left_time": Key((str,))})})
    Traceback (most recent call last):
    ...
    timeweave.jobs.config.ConfigError: job config: join.left_tme: unknown key; did you mean 'left_time'?
    """
    if not isinstance(data, Mapping):
        raise ConfigError(path or "(top level)", f"expected an object, got {_shown(data)}")
    for name in data:
        if name not in schema:
            close = difflib.get_close_matches(str(name), list(schema), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else f"the keys here are {', '.join(sorted(schema))}"
            raise ConfigError(f"{path}{name}", f"unknown key; {hint}")
    for name, key in schema.items():
        where = f"{path}{name}"
        # JSON null is "not set" (a templated config renders unset options as null), as the readers take it.
        if data.get(name) is None:
            if key.required:
                raise ConfigError(where, f"missing {'section' if key.keys is not None else 'key'} (required)")
            continue
        value = data[name]
        # bool is an int in Python: true/false is no duration, and 1 is no true/false.
        if not _fits(value, key.types):
            raise ConfigError(where, f"expected {key.describe()}, got {_shown(value)}")
        if isinstance(value, list) and key.items is not None:
            for i, item in enumerate(value):
                if not _fits(item, (key.items,)):
                    raise ConfigError(f"{where}[{i}]", f"expected {key.describe()}, got {_shown(item)}")
        if key.keys is not None:
            check_keys(value, key.keys, f"{where}.")


def _fits(value: Any, types: tuple[type, ...]) -> bool:
    """``value`` is of one of the JSON ``types`` (an object: any mapping; a list: a list or tuple)."""
    if isinstance(value, bool):  # bool is an int in Python: true/false is no duration, and 1 is no true/false
        return bool in types
    wanted = tuple(Mapping if t is dict else (list, tuple) if t is list else t for t in types)
    return isinstance(value, tuple(t for w in wanted for t in (w if isinstance(w, tuple) else (w,))))


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


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


#: The column kind (:mod:`timeweave.core.spec`) of each Spark DDL type name a source schema may use (the
#: kinds :func:`timeweave.spark.schema.kind_of` gives the parsed types); other types are ``other``.
_DDL_KINDS: Mapping[str, str] = {
    "TIMESTAMP": TIMESTAMP, "TIMESTAMP_LTZ": TIMESTAMP, "TIMESTAMP_NTZ": TIMESTAMP_NTZ, "DATE": DATE,
    **dict.fromkeys(("TINYINT", "BYTE", "SMALLINT", "SHORT", "INT", "INTEGER", "BIGINT", "LONG"), INTEGER),
    **dict.fromkeys(("DECIMAL", "DEC", "NUMERIC"), DECIMAL),
    **dict.fromkeys(("FLOAT", "REAL", "DOUBLE"), FLOATING),
    "BOOLEAN": BOOLEAN, **dict.fromkeys(("STRING", "VARCHAR", "CHAR"), STRING),
}


def schema_types(ddl: str) -> dict[str, str]:
    """Column name -> type text (``BIGINT``, ``DECIMAL(10,2)``) of a source's Spark DDL schema, read without Spark.

    What the job needs before Spark starts (a backfill's bounds take the form of its time column's type:
    :func:`timeweave.core.time.bound_form`).  Nested types are named by their first word (``ARRAY``); a text
    this does not read gives ``{}`` (Spark's parse, when the job runs, is the one that rules).

    >>> schema_types("id STRING, `my t` BIGINT NOT NULL, price DECIMAL(10, 2) COMMENT 'eur', tags ARRAY<STRING>")
    {'id': 'STRING', 'my t': 'BIGINT', 'price': 'DECIMAL(10,2)', 'tags': 'ARRAY'}
    """
    try:
        tokens = tokenize(ddl)
    except QuerySyntaxError:
        return {}
    fields: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.type is TokenType.LPAREN or token.text == "<":
            depth += 1
        elif token.type is TokenType.RPAREN or token.text == ">":
            depth -= 1
        if depth == 0 and token.text == ",":
            fields.append([])
        else:
            fields[-1].append(token)
    types: dict[str, str] = {}
    for parts in fields:
        if parts and parts[0].type in (TokenType.WORD, TokenType.QUOTED) and len(parts) > 1:
            rest = parts[2:] if parts[1].text == ":" else parts[1:]
            if not rest or rest[0].type is not TokenType.WORD:
                return {}
            text = rest[0].text.upper()
            if len(rest) > 1 and rest[1].type is TokenType.LPAREN:
                close = next((i for i, t in enumerate(rest) if t.type is TokenType.RPAREN), None)
                if close is not None:
                    text += "(" + "".join(t.text for t in rest[2:close]) + ")"
            types[parts[0].name] = text
        elif parts:
            return {}
    return types


def type_kind(type_text: str) -> str:
    """The column kind (:mod:`timeweave.core.spec`) of a :func:`schema_types` type text.

    >>> type_kind("BIGINT"), type_kind("DECIMAL(10,2)"), type_kind("TIMESTAMP_NTZ"), type_kind("ARRAY")
    ('integer', 'decimal', 'timestamp_ntz', 'other')
    """
    return _DDL_KINDS.get(type_text.partition("(")[0].upper(), "other")


@dataclass(frozen=True)
class SourceConfig:
    """A file source (a directory of CSV / JSON / parquet files) read as batch or stream."""

    path: str
    format: str
    schema: str
    options: Mapping[str, str] = field(default_factory=dict)
    watermark_delay: str = "0 seconds"

    def column_types(self) -> dict[str, str]:
        """Column name -> type text of the schema (:func:`schema_types`; no Spark).

        >>> SourceConfig("in", "json", "k STRING, lsn BIGINT").column_types()
        {'k': 'STRING', 'lsn': 'BIGINT'}
        """
        return schema_types(self.schema)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], side: str) -> SourceConfig:
        for required in ("path", "format", "schema"):
            if not data.get(required):
                raise SpecError(required, f"the {side} source needs '{required}'", where="job config")
        if data["format"] not in SOURCE_FORMATS:
            raise SpecError("format", f"{side} source format {data['format']!r} not in {SOURCE_FORMATS}", where="job config")
        parse_duration(data.get("watermark_delay", "0 seconds"), f"{side}.watermark_delay")
        check_reader_options(data["format"], dict(data.get("options", {})), f"job config: {side} source")
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
        check_keys(data, TEMPORAL_JOIN_SCHEMA)
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
    """A config dict from a dict, a JSON string or a path to a JSON file.

    >>> _read_json('{"output": {"path": "out"},}')
    Traceback (most recent call last):
    ...
    timeweave.jobs.config.ConfigError: job config: (JSON): line 1 column 28: Expecting property name enclosed in double quotes
    """
    if isinstance(source, Mapping):
        return source
    text = str(source)
    where = "(JSON)"
    if not text.lstrip().startswith("{"):
        where = text
        try:
            text = Path(text).read_text()
        except OSError as error:
            raise ConfigError("config", f"cannot read the config file {where!r}: {error.strerror or error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(where, f"line {error.lineno} column {error.colno}: {error.msg}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(where, f"a job config is a JSON object, not {type(data).__name__}")
    return data


def _trigger(data: Mapping[str, Any]) -> tuple[bool, str | None]:
    """``(available_now, processing_time)`` of the ``trigger`` section (exactly one must be set)."""
    trigger = data.get("trigger", {"available_now": True})
    if bool(trigger.get("available_now")) == bool(trigger.get("processing_time")):
        raise SpecError("trigger", "set exactly one of available_now / processing_time", where="job config")
    return bool(trigger.get("available_now")), trigger.get("processing_time")


def streaming_clause(clause: str) -> ClauseSpec:
    """Parse ``clause`` for an event-time stream: ORDER BY must start with the event time, ascending.

    Errors are positioned in the clause text (:class:`~timeweave.core.errors.QuerySyntaxError`).

    >>> streaming_clause("PARTITION BY k ORDER BY t PATTERN (A) DEFINE A AS A.v > 0").order_by[0].column
    't'
    >>> streaming_clause("PARTITION BY k ORDER BY t DESC PATTERN (A) DEFINE A AS A.v > 0")
    Traceback (most recent call last):
    ...
    timeweave.core.pattern.errors.PatternValidationError: ORDER BY must start with the event time column ... (line 1, col 25)
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
    if spec.rows_per_match is RowsPerMatch.ONE_ROW and not spec.partition_by and not spec.measures:
        # The batch doors return rows without columns (one per match, as Trino); a job writes parquet, and
        # Spark's parquet writer refuses an empty schema, so the job refuses the clause before starting.
        at = clause.upper().find("PATTERN")
        raise PatternValidationError(
            "a MATCH_RECOGNIZE job needs at least one output column (its outputs are parquet files): add a "
            "MEASURES column, e.g. MEASURES MATCH_NUMBER() AS match",
            text=clause, position=max(at, 0),
        )
    return spec


def _budget(data: Mapping[str, Any] | None) -> MatchBudget | None:
    """``match_recognize.budget`` as a :class:`MatchBudget` (None: not set), its values checked.

    >>> _budget({"work_per_row": 0})
    Traceback (most recent call last):
    ...
    timeweave.jobs.config.ConfigError: job config: match_recognize.budget.work_per_row: must be a positive integer, got 0
    """
    if data is None:
        return None
    try:
        return MatchBudget.from_mapping(data)
    except SpecError as error:
        raise ConfigError(error.argument, error.message) from None


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
    budget: MatchBudget | None = None  # match_recognize.budget; None: the default

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
        if not isinstance(data, Mapping):
            check_keys(data, MATCH_RECOGNIZE_SCHEMA)
        for section in ("left", "right", "versioned", "join"):
            if section in data:
                raise ConfigError(section, "this section belongs to a temporal-join job, not a MATCH_RECOGNIZE "
                                  "job (a config with a 'match_recognize' section)")
        check_keys(data, MATCH_RECOGNIZE_SCHEMA)
        clause = data["match_recognize"]["clause"]
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
            budget=_budget(data["match_recognize"].get("budget")),
        )

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any]) -> MatchRecognizeJobConfig:
        """From a dict, a JSON string or a path to a JSON file."""
        return cls.from_dict(_read_json(source))


#: The window arguments of each TVF function (the core spec constructors' parameters, in their order).
WINDOW_FUNCTIONS: Mapping[str, tuple[str, ...]] = {
    "tumble": ("size", "offset"), "hop": ("slide", "size", "offset"), "cumulate": ("step", "max_size", "offset"),
    "session": ("gap", "partition_by"),
}
_WINDOW_ARGUMENTS = ("size", "slide", "step", "max_size", "gap", "offset")
#: Every key a window aggregation job config reads.
WINDOW_SCHEMA: Mapping[str, Key] = {
    "window": Key((dict,), required=True, keys={
        "function": _TEXT, "tvf": _TEXT, "time": _TEXT,
        **{name: _DURATION_KEY for name in _WINDOW_ARGUMENTS}, "partition_by": _TEXTS,
        "keys": _TEXTS, "aggregates": Key((dict,), required=True), "grouping_sets": Key((list,)), "rollup": _TEXTS,
        "cube": _TEXTS, "functions": Key((dict,)),
    }),
    "input": _SOURCE,
    "output": _OUTPUT,
    "checkpoint": _TEXT,
    "trigger": _TRIGGER,
}
#: A Python function's reference in a job config: ``package.module:attr``.
FUNCTION_REFERENCE = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*")


def _window_grouping(w: Mapping[str, Any]) -> GroupingSets | None:
    """The window section's ``grouping_sets`` / ``rollup`` / ``cube`` (at most one; not with ``keys``)."""
    given = {name: w[name] for name in GROUPING_FORMS if name in w}
    if not given:
        return None
    if "keys" in w:
        raise ConfigError(f"window.{next(iter(given))}", "give the key columns once: either 'keys' or the grouping "
                          "sets (whose sets name them)")
    if len(given) > 1:
        raise ConfigError("window", f"give one of {', '.join(GROUPING_FORMS)}, not {', '.join(given)}")
    name, value = next(iter(given.items()))
    if name in ("rollup", "cube") and isinstance(value, str):
        value = [value]
    try:
        return GroupingSets.of(**{name: value})
    except SpecError as error:
        raise ConfigError(f"window.{name}", error.message) from None


def _window_functions(w: Mapping[str, Any]) -> dict[str, str]:
    """The window section's ``functions``: UDF name -> ``package.module:attr`` (checked, not imported)."""
    functions = dict(w.get("functions") or {})
    for name, reference in functions.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ConfigError("window.functions", f"{name!r} is not a function name (letters, digits, _)")
        if not isinstance(reference, str) or not FUNCTION_REFERENCE.fullmatch(reference):
            raise ConfigError(f"window.functions.{name}", f"expected 'package.module:attr', got {reference!r}")
    return functions


def _window_duration(value: str | int, name: str, section: str = "window") -> str | int:
    """A window duration of the config: text as it is, an integer as the config's durations are, µs (window bounds
    are whole ms, as in Flink).

    >>> _window_duration(60_000_000, "size"), _window_duration("-8 hours", "offset")
    (60000, '-8 hours')
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value % 1000:
            raise ConfigError(f"{section}.{name}", f"{value} µs is not a whole number of milliseconds")
        return value // 1000
    return value


def _window_spec(w: Mapping[str, Any], section: str = "window") -> tuple[WindowSpec, str]:
    """The ``window`` section's spec and event-time column: from ``tvf`` (Flink's call text) or from ``function``
    and its arguments (:data:`WINDOW_FUNCTIONS`), never both.  ``section`` names the section in errors."""
    given = [name for name in (*_WINDOW_ARGUMENTS, "partition_by") if w.get(name) is not None]
    if w.get("tvf") is not None:
        clash = [name for name in ("function", "time", *given) if w.get(name) is not None]
        if clash:
            raise ConfigError(f"{section}.{clash[0]}", "give the window either as 'tvf' (the call's text) or as "
                              "'function', 'time' and its arguments, not both")
        try:
            calls = find_window_tvfs(w["tvf"])
        except QuerySyntaxError as error:
            raise ConfigError(f"{section}.tvf", str(error)) from None
        if len(calls) != 1 or w["tvf"][:calls[0].start].strip() or w["tvf"][calls[0].end:].strip():
            raise ConfigError(f"{section}.tvf", "expected one window TVF call, e.g. \"TUMBLE(TABLE input, "
                              "DESCRIPTOR(ts), INTERVAL '10' MINUTES)\"")
        return calls[0].spec, calls[0].time_column
    function = w.get("function")
    if function is None:
        raise ConfigError(f"{section}.function", "missing key (required): one of tumble, hop, cumulate, session "
                          "(or give 'tvf', the call's text)")
    arguments = WINDOW_FUNCTIONS.get(str(function).lower())
    if arguments is None:
        close = difflib.get_close_matches(str(function).lower(), list(WINDOW_FUNCTIONS), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"use one of {', '.join(WINDOW_FUNCTIONS)}"
        raise ConfigError(f"{section}.function", f"unknown window function {function!r}; {hint}")
    for name in given:
        if name not in arguments:
            raise ConfigError(f"{section}.{name}", f"not an argument of {function.upper()} (its arguments: "
                              f"{', '.join(arguments)})")
    if w.get("time") is None:
        raise ConfigError(f"{section}.time", "missing key (required): the event-time column (the DESCRIPTOR's)")
    values = {name: _window_duration(w[name], name, section) if name != "partition_by" else w[name]
              for name in arguments if w.get(name) is not None}
    for name in arguments:
        if name not in ("offset", "partition_by") and name not in values:
            raise ConfigError(f"{section}.{name}", f"missing key (required by {function.upper()})")
    try:
        return getattr(window_specs, str(function).lower())(**values), w["time"]
    except SpecError as error:
        raise ConfigError(f"{section}.{error.argument}", error.message) from None


@dataclass(frozen=True)
class WindowJobConfig:
    """A window aggregation streaming or backfill job; see the module docstring for the JSON shape.

    ``spec`` is the window (a core spec), ``time`` the event-time column (the watermark's: ``input.watermark_delay``
    is its allowed out-of-orderness), ``keys`` the GROUP BY columns, ``aggregates`` output name -> text.

    >>> job = WindowJobConfig.from_dict({
    ...     "window": {"tvf": "TUMBLE(TABLE input, DESCRIPTOR(ts), INTERVAL '1' MINUTE)", "keys": "k",
    ...                "aggregates": {"n": "COUNT(*)"}},
    ...     "input": {"path": "in", "format": "json", "schema": "k STRING, ts TIMESTAMP"}, "output": {"path": "out"}})
    >>> job.spec, job.time, job.keys, job.late_path
    (TumbleSpec(size=60000, offset=0), 'ts', ('k',), 'out_late')
    >>> WindowJobConfig.from_dict({"window": {"function": "hop", "time": "ts", "size": "10 minutes", "gap": "1 minute",
    ...     "aggregates": {"n": "COUNT(*)"}}, "input": {"path": "in", "format": "json", "schema": "ts TIMESTAMP"},
    ...     "output": {"path": "out"}})
    Traceback (most recent call last):
    ...
    timeweave.jobs.config.ConfigError: job config: window.gap: not an argument of HOP (its arguments: slide, size, offset)
    """

    spec: WindowSpec
    time: str
    keys: tuple[str, ...]
    aggregates: Mapping[str, str]
    input: SourceConfig
    output_path: str
    late_path: str
    dead_letter_path: str
    checkpoint: str | None = None
    available_now: bool = True
    processing_time: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)
    #: GROUPING SETS / ROLLUP / CUBE instead of ``keys``
    grouping: GroupingSets | None = None
    #: Python UDFs to register before the query: name -> ``package.module:attr``
    functions: Mapping[str, str] = field(default_factory=dict)

    @property
    def event_time(self) -> str:
        """The event-time column (the watermark's)."""
        return self.time

    @property
    def mode(self) -> str:
        """Always ``event_time`` (windows fire when the watermark passes their end)."""
        return "event_time"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WindowJobConfig:
        if isinstance(data, Mapping):
            for section in ("left", "right", "versioned", "join", "match_recognize"):
                if section in data:
                    raise ConfigError(section, "this section belongs to another operator's job, not a window "
                                      "aggregation job (a config with a 'window' section)")
        check_keys(data, WINDOW_SCHEMA)
        w = data["window"]
        spec, time = _window_spec(w)
        aggregates = dict(w["aggregates"])
        if not aggregates:
            raise ConfigError("window.aggregates", "expected output name -> aggregate text (at least one)")
        for name, text in aggregates.items():
            if not isinstance(text, str) or not text.strip():
                raise ConfigError(f"window.aggregates.{name}", f"expected the aggregate as SQL text such as "
                                  f"'SUM(price)', got {text!r}")
        if len({n.lower() for n in aggregates}) != len(aggregates):
            raise ConfigError("window.aggregates", f"two aggregates share an output name in {list(aggregates)}")
        grouping = _window_grouping(w)
        if grouping is not None and isinstance(spec, window_specs.SessionSpec):
            raise ConfigError("window.function", "a SESSION window aggregation merges sessions per key: grouping "
                              "sets are supported with TUMBLE, HOP and CUMULATE")
        keys = w.get("keys") or ()
        available_now, processing_time = _trigger(data)
        return cls(
            spec=spec, time=time, keys=(keys,) if isinstance(keys, str) else tuple(keys), aggregates=aggregates,
            grouping=grouping, functions=_window_functions(w),
            input=SourceConfig.from_dict(data["input"], "input"),
            **_output_paths(data),
            checkpoint=data.get("checkpoint"),
            available_now=available_now,
            processing_time=processing_time,
            raw=dict(data),
        )

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any]) -> WindowJobConfig:
        """From a dict, a JSON string or a path to a JSON file."""
        return cls.from_dict(_read_json(source))


_RANK_WINDOW_KEYS = {"function": _TEXT, "tvf": _TEXT, "time": _TEXT,
                     **{name: _DURATION_KEY for name in _WINDOW_ARGUMENTS if name != "gap"}, "keys": _TEXTS}
#: Every key a window Top-N job config reads (:class:`WindowTopNJobConfig`).
WINDOW_TOP_N_SCHEMA: Mapping[str, Key] = {
    "window_top_n": Key((dict,), required=True, keys={
        **_RANK_WINDOW_KEYS, "order_by": Key((str, list), required=True, items=str), "n": Key((int,)),
        "ranks": Key((list,), items=int), "rank_function": _TEXT, "rank_column": Key((str, bool)),
    }),
    "input": _SOURCE, "output": _OUTPUT, "checkpoint": _TEXT, "trigger": _TRIGGER,
}
#: Every key a window deduplication job config reads (:class:`WindowDeduplicateJobConfig`).
WINDOW_DEDUPLICATE_SCHEMA: Mapping[str, Key] = {
    "window_deduplicate": Key((dict,), required=True, keys={**_RANK_WINDOW_KEYS, "keep": _TEXT, "rank_column": _TEXT}),
    "input": _SOURCE, "output": _OUTPUT, "checkpoint": _TEXT, "trigger": _TRIGGER,
}
_OTHER_SECTIONS = ("left", "right", "versioned", "join", "match_recognize", "window", "window_top_n", "window_deduplicate",
                   "window_join", "group_aggregate", "datastream")


@dataclass(frozen=True)
class WindowRankJobConfig:
    """A window Top-N or window deduplication streaming or backfill job (one input, Flink's window ranking): the
    window (``spec``, ``time``: the watermark's column), the PARTITION BY ``keys``, the ORDER BY (``order_by``
    texts, ``"price DESC"``), the rank range (``ranks``), the rank's output column (``rank_column``; None: left
    out) and, for a deduplication, ``keep`` (``first`` / ``last``; None: a Top-N).  Built by the two sections'
    classes, :class:`WindowTopNJobConfig` and :class:`WindowDeduplicateJobConfig`."""

    spec: WindowSpec
    time: str
    keys: tuple[str, ...]
    order_by: tuple[str, ...]
    ranks: RankRange
    rank_column: str | None
    keep: str | None
    input: SourceConfig
    output_path: str
    late_path: str
    dead_letter_path: str
    checkpoint: str | None = None
    available_now: bool = True
    processing_time: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    section: ClassVar[str] = ""
    operation: ClassVar[str] = ""
    schema: ClassVar[Mapping[str, Key]] = {}

    @property
    def event_time(self) -> str:
        """The event-time column (the watermark's)."""
        return self.time

    @property
    def mode(self) -> str:
        """Always ``event_time`` (windows are ranked when the watermark passes their end)."""
        return "event_time"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WindowRankJobConfig:
        section = cls.section
        if isinstance(data, Mapping):
            for other in _OTHER_SECTIONS:
                if other != section and other in data:
                    raise ConfigError(other, f"this section belongs to another operator's job, not a {cls.operation} "
                                      f"job (a config with a '{section}' section)")
        check_keys(data, cls.schema)
        w = data[section]
        spec, time = _window_spec(w, section)
        try:
            check_not_session(spec, cls.operation)
        except SpecError as error:
            raise ConfigError(f"{section}.function", error.message) from None
        keys = w.get("keys") or ()
        order_by, ranks, rank_column, keep = cls._ranking(w)
        available_now, processing_time = _trigger(data)
        return cls(
            spec=spec, time=time, keys=(keys,) if isinstance(keys, str) else tuple(keys), order_by=order_by,
            ranks=ranks, rank_column=rank_column, keep=keep, input=SourceConfig.from_dict(data["input"], "input"),
            **_output_paths(data), checkpoint=data.get("checkpoint"), available_now=available_now,
            processing_time=processing_time, raw=dict(data),
        )

    @classmethod
    def _ranking(cls, w: Mapping[str, Any]) -> tuple[tuple[str, ...], RankRange, str | None, str | None]:
        raise NotImplementedError

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any]) -> WindowRankJobConfig:
        """From a dict, a JSON string or a path to a JSON file."""
        return cls.from_dict(_read_json(source))


@dataclass(frozen=True)
class WindowTopNJobConfig(WindowRankJobConfig):
    """A window Top-N job (section ``window_top_n``; module docstring): ``n`` (ranks 1..n) or ``ranks`` ([lower,
    upper], Flink's ``BETWEEN``), ``rank_function`` (``ROW_NUMBER``, ``RANK``, ``DENSE_RANK``), ``rank_column``
    (default ``rownum``; ``false``: left out).

    >>> job = WindowTopNJobConfig.from_dict({"window_top_n": {"function": "tumble", "time": "ts", "size": "10 minutes",
    ...     "keys": "k", "order_by": "price DESC", "n": 3}, "output": {"path": "out"},
    ...     "input": {"path": "in", "format": "json", "schema": "k STRING, ts TIMESTAMP, price INT"}})
    >>> job.spec, job.order_by, job.ranks, job.rank_column
    (TumbleSpec(size=600000, offset=0), ('price DESC',), RankRange(function='ROW_NUMBER', lower=1, upper=3), 'rownum')
    >>> WindowTopNJobConfig.from_dict({"window_top_n": {"function": "tumble", "time": "ts", "size": "10 minutes",
    ...     "order_by": "price DESC", "n": 3, "rank_fuction": "RANK"}, "output": {"path": "out"},
    ...     "input": {"path": "in", "format": "json", "schema": "ts TIMESTAMP, price INT"}})
    Traceback (most recent call last):
    ...
    timeweave.jobs.config.ConfigError: job config: window_top_n.rank_fuction: unknown key; did you mean 'rank_function'?
    """

    section: ClassVar[str] = "window_top_n"
    operation: ClassVar[str] = "window Top-N"
    schema: ClassVar[Mapping[str, Key]] = WINDOW_TOP_N_SCHEMA

    @classmethod
    def _ranking(cls, w: Mapping[str, Any]) -> tuple[tuple[str, ...], RankRange, str | None, str | None]:
        order = w["order_by"]
        order_by = (order,) if isinstance(order, str) else tuple(order)
        try:
            sort_keys(order_by)
        except SpecError as error:
            raise ConfigError("window_top_n.order_by", error.message) from None
        n, between = w.get("n"), w.get("ranks")
        if (n is None) == (between is None):
            raise ConfigError("window_top_n.n", "give exactly one of 'n' (ranks 1..n) and 'ranks' ([lower, upper])")
        function = w.get("rank_function") or "ROW_NUMBER"
        try:
            if n is not None:
                ranks = RankRange.top(n, function)
            else:
                if len(between) != 2:
                    raise ConfigError("window_top_n.ranks", f"expected [lower, upper], got {between!r}")
                ranks = RankRange(function, between[0], between[1])
        except ConfigError:
            raise
        except SpecError as error:
            name = {"function": "rank_function", "lower": "ranks", "upper": "n" if n is not None else "ranks"}
            raise ConfigError(f"window_top_n.{name.get(error.argument, error.argument)}", error.message) from None
        column = w.get("rank_column", "rownum")
        if column is True or column == "":
            raise ConfigError("window_top_n.rank_column", "expected the rank's column name, or false to leave it out")
        return order_by, ranks, (None if column is False else column), None


@dataclass(frozen=True)
class WindowDeduplicateJobConfig(WindowRankJobConfig):
    """A window deduplication job (section ``window_deduplicate``; module docstring): per window and ``keys`` the
    ``keep`` = ``first`` (default) or ``last`` row by the time column; ``rank_column`` adds the row number (1).

    >>> job = WindowDeduplicateJobConfig.from_dict({"window_deduplicate": {"tvf": "HOP(TABLE bids, DESCRIPTOR(ts), "
    ...     "INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)", "keys": ["k"], "keep": "last"}, "output": {"path": "out"},
    ...     "input": {"path": "in", "format": "json", "schema": "k STRING, ts TIMESTAMP"}})
    >>> job.spec, job.order_by, job.keep
    (HopSpec(slide=300000, size=600000, offset=0), ('ts DESC',), 'last')
    """

    section: ClassVar[str] = "window_deduplicate"
    operation: ClassVar[str] = "window deduplication"
    schema: ClassVar[Mapping[str, Key]] = WINDOW_DEDUPLICATE_SCHEMA

    @classmethod
    def _ranking(cls, w: Mapping[str, Any]) -> tuple[tuple[str, ...], RankRange, str | None, str | None]:
        keep = w.get("keep") or "first"
        time = w.get("time")
        if time is None:  # given in 'tvf'
            time = find_window_tvfs(w["tvf"])[0].time_column
        try:
            order = dedup_order(time, keep)
        except SpecError as error:
            raise ConfigError("window_deduplicate.keep", error.message) from None
        quoted = "`" + order.column.replace("`", "``") + "`" if not order.column.isidentifier() else order.column
        return (f"{quoted} {'DESC' if order.descending else 'ASC'}",), RankRange.top(1), w.get("rank_column"), keep


#: Every key a window join job config reads (:class:`WindowJoinJobConfig`).
WINDOW_JOIN_SCHEMA: Mapping[str, Key] = {
    "window_join": Key((dict,), required=True, keys={
        **{k: v for k, v in _RANK_WINDOW_KEYS.items() if k != "keys"}, "right_time": _TEXT, "on": _TEXTS, "right_on": _TEXTS, "how": _TEXT,
        "left_prefix": _TEXT, "right_prefix": _TEXT,
    }),
    "left": _SOURCE, "right": _SOURCE, "output": _OUTPUT, "checkpoint": _TEXT, "trigger": _TRIGGER,
}


@dataclass(frozen=True)
class WindowJoinJobConfig:
    """A window join streaming or backfill job (section ``window_join``, sources ``left`` and ``right``): both inputs windowed
    by one TVF (``spec``; ``time`` the left's event-time column, ``right_time`` the right's), joined on the window
    and ``on`` (the left's key columns; ``right_on`` the right's when named otherwise), ``how`` one of inner, left,
    right, full, semi, anti; the output columns prefixed by ``left_prefix`` / ``right_prefix``.  The stream's
    watermark is the larger of the two sources' ``watermark_delay`` behind the largest event time.

    >>> job = WindowJoinJobConfig.from_dict({"window_join": {"function": "tumble", "time": "row_time",
    ...     "size": "5 minutes", "on": "num", "how": "full", "left_prefix": "L_", "right_prefix": "R_"},
    ...     "left": {"path": "l", "format": "json", "schema": "row_time TIMESTAMP, num INT, id STRING"},
    ...     "right": {"path": "r", "format": "json", "schema": "row_time TIMESTAMP, num INT, id STRING"},
    ...     "output": {"path": "out"}})
    >>> job.spec, job.times, job.on, job.how
    (TumbleSpec(size=300000, offset=0), ('row_time', 'row_time'), (('num', 'num'),), 'FULL')
    """

    spec: WindowSpec
    times: tuple[str, str]
    on: tuple[tuple[str, str], ...]
    how: str
    left_prefix: str
    right_prefix: str
    left: SourceConfig
    right: SourceConfig
    output_path: str
    late_path: str
    dead_letter_path: str
    checkpoint: str | None = None
    available_now: bool = True
    processing_time: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def event_time(self) -> str:
        """The left input's event-time column."""
        return self.times[0]

    @property
    def mode(self) -> str:
        """Always ``event_time`` (windows are joined when the watermark passes their end)."""
        return "event_time"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WindowJoinJobConfig:
        if isinstance(data, Mapping):
            for other in ("versioned", "join", "match_recognize", "window", "window_top_n", "window_deduplicate",
                          "input"):
                if other in data:
                    raise ConfigError(other, "this section belongs to another operator's job, not a window join job "
                                      "(a config with a 'window_join' section)")
        check_keys(data, WINDOW_JOIN_SCHEMA)
        w = data["window_join"]
        spec, time = _window_spec({k: v for k, v in w.items() if k in _RANK_WINDOW_KEYS and k != "keys"}, "window_join")
        try:
            check_not_session(spec, "window join")
        except SpecError as error:
            raise ConfigError("window_join.function", error.message) from None
        on = w.get("on") or ()
        on = (on,) if isinstance(on, str) else tuple(on)
        right_on = w.get("right_on")
        right_on = on if right_on is None else ((right_on,) if isinstance(right_on, str) else tuple(right_on))
        if len(right_on) != len(on):
            raise ConfigError("window_join.right_on", f"as many columns as 'on': {list(on)} and {list(right_on)}")
        try:
            how = join_type(w.get("how") or "inner")
        except SpecError as error:
            raise ConfigError("window_join.how", error.message) from None
        left, right = SourceConfig.from_dict(data["left"], "left"), SourceConfig.from_dict(data["right"], "right")
        available_now, processing_time = _trigger(data)
        return cls(
            spec=spec, times=(time, w.get("right_time") or time), on=tuple(zip(on, right_on, strict=True)), how=how,
            left_prefix=w.get("left_prefix") or "", right_prefix=w.get("right_prefix") or "", left=left, right=right,
            **_output_paths(data), checkpoint=data.get("checkpoint"), available_now=available_now,
            processing_time=processing_time, raw=dict(data),
        )

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any]) -> WindowJoinJobConfig:
        """From a dict, a JSON string or a path to a JSON file."""
        return cls.from_dict(_read_json(source))


#: Every key a continuous GROUP BY job config reads.
GROUP_AGGREGATE_SCHEMA: Mapping[str, Key] = {
    "group_aggregate": Key((dict,), required=True, keys={
        "keys": _TEXTS, "aggregates": Key((dict,)), "query": _TEXT, "time": Key((str,), required=True),
        "changelog": _TEXT, "op_column": _TEXT,
        "retention": Key((dict,), keys={"min_idle": _DURATION_KEY, "max_idle": _DURATION_KEY}),
    }),
    "input": _SOURCE,
    "output": _OUTPUT,
    "checkpoint": _TEXT,
    "trigger": _TRIGGER,
}


@dataclass(frozen=True)
class GroupAggregateJobConfig:
    """A continuous ``GROUP BY`` streaming job (:mod:`timeweave.spark.group_aggregate_streaming`): one input, the
    GROUP BY ``keys``, the ``aggregates`` (output name -> text, as the window job reads them), the event-time
    column ``time`` (the watermark's: ``input.watermark_delay``; the clock of idle-state ``retention``), the
    ``changelog`` encoding of the output (``retract`` or ``upsert``) and, for an updating input, its
    ``op_column``.  Instead of ``keys`` and ``aggregates``, ``query`` gives the same as Flink's SQL
    (``SELECT user, COUNT(url) AS cnt FROM clicks GROUP BY user``, with an optional ``WHERE``:
    :mod:`timeweave.core.updates.group_sql`); its FROM relation names the job's input.

    >>> q = GroupAggregateJobConfig.from_dict({"group_aggregate": {"time": "cTime", "changelog": "upsert",
    ...     "query": "SELECT user, COUNT(url) FROM clicks WHERE url <> './home' GROUP BY user"},
    ...     "input": {"path": "in", "format": "json", "schema": "user STRING, cTime TIMESTAMP, url STRING"},
    ...     "output": {"path": "out"}})
    >>> q.keys, q.aggregates, q.where
    (('user',), {'count(url)': 'COUNT(`url`)'}, "url <> './home'")

    >>> job = GroupAggregateJobConfig.from_dict({
    ...     "group_aggregate": {"keys": ["user"], "aggregates": {"cnt": "COUNT(url)"}, "time": "cTime",
    ...                         "changelog": "upsert", "retention": {"min_idle": "1 hour"}},
    ...     "input": {"path": "in", "format": "json", "schema": "user STRING, cTime TIMESTAMP, url STRING"},
    ...     "output": {"path": "out"}})
    >>> job.keys, job.changelog, job.retention.max_idle
    (('user',), <ChangelogMode.UPSERT: 'upsert'>, 3600000000)
    >>> GroupAggregateJobConfig.from_dict({"group_aggregate": {"keys": "user", "aggregates": {"n": "COUNT(*)"},
    ...     "time": "t", "changelg": "retract"}, "input": {"path": "in", "format": "json", "schema": "t TIMESTAMP"},
    ...     "output": {"path": "out"}})
    Traceback (most recent call last):
    ...
    timeweave.jobs.config.ConfigError: job config: group_aggregate.changelg: unknown key; did you mean 'changelog'?
    """

    keys: tuple[str, ...]
    aggregates: Mapping[str, str]
    time: str
    changelog: ChangelogMode
    input: SourceConfig
    output_path: str
    late_path: str
    dead_letter_path: str
    op_column: str | None = None
    retention: StateRetention | None = None
    checkpoint: str | None = None
    available_now: bool = True
    processing_time: str | None = None
    #: the query's WHERE condition as written (None: none, or no ``query``), and the name it qualifies columns by
    where: str | None = None
    qualifier: str | None = None
    query: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def event_time(self) -> str:
        """The event-time column (the watermark's)."""
        return self.time

    @property
    def mode(self) -> str:
        """Always ``event_time`` (retention runs on the watermark)."""
        return "event_time"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GroupAggregateJobConfig:
        if isinstance(data, Mapping):
            for section in ("left", "right", "versioned", "join", "match_recognize", "window"):
                if section in data:
                    raise ConfigError(section, "this section belongs to another operator's job, not a continuous "
                                      "GROUP BY job (a config with a 'group_aggregate' section)")
        check_keys(data, GROUP_AGGREGATE_SCHEMA)
        g = data["group_aggregate"]
        parsed = None
        if g.get("query") is not None:
            clash = [name for name in ("keys", "aggregates") if g.get(name) is not None]
            if clash:
                raise ConfigError(f"group_aggregate.{clash[0]}", "give the GROUP BY either as 'query' (its SQL) or as "
                                  "'keys' and 'aggregates', not both")
            try:
                parsed = parse_group_aggregate_query(g["query"])
            except QuerySyntaxError as error:
                raise ConfigError("group_aggregate.query", str(error)) from None
        keys = parsed.keys if parsed is not None else (g.get("keys") or ())
        keys = (keys,) if isinstance(keys, str) else tuple(keys)
        if not keys:
            raise ConfigError("group_aggregate.keys", "missing key (required): the GROUP BY columns (a global "
                              "aggregate is not supported), or give 'query'")
        if parsed is None and g.get("aggregates") is None:
            raise ConfigError("group_aggregate.aggregates", "missing key (required): output name -> aggregate text, "
                              "or give 'query'")
        aggregates = parsed.aggregate_texts if parsed is not None else dict(g["aggregates"])
        if not aggregates:
            raise ConfigError("group_aggregate.aggregates", "expected one or more aggregates (name -> text)")
        try:
            read_aggregates(aggregates)
        except SpecError as error:
            raise ConfigError("group_aggregate.aggregates", f"{error.where}: {error.message}" if error.where
                              else error.message) from None
        try:
            changelog = ChangelogMode.parse(g.get("changelog", "retract"))
            changelog.check("group_aggregate", updating=True, unique_key=keys)
        except SpecError as error:
            raise ConfigError("group_aggregate.changelog", error.message) from None
        retention = None
        if g.get("retention"):
            r = g["retention"]
            if r.get("min_idle") is None:
                raise ConfigError("group_aggregate.retention.min_idle", "missing key (required)")
            try:
                retention = StateRetention(
                    parse_duration(r["min_idle"], "retention.min_idle"),
                    parse_duration(r.get("max_idle", r["min_idle"]), "retention.max_idle"))
            except SpecError as error:
                raise ConfigError(f"group_aggregate.retention.{error.argument}", error.message) from None
        available_now, processing_time = _trigger(data)
        return cls(
            keys=keys, aggregates=aggregates, time=g["time"], changelog=changelog,
            input=SourceConfig.from_dict(data["input"], "input"), **_output_paths(data),
            op_column=g.get("op_column"), retention=retention, checkpoint=data.get("checkpoint"),
            available_now=available_now, processing_time=processing_time,
            where=None if parsed is None else parsed.where, qualifier=None if parsed is None else parsed.qualifier,
            query=None if parsed is None else parsed.text, raw=dict(data),
        )

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any]) -> GroupAggregateJobConfig:
        """From a dict, a JSON string or a path to a JSON file."""
        return cls.from_dict(_read_json(source))


def load_job_config(source: str | Path | Mapping[str, Any] | Any) -> Any:
    """The job config of any registered operator (:mod:`timeweave.jobs.registry`): the config's sections select
    it (a ``match_recognize`` section makes a :class:`MatchRecognizeJobConfig`; no other operator's section, a
    temporal join's :class:`JobConfig`).  A parsed config is returned as it is.

    >>> type(load_job_config('{"match_recognize": {"clause": "ORDER BY t MEASURES A.v AS v PATTERN (A) DEFINE A AS A.v > 0"}, '
    ...     '"input": {"path": "in", "format": "json", "schema": "t TIMESTAMP, v INT"}, '
    ...     '"output": {"path": "out"}}')).__name__
    'MatchRecognizeJobConfig'
    """
    if isinstance(source, config_classes()):
        return source
    data = _read_json(source)
    return operator_for(data).config_class().from_dict(data)
