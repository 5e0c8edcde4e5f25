"""The sliced backfill driver: ``[start, end)`` in N slices with operator state carried across edges.

The state a temporal join carries over a time edge ``e`` is, per key, the newest version event before
``e`` (the version in force at ``e``, or the delete that ended it) — exactly what the streaming
operator keeps after the watermark passes ``e``.  Each slice joins its left rows against
``carried state ∪ its own right events`` with the shared batch plan, then stores the state for its end
edge.  One look-ahead event per key (the first at or after the slice end) keeps ``valid_to`` equal to
the one-shot result.  So the union of the slices equals one batch run over ``[start, end)``.

Layout under ``output``: ``slice=<start ISO>/`` parquet per slice (re-running a slice overwrites only
it: idempotent), dead letters likewise under ``dead_letter``, state under ``state/edge=<ISO>/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from runtime.core.errors import SpecError
from runtime.core.spec import TemporalJoinSpec, VersionedTableSpec
from runtime.spark import render
from runtime.spark.dataframe import dead_letters
from runtime.spark.plan import reject_reason
from runtime.spark.schema import schema_kinds

SEQ = "__tw_seq"


@dataclass(frozen=True)
class Slice:
    index: int
    start: datetime
    end: datetime

    @property
    def label(self) -> str:
        return slice_label(self.start)


def slices_of(start: datetime, end: datetime, count: int) -> list[Slice]:
    """``count`` equal slices of ``[start, end)``.

    >>> [s.label for s in slices_of(datetime(2020, 1, 1), datetime(2020, 1, 2), 2)]
    ['2020-01-01T00-00-00', '2020-01-01T12-00-00']
    """
    if count < 1:
        raise SpecError("slices", f"must be >= 1, got {count}", where="backfill")
    if end <= start:
        raise SpecError("end", f"end {end} must be after start {start}", where="backfill")
    width = (end - start) / count
    edges = [start + width * i for i in range(count)] + [end]
    return [Slice(i, edges[i], edges[i + 1]) for i in range(count)]


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


def _newest_per_key(events: DataFrame, spec: VersionedTableSpec, descending: bool = True) -> DataFrame:
    """Per key, the last (or first) event by (time, sequence): a hash aggregate, no sort of the events."""
    order = F.struct(F.col(spec.time), F.col(spec.sequence))
    row = F.struct(*[F.col(c) for c in events.columns])
    pick = F.max_by(row, order) if descending else F.min_by(row, order)
    return events.groupBy(*spec.key).agg(pick.alias("__tw_row")).select("__tw_row.*")


def run_slices(
    left: DataFrame,
    right: DataFrame,
    spec: TemporalJoinSpec,
    start: datetime,
    end: datetime,
    slices: int,
    output: str,
    dead_letter: str,
    state: str,
    only: Sequence[int] | None = None,
) -> dict:
    """Run the backfill; returns metrics.  ``only`` re-runs the given slice indexes (their start state must exist).

    Example::

        run_slices(orders, rates, spec, datetime(2020, 1, 1), datetime(2020, 1, 2), 3,
                   "out/main", "out/dead_letter", "out/state")
    """
    spark = left.sparkSession
    spec.bind(schema_kinds(left.schema), schema_kinds(right.schema))
    spec, right = _with_sequence(spec, right)
    v = spec.versioned
    reject = reject_reason(spec, "right")
    valid_right = right.where(F.expr(f"({reject}) IS NULL"))
    metrics: dict = {"late": 0}
    plan = list(slices_of(start, end, slices))
    wanted = set(range(len(plan))) if only is None else set(only)
    done: list[Slice] = []
    for s in plan:
        if s.index not in wanted:
            continue
        edge_path = f"{state}/edge={s.label}"
        if s.index == 0:
            carried = _newest_per_key(valid_right.where(F.col(v.time) < F.lit(s.start)), v)
        else:
            try:
                carried = spark.read.schema(valid_right.schema).parquet(edge_path)
                carried.inputFiles()  # fails now, with our message, when the edge's state was never written
            except Exception as exc:
                raise SpecError(
                    "only", f"slice {s.index} needs the state at {s.start}; run slice {s.index - 1} first", where="backfill"
                ) from exc
        in_slice = (F.col(v.time) >= F.lit(s.start)) & (F.col(v.time) < F.lit(s.end))
        right_slice = valid_right.where(in_slice)
        lookahead = _newest_per_key(valid_right.where(F.col(v.time) >= F.lit(s.end)), v, descending=False)
        right_events = carried.unionByName(right_slice).unionByName(lookahead)
        left_in = (F.col(spec.left_time) >= F.lit(s.start)) & (F.col(spec.left_time) < F.lit(s.end))
        left_slice = left.where(left_in)
        sql = render.temporal_join_sql(spec, "{left}", "{right}", left.columns, right.columns)
        joined = spark.sql(sql, left=left_slice, right=right_events)
        joined.write.mode("overwrite").parquet(f"{output}/slice={s.label}")
        rejected = dead_letters(left_slice, right.where(in_slice), spec)
        rejected.write.mode("overwrite").parquet(f"{dead_letter}/slice={s.label}")
        # State for the next edge: newest event per key among carried + this slice (a delete included).
        _newest_per_key(carried.unionByName(right_slice), v).write.mode("overwrite").parquet(
            f"{state}/edge={slice_label(s.end)}"
        )
        done.append(s)
    # Rows with a NULL time belong to no slice: they are dead letters of the backfill as a whole.
    untimed = dead_letters(left.where(F.col(spec.left_time).isNull()), right.where(F.col(v.time).isNull()), spec)
    untimed.write.mode("overwrite").parquet(f"{dead_letter}/slice=none")
    # Metrics once at the end (one job each), not per slice.
    ran = F.lit(False)
    for s in done:
        ran = ran | ((F.col("__tw_t") >= F.lit(s.start)) & (F.col("__tw_t") < F.lit(s.end)))
    metrics["slices"] = len(done)
    metrics["rows_in_left"] = left.select(F.col(spec.left_time).alias("__tw_t")).where(ran).count()
    metrics["rows_in_right"] = right.select(F.col(v.time).alias("__tw_t")).where(ran).count()
    labels = [s.label for s in done]
    metrics["rows_out"] = spark.read.parquet(*[f"{output}/slice={label}" for label in labels]).count() if labels else 0
    metrics["dead_letter"] = spark.read.parquet(
        *[f"{dead_letter}/slice={label}" for label in [*labels, "none"]]
    ).count()
    metrics["watermark"] = end.isoformat()
    return metrics


def slice_label(at: datetime) -> str:
    """A path-safe name for a slice edge (microsecond precision, so narrow slices never collide)."""
    return at.strftime("%Y-%m-%dT%H-%M-%S") + (f".{at.microsecond:06d}" if at.microsecond else "")


__all__ = ["Slice", "run_slices", "slices_of", "timedelta"]
