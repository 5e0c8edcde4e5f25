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

**A slice target.**  A backfill's unit of exactly-once is a slice, not a micro-batch: :class:`SliceWriter`
writes a slice's outputs (main, late, dead letter, and the operator state carried across its edge) into a
:class:`SliceTarget`, one directory per output and slice, ``<root>/slice=<label>/``, each replaced whole by a
write: a re-run (``only=[k]``) replaces exactly slice k's directories and a run killed mid-slice leaves that
slice to be re-run whole.  Several slices written by one Spark job (partitioned by the slice column) replace
exactly those slices' directories, also those the job gives no row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pyspark.sql import Column, DataFrame, SparkSession

from timeweave.core.operator import Tag
from timeweave.spark.hadoop import HadoopFiles
from timeweave.spark.host.stream import BatchOutputs

#: Spark SQL conf: compress the columns of cached DataFrames (a stream may turn it off, see ``compress_cache``).
CACHE_COMPRESSED = "spark.sql.inMemoryColumnarStorage.compressed"
#: A slice target's output of carried operator state (no :class:`~timeweave.core.operator.Tag`: not an output row).
STATE_OUTPUT = "state"
#: The partition column of a slice target's directories (``<root>/slice=<label>``), unless the target names another.
SLICE_COLUMN = "slice"


def _root(paths: Mapping[str, str], output: str, what: str) -> str:
    """The path of ``output`` (a tag's value, or :data:`STATE_OUTPUT`) in ``paths``, or a KeyError naming both."""
    try:
        return paths[output]
    except KeyError:
        raise KeyError(f"the {what} has a {output} output but the job names no path for it "
                       f"(outputs with paths: {sorted(paths)})") from None


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


#: Java exceptions Spark takes for a stop's interrupt of the query thread, not for a failure.
_INTERRUPTS = ("java.lang.InterruptedException", "java.nio.channels.ClosedByInterruptException")
#: The longest original message a :class:`MicroBatchFailed` repeats.
_MESSAGE_CHARS = 600


def _java_interrupt(error: BaseException) -> str | None:
    """The interrupt exception's class name in ``error``'s Java cause chain (a ``Py4JJavaError``), or None."""
    java = getattr(error, "java_exception", None)
    try:
        for _ in range(32):  # a cause chain is short; a cycle must not hang the batch
            if java is None:
                return None
            name = java.getClass().getName()
            if name in _INTERRUPTS:
                return name
            java = java.getCause()
    except Exception:  # the gateway is going away: not an interrupt we can name
        return None
    return None


class MicroBatchFailed(RuntimeError):
    """The error a failed micro-batch's ``foreachBatch`` call raises to Spark: short, naming the batch and the
    original error (kept whole in :attr:`TaggedWriter.failure`, which the job raises).

    Why short: Spark classifies a failed Python ``foreachBatch`` call by matching its whole message (the Python
    traceback, with a ``Py4JJavaError``'s Java stack trace) against a pattern whose matcher recurses once per
    character (``StreamExecution.PROXY_ERROR``); beyond ~1,500 characters the query thread dies with a
    ``StackOverflowError``, the query then ends as if stopped and the failure is lost.  A JVM interrupt (a stop
    during the batch) keeps the one line Spark's pattern reads, so Spark still ends the query as stopped.
    """

    def __init__(self, batch_id: int, error: BaseException) -> None:
        text = " ".join(str(error).split())
        if len(text) > _MESSAGE_CHARS:
            text = text[:_MESSAGE_CHARS] + "..."
        message = f"timeweave micro-batch {batch_id} failed: {type(error).__name__}: {text}"
        interrupt = _java_interrupt(error)
        if interrupt is not None:
            message += f"\npy4j.protocol.Py4JJavaError: An error occurred while calling the JVM: {interrupt}"
        super().__init__(message)
        self.batch_id = batch_id


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
        #: The error of the micro-batch that failed (the query fails with a :class:`MicroBatchFailed` naming it).
        self.failure: Exception | None = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        try:
            self._write_batch(batch, batch_id)
        except Exception as error:
            self.failure = error
            raise MicroBatchFailed(batch_id, error) from None

    def _write_batch(self, batch: DataFrame, batch_id: int) -> None:
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
        return _root(self._paths, tag.value, "stream")

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
        self._fs.discard(staging, target, prefix)
        return written

    def _write(self, df: DataFrame, tag: Tag, batch_id: int) -> int:
        """Write ``df`` as output ``tag`` of batch ``batch_id`` (replacing a replay's files); its row count."""
        return self._keep(self._stage(df, tag, batch_id))


