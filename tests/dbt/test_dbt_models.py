"""The dbt door end to end: the package's integration tests (dbt_macros/integration_tests, which installs the
package with ``packages: - local: ../``) built by dbt-spark (``method: session``), compared with Flink's output
for the same conformance cases and with the DataFrame door.

The project is built once per module, in process (``dbtRunner``) on the run's shared SparkSession: the
session method calls ``SparkSession.builder.getOrCreate()``, which returns the ``spark`` fixture's session,
so dbt's tables live in the fixture's warehouse and Derby metastore (``test_dbt_shares_the_fixture_session``
checks it).  One more test runs the real ``dbt deps && dbt build`` in a subprocess with its own JVM and the
profile's default directories, as a user would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.flink_cases import load_case, rows_as_text

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
# The package under test; override to test another copy of it (e.g. the one a wheel installed).
PACKAGE = Path(os.environ.get("TIMEWEAVE_DBT_PACKAGE", REPO / "dbt_macros"))
PROJECT = REPO / "dbt_macros" / "integration_tests"
SCHEMA = "timeweave_dbt"
# Microbatch runs always get explicit bounds: without them the first run backfills from `begin` to today.
# Four hourly batches: each needs versions written before it (10:00 batch: USD of 09:00; 11:00: JPY of 10:30).
BATCHES_FROM = "2020-01-01 10:00:00"
EVENT_TIME_BOUNDS = ["--event-time-start", "2020-01-01T10:00:00", "--event-time-end", "2020-01-01T14:00:00"]
INCREMENTAL_FIRST_RUN_UNTIL = "2020-01-01 11:00:00"
FLINK_COLUMNS = ["order_id", "price", "currency", "conversion_rate", "order_time", "rate_time"]
# What dbt writes into a project or package directory; never copied.
_DBT_OUTPUTS = ("target", "logs", "dbt_packages", "package-lock.yml", "__pycache__", "metastore_db", "derby.log")


def copy_project(target: Path) -> Path:
    """A private copy of the package with its integration-tests project inside; returns the project's path.

    The project installs the package from ``../`` (as in the repository), so the copy keeps that layout:
    ``target/`` holds the package (:data:`PACKAGE`) and ``target/integration_tests`` the project.  dbt's
    outputs (target/, logs/, dbt_packages/) then never land in the repository.
    """
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns("integration_tests", *_DBT_OUTPUTS))
    project = target / "integration_tests"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns(*_DBT_OUTPUTS))
    return project


def dbt_env(warehouse: Path, metastore: Path, derby_home: Path) -> dict[str, str]:
    """The variables dbt_macros/integration_tests/profiles.yml reads (its defaults: under target/)."""
    return {
        "TIMEWEAVE_DBT_SCHEMA": SCHEMA,
        "TIMEWEAVE_DBT_WAREHOUSE": str(warehouse),
        "TIMEWEAVE_DBT_METASTORE": str(metastore),
        "TIMEWEAVE_DBT_DERBY_HOME": str(derby_home),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
    }


@contextmanager
def session_dbt_env(spark_home: Path) -> Iterator[dict[str, str]]:
    """:func:`dbt_env` on the suite session's directories (so dbt-spark's getOrCreate changes nothing), set
    in ``os.environ`` for the block and restored after it."""
    env = dbt_env(spark_home / "warehouse", spark_home / "metastore_db", spark_home)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@dataclass
class Built:
    """The project after seed + build, with what the tests inspect."""

    project: Path
    invoke: Any  # (*args) -> dbtRunnerResult, with --project-dir/--profiles-dir filled in
    incremental_rows_after_first_run: int
    build_result: Any  # dbt build of every model and data test
    events: list[Any]  # every event dbt fired in these invocations (EventMsg)


@pytest.fixture(scope="module")
def built(spark, spark_home, tmp_path_factory) -> Iterator[Built]:
    from dbt.cli.main import dbtRunner

    project = copy_project(tmp_path_factory.mktemp("dbt") / "timeweave")
    events: list[Any] = []
    runner = dbtRunner(callbacks=[events.append])

    def invoke(*args: str) -> Any:
        return runner.invoke([*args, "--project-dir", str(project), "--profiles-dir", str(project)])

    with session_dbt_env(spark_home):
        for step in (("deps",), ("seed",)):
            result = invoke(*step)
            assert result.success, f"dbt {step[0]} failed: {result.exception or result.result}"
        # The incremental model in two runs: orders before 11:00 first, the rest in the full run below.
        first = invoke("run", "--select", "tj_changelog_left_incremental", "--vars",
                       json.dumps({"orders_until": INCREMENTAL_FIRST_RUN_UNTIL}))
        assert first.success, first.exception or first.result
        first_rows = spark.table(f"{SCHEMA}.tj_changelog_left_incremental").count()
        # Models and their data tests in one invocation (dbt build runs each model's tests after it).
        # The microbatch model is off by default (unbounded, its first run would fill every hour until now).
        build = invoke("build", "--exclude-resource-type", "seed", "--vars", json.dumps({"timeweave_microbatch": True}),
                       *EVENT_TIME_BOUNDS)
        assert build.result is not None, build.exception
        broken = [(r.node.name, r.message) for r in build.result if r.node.resource_type != "test" and str(r.status) != "success"]
        assert not broken, broken
        yield Built(project, invoke, first_rows, build, events)


def table_rows(spark, name: str, columns: list[str]) -> list[tuple]:
    return rows_as_text(spark.table(f"{SCHEMA}.{name}"), columns)


# ---------------------------------------------------------------------------------------------- plugin


def test_dbt_discovers_the_plugin() -> None:
    # dbt imports every top-level `dbt_*` module found by pkgutil.iter_modules() and reads `plugins`.
    from dbt.plugins.manager import PluginManager

    import dbt_timeweave

    modules = PluginManager.get_prefixed_modules()
    assert modules.get("dbt_timeweave") is dbt_timeweave
    assert [p.__name__ for p in dbt_timeweave.plugins] == ["TimeweavePlugin"]


def test_plugin_registered_timeweave_on_dbts_session(spark, built: Built) -> None:
    from dbt.adapters.spark import session

    import dbt_timeweave

    assert getattr(session.Cursor.execute, dbt_timeweave._WRAPPED, False)
    assert table_rows(spark, "plugin_check", ["registered"]) == [("true",)]
    assert spark in dbt_timeweave._registered


def test_plugin_hook_installs_once() -> None:
    from dbt.adapters.spark import session

    import dbt_timeweave

    dbt_timeweave.install_session_hook()
    wrapped = session.Cursor.execute
    assert dbt_timeweave.install_session_hook() is True
    assert session.Cursor.execute is wrapped  # a second plugin instance does not wrap again


def test_dbt_shares_the_fixture_session(spark, built: Built) -> None:
    # dbt-spark's session method found the fixture's session: dbt's tables are in its catalog.
    from pyspark.sql import SparkSession

    assert SparkSession.builder.getOrCreate() is spark
    assert spark.catalog.tableExists(f"{SCHEMA}.tj_view_inner")


# ------------------------------------------------------------------------------- results against Flink


@pytest.mark.parametrize(
    ("model", "case"),
    [
        ("tj_view_inner", "tj_view_inner"),  # table
        ("tj_view_left", "tj_view_left"),  # view
        ("tj_changelog_inner", "tj_changelog_inner"),  # table, changelog with deletes
        ("tj_changelog_left_incremental", "tj_changelog_left"),  # incremental, two runs
    ],
)
def test_model_equals_flink(spark, built: Built, model: str, case: str) -> None:
    columns, expected = load_case(case).expected("streaming")
    assert columns == FLINK_COLUMNS
    assert table_rows(spark, model, columns) == sorted(expected)


def test_microbatch_model_equals_flink_for_its_batches(spark, built: Built) -> None:
    columns, expected = load_case("tj_changelog_left").expected("streaming")
    want = sorted(r for r in expected if r[columns.index("order_time")] >= BATCHES_FROM)
    assert len(want) == 10  # o04 .. o13
    assert table_rows(spark, "tj_changelog_left_microbatch", columns) == want


def test_versioned_view_open_versions_equal_flinks_versioned_view(spark, built: Built) -> None:
    columns, expected = load_case("tj_versioned_view_changelog").expected("streaming")
    rows = rows_as_text(spark.table(f"{SCHEMA}.rates_history_versions").where("valid_to IS NULL"), columns)
    assert rows == sorted(expected)


def test_versioned_view_of_a_changelog_ends_versions_at_deletes(spark, built: Built) -> None:
    # From rates_changelog.csv: -U/+U at one time replace a version; -D ends it (JPY 11:30, USD 12:30).
    columns = ["currency", "conversion_rate", "valid_from", "valid_to"]
    assert table_rows(spark, "rates_changelog_versions", columns) == sorted([
        ("EUR", "1.1400", "2020-01-01 09:00:00.000", "2020-01-01 10:00:00.000"),
        ("EUR", "1.1500", "2020-01-01 10:00:00.000", "2020-01-01 11:00:00.000"),
        ("EUR", "1.1000", "2020-01-01 11:00:00.000", None),
        ("JPY", "0.0090", "2020-01-01 10:30:00.000", "2020-01-01 11:30:00.000"),
        ("JPY", "0.0091", "2020-01-01 12:00:00.000", None),
        ("USD", "1.0000", "2020-01-01 09:00:00.000", "2020-01-01 12:30:00.000"),
    ])


def test_incremental_model_was_built_in_two_runs(spark, built: Built) -> None:
    before = [r for r in load_case("tj_changelog_left").expected("streaming")[1] if r[4] < INCREMENTAL_FIRST_RUN_UNTIL]
    assert 0 < built.incremental_rows_after_first_run == len(before)


def test_microbatch_wrote_one_partition_per_hour(spark, built: Built) -> None:
    partitions = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {SCHEMA}.tj_changelog_left_microbatch").collect())
    assert partitions == [f"order_hour=2020-01-01-{h:02d}" for h in (10, 11, 12, 13)]


def test_microbatch_versioned_side_is_not_filtered_to_the_batch(built: Built) -> None:
    # dbt filters a ref() of a node with event_time (both seeds have one) to the batch when it renders it;
    # temporal_join keeps that for the left side and opts the versioned side out.
    batch = (built.project / "target" / "compiled" / "timeweave_integration_tests" / "models" / "joins"
             / "tj_changelog_left_microbatch" / "tj_changelog_left_microbatch_2020-01-01T11.sql")
    sql = batch.read_text()
    assert re.search(rf"FROM \(select \* from {SCHEMA}\.orders_changelog where order_time >= '2020-01-01 11:00:00", sql)
    assert re.search(rf"FROM {SCHEMA}\.rates_changelog\s", sql)
    assert "update_time >=" not in sql


def test_predicate_applies_to_the_version_found(spark, built: Built) -> None:
    # JPY's versions fail `r.conversion_rate >= 1`: LEFT pads NULLs instead of looking further back.
    _, expected = load_case("tj_changelog_left").expected("streaming")
    want = sorted((o, None if c == "JPY" else rate) for o, _, c, rate, _, _ in expected)
    assert table_rows(spark, "tj_changelog_left_predicate", ["order_id", "rate_conversion_rate"]) == want


def test_dead_letter_names_each_reason(spark, built: Built) -> None:
    rows = table_rows(spark, "tj_dead_letter", ["side", "reason"])
    assert rows == sorted([
        ("right", "unknown op X in column op"),
        ("right", "NULL key column currency"),
        ("right", "NULL time column update_time"),
    ])
    payloads = [json.loads(r["row"]) for r in spark.table(f"{SCHEMA}.tj_dead_letter").collect()]
    assert {p.get("op") for p in payloads} == {"X", "+U", "+I"}


def test_dbt_data_tests_pass(built: Built) -> None:
    tests = [r for r in built.build_result.result if r.node.resource_type == "test"]
    failures = [(r.node.name, r.status, r.message) for r in tests if str(r.status) != "pass"]
    assert built.build_result.success and not failures, failures
    # six joins (one over upsert rates), two versioned views, MATCH_RECOGNIZE as a table and through an ephemeral,
    # four window TVFs (models/windows)
    assert sum(r.node.name.startswith("equal_rows_") for r in tests) == 14
    assert {"default_op_lists", "tj_dead_letter_reasons"} <= {r.node.name for r in tests}


def test_dbt_finds_the_macro_docs_matching_the_macros(built: Built) -> None:
    # The project's flags make dbt validate the package's macros/*.yml against the macros (validate_macro_args)
    # and turn a mismatch into an error; here: no warning either, and dbt's manifest carries the docs.
    assert [e.info.msg for e in built.events if e.info.name == "InvalidMacroAnnotation"] == []
    manifest = json.loads((built.project / "target" / "manifest.json").read_text())
    documented = {m["name"]: m for m in manifest["macros"].values() if m["package_name"] == "timeweave" and m["patch_path"]}
    assert set(documented) == {"temporal_join", "versioned_view", "temporal_join_dead_letter", "match_recognize",
                               "default_upsert_ops", "default_delete_ops", "require_session_functions",
                               "tumble", "hop", "cumulate", "session", "window_top_n", "window_deduplicate",
                               "window_join", "window_aggregate"}
    assert [(a["name"], a["type"]) for a in documented["hop"]["arguments"]] == [
        ("relation", "any"), ("time", "string"), ("slide", "any"), ("size", "any"), ("offset", "any")]
    assert [(a["name"], a["type"]) for a in documented["match_recognize"]["arguments"]] == [
        ("relation", "any"), ("clause", "string")]
    assert all(m["description"] for m in documented.values())


# ------------------------------------------------------------------------------ same rows as other doors


def test_same_rows_as_the_dataframe_door(spark, built: Built) -> None:
    import timeweave

    orders, rates = spark.table(f"{SCHEMA}.orders_changelog"), spark.table(f"{SCHEMA}.rates_changelog")
    df = timeweave.temporal_join(orders, rates, "order_time", key="currency", time="update_time", format="changelog",
                               op="op", how="left", predicate="r.conversion_rate >= 1", right_prefix="rate_")
    columns = ["order_id", "price", "currency", "order_time", "rate_conversion_rate"]
    assert rows_as_text(df, columns) == table_rows(spark, "tj_changelog_left_predicate", columns)


@pytest.mark.parametrize(("model", "window", "keys"), [
    ("win_tumble", ("tumble", "10 minutes"), []),
    ("win_hop", ("hop", "5 minutes", "10 minutes"), []),
    ("win_cumulate", ("cumulate", "2 minutes", "10 minutes"), []),
    ("win_session_partitioned", ("session", "2 minutes", "supplier_id"), ["supplier_id"]),
])
def test_window_models_equal_the_dataframe_door(spark, built: Built, model: str, window: tuple, keys: list) -> None:
    import timeweave
    from timeweave.core import windows

    spec = getattr(windows, window[0])(*window[1:])
    df = timeweave.window_aggregate(spark.table(f"{SCHEMA}.win_bid"), {"total_price": "SUM(price)"}, keys=keys,
                                    time="bidtime", window=spec)
    columns = ["window_start", "window_end", *keys, "total_price"]
    assert rows_as_text(df, columns) == table_rows(spark, model, columns)


def test_window_aggregate_models_equal_the_dataframe_door(spark, built: Built) -> None:
    import timeweave
    from timeweave.core.windows import cumulate, hop
    from timeweave.core.windows.grouping import GroupingSets

    bids = spark.table(f"{SCHEMA}.win_bid")
    rolled = timeweave.window_aggregate(
        bids, {"cnt": "count(*)", "total_price": "sum(price)", "big": "count(*) FILTER (WHERE price > 3)",
               "g": "grouping(supplier_id)"}, grouping_sets=GroupingSets.of(rollup=["supplier_id", "item"]),
        time="bidtime", window=hop("5 minutes", "10 minutes"))
    keyed = timeweave.window_aggregate(bids, {"total_price": "sum(price)", "spread": "max(price) - min(price)"},
                                       keys="supplier_id", time="bidtime", window=cumulate("2 minutes", "10 minutes"))
    for model, df in (("win_aggregate_rollup", rolled), ("win_aggregate_keys", keyed)):
        assert spark.table(f"{SCHEMA}.{model}").columns == df.columns
        assert df.count() > 0
        assert rows_as_text(df, df.columns) == table_rows(spark, model, df.columns)


@pytest.mark.parametrize("model", ["win_top_n", "win_deduplicate", "win_join"])
def test_window_ops_models_equal_the_dataframe_door(spark, built: Built, model: str) -> None:
    import timeweave
    from timeweave.core.windows import hop, tumble

    bids = spark.table(f"{SCHEMA}.win_bid")
    if model == "win_top_n":
        df = timeweave.window_top_n(bids, 2, order_by=["price DESC", "item"], partition_by="supplier_id",
                                    time="bidtime", window=tumble("10 minutes"))
    elif model == "win_deduplicate":
        df = timeweave.window_deduplicate(bids, time="bidtime", keys="supplier_id", keep="last",
                                          window=hop("5 minutes", "10 minutes"), rank_column="rownum")
    else:
        windowed = timeweave.tumble(bids, "bidtime", "10 minutes")
        df = timeweave.window_join(windowed, windowed, on="supplier_id", how="full", left_prefix="L_", right_prefix="R_")
    assert spark.table(f"{SCHEMA}.{model}").columns == df.columns
    assert df.count() > 0
    assert rows_as_text(df, df.columns) == table_rows(spark, model, df.columns)


def test_default_op_lists_equal_the_core_lists(built: Built) -> None:
    from timeweave.core.changelog import DELETE_OPS, UPSERT_OPS

    result = built.invoke("compile", "--inline",
                          "{{ tojson([timeweave.default_upsert_ops(), timeweave.default_delete_ops()]) }}")
    assert result.success, result.exception
    upsert, delete = json.loads(result.result.results[0].node.compiled_code)
    assert (tuple(upsert), tuple(delete)) == (UPSERT_OPS, DELETE_OPS)


# ------------------------------------------------------------------------------------- clear failures


@pytest.fixture(scope="module")
def failure_messages(spark, built: Built) -> dict[str, str]:
    from pyspark.sql.functions import udtf

    @udtf(returnType="n int")
    class Count:
        def eval(self, upto: int):
            for n in range(upto):
                yield (n,)

    spark.udtf.register("tw_test_udtf", Count)  # a temporary (session) function
    result = built.invoke("run", "--select", "failure_cases", "--vars", json.dumps({"timeweave_failure_cases": True}))
    assert not result.success
    return {r.node.name: str(r.message) for r in result.result}


def test_unknown_column_names_argument_and_column_like_the_python_door(spark, failure_messages) -> None:
    import timeweave
    from timeweave.core.errors import SpecError

    with pytest.raises(SpecError) as python_error:
        timeweave.temporal_join(spark.table(f"{SCHEMA}.orders"), spark.table(f"{SCHEMA}.rates_history"),
                              "order_time", key="currency", time="valid_since")
    message = failure_messages["fail_unknown_column"]
    assert "fail_unknown_column: " + str(python_error.value) in message
    assert f"(right {SCHEMA}.rates_history)" in message


def test_view_needing_session_functions_is_refused_by_timeweave(failure_messages) -> None:
    message = failure_messages["fail_view_needs_session_function"]
    assert "needs the session function(s) timeweave_example_udtf" in message
    assert "materialize this model as 'table', 'incremental' or 'ephemeral'" in message


def test_view_over_a_temporary_udtf_fails_with_sparks_reason(failure_messages) -> None:
    message = failure_messages["fail_view_over_temporary_udtf"]
    assert "INVALID_TEMP_OBJ_REFERENCE" in message and "tw_test_udtf" in message


# --------------------------------------------------------------------------------------- real dbt CLI


# The CLI test's selection, kept small (the in-process build above runs every model and test): the plugin check,
# and MATCH_RECOGNIZE, whose session UDTF runs on Python workers, with the seeds it reads and is checked against.
# cautious: leave out tests that also depend on nodes outside the selection (mr_avg_price_from_ephemeral's).
CLI_SELECTION = ["--select", "plugin_check", "+mr_avg_price", "expected_mr_avg_price", "--indirect-selection", "cautious"]


@pytest.mark.slow
def test_dbt_cli_deps_and_build_in_the_integration_tests_project(tmp_path: Path) -> None:
    """``dbt deps && dbt build`` inside the integration-tests project, as the README shows: a stock dbt in a
    fresh process (its own JVM; warehouse and Derby under the project's target/, the profile's defaults).

    It runs as from an un-activated venv (``.venv/bin/dbt``): no PYSPARK_PYTHON and a ``python3`` on PATH
    without timeweave, so MATCH_RECOGNIZE's Python workers run only if the plugin gave them dbt's
    interpreter.  The models and data tests selected must pass, and dbt must find the macro docs matching the
    macros (the project's flags turn a mismatch into an error).
    """
    from tests.helpers.plain_env import plain_env

    project = copy_project(tmp_path / "timeweave")
    env = {k: v for k, v in plain_env(tmp_path).items() if not k.startswith("TIMEWEAVE_DBT_")}
    env.update(DBT_SEND_ANONYMOUS_USAGE_STATS="false", DO_NOT_TRACK="1")
    # dbt finds plugins with pkgutil.iter_modules(), which cannot see a setuptools editable install's
    # packages: the repository root must be on the path (see dbt_timeweave's docstring).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    dbt = str(Path(sys.executable).parent / "dbt")
    outputs = []
    for command in (["deps"], ["build", *CLI_SELECTION]):
        done = subprocess.run([dbt, *command], cwd=project, env=env, capture_output=True, text=True, timeout=1800,
                              check=False)
        outputs.append(done.stdout)
        assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    build = outputs[-1]
    assert "InvalidMacroAnnotation" not in build and "does not match the jinja definition" not in build
    assert re.search(r"PASS=6 WARN=0 ERROR=0 SKIP=0", build), build[-3000:]  # 2 seeds, 2 models, 2 tests
    assert "PASS accepted_values_plugin_check_registered__true" in build  # the plugin check ran and passed
    assert re.search(r"PASS equal_rows_mr_avg_price_", build)  # MATCH_RECOGNIZE ran on the workers, rows right
    assert (project / "target" / "spark-warehouse").is_dir() and (project / "target" / "metastore_db").is_dir()
