"""The DataFrame and UDTF doors of MATCH_RECOGNIZE: the engine-free core run per Spark partition.

``match_recognize(df, clause)`` parses and validates the clause and the columns it references on the
driver (errors point into the clause text, before any Spark job), computes the output schema, then:

1. ``repartition`` by the PARTITION BY columns (one partition when there are none) and
   ``sortWithinPartitions`` by those columns and ORDER BY, so each MATCH_RECOGNIZE partition is a
   contiguous, ordered run of rows inside one Spark partition;
2. ``mapInArrow``: every Arrow batch is converted once per column (timestamps and dates through
   numpy, ~20x faster than Arrow's own conversion), turned into dict rows, and each run of one
   partition key is pushed into a :class:`~timeweave.core.pattern.PartitionMatcher` at once
   (``push_many``); a change of partition key finishes the matcher.  Memory is bounded by one Arrow
   batch plus the rows the core still needs (it releases the rest), so a 10 M-row partition never
   exists as 10 M Python objects.

The UDTF ``timeweave_match_recognize(TABLE(t), '<clause>')`` (registered by ``timeweave.register``)
runs the same core from SQL and dbt; its ``analyze`` asks Catalyst for the partitioning and order
the clause needs, so the call itself carries no PARTITION BY / ORDER BY.

Output schema (SQL:2016): ONE ROW PER MATCH gives the PARTITION BY columns then the measures; ALL ROWS
PER MATCH gives the PARTITION BY columns, the ORDER BY columns, the measures, then the other input
columns.  Measure types are the core's (:mod:`timeweave.core.pattern.schema`, one typer for every door):
COUNT and MATCH_NUMBER() are BIGINT, AVG is DOUBLE (DECIMAL(p+4, s+4) over DECIMAL(p, s), as Spark's AVG),
SUM of integers is BIGINT (DECIMAL(p+10, s) over DECIMAL(p, s), as Spark's SUM), CLASSIFIER() is STRING,
navigation/MIN/MAX keep their argument's type; this door maps the type names onto Spark types.  Rows tied on ORDER BY come in Spark's (unspecified) order, as
in Flink; order on a unique column for reproducible results.
"""

from __future__ import annotations

import functools
import hashlib
import json
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.match_sql import find_match_recognize, reposition
from timeweave.core.pattern import (
    ClauseSpec,
    MatchBudget,
    PartitionMatcher,
    PatternValidationError,
    parse_clause,
    subqueries,
)
from timeweave.core.pattern import expr as E
from timeweave.core.pattern.fast import dict_rows
from timeweave.core.pattern.partition import OutputBlock, as_dicts, null_event_time_reason
from timeweave.core.pattern.row_functions import split_row_functions
from timeweave.core.pattern.schema import (
    INTERVAL,
    NULL_TYPE,
    decimal_precision,
    normalize,
    output_schema,
    resolve_column,
)
from timeweave.spark import sql_rewrite
from timeweave.spark import temporal_join_sql as _temporal_join_sql  # noqa: F401 - its rewriter: an input relation may join
from timeweave.spark.environment import ensure_worker_python
from timeweave.spark.host.backfill import REJECT_REASON, REJECT_ROW  # the rejects' columns: the driver's names
from timeweave.spark.match_recognize_functions import visible_columns, with_row_functions
from timeweave.spark.render import quote
from timeweave.spark.render import sql_string as render_sql_string
from timeweave.spark.schema import column as named
from timeweave.spark.schema import map_in_arrow
from timeweave.spark.subqueries import inline_subqueries

UDTF_NAME = "timeweave_match_recognize"
#: The UDTF's one column when the clause has none (no PARTITION BY, no MEASURES, ONE ROW PER MATCH): Spark
#: cannot analyze a table function of zero columns (an internal assertion fails), so the UDTF outputs this
#: BOOLEAN column, always NULL, keeping one row per match (``SELECT count(*)`` counts the matches, as in
#: Trino).  The DataFrame door and ``timeweave.sql`` over a resolvable relation give the zero-column rows.
UDTF_NO_COLUMNS = "__tw_no_columns"
_OUTPUT_BATCH_ROWS = 4096  # rows per Arrow batch handed back to Spark


# -- validation and output schema (driver side, no Spark job) ----------------------------------------------


@dataclass(frozen=True)
class MatchPlan:
    """A clause bound to an input schema: what to sort by, and the output columns.

    ``keys[i]`` is the key under which the core's output dict holds output column ``schema[i]``.
    """

    spec: ClauseSpec
    input_schema: T.StructType
    schema: T.StructType
    keys: tuple[str, ...]
    partition_columns: tuple[str, ...]  # input column names (input spelling)
    order_columns: tuple[tuple[str, bool, bool], ...]  # (input column, descending, nulls_first)
    input_names: tuple[str, ...] = field(default=(), compare=False)


def _field(spec: ClauseSpec, schema: T.StructType, name: str, position: int) -> T.StructField:
    """The input field ``name`` names (the core's rule: exact, else case-insensitive, as Spark resolves columns)."""
    found = resolve_column(spec, schema.fieldNames(), name, position)
    return next(f for f in schema.fields if f.name == found)


