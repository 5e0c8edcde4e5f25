"""Which Python executable runs a session's Python workers (the interpreter that unpickles timeweave's code).

PySpark 4.3 picks the workers' executable on the driver, once: ``SparkContext.__init__`` sets
``sc.pythonExec = os.environ.get("PYSPARK_PYTHON", "python3")``, and every Python function Spark runs
(a ``mapInArrow`` function, a UDTF, a pandas UDF) is wrapped with the ``pythonExec`` of the moment it is
wrapped (``pyspark.sql.udf._wrap_function``).  ``spark.pyspark.python`` only reaches ``PYSPARK_PYTHON`` when
``spark-submit`` launches the driver.  So a user's own session started from an un-activated virtualenv
(``.venv/bin/python script.py``, ``.venv/bin/dbt run``) runs its workers with whatever ``python3`` is first on
``PATH`` -- an interpreter without timeweave, which fails inside the worker with ``ModuleNotFoundError: No
module named 'timeweave'`` (``TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON`` from SQL and dbt).

:func:`ensure_worker_python` is called by every door that ships Python code to workers, before it wraps
any: when the user chose no executable (no ``PYSPARK_PYTHON`` in the environment, no ``spark.pyspark.python``
in the session's conf) and the workers run on this machine (``local``, ``local[N]``, ``local-cluster[...]``
masters), the workers use the driver's own interpreter (:data:`sys.executable`), which has timeweave.  A
``spark.pyspark.python`` set on the session is honoured (PySpark itself ignores it outside spark-submit).
On a cluster master the driver's interpreter path means nothing on the executors' hosts, so a session with
no choice fails before any job, naming what to set.  A Spark Connect client has nothing to decide: the
Connect server's own ``PYSPARK_PYTHON`` picks its workers' executable.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from timeweave.core.errors import TimeweaveError

#: The session conf naming the workers' executable (Spark's own key).
PYTHON_CONF = "spark.pyspark.python"
#: Masters whose executors run on the driver's machine, where the driver's interpreter path is valid.
_LOCAL_MASTER = re.compile(r"local(\[[^\]]*\]|-cluster\[[^\]]*\])?$")


class WorkerPythonError(TimeweaveError):
    """The session's Python workers would run an interpreter timeweave cannot vouch for; says what to set."""


def _is_local(master: str) -> bool:
    return bool(_LOCAL_MASTER.match(master.strip()))


def ensure_worker_python(spark: Any) -> str | None:
    """Make ``spark``'s Python workers run an interpreter that has timeweave; returns the executable chosen.

    * ``PYSPARK_PYTHON`` set in the environment: the user's choice, kept (PySpark already uses it).
    * ``spark.pyspark.python`` set on the session: used for the workers from now on.
    * neither, local master: the driver's interpreter (``sys.executable``).
    * neither, cluster master: :class:`WorkerPythonError` before any job, saying what to set.
    * Spark Connect session: nothing to do (the server's environment decides); returns None.

    Only functions wrapped after this call are affected, so every door calls it first.  Idempotent and cheap.

    Example::

        spark = SparkSession.builder.master("local[2]").getOrCreate()
        ensure_worker_python(spark)   # -> '/path/to/.venv/bin/python' unless PYSPARK_PYTHON is set
    """
    sc = _classic_context(spark)
    if sc is None:
        return None
    chosen = os.environ.get("PYSPARK_PYTHON")
    if chosen:
        return str(sc.pythonExec)
    configured = sc.getConf().get(PYTHON_CONF)
    if configured:
        sc.pythonExec = configured
        return configured
    master = sc.master or ""
    if not _is_local(master):
        raise WorkerPythonError(
            f"the Python workers of this session (master {master!r}) would run 'python3' from each executor's "
            f"PATH, and timeweave cannot tell whether that interpreter has timeweave installed.  Name the "
            f"executors' interpreter (one with timeweave, pyspark and pyarrow, Python "
            f"{sys.version_info[0]}.{sys.version_info[1]}): set the environment variable PYSPARK_PYTHON before "
            f"the session starts, or the Spark conf {PYTHON_CONF} (e.g. --conf {PYTHON_CONF}=python3)"
        )
    if sc.pythonExec != sys.executable:
        sc.pythonExec = sys.executable
    return sys.executable


def _classic_context(spark: Any) -> Any:
    """The session's SparkContext, or None for a Spark Connect session (which has none)."""
    # by module, not isinstance: importing pyspark.sql.connect needs grpc, which a classic install may lack
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return None
    return spark.sparkContext


__all__ = ["PYTHON_CONF", "WorkerPythonError", "ensure_worker_python"]
