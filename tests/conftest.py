"""Shared fixtures.  JVM tests share ONE SparkSession per run (local[2], few shuffle partitions,
UI off, warehouse and Derby metastore in a temp dir).  Core tests never touch it."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import checkout_path

checkout_path.ensure()  # before the first `import timeweave`: this checkout's code, not another worktree's

from timeweave.jobs.session import STATIC_CONFIGS  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "flink" / "cases"

_SPARK_HOME = Path(tempfile.mkdtemp(prefix="timeweave-spark-"))


def spark_conf() -> dict[str, str]:
    """The one configuration every JVM test (and the in-process dbt run) uses."""
    return {
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": str(_SPARK_HOME / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={_SPARK_HOME / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={_SPARK_HOME}",
        "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
        **STATIC_CONFIGS,  # the job session's own static settings
    }


@pytest.fixture(scope="session")
def spark():
    """The run's single SparkSession (Hive-enabled, so dbt-spark's session method can share it)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("timeweave-tests")
    for key, value in spark_conf().items():
        builder = builder.config(key, value)
    session = builder.enableHiveSupport().getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_home() -> Path:
    return _SPARK_HOME


def pytest_configure(config):
    """Under ``--dist loadfile`` keep the collection order below: pytest-xdist would otherwise hand out the
    modules with the most tests first, and the long end-to-end modules (few tests each) would start last."""
    if getattr(config.option, "dist", "no") in ("loadfile", "loadscope"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    """Modules holding a ``slow`` test run first (stable order otherwise).

    With ``-n 2 --dist loadfile`` (.ci/run) a worker takes whole modules in this order, so the long
    end-to-end modules (chaos, the README's Airflow run, dbt builds) start at once and the many short
    modules fill the other worker around them, instead of one long module finishing the run alone.
    """
    slow_modules = {item.module.__name__ for item in items if item.get_closest_marker("slow") and item.module}
    items.sort(key=lambda item: 0 if item.module and item.module.__name__ in slow_modules else 1)
