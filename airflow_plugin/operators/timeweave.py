"""Operators that run timeweave jobs and return their metrics through XCom.

* :class:`TimeweaveStreamingOperator` runs the streaming job: an incremental ``availableNow`` run that
  resumes from a persistent checkpoint each DAG run (optionally flushing the watermark past the end
  of input), or a long-running ``processingTime`` job.
* :class:`TimeweaveBackfillOperator` recomputes the run's data interval in N slices.
* :class:`TimeweaveSqlOperator` runs a Flink SQL script (DDL, ``INSERT INTO``, statement sets) as a batch job.

Both hand the work to :class:`~timeweave.airflow.hooks.timeweave.TimeweaveHook` (in-process, or
spark-submit through the Spark provider's hook with every one of its options: ``jars``, ``packages``,
``files``, executor resources, ``keytab``/``principal``, ``deploy_mode="cluster"``, ...) and return the
job's metrics dict (``rows_in_left``, ``rows_in_right``, ``rows_out``, ``late``, ``dead_letter``,
``watermark``, ...), which Airflow stores as the ``return_value`` XCom.  ``on_kill`` stops the Spark job.

With ``deferrable=True`` (spark-submit only) the task starts the job and defers to
:class:`~timeweave.airflow.triggers.timeweave.TimeweaveJobTrigger`, which watches the job's status file from
the triggerer: no worker slot is held while a long streaming job runs.

Both name their datasets to OpenLineage (``get_openlineage_facets_on_start`` / ``_on_complete``): inputs
``left`` and ``right`` (the versioned table) or a MATCH_RECOGNIZE ``input``; outputs the main output,
``late`` and ``dead_letter``, with their row counts once the job is done.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from airflow.sdk import BaseOperator, Context

from timeweave.airflow.hooks.timeweave import (
    TimeweaveHook,
    TimeweaveJobError,
    load_job_config,
    load_sql_job,
    utc_naive,
)
from timeweave.airflow.triggers.timeweave import TimeweaveJobTrigger
from timeweave.airflow.utils.metrics_file import dataset_uri
from timeweave.core.time import bound_text
from timeweave.jobs.backfill import backfill_bounds
from timeweave.jobs.config import load_job_config as load_runtime_job_config
from timeweave.jobs.config import parse_duration
from timeweave.jobs.sql_script import check_script, script_datasets

ConfigSource = Mapping[str, Any] | str
#: ``SparkSubmitHook`` arguments the operators pass on to the hook unchanged (see ``TimeweaveHook``).
SPARK_SUBMIT_OPTIONS = (
    "files", "archives", "jars", "packages", "exclude_packages", "repositories", "driver_class_path",
    "total_executor_cores", "executor_cores", "executor_memory", "driver_memory", "num_executors", "keytab",
    "principal", "proxy_user", "properties_file", "yarn_queue", "deploy_mode", "spark_binary",
    "status_poll_interval", "verbose", "use_krb5ccache",
)


class _TimeweaveJobOperator(BaseOperator):
    """Shared plumbing: hook construction, config loading, XCom-ready metrics, ``on_kill``."""

    ui_color = "#e8d9f5"
    template_ext: Sequence[str] = (".json",)
    template_fields_renderers: ClassVar[dict[str, str]] = {"config": "json", "spark_conf": "json"}

    def __init__(
        self,
        *,
        config: ConfigSource,
        launcher: str = "local",
        conn_id: str | None = None,
        spark_conf: Mapping[str, Any] | None = None,
        application: str | None = None,
        py_files: Sequence[str] | str = (),
        env: Mapping[str, str] | None = None,
        metrics_file: str | None = None,
        deferrable: bool = False,
        poll_interval: float = 10.0,
        start_timeout: float | None = 600.0,
        **kwargs: Any,
    ) -> None:
        spark_submit = {name: kwargs.pop(name) for name in SPARK_SUBMIT_OPTIONS if name in kwargs}
        super().__init__(**kwargs)
        if deferrable and launcher != "spark-submit":
            raise ValueError("argument 'deferrable': a deferred job runs outside the worker; use launcher='spark-submit'")
        self.config = config
        self.launcher = launcher
        self.conn_id = conn_id
        self.spark_conf = dict(spark_conf or {})
        self.application = application
        self.py_files = [py_files] if isinstance(py_files, str) else list(py_files)
        self.env = dict(env or {})
        self.metrics_file = metrics_file
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        self.start_timeout = start_timeout
        self.spark_submit = spark_submit
        self._metrics: dict[str, Any] | None = None

    @cached_property
    def _hook(self) -> TimeweaveHook:
        return self._get_hook()

    def _get_hook(self) -> TimeweaveHook:
        return TimeweaveHook(
            self.conn_id,
            launcher=self.launcher,
            spark_conf=self.spark_conf,
            application=self.application,
            py_files=self.py_files,
            env=self.env,
            name=f"timeweave-{self.dag_id}-{self.task_id}" if self.has_dag() else f"timeweave-{self.task_id}",
            metrics_file=self.metrics_file or None,
            **self.spark_submit,
        )

    def _job_config(self) -> dict[str, Any]:
        """The rendered config as a dict.  A ``.json`` path was already rendered to its text by Airflow."""
        config = self.config
        if isinstance(config, str) and not config.lstrip().startswith("{") and not os.path.exists(config):
            raise ValueError(f"argument 'config': {config!r} is neither JSON text nor an existing file")
        return load_job_config(config)

    def _run_job(self, context: Context, kind: str, job: dict[str, Any], **job_args: Any) -> dict[str, Any]:
        """Run the job and return its metrics, or (``deferrable``) start it and defer to its trigger."""
        if not self.deferrable:
            self._metrics = self._hook.run(kind, job, **job_args)
            return self._metrics
        run_dir = Path(tempfile.gettempdir(), "timeweave-jobs", *(
            re.sub(r"[^A-Za-z0-9_.-]", "_", str(part)) for part in (self.dag_id, self.task_id, context.get("run_id", "run"))
        ))
        started = self._hook.start_job(kind, job, log_dir=str(run_dir), **job_args)
        self.log.info("The %s job runs on; deferring to its status file %s", kind, started.metrics_file)
        self.defer(
            trigger=TimeweaveJobTrigger(
                metrics_file=started.metrics_file, kind=kind, poll_interval=self.poll_interval,
                start_timeout=self.start_timeout, pid=started.pid, host=started.host, log_file=started.log_file,
            ),
            method_name="execute_complete",
        )
        raise AssertionError("defer() returns only by raising")  # pragma: no cover

    def execute_complete(self, context: Context, event: Mapping[str, Any]) -> dict[str, Any]:
        """Resume after the trigger fired: the job's metrics (XCom), or its error."""
        if event.get("status") != "success":
            raise TimeweaveJobError(str(event.get("error") or f"the job ended without success: {dict(event)}"))
        self._metrics = dict(event.get("metrics") or {})
        self.log.info("Job metrics: %s", json.dumps(self._metrics, sort_keys=True))
        return self._metrics

    def on_kill(self) -> None:
        """Stop the Spark job: the spark-submit process group, or the in-process queries and jobs."""
        self._hook.kill()

    # ------------------------------------------------------------------ templating

    #: Template fields rendered as text only, never read as a template file: a status file's path ends in
    #: ``.json`` like a config file, but names a file the job writes, not one to render.
    _TEXT_ONLY_FIELDS: ClassVar[tuple[str, ...]] = ("metrics_file",)

    def resolve_template_files(self) -> None:
        saved = {name: getattr(self, name, None) for name in self._TEXT_ONLY_FIELDS}
        for name in saved:
            setattr(self, name, None)
        try:
            super().resolve_template_files()
        finally:
            for name, value in saved.items():
                setattr(self, name, value)

    def _do_render_template_fields(self, parent: Any, template_fields: Any, context: Any, jinja_env: Any,
                                   seen_oids: set[int]) -> None:
        if parent is self:
            fields = list(template_fields)
            for name in (f for f in fields if f in self._TEXT_ONLY_FIELDS):
                value = getattr(self, name, None)
                if isinstance(value, str) and value:
                    setattr(self, name, self._render(jinja_env.from_string(value), context))
            template_fields = [f for f in fields if f not in self._TEXT_ONLY_FIELDS]
        super()._do_render_template_fields(parent, template_fields, context, jinja_env, seen_oids)

    # ------------------------------------------------------------------ OpenLineage

    def _lineage_paths(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """``(inputs, outputs)`` as ``(role, path)``: left / right (versioned) or input; main / late / dead letter."""
        job = load_runtime_job_config(self._job_config())
        if hasattr(job, "input"):  # MATCH_RECOGNIZE
            inputs = [("input", job.input.path)]
        else:
            inputs = [("left", job.left.path), ("right", job.right.path)]
        outputs = [("output", job.output_path), ("late", job.late_path), ("dead_letter", job.dead_letter_path)]
        return inputs, [(role, path) for role, path in outputs if path]

    def _lineage(self, metrics: Mapping[str, Any] | None) -> Any:
        try:
            from airflow.providers.openlineage.extractors import OperatorLineage
            from openlineage.client.event_v2 import InputDataset, OutputDataset
            from openlineage.client.facet_v2 import output_statistics_output_dataset
        except ImportError:  # apache-airflow-providers-openlineage is not installed: nothing to report to
            return None
        inputs, outputs = self._lineage_paths()

        def output(role: str, path: str) -> OutputDataset:
            namespace, name = dataset_uri(path)
            facets: dict[str, Any] = {}
            count = None if metrics is None else self._rows_written(role, metrics)
            if isinstance(count, int) and not isinstance(count, bool):
                facets["outputStatistics"] = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                    rowCount=count
                )
            return OutputDataset(namespace=namespace, name=name, outputFacets=facets)

        return OperatorLineage(
            inputs=[InputDataset(*dataset_uri(path)) for _, path in inputs],
            outputs=[output(role, path) for role, path in outputs],
        )

    def _rows_written(self, role: str, metrics: Mapping[str, Any]) -> Any:
        """The count of rows the job wrote to its ``role`` output, from its metrics."""
        return metrics.get({"output": "rows_out", "late": "late", "dead_letter": "dead_letter"}[role])

    def get_openlineage_facets_on_start(self) -> Any:
        """OpenLineage: the job's input datasets (left, versioned right / input) and outputs (main, late, dead letter)."""
        return self._lineage(None)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the datasets of :meth:`get_openlineage_facets_on_start`, outputs with their row counts."""
        return self._lineage(self._metrics)


class TimeweaveStreamingOperator(_TimeweaveJobOperator):
    """Run the timeweave streaming job (event-time temporal join) and return its metrics.

    With the config's default ``availableNow`` trigger each DAG run processes the files that arrived
    since the last run and stops; the checkpoint carries offsets, join state and the watermark from
    one run to the next, so it must be persistent.  Rows wait in state until the watermark passes
    them: ``heartbeat`` (e.g. ``"{{ data_interval_end }}"``) moves the watermark to a time first, so
    a run emits everything before it; ``flush=True`` moves it past all input (end of input: later
    rows are late).  With ``processing_time`` the job runs until killed (``on_kill`` stops the query)
    or until ``timeout_seconds``.

    :param config: job config dict, JSON text, or a path to a ``.json`` file (templated).
    :param checkpoint: checkpoint location; overrides the config's ``checkpoint`` (templated).
    :param heartbeat: move both watermarks to this ISO timestamp before the run (templated).
    :param flush: move the watermark past all input before the run (end of input).
    :param processing_time: e.g. ``"30 seconds"``: a long-running processingTime job instead (templated).
    :param timeout_seconds: stop a processingTime job after this many seconds.
    :param launcher: ``"local"`` (in-process) or ``"spark-submit"``.
    :param conn_id: ``timeweave`` (or ``spark``) connection for spark-submit (templated).
    :param spark_conf: Spark properties (templated).
    :param metrics_file: the job's status file, a path or URI the driver and the worker (triggerer) reach
        (templated); needed in cluster deploy mode unless the connection has a ``metrics-dir``.
    :param deferrable: start the job, then wait in the triggerer (spark-submit only).
    :param poll_interval: seconds between the trigger's reads of the status file.
    :param start_timeout: seconds the trigger waits for a first status before failing (None: no limit).
    :param files, jars, packages, executor_memory, deploy_mode, keytab, principal, ...: any ``SparkSubmitHook``
        option (:data:`SPARK_SUBMIT_OPTIONS`), passed on to spark-submit.

    Example::

        stream = TimeweaveStreamingOperator(task_id="stream", config="jobs/orders.json",
                                            checkpoint="/data/chk/orders_enriched",
                                            heartbeat="{{ data_interval_end }}")
        # a long job on YARN, waiting in the triggerer:
        follow = TimeweaveStreamingOperator(task_id="follow", config="jobs/orders.json", launcher="spark-submit",
                                            conn_id="yarn_cluster", deploy_mode="cluster", deferrable=True,
                                            processing_time="1 minute", timeout_seconds=3600,
                                            metrics_file="hdfs:///runs/{{ run_id }}/orders.json",
                                            packages="org.apache.spark:spark-avro_2.13:4.0.0", executor_memory="4g")
    """

    template_fields: Sequence[str] = (
        "config", "checkpoint", "heartbeat", "processing_time", "conn_id", "spark_conf", "metrics_file"
    )

    def __init__(
        self,
        *,
        config: ConfigSource,
        checkpoint: str | None = None,
        heartbeat: datetime | str | None = None,
        flush: bool = False,
        processing_time: str | None = None,
        timeout_seconds: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(config=config, **kwargs)
        self.checkpoint = checkpoint
        self.heartbeat = heartbeat
        self.flush = flush
        self.processing_time = processing_time
        self.timeout_seconds = timeout_seconds

    def _job_config(self) -> dict[str, Any]:
        job = super()._job_config()
        if self.checkpoint:
            job["checkpoint"] = self.checkpoint
        if not job.get("checkpoint"):
            raise ValueError(
                "argument 'checkpoint': the streaming operator needs a persistent checkpoint "
                "(set it here or as 'checkpoint' in the job config)"
            )
        if self.processing_time:
            parse_duration(self.processing_time, "processing_time")  # fail here, not when the query starts
            job["trigger"] = {"processing_time": self.processing_time}
        return load_job_config(job)  # validate the overrides too

    def _job_arguments(self) -> dict[str, Any]:
        args: dict[str, Any] = {"flush": self.flush}
        if self.flush and self.heartbeat:
            raise ValueError("argument 'heartbeat': flush already moves the watermark past all input; set one")
        if self.heartbeat:
            args["heartbeat"] = utc_naive(self.heartbeat, "heartbeat")
        if self.processing_time:
            # A scheduled long-running job: it ends when killed or timed out, not when input is idle.
            args["until_idle"] = False
            if self.timeout_seconds is not None:
                args["timeout_seconds"] = float(self.timeout_seconds)
        elif self.timeout_seconds is not None:
            raise ValueError("argument 'timeout_seconds': only a processing_time job runs until a timeout")
        return args

    def execute(self, context: Context) -> dict[str, Any]:
        job = self._job_config()
        args = self._job_arguments()
        self.log.info("Streaming job: checkpoint %s, trigger %s, %s", job["checkpoint"],
                      json.dumps(job.get("trigger", {"available_now": True})), args)
        metrics = self._run_job(context, "streaming", job, **args)
        self.log.info("Streaming job metrics: %s", json.dumps(metrics, sort_keys=True))
        return metrics


class TimeweaveBackfillOperator(_TimeweaveJobOperator):
    """Recompute ``[start, end)`` (by default the run's data interval) in ``slices`` slices; return the metrics.

    Each slice joins the left rows whose event time falls in it with the versioned table as of those
    times, so the union of the slices equals one batch run and the streaming job's output.

    :param config: job config dict, JSON text, or a path to a ``.json`` file (templated).
    :param start: interval start (templated; default ``{{ data_interval_start }}``), in the domain of the time
        column the job slices on (:func:`timeweave.jobs.backfill.backfill_bounds`): an ISO timestamp or a datetime;
        for a temporal join over DATE time columns a date (or a timestamp at 00:00 UTC: a daily data interval as
        rendered), over BIGINT / INT ones an integer (``0``, ``"{{ params.lsn_from }}"``; ``1.5`` is refused),
        over DECIMAL / DOUBLE ones a number.  A numeric time has no data interval: give its bounds explicitly
        (e.g. ``"{{ data_interval_start.int_timestamp * 1000 }}"`` for epoch millis).
    :param end: interval end, exclusive (templated; default ``{{ data_interval_end }}``), the same form as ``start``.
    :param slices: number of slices (templated).
    :param only: re-run only these slice indexes (0-based; templated: a list, or text such as ``"0,2"`` or
        ``"[0, 2]"``); empty or None runs every slice.  A re-run slice replaces exactly its own output.
    :param slices_per_job: temporal joins: how many contiguous slices one Spark job writes (templated;
        default all of the run's; ``1``: one job per slice, so slices finished before a failure stay written).
    :param launcher: ``"local"`` (in-process) or ``"spark-submit"``.
    :param conn_id: ``timeweave`` (or ``spark``) connection for spark-submit (templated).
    :param spark_conf: Spark properties (templated).
    :param metrics_file: the job's status file, a path or URI the driver and the worker (triggerer) reach
        (templated); needed in cluster deploy mode unless the connection has a ``metrics-dir``.
    :param deferrable: start the job, then wait in the triggerer (spark-submit only).
    :param poll_interval: seconds between the trigger's reads of the status file.
    :param start_timeout: seconds the trigger waits for a first status before failing (None: no limit).
    :param files, jars, packages, executor_memory, deploy_mode, keytab, principal, ...: any ``SparkSubmitHook``
        option (:data:`SPARK_SUBMIT_OPTIONS`), passed on to spark-submit.

    Example::

        backfill = TimeweaveBackfillOperator(task_id="backfill", config="jobs/orders.json", slices=4)
        by_lsn = TimeweaveBackfillOperator(task_id="by_lsn", config="jobs/lsn_orders.json", start=0, end=3_000_000,
                                           slices=3)   # BIGINT time columns: integer bounds
        redo = TimeweaveBackfillOperator(task_id="redo", config="jobs/orders.json", slices=4, only="{{ params.slices }}",
                                         slices_per_job=1)
    """

    template_fields: Sequence[str] = (
        "config", "start", "end", "slices", "only", "slices_per_job", "conn_id", "spark_conf", "metrics_file"
    )

    def __init__(
        self,
        *,
        config: ConfigSource,
        start: datetime | str = "{{ data_interval_start }}",
        end: datetime | str = "{{ data_interval_end }}",
        slices: int | str = 1,
        only: Sequence[int | str] | str | None = None,
        slices_per_job: int | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(config=config, **kwargs)
        self.start = start
        self.end = end
        self.slices = slices
        self.only = only
        self.slices_per_job = slices_per_job

    def execute(self, context: Context) -> dict[str, Any]:
        job = self._job_config()
        # in the job's time domain: timestamps (UTC), dates, integers or numbers; end after start
        start, end = backfill_bounds(job, self.start, self.end)
        try:
            slices = int(self.slices)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"argument 'slices': {self.slices!r} is not an integer") from exc
        only = _slice_indexes(self.only, slices)
        per_job = None
        if self.slices_per_job is not None and str(self.slices_per_job).strip():
            try:
                per_job = int(self.slices_per_job)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"argument 'slices_per_job': {self.slices_per_job!r} is not an integer") from exc
        self.log.info("Backfill [%s, %s)%s in %d slice(s)%s", bound_text(start), bound_text(end),
                      " UTC" if isinstance(start, datetime) else "", slices, f", only {only}" if only else "")
        extra = {"only": only, "slices_per_job": per_job}
        metrics = self._run_job(context, "backfill", job, start=start, end=end, slices=slices,
                                **{name: value for name, value in extra.items() if value is not None})
        self.log.info("Backfill metrics: %s", json.dumps(metrics, sort_keys=True))
        return metrics


class TimeweaveSqlOperator(_TimeweaveJobOperator):
    """Run a Flink SQL script as a batch or streaming job (``timeweave-job sql``) and return its metrics.

    The script's ``CREATE TABLE`` / ``CREATE VIEW`` statements declare its tables (a ``PRIMARY KEY`` and a
    ``WATERMARK`` make a versioned table); each ``INSERT INTO`` / ``INSERT OVERWRITE`` (alone or in ``EXECUTE
    STATEMENT SET BEGIN ... END``) writes its query's rows into a filesystem sink the script declares, with the
    query's dead letters in ``<sink path>_dead_letter``, or into a catalog table.  The script is checked when the
    task starts, before Spark does anything; an error names its line and column.

    :param sql: the script's text, or a path ending in ``.sql`` (templated: Jinja renders inside the file too,
        found beside the DAG file or on the DAG's ``template_searchpath``, as for Airflow's SQL operators).
    :param launcher, conn_id, spark_conf, metrics_file, deferrable, poll_interval, start_timeout: as for
        :class:`TimeweaveBackfillOperator`; with spark-submit the script travels inline (``--script``), so a driver
        in cluster mode needs no file of this machine.
    :param mode: ``batch`` (default) or ``streaming`` (each insert a checkpointed streaming query into a parquet
        sink, late rows in ``<sink path>_late``); streaming also takes ``checkpoint`` (templated; default
        ``<sink path>_checkpoint`` per insert), ``flush`` (the input is complete), ``processing_time`` and
        ``timeout_seconds`` (a micro-batch every interval until the timeout), as ``timeweave-job sql`` does.
    :param files, jars, packages, executor_memory, deploy_mode, keytab, principal, ...: any ``SparkSubmitHook``
        option (:data:`SPARK_SUBMIT_OPTIONS`), passed on to spark-submit.

    The metrics (XCom ``return_value``): ``statements``, ``inserts`` (per insert: ``table``, ``path``, ``rows``,
    ``mode``, ``dead_letter``), ``rows_out`` and ``dead_letter`` (totals).

    Example::

        enrich = TimeweaveSqlOperator(task_id="enrich", sql="sql/enrich_orders.sql")
        daily = TimeweaveSqlOperator(task_id="daily", sql='''
            CREATE TABLE bids (item STRING, price DOUBLE, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
              WITH ('connector' = 'filesystem', 'path' = '/data/bids/{{ ds }}', 'format' = 'parquet');
            CREATE TABLE counts (item STRING, window_start TIMESTAMP(3), n BIGINT)
              WITH ('connector' = 'filesystem', 'path' = '/data/counts/{{ ds }}', 'format' = 'parquet');
            INSERT OVERWRITE counts SELECT item, window_start, COUNT(*) FROM TABLE(
              TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTES)) GROUP BY item, window_start, window_end''')
    """

    template_fields: Sequence[str] = ("sql", "conn_id", "spark_conf", "metrics_file", "checkpoint")
    template_ext: Sequence[str] = (".sql",)
    template_fields_renderers: ClassVar[dict[str, str]] = {"sql": "sql", "spark_conf": "json"}
    ui_color = "#d9e8f5"

    def __init__(self, *, sql: str, mode: str = "batch", checkpoint: str | None = None, flush: bool = False,
                 processing_time: str | None = None, timeout_seconds: float | None = None, **kwargs: Any) -> None:
        super().__init__(config=sql, **kwargs)
        self.sql = sql
        self.mode = mode
        self.checkpoint = checkpoint
        self.flush = flush
        self.processing_time = processing_time
        self.timeout_seconds = timeout_seconds

    def _job_config(self) -> dict[str, Any]:
        return load_sql_job(self.sql)

    def _lineage_paths(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """Inputs: the filesystem tables the script declares and reads; outputs: its sinks, their dead letters and,
        in streaming mode, their late rows."""
        return script_datasets(self._job_config()["script"], self.mode)

    def _rows_written(self, role: str, metrics: Mapping[str, Any]) -> Any:
        table, _, kind = role.partition(" ")
        for insert in metrics.get("inserts") or ():
            if str(insert.get("table", "")).lower() == table.lower():
                if kind == "late":
                    return insert.get("late")
                return insert.get("dead_letter") if kind else insert.get("rows", insert.get("rows_out"))
        return None

    def execute(self, context: Context) -> dict[str, Any]:
        job = self._job_config()
        check_script(job["script"], self.mode)  # streaming's own rules (parquet sinks, appends) before Spark starts
        streaming = {"checkpoint": self.checkpoint, "flush": self.flush or None,
                     "processing_time": self.processing_time, "timeout_seconds": self.timeout_seconds}
        extra = {name: value for name, value in streaming.items() if value is not None} if self.mode == "streaming" else {}
        metrics = self._run_job(context, "sql", job, mode=self.mode, **extra)
        self.log.info("SQL script metrics: %s", json.dumps(metrics, sort_keys=True))
        return metrics


def _slice_indexes(only: Sequence[int | str] | str | None, slices: int) -> list[int] | None:
    """``only`` as a list of slice indexes, each checked against ``slices``; None (every slice) when empty.

    A template renders to text, so ``"0,2"``, ``"0 2"`` and ``"[0, 2]"`` are read as well as ``[0, 2]``.

    >>> _slice_indexes("[0, 2]", 3), _slice_indexes(["1"], 3), _slice_indexes("", 3)
    ([0, 2], [1], None)
    """
    if only is None:
        return None
    items = only.strip().strip("[]").replace(",", " ").split() if isinstance(only, str) else list(only)
    indexes = []
    for item in items:
        try:
            index = int(item)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"argument 'only': {item!r} is not a slice index (an integer)") from exc
        if not 0 <= index < slices:
            raise ValueError(f"argument 'only': slice index {index} is outside 0..{slices - 1} ({slices} slices)")
        indexes.append(index)
    return indexes or None
