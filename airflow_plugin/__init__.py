"""Airflow 3 integration of timeweave, in the provider layout.

* :mod:`airflow_plugin.hooks.timeweave` - ``TimeweaveHook`` launches jobs (in-process or spark-submit).
* :mod:`airflow_plugin.operators.timeweave` - ``TimeweaveStreamingOperator``, ``TimeweaveBackfillOperator``.
* :mod:`airflow_plugin.plugin` - ``TimeweavePlugin`` (template macros), registered by the
  ``airflow.plugins`` entry point.  Airflow 3 plugins cannot carry operators: import them from here.
"""
