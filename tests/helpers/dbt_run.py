"""Run the dbt package's integration-tests project (dbt_macros/integration_tests) in process on the suite's
SparkSession (dbt-spark ``method: session``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def run_dbt_project(spark_home: Path, tmp_path: Path, *args: str) -> tuple[str, Any]:
    """A private copy of the test project, ``dbt deps``, then ``dbt <args>``; returns (schema, dbtRunnerResult).

    The profile's directories are the shared session's, so dbt-spark's ``getOrCreate`` reuses it; the
    environment is restored afterwards.
    """
    from dbt.cli.main import dbtRunner

    from tests.dbt.test_dbt_models import copy_project, session_dbt_env

    project = copy_project(tmp_path / "timeweave")
    with session_dbt_env(spark_home) as env:
        runner = dbtRunner()
        common = ["--project-dir", str(project), "--profiles-dir", str(project)]
        assert runner.invoke(["deps", *common]).success
        return env["TIMEWEAVE_DBT_SCHEMA"], runner.invoke([*args, *common])
