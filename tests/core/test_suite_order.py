"""The suite's own scheduling: with ``-n 2 --dist loadfile`` (.ci/run) a worker takes whole modules in
collection order, so tests/conftest.py collects the modules holding a ``slow`` test first; no JVM here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import (
    LONGEST_FIRST,
    TEST_JVM_OPTIONS,
    pytest_collection_modifyitems,
    pytest_configure,
    use_test_spark_defaults,
)

REPO = Path(__file__).resolve().parents[2]


def _item(module: str, name: str, slow: bool = False) -> SimpleNamespace:
    return SimpleNamespace(nodeid=f"{module}::{name}", module=SimpleNamespace(__name__=module),
                           get_closest_marker=lambda mark: object() if slow and mark == "slow" else None)


def test_modules_with_a_slow_test_come_first_whole_and_in_their_order():
    items = [_item("a", "t1"), _item("b", "fast"), _item("c", "t1"), _item("b", "end_to_end", slow=True),
             _item("d", "t1", slow=True), _item("a", "t2")]
    pytest_collection_modifyitems(None, items)
    assert [i.nodeid for i in items] == ["b::fast", "b::end_to_end", "d::t1", "a::t1", "c::t1", "a::t2"]


def test_the_longest_modules_first_then_slow_then_jvm_then_engine_free_modules():
    chaos_kills = LONGEST_FIRST[0].split("::")[1]
    items = [_item("tests/core/test_a.py", "t1"), _item("tests/spark/test_b.py", "t1"),
             _item("tests/spark/test_c.py", "t1", slow=True), _item("tests/dbt/test_dbt_models.py", "t1"),
             _item("tests/core/windows/test_d.py", "t1"), _item("tests/spark/test_chaos.py", "compare", slow=True),
             _item("tests/spark/test_chaos.py", chaos_kills, slow=True),
             _item("tests/airflow/test_example_dag.py", "t1", slow=True), _item("tests/spark/test_b.py", "t2"),
             _item("tests/dbt/test_dbt_models.py", "t2")]
    pytest_collection_modifyitems(None, items)
    assert [i.nodeid for i in items] == [
        LONGEST_FIRST[0], "tests/spark/test_chaos.py::compare", "tests/airflow/test_example_dag.py::t1",
        "tests/dbt/test_dbt_models.py::t1", "tests/dbt/test_dbt_models.py::t2",
        "tests/spark/test_c.py::t1", "tests/spark/test_b.py::t1", "tests/spark/test_b.py::t2",
        "tests/core/test_a.py::t1", "tests/core/windows/test_d.py::t1"]
    for entry in LONGEST_FIRST:  # a renamed module or test would silently lose its place
        path, _, name = entry.partition("::")
        assert (REPO / path).is_file(), path
        assert not name or f"def {name}(" in (REPO / path).read_text(), entry


def test_every_spark_jvm_of_the_run_reads_the_test_spark_defaults(tmp_path):
    import os

    # this run's: conftest pointed SPARK_CONF_DIR at them before any JVM (or the machine had its own)
    conf_dir = Path(os.environ["SPARK_CONF_DIR"])
    env: dict[str, str] = {}
    conf = use_test_spark_defaults(tmp_path / "conf", env)
    assert env == {"SPARK_CONF_DIR": str(tmp_path / "conf")} and conf == tmp_path / "conf" / "spark-defaults.conf"
    lines = dict(line.split(" ", 1) for line in conf.read_text().splitlines())
    assert lines == {"spark.driver.defaultJavaOptions": TEST_JVM_OPTIONS,
                     "spark.executor.defaultJavaOptions": TEST_JVM_OPTIONS}
    # a conf dir already named (a machine's own, or Spark's defaults to measure against) is kept
    assert use_test_spark_defaults(tmp_path / "other", env) is None and env["SPARK_CONF_DIR"] == str(tmp_path / "conf")
    assert not (tmp_path / "other").exists() and conf_dir.is_dir()


def test_loadfile_keeps_the_collection_order_instead_of_most_tests_first():
    config = SimpleNamespace(option=SimpleNamespace(dist="loadfile", loadscopereorder=True))
    pytest_configure(config)
    assert config.option.loadscopereorder is False
    serial = SimpleNamespace(option=SimpleNamespace(dist="no", loadscopereorder=True))
    pytest_configure(serial)
    assert serial.option.loadscopereorder is True


def test_ci_runs_two_xdist_workers_by_module_and_dev_installs_xdist():
    command = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert re.search(r"-m pytest -n 2 --dist loadfile$", command), command
    dev = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    assert any(req.startswith("pytest-xdist") for req in dev), dev
