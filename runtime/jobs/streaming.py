"""The streaming job: file sources -> a streaming operator (temporal join, MATCH_RECOGNIZE, window
aggregation) -> parquet main / late / dead-letter outputs.

``python -m timeweave.jobs streaming --config job.json [--flush]`` or in-process :func:`run_streaming`.  The
config decides the job (:func:`timeweave.jobs.config.load_job_config`): a temporal join, or, with a
``match_recognize`` section, a streaming MATCH_RECOGNIZE over one input
(:mod:`timeweave.spark.match_recognize_streaming`), or, with a ``window`` section, window aggregation
(:mod:`timeweave.spark.window_streaming`); the registry (:mod:`timeweave.jobs.registry`) maps a section to its
operator.  What follows is written for the first two; the window job's outputs are in its module.

Layout under the checkpoint directory (``checkpoint`` in the config, default ``<output.path>_checkpoint``)::

    <checkpoint>/query/     Spark's checkpoint (offsets, commits, operator state)
    <checkpoint>/control/   the heartbeat source: JSON files with a TIMESTAMP ``ts`` and a flag ``end_of_input``

**Flushing at end of input.**  Rows wait in state until the watermark (the minimum of both sides'
watermarks) passes their time, so the last rows of a bounded input would wait forever.  Every job
reads the control directory as a third file stream and unions its rows into *both* sides before
their watermarks; :func:`write_heartbeat` drops a file there.  ``flush=True`` writes a heartbeat at
:data:`END_OF_INPUT` (a flag: its watermark is one ms past TIMESTAMP's last value, which no row can
reach, so a row at 9999-12-31 23:59:59.999 is an ordinary row) once every file available to the run is read (an ``available_now``
run: a first query reads the input, however many micro-batches the sources' ``maxFilesPerTrigger``
make, a second one from the same checkpoint reads the heartbeat; with no ``max...PerTrigger`` option on any
source the first micro-batch reads everything, so the heartbeat is written first and one query reads both,
the input's rows at the watermark they would have had without it; a ``processing_time`` run: when the
query is first idle): the watermark passes everything, every buffered row is emitted, and the stream
is closed — rows arriving later are late and go to the late output (Flink's end-of-input
``MAX_WATERMARK`` does the same).  Written before the input is read, the heartbeat's watermark would
pass the files a limited source had not read yet, and all their rows would be late.
``heartbeat=<timestamp>`` moves the watermark to a chosen time instead (an idle source, or a partial
flush), at the same point, and keeps the stream open.  A ``timeout`` that ends the run before the
input is read leaves the heartbeat unwritten (``flushed`` is false in the metrics): rows stay in state.

**Outputs are exactly-once.**  ``foreachBatch`` writes each output of batch ``N`` to a staging
directory ``<path>/_tw_staging/`` and moves its files to ``<path>/part-b<N>-<i>.<ext>``; a replayed
batch first deletes its own ``part-b<N>-*`` files, so a restart never duplicates rows.  Readers read
``<path>`` as a plain parquet directory (``_``-prefixed entries are ignored by Spark).

The query starts with :data:`QUERY_CONFIGS` set (Spark SQL confs that cut its per-row JVM work); the
query keeps its own copy of the session's conf, and the caller's session gets its own values back at once.

Late output: the left (MATCH_RECOGNIZE: input) columns + ``reason`` + ``watermark``.  Dead letter:
``side``, ``reason``, ``row`` (the original row as JSON), as the batch door's ``dead_letters``; a CSV / JSON
record that does not fit the source's schema is one too (:mod:`timeweave.spark.sources`: the reason names the
column and type or the wrong column count, ``row`` holds the fields as read and ``_corrupt_record``).  For
MATCH_RECOGNIZE the flush is the end of input: every partition is closed as the batch door closes it,
so a flushed job has written exactly the batch door's rows.

Metrics (this run): ``rows_in_left`` / ``rows_in_right`` (MATCH_RECOGNIZE: ``rows_in``; dead letters
included), ``rows_out``,
``late``, ``dead_letter``, ``watermark`` (Spark's, ISO), ``batches``, ``seconds``,
``rows_per_second``, ``durations_ms`` (Spark's per-phase times summed over the batches, plus the
state operator's update and commit times: where a slow run spent its time).

Per micro-batch the job logs one line and, with ``run_dir``, appends one ``batch`` event
(:mod:`timeweave.jobs.run_dir`) with :func:`timeweave.spark.progress.batch_figures`: rows in / out, late,
dead letters, watermark, lag, rows in state -- fed by a
:class:`~timeweave.spark.progress.TimeweaveProgressListener` it registers for its query.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timeweave.core.time import END_OF_INPUT, END_OF_INPUT_US, EndOfInput
from timeweave.jobs.config import SourceConfig, load_job_config, parse_utc_timestamp
from timeweave.jobs.registry import operator_of
from timeweave.spark.hadoop import HadoopFiles

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from timeweave.spark.host.writer import TaggedWriter

_log = logging.getLogger("timeweave.streaming")
#: Set by :func:`request_stop` (the CLI's SIGTERM / SIGINT handler): running queries stop after their batch.
_STOP = threading.Event()
_STOP_REASON: list[str] = []

QUERY_DIR = "query"
CONTROL_DIR = "control"
#: A heartbeat row: a time (``ts``), or the end-of-input flag.  Files written before the flag existed have no
#: ``end_of_input`` field: their rows read as time heartbeats.
CONTROL_SCHEMA = "ts TIMESTAMP, end_of_input BOOLEAN"
#: Spark SQL confs the streaming query runs with (the query keeps its own copy of the session's conf,
#: taken at start; the caller's session gets its values back right after).  ``maxBytesPerBatch`` at
#: Int.MaxValue: Spark then skips its per-row byte check when filling the Arrow batches of the packing
#: step (``mapInArrow``); below it, ``BatchedPythonArrowInput`` recomputes the batch's buffer sizes after
#: every row (``ArrowWriter.sizeInBytes``, walking each struct child): ~10 % of the executors' CPU of a
#: micro-batch (JFR).  Batches stay bounded by ``maxRecordsPerBatch`` rows, and the packs by ``PACK_BYTES``.
#: ``outputTimestampType`` TIMESTAMP_MICROS: the outputs' timestamps as parquet's exact µs type instead of the
#: deprecated INT96 (a Julian day and nanoseconds, converted per value); readers get the same values.
QUERY_CONFIGS = {
    "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


@dataclasses.dataclass(frozen=True)
class StreamingRun:
    """What an operator's streaming registration (``stream`` in its job module, :mod:`timeweave.jobs.registry`)
    hands the streaming job: its tagged ``stream`` (a StreamingJoin / StreamingMatch, written by the one
    :class:`~timeweave.spark.host.writer.TaggedWriter`), how the sources' malformed records become its dead letters (``dead_letter_columns``, see
    :func:`_with_malformed`), the run's ``metrics`` counters at zero, and ``labels`` added to the final metrics.
    """

    stream: Any
    dead_letter_columns: Mapping[str, str]
    metrics: Mapping[str, Any]
    labels: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def checkpoint_root(job: Any) -> str:
    """The job's checkpoint directory (``checkpoint`` or ``<output.path>_checkpoint``)."""
    return job.checkpoint or f"{job.output_path}_checkpoint"


