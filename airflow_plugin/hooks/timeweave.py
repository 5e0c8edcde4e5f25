"""The timeweave hook: launches a streaming, backfill or SQL script job and returns its metrics.

Two launchers, one result shape:

* ``local`` runs the job in this process through :func:`timeweave.jobs.run` on the embedded (or an
  already active) SparkSession.  Good for a laptop, CI and the example DAG.
* ``spark-submit`` is the Apache Spark provider's ``SparkSubmitHook`` (this hook subclasses it): the
  connection (``host``/``port`` = master; extras ``deploy-mode``, ``spark-binary``, ``queue``,
  ``namespace``, ``principal``, ``keytab``), every one of its options (``jars``, ``packages``,
  ``files``, ``archives``, executor and driver resources, ``keytab``/``principal``, ``proxy_user``,
  ``properties_file``, ...), its process handling, driver tracking in standalone cluster mode and its
  ``on_kill`` (standalone driver kill, ``yarn application -kill``, Kubernetes driver pod delete).  The
  application is the job CLI; its arguments an argument list, never a shell string.  The metrics come
  from the status file the job writes (``--metrics-file``, :mod:`timeweave.jobs.metrics_file`), so cluster
  deploy mode works; in client mode without one, from the ``TIMEWEAVE_METRICS {json}`` line of stdout.

Both accept the job config of :mod:`timeweave.jobs.config` as a dict, a JSON string or a path to a JSON
file (a ``sql`` job: a Flink SQL script, :mod:`timeweave.jobs.sql_script`, as text or a ``.sql`` path), and
validate it before anything starts.  ``kill()`` stops a running job from another thread or
a signal handler (the operator's ``on_kill``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk.exceptions import AirflowException

from timeweave.airflow.utils.metrics_file import clear_status, read_status
from timeweave.jobs import KINDS as JOB_KINDS
from timeweave.jobs.cli import METRICS_PREFIX as _CLI_METRICS_PREFIX
from timeweave.jobs.config import load_job_config as load_runtime_job_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The prefix of the one line the job CLI prints with its metrics as JSON (the CLI's own constant).
METRICS_PREFIX = _CLI_METRICS_PREFIX.strip()
# JOB_KINDS: the job kinds ``timeweave.jobs.run`` and the job CLI understand (imported, one list).
#: The launchers this hook knows.
LAUNCHERS = ("local", "spark-submit")
#: spark-submit binaries a connection's ``spark-binary`` extra may name (as in the Apache Spark provider).
ALLOWED_SPARK_BINARIES = ("spark-submit", "spark2-submit", "spark3-submit")
#: Deploy modes spark-submit knows.
DEPLOY_MODES = ("client", "cluster")
#: Spark properties that make spark-submit return once a cluster-mode application is accepted (a deferred
#: task watches the status file instead of holding a worker while the application runs).
_NO_WAIT_CONF = {"spark.yarn.submit.waitAppCompletion": "false", "spark.kubernetes.submission.waitAppCompletion": "false"}
#: Job arguments per kind (those of ``timeweave.jobs.run`` / the job CLI); anything else is a mistake the
#: user should hear about before a job starts.
_JOB_ARGUMENTS: Mapping[str, frozenset[str]] = {
    "streaming": frozenset({"flush", "heartbeat", "timeout_seconds", "until_idle"}),
    "backfill": frozenset({"start", "end", "slices", "only", "slices_per_job"}),
    "sql": frozenset({"mode", "checkpoint", "flush", "processing_time", "timeout_seconds"}),
}
#: The longest SQL script spark-submit is given inline (Linux refuses a single argument over 128 KiB).
_MAX_INLINE_SCRIPT = 100_000
#: How long ``kill()`` waits for a spark-submit process to exit after SIGTERM before SIGKILL.
_KILL_GRACE_SECONDS = 15.0


class TimeweaveJobError(AirflowException):
    """A timeweave job failed, was killed, or ended without reporting its metrics."""


def load_job_config(config: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    """The job config as a plain JSON-able dict, validated by :func:`timeweave.jobs.config.load_job_config`.

    ``config`` is a dict, a JSON string (starting with ``{``) or a path to a JSON file.

    >>> cfg = load_job_config('''{"left": {"path": "o", "format": "csv", "schema": "k STRING, t TIMESTAMP"},
    ...   "right": {"path": "r", "format": "csv", "schema": "k STRING, t TIMESTAMP, v INT"},
    ...   "versioned": {"key": ["k"], "time": "t"}, "join": {"left_time": "t", "left_key": ["k"]},
    ...   "output": {"path": "out"}}''')
    >>> cfg["output"]
    {'path': 'out'}
    """
    if isinstance(config, os.PathLike):
        config = os.fspath(config)
    # Either job kind (temporal join, or MATCH_RECOGNIZE with a "match_recognize" section).
    return dict(load_runtime_job_config(config).raw)


def load_sql_job(script: str | os.PathLike[str]) -> dict[str, Any]:
    """A SQL script job, ``{"script": text}``, checked (statements, sinks) before anything starts.

    ``script`` is the script's text, or a path to a ``.sql`` file.

    >>> load_sql_job("CREATE TABLE s (a INT) WITH ('connector' = 'filesystem', 'path' = '/o', "
    ...              "'format' = 'parquet'); INSERT INTO s SELECT 1")["script"][:15]
    'CREATE TABLE s '
    """
    from timeweave.jobs.sql_script import check_script

    text = os.fspath(script)
    if text.strip().lower().endswith(".sql") and "\n" not in text and os.path.isfile(text.strip()):
        text = Path(text.strip()).read_text(encoding="utf-8")
    check_script(text)
    return {"script": text}


def _load_job(kind: str, config: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    if kind == "sql":
        if isinstance(config, Mapping):
            if "script" not in config:
                raise ValueError(f"argument 'config': a sql job is {{'script': text}}, got the keys {sorted(config)}")
            return load_sql_job(config["script"])
        return load_sql_job(config)
    return load_job_config(config)


def parse_metrics(lines: Iterable[str]) -> dict[str, Any]:
    """The metrics dict from the last ``TIMEWEAVE_METRICS {json}`` line among ``lines``.

    >>> parse_metrics(["INFO starting", 'TIMEWEAVE_METRICS {"rows_out": 3, "late": 0}'])
    {'rows_out': 3, 'late': 0}
    """
    found: str | None = None
    for line in lines:
        text = line.strip()
        if text.startswith(METRICS_PREFIX):
            found = text
    if found is None:
        raise TimeweaveJobError(f"the job printed no '{METRICS_PREFIX} {{json}}' line")
    payload = found[len(METRICS_PREFIX) :].strip()
    try:
        metrics = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise TimeweaveJobError(f"cannot read the metrics line {found!r}: {exc}") from exc
    if not isinstance(metrics, dict):
        raise TimeweaveJobError(f"the metrics line holds {type(metrics).__name__}, expected a JSON object")
    return metrics


def _jsonable(value: Any) -> Any:
    """Metrics as plain JSON values, so they survive XCom serialization unchanged."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _check_job_arguments(kind: str, job_args: Mapping[str, Any]) -> None:
    if kind not in JOB_KINDS:
        raise ValueError(f"argument 'kind': unknown job kind {kind!r}; use one of {JOB_KINDS}")
    unknown = sorted(set(job_args) - _JOB_ARGUMENTS[kind])
    if unknown:
        raise ValueError(
            f"argument {unknown[0]!r}: a {kind} job does not take it; it takes {sorted(_JOB_ARGUMENTS[kind])}"
        )
    if kind == "backfill":
        for name in ("start", "end", "slices"):
            if job_args.get(name) is None:
                raise ValueError(f"argument {name!r}: a backfill job needs it")
        if int(job_args["slices"]) < 1:
            raise ValueError(f"argument 'slices': must be >= 1, got {job_args['slices']!r}")
        if job_args.get("slices_per_job") is not None and int(job_args["slices_per_job"]) < 1:
            raise ValueError(f"argument 'slices_per_job': must be >= 1, got {job_args['slices_per_job']!r}")
    elif job_args.get("flush") and job_args.get("heartbeat") is not None:
        raise ValueError("argument 'heartbeat': flush already moves the watermark past all input; set one of them")


def utc_naive(value: datetime | str, argument: str) -> datetime:
    """A job time: naive UTC (the session time zone).  Aware values are converted, not relabelled.

    >>> utc_naive("2026-01-01 02:00:00+02:00", "start")
    datetime.datetime(2026, 1, 1, 0, 0)
    """
    if not isinstance(value, datetime):
        try:
            value = datetime.fromisoformat(str(value).strip())
        except ValueError as exc:
            raise ValueError(f"argument {argument!r}: cannot read {value!r} as an ISO timestamp") from exc
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value


def _bound(value: Any, argument: str) -> Any:
    """A backfill bound as the launchers pass it on: a timestamp (a datetime, or text that reads as one) as a naive
    UTC datetime; a date, a number, or text of another form (``"1706659200000"``) unchanged, for the job to read in
    its time column's domain (:func:`timeweave.jobs.backfill.backfill_bounds`).

    >>> _bound("2026-01-01T02:00:00+02:00", "start"), _bound(1706659200000, "start"), _bound(" 12 ", "end")
    (datetime.datetime(2026, 1, 1, 0, 0), 1706659200000, '12')
    """
    if isinstance(value, datetime):
        return utc_naive(value, argument)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("+-").replace(".", "", 1).isdigit():  # a number ("20240131" would read as an ISO date)
            return text
        try:
            return utc_naive(text, argument)
        except ValueError:
            return text
    return value


def _typed_bounds(kind: str, job: Mapping[str, Any], job_args: Mapping[str, Any]) -> dict[str, Any]:
    """A backfill's ``job_args`` with ``start`` / ``end`` read in the job's time domain (timestamps, dates, integers
    or numbers: :func:`timeweave.jobs.backfill.backfill_bounds`), so a bad bound fails before anything starts."""
    if kind != "backfill":
        return dict(job_args)
    from timeweave.jobs.backfill import backfill_bounds

    start, end = backfill_bounds(job, job_args["start"], job_args["end"])
    return {**job_args, "start": start, "end": end}


def _job_times(kind: str, job_args: Mapping[str, Any]) -> dict[str, Any]:
    """``job_args`` with times as naive UTC datetimes (a backfill's bounds of another domain as given: :func:`_bound`)
    and counts as ints, the form every launcher passes on."""
    args = {name: value for name, value in job_args.items() if value is not None}
    for name in ("start", "end"):
        if name in args:
            args[name] = _bound(args[name], name)
    if "heartbeat" in args:
        args["heartbeat"] = utc_naive(args["heartbeat"], "heartbeat")
    for name in ("slices", "slices_per_job"):
        if name in args:
            args[name] = int(args[name])
    if "only" in args:
        args["only"] = [int(index) for index in args["only"]]
    return args


def _bound_text(value: Any) -> str:
    """A bound as the job CLI's ``--start`` / ``--end`` text (:func:`timeweave.core.time.bound_text`; other text as is)."""
    from timeweave.core.time import bound_text, edge_domain

    return bound_text(value) if edge_domain(value) is not None else str(value)


def job_cli_arguments(kind: str, config_path: str, job_args: Mapping[str, Any]) -> list[str]:
    """The job CLI's arguments (after the application) for ``kind`` and ``job_args``.

    >>> job_cli_arguments("backfill", "job.json", {"start": "2026-01-01T00:00:00+00:00",
    ...                   "end": "2026-01-02T00:00:00+00:00", "slices": 3})
    ['backfill', '--config', 'job.json', '--start', '2026-01-01T00:00:00', '--end', '2026-01-02T00:00:00', '--slices', '3']
    >>> job_cli_arguments("backfill", "lsn_job.json", {"start": 0, "end": 3000000, "slices": 3})[3:7]
    ['--start', '0', '--end', '3000000']
    >>> job_cli_arguments("streaming", "job.json", {"heartbeat": "2026-01-02", "until_idle": False})
    ['streaming', '--config', 'job.json', '--heartbeat', '2026-01-02T00:00:00', '--no-until-idle']
    """
    _check_job_arguments(kind, job_args)
    if kind == "sql":  # the script itself: a driver in cluster mode cannot read a file of this machine
        if len(config_path) > _MAX_INLINE_SCRIPT:
            raise ValueError(f"argument 'sql': the script has {len(config_path)} characters, more than spark-submit "
                             f"takes inline ({_MAX_INLINE_SCRIPT}); split it into several tasks")
        args = ["sql", "--script", config_path]
        if job_args.get("mode") not in (None, "batch"):
            args += ["--mode", str(job_args["mode"])]
        if job_args.get("checkpoint"):
            args += ["--checkpoint", str(job_args["checkpoint"])]
        if job_args.get("flush"):
            args.append("--flush")
        if job_args.get("processing_time"):
            args += ["--processing-time", str(job_args["processing_time"])]
        if job_args.get("timeout_seconds") is not None:
            args += ["--timeout", str(float(job_args["timeout_seconds"]))]
        return args
    job_args = _job_times(kind, job_args)
    args = [kind, "--config", config_path]
    if kind == "backfill":
        args += ["--start", _bound_text(job_args["start"]), "--end", _bound_text(job_args["end"])]
        args += ["--slices", str(job_args["slices"])]
        if job_args.get("only"):
            args += ["--only", *(str(index) for index in job_args["only"])]
        if "slices_per_job" in job_args:
            args += ["--slices-per-job", str(job_args["slices_per_job"])]
        return args
    if job_args.get("flush"):
        args.append("--flush")
    if "heartbeat" in job_args:
        args += ["--heartbeat", job_args["heartbeat"].isoformat()]
    if "timeout_seconds" in job_args:
        args += ["--timeout", str(float(job_args["timeout_seconds"]))]
    if job_args.get("until_idle") is False:
        args.append("--no-until-idle")
    return args


def _resolve_binary(name: str) -> str:
    """``name`` as found on PATH; else the one pip installed with pyspark next to this interpreter.

    A task started as ``.venv/bin/python ...`` without an activated virtualenv has no ``.venv/bin`` on
    PATH, yet pyspark's ``spark-submit`` is there.
    """
    if shutil.which(name):
        return name
    sibling = Path(sys.executable).parent / name
    return str(sibling) if sibling.is_file() and os.access(sibling, os.X_OK) else name


def default_application() -> str:
    """The Python file spark-submit runs: a launcher alone in its directory (see ``spark_app/``)."""
    spec = find_spec("timeweave.airflow.spark_app.timeweave_job")
    if spec is None or spec.origin is None:  # pragma: no cover - the file ships with the package
        raise TimeweaveJobError("cannot locate airflow_plugin/spark_app/timeweave_job.py")
    return spec.origin



@dataclass
class _InProcessRun:
    """What ``kill()`` needs to stop an in-process job: the session, its job tag, queries it started."""

    spark: SparkSession
    tag: str
    queries_before: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class DetachedJob:
    """A job started without waiting for it (a deferred task): where its status file is and what runs it.

    ``pid`` and ``host`` name the local spark-submit process in client mode (a trigger on the same host
    can tell a driver that died without writing a final state); both are None in cluster mode.
    """

    kind: str
    metrics_file: str
    pid: int | None = None
    host: str | None = None
    log_file: str | None = None


def _comma_list(value: str | Sequence[str] | None) -> str | None:
    """spark-submit's comma-separated list from a list or a string (None when empty)."""
    if value is None or isinstance(value, str):
        return value or None
    return ",".join(str(item) for item in value) or None


class TimeweaveHook(SparkSubmitHook):
    """Launch timeweave jobs in-process or through ``spark-submit``, returning their metrics dict.

    :param conn_id: an Airflow connection of type ``timeweave`` (or ``spark``: the same fields) for
        spark-submit: ``host``/``port`` = master; extras ``deploy-mode`` (``client`` or ``cluster``),
        ``spark-binary``, ``queue``, ``namespace``, ``principal``, ``keytab`` (as the Spark provider reads
        them) and ``metrics-dir`` (a directory or URI, reachable by driver and worker, for the jobs'
        status files).  None: the master is ``spark_conf["spark.master"]`` or ``local[*]``.
    :param launcher: ``"local"`` (in-process, via ``timeweave.jobs.run``) or ``"spark-submit"``.
    :param spark_conf: Spark properties: ``--conf`` pairs for spark-submit; builder options locally.
    :param application: the Python file spark-submit runs; defaults to the packaged launcher (in
        Kubernetes cluster mode, a ``local://`` path inside the image).
    :param py_files: ``--py-files`` (a list or a comma-separated string).
    :param env: environment variables (``env_vars`` of ``SparkSubmitHook``: the spark-submit process in
        client mode, the application master / driver on YARN / Kubernetes).
    :param name: the Spark application name.
    :param metrics_file: where the job writes its status file (a path or URI both the driver and this
        worker reach).  Default: a temporary file here in client mode, ``<metrics-dir>/<name>-<id>.json``
        with the connection's ``metrics-dir``; cluster deploy mode needs one of the two.
    :param spark_submit_kwargs: any other ``SparkSubmitHook`` argument, passed on unchanged: ``files``,
        ``archives``, ``jars``, ``packages``, ``exclude_packages``, ``repositories``, ``driver_class_path``,
        ``total_executor_cores``, ``executor_cores``, ``executor_memory``, ``driver_memory``,
        ``num_executors``, ``keytab``, ``principal``, ``proxy_user``, ``properties_file``, ``yarn_queue``,
        ``deploy_mode``, ``spark_binary``, ``status_poll_interval``, ``verbose``, ``use_krb5ccache``.

    Example::

        hook = TimeweaveHook(conn_id="spark_cluster", launcher="spark-submit", packages="org.apache.hadoop:hadoop-aws:3.4.1",
                             executor_memory="4g", deploy_mode="cluster", metrics_file="s3a://runs/orders.json")
        metrics = hook.run("backfill", "jobs/orders.json", start=start, end=end, slices=4)
        metrics["rows_out"]
    """

    conn_name_attr = "conn_id"
    default_conn_name = "timeweave_default"
    conn_type = "timeweave"
    hook_name = "Timeweave (Spark)"

    def __init__(
        self,
        conn_id: str | None = None,
        *,
        launcher: str = "local",
        spark_conf: Mapping[str, Any] | None = None,
        application: str | None = None,
        py_files: str | Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        name: str = "timeweave",
        metrics_file: str | None = None,
        **spark_submit_kwargs: Any,
    ) -> None:
        if launcher not in LAUNCHERS:
            raise ValueError(f"argument 'launcher': unknown launcher {launcher!r}; use one of {LAUNCHERS}")
        for reserved in ("conf", "application_args", "java_class", "env_vars", "conn_id"):
            if reserved in spark_submit_kwargs:
                raise ValueError(f"argument {reserved!r}: set by the timeweave hook; use spark_conf / env / the job config")
        deploy_mode = spark_submit_kwargs.get("deploy_mode")
        if deploy_mode is not None and deploy_mode not in DEPLOY_MODES:
            raise ValueError(f"argument 'deploy_mode': {deploy_mode!r}; use one of {DEPLOY_MODES}")
        self.conn_id = conn_id
        self.launcher = launcher
        self.spark_conf = {str(k): str(v) for k, v in (spark_conf or {}).items()}
        self.application = application
        self.env = dict(env or {})
        self.name = name
        self.metrics_file = metrics_file
        for listed in ("files", "archives", "jars", "packages", "exclude_packages", "repositories"):
            if listed in spark_submit_kwargs:
                spark_submit_kwargs[listed] = _comma_list(spark_submit_kwargs[listed])
        super().__init__(
            # --master is the one source of the master: never also a --conf.
            conf={key: value for key, value in sorted(self.spark_conf.items()) if key != "spark.master"},
            conn_id=conn_id,  # type: ignore[arg-type]  # None: no connection (see _resolve_connection)
            py_files=_comma_list(py_files),
            env_vars=self.env or None,
            name=name,
            **spark_submit_kwargs,
        )
        # Set while a job runs; kill() reads them from another thread or a signal handler.
        self._in_process: _InProcessRun | None = None
        self._killed = threading.Event()
        self._tail: deque[str] = deque(maxlen=40)
        self._detached = False  # start_job: spark-submit returns once the application is accepted
        self._metrics_lines: list[str] = []

    # ------------------------------------------------------------------ connection

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """The Spark connection's form, with ``extra`` shown: it carries ``metrics-dir`` (and the Spark extras)."""
        behaviour = super().get_ui_field_behaviour()
        return {
            **behaviour,
            "hidden_fields": [name for name in behaviour["hidden_fields"] if name != "extra"],
            "relabeling": {"host": "Spark master (local[*], yarn, spark://..., k8s://...)"},
            "placeholders": {
                **behaviour.get("placeholders", {}),
                "extra": json.dumps({"deploy-mode": "cluster", "metrics-dir": "s3a://bucket/timeweave/runs",
                                     "queue": "etl"}),
            },
        }


    def _resolve_connection(self) -> dict[str, Any]:
        """The Spark provider's connection fields; without a connection, the master of ``spark_conf``.

        A named connection that does not exist is an error here (the provider would fall back to YARN).
        """
        if self._conn_id is None:
            return {
                "master": self.spark_conf.get("spark.master", "local[*]"),
                "queue": self._yarn_queue,
                "deploy_mode": self._deploy_mode,
                "spark_binary": self.spark_binary or "spark-submit",
                "namespace": self._conf.get("spark.kubernetes.namespace"),
                "principal": self._principal,
                "keytab": self._keytab,
                "metrics_dir": None,
            }
        conn = self.get_connection(self._conn_id)  # raises for an unknown connection id
        if not conn.host:
            raise ValueError(f"argument 'conn_id': connection {self._conn_id!r} has no host (the Spark master)")
        try:
            data = super()._resolve_connection()
        except RuntimeError as exc:  # the provider's spark-binary / spark-home checks
            raise ValueError(f"connection {self._conn_id!r}: {exc}") from exc
        if data.get("deploy_mode") not in (None, *DEPLOY_MODES):
            raise ValueError(
                f"connection {self._conn_id!r}: extra 'deploy-mode' is {data['deploy_mode']!r}; use one of {DEPLOY_MODES}"
            )
        data["metrics_dir"] = conn.extra_dejson.get("metrics-dir")
        return data

    @property
    def master(self) -> str:
        """The Spark master spark-submit is given."""
        return str(self._connection["master"])

    @property
    def cluster_mode(self) -> bool:
        """Whether the driver runs on the cluster (``deploy_mode`` / the connection's ``deploy-mode``)."""
        return self._connection.get("deploy_mode") == "cluster"

    def get_conn(self) -> SparkSession:
        """The SparkSession in-process jobs run on: the active one, or a new one built from ``spark_conf``."""
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            # Reusing the session keeps one JVM per process (tests, dbt's session method, the example DAG).
            return active
        # Python workers (the streaming job's state processor, UDFs) must run this interpreter, where
        # timeweave is installed; Spark reads the variable when the context starts.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder.appName(self.name).master(self.spark_conf.get("spark.master", "local[*]"))
        for key, value in self.spark_conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()

    # ------------------------------------------------------------------ running

    def run(self, kind: str, config: Mapping[str, Any] | str | os.PathLike[str], **job_args: Any) -> dict[str, Any]:
        """Run a ``kind`` job (``"streaming"``, ``"backfill"`` or ``"sql"``) and return its metrics as plain JSON values.

        ``job_args`` are those of ``timeweave.jobs.run``: ``flush``, ``heartbeat``, ``timeout_seconds``,
        ``until_idle`` for streaming; ``start``, ``end``, ``slices``, ``only``, ``slices_per_job`` for backfill;
        ``mode`` (``batch`` / ``streaming``), ``checkpoint``, ``flush``, ``processing_time``, ``timeout_seconds``
        for a SQL script (``config``: its text or a ``.sql`` path).
        """
        _check_job_arguments(kind, job_args)
        job = _load_job(kind, config)
        job_args = _typed_bounds(kind, job, job_args)
        self._killed.clear()
        if self.launcher == "local":
            return self.run_in_process(kind, job, **job_args)
        return self.submit_job(kind, job, **job_args)

    def run_in_process(self, kind: str, config: Mapping[str, Any], **job_args: Any) -> dict[str, Any]:
        """Run the job on this process's SparkSession via ``timeweave.jobs.run``."""
        from timeweave import jobs

        spark = self.get_conn()
        tag = f"timeweave-{kind}-{uuid.uuid4().hex[:12]}"
        sc = spark.sparkContext
        # Queries already running belong to someone else; kill() stops only the ones this job starts.
        self._in_process = _InProcessRun(spark, tag, frozenset(q.id for q in spark.streams.active))
        sc.addJobTag(tag)
        try:
            metrics = jobs.run(kind, dict(config), spark=spark, **_job_times(kind, job_args))
        except Exception as exc:
            if self._killed.is_set():
                raise TimeweaveJobError(f"the {kind} job was killed") from exc
            raise
        finally:
            sc.removeJobTag(tag)
            self._in_process = None
        if self._killed.is_set():
            raise TimeweaveJobError(f"the {kind} job was killed before it finished")
        return _jsonable(metrics)

    def default_metrics_file(self, workdir: str | None) -> str:
        """Where the job's status file goes when ``metrics_file`` is not set.

        The connection's ``metrics-dir``; else, in client mode, ``workdir`` on this machine (the driver runs
        here).  A cluster-mode driver cannot reach this machine's files, so there it is an error.
        """
        base = self._connection.get("metrics_dir")
        if base:
            return f"{str(base).rstrip('/')}/{self.name}-{uuid.uuid4().hex[:12]}.json"
        if self.cluster_mode or workdir is None:
            raise ValueError(
                "argument 'metrics_file': in cluster deploy mode the driver runs elsewhere; set metrics_file (or "
                "the connection's 'metrics-dir' extra) to a path or URI both the driver and this worker reach"
            )
        return str(Path(workdir) / "metrics.json")

    def spark_submit_command(
        self, kind: str, config: str, metrics_file: str | None = None, **job_args: Any
    ) -> list[str]:
        """The spark-submit argument list (built by ``SparkSubmitHook``) for a ``kind`` job.

        ``config`` is a JSON file the driver can read, or the config itself as JSON text (cluster mode:
        the driver is not on this machine).
        """
        args = job_cli_arguments(kind, config, job_args)
        if metrics_file:
            args += ["--metrics-file", metrics_file]
        self._application_args = args
        return self._build_spark_submit_command(self.application or default_application())

    def _interpreter_env(self) -> dict[str, str]:
        """Client mode: the driver runs here, with this interpreter (where timeweave is installed); on a local
        master the Python workers too.  Variables the environment or ``env`` already set win."""
        if self.cluster_mode:
            return {}
        env = {"PYSPARK_DRIVER_PYTHON": sys.executable}
        if self.master.startswith("local"):
            env["PYSPARK_PYTHON"] = sys.executable
        return {key: value for key, value in env.items() if key not in os.environ and key not in self.env}

    def _build_spark_submit_command(self, application: str) -> list[str]:
        command = super()._build_spark_submit_command(application)
        if self._env is not None:  # the provider replaces the process env with os.environ + env_vars: keep ours
            self._env = {**self._interpreter_env(), **self._env}
        return command

    def _get_spark_binary_path(self) -> list[str]:
        return [_resolve_binary(self._connection["spark_binary"])]

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        """The provider's log processing (application id, driver pod, driver id), keeping the metrics line
        and the last lines of output for the error message."""

        def tee() -> Iterator[Any]:
            for line in itr:
                text = str(line).rstrip("\n")
                if text.strip().startswith(METRICS_PREFIX):
                    self._metrics_lines.append(text.strip())
                else:
                    self._tail.append(text)
                yield line

        super()._process_spark_submit_log(tee())
        if self._detached and self._is_kubernetes and self._spark_exit_code is None:
            # Submitted without waiting: the driver has not exited, so spark-submit printed no exit code (the
            # provider would read the missing code as a failure).  The trigger learns the outcome.
            self._spark_exit_code = 0

    def _config_argument(self, job: Mapping[str, Any], workdir: str | None) -> str:
        """The config as the driver gets it: a file here in client mode, JSON text when the driver is elsewhere."""
        text = json.dumps(job, indent=None if workdir is None else 2)
        if workdir is None or self.cluster_mode:
            return text
        path = Path(workdir) / "job.json"
        path.write_text(text)
        return str(path)

    def submit_job(self, kind: str, config: Mapping[str, Any], **job_args: Any) -> dict[str, Any]:
        """Run the job through spark-submit (``SparkSubmitHook.submit``); return its metrics.

        Client and cluster deploy mode alike: spark-submit returns when the application ends (YARN and
        Kubernetes wait for it; standalone cluster mode tracks the driver), then the status file holds
        the job's final state.
        """
        self._tail.clear()
        self._metrics_lines.clear()
        with tempfile.TemporaryDirectory(prefix="timeweave-submit-") as workdir:
            metrics_file = self.metrics_file or self.default_metrics_file(workdir)
            self._clear_stale_status(metrics_file)
            argument = config["script"] if kind == "sql" else self._config_argument(config, workdir)
            self.spark_submit_command(kind, argument, metrics_file, **job_args)
            env = {**os.environ, **self._interpreter_env()}
            failure: AirflowException | None = None
            try:
                # A new session (process group) so kill() reaches the JVM and its Python driver together.
                self.submit(self.application or default_application(), env=env, start_new_session=True)
            except AirflowException as exc:
                failure = exc
            status = self._read_final_status(metrics_file)
        if self._killed.is_set():
            raise TimeweaveJobError(f"the {kind} job was killed")
        if status is not None and status["state"] == "failed":
            raise TimeweaveJobError(f"the {kind} job failed: {status.get('error')}")
        if failure is not None:
            raise TimeweaveJobError(
                f"spark-submit for the {kind} job failed: {failure}; last output:\n" + "\n".join(self._tail)
            ) from failure
        if status is not None and status["state"] == "succeeded":
            return _jsonable(status.get("metrics") or {})
        if self._metrics_lines:  # a job CLI without --metrics-file support, or an unwritable status file
            return _jsonable(parse_metrics(self._metrics_lines))
        state = status["state"] if status else "absent"
        raise TimeweaveJobError(
            f"the {kind} job ended without a final status: metrics file {metrics_file} is {state}, and no "
            f"'{METRICS_PREFIX} {{json}}' line was printed"
        )

    def _clear_stale_status(self, metrics_file: str) -> None:
        """A status file from an earlier try at the same path would pass for this job's own (a crash before its
        first write would read as the old success): remove it, or refuse to start."""
        try:
            if clear_status(metrics_file):
                self.log.info("Removed the status file of an earlier run at %s", metrics_file)
        except Exception as exc:
            raise TimeweaveJobError(
                f"cannot remove the earlier status file at {metrics_file} ({exc}); a new job's status would be "
                "indistinguishable from it: remove it, or use a metrics_file per run (e.g. with {{ run_id }})"
            ) from exc

    def _read_final_status(self, metrics_file: str) -> dict[str, Any] | None:
        try:
            return read_status(metrics_file)
        except (OSError, ValueError) as exc:
            self.log.warning("Cannot read the metrics file %s: %s", metrics_file, exc)
            return None

    def start_job(self, kind: str, config: Mapping[str, Any] | str | os.PathLike[str], *, log_dir: str | None = None,
                  **job_args: Any) -> DetachedJob:
        """Start the job through spark-submit and return at once (a deferrable operator then watches its status file).

        Cluster mode: ``SparkSubmitHook.submit`` with the provider's wait turned off (YARN's
        ``waitAppCompletion``, Kubernetes' ``submission.waitAppCompletion``, no standalone driver tracking).
        Client mode: the driver is the spark-submit process; it is started in a session of its own, so it
        outlives this task process, with its output in ``<log_dir>/spark-submit.log``.
        """
        if self.launcher != "spark-submit":
            raise ValueError("argument 'launcher': a job that runs without holding a worker needs 'spark-submit'")
        _check_job_arguments(kind, job_args)
        job = _load_job(kind, config)
        job_args = _typed_bounds(kind, job, job_args)
        metrics_file = self.metrics_file or self.default_metrics_file(log_dir)
        self._clear_stale_status(metrics_file)
        # The config travels as JSON text: no temporary file has to outlive this task process.
        self.spark_submit_command(kind, job["script"] if kind == "sql" else json.dumps(job), metrics_file, **job_args)
        if self.cluster_mode:
            no_wait = {key: value for key, value in _NO_WAIT_CONF.items()
                       if key.startswith("spark.yarn." if self._is_yarn else "spark.kubernetes.")}
            self._conf = {**self._conf, **{k: v for k, v in no_wait.items() if k not in self._conf}}
            self._should_track_driver_status = False
            self._detached = True
            self.submit(self.application or default_application(), env={**os.environ, **self._interpreter_env()})
            return DetachedJob(kind, metrics_file)
        command = self._build_spark_submit_command(self.application or default_application())
        log_path = Path(log_dir or tempfile.mkdtemp(prefix="timeweave-job-")) / "spark-submit.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self._interpreter_env(), **(self._env or {})}
        self.log.info("Starting %s (output in %s)", self._mask_cmd(command), log_path)
        with open(log_path, "ab") as log:
            process = subprocess.Popen(  # an argument list, no shell
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True,
            )
        return DetachedJob(kind, metrics_file, pid=process.pid, host=socket.gethostname(), log_file=str(log_path))

    # ------------------------------------------------------------------ stopping

    @property
    def _process(self) -> subprocess.Popen[str] | None:
        """The running spark-submit process, if any."""
        return self._submit_sp

    def kill(self) -> None:
        """Stop the running job, if any.

        spark-submit: in client mode the driver is that process, so its process group first gets SIGTERM
        (the job CLI then stops a streaming query after its micro-batch), then the provider's ``on_kill``
        does the rest on every master: SIGKILL, ``spark-submit --kill`` of a standalone cluster driver,
        ``yarn application -kill``, the Kubernetes driver pod's deletion.  In-process: the job's queries and
        Spark jobs.  Safe to call from a signal handler: Spark calls go through a helper thread, because
        the handler interrupts the thread that is itself blocked in a py4j call on its own connection.
        """
        self._killed.set()
        process = self._submit_sp
        if process is not None and process.poll() is None and not self.cluster_mode:
            self._terminate_group(process)
        if process is not None or self._driver_id:
            self.on_kill()
            if process is not None and process.poll() is None:
                _signal_group(process.pid, signal.SIGKILL)
        run = self._in_process
        if run is not None:
            helper = threading.Thread(target=self._stop_in_process, args=(run,), name="timeweave-kill", daemon=True)
            helper.start()
            helper.join(timeout=_KILL_GRACE_SECONDS)
        if process is None and run is None and not self._driver_id:
            self.log.info("No timeweave job is running; nothing to kill")

    def _terminate_group(self, process: subprocess.Popen[str]) -> None:
        self.log.info("Stopping spark-submit (pid %s) and its process group", process.pid)
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=_KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            _signal_group(process.pid, signal.SIGKILL)

    def _stop_in_process(self, run: _InProcessRun) -> None:
        for query in run.spark.streams.active:
            if query.id not in run.queries_before:
                self.log.info("Stopping streaming query %s (%s)", query.name or "", query.id)
                query.stop()
        run.spark.sparkContext.cancelJobsWithTag(run.tag)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
