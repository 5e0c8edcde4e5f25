"""The astronomer-cosmos recipe: a rendered DbtTaskGroup / DbtDag with our models as timeweave tasks (no dbt run)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pendulum
import pytest

from tests.airflow.conftest import REPO
from timeweave.airflow.cosmos_converters import node_converters, timeweave_meta
from timeweave.airflow.operators.timeweave import TimeweaveBackfillOperator, TimeweaveStreamingOperator
from timeweave.jobs import example_pipeline as ep

cosmos = pytest.importorskip("cosmos")  # the dev extra installs it; timeweave itself does not need it

PROJECT = "timeweave_example"


def _node(name: str, depends_on: list[str], meta: dict | None = None) -> dict:
    return {"resource_type": "model", "package_name": PROJECT, "original_file_path": f"models/{name}.sql",
            "depends_on": {"nodes": depends_on}, "tags": [], "config": {"meta": meta or {}, "materialized": "table"},
            "fqn": [PROJECT, name], "name": name}


def _test(name: str, model: str) -> dict:
    return {"resource_type": "test", "package_name": PROJECT, "original_file_path": "models/schema.yml",
            "depends_on": {"nodes": [f"model.{PROJECT}.{model}"]}, "tags": [], "config": {}, "fqn": [PROJECT, name],
            "name": name}


@pytest.fixture
def project(tmp_path) -> Path:
    """The example dbt project with a manifest (as ``dbt parse`` writes it) and the model's backfill job config."""
    root = tmp_path / "timeweave_example_dbt"
    shutil.copytree(REPO / "dags" / "timeweave_example_dbt", root)
    (root / "jobs").mkdir()
    (root / "jobs" / "orders_enriched.json").write_text(json.dumps(ep.job_config(ep.ExamplePaths(tmp_path), "backfill")))
    staged = [f"model.{PROJECT}.stg_orders", f"model.{PROJECT}.stg_rates_changelog"]
    meta = {"timeweave": {"kind": "backfill", "config": "jobs/orders_enriched.json", "slices": 3}}
    manifest = {
        "metadata": {"project_name": PROJECT},
        "nodes": {
            f"model.{PROJECT}.stg_orders": _node("stg_orders", []),
            f"model.{PROJECT}.stg_rates_changelog": _node("stg_rates_changelog", []),
            f"model.{PROJECT}.orders_enriched": _node("orders_enriched", staged, meta),
            f"test.{PROJECT}.not_null_orders_enriched_order_id": _test("not_null_orders_enriched_order_id",
                                                                        "orders_enriched"),
        },
        "sources": {}, "exposures": {},
    }
    (root / "target").mkdir(exist_ok=True)
    (root / "target" / "manifest.json").write_text(json.dumps(manifest))
    return root


def _configs(root: Path) -> dict:
    from cosmos import ExecutionConfig, ProfileConfig, ProjectConfig

    return {
        "project_config": ProjectConfig(manifest_path=root / "target" / "manifest.json", project_name=PROJECT),
        "profile_config": ProfileConfig(profile_name=PROJECT, target_name="dev",
                                        profiles_yml_filepath=root / "profiles.yml"),
        "execution_config": ExecutionConfig(dbt_project_path=root),
    }


def test_a_task_group_renders_our_model_as_a_timeweave_backfill_in_its_place(project):
    from airflow.sdk import DAG
    from cosmos import DbtTaskGroup, LoadMode, RenderConfig
    from cosmos.operators.local import DbtRunLocalOperator

    with DAG("tw_cosmos", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")) as dag:
        DbtTaskGroup(group_id="dbt", render_config=RenderConfig(
            load_method=LoadMode.DBT_MANIFEST, node_converters=node_converters(launcher="spark-submit", slices=2),
            node_conversion_by_task_group=False),
            **_configs(project))
    tasks = dag.task_dict
    enriched = tasks["dbt.orders_enriched.run"]
    assert isinstance(enriched, TimeweaveBackfillOperator)
    assert enriched.config == str(project / "jobs" / "orders_enriched.json")
    assert enriched.slices == 3 and enriched.launcher == "spark-submit"  # the model's meta wins; defaults fill in
    # the other models stay Cosmos's own dbt tasks, wired as before: staging -> our task -> the model's tests
    assert isinstance(tasks["dbt.stg_orders_run"], DbtRunLocalOperator)
    assert enriched.upstream_task_ids == {"dbt.stg_orders_run", "dbt.stg_rates_changelog_run"}
    assert enriched.downstream_task_ids == {"dbt.orders_enriched.test"}


def test_a_dbt_dag_renders_a_streaming_model(project):
    from cosmos import DbtDag, LoadMode, RenderConfig, TestBehavior

    manifest_path = project / "target" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    node = manifest["nodes"][f"model.{PROJECT}.orders_enriched"]
    node["config"]["meta"]["timeweave"] = {"kind": "streaming", "config": str(project / "jobs" / "orders_enriched.json"),
                                           "checkpoint": "/data/chk/orders", "heartbeat": "{{ data_interval_end }}"}
    manifest_path.write_text(json.dumps(manifest))
    dag = DbtDag(dag_id="tw_cosmos_dag", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
                 render_config=RenderConfig(load_method=LoadMode.DBT_MANIFEST, test_behavior=TestBehavior.NONE,
                                            node_converters=node_converters()),
                 **_configs(project))
    stream = dag.task_dict["orders_enriched_run"]
    assert isinstance(stream, TimeweaveStreamingOperator)
    assert stream.checkpoint == "/data/chk/orders" and stream.heartbeat == "{{ data_interval_end }}"
    assert stream.upstream_task_ids == {"stg_orders_run", "stg_rates_changelog_run"}


@pytest.mark.parametrize(
    ("meta", "message"),
    [({"timeweave": {"kind": "batch", "config": "jobs/orders_enriched.json"}}, "kind is 'batch'"),
     ({"timeweave": {"kind": "backfill"}}, "needs 'config'"),
     ({"timeweave": {"config": "jobs/missing.json"}}, "no such job config file"),
     ({"timeweave": "jobs/orders_enriched.json"}, "must be a mapping")],
)
def test_a_bad_meta_names_the_model(project, meta, message):
    from airflow.sdk import DAG
    from cosmos import DbtTaskGroup, LoadMode, RenderConfig

    manifest_path = project / "target" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["nodes"][f"model.{PROJECT}.orders_enriched"]["config"]["meta"] = meta
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=f"model.{PROJECT}.orders_enriched.*{message}"), \
            DAG("tw_cosmos_bad", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
        DbtTaskGroup(group_id="dbt", render_config=RenderConfig(load_method=LoadMode.DBT_MANIFEST,
                                                                node_converters=node_converters(),
                                                                node_conversion_by_task_group=False),
                     **_configs(project))


def test_cosmos_default_conversion_by_task_group_is_refused_not_a_silent_loss_of_tests(project):
    from airflow.sdk import DAG
    from cosmos import DbtTaskGroup, LoadMode, RenderConfig

    with pytest.raises(ValueError, match="node_conversion_by_task_group=False"), \
            DAG("tw_cosmos_default", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
        DbtTaskGroup(group_id="dbt", render_config=RenderConfig(load_method=LoadMode.DBT_MANIFEST,
                                                                node_converters=node_converters()),
                     **_configs(project))


def test_timeweave_meta_reads_config_meta():
    from types import SimpleNamespace

    assert timeweave_meta(SimpleNamespace(config={"meta": {}}, unique_id="m")) is None
