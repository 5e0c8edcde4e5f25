"""Chaos harness: kill -9 the streaming and backfill jobs at random points, restart them, compare outputs.

Shared by ``bench/chaos.py`` (the command line, many kills) and ``tests/spark/test_chaos.py`` (a few kills in
CI).  Every job runs as a user runs it, a subprocess of ``python -m timeweave.jobs streaming|backfill``, started in a
session of its own (``start_new_session=True``) so that ``os.killpg(pid, SIGKILL)`` takes the Python driver, the
JVM it launched and the JVM's Python workers down together.

**Inputs** (:func:`write_inputs`, fixed seed): a temporal-join pair (orders, a rates changelog) and a
MATCH_RECOGNIZE event table, each as ``files`` CSV files per input.  File ``j`` holds the rows of the hour
``[j h, j+1 h)`` in shuffled order (out of order within the watermark delay), a fence row in the hour's last
minute (so every file moves its input's watermark to just below the next hour), late rows of hour ``j-2``
(``j >= 2``: below the watermark when the file is read, since each micro-batch reads one file per input,
``maxFilesPerTrigger`` 1), and bad rows: NULL keys and NULL times (and, on the changelog, an unknown op).
Which rows are late therefore follows from the data alone (the watermark a batch uses is the one the
previous batch left, also after a restart: Spark keeps it in the commit log), so the DataFrame door can be
given exactly the rows the stream must join.

The window jobs' input (``win/input``, its own random stream, so the other inputs stay as they were for a
seed) has the same shape (hours, fences, late rows of hour ``j-2``, NULL times; NULL keys are a group) plus
malformed records: a BIGINT ``sixty``, a record with an extra field, an unparsable time.  They go to the dead
letter with their reason in every door, from the job's reader (:func:`timeweave.spark.sources.read_source`,
which the door's reading uses too).

**Kill points** (:data:`STREAMING_TRIGGERS`, :data:`BACKFILL_TRIGGERS`): a random time after start, right
after start (JVM still starting), once the n-th commit file is in ``<checkpoint>/query/commits``, while a
batch is planned but not committed (``offsets/N`` without ``commits/N``), while a staging / ``_temporary``
directory exists in an output, and (backfills) once n ``slice=`` directories exist or while the state is
being written.  A job that ends before its trigger fires simply completes.

**Comparison** (:func:`compare`): outputs are read with pyarrow (no JVM in the harness) as multisets of rows
(values as text, timestamps in microseconds); against a reference, *duplicates* are rows present more often
than in the reference, *losses* reference rows missing, *differing* rows that are not in the reference at all
(a row with other values counts as one loss and one differing row).

Example (about two minutes on an idle 2-core machine)::

    from tests.helpers.chaos import ChaosSettings, run_chaos
    results = run_chaos(ChaosSettings(work=Path("/tmp/chaos"), kills=2, jobs=("mr_backfill",)))
    assert all(r.clean for r in results)
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2024, 1, 1)
HOUR = timedelta(hours=1)
WATERMARK_DELAY = "5 minutes"
JOBS = ("tj_streaming", "mr_streaming", "tj_backfill", "mr_backfill", "win_streaming", "win_backfill")
STREAMING_TRIGGERS = ("time", "start", "commit", "mid_batch", "staging")
BACKFILL_TRIGGERS = ("time", "start", "slice_dirs", "staging", "state")

TJ_LEFT_SCHEMA = "id STRING, currency STRING, order_time TIMESTAMP, amount DOUBLE"
TJ_RIGHT_SCHEMA = "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP"
MR_SCHEMA = "id STRING, k STRING, t TIMESTAMP, v BIGINT"
MR_CLAUSE = """PARTITION BY k ORDER BY t, id
    MEASURES FIRST(A.id) AS first_id, LAST(C.id) AS last_id, FIRST(A.t) AS t0, LAST(C.t) AS t1,
             COUNT(*) AS n, SUM(B.v) AS sv
    ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B+ C) DEFINE B AS B.v > PREV(B.v), C AS C.v < PREV(C.v)"""
TJ_KEYS = ("EUR", "USD", "GBP", "JPY")
WIN_SCHEMA = "id STRING, k STRING, t TIMESTAMP, v BIGINT"
#: The window jobs' window: HOP of one hour every 30 minutes.  Every file holds one event hour, so the windows
#: starting at half past cross a micro-batch edge (their accumulators are state between batches) and, whatever
#: the slice edges, some window crosses a backfill slice edge (its accumulators are the carried state).  A row of
#: hour j-2 read with file j is late for both its windows (they end by hour j-1, below the watermark).
WIN_WINDOW = {"function": "hop", "time": "t", "slide": "30 minutes", "size": "1 hour", "keys": ["k"]}
WIN_AGGREGATES = {"n": "COUNT(*)", "sv": "SUM(v)", "vmax": "MAX(v)", "ids": "COUNT(DISTINCT id)"}


# --------------------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Inputs:
    """Where :func:`write_inputs` put the CSV files, and the ids of the rows the stream must report late."""

    root: Path
    files: int
    tj_late_ids: frozenset[str]
    mr_late_ids: frozenset[str]
    win_late_ids: frozenset[str] = frozenset()

    @property
    def start(self) -> datetime:
        """Backfill range start: before every row."""
        return T0 - HOUR

    @property
    def end(self) -> datetime:
        """Backfill range end (exclusive): after every row."""
        return T0 + HOUR * (self.files + 1)


def _ts(t: datetime | None) -> str:
    return "" if t is None else t.strftime("%Y-%m-%d %H:%M:%S")


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]], mtime: float) -> None:
    # A row may hold more fields than the header (a malformed record): the writer writes what it is given.
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO(newline="")
    w = csv.writer(buffer)
    w.writerow(header)
    for row in rows:
        w.writerow(["" if v is None else (_ts(v) if isinstance(v, datetime) else v) for v in row])
    text = buffer.getvalue()
    # The same input again (a second run in one work directory): leave the file alone, a job may be reading it.
    if path.exists() and path.read_text() == text:
        return
    path.write_text(text)
    # The file source takes files in modification-time order: one second apart, file j before file j+1.
    os.utime(path, (mtime, mtime))


def write_inputs(root: Path, seed: int, files: int = 6, rows_per_file: int = 14) -> Inputs:
    """Random CSV inputs of the job families under ``root`` (``tj/left``, ``tj/right``, ``mr/input``, ``win/input``).

    >>> import tempfile
    >>> a = write_inputs(Path(tempfile.mkdtemp()), seed=1, files=4)
    >>> sorted(p.name for p in (a.root / "tj" / "left").iterdir())
    ['part-00.csv', 'part-01.csv', 'part-02.csv', 'part-03.csv']
    >>> len(a.tj_late_ids) > 0 and len(a.mr_late_ids) > 0 and len(a.win_late_ids) > 0
    True
    """
    rng = random.Random(seed)
    base_mtime = time.time() - 3600
    tj_late: set[str] = set()
    mr_late: set[str] = set()

    def when(hour: int, used: set[datetime], last_minute: int = 58) -> datetime:
        while True:  # unique per input: no ties (a tie's winner would depend on arrival order)
            t = T0 + HOUR * hour + timedelta(minutes=rng.randrange(0, last_minute), seconds=rng.randrange(60))
            if t not in used:
                used.add(t)
                return t

    left_used: set[datetime] = set()
    right_used: set[datetime] = set()
    mr_used: set[datetime] = set()
    for j in range(files):
        mtime = base_mtime + j
        fence = T0 + HOUR * j + timedelta(minutes=59, seconds=30)
        # rates changelog: versions inside hour j, a fence version, bad rows
        right: list[tuple] = []
        for i, key in enumerate(TJ_KEYS):
            for n in range(rng.randrange(1, 3)):
                op = rng.choice(["+I", "+U", "+U", "-D"]) if j else "+I"
                right.append((op, key, round(rng.uniform(0.5, 2.0), 4) + i + n, when(j, right_used)))
        right.append(("+U", rng.choice(TJ_KEYS), 1.0 + j, fence))
        right.append(("+U", None, 9.0, when(j, right_used)))              # dead letter: NULL key
        right.append(("+U", "EUR", 9.1, None))                            # dead letter: NULL time
        right.append(("?", "USD", 9.2, when(j, right_used)))              # dead letter: unknown op
        rng.shuffle(right)
        _write_csv(root / "tj" / "right" / f"part-{j:02d}.csv", ("op", "currency", "rate", "update_time"), right, mtime)
        # orders: hour j out of order, a fence order, late orders of hour j-2, bad rows
        left: list[tuple] = []
        for i in range(rows_per_file):
            key = rng.choice([*TJ_KEYS, "CHF"])  # CHF: never versioned, LEFT join NULLs
            left.append((f"o{j:02d}-{i:02d}", key, when(j, left_used), float(rng.randrange(1, 100))))
        left.append((f"o{j:02d}-fence", rng.choice(TJ_KEYS), fence, 1.0))
        if j >= 2:
            for i in range(rng.randrange(1, 3)):
                lid = f"o{j:02d}-late{i}"
                tj_late.add(lid)
                left.append((lid, rng.choice(TJ_KEYS), when(j - 2, left_used), 2.0))
        left.append((f"o{j:02d}-nokey", None, when(j, left_used), 3.0))     # dead letter: NULL key
        left.append((f"o{j:02d}-notime", "EUR", None, 4.0))                 # dead letter: NULL time
        rng.shuffle(left)
        _write_csv(root / "tj" / "left" / f"part-{j:02d}.csv", ("id", "currency", "order_time", "amount"), left, mtime)
        # MATCH_RECOGNIZE events: hour j out of order, a fence, late rows, NULL times (NULL keys are a partition)
        events: list[tuple] = []
        for i in range(rows_per_file):
            events.append((f"e{j:02d}-{i:02d}", rng.choice(["a", "b", "c", None]), when(j, mr_used), rng.randrange(10)))
        events.append((f"e{j:02d}-fence", "a", fence, rng.randrange(10)))
        if j >= 2:
            for i in range(rng.randrange(1, 3)):
                eid = f"e{j:02d}-late{i}"
                mr_late.add(eid)
                events.append((eid, rng.choice(["a", "b"]), when(j - 2, mr_used), rng.randrange(10)))
        events.append((f"e{j:02d}-notime", "a", None, 5))                    # dead letter: NULL event time
        rng.shuffle(events)
        _write_csv(root / "mr" / "input" / f"part-{j:02d}.csv", ("id", "k", "t", "v"), events, mtime)
    win_late = _write_window_inputs(root / "win" / "input", random.Random(seed * 7919 + 1), files, rows_per_file,
                                    base_mtime)
    return Inputs(root, files, frozenset(tj_late), frozenset(mr_late), win_late)


def _write_window_inputs(path: Path, rng: random.Random, files: int, rows_per_file: int, base_mtime: float
                         ) -> frozenset[str]:
    """The window jobs' CSV files under ``path`` (see the module docstring); the ids of the late rows."""
    late: set[str] = set()
    used: set[datetime] = set()

    def when(hour: int) -> datetime:
        while True:  # unique: no ties (the late output's order within a key follows arrival)
            t = T0 + HOUR * hour + timedelta(minutes=rng.randrange(0, 58), seconds=rng.randrange(60))
            if t not in used:
                used.add(t)
                return t

    for j in range(files):
        rows: list[tuple] = []
        for i in range(rows_per_file):
            rows.append((f"w{j:02d}-{i:02d}", rng.choice(["a", "b", "c", None]), when(j), rng.randrange(100)))
        rows.append((f"w{j:02d}-fence", "a", T0 + HOUR * j + timedelta(minutes=59, seconds=30), rng.randrange(100)))
        if j >= 2:
            for i in range(rng.randrange(1, 3)):
                wid = f"w{j:02d}-late{i}"
                late.add(wid)
                rows.append((wid, rng.choice(["a", "b"]), when(j - 2), rng.randrange(100)))
        rows.append((f"w{j:02d}-notime", "b", None, 5))                      # dead letter: NULL event time
        rows.append((f"w{j:02d}-badv", "a", when(j), "sixty"))               # dead letter: unparsable BIGINT
        rows.append((f"w{j:02d}-extra", "c", when(j), 7, "surplus"))         # dead letter: wrong column count
        if j == 0:
            rows.append(("w00-badtime", "a", "yesterday", 1))                # dead letter: unparsable TIMESTAMP
        rng.shuffle(rows)
        _write_csv(path / f"part-{j:02d}.csv", ("id", "k", "t", "v"), rows, base_mtime + j)
    return frozenset(late)


