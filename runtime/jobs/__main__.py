"""``python -m runtime.jobs <kind> --config job.json ...`` (see :mod:`runtime.jobs.cli`)."""

from runtime.jobs.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
