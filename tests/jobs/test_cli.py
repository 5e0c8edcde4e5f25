"""The job CLI and strict job configs (issue 18): no JVM — every error here comes before Spark starts."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from timeweave.core.errors import SpecError
from timeweave.jobs import cli
from timeweave.jobs.config import ConfigError, JobConfig, load_job_config

REPO = Path(__file__).resolve().parents[2]

JOIN: dict[str, Any] = {
    "left": {"path": "data/orders", "format": "csv", "options": {"header": "true"},
             "schema": "order_id STRING, currency STRING, order_time TIMESTAMP", "watermark_delay": "5 seconds"},
    "right": {"path": "data/rates", "format": "csv", "options": {"header": "true"},
              "schema": "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP"},
    "versioned": {"key": ["currency"], "time": "update_time", "format": "changelog", "op": "op"},
    "join": {"left_time": "order_time", "left_key": ["currency"], "how": "left"},
    "output": {"path": "out/enriched"},
    "checkpoint": "chk/enriched",
    "trigger": {"processing_time": "10 seconds", "timeout": "1 hour"},
    "mode": "event_time",
    "retention": {"min_idle": "1 hour", "max_idle": "2 hours"},
}
MATCH = {
    "match_recognize": {"clause": "PARTITION BY s ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS A.p > 0"},
    "input": {"path": "in", "format": "json", "schema": "s STRING, t TIMESTAMP, p DOUBLE"},
    "output": {"path": "out"},
}


def changed(base: dict[str, Any], path: str, value: Any = ..., *, rename: str | None = None) -> dict[str, Any]:
    """``base`` with the key at dotted ``path`` set to ``value``, deleted (``...``), or renamed."""
    data = copy.deepcopy(base)
    *parents, last = path.split(".")
    node = data
    for name in parents:
        node = node[name]
    if rename is not None:
        node[rename] = node.pop(last)
    elif value is ...:
        del node[last]
    else:
        node[last] = value
    return data


def test_every_documented_key_is_accepted() -> None:
    job = JobConfig.from_dict(JOIN)
    assert (job.checkpoint, job.processing_time, job.left.watermark_delay) == ("chk/enriched", "10 seconds", "5 seconds")
    assert load_job_config(MATCH).event_time == "t"


def test_a_null_optional_key_is_not_set() -> None:
    # A templated config renders unset options as null (the backfill door's own tests pass op=None).
    job = JobConfig.from_dict(changed(changed(JOIN, "versioned.op", None), "versioned.format", "append"))
    assert job.join.versioned.op is None
    with pytest.raises(ConfigError, match=r"join\.left_time: missing key"):
        JobConfig.from_dict(changed(JOIN, "join.left_time", None))


@pytest.mark.parametrize(("data", "message"), [
    (changed(JOIN, "checkpoint", rename="chekpoint"), "job config: chekpoint: unknown key; did you mean 'checkpoint'?"),
    (changed(JOIN, "join.left_time", rename="left_tme"), "job config: join.left_tme: unknown key; did you mean 'left_time'?"),
    (changed(JOIN, "left.watermark_delay", rename="watermark"),
     "job config: left.watermark: unknown key; did you mean 'watermark_delay'?"),
    (changed(JOIN, "trigger.available", True), "job config: trigger.available: unknown key; did you mean 'available_now'?"),
    (changed(JOIN, "colour", "red"), "job config: colour: unknown key; the keys here are checkpoint, join, left, mode, "
                                     "output, retention, right, trigger, versioned"),
    (changed(MATCH, "match_recognize.pattern", "A"), "job config: match_recognize.pattern: unknown key; the keys here "
                                                     "are budget, clause"),
    (changed(JOIN, "join.left_time"), "job config: join.left_time: missing key (required)"),
    (changed(JOIN, "versioned"), "job config: versioned: missing section (required)"),
    (changed(MATCH, "input.schema"), "job config: input.schema: missing key (required)"),
    (changed(JOIN, "versioned.key", 3), "job config: versioned.key: expected a string or a list, got 3"),
    (changed(JOIN, "join.right_columns", ["rate", 2]), "job config: join.right_columns[1]: expected a list of strings, got 2"),
    (changed(JOIN, "trigger.available_now", 1), "job config: trigger.available_now: expected true/false, got 1"),
    (changed(JOIN, "left.options", "header"), 'job config: left.options: expected an object, got "header"'),
    (changed(JOIN, "retention.min_idle", True), "job config: retention.min_idle: expected a string or an integer, got true"),
])
def test_a_bad_key_is_one_error_that_names_its_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_job_config(data)
    assert str(error.value) == message
    assert isinstance(error.value, SpecError) and error.value.argument == message.split(": ")[1]


def test_json_and_file_errors_are_located(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^job config: \(JSON\): line 1 column 2: Expecting property name"):
        load_job_config("{,}")
    with pytest.raises(ConfigError, match=r"cannot read the config file .*no/such\.json"):
        load_job_config(str(tmp_path / "no" / "such.json"))
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(ConfigError, match="a job config is a JSON object, not list"):
        load_job_config(str(tmp_path / "list.json"))


def test_validate_exit_codes_and_one_line_errors(tmp_path: Path, capsys) -> None:
    good = tmp_path / "job.json"
    good.write_text(json.dumps(JOIN))
    assert cli.main(["validate", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: valid temporal-join job: left data/orders, right data/rates -> output out/enriched\n"
    assert cli.main(["validate", json.dumps(MATCH)]) == 0
    assert "valid MATCH_RECOGNIZE job" in capsys.readouterr().out

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(changed(JOIN, "join.left_time", rename="left_tme")))
    for command in ("validate", "streaming", "backfill"):
        args = [command, str(bad)] if command == "validate" else [command, "--config", str(bad)]
        if command == "backfill":
            args += ["--start", "2020-01-01", "--end", "2020-01-02"]
        assert cli.main(args) == cli.EXIT_USAGE
        out, err = capsys.readouterr()
        assert out == ""
        assert err == "timeweave-job: error: job config: join.left_tme: unknown key; did you mean 'left_time'?\n"


def test_a_clause_error_is_one_line_with_its_position(capsys) -> None:
    data = changed(MATCH, "match_recognize.clause", "PARTITION BY s ORDER BY t PATTERN (A+ DEFINE A AS A.p > 0")
    assert cli.main(["validate", json.dumps(data)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("timeweave-job: error: job config: match_recognize.clause: ")
    assert "(line 1, col " in err


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "timeweave.jobs", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_the_command_line_prints_no_traceback(tmp_path: Path) -> None:
    """A missing key used to print a 24-line traceback; now one line and exit code 2, Spark never started."""
    path = tmp_path / "job.json"
    path.write_text(json.dumps(changed(JOIN, "output")))
    result = _run("streaming", "--config", str(path))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "timeweave-job: error: job config: output: missing section (required)\n"
    path.write_text(json.dumps(JOIN))
    result = _run("validate", str(path))
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize("command", [[], ["streaming"], ["backfill"], ["validate"], ["report"], ["sql"]])
def test_help_has_a_description_and_examples(command: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main([*command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: timeweave-job") and "examples:\n  timeweave-job " in out
    # RawDescriptionHelpFormatter: the examples keep their lines
    assert "\n  timeweave-job validate job.json\n" in out or command in (["streaming"], ["backfill"], ["report"], ["sql"])
