"""The job registry (timeweave.jobs.registry): a config section selects its operator, and the drivers run any
registered operator without naming one (no Spark: a fake operator's job module stands in)."""

from __future__ import annotations

import doctest
import re
import sys
import types
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import timeweave.jobs.registry as registry
from timeweave.core.errors import SpecError
from timeweave.jobs import backfill as backfill_job
from timeweave.jobs import cli
from timeweave.jobs.config import MatchRecognizeJobConfig, load_job_config

REPO = Path(__file__).resolve().parents[2]
MR = {"match_recognize": {"clause": "PARTITION BY s ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS A.p > 0"},
      "input": {"path": "in", "format": "json", "schema": "s STRING, t TIMESTAMP, p DOUBLE"}, "output": {"path": "out"}}


def test_docstring_examples_run() -> None:
    result = doctest.testmod(registry, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_sections_select_the_registered_operators() -> None:
    assert type(load_job_config(MR)) is MatchRecognizeJobConfig
    assert registry.operator_of(load_job_config(MR)).name == "match_recognize"
    with pytest.raises(SpecError, match=r"left: missing section"):  # the default operator's own error
        load_job_config({"output": {"path": "out"}})
    for op in registry.OPERATORS:  # every entry resolves: its config class and job module with the four functions
        assert hasattr(op.config_class(), "from_dict")
        assert all(callable(getattr(op.module(), name)) for name in ("sources", "stream", "backfill", "describe"))


@pytest.mark.parametrize("path", ["runtime/jobs/streaming.py", "runtime/jobs/backfill.py", "runtime/jobs/config.py"])
def test_the_drivers_name_no_operator(path: str) -> None:
    """The drivers look operators up in the registry: no isinstance test of a job config, no config class by name."""
    text = (REPO / path).read_text()
    code = text if path.endswith("config.py") else re.sub(r'"""(?:.|\n)*?"""', "", text)
    assert not re.search(r"isinstance\(\s*job\b", code)
    if not path.endswith("config.py"):
        assert "MatchRecognizeJobConfig" not in code and not re.search(r"\bJobConfig\b", code)


# -- a third operator, registered without touching a driver ----------------------------------------------------


@dataclass(frozen=True)
class _CountConfig:
    output_path: str
    dead_letter_path: str
    late_path: str
    raw: dict = field(default_factory=dict, compare=False)

    @classmethod
    def from_dict(cls, data: dict) -> _CountConfig:
        out = data["output"]["path"]
        return cls(out, f"{out}_dead_letter", f"{out}_late", dict(data))


@pytest.fixture
def counting_operator(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []
    module = types.ModuleType("tests_fake_count_jobs")
    module.sources = lambda job: {}
    module.describe = lambda job: f"count job -> {job.output_path}"
    module.stream = lambda *a: pytest.fail("not streamed here")

    def backfill(spark: Any, job: Any, rows: dict, start: Any, end: Any, slices: int, only: Any, per_job: Any,
                 on_slice: Any) -> dict:
        calls.append((job.output_path, start, end, slices, only))
        on_slice({"slice": 0, "label": "x", "rows_out": 1, "seconds": 0.0})
        return {"kind": "backfill", "slices": 1, "rows_in": 1, "rows_out": 1, "dead_letter": 0}

    module.backfill = backfill
    monkeypatch.setitem(sys.modules, module.__name__, module)
    config_module = types.ModuleType("tests_fake_count_config")
    config_module.CountConfig = _CountConfig
    monkeypatch.setitem(sys.modules, config_module.__name__, config_module)
    entry = registry.JobOperator("count", "count", "COUNT", f"{config_module.__name__}:CountConfig", module.__name__)
    monkeypatch.setattr(registry, "OPERATORS", (*registry.OPERATORS, entry))
    return calls


def test_a_registered_operator_runs_through_the_unchanged_drivers(counting_operator: list[tuple], tmp_path: Path) -> None:
    config = {"count": {}, "output": {"path": str(tmp_path / "out")}}
    job = load_job_config(config)
    assert type(job) is _CountConfig and registry.operator_of(job).name == "count"
    assert cli._describe(job) == f"count job -> {tmp_path / 'out'}"
    metrics = backfill_job.run_backfill(config, "2020-01-01", "2020-01-02", slices=1, spark=object(), progress_bar=False)
    assert counting_operator == [(str(tmp_path / "out"), datetime(2020, 1, 1), datetime(2020, 1, 2), 1,
                                  None)]
    assert metrics["rows_out"] == 1 and metrics["malformed"] == 0
    with pytest.raises(SpecError, match=r"'slices_per_job': applies to temporal join backfills only, not COUNT"):
        backfill_job.run_backfill(config, "2020-01-01", "2020-01-02", slices=2, spark=object(), slices_per_job=2)
