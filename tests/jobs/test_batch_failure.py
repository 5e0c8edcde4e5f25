"""A micro-batch that fails fails the job with its own error, never ends it as if it had stopped.

Regression (CI, 2026-12-07): a ``foreachBatch`` call failing with a ``Py4JJavaError`` sends Spark a message of
the whole Python traceback and Java stack trace; Spark's stop check matches it with a pattern that recurses
per character, the query thread died with ``StackOverflowError`` and the query ended with no exception.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.jobs.test_streaming_flush import _join_config
from timeweave.jobs.streaming import request_stop, run_streaming
from timeweave.spark.host.writer import MicroBatchFailed

pytestmark = pytest.mark.spark

#: What a Py4JJavaError's text starts with, followed by a Java stack trace far longer than Spark's matcher survives.
_JVM_ERROR = "py4j.protocol.Py4JJavaError: An error occurred while calling o1.save.\n: java.io.IOException: disk\n"


class _BatchBroke(Exception):
    pass


def _stopping(spark) -> bool:
    """True once the running query is ending after its batch (the job's stop on request_stop)."""
    return all(str(q._jsq.streamingQuery().state()) == "TERMINATED" for q in spark.streams.active)


def test_a_batch_failing_during_a_stop_fails_the_job_with_its_error(spark, tmp_path: Path) -> None:
    """Spark reads a failed batch's message only when the query is stopping: the CI case was a SIGTERM."""
    config = _join_config(tmp_path, {"available_now": True})

    def broken(counts: dict) -> None:
        request_stop("test")
        deadline = time.monotonic() + 60
        while not _stopping(spark) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _stopping(spark)
        raise _BatchBroke(_JVM_ERROR + "\tat org.apache.spark.Example.method(Example.scala:1)\n" * 400)

    with pytest.raises(_BatchBroke) as raised:
        run_streaming(config, spark, flush=True, on_batch=broken)
    assert "Example.scala" in str(raised.value)  # the original error, whole
    # Spark's query error names the batch and the error, short
    assert isinstance(raised.value.__cause__, Exception)
    assert "timeweave micro-batch 0 failed: _BatchBroke" in str(raised.value.__cause__)


def test_the_error_spark_sees_is_short_and_keeps_a_jvm_interrupt() -> None:
    long = MicroBatchFailed(3, ValueError("x" * 10_000))
    assert str(long).startswith("timeweave micro-batch 3 failed: ValueError: xxx") and len(str(long)) < 700

    class _Java:
        def __init__(self, name: str, cause=None) -> None:
            self._name, self._cause = name, cause

        def getClass(self):  # py4j spells Java method names
            return self

        def getName(self):
            return self._name

        def getCause(self):
            return self._cause

    interrupted = ValueError("An error occurred while calling o7.parquet.")
    interrupted.java_exception = _Java("org.apache.spark.SparkException", _Java("java.lang.InterruptedException"))
    text = str(MicroBatchFailed(4, interrupted))
    # the one line Spark's stop check (StreamExecution.PROXY_ERROR) reads as a stop's interrupt
    assert text.endswith("py4j.protocol.Py4JJavaError: An error occurred while calling the JVM: "
                         "java.lang.InterruptedException")
    failed = ValueError("boom")
    failed.java_exception = _Java("java.io.IOException")
    assert "Py4JJavaError" not in str(MicroBatchFailed(5, failed))
