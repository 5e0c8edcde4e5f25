"""Which interpreter runs the Python workers of a user's own session (``runtime/spark/environment.py``).

A script started as ``.venv/bin/python script.py`` from an un-activated virtualenv has no ``PYSPARK_PYTHON``
and a ``python3`` on PATH that is not the venv's: PySpark then runs its workers with that ``python3``, which
lacks timeweave.  The subprocess tests build exactly that environment (a ``python3`` on PATH from a bare venv
with no packages) and run tests/spark/scripts/worker_python.py through the public doors, on a local master and
on a multi-process ``local-cluster`` (executors in their own JVMs), comparing with rows the core computes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers.plain_env import plain_env
from timeweave.spark.environment import PYTHON_CONF, WorkerPythonError, ensure_worker_python

SCRIPT = Path(__file__).parent / "scripts" / "worker_python.py"


def run_script(tmp_path: Path, master: str, timeout: int) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), master], env=plain_env(tmp_path), cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def assert_doors_equal_core(result: dict) -> None:
    assert result["temporal_join"] == result["expected_temporal_join"]
    assert any(rate is not None for _, rate in result["temporal_join"])  # not vacuous: versions were found
    assert any(rate is None for _, rate in result["temporal_join"])  # and orders before the first version
    assert result["expected_match_recognize"], "the pattern must match somewhere"
    for door in ("match_recognize", "sql", "udtf"):
        assert result[door] == result["expected_match_recognize"], door


@pytest.mark.slow
def test_plain_venv_script_runs_match_recognize_with_the_drivers_interpreter(tmp_path: Path) -> None:
    result = run_script(tmp_path, "local[2]", timeout=900)
    assert result["python_exec"] == sys.executable
    assert_doors_equal_core(result)


@pytest.mark.slow
def test_local_cluster_executors_in_their_own_jvms(tmp_path: Path) -> None:
    result = run_script(tmp_path, "local-cluster[2,1,1024]", timeout=900)
    assert result["executors"] == 2
    assert_doors_equal_core(result)


# -- the choice itself, on stand-in sessions (no JVM) ---------------------------------------------------------


def fake_session(master: str, conf: dict[str, str] | None = None) -> SimpleNamespace:
    context = SimpleNamespace(master=master, pythonExec="python3",
                              getConf=lambda: SimpleNamespace(get=lambda key, default=None: (conf or {}).get(key, default)))
    return SimpleNamespace(sparkContext=context)


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local-cluster[2,1,1024]"])
def test_local_master_without_a_choice_gets_the_drivers_interpreter(monkeypatch, master: str) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    session = fake_session(master)
    assert ensure_worker_python(session) == sys.executable
    assert session.sparkContext.pythonExec == sys.executable


def test_pyspark_python_in_the_environment_is_kept(monkeypatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/python/bin/python3")
    session = fake_session("local[2]")
    session.sparkContext.pythonExec = "/opt/python/bin/python3"  # what SparkContext read at start
    assert ensure_worker_python(session) == "/opt/python/bin/python3"
    assert session.sparkContext.pythonExec == "/opt/python/bin/python3"


@pytest.mark.parametrize("master", ["local[2]", "yarn"])
def test_the_sessions_conf_is_honoured(monkeypatch, master: str) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    session = fake_session(master, {PYTHON_CONF: "/cluster/python3"})
    assert ensure_worker_python(session) == "/cluster/python3"
    assert session.sparkContext.pythonExec == "/cluster/python3"


@pytest.mark.parametrize("master", ["yarn", "spark://host:7077", "k8s://https://api:6443"])
def test_cluster_master_without_a_choice_fails_naming_what_to_set(monkeypatch, master: str) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    session = fake_session(master)
    with pytest.raises(WorkerPythonError) as error:
        ensure_worker_python(session)
    message = str(error.value)
    assert "PYSPARK_PYTHON" in message and PYTHON_CONF in message and master in message
    assert session.sparkContext.pythonExec == "python3"  # nothing changed


def test_spark_connect_session_is_left_to_the_server(monkeypatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    connect = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session"})()
    assert ensure_worker_python(connect) is None


def test_match_recognize_door_fails_before_any_job_on_a_cluster_master(monkeypatch) -> None:
    """The DataFrame door asks before it plans: a cluster session with no choice never reaches Spark."""
    import timeweave

    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    frame = SimpleNamespace(sparkSession=fake_session("yarn"))
    with pytest.raises(WorkerPythonError):
        timeweave.match_recognize(frame, "PATTERN (A) DEFINE A AS true")
