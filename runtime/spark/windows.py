"""The batch window doors: Flink's window TVFs (TUMBLE, HOP, CUMULATE, SESSION) on DataFrames and in SQL.

Every row counts in batch (no watermark, so no late row); a row with a NULL event time is in no window and
goes to the dead letter with the reason.  The rows come from the one window plan
(``runtime/spark/timeweave_windows_sql.sql``, rendered by :mod:`timeweave.spark.window_render`): Spark
SQL expressions only (no Python per row), the window arithmetic taken from the validated core spec
(:mod:`timeweave.core.windows.spec`, Flink's rules).  Every check (spec values, the time column and its
type, PARTITION BY columns) happens before any Spark job, with an error naming the argument.

Types (Flink's ``window_start`` / ``window_end`` / ``window_time`` have the time attribute's type): a Spark
``TIMESTAMP`` time column is an instant, Flink's ``TIMESTAMP_LTZ``: its windows are aligned on the wall clock of
the session time zone (``spark.sql.session.timeZone``), as Flink aligns TIMESTAMP_LTZ windows on its session
zone, and the window columns are TIMESTAMPs (the instants at which that clock shows the window's bounds, so
they display as the wall-clock bounds).  A ``TIMESTAMP_NTZ`` column is Flink's ``TIMESTAMP``: no time zone
enters, and the window columns are TIMESTAMP_NTZ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.windows import spec as specs
from timeweave.core.windows.aggregate_sql import WindowAggregateQuery, check_session_keys, window_aggregate_query
from timeweave.core.windows.grouping import GroupingSets
from timeweave.core.windows.legacy_sql import rewrite_group_windows
from timeweave.core.windows.slicing import SliceAggregate
from timeweave.core.windows.spec import SessionSpec, WindowSpec
from timeweave.core.windows.tvf_sql import WindowTvf, find_window_tvfs
from timeweave.core.windows.zones import TimeShift
from timeweave.spark import render, sql_rewrite
from timeweave.spark.schema import column
from timeweave.spark.temp_views import sql_over
from timeweave.spark.window_render import WINDOW_COLUMNS, window_aggregate_sql, window_dead_letter_sql, window_tvf_sql

Duration = int | timedelta | str


def _find(columns: Sequence[str], name: str) -> str | None:
    """The input's spelling of column ``name`` (Spark compares names case-insensitively)."""
    exact = [c for c in columns if c == name]
    if exact:
        return exact[0]
    folded = [c for c in columns if c.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


def time_kind(schema: T.StructType, time: str, where: str) -> tuple[str, str]:
    """The time column's spelling and kind (``"ltz"``: TIMESTAMP, ``"ntz"``: TIMESTAMP_NTZ); a missing or
    non-timestamp column is a :class:`SpecError` naming ``time``."""
    found = _find(schema.names, time)
    if found is None:
        raise SpecError("time", f"column {time!r} not found; available: {schema.names}", where=where)
    data_type = schema[found].dataType
    if isinstance(data_type, T.TimestampNTZType):
        return found, "ntz"
    if isinstance(data_type, T.TimestampType):
        return found, "ltz"
    raise SpecError("time", f"column {found!r} must be a TIMESTAMP or TIMESTAMP_NTZ, found {data_type.simpleString()}"
                    " (parse text times first and decide what an unparsable one means)", where=where)


def session_zone(spark, kind: str = "ltz") -> str | None:
    """The time zone whose wall clock aligns windows over a time column of ``kind`` (None: UTC, no shift): the
    session time zone (``spark.sql.session.timeZone``, an IANA name or a fixed offset such as ``+08:00``, as
    the name :class:`~timeweave.core.windows.zones.TimeShift` gives it) for TIMESTAMP, none for TIMESTAMP_NTZ
    (a wall clock already).  A zone the core cannot follow is a :class:`SpecError` naming the setting."""
    if kind != "ltz":
        return None
    zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    try:
        shift = TimeShift.of(zone)
    except SpecError as error:
        raise SpecError("spark.sql.session.timeZone", error.message,
                        where="window") from None
    return None if shift is None else shift.zone


def bind(schema: T.StructType, time: str, spec: WindowSpec) -> tuple[str, str, WindowSpec]:
    """Check ``spec`` against the input: the time column (spelling, kind), PARTITION BY columns, and no input
    column named like a window column.  Returns the time column's spelling, its kind and the spec with the
    input's spellings of its partition columns.  No Spark job runs."""
    if not isinstance(spec, (specs.TumbleSpec, specs.HopSpec, specs.CumulateSpec, SessionSpec)):
        raise SpecError("window", f"expected a window spec (timeweave.core.windows.tumble/hop/cumulate/session), "
                        f"got {spec!r}")
    where = spec.kind
    time, kind = time_kind(schema, time, where)
    for name in WINDOW_COLUMNS:
        clash = _find(schema.names, name)
        if clash is not None:
            raise SpecError("df", f"the input already has a column {clash!r}; {where} adds window_start, window_end "
                            "and window_time: rename or drop it first", where=where)
    if isinstance(spec, SessionSpec):
        spelled = []
        for name in spec.partition_by:
            found = _find(schema.names, name)
            if found is None:
                raise SpecError("partition_by", f"column {name!r} not found; available: {schema.names}", where=where)
            spelled.append(found)
        spec = SessionSpec(spec.gap, tuple(spelled))
    return time, kind, spec


def window_tvf(df: DataFrame, time: str, spec: WindowSpec) -> DataFrame:
    """The window TVF of ``spec`` over ``df``: the input columns plus ``window_start``, ``window_end`` and
    ``window_time``; a row is repeated once per window holding it (HOP, CUMULATE); rows with a NULL ``time``
    are left out (:func:`window_dead_letters` lists them).

    Example::

        from timeweave.core.windows import hop as hop_spec
        windowed = timeweave.spark.windows.window_tvf(bids, "bidtime", hop_spec("5 minutes", "10 minutes"))
    """
    time, kind, spec = bind(df.schema, time, spec)
    sql = window_tvf_sql(spec, render.relation("source"), df.columns, time, kind=kind,
                         zone=session_zone(df.sparkSession, kind))
    return sql_over(df.sparkSession, render.formattable(sql), source=df)


def tumble(df: DataFrame, time: str, size: Duration, offset: Duration = 0) -> DataFrame:
    """``TUMBLE(TABLE df, DESCRIPTOR(time), size [, offset])``: each row with its fixed-size window.

    Durations are ``"10 minutes"``, ``"-8 hours"``, a :class:`~datetime.timedelta` or integer milliseconds.

    Example::

        timeweave.tumble(bids, "bidtime", "10 minutes").groupBy("window_start", "window_end").sum("price")
        timeweave.tumble(bids, "bidtime", "1 day", offset="-8 hours")    # days starting at 16:00 UTC
    """
    return window_tvf(df, time, specs.tumble(size, offset))


def hop(df: DataFrame, time: str, slide: Duration, size: Duration, offset: Duration = 0) -> DataFrame:
    """``HOP(TABLE df, DESCRIPTOR(time), slide, size [, offset])`` (Flink's order: slide, then size): each row
    once per window of ``size`` holding it; windows start every ``slide``; ``size`` must be a multiple of ``slide``.

    Example::

        timeweave.hop(bids, "bidtime", "5 minutes", "10 minutes")   # two windows per row
    """
    return window_tvf(df, time, specs.hop(slide, size, offset))


def cumulate(df: DataFrame, time: str, step: Duration, max_size: Duration, offset: Duration = 0) -> DataFrame:
    """``CUMULATE(TABLE df, DESCRIPTOR(time), step, max_size [, offset])``: windows growing by ``step`` from the
    start of each ``max_size`` period; each row once per window holding it.

    Example::

        timeweave.cumulate(bids, "bidtime", "2 minutes", "10 minutes")
    """
    return window_tvf(df, time, specs.cumulate(step, max_size, offset))


def session(df: DataFrame, time: str, gap: Duration, partition_by: str | Sequence[str] = ()) -> DataFrame:
    """``SESSION(TABLE df PARTITION BY k, DESCRIPTOR(time), gap)``: each row with its session, rows of one
    ``partition_by`` value at most ``gap`` apart sharing one; a session ends ``gap`` after its last row.

    Example::

        timeweave.session(bids, "bidtime", "2 minutes", partition_by="supplier_id")
    """
    return window_tvf(df, time, specs.session(gap, partition_by if isinstance(partition_by, str) else tuple(partition_by)))


def window_dead_letters(df: DataFrame, time: str) -> DataFrame:
    """The rows of ``df`` no window holds (a NULL ``time``): ``side`` (``input``), ``reason``
    (``NULL event time column <time>``) and ``row`` (JSON), the shape of the other doors' dead letters.

    Example::

        timeweave.window_dead_letters(bids, "bidtime").show(truncate=False)
    """
    found = _find(df.columns, time)
    if found is None:
        raise SpecError("time", f"column {time!r} not found; available: {df.columns}", where="window_dead_letters")
    sql = window_dead_letter_sql(render.relation("source"), df.columns, found, null_event_time_reason(found))
    return sql_over(df.sparkSession, render.formattable(sql), source=df)


def _aggregate_columns(aggregates: Mapping[str, str | Column]) -> list[Column]:
    if not isinstance(aggregates, Mapping) or not aggregates:
        raise SpecError("aggregates", f"expected a mapping of output name -> aggregate (SQL text or Column), got "
                        f"{aggregates!r}", where="window_aggregate")
    out = []
    for name, value in aggregates.items():
        if isinstance(value, str):
            value = F.expr(value)
        if not isinstance(value, Column):
            raise SpecError("aggregates", f"{name!r}: expected SQL text or a Column, got {value!r}",
                            where="window_aggregate")
        out.append(value.alias(name))
    return out


def window_aggregate(df: DataFrame, aggregates: Mapping[str, str | Column], *, keys: str | Sequence[str] = (),
                     time: str | None = None, window: WindowSpec | None = None,
                     grouping_sets: GroupingSets | Sequence[Sequence[str]] | None = None) -> DataFrame:
    """Window aggregation, ``GROUP BY window_start, window_end, window_time, keys``: one row per window and key
    with ``aggregates`` (output name -> any Spark aggregate, as SQL text or a Column: expressions, ``FILTER``,
    ``GROUPING(k)``, pandas UDAFs).

    ``grouping_sets`` (instead of ``keys``) is Flink's ``GROUP BY window_start, window_end, GROUPING SETS (...)``:
    a list of sets of key columns (``[]``: every row of the window), or a
    :class:`~timeweave.core.windows.grouping.GroupingSets` (``GroupingSets.of(rollup=[...])`` / ``cube=``); the
    output's key columns are every set's columns, NULL where a row's set lacks them.  Not with SESSION (its
    sessions are merged per key).

    With ``window`` (a core spec: ``timeweave.core.windows.tumble("10 minutes")``...) and ``time``, ``df`` is the
    raw input and the window TVF runs first; without, ``df`` is already a window TVF's output (a cascade).
    A SESSION's ``keys`` must include its ``partition_by`` columns; sessions are merged per key (all ``keys``), as
    the streaming window-aggregate operator merges them.
    Output: ``window_start``, ``window_end``, ``window_time``, the keys, the aggregates.

    TUMBLE / HOP / CUMULATE share slices, as Flink's slicing assigners do, when every aggregate is SQL text
    ``COUNT(*)`` or COUNT / SUM / MIN / MAX / AVG of one column with an exact merge (:func:`_exact_partials`):
    one partial per key and slice, merged per window, the same rows as aggregating the TVF's rows, which every
    other aggregate does.

    Example::

        from timeweave.core.windows import tumble as tumble_spec
        timeweave.window_aggregate(bids, {"cnt": "COUNT(*)", "total": "SUM(price)"}, keys=["item"],
                                   time="bidtime", window=tumble_spec("10 minutes"))
    """
    key_list = [keys] if isinstance(keys, str) else list(keys)
    columns = _aggregate_columns(aggregates)
    grouping = grouping_sets_of(grouping_sets, key_list, window, "window_aggregate")
    if grouping is not None:
        key_list = list(grouping.keys)
    if window is not None:
        if time is None:
            raise SpecError("time", "window= needs time= (the event-time column)", where="window_aggregate")
        if isinstance(window, SessionSpec):
            missing = [c for c in window.partition_by if c.lower() not in {k.lower() for k in key_list}]
            if missing:
                raise SpecError("keys", f"a SESSION partitioned by {list(window.partition_by)} must group by those "
                                f"columns too; missing {missing}", where="window_aggregate")
            # A session window aggregate merges sessions per group key (the core's evaluate and the streaming
            # operator, keyed by the grouping keys): the keys are the sessions' partition.
            window = SessionSpec(window.gap, tuple(key_list))
        elif grouping is None:
            sliced = _sliced_aggregate(df, aggregates, key_list, time, window)
            if sliced is not None:
                return sliced
        df = window_tvf(df, time, window)
    elif time is not None:
        raise SpecError("window", "time= without window=: pass the window spec, or a window TVF's output alone",
                        where="window_aggregate")
    for name in (*WINDOW_COLUMNS, *key_list):
        if _find(df.columns, name) is None:
            argument = "keys" if name in key_list else "df"
            raise SpecError(argument, f"column {name!r} not found; available: {df.columns}"
                            + (" (pass window= and time=, or a window TVF's output)" if argument == "df" else ""),
                            where="window_aggregate")
    if grouping is not None:
        spelled = {k.lower(): _find(df.columns, k) for k in key_list}
        windows = [column(c) for c in WINDOW_COLUMNS]
        sets = [[*windows, *(column(spelled[k.lower()]) for k in s)] for s in grouping.sets]
        return _agg(lambda: df.groupingSets(sets, *windows, *(column(spelled[k.lower()]) for k in key_list)),
                    columns, None)
    groups = [*WINDOW_COLUMNS, *key_list]
    return _agg(lambda: df.groupBy(*[column(c) for c in groups]), columns, groups)


_PANDAS_PLACEMENT = "INVALID_PANDAS_UDF_PLACEMENT"


def _planned(df: DataFrame) -> DataFrame:
    """``df`` after Spark has planned it (kept: executing it reuses the plan; no job runs), so a refusal made by an
    optimizer or planner rule surfaces here, not at the first action.  A Spark Connect or streaming DataFrame is
    returned as it is (planned when it runs)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is not None and not df.isStreaming:  # a streaming plan is planned by its query
        jdf.queryExecution().executedPlan()
    return df


def _agg(grouped, columns: list[Column], groups: list[str] | None) -> DataFrame:
    """``grouped().agg(*columns)``.  Spark aggregates a pandas UDAF only beside other pandas UDAFs
    (``INVALID_PANDAS_UDF_PLACEMENT``); Flink mixes user and built-in aggregates freely, so with plain GROUP BY
    columns (``groups``) the pandas ones are aggregated apart and joined back on the group (NULL-safe), in the
    aggregates' order.  Which ones are pandas UDAFs is Spark's own answer: each beside a COUNT (planning only,
    no job: Spark checks the placement in analysis or, over some plans, only when planning)."""
    try:
        return _planned(grouped().agg(*columns))
    except Exception as error:
        if _PANDAS_PLACEMENT not in str(error):
            raise
        mixed = error
    probe = F.count(F.lit(1))
    pandas = []
    for c in columns:
        try:
            _planned(grouped().agg(c, probe))
            pandas.append(False)
        except Exception as error:
            if _PANDAS_PLACEMENT not in str(error):
                raise
            pandas.append(True)
    names = [grouped().agg(c).columns[-1] for c in columns]
    if groups is None:
        raise SpecError("aggregates", f"pandas UDAFs {[n for n, p in zip(names, pandas, strict=True) if p]} beside "
                        "other aggregates need plain keys: Spark does not mix them, and with grouping sets they "
                        "cannot be joined back by group; aggregate them in a query of their own",
                        where="window_aggregate") from mixed
    plain = grouped().agg(*[c for c, p in zip(columns, pandas, strict=True) if not p])
    udafs = grouped().agg(*[c for c, p in zip(columns, pandas, strict=True) if p])
    udafs = udafs.select(*[F.col(render.quote(g)).alias(f"__tw_g{i}") for i, g in enumerate(groups)],
                         *[F.col(render.quote(n)) for n, p in zip(names, pandas, strict=True) if p])
    on = [plain[render.quote(g)].eqNullSafe(udafs[f"__tw_g{i}"]) for i, g in enumerate(groups)]
    joined = plain.join(udafs, on, "inner")  # the same groups on both sides, each once
    return joined.select(*[plain[render.quote(g)] for g in groups],
                         *[(udafs if p else plain)[render.quote(n)] for n, p in zip(names, pandas, strict=True)])


def grouping_sets_of(grouping_sets: GroupingSets | Sequence[Sequence[str]] | None, keys: Sequence[str],
                     window: WindowSpec | None, where: str) -> GroupingSets | None:
    """A window aggregation's ``grouping_sets`` argument, validated (None: plain ``keys``); errors name it."""
    if grouping_sets is None:
        return None
    if keys:
        raise SpecError("keys", f"give the key columns once: either keys={list(keys)} or grouping_sets (whose sets "
                        "name them)", where=where)
    if isinstance(window, SessionSpec):
        raise SpecError("grouping_sets", "a SESSION window aggregation merges sessions per key: grouping sets are "
                        "supported with TUMBLE, HOP and CUMULATE", where=where)
    if isinstance(grouping_sets, GroupingSets):
        return grouping_sets
    return GroupingSets.of(grouping_sets, where=where)


def _exact_partials(function: str, data_type: T.DataType) -> bool:
    """Whether slice partials of ``function`` over ``data_type`` merge to exactly the direct aggregate: COUNT,
    MIN, MAX of atomic types; SUM of integers and decimals; AVG of integers up to INT (its sum, a DOUBLE, is
    exact).  FLOAT / DOUBLE sums are not: merging partial sums reorders the additions, so the last bits could
    differ from the other doors' rows."""
    if function == "count":
        return True
    if function in ("min", "max"):
        return not isinstance(data_type, (T.StructType, T.ArrayType, T.MapType, T.VariantType))
    if function == "sum":
        return isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType))
    return function == "avg" and isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType))


