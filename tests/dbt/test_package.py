"""The timeweave dbt package's shape, without a JVM: dbt-utils-style layout (one public macro a file, named
after it, that only dispatches), every argument documented in macros/schema.yml with a type dbt accepts, the
docs checked by ``dbt parse`` itself, the generated files (the plan, the core's constants) equal to what
``python -m timeweave.dbt_package.generate`` writes, the default op lists and dead-letter reasons equal to the
core's, and the integration-tests project's seeds equal to Flink's case files."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from timeweave.core.bad_rows import REJECT_REASONS
from timeweave.core.changelog import DELETE_OPS, UPSERT_OPS
from timeweave.dbt_package import generate
from timeweave.spark.render import PLAN_FILE

PACKAGE = Path(__file__).resolve().parents[2] / "dbt_macros"
MACROS = PACKAGE / "macros"
PROJECT = PACKAGE / "integration_tests"
# Files of private macros: the helpers of the public macros, and the generated ones (the plan that Python renders
# too, the core's constants).
PRIVATE_FILES = ("_timeweave_internal.sql", "timeweave_sql.sql", "_timeweave_core.sql",
                 "_timeweave_windows_internal.sql", "timeweave_windows_sql.sql", "_timeweave_window_ops_internal.sql",
                 "timeweave_window_ops_sql.sql")
_MACRO = re.compile(r"{%-?\s*macro\s+(\w+)\s*\((.*?)\)\s*-?%}", re.S)


def macro_signatures(path: Path) -> dict[str, list[str]]:
    """Macro name -> argument names, in order, for every macro defined in ``path``."""
    signatures = {}
    for name, args in _MACRO.findall(path.read_text()):
        signatures[name] = [a.split("=")[0].strip() for a in args.split(",") if a.strip()]
    return signatures


def documented_macros() -> dict[str, Any]:
    return {m["name"]: m for path in sorted(MACROS.glob("*.yml")) for m in yaml.safe_load(path.read_text())["macros"]}


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


class _Namespace:
    """``timeweave.<macro>`` over macro files rendered with plain jinja2, ``return(...)`` giving the value."""

    def __init__(self, *paths: Path) -> None:
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, extensions=["jinja2.ext.do"])
        env.globals.update({"return": _return, "timeweave": self})
        self._modules = [env.from_string(path.read_text()).module for path in paths]

    def __getattr__(self, name: str) -> Any:
        macro = next(getattr(m, name) for m in self._modules if hasattr(m, name))

        def call(*args: Any) -> Any:
            try:
                macro(*args)
            except _Returned as returned:
                return returned.value
            raise AssertionError(f"{name} returned nothing")

        return call


def _dbt_return_value(path: Path, macro: str) -> Any:
    """What a dbt macro passes to ``return(...)``, rendered with plain jinja2 (with the generated constants)."""
    return getattr(_Namespace(path, MACROS / "_timeweave_core.sql"), macro)()


def test_default_op_lists_equal_the_core_lists() -> None:
    assert tuple(_dbt_return_value(MACROS / "default_upsert_ops.sql", "default__default_upsert_ops")) == UPSERT_OPS
    assert tuple(_dbt_return_value(MACROS / "default_delete_ops.sql", "default__default_delete_ops")) == DELETE_OPS


def test_generated_files_are_current() -> None:
    # The plan's source is runtime/spark/timeweave_sql.sql; the dbt package's copy and the core's constants are
    # generated (dbt's Jinja cannot import Python, and dbt loads macros from the package folder only).
    stale = generate.stale_files()
    assert not stale, f"stale generated files of the dbt package: {stale}; run `{generate.COMMAND}`"
    plan = (MACROS / "timeweave_sql.sql").read_text()
    assert plan.startswith("{#- GENERATED from ") and plan.endswith(PLAN_FILE.read_text())


def test_a_stale_copy_is_found(tmp_path: Path) -> None:
    (tmp_path / "macros").mkdir()
    for name, text in generate.generated_files().items():
        (tmp_path / name).write_text(text)
    assert generate.stale_files(tmp_path) == []
    edited = tmp_path / "macros" / "timeweave_sql.sql"
    edited.write_text(edited.read_text().replace("ROW_NUMBER()", "RANK()", 1))
    (tmp_path / "macros" / "_timeweave_core.sql").unlink()
    assert generate.stale_files(tmp_path) == ["macros/timeweave_sql.sql", "macros/_timeweave_core.sql"]


def test_generated_constants_are_the_cores() -> None:
    # Each generated macro returns exactly the core's value (the Jinja literals round-trip, escapes included).
    constants = _Namespace(MACROS / "_timeweave_core.sql")
    assert constants.timeweave__reasons() == dict(REJECT_REASONS)
    assert tuple(constants.timeweave__upsert_ops()) == UPSERT_OPS
    assert tuple(constants.timeweave__delete_ops()) == DELETE_OPS
    hostile = ['a"b', "c\\d", "é\n", "{x}"]
    module = jinja2.Environment().from_string("{{ value == " + generate.jinja_literal(hostile) + " }}")
    assert module.render(value=hostile) == "True"


def test_the_plan_reads_the_dead_letter_reasons_from_the_core() -> None:
    # No reason text of the temporal join is written in the plan: it renders REJECT_REASONS.
    plan = PLAN_FILE.read_text()
    for reason in ("'NULL key column", "'NULL time column", "'unknown op", "'NULL event time", "'NULL'"):
        assert reason not in plan, reason
    assert "timeweave.timeweave__reasons()" in plan


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