_SPARK_TYPES: dict[str, T.DataType] = {
    "bigint": T.LongType(), "int": T.IntegerType(), "smallint": T.ShortType(), "tinyint": T.ByteType(),
    "double": T.DoubleType(), "float": T.FloatType(), "string": T.StringType(), "boolean": T.BooleanType(),
    "timestamp": T.TimestampType(), "timestamp_ntz": T.TimestampNTZType(), "date": T.DateType(),
    INTERVAL: T.DayTimeIntervalType(), NULL_TYPE: T.NullType(),
}  # fmt: skip


def _input_types(data_type: T.DataType, found: dict[str, T.DataType]) -> dict[str, T.DataType]:
    """Each input type (and array element type) by the name the core types with: Spark's ``simpleString``."""
    found.setdefault(data_type.simpleString(), data_type)
    if isinstance(data_type, T.ArrayType):
        _input_types(data_type.elementType, found)
    return found


def spark_type(type_name: str, inputs: dict[str, T.DataType]) -> T.DataType:
    """The Spark type of a core type name (:mod:`timeweave.core.pattern.schema`): an input's own type, a
    computed type, ``decimal(p,s)`` or ``array<...>`` of those.

    >>> spark_type("array<decimal(14,6)>", {}), spark_type("map<string,array<bigint>>", {})
    (ArrayType(DecimalType(14,6), True), MapType(StringType(), ArrayType(LongType(), True), True))
    """
    if type_name in inputs:
        return inputs[type_name]
    name = normalize(type_name)
    if name in _SPARK_TYPES:
        return _SPARK_TYPES[name]
    decimal = decimal_precision(name)
    if decimal is not None:
        return T.DecimalType(*decimal)
    if name.startswith("array<") and name.endswith(">"):
        return T.ArrayType(spark_type(type_name.strip()[len("array<"):-1], inputs), True)
    if name.startswith("map<") and name.endswith(">"):  # MAP_AGG, MULTIMAP_AGG: map<key,value>
        inner, depth = type_name.strip()[len("map<"):-1], 0
        for i, char in enumerate(inner):
            depth += (char == "<") - (char == ">")
            if char == "," and depth == 0:
                return T.MapType(spark_type(inner[:i], inputs), spark_type(inner[i + 1:], inputs), True)
    raise TypeError(f"no Spark type for the MATCH_RECOGNIZE type {type_name!r}")


def plan(spec: ClauseSpec | str, schema: T.StructType) -> MatchPlan:
    """Bind ``spec`` to an input ``schema``: check every column, compute the output schema.

    The typing is the core's (:func:`timeweave.core.pattern.schema.output_schema`, over the input types'
    Spark names); this door maps the type names back onto Spark types.  Raises
    :class:`~timeweave.core.pattern.PatternValidationError` positioned in the clause text.

    >>> s = T.StructType([T.StructField("k", T.StringType()), T.StructField("t", T.LongType()),
    ...                   T.StructField("p", T.IntegerType()), T.StructField("d", T.DecimalType(10, 2))])
    >>> p = plan("PARTITION BY k ORDER BY t MEASURES AVG(A.p) AS a, COUNT(*) AS n, AVG(A.d) AS ad, SUM(A.d) AS sd "
    ...          "PATTERN (A+) DEFINE A AS A.p > 0", s)
    >>> p.schema.simpleString()
    'struct<k:string,a:double,n:bigint,ad:decimal(14,6),sd:decimal(20,2)>'
    """
    if isinstance(spec, str):
        spec = parse_clause(spec)
    subqueries.reject(spec, "this door")  # timeweave.sql and timeweave.match_recognize inline them first
    # per-row function calls read the hidden columns the door added (match_recognize_functions)
    split = split_row_functions(spec)
    split.check_input(schema.fieldNames(), "the UDTF timeweave_match_recognize (dbt, or SQL over a CTE)")
    spec = split.spec
    inputs: dict[str, T.DataType] = {}
    for f in schema.fields:
        _input_types(f.dataType, inputs)
    bound = output_schema(spec, [(f.name, f.dataType.simpleString()) for f in schema.fields])
    fields = [T.StructField(name, spark_type(type_name, inputs), True) for name, type_name in bound.columns]
    return MatchPlan(
        spec, schema, T.StructType(fields), bound.keys, bound.partition_columns, bound.order_columns,
        tuple(f.name for f in schema.fields),
    )


# -- the DataFrame door --------------------------------------------------------------------------------------


def _sort_column(name: str, descending: bool, nulls_first: bool) -> SparkColumn:
    column = named(name)
    if descending:
        return column.desc_nulls_first() if nulls_first else column.desc_nulls_last()
    return column.asc_nulls_first() if nulls_first else column.asc_nulls_last()


