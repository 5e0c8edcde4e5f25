"""Airflow 3 integration of timeweave, in the provider layout.

* :mod:`timeweave.airflow.hooks.timeweave` - ``TimeweaveHook`` launches jobs in-process, or through the Apache
  Spark provider's ``SparkSubmitHook`` (which it subclasses: every spark-submit option, cluster mode, kill).
* :mod:`timeweave.airflow.operators.timeweave` - ``TimeweaveStreamingOperator``, ``TimeweaveBackfillOperator``,
  ``TimeweaveSqlOperator`` (a Flink SQL script)
  (``deferrable=True``; OpenLineage datasets).
* :mod:`timeweave.airflow.triggers.timeweave` - ``TimeweaveJobTrigger``: a deferred job's status file, watched
  from the triggerer.
* :mod:`timeweave.airflow.get_provider_info` - provider metadata (the ``timeweave`` connection type), registered
  by the ``apache_airflow_provider`` entry point.
* :mod:`timeweave.airflow.plugin` - ``TimeweavePlugin`` (template macros), registered by the
  ``airflow.plugins`` entry point.  Airflow 3 plugins cannot carry operators: import them from here.
* :mod:`timeweave.airflow.cosmos_converters` - ``node_converters()`` for astronomer-cosmos users.
"""
