"""The core stays engine-free, and every public example in it runs."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import subprocess
import sys

import pytest

import timeweave.core

CORE_MODULES = sorted(m.name for m in pkgutil.walk_packages(timeweave.core.__path__, "timeweave.core."))


def test_importing_the_core_does_not_import_pyspark() -> None:
    code = "import sys, timeweave.core, timeweave.core.temporal_sql, timeweave.jobs.config; print('pyspark' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    "name", [*CORE_MODULES, "timeweave.spark.render", "timeweave.jobs.config", "timeweave.jobs.backfill", "timeweave.spark.backfill"]
)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
