"""The timeweave dbt package's shape, without a JVM: dbt-utils-style layout (one public macro a file, named
after it, that only dispatches), every argument documented in macros/schema.yml with a type dbt accepts, the
docs checked by ``dbt parse`` itself, the default op lists equal to the core's, and the integration-tests
project's seeds equal to Flink's case files."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from timeweave.core.changelog import DELETE_OPS, UPSERT_OPS

PACKAGE = Path(__file__).resolve().parents[2] / "dbt_macros"
MACROS = PACKAGE / "macros"
PROJECT = PACKAGE / "integration_tests"
# Files of private macros: the helpers of the public macros, and the plan that Python renders too.
PRIVATE_FILES = ("_timeweave_internal.sql", "timeweave_sql.sql")
_MACRO = re.compile(r"{%-?\s*macro\s+(\w+)\s*\((.*?)\)\s*-?%}", re.S)


def macro_signatures(path: Path) -> dict[str, list[str]]:
    """Macro name -> argument names, in order, for every macro defined in ``path``."""
    signatures = {}
    for name, args in _MACRO.findall(path.read_text()):
        signatures[name] = [a.split("=")[0].strip() for a in args.split(",") if a.strip()]
    return signatures


def documented_macros() -> dict[str, Any]:
    return {m["name"]: m for m in yaml.safe_load((MACROS / "schema.yml").read_text())["macros"]}


PUBLIC = tuple(documented_macros())


def test_dbt_project_names_the_package_timeweave() -> None:
    project = yaml.safe_load((PACKAGE / "dbt_project.yml").read_text())
    assert project["name"] == "timeweave"
    assert project["macro-paths"] == ["macros"]


def test_the_public_macros_are_the_documented_ones() -> None:
    # Every macro that is not a private helper (_name), the plan (timeweave__name) or an adapter's
    # implementation (default__ / spark__) is public: documented, in a file of its own named after it.
    defined = {}
    for path in sorted(MACROS.glob("*.sql")):
        for name in macro_signatures(path):
            defined.setdefault(name, []).append(path.name)
    public = {n: files for n, files in defined.items()
              if not n.startswith(("_", "timeweave__", "default__", "spark__"))}
    assert sorted(public) == sorted(PUBLIC)
    assert all(files == [f"{name}.sql"] for name, files in public.items()), public
    assert set(PUBLIC) >= {"temporal_join", "versioned_view", "temporal_join_dead_letter", "match_recognize"}
    # The other files hold only private macros.
    assert sorted(p.name for p in MACROS.glob("*.sql")) == sorted([f"{n}.sql" for n in PUBLIC] + list(PRIVATE_FILES))


@pytest.mark.parametrize("name", PUBLIC)
def test_public_macro_file_only_dispatches(name: str) -> None:
    path = MACROS / f"{name}.sql"
    signatures = macro_signatures(path)
    implementations = set(signatures) - {name}
    assert implementations and implementations <= {f"default__{name}", f"spark__{name}"}, signatures
    assert f"default__{name}" in implementations  # dispatch's fallback: every adapter gets an answer
    # The dispatcher passes its arguments on, in order, to the adapter's implementation.
    for implementation in implementations:
        assert signatures[implementation] == signatures[name], implementation
    header = next(m for m in _MACRO.finditer(path.read_text()) if m.group(1) == name)
    body = path.read_text()[header.end():].split("endmacro", 1)[0]
    call = f"{{{{return(adapter.dispatch('{name}','timeweave')({','.join(signatures[name])}))}}}}{{%-"
    assert re.sub(r"\s+", "", body) == call, body


@pytest.mark.parametrize("name", PUBLIC)
def test_every_argument_is_documented_in_order(name: str) -> None:
    from dbt.parser.schemas import is_valid_type

    documented = documented_macros()[name]
    assert documented["description"].strip()
    arguments = [a["name"] for a in documented["arguments"]]
    assert arguments == macro_signatures(MACROS / f"{name}.sql")[name]
    for argument in documented["arguments"]:
        assert argument["description"].startswith(("Required", "Optional")), argument
        assert is_valid_type(argument["type"]), argument  # dbt's type grammar (validate_macro_args)


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
    assert tuple(_dbt_return_value(MACROS / "default_upsert_ops.sql", "default__default_upsert_ops")) == UPSERT_OPS
    assert tuple(_dbt_return_value(MACROS / "default_delete_ops.sql", "default__default_delete_ops")) == DELETE_OPS


SEEDS = PROJECT / "seeds"
CASES = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "flink" / "cases"


@pytest.mark.parametrize(
    ("seed", "case_file"),
    [
        ("orders.csv", "tj_view_inner/orders.csv"),
        ("orders_changelog.csv", "tj_changelog_inner/orders.csv"),
        ("rates_history.csv", "tj_view_inner/currency_rates_history.csv"),
        ("rates_changelog.csv", "tj_changelog_inner/currency_rates.csv"),
        ("expected/expected_versioned_view.csv", "tj_versioned_view_changelog/expected_streaming.csv"),
        ("ticker.csv", "mr_avg_price_double/ticker.csv"),
        ("expected/expected_mr_avg_price.csv", "mr_avg_price_double/expected_streaming.csv"),
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


def test_upsert_seed_is_the_changelog_seed_keyed() -> None:
    # rates_upsert.csv: rates_changelog.csv as an upsert stream (-U dropped: the +U at its time replaces the
    # version; -D as deleted = true), so its versions are the changelog's (a data test compares them).
    changelog = list(csv.DictReader(io.StringIO((SEEDS / "rates_changelog.csv").read_text())))
    upsert = list(csv.DictReader(io.StringIO((SEEDS / "rates_upsert.csv").read_text())))
    want = [{"currency": r["currency"], "conversion_rate": r["conversion_rate"], "update_time": r["update_time"],
             "deleted": str(r["op"] == "-D").lower()} for r in changelog if r["op"] != "-U"]
    assert upsert == want
    assert {r["op"] for r in changelog} == {"+I", "-U", "+U", "-D"}


def test_match_recognize_model_uses_the_flink_cases_clause() -> None:
    query = (CASES / "mr_avg_price_double" / "query.sql").read_text()
    flink = query[query.index("(", query.index("MATCH_RECOGNIZE")) + 1 : query.rindex(")")]
    text = (PROJECT / "macros" / "mr_avg_price_clause.sql").read_text()
    ours = text.split("{% macro mr_avg_price_clause() -%}", 1)[1].split("{%- endmacro %}", 1)[0]
    assert ours.split() == flink.split()


def test_the_integration_tests_project_makes_dbt_check_the_macro_docs() -> None:
    # validate_macro_args: dbt compares each documented macro's arguments with its signature and checks their
    # types; InvalidMacroAnnotation as an error: `dbt parse` / `dbt build` of the integration tests (run in
    # process by tests/dbt/test_dbt_models.py) fail on a doc that does not match its macro.
    project = yaml.safe_load((PROJECT / "dbt_project.yml").read_text())
    assert project["flags"]["validate_macro_args"] is True
    assert project["flags"]["warn_error_options"] == {"error": ["InvalidMacroAnnotation"]}
    assert yaml.safe_load((PROJECT / "packages.yml").read_text()) == {"packages": [{"local": "../"}]}