def _sliced_aggregate(df: DataFrame, aggregates: Mapping[str, str | Column], keys: list[str], time: str,
                      window: WindowSpec) -> DataFrame | None:
    """:func:`_sliced_plan` over ``df`` as a DataFrame, or None when an aggregate is not mergeable (a Column
    included)."""
    if not all(isinstance(text, str) for text in aggregates.values()):
        return None
    sql = _sliced_plan(df, render.relation("source"), aggregates, keys, time, window)
    return None if sql is None else sql_over(df.sparkSession, render.formattable(sql), source=df)


def _sliced_plan(df: DataFrame, relation: str, aggregates: Mapping[str, str], keys: list[str], time: str,
                 window: WindowSpec) -> str | None:
    """The SQL of the window aggregate of an aligned ``window`` over ``relation`` (whose rows are ``df``'s) with
    shared slices (Flink's slicing assigners: one partial per key and slice, a window merges its slices), or
    None when an aggregate is not mergeable (SQL text other than COUNT / SUM / MIN / MAX / AVG of one column, an
    inexact merge): those windows aggregate the TVF's rows.  The one sliced implementation of both doors
    (``window_aggregate`` and the SQL door's window aggregations).  Nothing here runs a Spark job (the
    aggregates' types come from analysis)."""
    parsed = [SliceAggregate.of(name, text) for name, text in aggregates.items()]
    if any(a is None for a in parsed):
        return None
    time, kind, spec = bind(df.schema, time, window)
    spelled_keys = []
    for name in keys:
        found = _find(df.columns, name)
        if found is None:
            raise SpecError("keys", f"column {name!r} not found; available: {df.columns}", where="window_aggregate")
        spelled_keys.append(found)
    result_types = df.groupBy().agg(*_aggregate_columns(aggregates)).schema
    plan = []
    for call, field in zip(parsed, result_types.fields, strict=True):
        argument = None
        if call.argument is not None:
            argument = _find(df.columns, call.argument)
            if argument is None:  # let the TVF path report Spark's own error
                return None
            if not _exact_partials(call.function, df.schema[argument].dataType):
                return None
        plan.append({"name": call.name, "function": call.function,
                     "argument": None if argument is None else render.quote(argument),
                     "type": field.dataType.simpleString()})
    return window_aggregate_sql(spec, relation, df.columns, time, spelled_keys, plan, kind=kind,
                                zone=session_zone(df.sparkSession, kind))


