"""Chaos: kill -9 the streaming jobs and backfills at random points, restart them, compare their outputs.

For each job type (temporal-join streaming, MATCH_RECOGNIZE streaming, temporal-join backfill,
MATCH_RECOGNIZE backfill, window streaming, window backfill: a HOP window aggregation) the jobs run as a user runs them (``python -m timeweave.jobs streaming --config job.json``
then ``--flush``; ``python -m timeweave.jobs backfill --config ... --start ... --end ... --slices 4``, then
``--only k``), are killed with SIGKILL on their whole process group (driver, JVM, Python workers) at random
points (time after start, right after start, after the n-th commit file, between planning and commit of a
batch, while a staging / ``_temporary`` directory exists, as ``slice=`` directories appear, while the state is
written), and are restarted until they complete.  Main, late and dead-letter outputs are then compared with an
uninterrupted run and with the DataFrame door (``timeweave.temporal_join_with_rejects`` / ``timeweave.match_recognize``
/ ``timeweave.window_aggregate_with_rejects`` in a subprocess).  The logic lives in ``tests/helpers/chaos.py`` (the CI test ``tests/spark/test_chaos.py`` runs
it with one kill per streaming job type and two per backfill job type, one each for the window job types, the door
on the suite's session).

    .venv/bin/python bench/chaos.py --kills 20
    .venv/bin/python bench/chaos.py --kills 6 --jobs tj_streaming mr_backfill --seed 7 --work /tmp/chaos
    .venv/bin/python bench/chaos.py --kills 3 --jobs win_streaming win_backfill

Prints one table row per job type (kills survived, restarts, duplicates, losses, differing rows, wall time) and
exits 1 if any output differs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.chaos import JOBS, ChaosSettings, format_table, run_chaos


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=20, help="kills per job type (default 20)")
    p.add_argument("--jobs", nargs="+", choices=JOBS, default=list(JOBS), help="job types (default: all)")
    p.add_argument("--seed", type=int, default=20, help="seed of the inputs and kill points (default 20)")
    p.add_argument("--files", type=int, default=6, help="CSV files per input = micro-batches per stream (default 6)")
    p.add_argument("--rows-per-file", type=int, default=14, help="ordinary rows per file (default 14)")
    p.add_argument("--kills-per-round", type=int, default=3,
                   help="kills before a round is run to completion and compared (default 3)")
    p.add_argument("--no-reference", action="store_true", help="skip the uninterrupted run (compare with the door only)")
    p.add_argument("--max-failures", type=int, default=3,
                   help="launches of one step that may fail on their own (overloaded machine) before it is an error")
    p.add_argument("--parallel", type=int, default=1, help="job types run at once (default 1)")
    p.add_argument("--work", type=Path, help="work directory (default: a new temporary directory)")
    args = p.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="timeweave-chaos-"))
    settings = ChaosSettings(
        work=work, kills=args.kills, jobs=tuple(args.jobs), seed=args.seed, files=args.files,
        rows_per_file=args.rows_per_file, reference=not args.no_reference, kills_per_round=args.kills_per_round,
        parallel=args.parallel, max_failures=args.max_failures,
    )
    started = datetime.now(UTC)
    load = os.getloadavg()
    t = time.monotonic()
    results = run_chaos(settings, progress=lambda line: print(line, flush=True))
    print(f"\n{started:%Y-%m-%d %H:%M} UTC, {time.monotonic() - t:.0f} s, load at start "
          f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} on {os.cpu_count()} cores, work {work}")
    print(format_table(results))
    for r in results:
        for line in r.total.examples:
            print("  ", line)
        for reason in r.failures:
            print(f"   {r.job}: a launch failed on its own and was restarted: {reason}")
    return 0 if all(r.clean for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
