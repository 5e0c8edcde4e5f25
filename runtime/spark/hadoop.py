"""Hadoop file-system calls through the driver's JVM (any scheme Spark can write: file, hdfs, s3a, ...)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class HadoopFiles:
    """The few file-system calls the exactly-once writers need, on whatever file system a path is.

    Classic sessions only (it goes through the driver's JVM): the streaming job's ``foreachBatch``
    writer and the backfill driver.

    Example::

        HadoopFiles(spark).delete("s3a://bucket/out/dead_letter/slice=2020-01-01T00-00-00")
    """

    def __init__(self, spark: SparkSession) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def path(self, text: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(text)

    def fs(self, path: Any) -> Any:
        return path.getFileSystem(self._conf)

    def delete(self, text: str) -> None:
        """Remove ``text`` (a file or a directory tree) if it exists."""
        path = self.path(text)
        self.fs(path).delete(path, True)

    def mkdirs(self, text: str) -> None:
        """Create the directory ``text`` (and its parents) unless it exists."""
        path = self.path(text)
        self.fs(path).mkdirs(path)

    def exists(self, text: str) -> bool:
        path = self.path(text)
        return bool(self.fs(path).exists(path))

    def parquet_rows(self, directories: Sequence[str]) -> int:
        """The rows in the parquet data files directly under ``directories`` (missing ones hold none), from the footers.

        Reads each file's footer only (no Spark job, no data pages): the count of what a write committed.
        """
        inputs = self._jvm.org.apache.parquet.hadoop.util.HadoopInputFile
        rows = 0
        for text in directories:
            path = self.path(text)
            fs = self.fs(path)
            if not fs.exists(path):
                continue
            for status in fs.listStatus(path):
                name = status.getPath().getName()
                if not status.isFile() or name.startswith(("_", ".")):  # _SUCCESS, .crc: not data files
                    continue
                with self._parquet_reader(inputs.fromStatus(status, self._conf)) as reader:
                    rows += int(reader.getRecordCount())
        return rows

    def parquet_null_counts(self, files: Sequence[str], columns: Sequence[str]) -> dict[str, int] | None:
        """The NULLs in each of ``columns`` (top-level, named exactly) over the parquet ``files``, from their footers.

        None when the footers cannot tell: a file without one of the columns (Spark reads it as all
        NULL) or a row group whose statistics carry no null count.  Reads footers only (no Spark job).
        """
        inputs = self._jvm.org.apache.parquet.hadoop.util.HadoopInputFile
        nulls = dict.fromkeys(columns, 0)
        for text in files:
            with self._parquet_reader(inputs.fromPath(self.path(text), self._conf)) as reader:
                footer = reader.getFooter()
            schema = footer.getFileMetaData().getSchema()
            if not all(schema.containsField(c) and schema.getType(c).isPrimitive() for c in columns):
                return None
            for block in footer.getBlocks():
                for chunk in block.getColumns():
                    path = chunk.getPath()
                    name = path.toArray()[0] if path.size() == 1 else None  # a nested field's path has several parts
                    if name not in nulls:
                        continue
                    statistics = chunk.getStatistics()
                    if statistics is None or not statistics.isNumNullsSet():
                        return None
                    nulls[name] += int(statistics.getNumNulls())
        return nulls

    @contextmanager
    def _parquet_reader(self, input_file: Any) -> Iterator[Any]:
        """A parquet-mr ``ParquetFileReader`` on ``input_file`` (a ``HadoopInputFile``; opening reads the footer), closed on exit."""
        reader = self._jvm.org.apache.parquet.hadoop.ParquetFileReader.open(input_file)
        try:
            yield reader
        finally:
            reader.close()

    def commit(self, staging: str, target: str, prefix: str) -> None:
        """Replace ``target/prefix*`` by the data files of ``staging`` (named ``prefix<i><ext>``)."""
        target_path = self.path(target)
        fs = self.fs(target_path)
        fs.mkdirs(target_path)
        self._delete_batch(fs, target, prefix)
        staging_path = self.path(staging)
        names = sorted(
            s.getPath().getName() for s in fs.listStatus(staging_path) if s.getPath().getName().startswith("part-")
        )
        for i, name in enumerate(names):
            ext = name[name.index(".") :] if "." in name else ""
            fs.rename(self.path(f"{staging}/{name}"), self.path(f"{target}/{prefix}{i:05d}{ext}"))
        self._delete_staging(fs, staging_path)

    def discard(self, staging: str, target: str, prefix: str) -> None:
        """Drop ``staging`` and ``target/prefix*`` (a batch without rows for ``target``: a replay's files go too)."""
        staging_path = self.path(staging)
        fs = self.fs(staging_path)
        self._delete_batch(fs, target, prefix)
        self._delete_staging(fs, staging_path)

    def _delete_batch(self, fs: Any, target: str, prefix: str) -> None:
        """Remove the files ``target/prefix*`` (a batch's files, from an earlier attempt of it)."""
        for status in fs.globStatus(self.path(f"{target}/{prefix}*")) or []:
            fs.delete(status.getPath(), False)

    @staticmethod
    def _delete_staging(fs: Any, staging_path: Any) -> None:
        """Remove the staging directory, and its parent once no other batch's staging is left in it."""
        fs.delete(staging_path, True)
        parent = staging_path.getParent()
        if not fs.listStatus(parent):
            fs.delete(parent, False)
