"""The environment of a script or ``dbt`` started from an un-activated virtualenv, for subprocess tests.

No ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON`` (nobody chose the workers' interpreter) and a ``python3`` first
on PATH that is not the venv's: a bare venv with no packages (no pyspark, pyarrow or timeweave), so PySpark's
default worker executable ``python3`` is an interpreter that cannot run timeweave's code.
"""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def bare_python_path(tmp_path: Path) -> str:
    """A PATH whose ``python3`` is an interpreter without pyspark, pyarrow or timeweave, then the system's dirs."""
    bare = tmp_path / "bare-venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(bare)  # no site-packages of ours
    check = subprocess.run([str(bare / "bin" / "python3"), "-c", "import pyspark"], capture_output=True, check=False)
    assert check.returncode != 0, "the bare interpreter must not see pyspark"
    return os.pathsep.join([str(bare / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])


def plain_env(tmp_path: Path) -> dict[str, str]:
    """``os.environ`` without any PYSPARK_* choice or activated venv, with a foreign ``python3`` first on PATH.

    The checkout under test is on PYTHONPATH, as an install would provide it (the JVM passes PYTHONPATH on to
    the Python workers, so the workers see this checkout too).
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_CONNECT", "VIRTUAL_ENV")) and k != "SPARK_HOME"}
    env["PATH"] = bare_python_path(tmp_path)
    env["PYTHONPATH"] = str(REPO)
    return env
