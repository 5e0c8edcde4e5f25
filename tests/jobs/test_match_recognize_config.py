"""The MATCH_RECOGNIZE job config: parsed and checked at load time, errors positioned (no JVM)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.pattern import PatternValidationError
from timeweave.jobs.config import JobConfig, MatchRecognizeJobConfig, load_job_config

CLAUSE = "PARTITION BY symbol ORDER BY rowtime MEASURES LAST(B.price) AS p PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)"


def config(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "match_recognize": {"clause": CLAUSE},
        "input": {"path": "data/ticker", "format": "csv", "options": {"header": "true"},
                  "schema": "symbol STRING, rowtime TIMESTAMP, price DOUBLE", "watermark_delay": "5 seconds"},
        "output": {"path": "out/m"},
        "checkpoint": "chk/m",
        "trigger": {"available_now": True},
    }
    base.update(changes)
    return base


def test_a_valid_config_and_its_defaults() -> None:
    job = MatchRecognizeJobConfig.from_dict(config())
    assert (job.event_time, job.spec.partition_by, job.input.watermark_delay) == ("rowtime", ("symbol",), "5 seconds")
    assert (job.output_path, job.late_path, job.dead_letter_path) == ("out/m", "out/m_late", "out/m_dead_letter")
    assert (job.checkpoint, job.available_now, job.processing_time, job.mode) == ("chk/m", True, None, "event_time")
    custom = MatchRecognizeJobConfig.from_dict(config(
        output={"path": "o", "late_path": "l", "dead_letter_path": "d"}, trigger={"processing_time": "10 seconds"}))
    assert (custom.late_path, custom.dead_letter_path, custom.available_now, custom.processing_time) == (
        "l", "d", False, "10 seconds")
    assert job.raw["match_recognize"]["clause"] == CLAUSE


def test_load_job_config_dispatches_on_the_match_recognize_section(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(config()))
    for source in (config(), json.dumps(config()), str(path)):
        assert isinstance(load_job_config(source), MatchRecognizeJobConfig)
    job = MatchRecognizeJobConfig.load(str(path))
    assert load_job_config(job) is job
    join = {
        "left": {"path": "o", "format": "csv", "schema": "k STRING, t TIMESTAMP"},
        "right": {"path": "r", "format": "csv", "schema": "k STRING, t TIMESTAMP, v INT"},
        "versioned": {"key": ["k"], "time": "t"}, "join": {"left_time": "t", "left_key": ["k"]},
        "output": {"path": "out"},
    }
    assert isinstance(load_job_config(join), JobConfig)


def test_clause_errors_are_positioned_in_the_clause() -> None:
    with pytest.raises(QuerySyntaxError) as error:
        MatchRecognizeJobConfig.from_dict(config(match_recognize={"clause": "ORDER BY t PATTERN (A B DEFINE A AS true"}))
    assert error.value.line == 1 and error.value.col > 20
    with pytest.raises(PatternValidationError, match="event time column in ascending order") as error:
        MatchRecognizeJobConfig.from_dict(config(
            match_recognize={"clause": "PARTITION BY s\nORDER BY rowtime DESC PATTERN (A) DEFINE A AS A.p > 0"}))
    assert (error.value.line, error.value.col) == (2, 10)
    with pytest.raises(PatternValidationError, match="needs ORDER BY") as error:
        MatchRecognizeJobConfig.from_dict(config(match_recognize={"clause": "PARTITION BY s PATTERN (A) DEFINE A AS A.p > 0"}))
    assert (error.value.line, error.value.col) == (1, 16)
    with pytest.raises(PatternValidationError, match="C"):
        MatchRecognizeJobConfig.from_dict(config(match_recognize={"clause": "ORDER BY t PATTERN (A) DEFINE C AS C.p > 0"}))


def test_a_job_refuses_a_clause_without_output_columns() -> None:
    # The batch doors return one zero-column row per match; parquet cannot hold rows without columns, so the
    # job says so before starting instead of failing in Spark's writer (EMPTY_SCHEMA_NOT_SUPPORTED_FOR_DATASOURCE).
    with pytest.raises(PatternValidationError, match="at least one output column") as error:
        MatchRecognizeJobConfig.from_dict(config(match_recognize={"clause": "ORDER BY t\nPATTERN (A+) DEFINE A AS A.p > 0"}))
    assert (error.value.line, error.value.col) == (2, 1)
    for ok in ("PARTITION BY s ORDER BY t PATTERN (A+) DEFINE A AS A.p > 0",
               "ORDER BY t MEASURES MATCH_NUMBER() AS m PATTERN (A+) DEFINE A AS A.p > 0",
               "ORDER BY t ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS A.p > 0"):
        MatchRecognizeJobConfig.from_dict(config(match_recognize={"clause": ok}))


@pytest.mark.parametrize(("changes", "argument", "message"), [
    ({"match_recognize": {}}, "match_recognize.clause", "missing key"),
    ({"match_recognize": {"clause": "   "}}, "match_recognize.clause", "clause text"),
    ({"match_recognize": "ORDER BY t PATTERN (A) DEFINE A AS true"}, "match_recognize", "object"),
    ({"match_recognize": {"clause": CLAUSE, "pattern": "A"}}, "match_recognize.pattern", "unknown key"),
    ({"input": {"path": "p", "format": "avro", "schema": "t TIMESTAMP"}}, "format", "not in"),
    ({"input": {"path": "p", "format": "csv", "schema": "t TIMESTAMP", "watermark_delay": "soon"}},
     "input.watermark_delay", "cannot read duration"),
    ({"output": {}}, "output.path", "missing key"),
    ({"trigger": {"available_now": True, "processing_time": "1 second"}}, "trigger", "exactly one"),
    ({"left": {"path": "p"}}, "left", "temporal-join job"),
])
def test_bad_configs_name_the_argument(changes: dict[str, Any], argument: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as error:
        MatchRecognizeJobConfig.from_dict(config(**changes))
    assert error.value.argument == argument


def test_a_missing_section_is_named() -> None:
    data = config()
    del data["input"]
    with pytest.raises(SpecError, match="input: missing section"):
        load_job_config(data)


def test_the_airflow_hook_accepts_a_match_recognize_config() -> None:
    from timeweave.airflow.hooks.timeweave import load_job_config as hook_load

    assert hook_load(json.dumps(config()))["match_recognize"] == {"clause": CLAUSE}


def test_the_match_budget_key_is_checked() -> None:
    from timeweave.core.pattern import MatchBudget

    assert MatchRecognizeJobConfig.from_dict(config()).budget is None  # the default budget
    job = MatchRecognizeJobConfig.from_dict(config(match_recognize={"clause": CLAUSE, "budget": {"work_per_row": 900}}))
    assert job.budget == MatchBudget(work_per_row=900)
    with pytest.raises(SpecError, match=r"match_recognize.budget.work_per_rows: unknown key; did you mean 'work_per_row'"):
        MatchRecognizeJobConfig.from_dict(config(match_recognize={"clause": CLAUSE, "budget": {"work_per_rows": 9}}))
    with pytest.raises(SpecError, match=r"match_recognize.budget.base_work: must be a positive integer, got 0"):
        MatchRecognizeJobConfig.from_dict(config(match_recognize={"clause": CLAUSE, "budget": {"base_work": 0}}))
    with pytest.raises(SpecError, match=r"match_recognize.budget.max_threads: .*an integer"):
        MatchRecognizeJobConfig.from_dict(config(match_recognize={"clause": CLAUSE, "budget": {"max_threads": "9"}}))
