"""The DataFrame and SQL doors and timeweave.register work on a Spark Connect session too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_doors_on_spark_connect() -> None:
    script = Path(__file__).parent / "scripts" / "connect_doors.py"
    # A separate process: a Connect client and the suite's classic session cannot share one Python process.
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stderr[-3000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    assert result["session"] == "pyspark.sql.connect.session"
    assert result["dataframe"] == [["o1", 1.5], ["o2", None]]
    assert result["sql"] == result["dataframe"]
    assert result["register_first"] == result["register_again"]