# --------------------------------------------------------------------------------------------------- configs


def _source(path: Path, schema: str) -> dict[str, Any]:
    return {"path": str(path), "format": "csv", "schema": schema, "watermark_delay": WATERMARK_DELAY,
            # one file per micro-batch and input: several batches, kills land mid-stream
            "options": {"header": "true", "maxFilesPerTrigger": "1"}}


def job_config(job: str, inputs: Inputs, out: Path) -> dict[str, Any]:
    """The JSON config of ``job`` (one of :data:`JOBS`) reading ``inputs``, writing under ``out``.

    >>> sorted(job_config("mr_backfill", Inputs(Path("/in"), 3, frozenset(), frozenset()), Path("/o")))
    ['checkpoint', 'input', 'match_recognize', 'output', 'trigger']
    >>> job_config("win_streaming", Inputs(Path("/in"), 3, frozenset(), frozenset()), Path("/o"))["window"]["function"]
    'hop'
    """
    common = {"output": {"path": str(out / "main"), "late_path": str(out / "late"),
                         "dead_letter_path": str(out / "dead_letter")},
              "checkpoint": str(out / "chk"), "trigger": {"available_now": True}}
    if job.startswith("win_"):
        return {"window": {**WIN_WINDOW, "aggregates": dict(WIN_AGGREGATES)},
                "input": _source(inputs.root / "win" / "input", WIN_SCHEMA), **common}
    if job.startswith("mr_"):
        return {"match_recognize": {"clause": MR_CLAUSE}, "input": _source(inputs.root / "mr" / "input", MR_SCHEMA),
                **common}
    return {
        "left": _source(inputs.root / "tj" / "left", TJ_LEFT_SCHEMA),
        "right": _source(inputs.root / "tj" / "right", TJ_RIGHT_SCHEMA),
        "versioned": {"key": ["currency"], "time": "update_time", "format": "changelog", "op": "op"},
        "join": {"left_time": "order_time", "left_key": ["currency"], "how": "left"},
        **common,
    }


