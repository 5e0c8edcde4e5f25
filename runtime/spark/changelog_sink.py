"""The sink helper of an updating output: a changelog (``op`` column) materialised into a parquet table, idempotently
per micro-batch and atomically per batch.

The rule is the core's (:mod:`timeweave.core.updates.materialize`: :data:`~timeweave.core.updates.materialize.
EFFECTS`, :func:`~timeweave.core.updates.materialize.already_applied`, the same as :class:`~timeweave.core.updates.
MaterializedTable`); this module translates it into Spark:

* **upsert**: the table is a map from the key to the row: a batch's ``+I`` / ``+U`` put their rows by key, ``-D``
  removes its key, which the table must hold.  A batch names a key once (the streaming GROUP BY emits one change
  per key and micro-batch); a batch naming a key twice is refused (its order is not the table's to guess).
* **retract** / **append**: the table is a multiset: each row's copies change by the batch's net count of it
  (``+I`` / ``+U``: one more, ``-U`` / ``-D``: one fewer); a row whose copies would go below zero is refused (the
  stream and the table disagree).  Within a batch the retractions are applied after the additions.

**Idempotent per micro-batch.**  The table remembers the last batch id it applied *in its commit*: a batch id at
or below it was applied already and writes nothing (``foreachBatch`` re-delivers the last batch after a failure).

**Atomic per batch: versions and commit markers.**  ``<path>/v=<n>/`` holds version ``n`` of the table (parquet);
``<path>/_tw_commits/<n>.json`` commits it (version, batch id, mode, key, columns).  A batch writes the whole new
version, then its marker (written aside and renamed into place: a reader sees it whole or not at all); the current
table is the version of the largest marker (:func:`read_changelog_table`).  A failure before the marker leaves the
previous version current and the batch unapplied, so the replayed batch applies it then.  Versions older than the
previous one are removed after a commit.  Each batch rewrites the table (copy on write): fit for results of a
moderate number of keys, as a GROUP BY's are.

Example (from ``foreachBatch``)::

    def write(batch, batch_id):
        apply_changelog(batch, "out/clicks_per_user", key=["user"], mode="upsert", batch_id=batch_id)
    changelog_stream.writeStream.foreachBatch(write).option("checkpointLocation", "chk").start()
    read_changelog_table(spark, "out/clicks_per_user").show()
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from timeweave.core.errors import ChangelogError, SpecError
from timeweave.core.updates.materialize import EFFECTS, already_applied, check_batch_id
from timeweave.core.updates.modes import ChangelogMode
from timeweave.spark.hadoop import HadoopFiles
from timeweave.spark.render import quote

COMMITS = "_tw_commits"
WHERE = "apply_changelog"


@dataclass(frozen=True)
class TableCommit:
    """One committed version of a changelog table: its number, the micro-batch it applied, the mode, the key
    columns and the table's columns (names in order)."""

    version: int
    batch_id: int | None
    mode: ChangelogMode
    key: tuple[str, ...]
    columns: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps({"version": self.version, "batch_id": self.batch_id, "mode": self.mode.value,
                           "key": list(self.key), "columns": list(self.columns)})

    @classmethod
    def from_json(cls, text: str, where: str) -> TableCommit:
        try:
            d = json.loads(text)
            return cls(int(d["version"]), None if d["batch_id"] is None else int(d["batch_id"]),
                       ChangelogMode.parse(d["mode"]), tuple(d["key"]), tuple(d["columns"]))
        except (ValueError, KeyError, TypeError, SpecError) as exc:
            raise ChangelogError(f"{where}: unreadable commit marker ({exc})") from None


