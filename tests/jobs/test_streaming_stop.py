"""SIGTERM on a running streaming job: it stops after its micro-batch, exits 0, and a restart loses nothing.

Regression: SIGTERM killed the driver mid-batch; stderr showed ``STATE_STORE_OPERATION_OUT_OF_ORDER ...
This is a bug`` and a ``NullPointerException``, and no metrics line was printed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.jobs.test_streaming_flush import _door_rows, _join_config
from timeweave.jobs import cli
from timeweave.jobs.streaming import run_streaming

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def test_sigterm_stops_after_the_batch_and_a_restart_finishes_exactly(spark, tmp_path: Path) -> None:
    config = _join_config(tmp_path, {"processing_time": "1 second"})
    path = tmp_path / "job.json"
    path.write_text(json.dumps(config))
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "TIMEWEAVE_SHUFFLE_PARTITIONS": "2"}
    job = subprocess.Popen(
        [sys.executable, "-m", "timeweave.jobs", "streaming", "--config", str(path), "--no-until-idle", "--timeout", "900"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        first_commit = tmp_path / "chk" / "query" / "commits" / "0"
        deadline = time.monotonic() + 600
        while not first_commit.exists() and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert first_commit.exists(), "no first micro-batch"
        job.send_signal(signal.SIGTERM)
        out, err = job.communicate(timeout=300)
    finally:
        if job.poll() is None:
            job.kill()
            job.communicate()
    assert job.returncode == 0, err
    assert "Traceback" not in err and "Exception" not in err, err
    line = out.strip().splitlines()[-1]
    assert line.startswith(cli.METRICS_PREFIX)
    metrics = json.loads(line[len(cli.METRICS_PREFIX):])
    assert metrics["stopped"] == "SIGTERM" and metrics["flushed"] is False and metrics["batches"] >= 1

    # Restart from the checkpoint and finish: exactly the rows of an uninterrupted run (the DataFrame door's).
    config["trigger"] = {"available_now": True}
    rest = run_streaming(config, spark, flush=True)
    assert metrics["late"] + rest["late"] == 0
    assert metrics["rows_in_left"] + rest["rows_in_left"] == 24
    rows = sorted((r["id"], r["rate"]) for r in spark.read.parquet(config["output"]["path"]).collect())
    assert rows == _door_rows(spark, config)  # no duplicates, no loss
