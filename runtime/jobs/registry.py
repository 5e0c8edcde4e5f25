"""The job registry: which operator a job config runs, and where that operator's job pieces live.

One :class:`JobOperator` per operator: the config section that selects it, its config class, its job
module (the streaming registration ``stream``, the backfill registration ``backfill``, its ``sources`` and
``describe``) and its name in run directories and reports.  The drivers (:mod:`timeweave.jobs.streaming`,
:mod:`timeweave.jobs.backfill`), :func:`timeweave.jobs.config.load_job_config` and the CLI look an
operator up here and never branch on its type: adding an operator adds an entry to :data:`OPERATORS` and
its job module, and touches no driver.

Entries name their config class and job module by import path, resolved on use: reading a config (the
CLI's ``validate``, Airflow's parse of a DAG) must not import Spark or every operator's modules.

>>> operator_for({"match_recognize": {"clause": "..."}, "input": {}}).name
'match_recognize'
>>> operator_for({"left": {}, "join": {}}).name, operator_for({}).name
('temporal_join', 'temporal_join')
>>> [op.section for op in OPERATORS]
['join', 'match_recognize', 'window', 'window_top_n', 'window_deduplicate', 'window_join', 'datastream', 'group_aggregate', 'sql_insert']
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from timeweave.core.errors import SpecError


@dataclass(frozen=True)
class JobOperator:
    """One operator as the jobs see it.

    ``name`` is its name in run directories, reports and metrics; ``section`` the job config section that
    selects it; ``label`` how log lines name it; ``config`` its config class as ``module:Class`` (with
    ``from_dict(data)``); ``jobs`` its job module, which defines:

    * ``sources(job) -> {side: SourceConfig}``: the file sources the job reads, by side name;
    * ``stream(spark, job, rows, control) -> StreamingRun``: the streaming registration
      (:class:`timeweave.jobs.streaming.StreamingRun`), given each side's well-formed streaming rows;
    * ``backfill(spark, job, rows, start, end, slices, only, slices_per_job, on_slice) -> metrics``: the backfill
      registration, given each side's well-formed batch rows;
    * ``describe(job) -> str``: one line for ``timeweave-job validate``;
    * optionally ``time_bounds(job) -> (form, columns)``: the form of the backfill's bounds
      (:func:`timeweave.core.time.bound_form`: ``timestamp``, ``date``, ``integer``, ``decimal``, ``floating``; None:
      the bounds' own) and the time columns deciding it, from the config alone; without it bounds are timestamps
      (:func:`timeweave.jobs.backfill.backfill_bounds`).

    ``slices_per_job``: whether its backfill takes ``slices_per_job`` (several slices written by one Spark job).
    """

    name: str
    section: str
    label: str
    config: str
    jobs: str
    slices_per_job: bool = False

    def config_class(self) -> type:
        """The config class (imported on first use)."""
        module, _, name = self.config.partition(":")
        return getattr(importlib.import_module(module), name)

    def module(self) -> ModuleType:
        """The job module (imported on first use)."""
        return importlib.import_module(self.jobs)


#: Every operator a job config can select.  The first one is the default: a config without the section of
#: another is parsed as it (so a config that misses its operator's section gets that config's own error).
OPERATORS: tuple[JobOperator, ...] = (
    JobOperator("temporal_join", "join", "temporal join", "timeweave.jobs.config:JobConfig",
                "timeweave.jobs.temporal_join", slices_per_job=True),
    JobOperator("match_recognize", "match_recognize", "MATCH_RECOGNIZE", "timeweave.jobs.config:MatchRecognizeJobConfig",
                "timeweave.jobs.match_recognize"),
    JobOperator("window", "window", "window aggregation", "timeweave.jobs.config:WindowJobConfig",
                "timeweave.jobs.windows"),
    JobOperator("window_top_n", "window_top_n", "window Top-N", "timeweave.jobs.config:WindowTopNJobConfig",
                "timeweave.jobs.window_ranks"),
    JobOperator("window_deduplicate", "window_deduplicate", "window deduplication",
                "timeweave.jobs.config:WindowDeduplicateJobConfig", "timeweave.jobs.window_ranks"),
    JobOperator("window_join", "window_join", "window join", "timeweave.jobs.config:WindowJoinJobConfig",
                "timeweave.jobs.window_join"),
    JobOperator("datastream", "datastream", "DataStream window", "timeweave.jobs.datastream:DataStreamJobConfig",
                "timeweave.jobs.datastream"),
    JobOperator("group_aggregate", "group_aggregate", "continuous GROUP BY",
                "timeweave.jobs.config:GroupAggregateJobConfig", "timeweave.jobs.group_aggregate"),
    # a streaming script's INSERT (timeweave-job sql --mode streaming builds it; no JSON config selects it)
    JobOperator("sql_insert", "sql_insert", "streaming SQL insert", "timeweave.jobs.sql_streaming:SqlInsertJob",
                "timeweave.jobs.sql_streaming"),
)
DEFAULT = OPERATORS[0]


def operator_for(data: Mapping[str, Any]) -> JobOperator:
    """The operator a job config (a dict) selects: the one whose section it has; the default otherwise.

    >>> operator_for({"match_recognize": {}, "window": {}}).name
    'match_recognize'
    """
    chosen = [op for op in OPERATORS[1:] if op.section in data]
    return chosen[0] if chosen else DEFAULT


def operator_of(job: Any) -> JobOperator:
    """The operator whose config class ``job`` is (a parsed job config).

    >>> operator_of(object())
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: job config: argument 'config': an object is no job config of any operator (temporal_join, match_recognize, window, window_top_n, window_deduplicate, window_join, datastream, group_aggregate, sql_insert)
    """
    for op in OPERATORS:
        if type(job) is op.config_class():
            return op
    names = ", ".join(op.name for op in OPERATORS)
    raise SpecError("config", f"{_a(type(job).__name__)} is no job config of any operator ({names})", where="job config")


def _a(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def config_classes() -> tuple[type, ...]:
    """Every operator's config class (an argument that is one of these is a parsed config already)."""
    return tuple(op.config_class() for op in OPERATORS)


__all__ = ["DEFAULT", "OPERATORS", "JobOperator", "config_classes", "operator_for", "operator_of"]
