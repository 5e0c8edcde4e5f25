"""The SQL door: ``timeweave.sql(spark, query)`` runs Spark SQL extended with Flink's temporal-join syntax,
MATCH_RECOGNIZE and Flink's window TVFs (``TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTES))``...,
each replaced by the window plan as a subquery: :mod:`timeweave.spark.windows`), as a script of statements
with Flink's ``CREATE TABLE`` / ``CREATE VIEW`` DDL (:mod:`timeweave.spark.ddl`).

Each operator's clauses are rewritten by the rewriter its module registers with
:mod:`timeweave.spark.sql_rewrite` (MATCH_RECOGNIZE: :mod:`timeweave.spark.match_recognize`; ``JOIN r FOR
SYSTEM_TIME AS OF l.t ON ...``: :mod:`timeweave.spark.temporal_join_sql`; window TVFs:
:mod:`timeweave.spark.windows`); everything else passes to Spark SQL
unchanged; a continuous ``GROUP BY`` over a *streaming* relation is refused with a pointer to its job
(:mod:`timeweave.spark.group_aggregate_sql`: the door starts no streaming query).  This module imports every
operator's module, so all of them are registered here; the operators
import only the registry, never this door.  :func:`register` registers the SQL functions the doors call
(the MATCH_RECOGNIZE UDTF).

:func:`dead_letters` is the door's dead-letter output: for the same query, the rows of the temporal joins'
sides that the joins cannot use and the MATCH_RECOGNIZE inputs' rows with a NULL event time, with the reason
(the DataFrame doors' ``temporal_join_with_rejects`` / ``match_recognize_with_rejects`` shape).
"""

from __future__ import annotations

import string
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.ddl.script import Statement, split_statements
from timeweave.core.ddl.table import is_create_table, parse_create_table
from timeweave.core.ddl.view import is_create_view, parse_create_view
from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.match_sql import find_match_recognize
from timeweave.core.spec import VersionedTableSpec
from timeweave.spark import (  # noqa: F401 (they register rewriters and SQL checks)
    ddl,
    group_aggregate_sql,
    sql_rewrite,
    temporal_functions,
    window_ops,
)
from timeweave.spark.dataframe import dead_letters as side_dead_letters
from timeweave.spark.match_recognize import match_recognize_with_rejects, register_udtf, rewrite_match_recognize
from timeweave.spark.subqueries import inline_subqueries
from timeweave.spark.temp_views import drop_temp_view
from timeweave.spark.temporal_join_sql import bound_clauses, hidden_columns
from timeweave.spark.windows import rewrite_window_tvfs, window_tvf_dead_letters


def rewrite(spark, query: str) -> str:
    """The Spark SQL text ``timeweave.sql`` runs for ``query`` (useful to inspect a plan).

    Example::

        print(timeweave.spark.sql_door.rewrite(spark, "SELECT ... JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON ..."))
    """
    return sql_rewrite.rewrite(spark, query)


def sql(spark, query: str, **kwargs) -> DataFrame:
    """Run ``query`` — Spark SQL plus ``FOR SYSTEM_TIME AS OF`` temporal joins — and return a DataFrame.

    ``query`` may be a script of ``;``-separated statements, run in order; the last one's DataFrame is returned.
    Flink's ``CREATE [TEMPORARY] TABLE ... WITH (...)`` and ``CREATE [TEMPORARY] VIEW`` register temporary views
    (versioned ones with a PRIMARY KEY and a WATERMARK, or of Flink's versioned-view shape:
    :mod:`timeweave.spark.ddl`).

    The versioned table must be registered (:func:`timeweave.versioned_table` with ``name=``,
    :func:`timeweave.register_versioned`) or carry ``timeweave.*`` table properties.  Keyword arguments
    work as in ``spark.sql``: ``{name}`` placeholders take DataFrames (as temporary views), strings (as
    SQL string literals) and other values (as text); the substitution happens *before* the rewrite, so
    a DataFrame can be the left side of a temporal join or the input of MATCH_RECOGNIZE, and literal
    braces (a ``{2,}`` quantifier) are written doubled, ``{{2,}}``, exactly as ``spark.sql`` wants them.

    Example::

        timeweave.sql(spark, '''
            SELECT o.order_id, r.conversion_rate
            FROM orders AS o
            LEFT JOIN currency_rates FOR SYSTEM_TIME AS OF o.order_time AS r
            ON o.currency = r.currency''')

        timeweave.sql(spark, '''
            CREATE TABLE rates (currency STRING, rate DOUBLE, ts TIMESTAMP(3), PRIMARY KEY (currency) NOT ENFORCED,
                                WATERMARK FOR ts AS ts)
            WITH ('connector' = 'filesystem', 'path' = '/data/rates', 'format' = 'debezium-json');
            SELECT * FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.order_time AS r ON o.currency = r.currency''')
    """
    if not kwargs:
        return _run_script(spark, query)
    formatter = _Formatter(spark)
    try:
        return _run_script(spark, formatter.format(query, **kwargs))
    finally:
        formatter.clear()


