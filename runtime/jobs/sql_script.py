"""A Flink SQL script as a job: ``timeweave-job sql --file job.sql [--mode streaming]``.

The script's statements run in order through :func:`timeweave.sql` (Flink DDL, temporal joins,
MATCH_RECOGNIZE, window TVFs, Spark SQL); each ``INSERT INTO`` / ``INSERT OVERWRITE`` (alone or in a statement
set) writes its query's rows into its sink:

* a table the script declares with ``CREATE TABLE ... WITH ('connector' = 'filesystem', 'path' = ..., 'format' =
  'csv' | 'json' | 'parquet')``: the rows are written there in that format (INTO appends, OVERWRITE replaces, as
  Flink's filesystem sink in batch mode), cast to the declared column types, by position or by the insert's
  column list (columns it leaves out are NULL); the query's dead letters (:func:`timeweave.dead_letters`: rows
  its temporal joins, MATCH_RECOGNIZE and windows cannot use, with the reason) go beside it, as parquet in
  ``<path>_dead_letter``, in the same mode;
* or a table of Spark's catalog (``insertInto``).

A sink declared in the script is not read, so its directory need not exist yet.  Errors point into the script:
each statement runs with its own line and column.

Streaming mode (``--mode streaming``): the tables are read as streams and each insert runs as a checkpointed
streaming query into a parquet sink the script declares, its late rows in ``<path>_late`` and its dead letters in
``<path>_dead_letter`` (:mod:`timeweave.jobs.sql_streaming`, :mod:`timeweave.spark.sql_streaming`).  The script's
tables and views are dropped when it ends, in either mode (a re-run in the same session declares them again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from timeweave.core.ddl.connectors import FileSource, source_of
from timeweave.core.ddl.insert import InsertInto, InsertSet, plan_script
from timeweave.core.ddl.script import Statement, in_place
from timeweave.core.ddl.table import CreateTable, is_create_table, parse_create_table
from timeweave.core.ddl.view import is_create_view, parse_create_view
from timeweave.core.errors import SpecError

#: The file formats a script's sink may be written in.
SINK_FORMATS = ("csv", "json", "parquet")


@dataclass(frozen=True)
class _Sink:
    table: CreateTable
    source: FileSource


def _sink(table: CreateTable) -> _Sink:
    source = source_of(table)
    if not isinstance(source, FileSource) or source.changelog is not None or source.format not in SINK_FORMATS:
        raise table.error(f"the sink {table.name} must be a filesystem table in one of {list(SINK_FORMATS)} (a "
                          "changelog or Kafka sink is not supported)", table.position)
    return _Sink(table, source)


def _targets(steps: tuple[Statement | InsertSet, ...]) -> set[str]:
    return {i.table.lower() for s in steps if isinstance(s, InsertSet) for i in s.inserts}


def sink_rows(insert: InsertInto, table: CreateTable, rows: Any) -> Any:
    """The query's ``rows`` as the sink ``table``'s physical columns: cast to the declared types, by position or by
    the insert's column list (columns it leaves out are NULL); a positioned error when they do not fit."""
    from pyspark.sql import functions as F

    physical = list(table.physical)
    by_name = {c.name.lower(): c for c in physical}
    targets = [by_name.get(name.lower()) for name in insert.columns] if insert.columns else physical
    missing = [name for name, c in zip(insert.columns, targets, strict=False) if c is None]
    if missing:
        raise insert.error(f"INSERT INTO {insert.table}: no column {missing[0]!r}; its columns: "
                           f"{[c.name for c in physical]}")
    if len(rows.columns) != len(targets):
        raise insert.error(f"INSERT INTO {insert.table}: the query gives {len(rows.columns)} columns, the target "
                           f"takes {len(targets)} ({[c.name for c in targets]})")
    # by position: a query's column names may be any text (`(o.price * r.rate)`), never resolved as names
    positional = rows.toDF(*[f"__tw_sink_{i}" for i in range(len(targets))])
    given = {c.name: positional[f"__tw_sink_{i}"].cast(c.type.spark) for i, c in enumerate(targets)}
    return positional.select(*[given.get(c.name, F.lit(None).cast(c.type.spark)).alias(c.name) for c in physical])


def _insert(spark: Any, insert: InsertInto, sinks: dict[str, _Sink]) -> dict[str, Any]:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    import timeweave

    query = in_place(insert.script, insert.query_start, insert.query)
    rows = timeweave.sql(spark, query)
    sink = sinks.get(insert.table.lower())
    mode = "overwrite" if insert.overwrite else "append"
    if sink is None:
        if not spark.catalog.tableExists(insert.table):
            raise insert.error(f"INSERT INTO {insert.table}: no such table (declare it with CREATE TABLE ... WITH "
                               "('connector' = 'filesystem', ...) earlier in the script, or create it in the catalog)")
        counted = Observation()
        rows.observe(counted, F.count(F.lit(1)).alias("n")).write.insertInto(insert.table, overwrite=insert.overwrite)
        return {"table": insert.table, "rows": counted.get["n"], "mode": mode}
    out = sink_rows(insert, sink.table, rows)
    options = {k: v for k, v in sink.source.reader_options if k != "mode"}  # parse modes mean nothing to a writer
    counted = Observation()
    (out.observe(counted, F.count(F.lit(1)).alias("n")).write.mode(mode).format(sink.source.spark_format)
     .options(**options).save(sink.source.path))
    dead_path = sink.source.path.rstrip("/") + "_dead_letter"
    rejected = timeweave.dead_letters(spark, query)
    dead = Observation()
    rejected.observe(dead, F.count(F.lit(1)).alias("n")).write.mode(mode).parquet(dead_path)
    return {"table": insert.table, "path": sink.source.path, "rows": counted.get["n"], "mode": mode,
            "dead_letter_path": dead_path, "dead_letter": dead.get["n"]}


