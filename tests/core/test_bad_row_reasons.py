"""The malformed-record rule (runtime/core/bad_rows.py) and the job config's check of reader options (no JVM)."""

from __future__ import annotations

import pytest

from timeweave.core import bad_rows
from timeweave.core.errors import SpecError
from timeweave.jobs.config import load_job_config


def _config(options: dict, fmt: str = "csv") -> dict:
    source = {"path": "in", "format": fmt, "schema": "k STRING, t TIMESTAMP, v INT", "options": options}
    return {"left": source, "right": source, "versioned": {"key": "k", "time": "t"}, "join": {"left_time": "t"},
            "output": {"path": "out"}}


def test_reasons_name_the_column_and_type_or_the_column_count() -> None:
    assert bad_rows.unparsable_value("order time", "TIMESTAMP") == "unparsable value in column order time of type TIMESTAMP"
    assert bad_rows.wrong_column_count(3) == "malformed record: wrong column count (the schema has 3 columns)"
    assert bad_rows.unreadable_record("json") == "malformed record: not a JSON record"


@pytest.mark.parametrize(("options", "argument"), [
    ({"mode": "DROPMALFORMED"}, "options.mode"),
    ({"MODE": "failfast"}, "options.mode"),
    ({"columnNameOfCorruptRecord": "bad"}, "options.columnNameOfCorruptRecord"),
])
def test_a_job_config_refuses_reader_options_that_lose_malformed_records(options: dict, argument: str) -> None:
    with pytest.raises(SpecError) as error:
        load_job_config(_config(options))
    assert error.value.argument == argument and "left source" in str(error.value)


def test_permissive_and_parquet_options_pass() -> None:
    load_job_config(_config({"header": "true", "mode": "permissive"}))
    load_job_config(_config({"mode": "anything"}, fmt="parquet"))  # parquet records carry their types
