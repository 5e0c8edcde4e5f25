"""The SparkSession a job runs on: the active one (spark-submit, tests, dbt), or a local one."""

from __future__ import annotations

import os
import sys


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
    if "PYSPARK_GATEWAY_PORT" not in os.environ or "TIMEWEAVE_SPARK_MASTER" in os.environ:
        builder = builder.master(os.environ.get("TIMEWEAVE_SPARK_MASTER", "local[2]"))
    builder = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", os.environ.get("TIMEWEAVE_SHUFFLE_PARTITIONS", "4"))
        .config("spark.ui.enabled", "false")
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
