"""The README's reference parts stay true to the code: the job-config table against the config schema, the
``timeweave-job`` options against its parser, the environment variables against the code that reads them, and
the commands CI and the Airflow test run against the README's text.  No Spark: these read files only."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from timeweave.jobs.cli import parser
from timeweave.jobs.config import (
    MATCH_RECOGNIZE_SCHEMA,
    TEMPORAL_JOIN_SCHEMA,
    WINDOW_DEDUPLICATE_SCHEMA,
    WINDOW_JOIN_SCHEMA,
    WINDOW_SCHEMA,
    WINDOW_TOP_N_SCHEMA,
    Key,
)

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")

_TYPE_NAMES = {str: "string", int: "integer", bool: "true/false", dict: "object"}
_JOBS = {frozenset({"temporal join"}): "temporal join", frozenset({"MATCH_RECOGNIZE"}): "MATCH_RECOGNIZE",
         frozenset({"window"}): "window", frozenset({"MATCH_RECOGNIZE", "window"}): "MATCH_RECOGNIZE, window",
         frozenset({"window Top-N"}): "window Top-N", frozenset({"window deduplication"}): "window deduplication",
         frozenset({"MATCH_RECOGNIZE", "window", "window Top-N", "window deduplication"}): "one input",
         frozenset({"window join"}): "window join", frozenset({"temporal join", "window join"}): "two inputs",
         frozenset({"temporal join", "MATCH_RECOGNIZE", "window", "window Top-N", "window deduplication",
                    "window join"}): "all"}


def _type_text(key: Key) -> str:
    """How the README's table writes a key's JSON type(s), e.g. ``string or list of strings``."""
    names = []
    for t in key.types:
        if t is list:
            names.append(f"list of {_TYPE_NAMES[key.items]}s" if key.items is not None else "list")
        else:
            names.append(_TYPE_NAMES[t])
    return " or ".join(names)


def _flatten(schema: Mapping[str, Key], prefix: str = "") -> dict[str, Key]:
    out: dict[str, Key] = {}
    for name, key in schema.items():
        out[prefix + name] = key
        if key.keys is not None:
            out.update(_flatten(key.keys, f"{prefix}{name}."))
    return out


def expected_config_rows() -> dict[str, tuple[str, str, str]]:
    """``path -> (job, type, required)`` for every key of the job-config schemas: what the table must say."""
    kinds: dict[str, set[str]] = {}
    keys: dict[str, Key] = {}
    for kind, schema in (("temporal join", TEMPORAL_JOIN_SCHEMA), ("MATCH_RECOGNIZE", MATCH_RECOGNIZE_SCHEMA),
                         ("window", WINDOW_SCHEMA), ("window Top-N", WINDOW_TOP_N_SCHEMA),
                         ("window deduplication", WINDOW_DEDUPLICATE_SCHEMA), ("window join", WINDOW_JOIN_SCHEMA)):
        for path, key in _flatten(schema).items():
            if path in keys:
                assert (_type_text(keys[path]), keys[path].required) == (_type_text(key), key.required), (
                    f"{path} differs between the two job kinds: the README's one row cannot describe both")
            keys[path] = key
            kinds.setdefault(path, set()).add(kind)
    return {path: (_JOBS[frozenset(kinds[path])], _type_text(key), "yes" if key.required else "no")
            for path, key in keys.items()}


def _section(start: str, end: str) -> str:
    assert start in README, f"README has no {start!r}"
    text = README.split(start, 1)[1]
    assert end in text, f"README has no {end!r} after {start!r}"
    return text.split(end, 1)[0]


def _table_rows(text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[1:]  # without the header


def readme_config_rows() -> dict[str, list[str]]:
    rows = _table_rows(_section("<!-- job-config-reference:", "<!-- job-config-reference: end -->"))
    table: dict[str, list[str]] = {}
    for row in rows:
        assert len(row) == 6, f"a job-config row needs 6 cells (key, job, type, required, default, meaning): {row}"
        path = row[0].strip("`")
        assert path not in table, f"{path} is listed twice"
        table[path] = row
    return table


def test_job_config_table_lists_every_key_of_the_schema_as_the_schema_says():
    expected = expected_config_rows()
    table = readme_config_rows()
    missing = sorted(set(expected) - set(table))
    extra = sorted(set(table) - set(expected))
    assert not missing, "keys the config reads but the README's table does not list:\n" + "\n".join(
        f"| `{p}` | {' | '.join(expected[p])} | <default> | <meaning> |" for p in missing)
    assert not extra, f"keys the README lists but the config refuses: {extra}"
    wrong = {p: (tuple(table[p][1:4]), expected[p]) for p in expected if tuple(table[p][1:4]) != expected[p]}
    assert not wrong, "rows whose (job, type, required) differ from the schema (README, schema):\n" + "\n".join(
        f"{p}: {got} != {want}" for p, (got, want) in sorted(wrong.items()))
    no_meaning = [p for p, row in table.items() if not row[5]]
    assert not no_meaning, f"rows without a meaning: {no_meaning}"
    required_with_default = [p for p, row in table.items() if row[3] == "yes" and row[4]]
    assert not required_with_default, f"required keys cannot have a default: {required_with_default}"


def test_a_key_added_to_the_schema_fails_the_table_check(monkeypatch):
    """The check above can fail: a schema key the README does not list is reported with a row to add."""
    import timeweave.jobs.config as config

    trigger = config.TEMPORAL_JOIN_SCHEMA["trigger"]
    grown = Key(trigger.types, keys={**trigger.keys, "max_batches": Key((int,))})
    monkeypatch.setitem(config.TEMPORAL_JOIN_SCHEMA, "trigger", grown)
    with pytest.raises(AssertionError, match=r"trigger\.max_batches"):
        test_job_config_table_lists_every_key_of_the_schema_as_the_schema_says()


def _cli_options() -> dict[str, set[str]]:
    """``subcommand -> its long options`` of ``timeweave-job`` (``""``: the top-level ones)."""
    import argparse

    top = parser()
    found: dict[str, set[str]] = {"": set()}
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = {o for a in sub._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
        else:
            found[""].update(o for o in action.option_strings if o.startswith("--") and o != "--help")
    return found


def test_every_timeweave_job_subcommand_and_option_is_in_the_cli_table():
    section = _section("### Command line: `timeweave-job`", "### Environment variables")
    rows = [row[0] for row in _table_rows(section)]
    current = ""
    documented: dict[str, set[str]] = {"": set()}
    for cell in rows:
        words = cell.strip("`").split()
        if words and not cell.startswith("`  ") and not words[0].startswith("--"):
            current = words[0]
        documented.setdefault(current, set()).update(re.findall(r"--[a-z][a-z-]*", cell))
    for sub, options in _cli_options().items():
        assert sub in documented, f"subcommand {sub!r} has no row in the README's timeweave-job table"
        # an option row under "streaming" may be shared with backfill ("as for streaming")
        missing = options - documented[sub]
        assert not missing, f"timeweave-job {sub or '(top level)'}: options missing from the README: {sorted(missing)}"


_VARIABLE = re.compile(r"TIMEWEAVE_[A-Z0-9_]+")
#: Where the code reads environment variables (product, example DAG and dbt projects, CI, tests, benchmarks).
_SCANNED = ("runtime", "airflow_plugin", "dbt_timeweave", "dbt_macros", "dags", "tests", "bench", ".ci")
#: ``TIMEWEAVE_METRICS`` is the prefix of a job's last output line, not a variable.
_NOT_VARIABLES = {"TIMEWEAVE_METRICS"}


def variables_in_code() -> dict[str, str]:
    """Every ``TIMEWEAVE_*`` name in the repository's code and configs -> one file naming it."""
    found: dict[str, str] = {}
    for folder in _SCANNED:
        for path in sorted((REPO / folder).rglob("*")):
            if not path.is_file() or path.resolve() == Path(__file__).resolve():
                continue
            if path.suffix not in (".py", ".sql", ".yml", ".yaml", ".toml", ".sh") and path.name != "run":
                continue
            for name in _VARIABLE.findall(path.read_text(encoding="utf-8", errors="replace")):
                if not name.endswith("_") and name not in _NOT_VARIABLES:  # "TIMEWEAVE_DBT_*" is a prefix
                    found.setdefault(name, str(path.relative_to(REPO)))
    return found


