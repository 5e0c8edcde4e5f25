"""Frozen, validated specifications of versioned tables and temporal joins.

Specs are engine-free.  They are validated twice, both times before any job runs: on construction
(shape: empty keys, conflicting options) and against the input schemas by :meth:`bind` (unknown
columns, wrong types).  Adapters then translate them; they never re-decide a rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from timeweave.core.errors import SpecError

#: Column kinds the specs reason about; adapters map engine types onto these.
TIMESTAMP = "timestamp"  # an instant (Spark's TIMESTAMP, Flink's TIMESTAMP_LTZ)
TIMESTAMP_NTZ = "timestamp_ntz"  # a wall clock without a zone (Spark's TIMESTAMP_NTZ, Flink's TIMESTAMP)
DATE = "date"
INTEGER = "integer"  # TINYINT .. BIGINT
DECIMAL = "decimal"
FLOATING = "floating"  # FLOAT, DOUBLE
BOOLEAN = "boolean"
STRING = "string"
Schema = Mapping[str, str]  # column name -> kind (the constants above, or "other")

#: The time domain of each kind a batch temporal join's time column may have (any orderable column, as
#: DuckDB's, polars' and Spark's as-of joins take).  A left and a right time compare only within one domain:
#: an instant with a wall clock (the plan reads both as µs), a number with a number, a date with a date.
#: Which version a left row gets is the same rule in every domain: the newest event at or before its time.
TIME_DOMAINS: Mapping[str, str] = {
    TIMESTAMP: "timestamp", TIMESTAMP_NTZ: "timestamp", DATE: "date",
    INTEGER: "numeric", DECIMAL: "numeric", FLOATING: "numeric",
}
#: The kinds a streaming temporal join's event times may have: Spark's watermark is defined on timestamps.
STREAMING_TIME_KINDS = (TIMESTAMP, TIMESTAMP_NTZ)


def time_domain_of(schema: Schema, column: str, argument: str, where: str) -> str:
    """The time domain (:data:`TIME_DOMAINS`) of ``column``, or a :class:`SpecError` naming it and its kind.

    >>> time_domain_of({"t": "date"}, "t", "time", "versioned")
    'date'
    >>> time_domain_of({"t": "string"}, "t", "time", "versioned")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: versioned: argument 'time': column 't' must be a timestamp, date or number (an orderable time), found string
    """
    domain = TIME_DOMAINS.get(schema[column])
    if domain is None:
        raise SpecError(
            argument, f"column '{column}' must be a timestamp, date or number (an orderable time), found {schema[column]}",
            where=where,
        )
    return domain


class VersionFormat(StrEnum):
    """How the rows of a versioned table's source describe versions."""

    APPEND = "append"  # every row is a new version of its key, valid from its time
    CHANGELOG = "changelog"  # an op column: +I/-U/+U/-D or Debezium c/r/u/d
    UPSERT = "upsert"  # primary key + optional boolean delete flag


class JoinType(StrEnum):
    INNER = "inner"
    LEFT = "left"