def _run_script(spark, script: str) -> DataFrame:
    """Each statement of ``script`` in order (Flink's DDL registered, the rest rewritten and run); the last one's
    DataFrame.  A single statement that is not Flink DDL runs as written, its positions those of ``script``."""
    statements = split_statements(script)
    if len(statements) == 1 and not _is_flink_ddl(statements[0]):
        return spark.sql(rewrite(spark, script))
    if not statements:
        raise QuerySyntaxError("the query has no statement", text=script, position=0)
    result: DataFrame | None = None
    for statement in statements:
        if is_create_table(statement):
            result = ddl.create_table(spark, parse_create_table(statement))
        elif is_create_view(statement):
            result = ddl.create_view(spark, parse_create_view(statement))
        else:
            result = spark.sql(rewrite(spark, statement.text))
    # a DDL statement's result, as spark.sql gives for its own CREATE VIEW: no rows, no columns
    return result if _is_query(statements[-1]) else spark.createDataFrame([], T.StructType([]))


def _last_query(script: str) -> str:
    """The text of a script's last statement (the whole text when it has one statement: positions kept)."""
    statements = split_statements(script)
    if len(statements) <= 1:
        return script
    last = statements[-1]
    return "SELECT 1 WHERE false" if _is_flink_ddl(last) else last.text


def _is_flink_ddl(statement: Statement) -> bool:
    return is_create_table(statement) or is_create_view(statement)


def _is_query(statement: Statement) -> bool:
    return not _is_flink_ddl(statement)


class _Formatter(string.Formatter):
    """``spark.sql``'s placeholder rules, applied before our rewrite (which needs the relations' names)."""

    def __init__(self, spark) -> None:
        self._spark = spark
        self._views: list[tuple[DataFrame, str]] = []

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        value, first = super().get_field(field_name, args, kwargs)
        if isinstance(value, DataFrame):
            name = next((n for df, n in self._views if df is value), None)
            if name is None:
                name = f"__tw_arg_{uuid.uuid4().hex}"
                value.createOrReplaceTempView(name)
                self._views.append((value, name))
            return name, first
        if isinstance(value, str):
            # spark.sql's own rendering of a string argument (a literal token, so `DATE {day}` works as
            # there): the caller's value, placed where the caller put it, with spark.sql's semantics.
            return _spark_sql_literal(value), first
        return value, first

    def clear(self) -> None:
        # A classic session analyzes the query now, so the views can go; a Spark Connect DataFrame
        # resolves them when it runs, so they stay (session-scoped, uniquely named).
        if hasattr(self._spark, "_jsparkSession"):
            for _, name in self._views:
                drop_temp_view(self._spark, name)  # not catalog.dropTempView: it uncaches the caller's df