def match_recognize(df: DataFrame, clause: str | ClauseSpec, *, budget: MatchBudget | dict[str, int] | None = None
                    ) -> DataFrame:
    """Run ``MATCH_RECOGNIZE (clause)`` over ``df``; ``clause`` is the text between the parentheses.

    The clause and every column it names are checked before any Spark job runs; errors are
    :class:`~timeweave.core.pattern.PatternValidationError` with the line/column in ``clause``.
    The AFTER MATCH SKIP default is the SQL standard's PAST LAST ROW (Flink's is TO NEXT ROW).
    ``budget`` bounds each partition's matching (:class:`~timeweave.core.pattern.MatchBudget` or a dict of its
    fields; None: the default): a partition that runs out keeps the matches decided before, and its other rows
    are left out, as the streaming door dead-letters them (:func:`match_recognize_with_rejects` lists them).

    Example (``ticker`` has columns symbol, rowtime, price)::

        timeweave.match_recognize(ticker, '''
            PARTITION BY symbol ORDER BY rowtime
            MEASURES FIRST(A.rowtime) AS start_t, LAST(A.rowtime) AS end_t, AVG(A.price) AS avg_price
            ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
            PATTERN (A+ B) DEFINE A AS AVG(A.price) < 15''').show()
    """
    return _match(df, clause, MatchBudget.from_mapping(budget, "budget"), rejects=False)


def _match(df: DataFrame, clause: str | ClauseSpec, budget: MatchBudget, *, rejects: bool) -> DataFrame:
    """The door's plan; with ``rejects``, two more columns: :data:`REJECT_REASON` (NULL on a match) and
    :data:`REJECT_ROW` (a budget-rejected row's ``to_json``; the door's columns are NULL on such a row)."""
    ensure_worker_python(df.sparkSession)  # before the mapInArrow function is wrapped: it takes the executable
    spec = inline_subqueries(df.sparkSession, clause)
    df = with_row_functions(df, spec)  # Spark computes the per-row function calls as hidden columns
    bound = plan(spec, df.schema)
    if bound.order_columns:  # a NULL event time is matched by no door (core event_time_column): a dead letter
        df = df.where(named(bound.order_columns[0][0]).isNotNull())
    # the dead-letter shape (rejected_rows): the input's own columns
    original = F.to_json(F.struct(*[named(c) for c in visible_columns(df.columns)]))
    needed = _needed_columns(bound)
    if len(needed) < len(df.columns):  # ONE ROW PER MATCH reads few columns: ship only those to Python
        if rejects:
            df = df.withColumn(REJECT_ROW, original)
        df = df.select(*[named(c) for c in needed], *([named(REJECT_ROW)] if rejects else []))
        bound = plan(bound.spec, df.drop(REJECT_ROW).schema if rejects else df.schema)
    elif rejects:
        df = df.withColumn(REJECT_ROW, original)
    if rejects and REJECT_ROW.lower() in (name.lower() for name in bound.input_names):
        raise SpecError("input", f"column {REJECT_ROW} is reserved by match_recognize_with_rejects; rename it",
                        where="match_recognize")
    partition = [_sort_column(c, False, False) for c in bound.partition_columns]
    order = [_sort_column(*o) for o in bound.order_columns]
    if partition:
        arranged = df.repartition(*[named(c) for c in bound.partition_columns])
    else:
        arranged = df.repartition(1)
    if partition or order:
        arranged = arranged.sortWithinPartitions(*partition, *order)
    timezone = df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    runner = _ArrowRunner(bound.spec.text, bound.input_schema.json(), bound.schema.json(), timezone, budget, rejects)
    schema = bound.schema
    if rejects:
        schema = T.StructType([*schema.fields, T.StructField(REJECT_REASON, T.StringType()),
                               T.StructField(REJECT_ROW, T.StringType())])
    return map_in_arrow(arranged, runner, schema)


def match_recognize_with_rejects(df: DataFrame, clause: str | ClauseSpec, *,
                                 budget: MatchBudget | dict[str, int] | None = None) -> tuple[DataFrame, DataFrame]:
    """:func:`match_recognize` plus its dead letter: the input rows with a NULL event time (the first ORDER BY
    column), which no door matches, and the rows of partitions that ran out of their match ``budget`` (reason
    ``MATCH_BUDGET_EXCEEDED: pattern ... at row ...``; the streaming door's rows).  The dead letter has the
    streaming and backfill doors' shape: ``side`` (``input``), ``reason`` (``NULL event time column <t>``),
    ``row`` (the input row as JSON).  Both DataFrames read one matching plan (each action runs it).

    Example::

        matches, rejected = timeweave.match_recognize_with_rejects(ticker, "PARTITION BY symbol ORDER BY rowtime ...")
        rejected.show()
    """
    spec = inline_subqueries(df.sparkSession, clause)
    bound = plan(spec, with_row_functions(df, spec).schema)
    combined = _match(df, spec, MatchBudget.from_mapping(budget, "budget"), rejects=True)
    reason = named(REJECT_REASON)
    matches = combined.where(reason.isNull()).select(*[named(f.name) for f in bound.schema.fields])
    over_budget = combined.where(reason.isNotNull()).select(
        F.lit("input").alias("side"), reason.alias("reason"), named(REJECT_ROW).alias("row"))
    return matches, rejected_rows(df, bound).unionByName(over_budget)


