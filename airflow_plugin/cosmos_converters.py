"""A recipe for astronomer-cosmos users: dbt models that declare a timeweave job run as timeweave operators.

Cosmos renders a dbt project as Airflow tasks, one ``dbt run`` task per model.  A model computed by a
timeweave job as well (the dbt model uses ``timeweave.temporal_join``; the job is its streaming or
sliced-backfill form) can name that job in its ``meta``; :func:`node_converters` hands Cosmos a
converter (``RenderConfig.node_converters``) that renders those models as
:class:`~timeweave.airflow.operators.timeweave.TimeweaveBackfillOperator` /
:class:`~timeweave.airflow.operators.timeweave.TimeweaveStreamingOperator` tasks, in the model's place in the
graph (same task id, same upstream and downstream tasks, same test task after it), and every other model
as Cosmos renders it::

    # models/schema.yml
    models:
      - name: orders_enriched
        config:
          meta:
            timeweave:
              kind: backfill                  # or streaming (default: backfill)
              config: jobs/orders_enriched.json   # relative to the dbt project, absolute, or an inline mapping
              slices: 3                       # any other operator argument: only, slices_per_job, checkpoint,
                                              # heartbeat, flush, launcher, conn_id, spark_conf, deferrable, ...

    # the DAG
    from cosmos import DbtDag, ProjectConfig, ProfileConfig, RenderConfig
    from timeweave.airflow.cosmos_converters import node_converters

    DbtDag(dag_id="orders", project_config=ProjectConfig(...), profile_config=ProfileConfig(...),
           render_config=RenderConfig(node_converters=node_converters(launcher="spark-submit", conn_id="spark"),
                                      node_conversion_by_task_group=False))

``node_conversion_by_task_group=False`` keeps a tested model's task group (the converted task, then its
tests); with Cosmos's default the converter would replace the whole group, so it refuses to.

Keyword arguments of :func:`node_converters` go to every timeweave task; a model's ``meta`` wins over them.
Cosmos itself is not a dependency of timeweave: this module imports it only when called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: The key under a model's ``meta`` (``config.meta``) that names its timeweave job.
META_KEY = "timeweave"
#: Job kinds a model's ``meta.timeweave.kind`` may name.
KINDS = ("backfill", "streaming")


def timeweave_meta(node: Any) -> dict[str, Any] | None:
    """The ``meta.timeweave`` mapping of a Cosmos ``DbtNode`` (``config.meta``, or top-level ``meta``); None if absent.

    >>> from types import SimpleNamespace
    >>> timeweave_meta(SimpleNamespace(config={"meta": {"timeweave": {"config": "job.json"}}}, unique_id="model.p.m"))
    {'config': 'job.json'}
    """
    config = getattr(node, "config", None) or {}
    meta = config.get("meta") or getattr(node, "meta", None) or {}
    spec = meta.get(META_KEY)
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise ValueError(f"dbt node {node.unique_id}: meta.{META_KEY} must be a mapping, got {type(spec).__name__}")
    return dict(spec)


def _job_config(node: Any, value: Any) -> Any:
    """``meta.timeweave.config`` as the operator takes it: a mapping, or a path resolved against the dbt project."""
    if isinstance(value, Mapping):
        return dict(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"dbt node {node.unique_id}: meta.{META_KEY}.config must name a job config (a path or a mapping)")
    path = Path(value)
    if not path.is_absolute():
        path = Path(node.path_base) / path
    if not path.is_file():
        raise ValueError(f"dbt node {node.unique_id}: meta.{META_KEY}.config: no such job config file {str(path)!r}")
    return str(path)


def timeweave_task(dag: Any, task_group: Any, node: Any, task_id: str, spec: Mapping[str, Any],
                   operator_kwargs: Mapping[str, Any] | None = None) -> Any:
    """The timeweave operator for a dbt ``node`` with the ``meta.timeweave`` mapping ``spec``.

    ``operator_kwargs`` are defaults for every timeweave task; ``spec`` (minus ``kind`` and ``config``) wins.
    """
    from timeweave.airflow.operators.timeweave import TimeweaveBackfillOperator, TimeweaveStreamingOperator

    spec = dict(spec)
    kind = spec.pop("kind", "backfill")
    if kind not in KINDS:
        raise ValueError(f"dbt node {node.unique_id}: meta.{META_KEY}.kind is {kind!r}; use one of {KINDS}")
    if "config" not in spec:
        raise ValueError(f"dbt node {node.unique_id}: meta.{META_KEY} needs 'config' (the job config)")
    config = _job_config(node, spec.pop("config"))
    operator = TimeweaveBackfillOperator if kind == "backfill" else TimeweaveStreamingOperator
    kwargs = {**(operator_kwargs or {}), **spec}
    return operator(task_id=task_id, config=config, dag=dag, task_group=task_group, **kwargs)


def _in_model_group(task_group: Any, node: Any) -> bool:
    return task_group is not None and str(task_group.group_id).split(".")[-1] == node.name


def _cosmos_task(dag: Any, task_group: Any, node: Any, task_id: str, kwargs: Mapping[str, Any]) -> Any:
    """The task Cosmos itself renders for ``node`` (a converter replaces every node of its resource type)."""
    from cosmos import RenderConfig
    from cosmos.airflow.graph import create_airflow_task, create_task_metadata

    # A model with tests under TestBehavior.AFTER_EACH sits in a task group of its own, as its "run" task.
    in_model_group = task_id == "run" and _in_model_group(task_group, node)
    outer = task_group.parent_group if in_model_group else task_group
    identifiers = [dag.dag_id] + ([outer.group_id] if outer is not None and outer.group_id else [])
    render_config = RenderConfig(
        test_behavior=kwargs["test_behavior"],
        source_rendering_behavior=kwargs["source_rendering_behavior"],
        normalize_task_id=kwargs.get("normalize_task_id"),
        normalize_task_display_name=kwargs.get("normalize_task_display_name", False),
        enable_owner_inheritance=kwargs.get("enable_owner_inheritance", True),
    )
    meta = create_task_metadata(
        node=node, execution_mode=kwargs["execution_mode"], args=kwargs["task_args"],
        dbt_dag_task_group_identifier="__".join(identifiers), render_config=render_config,
        use_task_group=in_model_group, test_indirect_selection=kwargs["test_indirect_selection"],
        on_warning_callback=kwargs.get("on_warning_callback"), detached_from_parent=kwargs.get("detached_from_parent"),
    )
    if meta is None or meta.id != task_id:  # a Cosmos whose task naming changed: say so rather than mis-wire
        raise RuntimeError(f"dbt node {node.unique_id}: cannot reproduce Cosmos's task {task_id!r} (got {meta})")
    return create_airflow_task(meta, dag, task_group=task_group)


def node_converters(**operator_kwargs: Any) -> dict[Any, Callable[..., Any]]:
    """``RenderConfig.node_converters`` for Cosmos: models with ``meta.timeweave`` become timeweave tasks.

    ``operator_kwargs`` (``launcher``, ``conn_id``, ``spark_conf``, ``deferrable``, ...) go to every timeweave
    task; a model's own ``meta.timeweave`` entries win.

    Example::

        RenderConfig(node_converters=node_converters(launcher="spark-submit", conn_id="spark_cluster"),
                     node_conversion_by_task_group=False)
    """
    from cosmos.constants import DbtResourceType

    def convert_timeweave_model(dag: Any, task_group: Any, node: Any, task_id: str, **kwargs: Any) -> Any:
        if task_id == "run" and not _in_model_group(task_group, node):
            # Cosmos replaces a tested model's whole task group (model + tests) by the converter's one task,
            # named "run" outside any model group: the tests would vanish and the ids of two models collide.
            raise ValueError(
                f"dbt node {node.unique_id}: has tests; render with RenderConfig(node_conversion_by_task_group=False) "
                "so that the converted task keeps its model's task group and tests"
            )
        spec = timeweave_meta(node)
        if spec is None:
            return _cosmos_task(dag, task_group, node, task_id, kwargs)
        return timeweave_task(dag, task_group, node, task_id, spec, operator_kwargs)

    return {DbtResourceType.MODEL: convert_timeweave_model}


__all__ = ["KINDS", "META_KEY", "node_converters", "timeweave_meta", "timeweave_task"]
