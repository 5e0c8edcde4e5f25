"""The streaming host's internal columns: what every operator's input rows carry (see :mod:`timeweave.spark.host`).

Names are plain identifiers: PySpark 4.3 rebuilds a ``transformWithStateInPandas`` operator's pandas input from
namedtuples, which rename fields starting with "_" to "_0", "_1", ...
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import types as T

from timeweave.core.errors import SpecError

BUCKET = "tw_b"  #: the operator's grouping key: a hash bucket of the operator's key ("Buckets")
KEY_TEXT = "tw_key"  #: the operator's key as one canonical string: the key of the per-key state inside a bucket
OP = "tw_op"  #: what a row is: an operator-defined element code, a dead letter, or a heartbeat (a small int)
TIME = "tw_time"  #: the event time, BIGINT µs since the epoch (never a watermarked column: "Late rows")
ROW = "tw_row"  #: the row's payload: the wire format's JSON (:mod:`timeweave.spark.host.wire`), or a dead letter's
SEQ = "tw_seq"  #: an optional sequence column (tie-breaker) of an operator's elements: exact BIGINT
TS = "tw_ts"  #: the watermarked timestamp, dropped before the operator ("Late rows")

#: ``tw_op`` of a heartbeat row: it only moves the watermark; the host drops it before the operator.
HEARTBEAT = 3
#: ``tw_op`` of a source's malformed record carried in a one-input operator's input (``stream.keyed_packs``): in
#: the ``dead_ops`` of every processor fed by ``keyed_packs`` (a two-input registration's own codes may reuse 6); its ``tw_row`` is ``{"reason": ..., "row": ...}`` (``stream.dead_letters``).
MALFORMED_ROW = 6
#: ``tw_ts`` of a row that must never move a watermark (dead letters; Spark's watermark is the largest time seen).
DEAD_TS = "0001-01-01 00:00:00"

#: Default number of buckets: enough for every shuffle partition of a small cluster to get some, few
#: enough that a micro-batch makes a handful of operator invocations per partition.
DEFAULT_BUCKETS = 16

#: The state schemas of the host's two state variables: the bucket's MapState of key cells and its timer index.
KEYS_SCHEMA = T.StructType([T.StructField("k", T.StringType(), True)])
STATE_SCHEMA = T.StructType([T.StructField("v", T.BinaryType(), True)])


def check_buckets(buckets: Any, where: str) -> None:
    """``buckets`` (the operator's number of key-hash buckets) must be a positive integer.

    >>> check_buckets(0, "job")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: ...buckets...must be a positive integer, found 0...
    """
    if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
        raise SpecError("buckets", f"must be a positive integer, found {buckets!r}", where=where)


__all__ = [
    "BUCKET", "DEAD_TS", "DEFAULT_BUCKETS", "HEARTBEAT", "KEYS_SCHEMA", "KEY_TEXT", "MALFORMED_ROW", "OP", "ROW", "SEQ",
    "STATE_SCHEMA", "TIME", "TS", "check_buckets",
]