#: The modes a script runs in.
MODES = ("batch", "streaming")


def check_script(script: str, mode: str = "batch") -> tuple[Statement | InsertSet, ...]:
    """The script's steps, every INSERT and every sink checked, before Spark runs anything.

    Streaming mode writes each sink exactly once per micro-batch as parquet, so a streaming sink is a filesystem
    table in the parquet format, and an insert appends (``INSERT OVERWRITE`` has no streaming meaning).

    >>> len(check_script("CREATE TABLE s (a INT) WITH ('connector' = 'filesystem', 'path' = '/o', "
    ...                  "'format' = 'parquet'); INSERT INTO s SELECT 1"))
    2
    """
    if mode not in MODES:
        raise SpecError("mode", f"unknown mode {mode!r}; use one of {list(MODES)}", where="sql script")
    steps = plan_script(script)
    targets = _targets(steps)
    declared: set[str] = set()
    for step in steps:
        if isinstance(step, Statement) and is_create_table(step):
            table = parse_create_table(step)
            declared.add(table.name.lower())
            if table.name.lower() in targets:
                sink = _sink(table)
                if mode == "streaming" and sink.source.format != "parquet":
                    raise table.error(f"the sink {table.name} is written by a streaming query, exactly once per "
                                      "micro-batch, as parquet: declare 'format' = 'parquet'",
                                      table.option("format").value_position if table.option("format")
                                      else table.position)
        if mode == "streaming" and isinstance(step, InsertSet):
            for insert in step.inserts:
                if insert.table.lower() not in declared:
                    raise insert.error(f"INSERT INTO {insert.table}: in streaming mode the sink is a filesystem "
                                       "table declared earlier in the script (CREATE TABLE ... WITH ('connector' = "
                                       "'filesystem', 'format' = 'parquet', ...))")
                if insert.overwrite:
                    raise insert.error(f"INSERT OVERWRITE {insert.table}: a streaming query appends; write INSERT INTO")
    return steps


