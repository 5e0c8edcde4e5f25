"""Reading a job's status file (written by ``timeweave-job --metrics-file``, :mod:`timeweave.jobs.metrics_file`).

Light on purpose (no Spark, no hook): the triggerer imports it to watch a deferred job.  A local path or
``file://`` URI is read directly; any other URI through Airflow's ``ObjectStoragePath`` (fsspec), with
Hadoop's scheme names mapped to fsspec's (``s3a://`` -> ``s3://``, ``abfss://`` -> ``abfs://``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Hadoop scheme -> fsspec scheme, where they differ.
_FSSPEC_SCHEMES = {"s3a": "s3", "s3n": "s3", "abfss": "abfs", "wasbs": "abfs", "wasb": "abfs"}
#: The final states of a job's status file.
FINAL_STATES = ("succeeded", "failed")


def _local_path(target: str) -> Path | None:
    head, sep, rest = target.partition("://")
    if not sep or len(head) <= 1:
        return Path(target)
    return Path(rest) if head.lower() == "file" else None


def read_status(target: str) -> dict[str, Any] | None:
    """The status document at ``target``; None while there is none yet (the job has not started or written).

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "job.json"
    >>> read_status(str(target)) is None
    True
    >>> _ = target.write_text('{"state": "succeeded", "metrics": {"rows_out": 2}}')
    >>> read_status(str(target))["metrics"]
    {'rows_out': 2}
    """
    local = _local_path(target)
    try:
        if local is not None:
            text = local.read_text(encoding="utf-8")
        else:
            from airflow.sdk import ObjectStoragePath

            scheme, _, rest = target.partition("://")
            text = ObjectStoragePath(f"{_FSSPEC_SCHEMES.get(scheme.lower(), scheme)}://{rest}").read_text()
    except FileNotFoundError:
        return None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:  # writes are whole; a broken file is someone else's
        raise ValueError(f"metrics file {target!r} is not JSON: {exc}") from exc
    if not isinstance(document, dict) or "state" not in document:
        raise ValueError(f"metrics file {target!r} holds no timeweave status (no 'state' key)")
    return document


def clear_status(target: str) -> bool:
    """Remove a status file left by an earlier run at ``target`` (a retry reuses its path), so that only the
    new job's writes are read.  True if one was removed.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "job.json"
    >>> _ = target.write_text('{"state": "succeeded"}')
    >>> clear_status(str(target)), clear_status(str(target))
    (True, False)
    """
    local = _local_path(target)
    if local is not None:
        try:
            local.unlink()
        except FileNotFoundError:
            return False
        return True
    from airflow.sdk import ObjectStoragePath

    scheme, _, rest = target.partition("://")
    path = ObjectStoragePath(f"{_FSSPEC_SCHEMES.get(scheme.lower(), scheme)}://{rest}")
    if not path.exists():
        return False
    path.unlink()
    return True


def dataset_uri(path: str) -> tuple[str, str]:
    """An OpenLineage dataset ``(namespace, name)`` for a job path: ``file`` and the absolute path for a local
    path, ``scheme://authority`` and the path for a URI (OpenLineage's naming conventions).

    >>> dataset_uri("s3a://lake/orders/enriched")
    ('s3://lake', 'orders/enriched')
    >>> dataset_uri("/data/out")
    ('file', '/data/out')
    """
    local = _local_path(path)
    if local is not None:
        return "file", str(local.expanduser().absolute())
    scheme, _, rest = path.partition("://")
    scheme = _FSSPEC_SCHEMES.get(scheme.lower(), scheme.lower())
    authority, _, name = rest.partition("/")
    name = name.rstrip("/")
    # Object stores name keys without a leading slash; file systems (hdfs, ...) name absolute paths.
    return f"{scheme}://{authority}", name if scheme in ("s3", "gs", "abfs") else f"/{name}"


__all__ = ["FINAL_STATES", "clear_status", "dataset_uri", "read_status"]
