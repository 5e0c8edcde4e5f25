"""The timeweave hook: launches a streaming or backfill job and returns its metrics.

Two launchers, one result shape:

* ``local`` runs the job in this process through :func:`runtime.jobs.run` on the embedded (or an
  already active) SparkSession.  Good for a laptop, CI and the example DAG.
* ``spark-submit`` runs ``spark-submit`` against the master of an Airflow Spark connection (``host`` /
  ``port`` = master, extras ``deploy-mode``, ``spark-binary``, ``queue`` as in the Apache Spark
  provider) with an argument list, never a shell string, and reads the metrics from the
  ``TIMEWEAVE_METRICS {json}`` line the job CLI prints last.

Both accept the job config of :mod:`runtime.jobs.config` as a dict, a JSON string or a path to a JSON
file, and validate it before anything starts.  ``kill()`` stops a running job from another thread or
a signal handler (the operator's ``on_kill``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException

from runtime.jobs.cli import METRICS_PREFIX as _CLI_METRICS_PREFIX
from runtime.jobs.config import load_job_config as load_runtime_job_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The prefix of the one line the job CLI prints with its metrics as JSON (the CLI's own constant).
METRICS_PREFIX = _CLI_METRICS_PREFIX.strip()
#: The job kinds ``runtime.jobs.run`` and the job CLI understand.
JOB_KINDS = ("streaming", "backfill")
#: The launchers this hook knows.
LAUNCHERS = ("local", "spark-submit")
#: spark-submit binaries a connection's ``spark-binary`` extra may name (as in the Apache Spark provider).
ALLOWED_SPARK_BINARIES = ("spark-submit", "spark2-submit", "spark3-submit")
#: Job arguments per kind (those of ``runtime.jobs.run`` / the job CLI); anything else is a mistake the
#: user should hear about before a job starts.
_JOB_ARGUMENTS: Mapping[str, frozenset[str]] = {
    "streaming": frozenset({"flush", "heartbeat", "timeout_seconds", "until_idle"}),
    "backfill": frozenset({"start", "end", "slices", "only", "slices_per_job"}),
}
#: How long ``kill()`` waits for a spark-submit process to exit after SIGTERM before SIGKILL.
_KILL_GRACE_SECONDS = 15.0


class TimeweaveJobError(AirflowException):
    """A timeweave job failed, was killed, or ended without reporting its metrics."""


def load_job_config(config: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    """The job config as a plain JSON-able dict, validated by :func:`runtime.jobs.config.load_job_config`.

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


def _job_times(kind: str, job_args: Mapping[str, Any]) -> dict[str, Any]:
    """``job_args`` with times as naive UTC datetimes and counts as ints, the form every launcher passes on."""
    args = {name: value for name, value in job_args.items() if value is not None}
    for name in ("start", "end", "heartbeat"):
        if name in args:
            args[name] = utc_naive(args[name], name)
    for name in ("slices", "slices_per_job"):
        if name in args:
            args[name] = int(args[name])
    if "only" in args:
        args["only"] = [int(index) for index in args["only"]]
    return args


def job_cli_arguments(kind: str, config_path: str, job_args: Mapping[str, Any]) -> list[str]:
    """The job CLI's arguments (after the application) for ``kind`` and ``job_args``.

    >>> job_cli_arguments("backfill", "job.json", {"start": "2026-01-01T00:00:00+00:00",
    ...                   "end": "2026-01-02T00:00:00+00:00", "slices": 3})
    ['backfill', '--config', 'job.json', '--start', '2026-01-01T00:00:00', '--end', '2026-01-02T00:00:00', '--slices', '3']
    >>> job_cli_arguments("streaming", "job.json", {"heartbeat": "2026-01-02", "until_idle": False})
    ['streaming', '--config', 'job.json', '--heartbeat', '2026-01-02T00:00:00', '--no-until-idle']
    """
    _check_job_arguments(kind, job_args)
    job_args = _job_times(kind, job_args)
    args = [kind, "--config", config_path]
    if kind == "backfill":
        args += ["--start", job_args["start"].isoformat(), "--end", job_args["end"].isoformat()]
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
    spec = find_spec("airflow_plugin.spark_app.timeweave_job")
    if spec is None or spec.origin is None:  # pragma: no cover - the file ships with the package
        raise TimeweaveJobError("cannot locate airflow_plugin/spark_app/timeweave_job.py")
    return spec.origin