def _names(value: str | Sequence[str] | None, argument: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else tuple(value)
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise SpecError(argument, f"column names must be non-empty strings, got {name!r}", where=where)
    if len(set(names)) != len(names):
        raise SpecError(argument, f"duplicate column in {list(names)}", where=where)
    return names


def _require_columns(schema: Schema, names: Sequence[str], argument: str, where: str) -> None:
    for name in names:
        if name not in schema:
            raise SpecError(argument, f"column '{name}' not found; available: {sorted(schema)}", where=where)


@dataclass(frozen=True)
class VersionedTableSpec:
    """A versioned table: which columns identify a key, when each version starts, how rows encode changes.

    A version is valid from its time (inclusive) to the next event of its key (exclusive); a delete
    event at ``t`` ends validity at ``t``.  Without key columns (``key=()``) the table is one history (a
    price index, a calendar of rates), which batch doors join every left row against.  The time is any
    orderable column (:data:`TIME_DOMAINS`; streaming needs a timestamp).  Several events for one key at one time: the last in input
    order wins (Flink keeps the last arrival); ``sequence`` names a column that defines that order
    explicitly, which makes every door deterministic.

    >>> spec = VersionedTableSpec(key="currency", time="update_time", format="changelog", op="op")
    >>> spec.key, spec.format.value
    (('currency',), 'changelog')
    >>> VersionedTableSpec(key=(), time="day").key
    ()
    """

    key: tuple[str, ...]
    time: str
    format: VersionFormat = VersionFormat.APPEND
    op: str | None = None
    delete_flag: str | None = None
    sequence: str | None = None
    where: str = "versioned"

    def __init__(
        self,
        key: str | Sequence[str] | None,
        time: str,
        format: str | VersionFormat = VersionFormat.APPEND,  # noqa: A002 - mirrors the user-facing name
        op: str | None = None,
        delete_flag: str | None = None,
        sequence: str | None = None,
        where: str = "versioned",
    ) -> None:
        keys = _names(key, "key", where)  # none: one history for the whole table
        if not isinstance(time, str) or not time.strip():
            raise SpecError("time", "a version-time column is required", where=where)
        try:
            fmt = VersionFormat(format)
        except ValueError:
            options = [f.value for f in VersionFormat]
            raise SpecError("format", f"unknown format {format!r}; use one of {options}", where=where) from None
        if fmt is VersionFormat.CHANGELOG and not op:
            raise SpecError("op", "format 'changelog' needs the op column (+I/-U/+U/-D or c/r/u/d)", where=where)
        if fmt is not VersionFormat.CHANGELOG and op:
            raise SpecError("op", f"an op column only applies to format 'changelog', not '{fmt.value}'", where=where)
        if fmt is not VersionFormat.UPSERT and delete_flag:
            raise SpecError("delete_flag", f"a delete flag only applies to format 'upsert', not '{fmt.value}'", where=where)
        if time in keys:
            raise SpecError("time", f"column '{time}' is also a key column", where=where)
        for name, argument in ((op, "op"), (delete_flag, "delete_flag"), (sequence, "sequence")):
            if name is not None and (name in keys or name == time):
                raise SpecError(argument, f"column '{name}' is already used as key or time", where=where)
        object.__setattr__(self, "key", keys)
        object.__setattr__(self, "time", time)
        object.__setattr__(self, "format", fmt)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "delete_flag", delete_flag)
        object.__setattr__(self, "sequence", sequence)
        object.__setattr__(self, "where", where)

    @property
    def meta_columns(self) -> tuple[str, ...]:
        """Columns that describe the change rather than the version's payload."""
        return tuple(c for c in (self.op, self.delete_flag, self.sequence) if c)

    def payload_columns(self, schema: Schema) -> tuple[str, ...]:
        """The version's data columns: everything but key, time and meta columns, in schema order."""
        used = set(self.key) | {self.time} | set(self.meta_columns)
        return tuple(c for c in schema if c not in used)

    def bind(self, schema: Schema) -> VersionedTableSpec:
        """Check the spec against the source's schema; returns self so calls chain.

        >>> VersionedTableSpec("k", "t").bind({"k": "string", "t": "string"})
        Traceback (most recent call last):
        ...
        timeweave.core.errors.SpecError: versioned: argument 'time': column 't' must be a timestamp, date or number (an orderable time), found string
        """
        _require_columns(schema, self.key, "key", self.where)
        _require_columns(schema, [self.time], "time", self.where)
        time_domain_of(schema, self.time, "time", self.where)
        for name, argument in ((self.op, "op"), (self.delete_flag, "delete_flag"), (self.sequence, "sequence")):
            if name is not None:
                _require_columns(schema, [name], argument, self.where)
        if self.delete_flag and schema[self.delete_flag] != BOOLEAN:
            raise SpecError("delete_flag", f"column '{self.delete_flag}' must be boolean, found {schema[self.delete_flag]}", where=self.where)
        return self


@dataclass(frozen=True)
class ValidityColumns:
    """Names of the optional output columns that show the matched version's validity interval."""

    valid_from: str = "valid_from"
    valid_to: str | None = "valid_to"


