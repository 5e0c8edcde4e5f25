"""The dbt door end to end: tests/dbt_project built by dbt-spark (``method: session``) with the timeweave
package, compared with Flink's output for the same conformance cases and with the DataFrame door.

The project is built once per module, in process (``dbtRunner``) on the run's shared SparkSession: the
session method calls ``SparkSession.builder.getOrCreate()``, which returns the ``spark`` fixture's session,
so dbt's tables live in the fixture's warehouse and Derby metastore (``test_dbt_shares_the_fixture_session``
checks it).  One more test runs the real ``dbt`` CLI in a subprocess with its own JVM and directories.
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
PROJECT = REPO / "tests" / "dbt_project"
# The package under test; override to test another copy of it (e.g. the one a wheel installed).
PACKAGE = Path(os.environ.get("TIMEWEAVE_DBT_PACKAGE", REPO / "dbt_macros"))
SCHEMA = "timeweave_dbt"
# Microbatch runs always get explicit bounds: without them the first run backfills from `begin` to today.
# Four hourly batches: each needs versions written before it (10:00 batch: USD of 09:00; 11:00: JPY of 10:30).
BATCHES_FROM = "2020-01-01 10:00:00"
EVENT_TIME_BOUNDS = ["--event-time-start", "2020-01-01T10:00:00", "--event-time-end", "2020-01-01T14:00:00"]
INCREMENTAL_FIRST_RUN_UNTIL = "2020-01-01 11:00:00"
FLINK_COLUMNS = ["order_id", "price", "currency", "conversion_rate", "order_time", "rate_time"]


def copy_project(target: Path) -> Path:
    """A private copy of the test project, so dbt's target/, logs/ and dbt_packages/ never land in the repo."""
    shutil.copytree(PROJECT, target, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages", "package-lock.yml"))
    return target


def dbt_env(warehouse: Path, metastore: Path, derby_home: Path) -> dict[str, str]:
    """The variables tests/dbt_project/profiles.yml and packages.yml read."""
    return {
        "TIMEWEAVE_DBT_MACROS": str(PACKAGE),
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


@pytest.fixture(scope="module")
def built(spark, spark_home, tmp_path_factory) -> Iterator[Built]:
    from dbt.cli.main import dbtRunner

    project = copy_project(tmp_path_factory.mktemp("dbt") / "project")
    runner = dbtRunner()

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
        build = invoke("build", "--exclude-resource-type", "seed", *EVENT_TIME_BOUNDS)
        assert build.result is not None, build.exception
        broken = [(r.node.name, r.message) for r in build.result if r.node.resource_type != "test" and str(r.status) != "success"]
        assert not broken, broken
        yield Built(project, invoke, first_rows, build)


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
    batch = (built.project / "target" / "compiled" / "timeweave_tests" / "models" / "joins"
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
    assert sum(r.node.name.startswith("equal_rows_") for r in tests) == 6  # five joins + the versioned view


# ------------------------------------------------------------------------------ same rows as other doors


def test_same_rows_as_the_dataframe_door(spark, built: Built) -> None:
    import runtime

    orders, rates = spark.table(f"{SCHEMA}.orders_changelog"), spark.table(f"{SCHEMA}.rates_changelog")
    df = runtime.temporal_join(orders, rates, "order_time", key="currency", time="update_time", format="changelog",
                               op="op", how="left", predicate="r.conversion_rate >= 1", right_prefix="rate_")
    columns = ["order_id", "price", "currency", "order_time", "rate_conversion_rate"]
    assert rows_as_text(df, columns) == table_rows(spark, "tj_changelog_left_predicate", columns)


def test_default_op_lists_equal_the_core_lists(built: Built) -> None:
    from runtime.core.changelog import DELETE_OPS, UPSERT_OPS

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
    import runtime
    from runtime.core.errors import SpecError

    with pytest.raises(SpecError) as python_error:
        runtime.temporal_join(spark.table(f"{SCHEMA}.orders"), spark.table(f"{SCHEMA}.rates_history"),
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


# MATCH_RECOGNIZE over the orders seed through the plugin's SQL function (Python workers), and its check:
# prices rise within every currency, so `A B+` matches each currency with two or more orders once, whole.
PLAIN_ENV_MODEL = """{{ config(materialized='table') }}
{{ timeweave.match_recognize(ref('orders'), 'PARTITION BY currency ORDER BY order_time
    MEASURES COUNT(*) AS n, LAST(B.price) AS top PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)') }}
"""
PLAIN_ENV_CHECK = """select * from (
  select currency, count(*) as n, max(price) as top from {{ ref('orders') }} group by currency having count(*) > 1
) expected full outer join {{ ref('mr_plain_env') }} m using (currency)
where expected.n is null or m.n is null or expected.n <> m.n or expected.top <> m.top
"""


@pytest.mark.slow
def test_dbt_cli_run_imports_the_plugin(tmp_path: Path) -> None:
    """A stock `dbt build` in a fresh process (its own JVM, warehouse and Derby) loads the plugin.

    It runs as from an un-activated venv (``.venv/bin/dbt``): no PYSPARK_PYTHON and a ``python3`` on PATH
    without timeweave, so MATCH_RECOGNIZE's Python workers run only if the plugin gave them dbt's interpreter.
    """
    from tests.helpers.plain_env import plain_env

    project = copy_project(tmp_path / "project")
    (project / "models" / "mr_plain_env.sql").write_text(PLAIN_ENV_MODEL)
    (project / "tests" / "mr_plain_env_rows.sql").write_text(PLAIN_ENV_CHECK)
    env = {**plain_env(tmp_path), **dbt_env(tmp_path / "warehouse", tmp_path / "metastore_db", tmp_path)}
    # dbt finds plugins with pkgutil.iter_modules(), which cannot see a setuptools editable install's
    # packages: the repository root must be on the path (see dbt_timeweave's docstring).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    dbt = str(Path(sys.executable).parent / "dbt")
    common = ["--project-dir", str(project), "--profiles-dir", str(project)]
    deps = subprocess.run([dbt, "deps", *common], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert deps.returncode == 0, deps.stdout + deps.stderr
    selection = "plugin_check +tj_changelog_inner +mr_plain_env"
    # cautious: leave out tests that also depend on nodes outside the selection (the expected seed).
    build = subprocess.run([dbt, "build", "--select", *selection.split(), "--indirect-selection", "cautious", *common],
                           env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-2000:]
    assert re.search(r"PASS=\d+ WARN=0 ERROR=0", build.stdout)
    assert "accepted_values_plugin_check_registered__true" in build.stdout  # the plugin check ran and passed
    assert re.search(r"PASS mr_plain_env_rows", build.stdout)  # MATCH_RECOGNIZE ran on the workers, rows right