def window_aggregate_with_rejects(df: DataFrame, aggregates: Mapping[str, str | Column], *,
                                  keys: str | Sequence[str] = (), time: str, window: WindowSpec,
                                  grouping_sets: GroupingSets | Sequence[Sequence[str]] | None = None,
                                  ) -> tuple[DataFrame, DataFrame]:
    """:func:`window_aggregate` plus its dead letter (:func:`window_dead_letters`: the NULL event times).

    Example::

        totals, rejected = timeweave.window_aggregate_with_rejects(
            bids, {"total": "SUM(price)"}, keys="item", time="bidtime", window=tumble_spec("10 minutes"))
    """
    return (window_aggregate(df, aggregates, keys=keys, time=time, window=window, grouping_sets=grouping_sets),
            window_dead_letters(df, time))


# -- the SQL door ---------------------------------------------------------------------------------------


def _outermost(calls: list[WindowTvf]) -> list[WindowTvf]:
    return [c for c in calls if not any(o is not c and o.start <= c.start and c.end <= o.end for o in calls)]


def _input(spark, query: str, call: WindowTvf, rewrite) -> tuple[str, DataFrame]:
    """The call's input as SQL text (a subquery's own TVFs, temporal joins, MATCH_RECOGNIZE rewritten) and as a
    DataFrame (resolved, not run); a failure is positioned at the data argument."""
    relation = call.relation
    if relation.startswith("("):
        try:
            relation = "(" + rewrite(spark, relation[1:-1]) + ")"
        except QuerySyntaxError as error:  # positions inside the subquery -> positions in the query
            moved = QuerySyntaxError(error.description, text=query, position=call.relation_start + 1 + error.position)
            if hasattr(error, "argument"):
                moved.argument = error.argument  # type: ignore[attr-defined]
            raise moved from None
    try:
        df = spark.sql(f"SELECT * FROM {relation}")
        schema = df.schema
    except QuerySyntaxError:
        raise
    except Exception as error:  # a missing table, a CTE of the query (not visible on its own)
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise _positioned(call, "DATA", f"the input {call.relation} does not resolve on its own (a CTE of the query "
                          f"is not visible here: make it a view or write TABLE (<subquery>)): {first}", query,
                          call.relation_start) from error
    call.check_columns({f.name: f.dataType.simpleString() for f in schema.fields}, query)
    for name in WINDOW_COLUMNS:
        if _find(schema.names, name) is not None:
            raise _positioned(call, "DATA", f"the input {call.relation} already has a column {name}; {call.function} "
                              "adds window_start, window_end and window_time: rename it in a subquery", query,
                              call.relation_start)
    return relation, df


