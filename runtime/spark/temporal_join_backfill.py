"""The temporal join's backfill registration: ``[start, end)`` in N slices, set-based, state at the slice edges.

The generic part (slicing, exact time literals, grouped slice writes, footers) is the backfill driver
:mod:`timeweave.spark.host.backfill`; this is the temporal join's set-based path on it, kept for speed: the
operator's per-key state at an edge is a relation, so all edges' states and the slices' outputs take a few
Spark jobs instead of a keyed pass over every row.

The state a temporal join carries over a time edge ``e`` is, per key, the newest version event before
``e`` (the version in force at ``e``, or the delete that ended it: the plan's version rule, rendered from
``timeweave__newest_sql``) — exactly what the streaming
operator keeps after the watermark passes ``e``.  A run of slices ``lo..hi`` starts from the state at
``lo``'s start edge (carried: written by the run that did slice ``lo-1``; at the very start, the newest
event per key before ``start``), and writes the states of the edges it passes in one job.

The versioned side is small next to the probe side, so a run builds the right half of the shared
plan once — per-key bucket statistics and the exploded validity intervals of ``carried state ∪ the
run's events ∪ one look-ahead event per key`` (the look-ahead keeps ``valid_to`` equal to the one-shot
result; a run from the first slice carries nothing and takes the whole versioned side) — and probes
its slices' left rows against it: inside the one probe job when all the run's slices share one (the
default), written once for the run's jobs otherwise.  The union of the slices
equals one batch run over ``[start, end)``.

A LEFT join keeps every left row (:attr:`~timeweave.core.spec.TemporalJoinSpec.keeps_unmatchable_left`): a
row with a NULL key is output unmatched in its slice; a row with a NULL time belongs to no slice and is
output unmatched under ``slice=none`` (the label its dead letter has in an INNER join), which every run
rewrites, so reading ``output`` whole gives the DataFrame door's rows over ``[start, end)`` plus the
NULL-time rows.  An INNER join dead-letters both, as before.

Layout under ``output`` (:func:`slice_target`, written through the one writer's slice target,
:class:`~timeweave.spark.host.writer.SliceWriter`): ``slice=<start ISO>/`` parquet per slice (re-running a
slice overwrites only it: idempotent), ``slice=none/`` (LEFT joins, see above), dead letters likewise under
``dead_letter``, state under ``state/edge=<ISO>/`` (plus, for runs of several probe jobs, the run's scratch
``_run_stats`` / ``_run_intervals``, the latter partitioned by the slices each interval overlaps: the run's
versions, no slice's output, written by the run itself).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial, reduce

from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.storagelevel import StorageLevel

from timeweave.core.errors import SpecError
from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
from timeweave.core.time import Edge, Slice, consecutive_runs, edge_text, slice_label
from timeweave.spark import render
from timeweave.spark.dataframe import dead_letters
from timeweave.spark.host.backfill import (
    DEAD_LETTER,
    MAIN,
    NO_SLICE,
    SLICE_COLUMN,
    at,
    concurrent_writers,
    fits_broadcast,
    footers_show_no_nulls,
    in_slices,
    observed,
    observed_metrics,
    plan_slices,
    slice_metrics,
    timed,
    total,
)
from timeweave.spark.host.writer import STATE_OUTPUT, SliceTarget, SliceWriter
from timeweave.spark.plan import reject_reason
from timeweave.spark.schema import column as named
from timeweave.spark.schema import schema_kinds
from timeweave.spark.temp_views import sql_over

SEQ = "__tw_seq"
SLICE = "__tw_slice"  # the intervals' partition column: the index of a slice they overlap
FIRST = "__tw_first"  # the intervals' first overlapping slice of the run


def _with_sequence(spec: TemporalJoinSpec, right: DataFrame) -> tuple[TemporalJoinSpec, DataFrame]:
    """Fix input order once, over the whole right input, so every slice breaks ties identically."""
    if spec.versioned.sequence:
        return spec, right
    v = spec.versioned
    versioned = VersionedTableSpec(v.key, v.time, v.format, op=v.op, delete_flag=v.delete_flag, sequence=SEQ, where=v.where)
    spec = TemporalJoinSpec(
        versioned, spec.left_time, spec.left_key, spec.how, spec.right_columns, spec.right_prefix,
        spec.validity, spec.predicate, spec.where,
    )
    order = F.expr(render.macro("timeweave__input_order"))
    return spec, right.withColumn(SEQ, order)


def _newest(events: DataFrame, v: VersionedTableSpec, group: str | None = None, oldest: bool = False) -> DataFrame:
    """Per key (and ``group``), the newest (``oldest``: the first) event of ``events`` by the plan's version rule
    (``timeweave__newest_sql``: the version in force after them); columns: the keys, ``group``, ``__tw_row`` (the
    event's other columns)."""
    columns = [c for c in events.columns if c != group]
    sql = render.macro("timeweave__newest_sql", render.relation("events"), columns, list(v.key), v.time, v.sequence,
                       group=group, oldest=oldest)
    return sql_over(events.sparkSession, render.formattable(sql), events=events)


def _edge_states(
    base: DataFrame | None, events: DataFrame, spec: VersionedTableSpec, plan: Sequence[Slice], lo: int, hi: int
) -> DataFrame:
    """Per key, the state at every edge ``lo+1 .. hi+1``, from ``base`` and the events of slices ``lo..hi``.

    ``base`` holds the state carried into ``lo`` (None: ``events`` also hold the events before ``lo``, which
    count as the slice before it); the newest per key counts.

    One pass for all edges (the newest event per (key, slice) and a window over the few resulting rows),
    not one Spark job per edge.  Events of slice ``j`` are all newer than those of slice ``j-1`` (the
    slices partition time), so the state at edge ``k`` is the newest event of the last slice before
    ``k`` in which the key had any event, or ``base``.
    """
    starts = [s.start for s in plan[lo : hi + 1]]
    slice_of = F.lit(lo - 1)  # the base state (or, without one, the events before `lo`) counts as the slice before `lo`
    for offset, edge in enumerate(starts):
        slice_of = F.when(named(spec.time) >= at(edge), F.lit(lo + offset)).otherwise(slice_of)
    tagged = events.withColumn("__tw_slice", slice_of)
    if base is not None:
        tagged = base.withColumn("__tw_slice", F.lit(lo - 1)).unionByName(tagged)
    groups = _newest(tagged, spec, group="__tw_slice")
    # a keyless table is one history: its groups are one per slice, ordered without a partition
    keyed = Window.partitionBy(*[named(k) for k in spec.key]) if spec.key else Window
    later = F.lead("__tw_slice").over(keyed.orderBy("__tw_slice"))
    # a group of slice j is the state at edges j+1 .. (the key's next slice with events), the last one up to hi+1
    edges = F.sequence(F.col("__tw_slice") + 1, F.coalesce(F.col("__tw_later"), F.lit(hi + 1)))
    labels = F.array(*[F.lit(slice_label(s.end)) for s in plan])
    return (
        groups.select("__tw_row", "__tw_slice", later.alias("__tw_later"))
        .select("__tw_row", F.explode(edges).alias("__tw_edge"))
        .where(F.col("__tw_edge") >= lo + 1)
        .select("__tw_row.*", F.element_at(labels, F.col("__tw_edge")).alias("edge"))
    )


def _by_slice(intervals: DataFrame, plan: Sequence[Slice], wanted: Sequence[int]) -> DataFrame:
    """``intervals`` with a ``__tw_slice`` column, one row per slice of ``wanted`` (sorted indexes) each interval overlaps.

    A left row of slice ``s`` at time ``x`` can only match an interval with ``from <= x < to`` (``to``
    NULL: open), which therefore overlaps ``[s.start, s.end)``: keeping those intervals (all their
    bucket rows) keeps every match, so a slice probes the same versions as against all intervals.
    An interval's overlaps are computed over the contiguous range of ``plan`` from the first to the
    last wanted slice, then kept for ``wanted`` only.
    """
    span = plan[wanted[0] : wanted[-1] + 1]
    start, end = F.col("__tw_t"), F.col("__tw_valid_to")
    # The slices an interval overlaps are a run of indexes: from the slice holding its start (or the
    # first one) to the last slice starting before its end.  CASE chains are compiled into the generated
    # code; an array of candidates filtered by a lambda (a higher-order function) is interpreted per row:
    # 0.7-0.8 JVM CPU-s more for the 200 k interval rows of a 100 k-version run.
    first = last = F.lit(span[0].index)
    for s in span[1:]:
        first = F.when(start >= at(s.start), F.lit(s.index)).otherwise(first)
        last = F.when(end.isNull() | (end > at(s.start)), F.lit(s.index)).otherwise(last)
    overlaps = (start < at(span[-1].end)) & (end.isNull() | (end > at(span[0].start)))
    # FIRST lets a job over several contiguous slices keep one row per interval (see `_group_intervals`)
    tagged = intervals.where(overlaps).withColumn(FIRST, first).withColumn(SLICE, F.explode(F.sequence(F.col(FIRST), last)))
    return tagged if len(wanted) == len(span) else tagged.where(F.col(SLICE).isin(wanted))


def _group_intervals(intervals: DataFrame, lo: int, hi: int, present: Sequence[int]) -> DataFrame:
    """The run's intervals a job over slices ``lo..hi`` probes, each once.

    An interval is stored once per slice it overlaps (contiguous indexes from ``FIRST``); within the
    group it is kept in the partition of its first slice there, so no left row meets it twice.  A group
    no interval overlaps probes another slice's intervals (they cannot match its rows either): Spark
    would drop an INNER probe against an empty relation whole, and the left count would never arrive.
    """
    if not any(lo <= p <= hi for p in present):
        chosen = intervals if not present else intervals.where(F.col(SLICE) == present[0])
        return chosen.drop(SLICE, FIRST)
    if lo == hi:  # one slice: its partition holds each interval overlapping it once
        return intervals.where(F.col(SLICE) == lo).drop(SLICE, FIRST)
    inside = (F.col(SLICE) >= lo) & (F.col(SLICE) <= hi)  # partition pruning picks the group's directories
    return intervals.where(inside & (F.col(SLICE) == F.greatest(F.col(FIRST), F.lit(lo)))).drop(SLICE, FIRST)


def slice_target(output: str, dead_letter: str, state: str) -> SliceTarget:
    """The set-based run's slice directories: main ``<output>/slice=<label>``, dead letters
    ``<dead_letter>/slice=<label>``, the state at each edge ``<state>/edge=<label of the edge's instant>``.

    >>> slice_target("out", "dead", "st").directory("state", "2020-01-01T06-00-00")
    'st/edge=2020-01-01T06-00-00'
    """
    return SliceTarget({MAIN: output, DEAD_LETTER: dead_letter, STATE_OUTPUT: state}, {STATE_OUTPUT: "edge"})


def _read_state(spark: SparkSession, valid_right: DataFrame, v: VersionedTableSpec, writer: SliceWriter, s: Slice
                ) -> DataFrame:
    """The carried state at ``s``'s start edge (written by the run of the slice before it)."""
    edge = slice_label(s.start)
    if not writer.exists(STATE_OUTPUT, edge):  # an edge without state is an empty directory, not a missing one
        raise SpecError(
            "only", f"slice {s.index} needs the state at {s.start}; run slice {s.index - 1} first", where="backfill"
        )
    carried = spark.read.schema(valid_right.schema).parquet(writer.target.directory(STATE_OUTPUT, edge))
    # earlier versions marked an edge with a row of NULLs (a state row's time is never NULL)
    return carried.where(named(v.key[0] if v.key else v.time).isNotNull())


def run_slices(
    left: DataFrame,
    right: DataFrame,
    spec: TemporalJoinSpec,
    start: Edge,
    end: Edge,
    slices: int,
    output: str,
    dead_letter: str,
    state: str,
    only: Sequence[int] | None = None,
    concurrent_slices: int = 2,
    slices_per_job: int | None = None,
    on_slice: Callable[[dict], None] | None = None,
) -> dict:
    """Run the backfill; returns metrics.  ``only`` re-runs the given slice indexes (their start state must exist).

    ``start`` / ``end`` are of the time columns' domain: datetimes (naive = UTC) for timestamps, dates for
    dates, numbers for numeric times (:func:`timeweave.core.time.slices_of` says how each domain is cut).
    A keyless versioned table's state at an edge is one row: the history's newest event before it.

    Each slice is a unit of output (``output/slice=<label>/``; re-running a slice replaces exactly its
    output), of dead letters and of state (the state at every slice edge is written under
    ``state/edge=<label>/``, so a later run can start at any edge).  How many Spark jobs write them is
    separate: ``slices_per_job`` contiguous slices of the run share one probe job, which scans their
    time range once and writes each row into its slice's directory.  The default (None) writes all the
    run's slices with one job, like the one-shot plan: that job builds the run's versions itself, so a
    run costs one probe job plus two small side jobs (edge states, dead letters) that run beside it.
    ``slices_per_job=1`` gives one probe job per slice, ``concurrent_slices`` of them at a time, against
    versions the run builds and writes once (two more jobs): each job's work is bounded by its slice,
    and the slices written before a failure stay written.  The rows are the same either way; the
    differences: a grouped job gives a slice without output rows no directory (one job per slice writes
    an empty file), and needs the left input to have no column named ``slice`` (the default then falls
    back to one job per slice).

    Spark jobs: the probe jobs and, beside them, the edge states (one job, written per edge with dynamic
    partition overwrite, counting the right side as it reads it), one job counting the run's left rows
    from their time and key columns, and the dead-letter job (only when a count found a row to reject).
    Rows written are counted from the written files' parquet footers; so are, for a LEFT join, the left
    rows, when the left input is a parquet scan whose footers count no NULL key or time (then no job
    reads the left side beside the probe).  Needs a classic session (it
    clears output and dead-letter directories and reads footers through the driver's Hadoop file system).

    ``on_slice(one)`` is called on the driver as each slice is written, in slice order: ``slice``,
    ``label``, ``start``, ``end``, ``rows_out`` (its files' footers), ``seconds`` (of the Spark job that
    wrote it) and ``job`` (that job's slice indexes: a grouped job writes several at once).

    Measured on 10 M orders x 100 k versions (``bench/RESULTS.md``): one-shot -> parquet vs this with
    10 slices, default grouping and one job per slice.

    Example::

        run_slices(orders, rates, spec, datetime(2020, 1, 1), datetime(2020, 1, 2), 3,
                   "out/main", "out/dead_letter", "out/state")
    """
    spark = left.sparkSession
    left_kinds, right_kinds = schema_kinds(left.schema), schema_kinds(right.schema)
    spec.bind(left_kinds, right_kinds)
    domain = spec.time_domain(left_kinds, right_kinds)
    plan, wanted = plan_slices(start, end, slices, only, "backfill", domain)
    if slices_per_job is None:
        slices_per_job = 1 if SLICE_COLUMN in left.columns else max(1, len(wanted))
    if slices_per_job < 1:
        raise SpecError("slices_per_job", f"must be >= 1, got {slices_per_job}", where="backfill")
    if slices_per_job > 1 and SLICE_COLUMN in left.columns:
        raise SpecError(
            "slices_per_job", f"writes the output partitioned by a column {SLICE_COLUMN!r}, which the left input already has",
            where="backfill",
        )
    spec, right = _with_sequence(spec, right)
    # A run of several probe jobs reads the (small) versioned side in each of its run-level jobs: cache it
    # once, with its input-order sequence computed once.  A run of one probe job reads it three times (the
    # probe's statistics and intervals, the edge states) and is faster scanning it each time: building the
    # cache sat on the probe's critical path (10 M orders x 100 k versions: 0.62 s and 1.35 JVM CPU-s less
    # per run, paired medians of 8 warm rounds).  Uncached, each job computes the same input order again,
    # as the one-shot plan's two scans do.
    groups = consecutive_runs(wanted, slices_per_job)
    cached = len(groups) > 1
    if cached:
        right = right.select("*").persist(StorageLevel.MEMORY_AND_DISK)  # our own entry: never unpersist the caller's
    try:
        return _run(
            spark, left, right, spec, plan, wanted, groups, SliceWriter(spark, slice_target(output, dead_letter, state)),
            state, end, concurrent_slices, slices_per_job, on_slice, domain,
        )
    finally:
        if cached:
            right.unpersist()


def _payload_columns(spec: TemporalJoinSpec, right_columns: Sequence[str]) -> list[str]:
    """The right columns the probe reads from a version: the output ones, or all of them when a predicate may read any."""
    if spec.predicate:
        return list(right_columns)
    chosen = {source for source, _ in spec.output_right_columns(dict.fromkeys(right_columns, "other"))}
    # named_struct() needs a field: a key column, or a keyless table's time
    return [c for c in right_columns if c in chosen] or list(spec.versioned.key[:1] or (spec.versioned.time,))


def _run(
    spark: SparkSession, left: DataFrame, right: DataFrame, spec: TemporalJoinSpec, plan: list[Slice],
    wanted: list[int], groups: list[list[int]], writer: SliceWriter, state: str, end: Edge,
    concurrent_slices: int, slices_per_job: int, on_slice: Callable[[dict], None] | None = None,
    domain: str = "timestamp",
) -> dict:
    done = [plan[i] for i in wanted]

    def finished(one: dict) -> None:
        if on_slice is not None:
            on_slice(one)

    valid_right = right.where(F.expr(f"({reject_reason(spec, 'right')}) IS NULL"))
    # The state carried into the run's first edge (fails, before anything is written, when it was never
    # written).  A run from the first slice carries none: the events before it are raw right rows.
    base = _read_state(spark, valid_right, spec.versioned, writer, plan[wanted[0]]) if done and wanted[0] > 0 else None
    # The edge states and the dead letters need nothing the probes write, so a side thread runs their
    # small jobs (`_side_jobs`) while this one builds the versions and probes.  The writers' setting holds
    # for the whole run: Spark reads it when it plans a write (no sort) and again when it runs it (which
    # writer), so a side job planned inside a narrower window and run after it wrote one partition's
    # file twice (FileAlreadyExistsException).
    with concurrent_writers(spark, slices_per_job), ThreadPoolExecutor(max_workers=1) as side:
        beside = side.submit(_side_jobs, spark, left, right, base, spec, plan, wanted, writer, domain)
        rows_out = _write_slices(
            spark, left, right, base, valid_right, spec, plan, wanted, groups, writer, state, concurrent_slices,
            slices_per_job, finished, domain,
        ) if done else 0
        rows_in_left, rows_in_right, dead_rows, untimed_out = beside.result()
    if rows_in_left is None:  # a LEFT join of a left input without NULL times: one row out per row in
        rows_in_left = rows_out
    rows_out += untimed_out
    return {
        "late": 0, "slices": len(done), "rows_in_left": rows_in_left, "rows_in_right": rows_in_right,
        "rows_out": rows_out, "dead_letter": dead_rows, "watermark": edge_text(end),
    }


def _span(v: VersionedTableSpec, plan: Sequence[Slice], lo: int, hi: int) -> Column:
    return (named(v.time) >= at(plan[lo].start)) & (named(v.time) < at(plan[hi].end))


def _side_jobs(
    spark: SparkSession, left: DataFrame, right: DataFrame, base: DataFrame | None, spec: TemporalJoinSpec,
    plan: Sequence[Slice], wanted: Sequence[int], writer: SliceWriter, domain: str = "timestamp",
) -> tuple[int | None, int, int, int]:
    """The run's work beside the probes; returns (left rows in the slices run — for a LEFT join plus those with
    a NULL time —, right rows in the slices run, dead letters, rows written under ``output/slice=none``).

    One job counts the left side (reading its time and key columns only) while the edge-state job counts
    the right side as it reads it; the dead-letter job runs after both, and only when they found a row to
    reject: clean input costs two small jobs, not three.  The two run at once so that both fit in the
    probe's latency-bound start (its small version stages), before its long stage takes both cores.

    A LEFT join gives every left row of the run with a time exactly one output row (a NULL key too: it is
    output unmatched), so when the left input's parquet footers show no NULL time no job reads it: its
    rows in the run are the rows written, which the caller knows once the probes committed (None here).
    Its left rows with a NULL time are output unmatched under ``slice=none`` (:func:`_write_untimed_left`).
    """
    done = [plan[i] for i in wanted]
    keeps = spec.keeps_unmatchable_left
    with ThreadPoolExecutor(max_workers=1) as beside:
        edges = beside.submit(_write_edge_states, base, right, spec, plan, done, writer) if done else None
        if keeps and footers_show_no_nulls(left, [spec.left_time]):
            rows_in_left, null_times, null_keys = None, 0, 0
        else:
            rows_in_left, null_times, null_keys = _count_left(left, spec, done)
            if keeps:
                rows_in_left += null_times  # output under slice=none
        if edges is None:  # nothing ran: no edge job counted the right side, whose NULL-time rows are still dead letters
            rows_in_right, right_rejects = 0, True
        else:
            rows_in_right, rejected = edges.result()
            right_rejects = rejected > 0
    untimed_out = _write_untimed_left(left, right, spec, writer, null_times > 0, domain) if keeps else 0
    dead_rows = _write_dead_letters(
        left, right, spec, done, writer, null_times=null_times > 0,
        left_rejects=not keeps and null_keys + null_times > 0, right_rejects=right_rejects,
    )
    return rows_in_left, rows_in_right, dead_rows, untimed_out


def _write_untimed_left(left: DataFrame, right: DataFrame, spec: TemporalJoinSpec, writer: SliceWriter, present: bool,
                        domain: str = "timestamp") -> int:
    """A LEFT join's left rows with a NULL time, output unmatched under ``output/slice=none``; returns how many.

    They belong to no slice (``slice=none``, the label the dead letter gives NULL-time rows), so every run
    rewrites them: reading ``output`` whole gives each once.  They are the DataFrame door's rows for them:
    the one plan over them and no version (a NULL time matches none), so no version is built.
    """
    writer.clear(MAIN, [NO_SLICE])  # also when there are none now: an earlier run's rows must not stay
    if not present:
        return 0
    sql = render.formattable(render.temporal_join_sql(
        spec, render.relation("left"), render.relation("right"), left.columns, right.columns, time_domain=domain,
    ))  # names may hold braces or quotes: the relations are the only format fields (render.formattable)
    untimed = sql_over(left.sparkSession, sql, left=left.where(named(spec.left_time).isNull()), right=right.where(F.lit(False)))
    writer.write(untimed, MAIN, NO_SLICE)
    return writer.rows(MAIN, [NO_SLICE])


def _count_left(left: DataFrame, spec: TemporalJoinSpec, done: Sequence[Slice]) -> tuple[int, int, int]:
    """(left rows in the slices ``done``, left rows with a NULL time, rows in those slices with a NULL key), in one job.

    It reads the time and key columns only.  It decides what the dead-letter job must scan: row-group
    statistics cannot always answer `time IS NULL` (Spark builds no parquet filter on a TIMESTAMP_NTZ
    column stored with isAdjustedToUTC=false), and one unanswerable test made the dead-letter scan read
    every left row (10 M orders: 2.4-3.4 JVM CPU-s).
    """
    time = named(spec.left_time)
    ran = in_slices(time, done)
    unmatchable = _any_null(spec.unmatchable_left_columns)  # in a slice, the time is set: a NULL key
    counts = left.select(time, *[named(c) for c in spec.left_key if c != spec.left_time]).where(ran | time.isNull()).agg(
        F.count_if(ran).alias("ran"), F.count_if(time.isNull()).alias("null_times"),
        F.count_if(ran & unmatchable).alias("null_keys"),
    ).first()
    return int(counts["ran"]), int(counts["null_times"]), int(counts["null_keys"])


def _write_edge_states(
    base: DataFrame | None, right: DataFrame, spec: TemporalJoinSpec, plan: Sequence[Slice], done: Sequence[Slice],
    writer: SliceWriter,
) -> tuple[int, int]:
    """Write the state at every edge the run passes (``state/edge=<label>/``) in one job; returns the right side's
    (rows in the slices run, rows to reject there or with a NULL time), counted as the job reads it.

    ``base`` is the state carried into the run's first edge; a run from the first slice has none and reads
    the raw events before it with the run's own (one filter, one scan of the right side).
    """
    v = spec.versioned
    lo, hi = done[0].index, done[-1].index
    time, reason = named(v.time), F.expr(reject_reason(spec, "right"))
    ran = in_slices(time, done)
    # One branch reads the right side, so the observation sees each row once.  A filter is never pushed
    # below an observation: it counts every right row.
    counters = [F.count_if(ran).alias("ran"), F.count_if(reason.isNotNull() & (ran | time.isNull())).alias("rejected")]
    seen = Observation()
    observed = right.observe(seen, *counters)
    valid = observed.where(reason.isNull())
    events = valid.where(time < at(plan[hi].end)) if base is None else valid.where(_span(v, plan, lo, hi))
    edge_states = _edge_states(base, events, v, plan, lo, hi)
    # An edge where no key has state now must not keep an earlier run's rows; after the commit, an edge where
    # no key has state yet exists as an empty directory (a run that fails before it leaves the edges missing:
    # a later run needing them says which slice to run first).  Marker rows in the write did the same and
    # cost the job a second input and files (~0.15 s per run).
    writer.write_slices(edge_states, STATE_OUTPUT, [slice_label(plan[k].end) for k in range(lo, hi + 1)], keep_empty=True)
    counts = observed_metrics(seen) or right.agg(*counters).first().asDict()
    return int(counts["ran"]), int(counts["rejected"])


def _write_slices(
    spark: SparkSession, left: DataFrame, right: DataFrame, base: DataFrame, valid_right: DataFrame, spec: TemporalJoinSpec,
    plan: list[Slice], wanted: list[int], groups: list[list[int]], writer: SliceWriter, state: str,
    concurrent_slices: int, slices_per_job: int, finished: Callable[[dict], None], domain: str = "timestamp",
) -> int:
    """Probe and write the wanted slices, one Spark job per group of ``groups``; returns the rows written.

    ``finished(one)`` gets each slice's figures (rows written, the writing job's seconds), in slice order,
    as soon as its job committed."""
    v = spec.versioned
    lo, hi = wanted[0], wanted[-1]
    # The versions every slice of this run probes: the carried state, the run's events and one look-ahead
    # event per key (so `valid_to` of a key's last version in the run is the one-shot value).  A run from
    # the first slice has no carried state: the events before it, the run's and all later ones are the whole
    # versioned side, which needs no look-ahead aggregate and gives the one-shot plan's versions.  Versions
    # carry only the columns the probe reads (smaller broadcasts).
    if lo == 0:
        run_events = valid_right
    else:
        lookahead = _newest(valid_right.where(named(v.time) >= at(plan[hi].end)), v, oldest=True).select("__tw_row.*")
        run_events = base.unionByName(valid_right.where(_span(v, plan, lo, hi))).unionByName(lookahead)
    payload = _payload_columns(spec, right.columns)
    # spark.sql formats the text: column names and the predicate keep their braces (render.formattable)
    stats_sql = render.formattable(render.versions_sql("stats", v, render.relation("right"), payload, time_domain=domain))
    intervals_sql = render.formattable(render.versions_sql(
        "intervals", v, render.relation("right"), payload, stats=render.relation("stats"), time_domain=domain))
    if len(groups) == 1:
        # One probe job: it builds the versions itself, like the one-shot plan, instead of two more jobs
        # writing and re-reading them.  Spark over-estimates the union above (each part as large as the whole
        # versioned side) and would plan shuffles around a broadcast-sized input, so when the versioned side
        # fits a broadcast the hint says what the one-shot plan gets from the input's size.
        hint = F.broadcast if fits_broadcast(spark, right) else (lambda df: df)
        stats = hint(sql_over(spark, stats_sql, right=run_events))
        intervals = hint(sql_over(spark, intervals_sql, right=run_events, stats=stats))
        present: list[int] = []
    else:
        stats_path, intervals_path = f"{state}/_run_stats", f"{state}/_run_intervals"
        sql_over(spark, stats_sql, right=run_events).write.mode("overwrite").parquet(stats_path)
        stats = spark.read.parquet(stats_path)
        run_intervals = sql_over(spark, intervals_sql, right=run_events, stats=stats)
        # Each job broadcasts only the intervals overlapping its slices (partition `__tw_slice=<index>`),
        # not all the run's: every slice built the broadcast hash relation of all of them (2 M orders x
        # 100 k versions, 10 slices: 6.0-7.3 -> 3.0-3.7 driver-side JVM CPU-s, 20 % of the run's JVM CPU).
        # Partition pruning picks a slice's directory on the driver, so the slices' scans share one plan.
        tagged = _by_slice(run_intervals, plan, wanted)
        # static: only this run's partitions may exist (a session default of dynamic would keep others)
        tagged.write.mode("overwrite").option("partitionOverwriteMode", "static").partitionBy(SLICE).parquet(intervals_path)
        # read once per run: every slice probes the same two relations (no re-listing per slice)
        intervals = spark.read.schema(tagged.schema).parquet(intervals_path)
        present = sorted({int(m.group(1)) for f in intervals.inputFiles() if (m := re.search(rf"/{SLICE}=(\d+)/", f))})
    sql = render.formattable(render.probe_join_sql(
        spec, render.relation("left"), render.relation("stats"), render.relation("intervals"), left.columns, right.columns,
        time_domain=domain))
    # No observation on the probes: one at the scan cut the generated code in two (10 M orders: ~3 JVM
    # CPU-s), and even one at the plan's end cost ~0.7 JVM CPU-s (every row through a non-generated
    # operator).  Rows written are counted from the written files' footers; the left rows by the side
    # job `_count_left`, which reads the time and key columns only.
    writes = []
    for group in groups:
        first, last = plan[group[0]], plan[group[-1]]
        left_in = (named(spec.left_time) >= at(first.start)) & (named(spec.left_time) < at(last.end))
        overlapping = intervals if len(groups) == 1 else _group_intervals(intervals, group[0], group[-1], present)
        if len(group) == 1:
            joined = sql_over(spark, sql, left=left.where(left_in), stats=stats, intervals=overlapping)
            writes.append(partial(writer.write, joined, MAIN, first.label))
            continue
        # The slice of a row inside the group: the last slice starting at or before its time.  Taken from the
        # output's copy of the left time column (the output keeps every left column under its name), so the
        # label does not travel through the joins.
        label = F.lit(first.label)
        for i in group[1:]:
            label = F.when(named(spec.left_time) >= at(plan[i].start), F.lit(plan[i].label)).otherwise(label)
        probed = sql_over(spark, sql, left=left.where(left_in), stats=stats, intervals=overlapping)
        joined = probed.withColumn(SLICE_COLUMN, label)
        # a slice of the group without rows now must not keep an earlier run's output: the writer clears it
        writes.append(partial(writer.write_slices, joined, MAIN, [plan[i].label for i in group]))
    # Groups are independent once the run's versions exist, so `concurrent_slices` of their jobs run at a
    # time: with input sorted by time a slice's rows sit in one or two parquet row groups, which one task
    # each reads, so a lone slice job keeps one core busy where the one-shot run keeps all busy; a second
    # job also overlaps one slice's fixed costs (broadcasts, commit) with another's work.
    with ThreadPoolExecutor(max_workers=max(1, concurrent_slices)) as pool:
        running = [pool.submit(timed, write) for write in writes]
        rows = 0
        for group, job in zip(groups, running, strict=True):
            seconds = job.result()  # the first failure propagates; slices already written stay (each is idempotent)
            for i in group:  # rows per slice from the footers of its directory (no Spark job)
                written = writer.rows(MAIN, [plan[i].label])
                rows += written
                finished(slice_metrics(plan[i], rows_out=written, seconds=seconds, job=list(group)))
    return rows


def _write_dead_letters(
    left: DataFrame, right: DataFrame, spec: TemporalJoinSpec, done: Sequence[Slice], writer: SliceWriter, *,
    null_times: bool, left_rejects: bool, right_rejects: bool,
) -> int:
    """Write the dead letters of the slices run; returns how many.

    Dead letters of all slices run, plus the rows with a NULL time (they belong to no slice: `slice=none`),
    in one job: the run's slice directories are cleared first, then written by partition, so re-running
    a slice still replaces exactly its dead letters.  A side the counts found clean is not read; with both
    clean there is no job.
    """
    labels = [*(s.label for s in done), NO_SLICE]
    if not (left_rejects or right_rejects):
        writer.clear(DEAD_LETTER, labels)
        return 0
    time = F.col("__tw_t")
    label = F.lit(NO_SLICE)
    for s in done:
        label = F.when((time >= at(s.start)) & (time < at(s.end)), F.lit(s.label)).otherwise(label)
    ran = in_slices(time, done)
    left_side, right_side = (
        df.withColumn("__tw_t", named(t)).where(ran | time.isNull()).withColumn("__tw_slice", label)
        for df, t in ((left, spec.left_time), (right, spec.versioned.time))
    )
    # A left row is rejected only for a NULL in one of the spec's unmatchable-left columns (its keys and time):
    # saying so as plain IS NULL tests lets the parquet scan skip every row group without NULLs (the CASE
    # expression of the reason cannot be pushed down).  Without NULL times the key tests alone decide.
    tested = [c for c in spec.unmatchable_left_columns if null_times or c != spec.left_time]
    left_side = left_side.where(_any_null(tested) & F.lit(left_rejects))
    right_side = right_side.where(F.lit(right_rejects))  # a constant false filter: Spark reads nothing
    if spec.versioned.sequence == SEQ:  # the input order `_with_sequence` added is no column of the right input
        right_side = right_side.drop(SEQ)
    dead_seen: list[Observation] = []
    rejected = dead_letters(left_side.drop("__tw_t"), right_side.drop("__tw_t"), spec, carry="__tw_slice")
    rejected = observed(rejected.withColumnRenamed("__tw_slice", writer.target.column(DEAD_LETTER)), dead_seen)
    writer.write_slices(rejected, DEAD_LETTER, labels)
    return total(dead_seen)


def _any_null(columns: Sequence[str]) -> Column:
    """Some of ``columns`` is NULL (false for none)."""
    return reduce(operator.or_, [named(c).isNull() for c in columns], F.lit(False))


__all__ = ["run_slices", "slice_target"]