# --------------------------------------------------------------------------------------------------- processes


def job_env() -> dict[str, str]:
    """The environment a job subprocess runs with: this Python for the Spark workers, the repo importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.setdefault("TIMEWEAVE_SPARK_MASTER", "local[2]")
    return env


@dataclass
class Launch:
    """One job process: its argv, how it ended (``killed`` by which trigger, or its exit code) and its time."""

    argv: list[str]
    trigger: str | None
    killed: bool = False
    returncode: int | None = None
    seconds: float = 0.0
    log: str = ""


def session_pids(sid: int) -> list[int]:
    """Live processes of session ``sid`` (Linux ``/proc``).  PySpark's worker daemon moves itself into a
    process group of its own (``os.setpgid(0, 0)``), so a job's workers are found by session, not group."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp session ...
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry.name))
    return pids


def kill_job(pid: int, wait: float = 15.0) -> None:
    """SIGKILL the process group of job ``pid`` (driver, JVM), then whatever is left of its session (the
    Python workers' group), until nothing of the session runs."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        left = [p for p in session_pids(pid) if p != os.getpid()]
        if not left:
            return
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    raise RuntimeError(f"processes of job session {pid} survived SIGKILL: {session_pids(pid)}")


def launch(argv: Sequence[str], cwd: Path, fire: Callable[[float], bool] | None, trigger: str | None,
           timeout: float = 900.0) -> Launch:
    """Run ``argv`` in a new session; SIGKILL its whole process group as soon as ``fire(elapsed)`` is true."""
    cwd.mkdir(parents=True, exist_ok=True)
    log_path = cwd / f"log-{time.time_ns()}.txt"
    started = time.monotonic()
    with log_path.open("w") as log:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=job_env(), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        result = Launch(list(argv), trigger)
        while proc.poll() is None:
            elapsed = time.monotonic() - started
            if fire is not None and fire(elapsed):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kill_job(proc.pid)
                result.killed = True
                break
            if elapsed > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kill_job(proc.pid)
                raise TimeoutError(f"{argv} ran over {timeout} s; log {log_path}")
            time.sleep(0.02)
    result.returncode = proc.returncode
    result.seconds = time.monotonic() - started
    result.log = str(log_path)
    return result


def _numbered(path: Path) -> set[int]:
    try:
        return {int(p.name) for p in path.iterdir() if p.name.isdigit()}
    except FileNotFoundError:
        return set()


def _has_staging(paths: Iterable[Path]) -> bool:
    """True while a staging or ``_temporary`` directory exists anywhere under ``paths``."""
    stack = [p for p in paths if p.exists()]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for e in entries:
            if e.name in ("_temporary", "_tw_staging") or e.name.startswith((".spark-staging", "_temporary")):
                return True
            if e.is_dir(follow_symlinks=False) and not e.name.startswith("."):
                stack.append(Path(e.path))
    return False


def make_trigger(kind: str, rng: random.Random, out: Path, typical: float) -> Callable[[float], bool]:
    """The kill condition of trigger ``kind``: a function of the seconds since start, watching ``out``.

    ``typical`` is how long an uninterrupted run of the job takes (the time trigger draws below it).
    """
    chk = out / "chk" / "query"
    outputs = [out / "main", out / "late", out / "dead_letter"]
    if kind == "time":
        at = rng.uniform(0.2, 1.0) * typical
        return lambda elapsed: elapsed >= at
    if kind == "start":
        at = rng.uniform(0.3, 4.0)
        return lambda elapsed: elapsed >= at
    if kind == "commit":
        # the n-th commit file of this run (counted from what the earlier runs left)
        before = len(_numbered(chk / "commits"))
        n = before + rng.randrange(1, 4)
        return lambda elapsed: len(_numbered(chk / "commits")) >= n
    if kind == "mid_batch":
        before = max(_numbered(chk / "offsets"), default=-1)
        skip = rng.randrange(0, 3)

        def planned_not_committed(elapsed: float) -> bool:
            pending = _numbered(chk / "offsets") - _numbered(chk / "commits")
            return any(b > before + skip for b in pending)
        return planned_not_committed
    if kind == "staging":
        skip = rng.randrange(0, 3)
        seen = {"n": 0, "was": False}

        def staging(elapsed: float) -> bool:
            now = _has_staging(outputs)
            if now and not seen["was"]:
                seen["n"] += 1
            seen["was"] = now
            return now and seen["n"] > skip
        return staging
    if kind == "slice_dirs":
        n = rng.randrange(1, 4)
        before = {p.name for p in (out / "main").glob("slice=*")}
        return lambda elapsed: len({p.name for p in (out / "main").glob("slice=*")} - before) >= n
    if kind == "state":
        state_dirs = [out / "chk" / "backfill_state", out / "main" / "_state"]
        before = {str(p) for d in state_dirs for p in d.rglob("*")}
        return lambda elapsed: any(str(p) not in before for d in state_dirs for p in d.rglob("*"))
    raise ValueError(f"unknown kill trigger {kind!r}")


# --------------------------------------------------------------------------------------------------- outputs


def _text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def read_rows(path: Path, drop: Sequence[str] = ()) -> Counter[tuple[tuple[str, str], ...]]:
    """The rows of a parquet output directory as a multiset of ``((column, text value), ...)``.

    Spark's layout: data files anywhere below ``path`` except under ``_``/``.``-prefixed entries;
    ``slice=<label>`` directories add a ``slice`` column.  Timestamps are read as microseconds.  A
    ``row`` column (a dead letter's original row as JSON) is parsed and re-dumped with sorted keys.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows: Counter = Counter()
    if not path.exists():
        return rows
    for file in sorted(path.rglob("*.parquet")):
        rel = file.relative_to(path).parts
        if any(part.startswith(("_", ".")) for part in rel):
            continue
        table = pq.read_table(file, partitioning=None)
        columns = []
        for name, column in zip(table.column_names, table.columns, strict=True):
            if pa.types.is_timestamp(column.type):
                column = column.cast(pa.timestamp("us"))
            columns.append((name, column.to_pylist()))
        extra = [tuple(p.split("=", 1)) for p in rel[:-1] if "=" in p]
        for i in range(table.num_rows):
            row = {name: values[i] for name, values in columns}
            if isinstance(row.get("row"), str):
                # Dead letters' `row` JSON compared with sorted keys (each door writes its own key order).
                row["row"] = json.dumps(json.loads(row["row"]), sort_keys=True)
            row.update(dict(extra))
            rows[tuple(sorted((k, _text(v)) for k, v in row.items() if k not in drop))] += 1
    return rows


@dataclass
class Diff:
    """Duplicates, losses and differing rows of an output against a reference (see the module docstring)."""

    duplicates: int = 0
    losses: int = 0
    differing: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, other: Diff) -> None:
        self.duplicates += other.duplicates
        self.losses += other.losses
        self.differing += other.differing
        self.examples.extend(other.examples[: max(0, 6 - len(self.examples))])

    @property
    def clean(self) -> bool:
        return self.duplicates == self.losses == self.differing == 0