class _Store:
    """A changelog table's directory through Hadoop's file system (the driver's JVM)."""

    def __init__(self, spark: SparkSession, path: str) -> None:
        self.files = HadoopFiles(spark)
        self.jvm = spark.sparkContext._jvm
        self.path = path.rstrip("/")

    def version_dir(self, version: int) -> str:
        return f"{self.path}/v={version}"

    def latest(self) -> TableCommit | None:
        commits = self.files.path(f"{self.path}/{COMMITS}")
        fs = self.files.fs(commits)
        if not fs.exists(commits):
            return None
        versions = [int(s.getPath().getName()[:-5]) for s in fs.listStatus(commits)
                    if s.getPath().getName().endswith(".json") and s.getPath().getName()[:-5].isdigit()]
        if not versions:
            return None
        marker = self.files.path(f"{self.path}/{COMMITS}/{max(versions)}.json")
        stream = fs.open(marker)
        try:
            reader = self.jvm.java.io.BufferedReader(self.jvm.java.io.InputStreamReader(stream, "UTF-8"))
            text = reader.readLine()
        finally:
            stream.close()
        return TableCommit.from_json(text, f"{WHERE}: {self.path}")

    def commit(self, commit: TableCommit) -> None:
        """Write the marker aside, then rename it into place (a rename to a new name is atomic)."""
        final = self.files.path(f"{self.path}/{COMMITS}/{commit.version}.json")
        temp = self.files.path(f"{self.path}/{COMMITS}/_tmp-{commit.version}.json")
        fs = self.files.fs(final)
        out = fs.create(temp, True)
        try:
            out.write(bytearray(commit.to_json().encode()))
        finally:
            out.close()
        if fs.exists(final) or not fs.rename(temp, final):
            fs.delete(temp, False)
            raise ChangelogError(f"{WHERE}: {self.path}: version {commit.version} was committed by another writer "
                                 "meanwhile: one writer per table")

    def clean(self, keep_from: int) -> None:
        """Remove versions below ``keep_from`` and their markers (readers in flight read the kept ones)."""
        root = self.files.path(self.path)
        fs = self.files.fs(root)
        for status in fs.listStatus(root):
            name = status.getPath().getName()
            if name.startswith("v=") and name[2:].isdigit() and int(name[2:]) < keep_from:
                fs.delete(status.getPath(), True)
                fs.delete(self.files.path(f"{self.path}/{COMMITS}/{name[2:]}.json"), False)


def _same(left: DataFrame, right: DataFrame, columns: Sequence[str]) -> Column:
    """Null-safe equality of ``columns`` (a NULL key is a key, as the streaming GROUP BY keeps it)."""
    condition = F.lit(True)
    for c in columns:
        condition = condition & left[quote(c)].eqNullSafe(right[quote(c)])
    return condition


def _first(df: DataFrame) -> dict[str, Any] | None:
    rows = df.limit(1).collect()
    return rows[0].asDict() if rows else None


def read_changelog_table(spark: SparkSession, path: str) -> DataFrame:
    """The current version of a table :func:`apply_changelog` maintains (its largest commit marker's version).

    Example::

        read_changelog_table(spark, "out/clicks_per_user").orderBy("user").show()
    """
    commit = _Store(spark, path).latest()
    if commit is None:
        raise ChangelogError(f"{path}: no changelog table here (no commit marker under {COMMITS}/)")
    return spark.read.parquet(_Store(spark, path).version_dir(commit.version)).select(
        *[F.col(quote(c)) for c in commit.columns])