def rejected_rows(df: DataFrame, bound: MatchPlan) -> DataFrame:
    """The rows of ``df`` no door matches for ``bound`` (a NULL event time), in the dead-letter shape."""
    if not bound.order_columns:
        return df.sparkSession.createDataFrame([], "side STRING, reason STRING, row STRING")
    time = bound.order_columns[0][0]
    return df.where(named(time).isNull()).select(
        F.lit("input").alias("side"),
        F.lit(null_event_time_reason(time)).alias("reason"),
        F.to_json(F.struct(*[named(c) for c in visible_columns(df.columns)])).alias("row"),  # no hidden column
    )


def _needed_columns(bound: MatchPlan) -> list[str]:
    """Input columns (input spelling, input order) the matcher reads; all of them for ALL ROWS PER MATCH."""
    names = list(bound.input_names)
    spec = bound.spec
    if spec.rows_per_match.all_rows:
        return names
    wanted = {c.lower() for c in (*bound.partition_columns, *(o[0] for o in bound.order_columns))}
    expressions = [d.condition for d in spec.definitions] + [m.expr for m in spec.measures]
    for expression in expressions:
        for node in expression.walk():
            if isinstance(node, E.Column):
                wanted.add(_field(spec, bound.input_schema, node.name, node.start).name.lower())
    # a clause that reads no column (Trino's `MEASURES 'foo' AS foo PATTERN (Y+) DEFINE Y AS true`) still
    # needs the rows: Spark ships a zero-column batch to Python with no rows, so keep one column
    return [n for n in names if n.lower() in wanted] or names[:1]


# -- the SQL door's rewrite ------------------------------------------------------------------------------------


def sql_string(text: str) -> str:
    """``text`` (a clause) as a constant SQL STRING for the UDTF: :func:`timeweave.spark.render.sql_string`'s rule.

    The clause can name any column (`` `k'x` ``); its text never appears in the SQL, so no escaping
    rule (nor ``spark.sql.parser.escapedStringLiterals``) can change what the UDTF receives.

    >>> print(sql_string("A.s = 'x'"))
    CAST(X'412E73203D20277827' AS STRING)
    """
    return render_sql_string(text)


def rewrite_match_recognize(spark: Any, query: str) -> str:
    """Replace each ``<relation> [t(c, ...)] MATCH_RECOGNIZE (...) [AS alias[(c, ...)]]`` of ``query`` by a relation Spark runs.

    When the input relation resolves on its own, it becomes a temporary view of :func:`match_recognize`'s
    result (``__tw_mr_<hash>``, named after the relation and clause so that a rewrite is repeatable);
    otherwise (it names a CTE of the query, say) the UDTF ``timeweave_match_recognize(TABLE(...), ...)``
    is called in place.  Both run the same core with the same output schema.  Errors point into ``query``.

    Example::

        print(rewrite_match_recognize(spark, "SELECT * FROM ticker MATCH_RECOGNIZE (...) AS m"))
    """
    for found in reversed(find_match_recognize(query)):
        prefix = "SELECT * FROM "
        try:
            source = sql_rewrite.run(spark, prefix + found.relation)
            source.schema  # noqa: B018 - resolves the relation now
        except QuerySyntaxError as error:  # a MATCH_RECOGNIZE or temporal join inside the relation
            raise reposition(error, query, found.start - len(prefix)) from None
        except Exception:  # not resolvable alone (a CTE, an outer reference): the UDTF resolves it in place
            source = None
        try:
            spec = inline_subqueries(spark, found.spec)  # uncorrelated subqueries: run once, now
        except PatternValidationError as error:
            raise reposition(error, query, found.clause_start) from None
        try:
            if source is not None:
                plan(spec, with_row_functions(source, spec).schema)
        except PatternValidationError as error:
            if spec is not found.spec:
                raise  # positioned in the clause as printed with the subqueries' values
            raise reposition(error, query, found.clause_start) from None
        if source is not None:
            digest = hashlib.sha1(f"{found.relation}\0{found.clause}".encode()).hexdigest()[:16]
            view = f"__tw_mr_{digest}"
            match_recognize(source, spec).createOrReplaceTempView(view)
            replacement = view
        else:
            register_udtf(spark)
            replacement = f"{UDTF_NAME}(TABLE(SELECT * FROM {found.relation}), {sql_string(spec.text)})"
        if found.alias is not None:
            replacement += f" AS {_quote(found.alias)}{found.alias_columns or ''}"
        query = query[: found.start] + replacement + query[found.end :]
    return query


sql_rewrite.register(sql_rewrite.ClauseRewriter("MATCH_RECOGNIZE", 10, rewrite_match_recognize))


# -- executor side -------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def _bound(clause: str, input_json: str, output_json: str) -> MatchPlan:
    return plan(parse_clause(clause), T.StructType.fromJson(json.loads(input_json)))


def _naive(array: pa.Array) -> pa.Array:
    """Timestamps with a zone become the session's wall-clock time, as Spark shows them (and as the
    clause's TIMESTAMP literals mean them)."""
    if pa.types.is_timestamp(array.type) and array.type.tz is not None:
        return pc.local_timestamp(array)
    return array


