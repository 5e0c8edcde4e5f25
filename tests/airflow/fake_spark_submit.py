"""Stands in for ``spark-submit`` (and ``yarn``) in hook and operator tests: no JVM, same command line.

The ``fake_spark`` fixture (tests/airflow/conftest.py) installs this file as ``spark-submit`` and ``yarn``
on PATH.  Every call appends its arguments to ``$FAKE_SPARK_RECORD`` (JSON lines), then:

* ``spark-submit --status <driver>`` / ``--kill <driver>``: a standalone master's answers (the driver finished / was killed);
* ``yarn application -kill <id>``: recorded only;
* ``spark-submit [options] <app> <job CLI args>``: acts as the job, by ``$FAKE_SPARK_MODE``:

  ``ok``        writes the status file (``--metrics-file``, with the real writer) ``succeeded`` and prints the
                metrics line (``$FAKE_SPARK_STDOUT=0``: no line, as a cluster-mode driver's stdout never arrives);
  ``stdout``    prints the metrics line only (no status file);
  ``fail``      writes ``failed`` with the job's error, exits 1;
  ``crash``     exits 3, writes nothing;  ``silent``: exits 0, writes and prints nothing;
  ``progress``  writes ``running`` with 1..3 batches (``$FAKE_SPARK_PAUSE`` s apart), then ``succeeded``;
  ``sleep``     writes ``running`` and waits; SIGTERM writes ``succeeded`` with ``stopped`` (the job CLI's graceful
                stop) and exits 0.

In cluster deploy mode it prints what the real one prints for the master: a YARN application id, a
Kubernetes driver pod, a standalone driver id (that the Spark provider's hook picks up to track or kill).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

#: spark-submit options that take no value.
FLAGS = {"--verbose", "--supervise"}
YARN_APP = "application_1767225600000_0042"
DRIVER_ID = "driver-20260101000000-0007"


def _record(argv: list[str]) -> None:
    target = os.environ.get("FAKE_SPARK_RECORD")
    if target:
        with open(target, "a") as out:
            out.write(json.dumps({"binary": Path(sys.argv[0]).name, "argv": argv}) + "\n")


def _split(argv: list[str]) -> tuple[dict[str, list[str]], str, list[str]]:
    options: dict[str, list[str]] = {}
    i = 0
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] in FLAGS:
            options.setdefault(argv[i], []).append("")
            i += 1
        else:
            options.setdefault(argv[i], []).append(argv[i + 1])
            i += 2
    return options, argv[i], argv[i + 1:]


def _option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def main(argv: list[str]) -> int:
    _record(argv)
    if Path(sys.argv[0]).name == "yarn":
        return 0
    if "--status" in argv:
        print(f'  "submissionId" : "{_option(argv, "--status")}",\n  "driverState" : "FINISHED",', flush=True)
        return 0
    if "--kill" in argv:
        return 0
    options, _app, job_args = _split(argv)
    master = options["--master"][0]
    cluster = options.get("--deploy-mode", ["client"])[0] == "cluster"
    if cluster and master.startswith("yarn"):
        print(f"INFO Client: Submitted application {YARN_APP}", flush=True)
    elif cluster and master.startswith("spark://"):
        print(f"INFO ClientEndpoint: Driver successfully submitted as {DRIVER_ID}", flush=True)
    elif cluster and master.startswith("k8s://"):
        print("\t pod name: timeweave-job-0123abcd-driver", flush=True)
        if "spark.kubernetes.submission.waitAppCompletion=false" not in options.get("--conf", []):
            print("\t Exit code: 0", flush=True)  # spark-submit waited for the driver
    print("INFO SparkContext: Running Spark version 4.3.0 (fake)", flush=True)

    from timeweave.jobs.metrics_file import StatusWriter

    mode = os.environ.get("FAKE_SPARK_MODE", "ok")
    target = _option(job_args, "--metrics-file")
    status = StatusWriter(target, job_args[0]) if target else None
    if job_args[0] == "sql":  # a SQL script job: the script travels inline
        metrics = {"kind": "sql", "script": _option(job_args, "--script"), "rows_out": 7,
                   "env_mark": os.environ.get("FAKE_ENV_MARK")}
    else:
        config_arg = _option(job_args, "--config")
        config = json.loads(config_arg if config_arg.lstrip().startswith("{") else Path(config_arg).read_text())
        metrics = {"kind": job_args[0], "args": job_args[3:], "output": config["output"]["path"], "rows_out": 7,
                   "config_inline": config_arg.lstrip().startswith("{"), "env_mark": os.environ.get("FAKE_ENV_MARK")}
    if mode == "crash":
        return 3
    if mode == "silent":
        return 0
    if mode == "fail":
        print("ERROR boom", flush=True)
        if status:
            status.failed("column 'currency' not found in the left input")
        return 1
    if mode == "sleep":
        def stop(signum, _frame):
            if status:
                status.succeeded({**metrics, "stopped": signal.Signals(signum).name})
            sys.exit(0)

        signal.signal(signal.SIGTERM, stop)
        if status:
            status.running({"batches": 0})
        print("READY", flush=True)
        time.sleep(float(os.environ.get("FAKE_SPARK_SLEEP", "120")))
        return 0
    if mode == "progress":
        pause = float(os.environ.get("FAKE_SPARK_PAUSE", "0.2"))
        for batch in (1, 2, 3):
            time.sleep(pause)
            status.running({"batches": batch, "rows_out": 2 * batch})
        time.sleep(pause)
    if status and mode != "stdout":
        status.succeeded(metrics)
    if mode == "stdout" or os.environ.get("FAKE_SPARK_STDOUT", "1") == "1":
        print("TIMEWEAVE_METRICS " + json.dumps(metrics), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
