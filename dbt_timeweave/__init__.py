"""The dbt plugin of timeweave: registers timeweave's SQL functions on dbt-spark's session.

dbt-core discovers plugins by importing every top-level module whose name starts with ``dbt_`` and
reading its ``plugins`` list (``dbt.plugins.manager.PluginManager.from_modules``).  Discovery walks
``sys.path`` with :func:`pkgutil.iter_modules`, which does NOT see packages of a setuptools *editable*
install in its default mode (they are served by an import hook, not a path entry): install timeweave
normally, or editable with ``--config-settings editable_mode=strict`` (a link tree on ``sys.path``; the
README's commands), or put the repository root on ``PYTHONPATH``.

dbt-spark's ``method: session`` builds (or reuses) the process's SparkSession inside every
``Cursor.execute``, so there is no "connection opened" hook to attach to.  The plugin therefore wraps
``Cursor.execute`` once: before a statement runs it obtains the session exactly as dbt-spark does
(``SparkSession.builder.enableHiveSupport()`` plus the profile's ``server_side_parameters``) and calls
:func:`timeweave.register` on it the first time it sees that session.  ``timeweave.register`` is idempotent
and this module additionally remembers the sessions it registered, so the cost is paid once per session.

Registering also settles which interpreter runs the session's Python workers (timeweave's SQL functions run
there): with no ``PYSPARK_PYTHON`` and no ``spark.pyspark.python``, a local master's workers run dbt's own
interpreter, so ``.venv/bin/dbt run`` from an un-activated venv works (``runtime/spark/environment.py``).

Example (nothing to call: installing timeweave next to dbt-spark is enough)::

    $ dbt run --profiles-dir .   # with a dbt-spark `method: session` profile
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any

from dbt.plugins.manager import dbtPlugin

#: Attribute marking dbt-spark's wrapped ``Cursor.execute``, so a second plugin instance does not wrap twice.
_WRAPPED = "_timeweave_registers_functions"

_lock = threading.Lock()
# SparkSession objects already registered; weak so a stopped session is not kept alive by the plugin.
_registered: weakref.WeakSet[Any] = weakref.WeakSet()


def ensure_registered(server_side_parameters: dict[str, Any] | None = None) -> Any:
    """Get dbt-spark's session (building it as dbt-spark would) and register timeweave on it once.

    Returns the session.  Safe from dbt's worker threads: registration happens under a lock.

    Example::

        spark = ensure_registered({"spark.sql.session.timeZone": "UTC"})
    """
    from pyspark.sql import SparkSession

    from timeweave.spark.sql_door import register

    # Fast path, taken by every statement after the first: the process's session is already registered.
    # (_instantiatedSession is pyspark's own "the session getOrCreate would return"; reading it avoids
    # rebuilding the session, which logs "Using an existing Spark session" for every statement.)
    existing = getattr(SparkSession, "_instantiatedSession", None)
    if existing is not None and existing in _registered:
        return existing
    # Same construction as dbt.adapters.spark.session.Cursor.execute, so the session dbt-spark gets
    # next is this one (getOrCreate returns the existing session and applies runtime configs again).
    builder = SparkSession.builder.enableHiveSupport()
    for parameter, value in (server_side_parameters or {}).items():
        builder = builder.config(parameter, value)
    spark = builder.getOrCreate()
    if spark not in _registered:
        with _lock:
            if spark not in _registered:
                register(spark)
                _registered.add(spark)
    return spark


def _registering(execute: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(execute)
    def wrapper(self: Any, sql: str, *parameters: Any) -> Any:
        ensure_registered(getattr(self, "server_side_parameters", None))
        return execute(self, sql, *parameters)

    setattr(wrapper, _WRAPPED, True)
    return wrapper


def install_session_hook() -> bool:
    """Wrap dbt-spark's session ``Cursor.execute``; False when dbt-spark (session method) is not installed.

    Idempotent: a wrapped ``execute`` is recognised and left alone.

    Example::

        install_session_hook()
    """
    try:
        from dbt.adapters.spark import session
    except ImportError:  # another adapter (or dbt-spark without pyspark): nothing to register on
        return False
    with _lock:
        if not getattr(session.Cursor.execute, _WRAPPED, False):
            session.Cursor.execute = _registering(session.Cursor.execute)
    return True


class TimeweavePlugin(dbtPlugin):
    """Registers timeweave's SQL functions on the SparkSession of dbt-spark's ``method: session``.

    dbt instantiates it once per invocation (``dbt run``, ``dbtRunner().invoke(...)``) after loading the
    project; ``initialize`` imports the registration module up front so a broken install fails the
    invocation at start-up, with the import error, instead of in the middle of a model.
    """

    def initialize(self) -> None:
        import timeweave.spark.registration  # noqa: F401 - fail fast when timeweave's runtime is missing

        self.hooked = install_session_hook()


plugins = [TimeweavePlugin]
