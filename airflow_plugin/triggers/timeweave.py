"""The trigger of a deferred timeweave job: watches the job's status file from the triggerer.

A deferrable :class:`~timeweave.airflow.operators.timeweave.TimeweaveStreamingOperator` starts its job through
spark-submit and hands it to :class:`TimeweaveJobTrigger`; the task then holds no worker slot while the
job runs.  The trigger polls the status file the job keeps (``timeweave-job --metrics-file``,
:mod:`timeweave.jobs.metrics_file`), logs each new progress update, and fires one event when the job is
done: ``{"status": "success", "metrics": {...}}`` or ``{"status": "error", "error": "..."}`` (the job's
own error, a driver that died without a final state, or a job that never started).

It lives in the installed package (not a DAG bundle) because the triggerer imports it by its path.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from timeweave.airflow.utils.metrics_file import read_status


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    try:  # a zombie (exited, not yet reaped by its parent) is not running
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


class TimeweaveJobTrigger(BaseTrigger):
    """Fire when the timeweave job writing ``metrics_file`` succeeds or fails.

    :param metrics_file: the job's status file (a path or a URI the triggerer can read).
    :param kind: ``"streaming"`` or ``"backfill"`` (for messages).
    :param poll_interval: seconds between reads of the file.
    :param start_timeout: fail if no status file appears within this many seconds (None: wait).
    :param pid: the client-mode spark-submit process (with ``host``): on that host, a process gone
        without a final state fails the job at once instead of waiting for ``start_timeout``.
    :param host: the host ``pid`` runs on.
    :param log_file: where that process's output goes (named in an error).

    Example::

        self.defer(trigger=TimeweaveJobTrigger(metrics_file="s3a://runs/orders.json", kind="streaming"),
                   method_name="execute_complete")
    """

    def __init__(
        self,
        metrics_file: str,
        kind: str = "streaming",
        poll_interval: float = 5.0,
        start_timeout: float | None = 600.0,
        pid: int | None = None,
        host: str | None = None,
        log_file: str | None = None,
    ) -> None:
        super().__init__()
        self.metrics_file = metrics_file
        self.kind = kind
        self.poll_interval = float(poll_interval)
        self.start_timeout = None if start_timeout is None else float(start_timeout)
        self.pid = pid
        self.host = host
        self.log_file = log_file

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "metrics_file": self.metrics_file, "kind": self.kind, "poll_interval": self.poll_interval,
                "start_timeout": self.start_timeout, "pid": self.pid, "host": self.host, "log_file": self.log_file,
            },
        )

    def _process_gone(self) -> bool:
        return self.pid is not None and self.host == socket.gethostname() and not _process_alive(self.pid)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.monotonic()
        last_update: Any = None
        gone_checks = 0
        while True:
            try:
                status = await asyncio.to_thread(read_status, self.metrics_file)
            except (OSError, ValueError) as exc:
                yield TriggerEvent({"status": "error", "error": f"cannot read the metrics file: {exc}",
                                    "metrics_file": self.metrics_file})
                return
            if status is not None:
                state = status.get("state")
                if state == "succeeded":
                    yield TriggerEvent({"status": "success", "metrics": status.get("metrics") or {},
                                        "metrics_file": self.metrics_file})
                    return
                if state == "failed":
                    yield TriggerEvent({"status": "error", "error": f"the {self.kind} job failed: {status.get('error')}",
                                        "metrics": status.get("metrics") or {}, "metrics_file": self.metrics_file})
                    return
                if status.get("updated_at") != last_update:
                    last_update = status.get("updated_at")
                    self.log.info("timeweave %s job running: %s", self.kind, status.get("metrics") or {})
            elif self.start_timeout is not None and time.monotonic() - started > self.start_timeout:
                yield TriggerEvent({"status": "error", "metrics_file": self.metrics_file,
                                    "error": f"the {self.kind} job wrote no status to {self.metrics_file} within "
                                             f"{self.start_timeout:g} s"})
                return
            if self._process_gone():
                # Its last write may land just after the exit was seen: one more read before calling it dead.
                gone_checks += 1
                if gone_checks > 1:
                    where = f"; its output: {self.log_file}" if self.log_file else ""
                    yield TriggerEvent({"status": "error", "metrics_file": self.metrics_file,
                                        "error": f"the {self.kind} job's spark-submit (pid {self.pid}) exited "
                                                 f"without a final status in {self.metrics_file}{where}"})
                    return
                await asyncio.sleep(min(self.poll_interval, 1.0))
                continue
            await asyncio.sleep(self.poll_interval)
