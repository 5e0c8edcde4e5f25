"""The one writer of the tagged outputs: a micro-batch (or a backfill slice) split by tag and written exactly once.

:class:`TaggedWriter` is a ``foreachBatch`` function for any :class:`TaggedStream` (an operator's tagged stream
with its split and its counts): it persists the batch, splits it into its outputs by
:class:`~timeweave.core.operator.Tag` (main, late, dead letter, changelog), writes each output that has rows to
its path and counts rows in and out.

**Exactly once.**  Output ``o`` of batch ``N`` is written to a staging directory ``<path>/_tw_staging/`` and its
files are moved to ``<path>/part-b<N>-<i>.<ext>`` (:meth:`timeweave.spark.hadoop.HadoopFiles.commit`); a replayed
batch first deletes its own ``part-b<N>-*`` files, so a restart never duplicates rows.  Readers read ``<path>``
as a plain parquet directory (``_``-prefixed entries are ignored by Spark).

**One pass for the counts.**  The batch's counts ride on the main output's write (an observation over the
whole batch, below the split's filters) instead of a query of their own: one Spark job per batch fewer, each
with its own planning, code generation and tasks.  The first write computes the batch (and the observation),
so it cannot be skipped up front: when the batch turns out to have no main rows, the staged files are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pyspark.sql import Column, DataFrame, SparkSession

from timeweave.core.operator import Tag
from timeweave.spark.hadoop import HadoopFiles
from timeweave.spark.host.stream import BatchOutputs

#: Spark SQL conf: compress the columns of cached DataFrames (a stream may turn it off, see ``compress_cache``).
CACHE_COMPRESSED = "spark.sql.inMemoryColumnarStorage.compressed"


@dataclass(frozen=True)
class OutputCounts:
    """A batch's counts, from its observation: input rows by metric name, and the rows of each output.

    ``rows_in``: the metrics the batch adds its input rows to (``rows_in_left``/``rows_in_right`` for a
    two-input operator, ``rows_in`` for one input; dead letters included).  ``main``, ``late``, ``dead`` and
    ``changelog``: how many tagged rows (of any width) each output has: 0 skips its write.
    """

    rows_in: Mapping[str, int]
    main: int
    late: int
    dead: int
    changelog: int = 0


class TaggedStream(Protocol):
    """What the writer needs of an operator's stream (``StreamingJoin``, ``StreamingMatch``).

    ``compress_cache``: whether the batch's cache compresses its columns (an operator whose batch is mostly
    read by one write turns it off: picking and applying an encoding per column costs more than it saves).
    """

    stream: DataFrame
    compress_cache: bool

    def split(self, batch: DataFrame) -> BatchOutputs: ...

    def count_columns(self) -> list[Column]: ...

    def counts(self, observed: Mapping[str, Any]) -> OutputCounts: ...


class TaggedWriter:
    """The ``foreachBatch`` function: split a micro-batch by tag, write its outputs exactly once, count.

    ``paths``: output path by tag name (``main``, ``late``, ``dead_letter``, and ``changelog`` when the stream
    emits one).  ``metrics``: the run's counts, updated in place after each batch (``rows_out``, ``late``,
    ``dead_letter``, ``batches`` and the stream's ``rows_in`` names, which the caller initialises).

    Example::

        writer = TaggedWriter(spark, join, {"main": "out", "late": "out_late", "dead_letter": "out_dead"},
                              {"rows_in_left": 0, "rows_in_right": 0, "rows_out": 0, "late": 0,
                               "dead_letter": 0, "batches": 0})
        join.stream.writeStream.foreachBatch(writer).option("checkpointLocation", "chk").start()
    """

    def __init__(self, spark: SparkSession, stream: TaggedStream, paths: Mapping[str, str], metrics: dict[str, Any]
                 ) -> None:
        self._stream = stream
        self._paths = paths
        self._metrics = metrics
        self._fs = HadoopFiles(spark)
        #: Each batch's counts until the job's progress log reports the batch (its log line, its run-dir event).
        self.batch_counts: dict[int, dict[str, int]] = {}
        #: Called with a copy of the run's counts after every micro-batch (``run_streaming(on_batch=...)``).
        self.on_batch: Callable[[dict[str, Any]], None] | None = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from pyspark.sql import Observation

        if not getattr(self._stream, "compress_cache", True):
            # The cache lives for this call only and is mostly read by one write: its columns stay uncompressed
            # (~0.5 JVM CPU-s per 250 k rows).  batch.sparkSession is the query's own clone of the session.
            batch.sparkSession.conf.set(CACHE_COMPRESSED, "false")
        # Persist: the late and dead-letter outputs read the batch again; recomputing would re-run the operator.
        batch = batch.persist()
        try:
            observation = Observation(f"tw_counts_{batch_id}")
            observed = batch.observe(observation, *self._stream.count_columns())
            outputs = self._stream.split(observed)
            staged = self._stage(outputs.main, Tag.MAIN, batch_id)  # computes the batch and its observation
            c = self._stream.counts(observation.get)
            written = self._keep(staged) if c.main else self._drop(staged)
            late = self._write(outputs.late, Tag.LATE, batch_id) if c.late else 0
            dead = self._write(outputs.dead_letter, Tag.DEAD_LETTER, batch_id) if c.dead else 0
            m = self._metrics
            for name, rows in c.rows_in.items():
                m[name] += rows
            m["rows_out"] += written
            m["late"] += late
            m["dead_letter"] += dead
            counts = {**c.rows_in, "rows_out": written, "late": late, "dead_letter": dead}
            if outputs.changelog is not None:
                changed = self._write(outputs.changelog, Tag.CHANGELOG, batch_id) if c.changelog else 0
                m["changelog"] = m.get("changelog", 0) + changed
                counts["changelog"] = changed
            m["batches"] += 1
            self.batch_counts[batch_id] = counts
            if self.on_batch is not None:
                self.on_batch(dict(m))
        finally:
            batch.unpersist()

    def _path(self, tag: Tag) -> str:
        try:
            return self._paths[tag.value]
        except KeyError:
            raise KeyError(f"the stream emits a {tag.value} output but the job names no path for it "
                           f"(outputs with paths: {sorted(self._paths)})") from None

    def _stage(self, df: DataFrame, tag: Tag, batch_id: int) -> tuple[str, str, str, int]:
        """Write ``df`` to the batch's staging directory of output ``tag``: (staging, target, file prefix, rows)."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        target = self._path(tag)
        staging = f"{target}/_tw_staging/batch-{batch_id:012d}"
        observed = Observation(f"tw_{tag.value}_{batch_id}")
        df.observe(observed, F.count(F.lit(1)).alias("rows")).write.mode("overwrite").parquet(staging)
        return staging, target, f"part-b{batch_id:012d}-", int(observed.get["rows"])

    def _keep(self, staged: tuple[str, str, str, int]) -> int:
        """Move the staged files into the output (replacing a replay's files of the batch); their row count."""
        staging, target, prefix, written = staged
        self._fs.commit(staging, target, prefix)
        return written

    def _drop(self, staged: tuple[str, str, str, int]) -> int:
        """The batch has no rows for this output: drop the staged files, and a replay's files of the batch."""
        staging, target, prefix, written = staged
        staging_path = self._fs.path(staging)
        fs = self._fs.fs(staging_path)
        for status in fs.globStatus(self._fs.path(f"{target}/{prefix}*")) or []:
            fs.delete(status.getPath(), False)
        fs.delete(staging_path, True)
        parent = staging_path.getParent()
        if not fs.listStatus(parent):
            fs.delete(parent, False)
        return written

    def _write(self, df: DataFrame, tag: Tag, batch_id: int) -> int:
        """Write ``df`` as output ``tag`` of batch ``batch_id`` (replacing a replay's files); its row count."""
        return self._keep(self._stage(df, tag, batch_id))


__all__ = ["CACHE_COMPRESSED", "OutputCounts", "TaggedStream", "TaggedWriter"]
