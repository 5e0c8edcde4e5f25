"""The job's status file: its state and metrics as one JSON document, replaced atomically as the job goes.

``timeweave-job streaming --config job.json --metrics-file /shared/runs/orders.json`` (or a URI Spark can
write: ``hdfs://...``, ``s3a://...``) keeps this file up to date::

    {"format": "timeweave-status/1", "kind": "streaming", "state": "running", "metrics": {...},
     "error": null, "updated_at": "2026-01-02T00:00:03.120000+00:00"}

``state`` is ``running`` when the job starts and after every streaming micro-batch (``metrics`` then
holds the counts so far), then ``succeeded`` with the job's final metrics (the same dict the
``TIMEWEAVE_METRICS`` line prints) or ``failed`` with ``error``, the job's error in one line.  A
scheduler reads it instead of the driver's stdout, which in cluster deploy mode never reaches it (the
Airflow hook, and the trigger of a deferred Airflow task).

Every write is whole: a local file is written beside its target and renamed over it (``os.replace``);
a Hadoop URI is written to a hidden sibling and renamed (HDFS, ``file:``), or put in one request where
a rename is a copy (object stores: ``s3a``, ``gs``, ``abfs``, ``wasb``), which readers also see whole.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FORMAT = "timeweave-status/1"
STATES = ("running", "succeeded", "failed")
#: Hadoop schemes whose rename is a copy: one ``create`` of the target is the atomic write there.
_OBJECT_STORES = ("s3a", "s3", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs", "oss", "cos", "r2")


def status_document(kind: str, state: str, metrics: Mapping[str, Any] | None = None,
                    error: str | None = None) -> dict[str, Any]:
    """The status file's content for a ``kind`` job in ``state``.

    >>> doc = status_document("backfill", "failed", error="bad column")
    >>> doc["state"], doc["error"], doc["metrics"]
    ('failed', 'bad column', {})
    """
    if state not in STATES:
        raise ValueError(f"argument 'state': unknown state {state!r}; use one of {STATES}")
    return {
        "format": FORMAT, "kind": kind, "state": state, "metrics": dict(metrics or {}), "error": error,
        "updated_at": datetime.now(UTC).isoformat(),
    }


def _scheme(target: str) -> str | None:
    """The URI scheme of ``target``; None for a plain path (a Windows drive letter is not a scheme)."""
    head, sep, _ = target.partition("://")
    return head.lower() if sep and len(head) > 1 else None


def write_status(target: str, document: Mapping[str, Any], spark: Any = None) -> None:
    """Replace the file ``target`` (a path, ``file://`` or a Hadoop URI) with ``document`` as JSON, atomically.

    A Hadoop URI needs ``spark`` (a classic SparkSession: the write goes through the driver's JVM).

    >>> import tempfile, json, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "runs" / "job.json"
    >>> write_status(str(target), status_document("streaming", "running"))
    >>> json.loads(target.read_text())["state"]
    'running'
    """
    text = json.dumps(document, sort_keys=True, default=str)
    scheme = _scheme(target)
    if scheme in (None, "file"):
        path = Path(target[len("file://"):] if scheme == "file" else target)
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            staging.write_text(text, encoding="utf-8")
            os.replace(staging, path)  # atomic on POSIX: a reader sees the old or the new file, whole
        finally:
            staging.unlink(missing_ok=True)
        return
    if spark is None:
        raise ValueError(f"metrics file {target!r}: a {scheme}:// URI is written through Spark; no session is running")
    _write_hadoop(spark, target, text, atomic_put=scheme in _OBJECT_STORES)


def _write_hadoop(spark: Any, target: str, text: str, *, atomic_put: bool) -> None:
    from timeweave.spark.hadoop import HadoopFiles

    files = HadoopFiles(spark)
    path = files.path(target)
    fs = files.fs(path)
    fs.mkdirs(path.getParent())
    data = bytearray(text.encode("utf-8"))
    if atomic_put:  # object stores publish an object when its upload completes: readers never see half
        with _closing(fs.create(path, True)) as out:
            out.write(data)
        return
    staging = files.path(f"{path.getParent().toString()}/.{path.getName()}.{uuid.uuid4().hex}.tmp")
    with _closing(fs.create(staging, True)) as out:
        out.write(data)
    fs.delete(path, False)  # HDFS's rename does not replace; readers retry a missing file
    if not fs.rename(staging, path):
        fs.delete(staging, False)
        raise OSError(f"metrics file {target!r}: cannot rename {staging.toString()} over it")


class _closing:
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __enter__(self) -> Any:
        return self._stream

    def __exit__(self, *exc: Any) -> None:
        self._stream.close()


class StatusWriter:
    """Writes a job's status file as it goes: :meth:`running` (per batch), then :meth:`succeeded` or :meth:`failed`.

    A failure to write a *running* update is logged and the job goes on (progress is advisory); a final
    state that cannot be written raises, since the scheduler would otherwise wait for it.

    >>> import tempfile, json, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "job.json"
    >>> writer = StatusWriter(str(target), "backfill")
    >>> writer.running({"slices": 0}); writer.succeeded({"rows_out": 3})
    >>> json.loads(target.read_text())["metrics"]
    {'rows_out': 3}
    """

    def __init__(self, target: str, kind: str, spark: Any = None) -> None:
        self.target = target
        self.kind = kind
        #: A SparkSession, or a function returning one (called only for a Hadoop URI: a local file needs no JVM).
        self.spark = spark

    def _write(self, document: Mapping[str, Any]) -> None:
        spark = self.spark
        if callable(spark) and _scheme(self.target) not in (None, "file"):
            spark = self.spark = spark()
        write_status(self.target, document, None if callable(spark) else spark)

    def running(self, metrics: Mapping[str, Any] | None = None, *_: Any) -> None:
        try:
            self._write(status_document(self.kind, "running", metrics))
        except Exception as error:  # a progress update must not fail the job
            import logging

            logging.getLogger("timeweave.jobs").warning("cannot update the metrics file %s: %s", self.target, error)

    def succeeded(self, metrics: Mapping[str, Any]) -> None:
        self._write(status_document(self.kind, "succeeded", metrics))

    def failed(self, error: str, metrics: Mapping[str, Any] | None = None) -> None:
        self._write(status_document(self.kind, "failed", metrics, error=error))


__all__ = ["FORMAT", "STATES", "StatusWriter", "status_document", "write_status"]