def _spark_sql_literal(value: str) -> str:
    """``value`` as ``spark.sql(query, name=value)`` renders it (pyspark's ``get_lit_sql_str``: backslash escapes).

    Only for the caller's own ``{name}`` arguments (``spark.sql`` parity); text the doors generate from
    column names goes through :func:`timeweave.spark.render.sql_string`, which relies on no escaping.

    >>> print(_spark_sql_literal("it's"))
    'it\\'s'
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def dead_letters(spark, query: str, **kwargs) -> DataFrame:
    """The dead letter of ``timeweave.sql(spark, query, **kwargs)``: the input rows the query cannot use.

    For each ``JOIN r FOR SYSTEM_TIME AS OF ...`` of ``query``: the versioned table's rows with a NULL key
    or time or an unknown op and, for an INNER join, the left rows with a NULL key or time (a LEFT join
    outputs those unmatched, with NULLs on the right).  For each ``MATCH_RECOGNIZE``: its input's rows with
    a NULL event time (the first ORDER BY column; no door matches them) and the rows of partitions that ran
    out of their match budget (``match_recognize_with_rejects``).  Columns ``side`` (``left`` /
    ``right``; ``input`` for MATCH_RECOGNIZE), ``reason``, ``row`` (the original row as JSON) and ``clause``
    (``temporal join #<n> (<table> AS <alias>)``, as the door's error messages name it, or
    ``MATCH_RECOGNIZE #<n>``).  Takes the query text and the placeholders exactly as :func:`sql` does; a
    query with neither gives no rows.  Of a script, the last statement's dead letters, against the tables and
    views the script registered (run it with :func:`sql` first; its DDL is not run again).

    Example::

        query = '''SELECT o.order_id, r.conversion_rate FROM orders AS o
                   JOIN currency_rates FOR SYSTEM_TIME AS OF o.order_time AS r ON o.currency = r.currency'''
        joined = timeweave.sql(spark, query)
        rejected = timeweave.dead_letters(spark, query)   # side, reason, row, clause
    """
    formatter = _Formatter(spark)
    try:
        text = _last_query(formatter.format(query, **kwargs) if kwargs else query)
        text = temporal_functions.rewrite_temporal_function_joins(spark, text)  # LATERAL TABLE: a temporal join
        parts = []
        for n, found in enumerate(find_match_recognize(text), start=1):
            try:
                source = sql(spark, "SELECT * FROM " + found.relation)
                source.schema  # noqa: B018 - resolves the relation now
            except Exception as error:  # a CTE of the query, an outer reference: no DataFrame of its own
                raise SpecError(
                    "query", f"the input of MATCH_RECOGNIZE #{n} ({found.relation}) does not resolve on its own (a CTE?), "
                    "so its dead letter cannot be read here; its dead letters are its rows whose first ORDER BY "
                    "column is NULL", where="dead_letters",
                ) from error
            # NULL event times, and the rows of partitions over their match budget (this runs the matching)
            _, rejected = match_recognize_with_rejects(source, inline_subqueries(spark, found.spec))
            parts.append(rejected.withColumn("clause", F.lit(f"MATCH_RECOGNIZE #{n}")))
        parts.extend(window_tvf_dead_letters(spark, text, sql))
        text = rewrite_match_recognize(spark, rewrite_window_tvfs(spark, text, rewrite))
        for bound in bound_clauses(spark, text):
            rejected = side_dead_letters(bound.left, bound.right, bound.spec, hidden=hidden_columns(bound.clause))
            parts.append(rejected.withColumn("clause", F.lit(bound.spec.where)))
        if not parts:
            return spark.createDataFrame([], "side STRING, reason STRING, row STRING, clause STRING")
        result = parts[0]
        for part in parts[1:]:
            result = result.unionByName(part)
        return result
    finally:
        if kwargs:
            formatter.clear()


def register(spark) -> list[str]:
    """Register the SQL functions timeweave's doors call on this session; idempotent.

    The temporal join needs none (its plan is plain Spark SQL, so it also works in views); functions
    of later operators are added to :data:`_FUNCTIONS`.  Returns the names registered.

    Example::

        timeweave.register(spark)
    """
    names: list[str] = []
    for registrar in _FUNCTIONS:
        names.extend(registrar(spark))
    spark.conf.set(_REGISTERED, "true")
    return names


_REGISTERED = "timeweave.registered"
#: Each operator's SQL-function registrar: ``registrar(spark)`` registers them and returns their names.
_FUNCTIONS = (register_udtf,)


__all__ = ["VersionedTableSpec", "dead_letters", "register", "rewrite", "sql"]
