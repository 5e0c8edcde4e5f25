"""The doors and timeweave.register work on a Spark Connect session too: the temporal join's DataFrame and SQL
doors, MATCH_RECOGNIZE's DataFrame, SQL and UDTF doors.

Both families run in ONE script (tests/spark/scripts/connect_doors.py) on one local Connect server: the server is
a JVM of its own, and its start is most of the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from timeweave.spark.match_recognize import UDTF_NAME

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def connect_result() -> dict:
    script = Path(__file__).parent / "scripts" / "connect_doors.py"
    # A separate process: a Connect client and the suite's classic session cannot share one Python process.
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


def test_doors_on_spark_connect(connect_result: dict) -> None:
    result = connect_result["temporal_join"]
    assert result["session"] == "pyspark.sql.connect.session"
    assert result["dataframe"] == [["o1", 1.5], ["o2", None]]
    assert result["sql"] == result["dataframe"]
    assert result["register_first"] == result["register_again"]


def test_match_recognize_doors_on_spark_connect(connect_result: dict) -> None:
    result = connect_result["match_recognize"]
    assert result["session"] == "pyspark.sql.connect.session"
    assert result["register"] == [UDTF_NAME]
    assert result["dataframe"] == [["x", 2, 4], ["x", 2, 5], ["x", 3, 3]]  # 1 2 3 | 1 5 | 0 (0) 4
    assert result["sql"] == result["udtf"] == result["dataframe"]