def read_stream(spark: SparkSession, source: SourceConfig) -> DataFrame:
    """A file source as a streaming DataFrame with the configured schema and options; CSV / JSON records
    tagged malformed or not (:func:`timeweave.spark.sources.read_source`)."""
    from timeweave.spark.sources import read_source

    return read_source(spark.readStream, source.format, source.schema, source.options, source.path)


def _with_malformed(stream: Any, dead: Sequence[DataFrame], columns: Mapping[str, str]) -> Any:
    """``stream`` (a StreamingJoin / StreamingMatch) whose tagged output also carries the sources' malformed
    records as dead letters (``columns``: tag column -> dead-letter column, see ``sources.as_tagged_dead``).

    The records join the operator's output after it, in the same query: the batch writer splits and counts
    them with the operator's own dead letters (they never reach the operator: their values are not the input's).
    """
    from timeweave.spark.sources import as_tagged_dead

    if not dead:
        return stream
    tagged = stream.stream
    for one in dead:
        tagged = tagged.unionByName(as_tagged_dead(one, tagged.schema, columns))
    return dataclasses.replace(stream, stream=tagged)


def write_heartbeat(spark: SparkSession, checkpoint: str, at: datetime | str | EndOfInput) -> None:
    """Append a heartbeat at ``at`` (UTC), or the end-of-input mark, to the job's control source; the next
    run's watermark moves there (:data:`END_OF_INPUT`: past every time, the stream's end).

    Example::

        write_heartbeat(spark, "chk/orders_enriched", END_OF_INPUT)   # what flush=True does
        write_heartbeat(spark, "chk/orders_enriched", "2026-01-01T12:00:00")   # an idle source
    """
    if isinstance(at, EndOfInput):
        # A flag, not a time: every TIMESTAMP is some row's possible event time (see heartbeat_times).
        row: tuple[Any, ...] = (None, True)
    else:
        # Aware UTC: PySpark converts a naive datetime through the machine's local time zone, which could push
        # a heartbeat near the range's ends out of it (or move any heartbeat by the zone's offset).
        row = (_timestamp(at, "heartbeat").replace(tzinfo=UTC), None)
    spark.createDataFrame([row], CONTROL_SCHEMA).coalesce(1).write.mode("append").json(f"{checkpoint}/{CONTROL_DIR}")