def compare(got: Counter, expected: Counter, what: str) -> Diff:
    """Count duplicates, losses and differing rows of ``got`` against ``expected``.

    >>> a, b, x = ((("id", "a"),), (("id", "b"),), (("id", "x"),))
    >>> d = compare(Counter({a: 2, x: 1}), Counter({a: 1, b: 1}), "main")
    >>> (d.duplicates, d.losses, d.differing)
    (1, 1, 1)
    """
    diff = Diff()
    for row, n in got.items():
        if row in expected:
            diff.duplicates += max(0, n - expected[row])
        else:
            diff.differing += n
            diff.examples.append(f"{what}: unexpected {dict(row)} x{n}")
    for row, n in expected.items():
        if got[row] < n:
            diff.losses += n - got[row]
            diff.examples.append(f"{what}: missing {dict(row)} x{n - got[row]}")
    return diff


def _project(rows: Counter, keep: Callable[[str], bool]) -> Counter:
    out: Counter = Counter()
    for row, n in rows.items():
        out[tuple((k, v) for k, v in row if keep(k))] += n
    return out


# --------------------------------------------------------------------------------------------------- the door


def door_main(argv: Sequence[str]) -> int:
    """``python -m tests.helpers.chaos door INPUTS OUT``: the DataFrame door's rows, as parquet under ``OUT``
    (see :func:`write_door`).  ``INPUTS`` is the JSON :func:`run_door` writes (input root and late ids)."""
    from timeweave.jobs.session import get_session

    spark = get_session()
    write_door(spark, json.loads(Path(argv[0]).read_text()), Path(argv[1]))
    spark.stop()
    return 0