def script_datasets(script: str, mode: str = "batch") -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(inputs, outputs)`` of a checked script as ``(role, path)``: the filesystem tables it declares and reads,
    and each sink with its dead-letter directory, and in streaming ``mode`` its late-row directory too (lineage for
    the Airflow operator).

    >>> script_datasets("CREATE TABLE s (a INT) WITH ('connector' = 'filesystem', 'path' = '/o', "
    ...                 "'format' = 'parquet'); INSERT INTO s SELECT 1")
    ([], [('s', '/o'), ('s dead_letter', '/o_dead_letter')])
    >>> script_datasets("CREATE TABLE s (a INT) WITH ('connector' = 'filesystem', 'path' = '/o', "
    ...                 "'format' = 'parquet'); INSERT INTO s SELECT 1", "streaming")[1][-1]
    ('s late', '/o_late')
    """
    steps = check_script(script)
    targets = _targets(steps)
    inputs: list[tuple[str, str]] = []
    outputs: list[tuple[str, str]] = []
    for step in steps:
        if isinstance(step, Statement) and is_create_table(step):
            table = parse_create_table(step)
            source = source_of(table)
            if not isinstance(source, FileSource):
                continue
            if table.name.lower() in targets:
                path = source.path.rstrip("/")
                outputs += [(table.name, source.path), (f"{table.name} dead_letter", f"{path}_dead_letter")]
                if mode == "streaming":  # the streaming queries' late rows (run_sql_script)
                    outputs.append((f"{table.name} late", f"{path}_late"))
            else:
                inputs.append((table.name, source.path))
    return inputs, outputs


def run_sql_script(
    spark: Any, script: str, *, mode: str = "batch", checkpoint: str | None = None, flush: bool = False,
    processing_time: str | None = None, timeout_seconds: float | None = None,
) -> dict[str, Any]:
    """Run a Flink SQL script as a batch job, or (``mode="streaming"``) as a streaming job; returns the metrics
    (per insert: rows written, dead letters; streaming: also late rows).

    Streaming: the script's tables are read as streams and each insert runs as a checkpointed streaming query
    (:mod:`timeweave.jobs.sql_streaming`), one after the other, its checkpoint in ``<checkpoint>/<n>-<sink>``
    (default ``<sink path>_checkpoint``); ``flush``: the end of input (every row waiting for the watermark is
    emitted, as Flink's bounded sources end); ``processing_time``: run micro-batches at that interval until
    ``timeout_seconds`` (one insert only) instead of reading what is there (``available_now``).

    Example::

        metrics = run_sql_script(spark, Path("job.sql").read_text())
        metrics["inserts"][0]["rows"]
        run_sql_script(spark, Path("job.sql").read_text(), mode="streaming", checkpoint="chk/job", flush=True)
    """
    from timeweave.spark.ddl import drop_declared

    steps = check_script(script, mode)
    created: list[str] = []
    try:
        if mode == "streaming":
            return _run_streaming_script(spark, steps, created, checkpoint, flush, processing_time, timeout_seconds)
        return _run_batch_script(spark, steps, created)
    finally:  # the script's tables and views live for its run (Flink's temporary tables for the job's session)
        for name in created:
            drop_declared(spark, name)


def _declared_name(step: Statement) -> str | None:
    """The table or view ``step`` registers (None: another statement, or ``IF NOT EXISTS``, which may find one
    the script did not create)."""
    declared = parse_create_table(step) if is_create_table(step) else parse_create_view(step) \
        if is_create_view(step) else None
    return None if declared is None or declared.if_not_exists else declared.name


def _run_statement(spark: Any, step: Statement, created: list[str]) -> None:
    import timeweave

    timeweave.sql(spark, in_place(step.script, step.start, step.text))
    name = _declared_name(step)
    if name is not None:
        created.append(name)


def _run_batch_script(spark: Any, steps: tuple[Statement | InsertSet, ...], created: list[str]) -> dict[str, Any]:
    targets = _targets(steps)
    sinks: dict[str, _Sink] = {}
    inserts: list[dict[str, Any]] = []
    statements = 0
    for step in steps:
        if isinstance(step, InsertSet):
            inserts.extend(_insert(spark, insert, sinks) for insert in step.inserts)
            continue
        statements += 1
        if is_create_table(step):
            table = parse_create_table(step)
            if table.name.lower() in targets:  # a sink: written, never read (its directory may not exist yet)
                sinks[table.name.lower()] = _sink(table)
                continue
        _run_statement(spark, step, created)
    return {"kind": "sql", "mode": "batch", "statements": statements, "inserts": inserts,
            "rows_out": sum(i["rows"] for i in inserts), "dead_letter": sum(i.get("dead_letter", 0) for i in inserts)}


def _run_streaming_script(
    spark: Any, steps: tuple[Statement | InsertSet, ...], created: list[str], checkpoint: str | None, flush: bool,
    processing_time: str | None, timeout_seconds: float | None,
) -> dict[str, Any]:
    """The script's statements with its tables as streams, then each insert as a streaming job (in order)."""
    from timeweave.jobs.sql_streaming import SqlInsertJob
    from timeweave.jobs.streaming import run_streaming
    from timeweave.spark import ddl

    targets = _targets(steps)
    inserts = [i for step in steps if isinstance(step, InsertSet) for i in step.inserts]
    if processing_time is not None and len(inserts) > 1:
        raise inserts[1].error("a processing-time streaming script runs one INSERT (its query runs until stopped); "
                               "put the others in scripts of their own")
    sinks: dict[str, _Sink] = {}
    statements = 0
    for step in steps:
        if isinstance(step, InsertSet):
            continue
        statements += 1
        if is_create_table(step):
            table = parse_create_table(step)
            if table.name.lower() in targets:
                sinks[table.name.lower()] = _sink(table)
            elif ddl.create_table(spark, table, streaming=True) is not None and not table.if_not_exists:
                created.append(table.name)
            continue
        _run_statement(spark, step, created)
    results: list[dict[str, Any]] = []
    for n, insert in enumerate(inserts, start=1):
        sink = sinks[insert.table.lower()]
        path = sink.source.path.rstrip("/")
        job = SqlInsertJob(
            insert, path, f"{path}_late", f"{path}_dead_letter",
            f"{checkpoint.rstrip('/')}/{n}-{sink.table.name}" if checkpoint else f"{path}_checkpoint",
            lambda rows, insert=insert, sink=sink: sink_rows(insert, sink.table, rows),
            available_now=processing_time is None, processing_time=processing_time,
            raw={"sql_insert": {"table": insert.table, "query": insert.query}},
        )
        metrics = run_streaming(job, spark, flush=flush, timeout_seconds=timeout_seconds)
        results.append({"table": insert.table, "path": path, "late_path": job.late_path,
                        "dead_letter_path": job.dead_letter_path, "checkpoint": job.checkpoint, **metrics})
    return {"kind": "sql", "mode": "streaming", "statements": statements, "inserts": results,
            "rows_out": sum(i["rows_out"] for i in results), "late": sum(i["late"] for i in results),
            "dead_letter": sum(i["dead_letter"] for i in results)}


__all__ = ["MODES", "SINK_FORMATS", "check_script", "in_place", "run_sql_script", "script_datasets", "sink_rows"]