def _to_arrow(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(arrow_type) and arrow_type.tz is not None:
        local = pa.array(values, type=pa.timestamp(arrow_type.unit))
        return pc.assume_timezone(local, arrow_type.tz, ambiguous="earliest", nonexistent="earliest")
    if pa.types.is_floating(arrow_type):
        values = [float(v) if isinstance(v, Decimal) else v for v in values]
    elif pa.types.is_decimal(arrow_type):
        # The declared scale (the core's typer: AVG of decimal(p,s) has scale s+4), rounded half up as Spark
        # casts a decimal; the core's average carries more digits than that.
        values = _to_scale(values, arrow_type.scale)
    elif pa.types.is_integer(arrow_type):
        values = [int(v) if isinstance(v, (bool, float, Decimal)) else v for v in values]
    return pa.array(values, type=arrow_type)


def _to_scale(values: list[Any], scale: int) -> list[Any]:
    """Numbers as Decimals of ``scale`` digits after the point, rounded half up (NULL stays NULL).

    >>> _to_scale([Decimal("1.3333333333333333333333333333"), Decimal("2.5"), 7, None], 2)
    [Decimal('1.33'), Decimal('2.50'), Decimal('7.00'), None]
    """
    quantum = Decimal(1).scaleb(-scale)
    with localcontext() as context:
        context.prec = 80  # beyond 38 digits on either side of the point: quantize never runs out of digits
        return [v if v is None else Decimal(v if isinstance(v, (Decimal, int)) else str(v)).quantize(
            quantum, rounding=ROUND_HALF_UP) for v in values]


@dataclass(frozen=True)
class _ArrowRunner:
    """The ``mapInArrow`` function: sorted Arrow batches in, matched rows out (picklable, tiny)."""

    clause: str
    input_json: str
    output_json: str
    timezone: str
    budget: MatchBudget | None = None
    rejects: bool = False  # two more output columns: REJECT_REASON, REJECT_ROW (see _match)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        bound = _bound(self.clause, self.input_json, self.output_json)
        schema = _arrow_schema(bound.schema, self.timezone)
        raw, raw_outputs = _copied_timestamps(bound)
        pending: list[list[Any]] = [[] for _ in bound.keys]  # output columns, in bound.keys order
        count = 0  # rows in pending: counted, as a clause with no PARTITION BY and no MEASURES has no column
        rejected: list[tuple[dict[str, Any], str]] | None = [] if self.rejects else None
        for outs in _run_batch_blocks(bound, batches, raw, self.budget, rejected):
            count += _extend(pending, bound.keys, outs)
            if count >= _OUTPUT_BATCH_ROWS:
                yield self._with_rejects(_batch(pending, schema, raw_outputs, count), count)
                pending = [[] for _ in bound.keys]
                count = 0
            if rejected:
                yield self._rejected(schema, rejected)
                rejected.clear()
        if count:
            yield self._with_rejects(_batch(pending, schema, raw_outputs, count), count)

    def _with_rejects(self, batch: pa.RecordBatch, count: int) -> pa.RecordBatch:
        if not self.rejects:
            return batch
        nulls = pa.nulls(count, pa.string())
        return pa.RecordBatch.from_arrays([*batch.columns, nulls, nulls],
                                          names=[*batch.schema.names, REJECT_REASON, REJECT_ROW])

    @staticmethod
    def _rejected(schema: pa.Schema, rejected: list[tuple[dict[str, Any], str]]) -> pa.RecordBatch:
        n = len(rejected)
        columns = [pa.nulls(n, f.type) for f in schema]
        columns.append(pa.array([reason for _, reason in rejected], pa.string()))
        columns.append(pa.array([row[REJECT_ROW] for row, _ in rejected], pa.string()))
        return pa.RecordBatch.from_arrays(columns, names=[*schema.names, REJECT_REASON, REJECT_ROW])


_TIMESTAMPS = (T.TimestampType, T.TimestampNTZType)


def _copied_timestamps(bound: MatchPlan) -> tuple[frozenset[str], tuple[bool, ...]]:
    """Timestamp input columns the clause only copies to the output, and which output columns are copies.

    With ONE ROW PER MATCH and no WITHIN, a timestamp column that no DEFINE reads, and that MEASURES
    read only as a whole measure's value (the column, a navigation of it, MIN/MAX of it,
    MATCH_ROWTIME) or that is a PARTITION BY column, is never computed with: the door carries it as
    integer microseconds (Arrow casts, several times cheaper than datetime objects both ways) and
    turns the copies back into timestamps.  Integers compare (equal, MIN/MAX) as the timestamps do.

    >>> s = T.StructType([T.StructField("k", T.StringType()), T.StructField("t", T.TimestampType()),
    ...                   T.StructField("u", T.TimestampType()), T.StructField("p", T.LongType())])
    >>> _copied_timestamps(plan("PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS f, LAST(A.u) - FIRST(A.u) AS d "
    ...                         "PATTERN (A+) DEFINE A AS A.p > 0", s))
    (frozenset({'t'}), (False, True, False))
    """
    spec = bound.spec
    none: tuple[frozenset[str], tuple[bool, ...]] = (frozenset(), tuple(False for _ in bound.keys))
    if spec.rows_per_match.all_rows or spec.within is not None:
        return none
    schema = bound.input_schema
    rowtime = _field(spec, schema, spec.order_by[0].column, spec.order_by[0].start).name if spec.order_by else None

    def read(node: E.Expr) -> str | None:  # the input column a column reference or MATCH_ROWTIME reads
        if isinstance(node, E.Column):
            return _field(spec, schema, node.name, node.start).name
        if isinstance(node, E.MatchRowtime):
            return read(node.column) if node.column is not None else rowtime
        return None

    def copied(node: E.Expr) -> str | None:  # the input column whose value the measure is, if any
        if isinstance(node, (E.Column, E.MatchRowtime)):
            return read(node)
        if isinstance(node, E.Navigation) and isinstance(node.arg, E.Column):
            return read(node.arg)
        if (isinstance(node, E.Aggregate) and node.func in ("MIN", "MAX") and node.key is None
                and isinstance(node.arg, E.Column)):
            return read(node.arg)
        return None

    computed: set[str | None] = set()
    copies: dict[str, str] = {}
    for definition in spec.definitions:
        computed.update(read(node) for node in definition.condition.walk())
    for measure in spec.measures:
        column = copied(measure.expr)
        if column is not None:
            copies[measure.name] = column
        else:
            computed.update(read(node) for node in measure.expr.walk())
    raw = frozenset(f.name for f in schema.fields if isinstance(f.dataType, _TIMESTAMPS) and f.name not in computed)
    if not raw:
        return none
    measures = {m.name for m in spec.measures}
    outputs = tuple(
        (copies.get(key) if key in measures else _field(spec, schema, key, 0).name) in raw for key in bound.keys
    )
    return raw, outputs


def _extend(columns: list[list[Any]], keys: tuple[str, ...], outs: list[dict[str, Any] | OutputBlock]) -> int:
    """Append the output rows ``outs`` to ``columns`` (``columns[i]`` holds the values of ``keys[i]``);
    returns how many rows ``outs`` held (with no output column, the count is all that is kept)."""
    count = 0
    for out in outs:
        if out.__class__ is OutputBlock:
            for column, key in zip(columns, keys, strict=True):
                values = out.column(key)  # type: ignore[union-attr]
                column.extend(values if values is not None else [None] * len(out))  # type: ignore[arg-type]
            count += len(out)  # type: ignore[arg-type]
        else:
            for column, key in zip(columns, keys, strict=True):
                column.append(out.get(key))  # type: ignore[union-attr]
            count += 1
    return count


def _rows(batch: pa.RecordBatch, raw: frozenset[str] = frozenset()) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """The batch's rows as dicts, and its columns as Python lists (each column converted once).

    Timestamp columns named in ``raw`` (see :func:`_copied_timestamps`) become integer microseconds
    of the same wall-clock time the datetime objects would show.
    """
    names = batch.schema.names
    columns = [_raw_pylist(_naive(batch.column(i))) if names[i] in raw else _pylist(_naive(batch.column(i)))
               for i in range(batch.num_columns)]
    return _row_builder(tuple(names))(columns), columns


def _raw_pylist(array: pa.Array) -> list[Any]:
    """A naive timestamp column as integer microseconds (None for nulls)."""
    return array.cast(pa.timestamp("us")).cast(pa.int64()).to_pylist()  # type: ignore[no-any-return]


def _raw_to_arrow(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    """``_to_arrow`` of integer microseconds (the wall-clock times of :func:`_raw_pylist`)."""
    local = pa.array(values, type=pa.int64()).cast(pa.timestamp("us")).cast(pa.timestamp(arrow_type.unit))
    if arrow_type.tz is not None:
        return pc.assume_timezone(local, arrow_type.tz, ambiguous="earliest", nonexistent="earliest")
    return local


def _row_builder(names: tuple[str, ...]) -> Callable[[list[list[Any]]], list[dict[str, Any]]]:
    """``build(columns)``: the rows as dicts (the core's generated comprehension, cached per names)."""
    return dict_rows(names)


def _pylist(array: pa.Array) -> list[Any]:
    """``array.to_pylist()``, through numpy for timestamps and dates (Arrow's own conversion of those
    is ~20x slower; numpy's ``tolist`` gives the same datetime/date objects and None for nulls)."""
    if pa.types.is_timestamp(array.type) and array.type.tz is None and array.type.unit != "ns":
        return array.cast(pa.timestamp("us")).to_numpy(zero_copy_only=False).tolist()  # type: ignore[no-any-return]
    if pa.types.is_date32(array.type):
        return array.to_numpy(zero_copy_only=False).tolist()  # type: ignore[no-any-return]
    return array.to_pylist()  # type: ignore[no-any-return]


def run_batches(bound: MatchPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[list[dict[str, Any]]]:
    """Match Arrow batches sorted by partition key then ORDER BY; yields the output rows decided per batch.

    The same rows as :func:`run_sorted`, with each key run of a batch pushed into its
    :class:`PartitionMatcher` at once (``push_many``).  Memory: one batch plus the rows the core keeps.

    >>> s = T.StructType([T.StructField("k", T.StringType()), T.StructField("v", T.LongType())])
    >>> b = plan("PARTITION BY k MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS A.v > 0", s)
    >>> batch = pa.RecordBatch.from_pydict({"k": ["a", "a", "b"], "v": [1, 2, 3]})
    >>> [row for rows in run_batches(b, iter([batch])) for row in rows]
    [{'k': 'a', 'n': 2}, {'k': 'b', 'n': 1}]
    """
    return map(as_dicts, _run_batch_blocks(bound, batches))


def _run_batch_blocks(bound: MatchPlan, batches: Iterator[pa.RecordBatch],
                      raw: frozenset[str] = frozenset(), budget: MatchBudget | None = None,
                      rejected: list[tuple[dict[str, Any], str]] | None = None,
                      ) -> Iterator[list[dict[str, Any] | OutputBlock]]:
    """:func:`run_batches` with runs of output rows possibly as :class:`OutputBlock` columns (``raw``: see
    :func:`_rows`).  A partition that runs out of its match ``budget`` (None: the default) outputs nothing
    more; its rejected rows are appended to ``rejected`` with the reason when given (else left out)."""
    spec = bound.spec
    # a raw event time (integer µs, see _copied_timestamps) is shown in the budget's reason as the timestamp
    time = bound.order_columns[0][0] if bound.order_columns else None
    time_text = _micros_text if time in raw else None

    def take(matcher: PartitionMatcher) -> None:
        rows = matcher.take_rejected()
        if rows and rejected is not None:
            assert matcher.exceeded is not None
            reason = matcher.exceeded.reason
            rejected.extend((row, reason) for row in rows)  # type: ignore[misc]

    matcher: PartitionMatcher | None = None
    current: tuple[Any, ...] | None = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        rows, columns = _rows(batch, raw)
        names = batch.schema.names
        keys = [columns[names.index(c)] for c in bound.partition_columns]
        start = 0
        while start < len(rows):
            key = tuple(column[start] for column in keys)
            end = _run_end(keys, key, start) if keys else len(rows)
            if matcher is None or key != current:
                if matcher is not None:
                    out = matcher.finish_blocks()
                    take(matcher)
                    yield out
                matcher = PartitionMatcher(spec, budget=budget, dead_letter=True, time_text=time_text)
                current = key
            out = matcher.push_many_blocks(rows[start:end])
            take(matcher)
            yield out
            start = end
    if matcher is not None:
        out = matcher.finish_blocks()
        take(matcher)
        yield out


def _micros_text(value: int) -> str:
    """A raw timestamp (integer µs of the wall-clock time) as ``str`` shows the datetime the other doors hold.

    >>> _micros_text(1_000_001)
    '1970-01-01 00:00:01.000001'
    """
    return str(datetime(1970, 1, 1) + timedelta(microseconds=value))


def _run_end(keys: list[list[Any]], key: tuple[Any, ...], start: int) -> int:
    """One past the last row from ``start`` with partition key ``key`` (rows are sorted by key).

    Sorting makes each key's rows contiguous, so "differs from ``key``" is false up to the end of
    the run and true from there on: a binary search finds the first differing row (the same row a
    scan finds; a NaN in the key differs from itself, and the run is then one row, as a scan has it).
    """
    if len(keys) == 1:
        column, value = keys[0], key[0]
        return bisect_left(range(start + 1, len(column)), True, key=lambda i: column[i] != value) + start + 1
    return bisect_left(range(start + 1, len(keys[0])), True,
                       key=lambda i: tuple(column[i] for column in keys) != key) + start + 1


def run_sorted(bound: MatchPlan, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Match rows sorted by partition key then ORDER BY: one :class:`PartitionMatcher` per key run.

    >>> s = T.StructType([T.StructField("k", T.StringType()), T.StructField("v", T.LongType())])
    >>> b = plan("PARTITION BY k MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS A.v > 0", s)
    >>> list(run_sorted(b, iter([{"k": "a", "v": 1}, {"k": "a", "v": 2}, {"k": "b", "v": 3}])))
    [{'k': 'a', 'n': 2}, {'k': 'b', 'n': 1}]
    """
    spec = bound.spec
    key_columns = bound.partition_columns
    matcher: PartitionMatcher | None = None
    current: tuple[Any, ...] | None = None
    for row in rows:
        key = tuple(row[c] for c in key_columns)
        if matcher is None or key != current:
            if matcher is not None:
                yield from matcher.finish()
            matcher = PartitionMatcher(spec, dead_letter=True)  # over budget: the rest is left out (_run_batch_blocks)
            current = key
        yield from matcher.push(row)
    if matcher is not None:
        yield from matcher.finish()


def _arrow_schema(schema: T.StructType, timezone: str) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_type

    return pa.schema([pa.field(f.name, to_arrow_type(f.dataType, timezone=timezone), True) for f in schema.fields])


def _batch(columns: list[list[Any]], schema: pa.Schema, raw: tuple[bool, ...], count: int) -> pa.RecordBatch:
    """The ``count`` output rows held by ``columns`` as one Arrow batch of ``schema``.

    >>> _batch([], pa.schema([]), (), 3).num_rows  # zero columns: the rows still count (one per match)
    3
    """
    if not columns:  # from_arrays([]) would give zero rows; a struct array of empty structs keeps the count
        return pa.RecordBatch.from_struct_array(pa.array([{}] * count, type=pa.struct([])))
    arrays = [(_raw_to_arrow if raw[i] else _to_arrow)(values, schema.field(i).type) for i, values in enumerate(columns)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# -- the UDTF door (SQL, dbt) --------------------------------------------------------------------------------


def _udtf_class() -> type:
    from pyspark.sql.functions import AnalyzeArgument, AnalyzeResult, OrderingColumn, PartitioningColumn

    class MatchRecognizeUDTF:
        """``timeweave_match_recognize(TABLE(t), '<clause>')``: MATCH_RECOGNIZE from SQL."""

        @staticmethod
        def analyze(table: AnalyzeArgument, clause: AnalyzeArgument) -> AnalyzeResult:
            if not table.isTable:
                raise TypeError(f"{UDTF_NAME}: the first argument must be TABLE(<table or query>)")
            if not isinstance(clause.value, str):
                raise TypeError(f"{UDTF_NAME}: the second argument must be the clause as a constant string")
            bound = plan(clause.value, table.dataType)
            schema = bound.schema if bound.schema.fields else T.StructType(
                [T.StructField(UDTF_NO_COLUMNS, T.BooleanType(), True)])
            quote = _quote
            partition = [PartitioningColumn(quote(c)) for c in bound.partition_columns]
            order = [OrderingColumn(quote(c), ascending=not desc, overrideNullsFirst=nulls_first)
                     for c, desc, nulls_first in bound.order_columns]
            if not partition:
                return AnalyzeResult(schema=schema, withSinglePartition=True, orderBy=order)
            return AnalyzeResult(schema=schema, partitionBy=partition, orderBy=order)

        def __init__(self) -> None:
            self.matcher: PartitionMatcher | None = None
            self.keys: tuple[str, ...] = ()
            self.time: str | None = None

        def eval(self, row: Any, clause: str) -> Iterator[tuple[Any, ...]]:
            if self.matcher is None:
                bound = _bound_for_row(clause, tuple(row.__fields__))
                # over budget: the partition's other rows are left out, as the DataFrame door leaves them
                # (match_recognize_with_rejects and timeweave.dead_letters list them)
                self.matcher = PartitionMatcher(bound.spec, dead_letter=True)
                self.keys = bound.keys
                self.time = bound.order_columns[0][0] if bound.order_columns else None
            if self.time is not None and row[self.time] is None:
                # A NULL event time is matched by no door (core event_time_column); this function has one
                # output, so the row is left out: its dead letter is `WHERE <event time> IS NULL` of the input.
                return
            for out in self.matcher.push(row.asDict()):
                yield tuple(out.get(k) for k in self.keys) if self.keys else (None,)  # (None,): UDTF_NO_COLUMNS

        def terminate(self) -> Iterator[tuple[Any, ...]]:
            if self.matcher is not None:
                for out in self.matcher.finish():
                    yield tuple(out.get(k) for k in self.keys) if self.keys else (None,)

    return MatchRecognizeUDTF


@functools.lru_cache(maxsize=32)
def _bound_for_row(clause: str, names: tuple[str, ...]) -> MatchPlan:
    """The plan on the executor, where only the row's field names are known: the output keys.

    The UDTF's schema (types included) came from ``analyze``; here only the key order matters, so
    the columns are typed STRING.
    """
    return plan(clause, T.StructType([T.StructField(n, T.StringType(), True) for n in names]))


def _quote(name: str) -> str:
    return quote(name)


def udtf() -> Any:
    """The UDTF object (``pyspark.sql.udtf.UserDefinedTableFunction``) behind ``timeweave_match_recognize``."""
    from pyspark.sql.functions import udtf as make_udtf

    return make_udtf(_udtf_class())


def register_udtf(spark: Any) -> list[str]:
    """Register ``timeweave_match_recognize`` on ``spark`` (classic or Connect); idempotent.

    Example::

        timeweave.register(spark)
        spark.sql("SELECT * FROM timeweave_match_recognize(TABLE(ticker), 'PARTITION BY symbol ...')")
    """
    ensure_worker_python(spark)  # the UDTF is wrapped (its worker executable fixed) when it is registered
    spark.udtf.register(UDTF_NAME, udtf())
    return [UDTF_NAME]


__all__ = [
    "UDTF_NAME", "UDTF_NO_COLUMNS", "MatchPlan", "match_recognize", "match_recognize_with_rejects", "plan",
    "register_udtf", "rejected_rows", "rewrite_match_recognize", "run_batches",
    "run_sorted",
    "sql_string", "udtf",
]
