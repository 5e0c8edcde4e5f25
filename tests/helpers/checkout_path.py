"""Import ``timeweave`` from THIS checkout even when the installed (editable) copy is another checkout's.

The package maps folders onto import names (``runtime/`` -> ``timeweave``, ``airflow_plugin/`` ->
``timeweave.airflow``, ``dbt_macros/`` -> ``timeweave.dbt_package``, see setup.py), so putting a checkout on
``PYTHONPATH`` is not enough to test it: a second git worktree would silently import the first one's code.
The README's strict editable install is a per-file link tree, so a module added after installing would be
missing too.  :func:`ensure` therefore builds ``.dev/timeweave`` (directory symlinks: new modules appear without
re-installing) and puts ``.dev`` first on ``sys.path`` and on ``PYTHONPATH`` (Spark's Python workers,
spark-submit, dbt and Airflow subprocesses inherit it).  The packaging itself is tested by building the wheel
(tests/core/test_packaging.py).

Outside pytest: ``PYTHONPATH=$(python -m tests.helpers.checkout_path) python bench/....py``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = {"": "runtime", "airflow": "airflow_plugin", "dbt_package": "dbt_macros"}


def _current(package: Path) -> dict[str, Path] | None:
    if not package.is_dir():
        return None
    return {link.name: Path(os.readlink(link)) for link in package.iterdir() if link.is_symlink()}


def ensure() -> str:
    """Make ``import timeweave`` resolve to this checkout; returns the ``PYTHONPATH`` to use."""
    root = REPO / ".dev"
    package = root / "timeweave"
    links = {entry.name: entry for entry in (REPO / "runtime").iterdir() if entry.name != "__pycache__"}
    links.update({name: REPO / folder for name, folder in FOLDERS.items() if name})
    if _current(package) != links:
        # Built aside and swapped in: another pytest run in this checkout may be importing from it right now.
        staging = root / f".timeweave-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for name, target in links.items():
            (staging / name).symlink_to(target, target_is_directory=target.is_dir())
        retired = root / f".retired-{os.getpid()}"
        if package.exists():
            package.rename(retired)
        staging.rename(package)
        shutil.rmtree(retired, ignore_errors=True)
    entries = [str(root), str(REPO)]
    for name in [m for m in sys.modules if m == "timeweave" or m.startswith("timeweave.")]:
        del sys.modules[name]
    for entry in reversed(entries):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in entries]
    os.environ["PYTHONPATH"] = os.pathsep.join(entries + inherited)
    return os.environ["PYTHONPATH"]


if __name__ == "__main__":
    print(ensure())