def heartbeat_times(control: DataFrame) -> DataFrame:
    """The control source's rows as heartbeat times (one TIMESTAMP column ``ts``): a time heartbeat's own
    time, the end-of-input flag's :data:`~timeweave.core.time.END_OF_INPUT_US` (one ms past TIMESTAMP's last
    value: no row moves the watermark there, so only the flag closes the stream)."""
    from pyspark.sql import functions as F

    end = F.timestamp_micros(F.lit(END_OF_INPUT_US))
    return control.select(F.when(F.col("end_of_input"), end).otherwise(F.col("ts")).alias("ts"))


def _timestamp(value: datetime | str, argument: str) -> datetime:
    return parse_utc_timestamp(value, argument, where="streaming job")


def run_streaming(
    config: Any | Mapping[str, Any] | str | Path,
    spark: SparkSession | None = None,
    *,
    flush: bool = False,
    heartbeat: datetime | str | None = None,
    timeout_seconds: float | None = None,
    until_idle: bool = True,
    run_dir: str | Path | None = None,
    on_batch: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the streaming job of ``config``; returns metrics (rows in/out, late, dead letters, watermark...).

    ``config`` is a temporal-join or a MATCH_RECOGNIZE job config (:func:`~timeweave.jobs.config.load_job_config`).

    With ``trigger.available_now`` the query processes what is there and stops.  With
    ``trigger.processing_time`` it runs until ``timeout_seconds`` (or forever when None), and with
    ``until_idle`` stops once all input is processed and no batch is pending (a bounded run).
    ``run_dir``: record the run there for the run report (:mod:`timeweave.jobs.run_dir`: the config, one
    event per micro-batch, the metrics); a restart appends.
    ``on_batch`` is called on the driver after every micro-batch with the run's counts so far (the job
    CLI's ``--metrics-file`` progress).

    Example::

        metrics = run_streaming("job.json", flush=True)
        metrics["rows_out"], metrics["late"], metrics["watermark"]
    """
    job = load_job_config(config)
    recorder = None
    if run_dir is not None:
        from timeweave.jobs.run_dir import RunRecorder

        recorder = RunRecorder(
            run_dir, "streaming", operator_of(job).name, job.raw, {"main": job.output_path, "late": job.late_path, "dead_letter": job.dead_letter_path},
            {"flush": flush, "heartbeat": heartbeat, "timeout_seconds": timeout_seconds},
        )
    from timeweave.jobs.run_dir import run_recorded

    return run_recorded(
        recorder, lambda: _run_streaming(job, spark, flush, heartbeat, timeout_seconds, until_idle, recorder, on_batch),
    )


def _run_streaming(
    job: Any, spark: SparkSession | None, flush: bool, heartbeat: datetime | str | None,
    timeout_seconds: float | None, until_idle: bool, recorder: Any,
    on_batch: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    if spark is None:
        from timeweave.jobs.session import get_session

        spark = get_session()

    checkpoint = checkpoint_root(job)
    _hadoop_mkdirs(spark, f"{checkpoint}/{CONTROL_DIR}")
    # The heartbeat is written only once the input there is read (see _run_bounded): written first, a
    # source limited per micro-batch (maxFilesPerTrigger) would read its later files behind the moved
    # watermark, and all of them would be late.
    mark = END_OF_INPUT if flush else (_timestamp(heartbeat, "heartbeat") if heartbeat is not None else None)
    control = heartbeat_times(spark.readStream.format("json").schema(CONTROL_SCHEMA).load(f"{checkpoint}/{CONTROL_DIR}"))
    paths = {"main": job.output_path, "late": job.late_path, "dead_letter": job.dead_letter_path}
    from timeweave.spark.host.writer import TaggedWriter  # the one writer of every operator's tagged outputs
    from timeweave.spark.sources import carry_malformed, split_malformed

    operator = operator_of(job)
    jobs = operator.module()
    rows, branches = {}, []
    one_scan = _one_scan(spark, checkpoint, getattr(jobs, "ONE_SCAN_MARK", ONE_SCAN_MARK))
    for side, source in jobs.sources(job).items():
        tagged = read_stream(spark, source)
        rows[side], dead = split_malformed(tagged, side)
        if dead is not None:
            branches.append((dead, carry_malformed(rows[side], tagged, side) if one_scan else None))
    run = jobs.stream(spark, job, rows, control)
    # a source whose malformed records the operator's input took is scanned once: no dead-letter branch for it
    malformed = [dead for dead, carried in branches if carried is None or not carried.consumed]
    stream = _with_malformed(run.stream, malformed, run.dead_letter_columns)
    metrics = dict(run.metrics)
    batch_writer = TaggedWriter(spark, stream, paths, metrics)
    batch_writer.on_batch = on_batch
    query_name = f"timeweave_{zlib.crc32(checkpoint.encode()):08x}"
    writer = (
        stream.stream.writeStream.foreachBatch(batch_writer)
        .option("checkpointLocation", f"{checkpoint}/{QUERY_DIR}")
        .queryName(query_name)
    )
    if job.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=job.processing_time)
    timeout = timeout_seconds if timeout_seconds is not None else _config_timeout(job)
    started = time.monotonic()
    progress_log = _ProgressLog(batch_writer, recorder)
    # Spark Connect runs listeners in a server-side copy that cannot see this process's counts: poll only.
    listener = None if type(spark).__module__.startswith("pyspark.sql.connect") else progress_log.listener(query_name)
    if listener is not None:
        spark.streams.addListener(listener)
    try:
        queries, marked = _run_bounded(
            spark, writer, job, timeout, until_idle,
            (lambda: write_heartbeat(spark, checkpoint, mark)) if mark is not None else None, progress_log,
            one_pass=not any(rate_limited(source) for source in jobs.sources(job).values()),
        )
    except Exception as error:
        if batch_writer.failure is not None:
            # the batch's own error, whole (Spark's query error carries a short form of it, see MicroBatchFailed)
            raise batch_writer.failure from error
        raise
    finally:  # a stop request is this run's, even when the run fails
        stopped = (_STOP_REASON[0] if _STOP_REASON else "requested") if _STOP.is_set() else None
        _STOP.clear()
        if listener is not None:
            _drain_listener_bus(spark)
            spark.streams.removeListener(listener)
    seconds = time.monotonic() - started
    progress = next((q.lastProgress for q in reversed(queries) if q.lastProgress), None) or {}
    metrics["watermark"] = (progress.get("eventTime") or {}).get("watermark")
    # Where the time went, summed over the run's batches (Spark's durationMs phases, plus state store).
    phases: dict[str, int] = {}
    for batch_progress in (p for q in queries for p in q.recentProgress):
        for phase, ms in (batch_progress.get("durationMs") or {}).items():
            phases[phase] = phases.get(phase, 0) + int(ms)
        for operator in batch_progress.get("stateOperators") or []:
            for phase in ("allUpdatesTimeMs", "commitTimeMs"):
                phases[f"state.{phase}"] = phases.get(f"state.{phase}", 0) + int(operator.get(phase) or 0)
    metrics["durations_ms"] = phases
    metrics["seconds"] = round(seconds, 3)
    rows_in = metrics.get("rows_in", 0) + metrics.get("rows_in_left", 0) + metrics.get("rows_in_right", 0)
    metrics["rows_per_second"] = round(rows_in / seconds, 1) if seconds > 0 else None
    metrics["mode"] = job.mode
    metrics["flushed"] = bool(flush) and marked
    if stopped is not None:
        metrics["stopped"] = stopped
    if mark is not None and not marked:
        _log.warning("the %s was not applied: the run ended (%s) before all available input was read",
                     "flush" if flush else "heartbeat", f"stopped by {stopped}" if stopped else "timeout")
    metrics.update(run.labels)
    return metrics


def _start(spark: SparkSession, writer: Any) -> StreamingQuery:
    """Start ``writer``'s query with :data:`QUERY_CONFIGS` (the query's copy only: the session's values come back)."""
    saved = {key: spark.conf.get(key, None) for key in QUERY_CONFIGS}
    for key, value in QUERY_CONFIGS.items():
        spark.conf.set(key, value)
    try:
        return writer.start()
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


class _ProgressLog:
    """One ``timeweave.streaming`` log line (and, with a run directory, one ``batch`` event) per micro-batch:
    the writer's counts and Spark's figures (:func:`timeweave.spark.progress.batch_figures`).

    Fed by a :class:`~timeweave.spark.progress.TimeweaveProgressListener` (each batch as it ends) and polled
    from the thread that waits for the query (:func:`_wait`, :func:`_await_processing_time`) and once when a
    query ends: Spark delivers listener events asynchronously, so the poll makes sure every batch is
    reported before the run returns; each batch is reported once.
    """

    def __init__(self, writer: TaggedWriter, recorder: Any = None) -> None:
        self._writer = writer
        self._recorder = recorder
        self._logged: set[tuple[str | None, int]] = set()
        self._lock = threading.Lock()

    def listener(self, query_name: str) -> Any:
        """A listener reporting this job's query (``query_name``) through :meth:`report`."""
        from timeweave.spark.progress import TimeweaveProgressListener

        return TimeweaveProgressListener(self.report, query_name=query_name, counts=self._counts)

    def _counts(self, run_id: str | None, batch_id: int) -> dict[str, int] | None:
        return self._writer.batch_counts.get(batch_id)

    def report(self, figures: dict[str, Any]) -> None:
        """Log and record one batch's figures, once."""
        from timeweave.spark.progress import format_figures

        key = (figures.get("run_id"), int(figures["batch_id"]))
        with self._lock:
            if key in self._logged:
                return
            self._logged.add(key)
            self._writer.batch_counts.pop(key[1], None)  # reported: keep a long run's memory flat
        _log.info("%s", format_figures(figures))
        if self._recorder is not None:
            self._recorder.batch(figures)

    def poll(self, query: StreamingQuery, everything: bool = False) -> None:
        from timeweave.spark.progress import batch_figures

        progresses = query.recentProgress if everything else [query.lastProgress] if query.lastProgress else []
        for progress in progresses:
            if (progress["runId"], int(progress["batchId"])) in self._logged:
                continue
            self.report(batch_figures(progress, self._counts(progress["runId"], int(progress["batchId"]))))


def request_stop(reason: str = "requested") -> None:
    """Ask this process's streaming job to stop after its current micro-batch (safe in a signal handler).

    The job's query finishes the micro-batch it runs (outputs written, offsets and state committed),
    starts no other, and :func:`run_streaming` returns its metrics with ``stopped`` set to ``reason``;
    no flush is applied.  A run consumes the request; a request made before a run starts stops it at once.

    Example::

        signal.signal(signal.SIGTERM, lambda signum, frame: request_stop("SIGTERM"))
    """
    _STOP_REASON[:] = [reason]
    _STOP.set()


def _drain_listener_bus(spark: SparkSession, timeout_ms: int = 10_000) -> None:
    """Deliver the queries' last events to this process's listener before it is removed.

    Spark's listener bus is asynchronous: a progress event still queued when the job ends was dispatched to
    the Python listener after this process had closed its callback server, and Spark logged a
    ``Py4JException ... onQueryProgress`` stack trace on a normal SIGTERM stop (seen under load).  Waiting
    for the bus to empty (bounded) delivers it first; on a Spark without that method nothing is waited for.
    """
    try:
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(timeout_ms)
    except Exception as error:  # a timeout or an internal API that moved: the stop goes on
        _log.debug("listener bus not drained: %s", error)


def _stop_after_batch(spark: SparkSession, query: StreamingQuery) -> None:
    """End ``query`` once its current micro-batch is committed, without interrupting the batch.

    ``StreamingQuery.stop()`` interrupts the batch's tasks mid-write: the state store then reports
    ``STATE_STORE_OPERATION_OUT_OF_ORDER`` and a ``NullPointerException`` (the replay on restart repairs
    the data, but the stop looks like a crash).  Spark's micro-batch loop checks the query's state
    before and after every batch (``MicroBatchExecution.executeOneBatch``: ``isActive``), so setting
    that state to ``TERMINATED`` ends the loop after the running batch, the way ``stop()`` would without
    the interrupt.  On a Spark without that internal state the query is stopped between triggers.
    """
    _log.info("stop requested (%s): ending after the current micro-batch", _STOP_REASON[0] if _STOP_REASON else "")
    try:
        jvm = spark.sparkContext._jvm
        terminated = (jvm.java.lang.Class.forName("org.apache.spark.sql.execution.streaming.runtime.TERMINATED$")
                      .getField("MODULE$").get(None))
        query._jsq.streamingQuery().state().set(terminated)
    except Exception:  # any py4j / reflection failure: fall back to stop() between triggers
        _log.warning("graceful stop unavailable on this Spark version; stopping between micro-batches")
        while query.isActive and query.status.get("isTriggerActive"):
            time.sleep(0.02)
        query.stop()
        return
    query.awaitTermination()


def _wait(spark: SparkSession, query: StreamingQuery, timeout: float | None, log: _ProgressLog) -> bool:
    """``query.awaitTermination(timeout)`` that also honours :func:`request_stop`; False on timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        # awaitTermination refuses a timeout <= 0
        step = 0.25 if deadline is None else max(0.001, min(0.25, deadline - time.monotonic()))
        if query.awaitTermination(step):
            return True
        log.poll(query)
        if _STOP.is_set():
            _stop_after_batch(spark, query)
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False


#: A checkpoint written by a query that scans each source once (its malformed records in the operator's input):
#: a directory beside ``query/``.  A checkpoint with offsets but without it was written with a second scan of each
#: CSV / JSON source for its malformed records, and keeps that plan (Spark refuses a changed number of sources).
#: An operator whose input projection took the malformed records in a later release names its own mark (its
#: jobs module's ``ONE_SCAN_MARK``): its checkpoints written before carry this one with a two-scan plan.
ONE_SCAN_MARK = "one-scan-sources"


def _one_scan(spark: SparkSession, checkpoint: str, name: str = ONE_SCAN_MARK) -> bool:
    """Whether the query may read each source once (see :data:`ONE_SCAN_MARK`; ``name``: the operator's mark);
    marks a new checkpoint."""
    from timeweave.spark.hadoop import HadoopFiles

    files = HadoopFiles(spark)
    mark = f"{checkpoint}/{name}"
    if files.exists(mark):
        return True
    if files.exists(f"{checkpoint}/{QUERY_DIR}/offsets"):
        return False  # written by a two-scan query: its plan stays
    files.mkdirs(mark)
    return True


def rate_limited(source: Any) -> bool:
    """Whether a source reads its available input in several micro-batches (``maxFilesPerTrigger``,
    ``maxBytesPerTrigger``, any ``max...PerTrigger`` option): then a heartbeat read with its first micro-batch
    would pass the rows of the later ones.

    >>> from timeweave.jobs.config import SourceConfig
    >>> rate_limited(SourceConfig("in", "csv", "a INT", {"maxFilesPerTrigger": "1"})), rate_limited(SourceConfig("in", "csv", "a INT"))
    (True, False)
    """
    return any(name.lower().startswith("max") and name.lower().endswith("pertrigger") for name in source.options)


def _run_bounded(
    spark: SparkSession, writer: Any, job: Any, timeout: float | None,
    until_idle: bool, mark: Callable[[], None] | None, log: _ProgressLog, one_pass: bool = False,
) -> tuple[list[StreamingQuery], bool]:
    """Run ``writer``'s query; with ``mark`` (writes a heartbeat), call it once all available input is read.

    Returns the queries run and whether ``mark`` was applied.  The heartbeat's watermark passes rows still
    unread, so it must come after them: an ``available_now`` run reads what is there in one query (as many
    micro-batches as the sources' limits make), then ``mark`` writes the heartbeat and a second query from
    the same checkpoint reads it (its micro-batch moves the watermark, the no-data batch after it emits
    what the watermark passed).  With ``one_pass`` (no source limits its micro-batches: everything available
    is read by the first one) ``mark`` comes first and one query reads the input and the heartbeat in one
    micro-batch, whose rows all see the watermark they would have seen without it; the no-data batch after it
    emits everything, as the second query would (one query start, its first-batch planning and two
    micro-batches fewer).  A ``processing_time`` query runs until idle (nothing pending), ``mark``
    writes the heartbeat while it runs, and it goes on (until idle again with ``until_idle``).  When
    ``timeout`` ends the run before the input is read, ``mark`` is not applied: rows stay in state, none late
    (in one pass the heartbeat is already written: the run says so, and the next run applies it).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    queries: list[StreamingQuery] = []

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    if job.available_now and one_pass and mark is not None:
        if _STOP.is_set():
            return queries, False
        mark()
        finished = _run_available_now(spark, writer, queries, left(), log)
        if not finished:
            _log.warning("the run ended before its input was read; its end-of-input heartbeat is written and the "
                         "next run of this checkpoint applies it")
        return queries, finished and not _STOP.is_set()
    if job.available_now:
        for phase in (0, 1):
            if _STOP.is_set():
                return queries, False
            if phase == 1:
                if mark is None or (deadline is not None and left() <= 0):
                    return queries, False
                mark()
            if not _run_available_now(spark, writer, queries, left(), log):  # the timeout ended it
                return queries, False
        return queries, not _STOP.is_set()
    if _STOP.is_set():
        return queries, False
    interval = _interval_seconds(job.processing_time)
    query = _start(spark, writer)
    queries.append(query)
    try:
        if mark is None:
            _await_processing_time(spark, query, log, left(), until_idle, interval)
            return queries, False
        if not _await_processing_time(spark, query, log, left(), True, interval):
            return queries, False
        marked_after = (query.lastProgress or {}).get("batchId", -1)
        mark()
        # Idle counts only after a micro-batch that started after the heartbeat was written (it read it):
        # on a loaded machine the file source may take longer than the quiet period to list it.
        _await_processing_time(spark, query, log, left(), until_idle, interval, after_batch=marked_after + 1)
        return queries, not _STOP.is_set()
    finally:
        if query.isActive:
            query.stop()
        log.poll(query, everything=True)
        _raise_failure(query)


def _run_available_now(spark: SparkSession, writer: Any, queries: list[StreamingQuery], timeout: float | None,
                       log: _ProgressLog) -> bool:
    """Start ``writer``'s query (appended to ``queries``), wait for it until ``timeout``, stop it and log its last
    batches; True when it finished (read everything available), False when the timeout ended it."""
    query = _start(spark, writer)
    queries.append(query)
    try:
        finished = _wait(spark, query, timeout, log)
        _raise_failure(query)
    finally:
        if query.isActive:
            query.stop()
        log.poll(query, everything=True)
    return finished


def _raise_failure(query: StreamingQuery) -> None:
    if query.exception() is not None:
        raise query.exception()


def _await_processing_time(
    spark: SparkSession, query: StreamingQuery, log: _ProgressLog, timeout: float | None, until_idle: bool,
    interval: float, after_batch: int = 0,
) -> bool:
    """Wait for a processing-time query: until ``timeout``, until idle (nothing pending for a while), or
    until :func:`request_stop` (then the query ends after its current micro-batch).

    True when it stopped waiting because the query was idle; idle needs a micro-batch ``>= after_batch``
    to have run.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    quiet_needed = max(2.0, 3 * interval)
    last_batch, quiet_since = None, time.monotonic()
    while query.isActive:
        if deadline is not None and time.monotonic() >= deadline:
            return False
        query.awaitTermination(0.25)
        log.poll(query)
        if _STOP.is_set():
            _stop_after_batch(spark, query)
            return False
        if not until_idle:
            continue
        progress = query.lastProgress
        status = query.status
        batch = progress.get("batchId") if progress else None
        if batch != last_batch or status.get("isDataAvailable") or status.get("isTriggerActive"):
            last_batch, quiet_since = batch, time.monotonic()
        elif batch is not None and batch >= after_batch and time.monotonic() - quiet_since >= quiet_needed:
            return True
    return False


def _hadoop_mkdirs(spark: SparkSession, path: str) -> None:
    hadoop = HadoopFiles(spark)
    p = hadoop.path(path)
    hadoop.fs(p).mkdirs(p)


def _interval_seconds(text: str | None) -> float:
    from timeweave.jobs.config import parse_duration

    return parse_duration(text or "1 second", "trigger.processing_time") / 1e6


def _config_timeout(job: Any) -> float | None:
    value = (job.raw.get("trigger") or {}).get("timeout")
    if value is None:
        return None
    from timeweave.jobs.config import parse_duration

    return parse_duration(value, "trigger.timeout") / 1e6


__all__ = ["END_OF_INPUT", "checkpoint_root", "heartbeat_times", "read_stream", "request_stop", "run_streaming",
           "write_heartbeat"]
