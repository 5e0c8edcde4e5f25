"""Shared fixtures.  JVM tests share ONE SparkSession per run (local[2], few shuffle partitions,
UI off, warehouse and Derby metastore in a temp dir).  Core tests never touch it."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from tests.helpers import checkout_path

# No per-example deadline: property tests run beside JVM tests on 2 cores, where one example of a few
# milliseconds can take 300 ms (a DeadlineExceeded there is the machine, not the code).  Examples stay bounded
# by each test's max_examples.
settings.register_profile("timeweave", deadline=None)
settings.load_profile("timeweave")

checkout_path.ensure()  # before the first `import timeweave`: this checkout's code, not another worktree's

from timeweave.jobs.session import STATIC_CONFIGS  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "flink" / "cases"

_SPARK_HOME = Path(tempfile.mkdtemp(prefix="timeweave-spark-"))

#: Spark settings for EVERY Spark JVM of the run, written to a ``spark-defaults.conf`` that ``SPARK_CONF_DIR``
#: points at (see :func:`use_test_spark_defaults`): the suite's session, and the jobs, spark-submit, dbt CLI,
#: Airflow and Spark Connect processes its tests start, which inherit the variable.  A setting made explicitly
#: (a builder's ``config``, ``--conf``) still wins.  None of them changes a result, only what the JVM spends:
#: the suite's JVMs live seconds to minutes on rows by the dozen, so most of their CPU went to starting up
#: (loading Spark's classes) and to the JIT's optimizing compiler (C2) working on code that runs a few times.
#: ``TieredStopAtLevel=1``: the quick C1 compiler only.  ``UseSerialGC``: one GC thread, no concurrent
#: collector threads, for heaps of a few hundred MB.  Measured with bench/suite_cpu.py: bench/RESULTS.md
#: "Test suite time".  A machine that set SPARK_CONF_DIR itself keeps its own.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
TEST_SPARK_DEFAULTS = {
    "spark.driver.defaultJavaOptions": TEST_JVM_OPTIONS,
    "spark.executor.defaultJavaOptions": TEST_JVM_OPTIONS,  # local-cluster executors (test_worker_python.py)
}


def use_test_spark_defaults(conf_dir: Path, environ=os.environ) -> Path | None:
    """Write :data:`TEST_SPARK_DEFAULTS` to ``conf_dir/spark-defaults.conf`` and point ``SPARK_CONF_DIR`` at it,
    unless ``environ`` already names a conf dir (then that one rules, e.g. to measure Spark's own defaults).

    >>> import tempfile
    >>> env = {}
    >>> conf = use_test_spark_defaults(Path(tempfile.mkdtemp()), env)
    >>> env["SPARK_CONF_DIR"] == str(conf.parent) and "TieredStopAtLevel=1" in conf.read_text()
    True
    >>> use_test_spark_defaults(Path(tempfile.mkdtemp()), env) is None
    True
    """
    if environ.get("SPARK_CONF_DIR"):
        return None
    conf_dir.mkdir(parents=True, exist_ok=True)
    conf = conf_dir / "spark-defaults.conf"
    conf.write_text("".join(f"{key} {value}\n" for key, value in TEST_SPARK_DEFAULTS.items()))
    environ["SPARK_CONF_DIR"] = str(conf_dir)
    return conf


use_test_spark_defaults(_SPARK_HOME / "conf")  # before any JVM starts, and before subprocesses copy the environment


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


#: The longest modules, in the order a run starts them, each with its long test where it has a few short ones:
#: the two longest go to the two workers at once, and no long module can be left to start late.  Seconds in the
#: 2-worker run of 2026-11-26 14:58 (loaded machine): chaos 986 (its kill test) + 2 short tests, the README's
#: Airflow run 609 (its fixture, in the first test using it) + 2 short tests, the dbt build 315 (fixture) + 174
#: (dbt CLI) + the rest of its 23 tests.  The long test goes first in its module because pytest-xdist hands a
#: worker its next module as soon as 2 or fewer of its tests are pending: a long test behind a short one would
#: hold that next module back on its worker for the whole long test, while the other worker may run dry.
LONGEST_FIRST = (
    "tests/spark/test_chaos.py::test_kills_per_job_type_lose_and_duplicate_nothing",
    "tests/airflow/test_example_dag.py::test_readme_commands_run_the_example_dag",
    "tests/dbt/test_dbt_models.py",
)
#: Engine-free modules (no JVM, seconds each): they run last, so the two workers' ends are evened out by many
#: short modules instead of one worker finishing a Spark module alone.
ENGINE_FREE = "tests/core/"


def item_rank(nodeid: str, slow: bool) -> tuple[int, int, int]:
    """Where a test (its node id, and whether its module holds a ``slow`` test) goes in the run's order.

    >>> [item_rank(n, s) for n, s in [("tests/dbt/test_dbt_models.py::t", False), ("tests/spark/test_x.py::t", True),
    ...                               ("tests/spark/test_y.py::t", False), ("tests/core/test_z.py::t", False)]]
    [(0, 2, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0)]
    >>> item_rank("tests/spark/test_chaos.py::test_compare", True) > item_rank(LONGEST_FIRST[0], True)
    True
    """
    path = nodeid.split("::")[0]
    for i, entry in enumerate(LONGEST_FIRST):
        if entry.split("::")[0] == path:
            return (0, i, 0 if "::" not in entry or nodeid == entry else 1)
    if slow:
        return (1, 0, 0)
    return (3, 0, 0) if path.startswith(ENGINE_FREE) else (2, 0, 0)


def pytest_collection_modifyitems(config, items):
    """Tests in the order of :func:`item_rank`: the longest modules by name, the other modules holding a
    ``slow`` test, the other JVM modules, then the engine-free ones (stable order otherwise).

    With ``-n 2 --dist loadfile`` (.ci/run) a worker takes whole modules in this order, so the long
    end-to-end modules (chaos, the README's Airflow run, dbt builds) start at once and the many short
    modules fill the other worker around them, and the run ends on short engine-free modules: the wall time is
    the slower worker's, and a Spark module started last would leave the other worker idle.
    """
    slow_modules = {item.module.__name__ for item in items if item.get_closest_marker("slow") and item.module}
    items.sort(key=lambda item: item_rank(item.nodeid, bool(item.module and item.module.__name__ in slow_modules)))
