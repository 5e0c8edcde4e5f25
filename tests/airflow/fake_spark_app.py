"""Stands in for the job CLI under spark-submit in hook tests: prints logs and a metrics line.

``fake_spark_app.py <mode> <job CLI arguments>``; mode ``ok`` echoes the arguments and the config's
output path in its metrics, ``fail`` exits 3, ``silent`` prints no metrics, ``sleep`` waits to be killed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    mode, job_args = argv[0], argv[1:]
    print("INFO SparkContext: Running Spark version 4.3.0 (fake)", flush=True)
    if mode == "fail":
        print("ERROR boom", flush=True)
        return 3
    if mode == "sleep":
        print("READY", flush=True)
        time.sleep(120)
        return 0
    if mode == "silent":
        return 0
    config = json.loads(Path(job_args[job_args.index("--config") + 1]).read_text())
    metrics = {"kind": job_args[0], "args": job_args[3:], "output": config["output"]["path"], "rows_out": 7}
    print("TIMEWEAVE_METRICS " + json.dumps(metrics), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
