"""Assertions about the Spark jobs a piece of code starts."""

from __future__ import annotations

import random


def no_spark_job(spark, action):
    """Run ``action`` and assert it started no Spark job (validation happens first); its result is returned."""
    sc = spark.sparkContext
    group = f"tw-no-job-{random.random()}"
    sc.setJobGroup(group, "validation must not run a job")
    try:
        return action()
    finally:
        jobs = list(sc.statusTracker().getJobIdsForGroup(group))
        sc.setLocalProperty("spark.jobGroup.id", None)
        assert jobs == [], f"a Spark job ran: {jobs}"