def _positioned(call: WindowTvf, argument: str, message: str, query: str, position: int) -> QuerySyntaxError:
    error = QuerySyntaxError(f"{call.function} argument {argument}: {message}", text=query, position=position)
    error.argument = argument  # type: ignore[attr-defined]
    return error


def block_names(spark, query: str, shape: WindowAggregateQuery, tvf_sql: str) -> list[str]:
    """The output names of the SELECT block ``shape`` of ``query`` as Spark analyses it over the TVF's rows
    (``tvf_sql``, the call rendered): the names the batch door's result has (no job runs)."""
    call = shape.call
    return spark.sql(query[shape.start : call.start] + "(" + tvf_sql + ")" + query[call.end : shape.end]).columns


def block_aggregates(shape: WindowAggregateQuery) -> dict[str, str]:
    """The block's aggregates under the internal names :func:`block_select` reads them by (``__tw_a<i>``)."""
    return {f"__tw_a{i}": item.aggregate for i, item in enumerate(shape.items) if item.aggregate}


def block_select(shape: WindowAggregateQuery, names: Sequence[str], relation: str) -> str:
    """The block as a projection of ``relation``, rows of the window columns, the keys and :func:`block_aggregates`'
    columns, under the block's output ``names``."""
    selected = [f"{render.quote(item.column or f'__tw_a{i}')} AS {render.quote(name)}"
                for i, (item, name) in enumerate(zip(shape.items, names, strict=True))]
    return "SELECT " + ", ".join(selected) + " FROM " + relation


