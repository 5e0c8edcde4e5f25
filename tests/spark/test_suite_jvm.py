"""The suite's Spark JVMs run with the test spark-defaults of tests/conftest.py (C1-only JIT, serial GC): the
session fixture's JVM, and a JVM a subprocess starts through spark-submit (as the jobs, dbt, Airflow and Spark
Connect tests do), both found from the SPARK_CONF_DIR the run set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_JVM_OPTIONS

pytestmark = pytest.mark.spark


def _ours() -> bool:
    conf = Path(os.environ.get("SPARK_CONF_DIR", "")) / "spark-defaults.conf"
    return conf.is_file() and TEST_JVM_OPTIONS in conf.read_text()


def test_the_session_jvm_runs_with_the_test_jvm_options(spark) -> None:
    if not _ours():
        pytest.skip(f"SPARK_CONF_DIR={os.environ.get('SPARK_CONF_DIR')} was set outside the suite: its defaults rule")
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert set(TEST_JVM_OPTIONS.split()) <= set(arguments), arguments


def test_a_subprocess_spark_jvm_reads_them_too() -> None:
    """What spark-submit launches for a subprocess job: its driver command line (``SPARK_PRINT_LAUNCH_COMMAND``
    prints it; ``--version`` starts no SparkContext)."""
    if not _ours():
        pytest.skip(f"SPARK_CONF_DIR={os.environ.get('SPARK_CONF_DIR')} was set outside the suite: its defaults rule")
    from pyspark.find_spark_home import _find_spark_home

    submit = Path(_find_spark_home()) / "bin" / "spark-submit"
    done = subprocess.run([str(submit), "--version"], env={**os.environ, "SPARK_PRINT_LAUNCH_COMMAND": "1",
                                                           "PYSPARK_PYTHON": sys.executable},
                          capture_output=True, text=True, timeout=300, check=False)
    command = next((line for line in done.stderr.splitlines() if line.startswith("Spark Command:")), "")
    assert command, done.stderr[-2000:]
    assert all(option in command.split() for option in TEST_JVM_OPTIONS.split()), command