def test_every_timeweave_environment_variable_the_code_reads_is_documented():
    section = _section("### Environment variables", "## Spark Connect and clusters")
    documented = {row[0].strip("`") for row in _table_rows(section)}
    in_code = variables_in_code()
    assert {"TIMEWEAVE_SPARK_MASTER", "TIMEWEAVE_SHUFFLE_PARTITIONS"} <= set(in_code), "the scan finds nothing"
    missing = {name: where for name, where in in_code.items() if name not in documented}
    assert not missing, f"TIMEWEAVE_ variables read by the code but not in the README's table: {missing}"
    stale = documented - set(in_code)
    assert not stale, f"variables the README documents but no code reads: {sorted(stale)}"


def test_the_readme_carries_the_commands_ci_and_the_airflow_test_run():
    ci_command = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert f"```bash\n{ci_command}\n```" in README, "the test command must be the one .ci/run runs"
    pipeline = ("python3 -m venv .venv && .venv/bin/pip install -e '.[all]' --config-settings editable_mode=strict "
                "&& .venv/bin/python -m timeweave.jobs.example_pipeline")
    assert f"```bash\n{pipeline}\n```" in README
    # tests/airflow/test_example_dag.py::test_readme_commands_run_the_example_dag runs exactly these
    for line in ("export AIRFLOW_HOME=$PWD/.airflow AIRFLOW__CORE__DAGS_FOLDER=$PWD/dags AIRFLOW__CORE__LOAD_EXAMPLES=False",
                 ".venv/bin/airflow db migrate",
                 ".venv/bin/airflow dags test timeweave_example 2026-01-02",
                 ".venv/bin/python dags/timeweave_example.py 2026-01-03"):
        assert re.search(rf"^\s*{re.escape(line)}(\s|$)", README, re.M), f"README lost the Airflow command {line!r}"