def _sliced_select(spark, query: str, shape: WindowAggregateQuery, relation: str, df: DataFrame,
                   tvf_sql: str) -> str | None:
    """The SELECT block ``shape`` of ``query`` computed with shared slices (:func:`_sliced_plan`, the DataFrame
    door's plan) over the call's input ``relation`` (rows ``df``), or None when the plan declines an aggregate.

    The block's output names and types are those of the block as written over the TVF's rows (``tvf_sql``),
    taken from Spark's analysis of it (:func:`block_names`); a block Spark cannot analyse keeps the TVF path, so
    the query fails as it did."""
    try:
        names = block_names(spark, query, shape, tvf_sql)
    except Exception:  # Spark's own error, raised by the whole query on the TVF path
        return None
    if len(names) != len(shape.items):
        return None
    plan = _sliced_plan(df, relation, block_aggregates(shape), list(shape.keys), shape.call.time_column,
                        shape.call.spec)
    if plan is None:
        return None
    return block_select(shape, names, "(" + plan + ") __tw_sliced")


def rewrite_window_tvfs(spark, query: str, rewrite) -> str:
    """``query`` with each (outermost) window TVF call replaced by the window plan as a subquery; ``rewrite``
    is the SQL door's whole rewrite, applied to a call's ``TABLE (<subquery>)`` input (windows cascade).

    A window aggregation over a TUMBLE / HOP / CUMULATE call (the shape of
    :mod:`timeweave.core.windows.aggregate_sql`) whose aggregates merge exactly is replaced whole by the sliced
    plan of ``window_aggregate`` (one partial per key and slice, merged per window): the same rows as Spark's
    GROUP BY over the TVF's rows, which every other shape keeps."""
    calls = _outermost(find_window_tvfs(query))
    replacements = []
    for call in calls:
        check_session_keys(query, call)  # Flink's rule, the streaming door's too
        relation, df = _input(spark, query, call, rewrite)
        time, kind, spec = bind(df.schema, call.time_column, call.spec)
        sql = window_tvf_sql(spec, relation, df.columns, time, kind=kind, zone=session_zone(spark, kind))
        shape = window_aggregate_query(query, call)
        if isinstance(shape, WindowAggregateQuery):
            sliced = _sliced_select(spark, query, shape, relation, df, sql)
            if sliced is not None:
                replacements.append((shape.start, shape.end, sliced))
                continue
        replacements.append((call.start, call.end, f"({sql})"))
    for start, end, text in sorted(replacements, reverse=True):
        query = query[:start] + text + query[end:]
    return query


