"""CPU seconds of test modules, JVMs and every other descendant included (wall time lies on a shared machine).

Runs ``python -m pytest MODULE`` once per module given, in this checkout, and reports the user + system CPU
seconds of the whole process tree: pytest, the SparkSession's JVM, its Python workers, and the subprocess
jobs, dbt, Airflow and Spark Connect runs a test starts.  This process makes itself the child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``), so a descendant whose parent exits without waiting for it (a JVM left to
die with its driver) is re-parented here and reaped here: its CPU time is counted too (``getrusage`` counts
only the waited-for).  Wall seconds and the 1-minute load are printed beside, for context only.

Usage (from the checkout's root; ``--`` passes the rest to pytest)::

    nice -n 19 /work/main/.venv/bin/python bench/suite_cpu.py tests/spark/test_streaming.py -- -q -x

Example (a core module: no JVM)::

    $ python bench/suite_cpu.py tests/core/test_time.py
    | module | CPU s (user + sys) | wall s | load (1 min) at start | pytest |
    |---|---|---|---|---|
    | tests/core/test_time.py | 2.0 | 2.4 | 3.1 | 4 passed in 1.40s |
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


@dataclass(frozen=True)
class ModuleCpu:
    """One module's run: CPU seconds of its whole process tree, wall seconds, the load at start, pytest's last line."""

    module: str
    cpu: float
    wall: float
    load: float
    summary: str
    returncode: int
    output: str = ""


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process (Linux), so their CPU time is counted here."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _reap_all(grace: float) -> list[int]:
    """Wait for every descendant re-parented here; after ``grace`` seconds return the pids still running."""
    deadline = time.monotonic() + grace
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return []
        if pid == 0:
            if time.monotonic() > deadline:
                return _live_children()
            time.sleep(0.2)


def _live_children() -> list[int]:
    me = str(os.getpid())
    live = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if stat[stat.rindex(")") + 2 :].split()[1] == me:
                live.append(int(entry.name))
    return live


def run_module(module: str, pytest_args: list[str], grace: float = 120.0) -> ModuleCpu:
    """Run pytest on ``module`` and measure its whole process tree."""
    before = _children_cpu()
    load = os.getloadavg()[0]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", module, *pytest_args], cwd=REPO, capture_output=True, text=True, check=False
    )
    left = _reap_all(grace)
    wall = time.monotonic() - started
    lines = [line.strip("= ") for line in done.stdout.splitlines() if line.strip()]
    summary = lines[-1] if lines else done.stderr.strip()[-200:]
    if left:
        summary += f" (still running after {grace:.0f} s, not counted: {left})"
    return ModuleCpu(module, _children_cpu() - before, wall, load, summary, done.returncode, done.stdout)


def main(argv: list[str]) -> int:
    # Split at "--" by hand: argparse would take the pytest options after it as more modules.
    ours, rest = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+", help="test modules (or node ids) to run one at a time")
    args = parser.parse_args(ours)
    options = [m for m in args.modules if m.startswith("-")]
    if options:  # a module list of options would run the whole suite
        parser.error(f"pytest options {options} go after '--'")
    pytest_args = rest or ["-q", "-x"]
    become_subreaper()
    print("| module | CPU s (user + sys) | wall s | load (1 min) at start | pytest |")
    print("|---|---|---|---|---|", flush=True)
    status = 0
    for module in args.modules:
        r = run_module(module, pytest_args)
        status = status or r.returncode
        print(f"| {r.module} | {r.cpu:.1f} | {r.wall:.1f} | {r.load:.1f} | {r.summary} |", flush=True)
        if r.returncode != 0:  # why: the failures' lines of pytest's report
            print("\n".join(r.output.splitlines()[-60:]), file=sys.stderr, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