@dataclass(frozen=True)
class TemporalJoinSpec:
    """An event-time temporal join ``left JOIN versioned FOR SYSTEM_TIME AS OF left.time ON keys``.

    Each left row is matched with the version of its key valid at the left row's time (the latest
    upsert at or before it, unless a later delete at or before it ended it).  ``predicate`` is an
    extra SQL condition over left and right columns applied to *that* version only: when it fails,
    a LEFT join pads NULLs and an INNER join drops the row (as Flink does).

    >>> rates = VersionedTableSpec("currency", "update_time")
    >>> spec = TemporalJoinSpec(rates, left_time="order_time", left_key="currency", how="left")
    >>> spec.how.value, spec.left_key, spec.right_key
    ('left', ('currency',), ('currency',))
    """

    versioned: VersionedTableSpec
    left_time: str
    left_key: tuple[str, ...]
    right_key: tuple[str, ...]
    how: JoinType = JoinType.INNER
    right_columns: tuple[str, ...] | None = None
    right_prefix: str = ""
    validity: ValidityColumns | None = None
    predicate: str | None = None
    where: str = "temporal_join"

    def __init__(
        self,
        versioned: VersionedTableSpec,
        left_time: str,
        left_key: str | Sequence[str] | None = None,
        how: str | JoinType = JoinType.INNER,
        right_columns: Sequence[str] | None = None,
        right_prefix: str = "",
        validity: ValidityColumns | bool | None = None,
        predicate: str | None = None,
        where: str = "temporal_join",
    ) -> None:
        if not isinstance(versioned, VersionedTableSpec):
            raise SpecError("versioned", "expected a VersionedTableSpec", where=where)
        left_keys = _names(left_key, "left_key", where) or versioned.key
        if len(left_keys) != len(versioned.key):
            raise SpecError(
                "left_key",
                f"{len(left_keys)} left key column(s) {list(left_keys)} for {len(versioned.key)} versioned key column(s) {list(versioned.key)}",
                where=where,
            )
        if not isinstance(left_time, str) or not left_time.strip():
            raise SpecError("left_time", "the left side's event-time column is required", where=where)
        try:
            join_type = JoinType(how.lower() if isinstance(how, str) else how)
        except ValueError:
            raise SpecError("how", f"unknown join type {how!r}; use 'inner' or 'left'", where=where) from None
        if right_columns is not None:
            right_columns = _names(right_columns, "right_columns", where)
        if validity is True:
            validity = ValidityColumns()
        elif validity is False:
            validity = None
        if predicate is not None and not predicate.strip():
            raise SpecError("predicate", "an empty predicate; pass None for no extra condition", where=where)
        for name, value in (
            ("versioned", versioned), ("left_time", left_time), ("left_key", left_keys), ("right_key", versioned.key),
            ("how", join_type), ("right_columns", right_columns), ("right_prefix", right_prefix),
            ("validity", validity), ("predicate", predicate), ("where", where),
        ):
            object.__setattr__(self, name, value)

    @property
    def keeps_unmatchable_left(self) -> bool:
        """Whether a left row with a NULL key or NULL time is output, unmatched, instead of dead-lettered.

        Such a row can never match a version (NULL equals nothing; a NULL time is before and after
        nothing).  A LEFT join keeps every left row, as SQL's LEFT JOIN, Flink and DuckDB do: the row is
        output with the right side NULL and is no dead letter.  An INNER join would drop it, so it goes
        to the dead letter with the reason.  The batch plan states the same rule in
        ``timeweave__probe_sql`` / ``timeweave__dead_letter_sql``; the streaming and backfill doors read
        this property.

        >>> rates = VersionedTableSpec("currency", "update_time")
        >>> [TemporalJoinSpec(rates, "ts", how=how).keeps_unmatchable_left for how in ("left", "inner")]
        [True, False]
        """
        return self.how is JoinType.LEFT

    @property
    def unmatchable_left_columns(self) -> tuple[str, ...]:
        """The left columns a NULL in which makes a left row unmatchable (its keys, then its time): the row is
        then output unmatched (:attr:`keeps_unmatchable_left`) or a dead letter, whose reason names the first
        such column in this order (``NULL key column <k>`` / ``NULL time column <t>``, the plan's
        ``timeweave__reject_reason``).  Doors that must find those rows cheaply (the backfill: a scan that
        skips row groups without NULLs) test these columns, not a rule of their own.

        >>> TemporalJoinSpec(VersionedTableSpec("currency", "update_time"), "ts").unmatchable_left_columns
        ('currency', 'ts')
        """
        return (*self.left_key, self.left_time)

    @property
    def keyless(self) -> bool:
        """Whether the versioned side is one history (no key columns): every left row probes it."""
        return not self.versioned.key

    def time_domain(self, left_schema: Schema, right_schema: Schema) -> str:
        """The one time domain (:data:`TIME_DOMAINS`) of both sides' time columns, which the plan renders; an
        error names both columns and kinds when they cannot be compared.

        >>> spec = TemporalJoinSpec(VersionedTableSpec((), "day"), left_time="ordered_on")
        >>> spec.time_domain({"ordered_on": "date"}, {"day": "date"})
        'date'
        >>> spec.time_domain({"ordered_on": "timestamp"}, {"day": "date"})
        Traceback (most recent call last):
        ...
        timeweave.core.errors.SpecError: temporal_join: argument 'left_time': left time 'ordered_on' (timestamp) and version time 'day' (date) cannot be compared: both must be timestamps, both dates or both numbers
        """
        right = time_domain_of(right_schema, self.versioned.time, "time", self.versioned.where)
        left = time_domain_of(left_schema, self.left_time, "left_time", self.where)
        if left != right:
            raise SpecError(
                "left_time",
                f"left time '{self.left_time}' ({left_schema[self.left_time]}) and version time '{self.versioned.time}' "
                f"({right_schema[self.versioned.time]}) cannot be compared: both must be timestamps, both dates or both numbers",
                where=self.where,
            )
        return left

    def check_streaming(self, left_schema: Schema, right_schema: Schema) -> None:
        """The streaming door's limits beyond :meth:`bind`: key columns, and timestamp event times (Spark's watermark).

        >>> TemporalJoinSpec(VersionedTableSpec((), "t"), left_time="t").check_streaming({"t": "timestamp"}, {"t": "timestamp"})
        Traceback (most recent call last):
        ...
        timeweave.core.errors.SpecError: temporal_join: argument 'key': a streaming temporal join needs key columns (its state is per key); join a keyless versioned table in a batch door or the backfill
        """
        if self.keyless:
            raise SpecError(
                "key", "a streaming temporal join needs key columns (its state is per key); join a keyless versioned "
                "table in a batch door or the backfill", where=self.where,
            )
        for schema, column, argument in ((left_schema, self.left_time, "left_time"), (right_schema, self.versioned.time, "time")):
            if schema[column] not in STREAMING_TIME_KINDS:
                raise SpecError(
                    argument, f"column '{column}' must be a timestamp in a streaming temporal join (Spark's watermark "
                    f"is on timestamps), found {schema[column]}; batch doors and the backfill take it as it is",
                    where=self.where,
                )

    def output_right_columns(self, right_schema: Schema) -> tuple[tuple[str, str], ...]:
        """(source column, output name) pairs of the right side's columns in the output."""
        chosen = self.right_columns if self.right_columns is not None else self.versioned.payload_columns(right_schema)
        return tuple((c, f"{self.right_prefix}{c}") for c in chosen)

    def bind(self, left_schema: Schema, right_schema: Schema) -> TemporalJoinSpec:
        """Check columns and types on both sides, and that output names do not collide."""
        self.versioned.bind(right_schema)
        _require_columns(left_schema, self.left_key, "left_key", self.where)
        _require_columns(left_schema, [self.left_time], "left_time", self.where)
        self.time_domain(left_schema, right_schema)
        if self.right_columns is not None:
            _require_columns(right_schema, self.right_columns, "right_columns", self.where)
        outputs = [name for _, name in self.output_right_columns(right_schema)]
        if self.validity is not None:
            outputs += [n for n in (self.validity.valid_from, self.validity.valid_to) if n]
        for name in outputs:
            if name in left_schema:
                raise SpecError(
                    "right_columns",
                    f"output column '{name}' exists on the left side too; choose right_columns or set right_prefix",
                    where=self.where,
                )
        if len(set(outputs)) != len(outputs):
            raise SpecError("right_columns", f"duplicate output columns {outputs}", where=self.where)
        return self


@dataclass(frozen=True)
class StateRetention:
    """Idle-state retention, measured on the event-time clock (the watermark).

    A key untouched for ``min_idle`` is kept at least that long and dropped at most ``max_idle``
    after its last activity (Flink's min/max retention).  Flink measures processing time; Spark's
    state TTL is processing-time only and event-time jobs cannot use it, so timeweave runs the same
    rule on event-time timers, which also makes a backfill and a stream drop the same state.
    Durations are microseconds.
    """

    min_idle: int
    max_idle: int
    where: str = field(default="retention", compare=False)

    def __post_init__(self) -> None:
        if self.min_idle <= 0:
            raise SpecError("min_idle", f"must be positive, got {self.min_idle}", where=self.where)
        if self.max_idle < self.min_idle:
            raise SpecError("max_idle", f"must be >= min_idle ({self.min_idle}), got {self.max_idle}", where=self.where)