def write_door(spark: Any, spec: dict[str, Any], out: Path) -> None:
    """The DataFrame door's rows of the inputs ``spec`` names, as parquet under ``out``, on ``spark``.

    ``out/<family>_<variant>/{main,dead_letter}`` for family ``tj``/``mr``/``win`` (those ``spec["families"]``
    lists; all when absent) and variant ``stream`` (input without the late rows: what a stream must have joined)
    and ``batch`` (every row: what a backfill joins).  The window family reads its CSV files with the jobs' reader
    (:func:`timeweave.spark.sources.read_source`: malformed records tagged, not NULLs) and gives its well-formed
    rows to :func:`timeweave.window_aggregate_with_rejects`; its dead letter is that door's plus the malformed
    records.  The session's parquet timestamp type is set for the writes and restored after them.
    """
    from pyspark.sql import functions as F

    import timeweave
    from timeweave.core.windows import hop
    from timeweave.spark.sources import read_source, split_malformed

    families = set(spec.get("families") or ("tj", "mr", "win"))

    key = "spark.sql.parquet.outputTimestampType"
    saved = spark.conf.get(key, None)
    spark.conf.set(key, "TIMESTAMP_MICROS")  # the harness reads the rows with pyarrow
    try:
        root = Path(spec["root"])

        def read(path: Path, schema: str):
            return spark.read.schema(schema).option("header", "true").csv(str(path))

        left, right = read(root / "tj" / "left", TJ_LEFT_SCHEMA), read(root / "tj" / "right", TJ_RIGHT_SCHEMA)
        events = read(root / "mr" / "input", MR_SCHEMA)
        if "win" in families:
            tagged = read_source(spark.read, "csv", WIN_SCHEMA, {"header": "true"}, str(root / "win" / "input"))
            win_rows, malformed = split_malformed(tagged, "input")
            window = hop(WIN_WINDOW["slide"], WIN_WINDOW["size"])
            for variant, late in (("stream", spec.get("win_late", [])), ("batch", [])):
                rows = win_rows.where(~F.col("id").isin(late)) if late else win_rows
                main, dead = timeweave.window_aggregate_with_rejects(rows, WIN_AGGREGATES, keys=WIN_WINDOW["keys"],
                                                                     time=WIN_WINDOW["time"], window=window)
                main.write.mode("overwrite").parquet(str(out / f"win_{variant}" / "main"))
                dead.unionByName(malformed).write.mode("overwrite").parquet(str(out / f"win_{variant}" / "dead_letter"))
        for variant, tj_late, mr_late in (("stream", spec["tj_late"], spec["mr_late"]), ("batch", [], [])):
            if "tj" not in families and "mr" not in families:
                break
            if "tj" in families:
                orders = left.where(~F.col("id").isin(tj_late)) if tj_late else left
                main, dead = timeweave.temporal_join_with_rejects(
                    orders, right, "order_time", key="currency", time="update_time", format="changelog", op="op",
                    how="left", left_key="currency",
                )
                main.write.mode("overwrite").parquet(str(out / f"tj_{variant}" / "main"))
                dead.write.mode("overwrite").parquet(str(out / f"tj_{variant}" / "dead_letter"))
            if "mr" not in families:
                continue
            rows = events.where(~F.col("id").isin(mr_late)) if mr_late else events
            timeweave.match_recognize(rows.where("t IS NOT NULL"), MR_CLAUSE).write.mode("overwrite").parquet(
                str(out / f"mr_{variant}" / "main"))
            # The stream's and backfill's dead letter for MATCH_RECOGNIZE: the rows without an event time.
            rows.where("t IS NULL").select(F.to_json(F.struct("*")).alias("row")).write.mode("overwrite").parquet(
                str(out / f"mr_{variant}" / "dead_letter"))
    finally:
        if saved is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, saved)