def apply_changelog(changelog: DataFrame, path: str, *, key: str | Sequence[str] = (),
                    mode: ChangelogMode | str, batch_id: int, op_column: str = "op") -> int:
    """Apply one micro-batch of a changelog (rows with an ``op_column`` of ``+I`` / ``-U`` / ``+U`` / ``-D``) to the
    parquet table at ``path`` (see the module docstring); returns the changelog rows applied (0: batch ``batch_id``
    was applied before, nothing written).  ``key``: the table's unique key (required for upsert); ``mode``:
    ``upsert``, ``retract`` or ``append``.  The table's columns are the changelog's other columns; a table keeps
    the mode, key and columns it was created with.  Errors (an op the mode does not carry, a retraction of a row
    or key the table does not hold, a key twice in an upsert batch) name the table and the row, and write nothing.

    Example::

        apply_changelog(batch, "out/clicks_per_user", key="user", mode="upsert", batch_id=batch_id)
    """
    mode = ChangelogMode.parse(mode, where=WHERE)
    batch_id = check_batch_id(batch_id, WHERE)
    keys = (key,) if isinstance(key, str) else tuple(key)
    if mode is ChangelogMode.UPSERT and not keys:
        raise SpecError("key", "an upsert table needs its unique key columns", where=WHERE)
    if op_column not in changelog.columns:
        raise SpecError("op_column", f"column {op_column!r} not found in the changelog; columns: {changelog.columns}",
                        where=WHERE)
    missing = [k for k in keys if k not in changelog.columns or k == op_column]
    if missing:
        raise SpecError("key", f"key column(s) {missing} not in the changelog's columns {changelog.columns}",
                        where=WHERE)
    columns = tuple(c for c in changelog.columns if c != op_column)
    spark = changelog.sparkSession
    store = _Store(spark, path)
    last = store.latest()
    if last is not None:
        if (last.mode, last.key, last.columns) != (mode, keys, columns):
            raise SpecError("changelog", f"{path} is a {last.mode.value} table keyed by {list(last.key)} with columns "
                            f"{list(last.columns)}; this changelog is {mode.value}, keyed by {list(keys)}, with "
                            f"columns {list(columns)}", where=WHERE)
        if already_applied(last.batch_id, batch_id):
            return 0
    name = f"{WHERE}: {path}"
    effects = EFFECTS[mode]
    effect = F.lit(None).cast("int")
    for op, delta in effects.items():
        effect = F.when(F.col(quote(op_column)) == F.lit(op), F.lit(delta)).otherwise(effect)
    changes = changelog.withColumn("__tw_effect", effect).persist()
    try:
        bad = _first(changes.where(F.col("__tw_effect").isNull()).drop("__tw_effect"))
        if bad is not None:
            raise ChangelogError(f"{name}: {'an' if mode.value[0] in 'aeiou' else 'a'} {mode.value} changelog carries no op {bad[op_column]!r} (row {bad}); "
                                 f"its ops: {', '.join(effects)}")
        n = changes.count()
        cols = [F.col(quote(c)) for c in columns]
        old = (spark.read.parquet(store.version_dir(last.version)).select(*cols) if last is not None
               else spark.createDataFrame([], changelog.select(*cols).schema))
        if mode is ChangelogMode.UPSERT:
            twice = _first(changes.groupBy(*[F.col(quote(k)) for k in keys]).count().where(F.col("count") > 1))
            if twice is not None:
                raise ChangelogError(f"{name}: the batch names key {tuple(twice[k] for k in keys)} "
                                     f"{twice['count']} times: an upsert batch names a key once")
            deletes = changes.where(F.col("__tw_effect") < 0)
            gone = _first(deletes.join(old, _same(deletes, old, keys), "left_anti").drop("__tw_effect"))
            if gone is not None:
                raise ChangelogError(f"{name}: -D of key {tuple(gone[k] for k in keys)} (row {gone}), which the "
                                     "table does not hold")
            kept = old.join(changes, _same(old, changes, keys), "left_anti")
            table = kept.unionByName(changes.where(F.col("__tw_effect") > 0).select(*cols))
        else:
            counted = old.withColumn("__tw_effect", F.lit(1)).unionByName(changes.select(*cols, "__tw_effect"))
            net = counted.groupBy(*cols).agg(F.sum("__tw_effect").alias("__tw_n"))
            short = _first(net.where(F.col("__tw_n") < 0))
            if short is not None:
                row = {c: short[c] for c in columns}
                raise ChangelogError(f"{name}: {-short['__tw_n']} retraction(s) of row {row} more than the table "
                                     "and the batch hold")
            table = net.where(F.col("__tw_n") > 0).select(
                *cols, F.explode(F.array_repeat(F.lit(1), F.col("__tw_n").cast("int"))).alias("__tw_copy")
            ).drop("__tw_copy")
        version = 0 if last is None else last.version + 1
        table.write.mode("overwrite").parquet(store.version_dir(version))
        store.commit(TableCommit(version, batch_id, mode, keys, columns))
        store.clean(version - 1)
        return n
    finally:
        changes.unpersist()


__all__ = ["TableCommit", "apply_changelog", "read_changelog_table"]
