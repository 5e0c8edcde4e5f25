"""The timeweave dbt package's shape, without dbt or a JVM: dbt-utils-style dispatching macros, every
argument documented in macros/schema.yml, and the default op lists equal to the core's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from runtime.core.changelog import DELETE_OPS, UPSERT_OPS

PACKAGE = Path(__file__).resolve().parents[2] / "dbt_macros"
MACROS = PACKAGE / "macros"
PUBLIC = ("temporal_join", "versioned_view", "temporal_join_dead_letter", "match_recognize")
_MACRO = re.compile(r"{%-?\s*macro\s+(\w+)\s*\((.*?)\)\s*-?%}", re.S)


def macro_signatures(path: Path) -> dict[str, list[str]]:
    """Macro name -> argument names, in order, for every macro defined in ``path``."""
    signatures = {}
    for name, args in _MACRO.findall(path.read_text()):
        signatures[name] = [a.split("=")[0].strip() for a in args.split(",") if a.strip()]
    return signatures


def documented_macros() -> dict[str, Any]:
    return {m["name"]: m for m in yaml.safe_load((MACROS / "schema.yml").read_text())["macros"]}


def test_dbt_project_names_the_package_timeweave() -> None:
    project = yaml.safe_load((PACKAGE / "dbt_project.yml").read_text())
    assert project["name"] == "timeweave"
    assert project["macro-paths"] == ["macros"]


@pytest.mark.parametrize("name", PUBLIC)
def test_public_macro_file_only_dispatches(name: str) -> None:
    path = MACROS / f"{name}.sql"
    signatures = macro_signatures(path)
    assert set(signatures) == {name, f"default__{name}", f"spark__{name}"}
    # The dispatcher passes its arguments on, in order, to the adapter's implementation.
    assert signatures[f"spark__{name}"] == signatures[name] == signatures[f"default__{name}"]
    body = path.read_text().split(f"macro {name}(", 1)[1].split("endmacro", 1)[0]
    assert f"adapter.dispatch('{name}', 'timeweave')(" in body
    assert "run_query" not in body and "get_columns_in_relation" not in body


@pytest.mark.parametrize("name", PUBLIC)
def test_every_argument_is_documented_in_order(name: str) -> None:
    documented = documented_macros()[name]
    arguments = [a["name"] for a in documented["arguments"]]
    assert arguments == macro_signatures(MACROS / f"{name}.sql")[name]
    for argument in documented["arguments"]:
        assert argument["description"].startswith(("Required", "Optional")), argument
        assert argument.get("type"), argument


def test_microbatch_opt_out_is_documented() -> None:
    text = (MACROS / "schema.yml").read_text()
    assert "render_limited()" in text and "ref('x').render()" in text


class _Returned(Exception):  # carries return(...)'s value out of the macro
    def __init__(self, value: object) -> None:
        self.value = value


def _return(value: object) -> None:
    raise _Returned(value)


def _dbt_return_value(path: Path, macro: str) -> Any:
    """What a dbt macro passes to ``return(...)``, rendered with plain jinja2."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, extensions=["jinja2.ext.do"])
    env.globals["return"] = _return
    module = env.from_string(path.read_text()).module
    with pytest.raises(_Returned) as returned:
        getattr(module, macro)()
    return returned.value.value


def test_default_op_lists_equal_the_core_lists() -> None:
    internal = MACROS / "_timeweave_internal.sql"
    assert tuple(_dbt_return_value(internal, "default_upsert_ops")) == UPSERT_OPS
    assert tuple(_dbt_return_value(internal, "default_delete_ops")) == DELETE_OPS


SEEDS = Path(__file__).resolve().parents[1] / "dbt_project" / "seeds"
CASES = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "flink" / "cases"


@pytest.mark.parametrize(
    ("seed", "case_file"),
    [
        ("orders.csv", "tj_view_inner/orders.csv"),
        ("orders_changelog.csv", "tj_changelog_inner/orders.csv"),
        ("rates_history.csv", "tj_view_inner/currency_rates_history.csv"),
        ("rates_changelog.csv", "tj_changelog_inner/currency_rates.csv"),
        ("expected/expected_versioned_view.csv", "tj_versioned_view_changelog/expected_streaming.csv"),
    ],
)
def test_test_project_seeds_are_the_flink_case_files(seed: str, case_file: str) -> None:
    assert (SEEDS / seed).read_text() == (CASES / case_file).read_text()


def test_expected_joins_seed_stacks_the_flink_expected_outputs() -> None:
    lines = (SEEDS / "expected" / "expected_joins.csv").read_text().splitlines()
    stacked: dict[str, list[str]] = {}
    for line in lines[1:]:
        case, row = line.split(",", 1)
        stacked.setdefault(case, []).append(row)
    assert lines[0] == "flink_case," + (CASES / "tj_view_inner" / "expected_streaming.csv").read_text().splitlines()[0]
    for case, rows in stacked.items():
        assert rows == (CASES / case / "expected_streaming.csv").read_text().splitlines()[1:]
    assert sorted(stacked) == ["tj_changelog_inner", "tj_changelog_left", "tj_view_inner", "tj_view_left"]