def run_door(inputs: Inputs, out: Path, spark: Any = None, families: Iterable[str] = ("tj", "mr", "win")
             ) -> Launch | bool | None:
    """Compute the DataFrame door's outputs of ``inputs`` for the job ``families``: on ``spark`` when given (a
    caller's session, e.g. the test suite's, saves a JVM start), else in a subprocess (see :func:`door_main`).
    None when reused."""
    spec = out / "door_inputs.json"
    done = out / "door_done.json"
    text = json.dumps({"root": str(inputs.root), "tj_late": sorted(inputs.tj_late_ids),
                       "mr_late": sorted(inputs.mr_late_ids), "win_late": sorted(inputs.win_late_ids),
                       "families": sorted(set(families)), "digest": _digest(inputs.root)})
    if done.exists() and done.read_text() == text:
        return None  # computed before over the very same input files (a re-run in the same work directory)
    out.mkdir(parents=True, exist_ok=True)
    spec.write_text(text)
    if spark is not None:
        write_door(spark, json.loads(text), out)
        done.write_text(text)
        return True
    result = launch([sys.executable, "-m", "tests.helpers.chaos", "door", str(spec), str(out)], out, None, None)
    if result.returncode != 0:
        raise RuntimeError(f"the DataFrame door failed (exit {result.returncode}); log {result.log}")
    done.write_text(text)
    return result


def _digest(root: Path) -> str:
    """A digest of every input file's path and bytes."""
    import hashlib

    h = hashlib.sha256()
    for file in sorted(root.rglob("*.csv")):
        h.update(str(file.relative_to(root)).encode() + b"\0" + file.read_bytes())
    return h.hexdigest()


# --------------------------------------------------------------------------------------------------- one job type


@dataclass
class JobResult:
    """What :func:`chaos_job` measured for one job type (one row of the table)."""

    job: str
    rounds: int = 0
    kills: int = 0
    restarts: int = 0
    launches: int = 0
    only_reruns: int = 0
    triggers: Counter = field(default_factory=Counter)
    completed_seconds: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    vs_reference: Diff = field(default_factory=Diff)
    vs_door: Diff = field(default_factory=Diff)
    seconds: float = 0.0
    error: str | None = None

    @property
    def clean(self) -> bool:
        return self.error is None and self.vs_reference.clean and self.vs_door.clean

    @property
    def total(self) -> Diff:
        d = Diff()
        d.add(self.vs_reference)
        d.add(self.vs_door)
        return d


def _job_argv(job: str, config: Path, inputs: Inputs, slices: int, flush: bool = False,
              only: Sequence[int] | None = None, slices_per_job: int | None = None) -> list[str]:
    argv = [sys.executable, "-m", "timeweave.jobs"]
    if job.endswith("_streaming"):
        return [*argv, "streaming", "--config", str(config), *(["--flush"] if flush else [])]
    argv += ["backfill", "--config", str(config), "--start", inputs.start.isoformat(), "--end",
             inputs.end.isoformat(), "--slices", str(slices)]
    if only:
        argv += ["--only", *map(str, only)]
    if slices_per_job is not None:
        argv += ["--slices-per-job", str(slices_per_job)]
    return argv


def _steps(job: str, config: Path, inputs: Inputs, slices: int, slices_per_job: int | None) -> list[list[str]]:
    """The commands one complete run of ``job`` is: streaming = run to end of input, then ``--flush``."""
    if job.endswith("_streaming"):
        return [_job_argv(job, config, inputs, slices), _job_argv(job, config, inputs, slices, flush=True)]
    return [_job_argv(job, config, inputs, slices, slices_per_job=slices_per_job)]


def _outputs(out: Path) -> dict[str, Counter]:
    return {name: read_rows(out / name) for name in ("main", "late", "dead_letter")}


