"""Airflow test environment: a throw-away AIRFLOW_HOME with a sqlite metadata DB.

Airflow reads its configuration when ``airflow`` is first imported, which happens while pytest
collects the test modules of this directory, before any fixture could run.  So the environment is
set when this conftest is imported; the ``airflow_home`` fixture hands out the path and migrates
the database (once per session, only for the tests that need it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="timeweave-airflow-"))

os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_AIRFLOW_HOME / 'airflow.db'}"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO / "dags")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(_AIRFLOW_HOME / "plugins")


@pytest.fixture(scope="session")
def airflow_home() -> Path:
    """The temp AIRFLOW_HOME, with ``airflow db migrate`` run against its sqlite database."""
    result = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return _AIRFLOW_HOME


@pytest.fixture
def fake_spark(tmp_path, monkeypatch):
    """``spark-submit`` and ``yarn`` on PATH are ``tests/airflow/fake_spark_submit.py``: returns a function giving
    the recorded calls ``[(binary, argv), ...]``; set ``FAKE_SPARK_MODE`` to choose what the fake job does."""
    import json

    source = (Path(__file__).with_name("fake_spark_submit.py")).read_text()
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    for name in ("spark-submit", "yarn"):
        script = bin_dir / name
        script.write_text(f"#!{sys.executable}\n{source}")
        script.chmod(0o755)
    record = tmp_path / "fake-spark-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_SPARK_RECORD", str(record))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))

    def calls() -> list[tuple[str, list[str]]]:
        if not record.exists():
            return []
        return [(row["binary"], row["argv"]) for row in map(json.loads, record.read_text().splitlines())]

    return calls