@dataclass(frozen=True)
class SubmitTarget:
    """Where and how spark-submit runs, resolved from the connection and the hook's arguments."""

    master: str
    spark_binary: str = "spark-submit"
    queue: str | None = None
    deploy_mode: str = "client"


@dataclass
class _InProcessRun:
    """What ``kill()`` needs to stop an in-process job: the session, its job tag, queries it started."""

    spark: SparkSession
    tag: str
    queries_before: frozenset[str] = field(default_factory=frozenset)


class TimeweaveHook(BaseHook):
    """Launch timeweave jobs in-process or through ``spark-submit``, returning their metrics dict.

    :param conn_id: Airflow Spark connection for ``spark-submit`` (``host``/``port`` = master; extras
        ``deploy-mode`` (only ``client``: the metrics line is read from the driver's stdout),
        ``spark-binary``, ``queue``).  Without one, the master is ``spark_conf["spark.master"]`` or ``local[*]``.
    :param launcher: ``"local"`` (in-process, via ``runtime.jobs.run``) or ``"spark-submit"``.
    :param spark_conf: Spark properties: ``--conf`` pairs for spark-submit; builder options locally.
    :param application: the Python file spark-submit runs; defaults to the packaged launcher.
    :param py_files: ``--py-files`` for spark-submit.
    :param env: extra environment variables for the spark-submit process.
    :param name: the Spark application name.

    Example::

        hook = TimeweaveHook(conn_id="spark_cluster", launcher="spark-submit")
        metrics = hook.run("backfill", "jobs/orders.json", start=start, end=end, slices=4)
        metrics["rows_out"]
    """

    conn_name_attr = "conn_id"
    default_conn_name = "spark_default"
    conn_type = "spark"
    hook_name = "Timeweave"

    def __init__(
        self,
        conn_id: str | None = None,
        *,
        launcher: str = "local",
        spark_conf: Mapping[str, Any] | None = None,
        application: str | None = None,
        py_files: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        name: str = "timeweave",
    ) -> None:
        super().__init__()
        if launcher not in LAUNCHERS:
            raise ValueError(f"argument 'launcher': unknown launcher {launcher!r}; use one of {LAUNCHERS}")
        self.conn_id = conn_id
        self.launcher = launcher
        self.spark_conf = {str(k): str(v) for k, v in (spark_conf or {}).items()}
        self.application = application
        self.py_files = tuple(py_files)
        self.env = dict(env or {})
        self.name = name
        # Set while a job runs; kill() reads them from another thread or a signal handler.
        self._process: subprocess.Popen[str] | None = None
        self._in_process: _InProcessRun | None = None
        self._killed = threading.Event()

    # ------------------------------------------------------------------ connection

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

    def submit_target(self) -> SubmitTarget:
        """Master, binary, queue and deploy mode for spark-submit, from the connection (if any)."""
        if self.conn_id is None:
            return SubmitTarget(master=self.spark_conf.get("spark.master", "local[*]"))
        conn = self.get_connection(self.conn_id)
        if not conn.host:
            raise ValueError(f"argument 'conn_id': connection {self.conn_id!r} has no host (the Spark master)")
        master = f"{conn.host}:{conn.port}" if conn.port else conn.host
        extra = conn.extra_dejson
        binary = extra.get("spark-binary", "spark-submit")
        if binary not in ALLOWED_SPARK_BINARIES:
            raise ValueError(
                f"connection {self.conn_id!r}: extra 'spark-binary' is {binary!r}; use one of {ALLOWED_SPARK_BINARIES}"
            )
        deploy_mode = extra.get("deploy-mode") or "client"
        if deploy_mode != "client":
            # In cluster mode the driver's stdout (with the metrics line) never reaches this process.
            raise ValueError(
                f"connection {self.conn_id!r}: extra 'deploy-mode' is {deploy_mode!r}; timeweave jobs run "
                "in client mode so that the driver's metrics line can be read"
            )
        return SubmitTarget(master=master, spark_binary=binary, queue=extra.get("queue"), deploy_mode=deploy_mode)

    # ------------------------------------------------------------------ running

    def run(self, kind: str, config: Mapping[str, Any] | str | os.PathLike[str], **job_args: Any) -> dict[str, Any]:
        """Run a ``kind`` job (``"streaming"`` or ``"backfill"``) and return its metrics as plain JSON values.

        ``job_args`` are those of ``runtime.jobs.run``: ``flush``, ``heartbeat``, ``timeout_seconds``,
        ``until_idle`` for streaming; ``start``, ``end``, ``slices``, ``only``, ``slices_per_job`` for backfill.
        """
        _check_job_arguments(kind, job_args)
        job = load_job_config(config)
        self._killed.clear()
        if self.launcher == "local":
            return self.run_in_process(kind, job, **job_args)
        return self.submit(kind, job, **job_args)

    def run_in_process(self, kind: str, config: Mapping[str, Any], **job_args: Any) -> dict[str, Any]:
        """Run the job on this process's SparkSession via ``runtime.jobs.run``."""
        from runtime import jobs

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

    def spark_submit_command(self, kind: str, config_path: str, **job_args: Any) -> list[str]:
        """The spark-submit argument list for a ``kind`` job reading its config from ``config_path``."""
        target = self.submit_target()
        command = [_resolve_binary(target.spark_binary), "--master", target.master, "--deploy-mode", target.deploy_mode]
        command += ["--name", self.name]
        if target.queue:
            command += ["--queue", target.queue]
        for key, value in sorted(self.spark_conf.items()):
            if key != "spark.master":  # --master above is the one source of truth
                command += ["--conf", f"{key}={value}"]
        if self.py_files:
            command += ["--py-files", ",".join(self.py_files)]
        command.append(self.application or default_application())
        return command + job_cli_arguments(kind, config_path, job_args)

    def _submit_env(self, target: SubmitTarget) -> dict[str, str]:
        env = {**os.environ, **self.env}
        # The driver runs here (client mode): give it this interpreter, where timeweave is installed.
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        if target.master.startswith("local"):
            env.setdefault("PYSPARK_PYTHON", sys.executable)
        return env

    def submit(self, kind: str, config: Mapping[str, Any], **job_args: Any) -> dict[str, Any]:
        """Run the job through spark-submit; stream its output to the task log; return its metrics."""
        target = self.submit_target()
        with tempfile.TemporaryDirectory(prefix="timeweave-submit-") as workdir:
            config_path = Path(workdir) / "job.json"
            config_path.write_text(json.dumps(config, indent=2))
            command = self.spark_submit_command(kind, str(config_path), **job_args)
            self.log.info("Running %s", shlex.join(command))  # quoted for reading only; no shell runs it
            tail: deque[str] = deque(maxlen=40)
            metrics_lines: list[str] = []
            # A new session (process group) so kill() reaches the JVM and its Python driver together.
            process = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=self._submit_env(target),
                start_new_session=True,
            )
            self._process = process
            try:
                assert process.stdout is not None
                for raw in process.stdout:
                    line = raw.rstrip("\n")
                    if line.startswith(METRICS_PREFIX):
                        metrics_lines.append(line)
                    else:
                        tail.append(line)
                    self.log.info("%s", line)
                returncode = process.wait()
            finally:
                self._process = None
        if self._killed.is_set():
            raise TimeweaveJobError(f"the {kind} job was killed (spark-submit exit code {returncode})")
        if returncode != 0:
            raise TimeweaveJobError(
                f"spark-submit for the {kind} job exited with code {returncode}; last output:\n" + "\n".join(tail)
            )
        return _jsonable(parse_metrics(metrics_lines))

    # ------------------------------------------------------------------ stopping

    def kill(self) -> None:
        """Stop the running job, if any: the spark-submit process group, or the in-process queries and jobs.

        Safe to call from a signal handler: Spark calls go through a helper thread, because the handler
        interrupts the thread that is itself blocked in a py4j call on its own connection.
        """
        self._killed.set()
        process = self._process
        if process is not None:
            self._kill_process(process)
        run = self._in_process
        if run is not None:
            helper = threading.Thread(target=self._stop_in_process, args=(run,), name="timeweave-kill", daemon=True)
            helper.start()
            helper.join(timeout=_KILL_GRACE_SECONDS)
        if process is None and run is None:
            self.log.info("No timeweave job is running; nothing to kill")

    def _kill_process(self, process: subprocess.Popen[str]) -> None:
        if process.poll() is not None:
            return
        self.log.info("Stopping spark-submit (pid %s) and its process group", process.pid)
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=_KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _stop_in_process(self, run: _InProcessRun) -> None:
        for query in run.spark.streams.active:
            if query.id not in run.queries_before:
                self.log.info("Stopping streaming query %s (%s)", query.name or "", query.id)
                query.stop()
        run.spark.sparkContext.cancelJobsWithTag(run.tag)