def _check_door(job: str, got: dict[str, Counter], door: Path, inputs: Inputs) -> Diff:
    """The job's outputs against the DataFrame door (and, for streams, the late rows the data defines)."""
    family = job.split("_")[0]
    variant = "stream" if job.endswith("_streaming") else "batch"
    no_slice = lambda k: k != "slice"  # noqa: E731
    diff = Diff()
    diff.add(compare(_project(got["main"], no_slice), read_rows(door / f"{family}_{variant}" / "main"), f"{job} main vs door"))
    # dead letters: the original rows (and side, for the temporal join); the reason wording is the job's, but for
    # the window jobs, whose doors share one reason text (NULL event time, malformed records) and compare it too
    kept = {"tj": ("row", "side"), "mr": ("row",), "win": ("row", "side", "reason")}[family]
    keep = lambda k: k in kept  # noqa: E731
    diff.add(compare(_project(got["dead_letter"], keep), _project(read_rows(door / f"{family}_{variant}" / "dead_letter"), keep),
                     f"{job} dead letters vs door"))
    late_ids = {"tj": inputs.tj_late_ids, "mr": inputs.mr_late_ids, "win": inputs.win_late_ids}[family]
    expected_late = Counter({(("id", i),): 1 for i in late_ids}) if variant == "stream" else Counter()
    diff.add(compare(_project(got["late"], lambda k: k == "id"), expected_late, f"{job} late ids vs input"))
    return diff


def failure_reason(log: str) -> str:
    """The last exception line of a job's log (what a failed launch died of)."""
    lines = [line.strip() for line in Path(log).read_text(errors="replace").splitlines()]
    hits = [line for line in lines if "Exception" in line or "Error" in line]
    return (hits or lines or ["(empty log)"])[-1][:300]


def _run_to_end(steps: list[list[str]], cwd: Path, out: Path, rng: random.Random, kills_left: int,
                triggers: Sequence[str], typical: float, result: JobResult, max_failures: int = 3) -> None:
    """Run ``steps`` in order, killing up to ``kills_left`` launches at random triggers, restarting each step
    until it exits 0 (a launch that exits non-zero without a kill is an error)."""
    for argv in steps:
        failures = 0
        while True:
            kind = rng.choice(list(triggers)) if kills_left > 0 else None
            # the time trigger draws below how long a launch that completed took (the machine's pace)
            if result.completed_seconds:
                typical = sum(result.completed_seconds[-4:]) / len(result.completed_seconds[-4:])
            fire = make_trigger(kind, rng, out, typical) if kind else None
            launched = launch(argv, cwd, fire, kind)
            result.launches += 1
            if launched.killed:
                kills_left -= 1
                result.kills += 1
                result.restarts += 1
                result.triggers[kind] += 1
                continue
            if launched.returncode != 0:
                # A job that fails on its own (an overloaded machine: "Python worker failed to connect back")
                # is restarted as a killed one is, and reported; the same step failing again and again is an error.
                failures += 1
                result.restarts += 1
                result.failures.append(failure_reason(launched.log))
                if failures > max_failures:
                    raise RuntimeError(f"{' '.join(argv[1:])} exited {launched.returncode} {failures} times without a "
                                       f"kill; last log {launched.log}: {result.failures[-1]}")
                continue
            result.completed_seconds.append(launched.seconds)
            break
    return None


def chaos_job(job: str, inputs: Inputs, work: Path, door: Path, kills: int, rng: random.Random,
              reference: bool = True, kills_per_round: int = 3, slices: int = 4, max_failures: int = 3,
              triggers: Sequence[str] | None = None) -> JobResult:
    """Kill ``job`` ``kills`` times in rounds of up to ``kills_per_round``, each round run to completion on fresh
    output directories and compared with an uninterrupted run (``reference``) and with the DataFrame door.
    Backfill rounds then re-run one slice (``--only k``), killed once, to completion, and compare again.
    ``triggers`` limits the kill points drawn from (default: all of the job's kind)."""
    started = time.monotonic()
    result = JobResult(job)
    streaming = job.endswith("_streaming")
    allowed = STREAMING_TRIGGERS if streaming else BACKFILL_TRIGGERS
    unknown = sorted(set(triggers or ()) - set(allowed))
    if unknown:
        raise ValueError(f"{job}: unknown kill points {unknown}; choose from {list(allowed)}")
    triggers = tuple(triggers) if triggers else allowed
    base = work / job
    shutil.rmtree(base, ignore_errors=True)
    typical = 20.0
    ref_rows: dict[str, Counter] | None = None
    if reference:
        ref_out = base / "reference"
        config = ref_out / "job.json"
        ref_out.mkdir(parents=True)
        config.write_text(json.dumps(job_config(job, inputs, ref_out)))
        t = time.monotonic()
        # "uninterrupted": no kill (a run failing on its own is restarted and reported, as in the rounds)
        _run_to_end(_steps(job, config, inputs, slices, None), ref_out, ref_out, rng, 0, triggers, typical, result, max_failures)
        typical = (time.monotonic() - t) / (2 if streaming else 1)
        ref_rows = _outputs(ref_out)
        result.vs_door.add(_check_door(job, ref_rows, door, inputs))
    round_no = 0
    while result.kills < kills:
        out = base / f"round-{round_no}"
        out.mkdir(parents=True)
        config = out / "job.json"
        config.write_text(json.dumps(job_config(job, inputs, out)))
        # temporal-join backfills: alternate one Spark job for all slices and one job per slice
        per_job = 1 if (job == "tj_backfill" and round_no % 2) else None
        before = result.kills
        remaining = kills - result.kills
        only_kills = 1 if not streaming and remaining >= 2 else 0  # a backfill round keeps one kill for --only k
        _run_to_end(_steps(job, config, inputs, slices, per_job), out, out, rng,
                    min(kills_per_round, remaining - only_kills), triggers, typical, result, max_failures)
        checks = [_outputs(out)]
        if not streaming:
            k = rng.randrange(slices)
            only = [_job_argv(job, config, inputs, slices, only=[k], slices_per_job=per_job)]
            _run_to_end(only, out, out, rng, only_kills, triggers, typical / 2, result, max_failures)
            result.only_reruns += 1
            checks.append(_outputs(out))
        for got in checks:
            if ref_rows is not None:
                for name in ("main", "late", "dead_letter"):
                    result.vs_reference.add(compare(got[name], ref_rows[name], f"{job} round {round_no} {name} vs uninterrupted"))
            result.vs_door.add(_check_door(job, got, door, inputs))
        result.rounds += 1
        round_no += 1
        if result.kills == before and round_no > 3 * kills + 3:
            raise RuntimeError(f"{job}: no trigger fired in {round_no} rounds")
    result.seconds = time.monotonic() - started
    return result


