"""spark-submit entry point: ``spark-submit ... timeweave_job.py streaming --config job.json``.

It runs ``python -m timeweave.jobs`` with the same arguments, so the job, its validation and its
``TIMEWEAVE_METRICS`` line are exactly those of the job CLI.
"""

from __future__ import annotations

import runpy

if __name__ == "__main__":
    runpy.run_module("timeweave.jobs", run_name="__main__", alter_sys=True)
