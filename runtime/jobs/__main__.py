"""``python -m timeweave.jobs <kind> --config job.json ...`` (see :mod:`timeweave.jobs.cli`)."""

from timeweave.jobs.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