# --------------------------------------------------------------------------------------------------- the suite


@dataclass(frozen=True)
class ChaosSettings:
    """A chaos run: where, how many kills per job type, which job types, the seed, the input size.

    ``streaming_kills``: kills per streaming job type, when not ``kills`` (a backfill needs two for its round and
    its ``--only`` re-run; a stream's one round needs one).  ``job_kills`` and ``triggers`` set a job type's kills
    and the kill points drawn from (default: ``kills_of``'s rule, every kill point of its kind).
    """

    work: Path
    kills: int = 20
    jobs: Sequence[str] = JOBS
    seed: int = 20
    files: int = 6
    rows_per_file: int = 14
    reference: bool = True
    kills_per_round: int = 3
    slices: int = 4
    parallel: int = 1
    max_failures: int = 3
    streaming_kills: int | None = None
    job_kills: Mapping[str, int] = field(default_factory=dict)
    triggers: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def kills_of(self, job: str) -> int:
        """How many kills job type ``job`` gets."""
        if job in self.job_kills:
            return self.job_kills[job]
        if job.endswith("_streaming") and self.streaming_kills is not None:
            return self.streaming_kills
        return self.kills


def run_chaos(settings: ChaosSettings, progress: Callable[[str], None] = lambda _: None,
              door_spark: Any = None) -> list[JobResult]:
    """Write the inputs, compute the DataFrame door once (on ``door_spark`` if given, else in a subprocess), then
    :func:`chaos_job` each job type."""
    unknown = sorted(set(settings.jobs) - set(JOBS))
    if unknown:
        raise ValueError(f"unknown job types {unknown}; choose from {list(JOBS)}")
    work = settings.work
    work.mkdir(parents=True, exist_ok=True)
    inputs = write_inputs(work / "inputs", settings.seed, settings.files, settings.rows_per_file)
    progress(f"inputs: {settings.files} files per input under {inputs.root}")
    door = work / "door"
    t = time.monotonic()
    fresh = run_door(inputs, door, door_spark, {job.split("_")[0] for job in settings.jobs})
    progress(f"DataFrame door: {time.monotonic() - t:.0f} s" if fresh else f"DataFrame door: reused {door}")

    def one(i: int, job: str) -> JobResult:
        rng = random.Random(settings.seed * 1000 + JOBS.index(job))
        try:
            result = chaos_job(job, inputs, work, door, settings.kills_of(job), rng, settings.reference,
                               settings.kills_per_round, settings.slices, settings.max_failures,
                               settings.triggers.get(job))
        except (RuntimeError, TimeoutError) as e:  # one job type's error must not hide the others' rows
            result = JobResult(job, error=str(e))
        progress(format_row(result))
        return result

    # Job types are independent (own directories, own random streams); the harness only waits on
    # subprocesses, so threads can run several job types at once.
    with ThreadPoolExecutor(max_workers=max(1, settings.parallel)) as pool:
        return list(pool.map(one, range(len(settings.jobs)), settings.jobs))


HEADER = ("job type", "kills survived", "restarts", "rounds", "`--only` re-runs", "kill points",
          "failed on their own (restarted)", "duplicates", "losses", "differing rows", "wall time (s)")


def format_row(r: JobResult) -> str:
    if r.error is not None:
        return f"| {r.job} | error: {r.error[:200]} |"
    total = r.total
    points = ", ".join(f"{k} {n}" for k, n in sorted(r.triggers.items()))
    cells = (r.job, r.kills, r.restarts, r.rounds, r.only_reruns if r.job.endswith("backfill") else "-", points,
             len(r.failures), total.duplicates, total.losses, total.differing, f"{r.seconds:.0f}")
    return "| " + " | ".join(map(str, cells)) + " |"


def format_table(results: Sequence[JobResult]) -> str:
    """The results as a markdown table (one row per job type)."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    return "\n".join([*lines, *map(format_row, results)])


def _main(argv: Sequence[str]) -> int:
    if argv[:1] == ["door"]:
        return door_main(argv[1:])
    raise SystemExit("usage: python -m tests.helpers.chaos door INPUTS.json OUT  (the chaos CLI is bench/chaos.py)")


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))


__all__ = ["JOBS", "ChaosSettings", "Diff", "Inputs", "JobResult", "chaos_job", "compare", "format_table",
           "job_config", "launch", "make_trigger", "read_rows", "run_chaos", "run_door", "write_door", "write_inputs"]