def test_the_table_of_contents_links_to_headings_that_exist():
    anchors = set()
    for heading in re.findall(r"^#{2,4} (.+)$", README, re.M):
        anchor = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(anchor)
    links = re.findall(r"\]\(#([^)]+)\)", README)
    assert links
    broken = sorted({link for link in links if link not in anchors})
    assert not broken, f"README links to missing headings: {broken}"


def test_product_text_names_no_internal_work_periods():
    for path in ("README.md", "docs/ARCHITECTURE.md"):
        text = (REPO / path).read_text(encoding="utf-8")
        hits = re.findall(r"[^\n]*\b(?:session \d|helper measurements|this build)\b[^\n]*", text, re.I)
        assert not hits, f"{path}: {hits}"


def _code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def test_the_tours_python_calls_name_real_functions_and_arguments():
    """Every ``timeweave.<name>(...)`` in the README's Python snippets is public API and takes the keywords shown
    (the snippets themselves run end to end on Spark; this keeps them from rotting without a JVM)."""
    import ast
    import inspect

    import timeweave
    from timeweave.spark.dataframe import temporal_join

    calls = 0
    for block in _code_blocks("python"):
        try:
            tree = ast.parse(block)
        except SyntaxError:  # the Cosmos recipe elides arguments with "..."
            continue
        for node in ast.walk(tree):
            func = node.func if isinstance(node, ast.Call) else None
            if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "timeweave"):
                continue
            calls += 1
            assert func.attr in timeweave.__all__, f"README calls timeweave.{func.attr}, which is not public API"
            target = getattr(timeweave, func.attr)
            params = inspect.signature(target).parameters
            if any(p.kind is p.VAR_KEYWORD for p in params.values()) and func.attr == "temporal_join_with_rejects":
                params = inspect.signature(temporal_join).parameters  # it passes its keywords on
            if any(p.kind is p.VAR_KEYWORD for p in params.values()):
                continue  # timeweave.sql / dead_letters: placeholders
            unknown = {k.arg for k in node.keywords} - set(params)
            assert not unknown, f"timeweave.{func.attr} takes no {sorted(unknown)} (README line: {ast.unparse(node)[:80]})"
    assert calls >= 8, "the tour's timeweave calls were not found"


def test_the_job_configs_shown_are_valid():
    from timeweave.jobs.config import (
        GroupAggregateJobConfig,
        MatchRecognizeJobConfig,
        WindowJobConfig,
        load_job_config,
    )

    configs = [load_job_config(block) for block in _code_blocks("json")]
    kinds = [type(config) for config in configs]
    assert len(configs) == 5 and kinds[0] is WindowJobConfig, kinds
    assert MatchRecognizeJobConfig in kinds and GroupAggregateJobConfig in kinds, kinds
    # the continuous GROUP BY's two forms: keys / aggregates, and the same as a query (with a WHERE)
    grouped = [c for c in configs if isinstance(c, GroupAggregateJobConfig)]
    assert [c.keys for c in grouped] == [("user",), ("user",)] and [c.where for c in grouped] == [None, "url <> './home'"]
