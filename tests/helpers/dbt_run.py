"""Run tests/dbt_project in process on the suite's SparkSession (dbt-spark ``method: session``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def run_dbt_project(spark_home: Path, tmp_path: Path, *args: str) -> tuple[str, Any]:
    """A private copy of the test project, ``dbt deps``, then ``dbt <args>``; returns (schema, dbtRunnerResult).

    The profile's directories are the shared session's, so dbt-spark's ``getOrCreate`` reuses it; the
    environment is restored afterwards.
    """
    from dbt.cli.main import dbtRunner

    from tests.dbt.test_dbt_models import copy_project, dbt_env

    project = copy_project(tmp_path / "dbt_project")
    env = dbt_env(spark_home / "warehouse", spark_home / "metastore_db", spark_home)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        runner = dbtRunner()
        common = ["--project-dir", str(project), "--profiles-dir", str(project)]
        assert runner.invoke(["deps", *common]).success
        return env["TIMEWEAVE_DBT_SCHEMA"], runner.invoke([*args, *common])
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