@dataclass(frozen=True)
class SliceTarget:
    """Where a backfill's slices go: per output the root directory, slice ``label``'s files of output ``o`` being
    the directory ``<roots[o]>/<column>=<label>`` (``column``: ``columns.get(o, "slice")``).

    Outputs are named by tag (``main``, ``late``, ``dead_letter``) and :data:`STATE_OUTPUT` (the state carried
    across a slice's end edge).  The label ``none`` is the rows of no slice (a NULL event time).

    >>> target = SliceTarget({"main": "out", "state": "out/_state"})
    >>> target.directory("state", "2020-01-01T00-00-00")
    'out/_state/slice=2020-01-01T00-00-00'
    >>> SliceTarget({"main": "out", "state": "st"}, {"state": "edge"}).directory("state", "x")
    'st/edge=x'
    >>> target.directory("late", "x")
    Traceback (most recent call last):
    ...
    KeyError: "the backfill has a late output but the job names no path for it (outputs with paths: ['main', 'state'])"
    """

    roots: Mapping[str, str]
    columns: Mapping[str, str] = field(default_factory=dict)

    def root(self, output: str) -> str:
        """The directory holding every slice's directory of ``output``."""
        return _root(self.roots, output, "backfill")

    def column(self, output: str) -> str:
        """The partition column naming ``output``'s slice directories (a grouped write partitions by it)."""
        return self.columns.get(output, SLICE_COLUMN)

    def directory(self, output: str, label: str) -> str:
        """Slice ``label``'s directory of ``output``."""
        return f"{self.root(output)}/{self.column(output)}={label}"


class SliceWriter:
    """The one writer's slice target: a backfill slice's outputs, each directory replaced whole (exactly once per slice).

    Every write overwrites the directories it stands for and nothing else, so re-running slice k replaces exactly
    slice k's files, and a run killed mid-slice is repaired by re-running that slice.  Classic sessions only
    (the file-system calls go through the driver's JVM, :class:`~timeweave.spark.hadoop.HadoopFiles`).

    Example::

        writer = SliceWriter(spark, SliceTarget({"main": "out", "dead_letter": "dead", "state": "out/_state"}))
        writer.write(rows, "main", "2020-01-01T00-00-00")        # out/slice=2020-01-01T00-00-00/
        writer.write_slices(grouped, "main", ["2020-01-01T00-00-00", "2020-01-01T06-00-00"])  # by its `slice` column
    """

    def __init__(self, spark: SparkSession, target: SliceTarget) -> None:
        self.target = target
        self._files = HadoopFiles(spark)

    def write(self, df: DataFrame, output: str, label: str) -> None:
        """Replace slice ``label``'s directory of ``output`` by ``df``'s rows (an empty ``df`` leaves an empty file)."""
        df.write.mode("overwrite").parquet(self.target.directory(output, label))

    def write_slices(self, df: DataFrame, output: str, labels: Iterable[str], *, keep_empty: bool = False) -> None:
        """Replace the directories of the slices ``labels`` of ``output`` by ``df``'s rows, in one Spark job.

        ``df`` has the target's partition column (``target.column(output)``) holding each row's slice label,
        one of ``labels``.  A slice of ``labels`` without rows loses its earlier files (no directory is left,
        or an empty one with ``keep_empty``: a slice edge that exists without state).  Each job stages its
        files apart (dynamic partition overwrite), so jobs over different slices of one root may run at once.
        """
        labels = list(labels)
        self.clear(output, labels)
        df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy(
            self.target.column(output)).parquet(self.target.root(output))
        if keep_empty:
            for label in labels:
                self._files.mkdirs(self.target.directory(output, label))

    def clear(self, output: str, labels: Iterable[str]) -> None:
        """Remove the directories of the slices ``labels`` of ``output`` (a slice re-run without rows there)."""
        for label in labels:
            self._files.delete(self.target.directory(output, label))

    def exists(self, output: str, label: str) -> bool:
        """Whether slice ``label``'s directory of ``output`` exists (written, perhaps empty)."""
        return self._files.exists(self.target.directory(output, label))

    def rows(self, output: str, labels: Iterable[str]) -> int:
        """The rows written in the slices ``labels`` of ``output``, from the parquet footers (no Spark job)."""
        return self._files.parquet_rows([self.target.directory(output, label) for label in labels])


__all__ = [
    "CACHE_COMPRESSED",
    "SLICE_COLUMN",
    "STATE_OUTPUT",
    "MicroBatchFailed",
    "OutputCounts",
    "SliceTarget",
    "SliceWriter",
    "TaggedStream",
    "TaggedWriter",
]