def window_tvf_dead_letters(spark, query: str, sql) -> list[DataFrame]:
    """The NULL-event-time rows of every window TVF call's input in ``query`` (``sql`` is the SQL door's
    :func:`timeweave.sql`, resolving inputs that are themselves window queries), with ``clause`` naming the call
    (``TUMBLE #1``...)."""
    parts = []
    for n, call in enumerate(find_window_tvfs(rewrite_group_windows(query)), start=1):
        source = sql(spark, "SELECT * FROM " + call.relation)
        part = window_dead_letters(source, _find(source.columns, call.time_column) or call.time_column)
        parts.append(part.withColumn("clause", F.lit(f"{call.function} #{n}")))
    return parts


# Flink's legacy group windows (GROUP BY TUMBLE(ts, ...)) become window TVF calls first (order 3), which the
# window ops check (4) and the window TVF rewrite then see as if written so.
sql_rewrite.register(sql_rewrite.ClauseRewriter("legacy group window", 3,
                                                lambda spark, query: rewrite_group_windows(query)))

# Window TVFs first (order 5): each call becomes a subquery, which MATCH_RECOGNIZE (10) or a temporal join (20)
# can then take as its input; a call's own TABLE (<subquery>) input goes through the whole rewrite.
sql_rewrite.register(sql_rewrite.ClauseRewriter(
    "window TVF", 5, lambda spark, query: rewrite_window_tvfs(spark, query, sql_rewrite.rewrite)))

__all__ = [
    "bind",
    "cumulate",
    "grouping_sets_of",
    "hop",
    "rewrite_window_tvfs",
    "session",
    "session_zone",
    "time_kind",
    "tumble",
    "window_aggregate",
    "window_aggregate_with_rejects",
    "window_dead_letters",
    "window_tvf",
    "window_tvf_dead_letters",
]
