"""The suite's own scheduling: with ``-n 2 --dist loadfile`` (.ci/run) a worker takes whole modules in
collection order, so tests/conftest.py collects the modules holding a ``slow`` test first; no JVM here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import pytest_collection_modifyitems, pytest_configure

REPO = Path(__file__).resolve().parents[2]


def _item(module: str, name: str, slow: bool = False) -> SimpleNamespace:
    return SimpleNamespace(nodeid=f"{module}::{name}", module=SimpleNamespace(__name__=module),
                           get_closest_marker=lambda mark: object() if slow and mark == "slow" else None)


def test_modules_with_a_slow_test_come_first_whole_and_in_their_order():
    items = [_item("a", "t1"), _item("b", "fast"), _item("c", "t1"), _item("b", "end_to_end", slow=True),
             _item("d", "t1", slow=True), _item("a", "t2")]
    pytest_collection_modifyitems(None, items)
    assert [i.nodeid for i in items] == ["b::fast", "b::end_to_end", "d::t1", "a::t1", "c::t1", "a::t2"]


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
