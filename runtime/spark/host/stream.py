"""Building a host's stream: heartbeats, watermark delays, the operator step, the outputs of a micro-batch.

The pieces every registration's stream builder uses (see "Watermarks and heartbeats" and "Late rows" in
:mod:`timeweave.spark.host`).  Each registration keeps its own plan shape around them (where its watermarks
are taken, where it packs): a checkpoint's operators are numbered by the plan, so a plan must not change.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from timeweave.core.durations import parse_duration
from timeweave.spark.host.schema import BUCKET, HEARTBEAT, OP, TS
from timeweave.spark.schema import column as named


@dataclass(frozen=True)
class BatchOutputs:
    """One micro-batch split into its tagged outputs (lazy DataFrames over the batch), by
    :class:`~timeweave.core.operator.Tag`: ``main``, ``late``, ``dead_letter`` and, for an operator that
    emits a changelog, ``changelog`` (None: none)."""

    main: DataFrame
    late: DataFrame
    dead_letter: DataFrame
    changelog: DataFrame | None = None


def heartbeat_rows(heartbeat: DataFrame, like: DataFrame) -> DataFrame:
    """Heartbeat rows in ``like``'s internal schema: op :data:`HEARTBEAT`, bucket 0, the heartbeat's time as
    ``tw_ts``, every other column NULL.

    Bucket 0, never a NULL bucket: PySpark builds the grouping keys from pandas, where one NULL in an
    Arrow batch turns the batch's integer bucket column into floats, and a key 10.0 addresses other
    state than the key 10 (a later batch then misses the bucket's state).  The host drops heartbeat rows
    (:class:`~timeweave.spark.host.processor.HostProcessor`), so bucket 0 only sees the watermark move.
    """
    (time_column,) = heartbeat.columns
    columns = []
    for field in like.schema.fields:
        if field.name == OP:
            columns.append(F.lit(HEARTBEAT).cast(field.dataType).alias(OP))
        elif field.name == BUCKET:
            columns.append(F.lit(0).cast(field.dataType).alias(BUCKET))
        elif field.name == TS:
            columns.append(named(time_column).cast("timestamp").alias(TS))
        else:
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
    return heartbeat.select(*columns)


def delay_ms(delay: str, argument: str = "watermark_delay") -> int:
    """A ``withWatermark`` delay (``"5 seconds"``, ``"1500 milliseconds"``) in ms, as Spark subtracts it.

    >>> delay_ms("1500 milliseconds"), delay_ms("2 seconds")
    (1500, 2000)
    """
    return parse_duration(delay, argument) // 1000


def run_operator(internal: DataFrame, processor: StatefulProcessor, output: T.StructType, *, event_time: bool
                 ) -> DataFrame:
    """The operator step: ``internal`` (packs, grouped by bucket) through ``processor`` (append mode)."""
    return internal.groupBy(BUCKET).transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=output,
        outputMode="Append",
        timeMode="EventTime" if event_time else "None",
    )


__all__ = ["BatchOutputs", "delay_ms", "heartbeat_rows", "run_operator"]
