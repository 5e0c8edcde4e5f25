"""A Flink SQL script as a batch job: ``timeweave-job sql --file job.sql``.

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
each statement runs with its own line and column.  Streaming mode (a checkpointed query per insert) is not
built yet and is refused before Spark starts work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from timeweave.core.ddl.connectors import FileSource, source_of
from timeweave.core.ddl.insert import InsertInto, InsertSet, plan_script
from timeweave.core.ddl.script import Statement
from timeweave.core.ddl.table import CreateTable, is_create_table, parse_create_table
from timeweave.core.errors import SpecError

#: The file formats a script's sink may be written in.
SINK_FORMATS = ("csv", "json", "parquet")


@dataclass(frozen=True)
class _Sink:
    table: CreateTable
    source: FileSource


def _in_place(script: str, start: int, text: str) -> str:
    """``text`` (which starts at ``start`` in ``script``) preceded by the script's line breaks before it and blanks,
    so a syntax error in it has the script's line and column."""
    return "".join(c if c == "\n" else " " for c in script[:start]) + text


def _sink(table: CreateTable) -> _Sink:
    source = source_of(table)
    if not isinstance(source, FileSource) or source.changelog is not None or source.format not in SINK_FORMATS:
        raise table.error(f"the sink {table.name} must be a filesystem table in one of {list(SINK_FORMATS)} (a "
                          "changelog or Kafka sink is not supported)", table.position)
    return _Sink(table, source)


def _targets(steps: tuple[Statement | InsertSet, ...]) -> set[str]:
    return {i.table.lower() for s in steps if isinstance(s, InsertSet) for i in s.inserts}


def _insert(spark: Any, insert: InsertInto, sinks: dict[str, _Sink]) -> dict[str, Any]:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    import timeweave

    query = _in_place(insert.script, insert.query_start, insert.query)
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
    physical = list(sink.table.physical)
    by_name = {c.name.lower(): c for c in physical}
    targets = [by_name.get(name.lower()) for name in insert.columns] if insert.columns else physical
    missing = [name for name, c in zip(insert.columns, targets, strict=False) if c is None]
    if missing:
        raise insert.error(f"INSERT INTO {insert.table}: no column {missing[0]!r}; its columns: "
                           f"{[c.name for c in physical]}")
    if len(rows.columns) != len(targets):
        raise insert.error(f"INSERT INTO {insert.table}: the query gives {len(rows.columns)} columns, the target "
                           f"takes {len(targets)} ({[c.name for c in targets]})")
    given = {c.name: rows[q].cast(c.type.spark)
             for c, q in zip(targets, rows.columns, strict=True)}
    out = rows.select(*[given.get(c.name, F.lit(None).cast(c.type.spark)).alias(c.name) for c in physical])
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


def check_script(script: str, mode: str = "batch") -> tuple[Statement | InsertSet, ...]:
    """The script's steps, every INSERT and every sink checked, before Spark runs anything.

    >>> len(check_script("CREATE TABLE s (a INT) WITH ('connector' = 'filesystem', 'path' = '/o', "
    ...                  "'format' = 'parquet'); INSERT INTO s SELECT 1"))
    2
    """
    if mode != "batch":
        raise SpecError("mode", "a SQL script runs as a batch job (--mode batch); streaming SQL scripts (a "
                        "checkpointed query per INSERT) are not supported yet: run each query as a streaming job "
                        "config", where="sql script")
    steps = plan_script(script)
    targets = _targets(steps)
    for step in steps:
        if isinstance(step, Statement) and is_create_table(step):
            table = parse_create_table(step)
            if table.name.lower() in targets:
                _sink(table)
    return steps


def script_datasets(script: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(inputs, outputs)`` of a checked script as ``(role, path)``: the filesystem tables it declares and reads,
    and each sink with its dead-letter directory (lineage for the Airflow operator).

    >>> script_datasets("CREATE TABLE s (a INT) WITH ('connector' = 'filesystem', 'path' = '/o', "
    ...                 "'format' = 'parquet'); INSERT INTO s SELECT 1")
    ([], [('s', '/o'), ('s dead_letter', '/o_dead_letter')])
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
                outputs += [(table.name, source.path), (f"{table.name} dead_letter", source.path.rstrip("/") + "_dead_letter")]
            else:
                inputs.append((table.name, source.path))
    return inputs, outputs


def run_sql_script(spark: Any, script: str, *, mode: str = "batch") -> dict[str, Any]:
    """Run a Flink SQL script as a batch job; returns the metrics (per insert: rows written, dead letters).

    Example::

        metrics = run_sql_script(spark, Path("job.sql").read_text())
        metrics["inserts"][0]["rows"]
    """
    import timeweave

    steps = check_script(script, mode)
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
        timeweave.sql(spark, _in_place(script, step.start, step.text))
    return {"kind": "sql", "mode": mode, "statements": statements, "inserts": inserts,
            "rows_out": sum(i["rows"] for i in inserts), "dead_letter": sum(i.get("dead_letter", 0) for i in inserts)}


__all__ = ["SINK_FORMATS", "check_script", "run_sql_script", "script_datasets"]
