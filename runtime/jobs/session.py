"""The SparkSession a job runs on: the active one (spark-submit, tests, dbt), or a local one."""

from __future__ import annotations

import os
import re
import sys

#: Spark settings a job session needs before it starts (static: they cannot change on a live session).
#: Spark caches the code it generates per plan shape, 100 entries by default; one backfill run makes
#: ~100 distinct shapes (edge states, statistics, intervals, dead letters, slices), so a second run in
#: the same JVM (an in-process Airflow worker, a notebook) recompiled all of them and the JIT compiled
#: them again: measured 47 -> 18 JVM CPU-s on a repeated 100 k-order backfill with room for 1000.
STATIC_CONFIGS = {"spark.sql.codegen.cache.maxEntries": "1000"}


def default_shuffle_partitions(master: str | None) -> str:
    """Shuffle partitions of a job session: one per core of a ``local[N]`` / ``local[*]`` master, else 4.

    >>> default_shuffle_partitions("local[2]"), default_shuffle_partitions("spark://host:7077")
    ('2', '4')
    """
    if master == "local":
        return "1"
    match = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", master or "")
    if match is None:
        return "4"
    cores = (os.cpu_count() or 2) if match.group(1) == "*" else int(match.group(1))
    return str(max(1, cores))


def get_session():
    """The active SparkSession, or a new local one (UTC, RocksDB state store) for in-process runs.

    Example::

        spark = get_session()
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("timeweave-job")
    # Under spark-submit the JVM launched this driver (PYSPARK_GATEWAY_PORT is set) and --master rules;
    # only a plain in-process run picks its own master.
    master = None
    if "PYSPARK_GATEWAY_PORT" not in os.environ or "TIMEWEAVE_SPARK_MASTER" in os.environ:
        master = os.environ.get("TIMEWEAVE_SPARK_MASTER", "local[2]")
        builder = builder.master(master)
    builder = (
        builder.config("spark.sql.session.timeZone", "UTC")
        # One shuffle partition per local core (default_shuffle_partitions): a streaming job's state
        # operator runs one task (one RocksDB store, one Python worker round trip) per partition and
        # micro-batch; on 2 cores 4 partitions cost 24 % more JVM CPU than 2 (10 M x 100 k temporal join:
        # 56-58 k -> 65-72 k rows/s steady).  A checkpoint keeps the number it was started with.
        .config(
            "spark.sql.shuffle.partitions",
            os.environ.get("TIMEWEAVE_SHUFFLE_PARTITIONS", default_shuffle_partitions(master)),
        )
        .config("spark.ui.enabled", "false")
        .config(map=STATIC_CONFIGS)
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
