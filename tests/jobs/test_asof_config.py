"""A job config's versioned side: ``"key": []`` is a keyless table (one history); a missing or null key stays an
error (the config schema requires it), not a keyless join.  No Spark."""

from __future__ import annotations

import pytest

from timeweave.core.errors import SpecError
from timeweave.jobs.config import JobConfig

BASE = {
    "left": {"path": "l", "format": "json", "schema": "id STRING, t BIGINT"},
    "right": {"path": "r", "format": "json", "schema": "t BIGINT, level DOUBLE"},
    "join": {"left_time": "t", "how": "left"},
    "output": {"path": "out"},
}


def test_an_empty_key_is_a_keyless_table() -> None:
    job = JobConfig.from_dict({**BASE, "versioned": {"key": [], "time": "t"}})
    assert job.join.keyless and job.join.left_key == ()


def test_a_missing_or_null_key_is_an_error_not_a_keyless_join() -> None:
    for versioned in ({"time": "t"}, {"key": None, "time": "t"}):
        with pytest.raises(SpecError, match=r"versioned\.key: missing key"):
            JobConfig.from_dict({**BASE, "versioned": versioned})
