"""Airflow 3 integration of timeweave, in the provider layout.

* :mod:`airflow_plugin.hooks.timeweave` - ``TimeweaveHook`` launches jobs in-process, or through the Apache
  Spark provider's ``SparkSubmitHook`` (which it subclasses: every spark-submit option, cluster mode, kill).
* :mod:`airflow_plugin.operators.timeweave` - ``TimeweaveStreamingOperator``, ``TimeweaveBackfillOperator``
  (``deferrable=True``; OpenLineage datasets).
* :mod:`airflow_plugin.triggers.timeweave` - ``TimeweaveJobTrigger``: a deferred job's status file, watched
  from the triggerer.
* :mod:`airflow_plugin.get_provider_info` - provider metadata (the ``timeweave`` connection type), registered
  by the ``apache_airflow_provider`` entry point.
* :mod:`airflow_plugin.plugin` - ``TimeweavePlugin`` (template macros), registered by the
  ``airflow.plugins`` entry point.  Airflow 3 plugins cannot carry operators: import them from here.
* :mod:`airflow_plugin.cosmos_converters` - ``node_converters()`` for astronomer-cosmos users.
"""
