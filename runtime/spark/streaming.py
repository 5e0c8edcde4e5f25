"""The streaming host's earlier import path (before 2026-11-26); it holds no code of its own.

The host is :mod:`timeweave.spark.host` (state bridge, packs, wire format, heartbeats, the generic processor,
the writer); the temporal join's registration is :mod:`timeweave.spark.temporal_join_streaming`.  Names
imported from here keep working, each forwarded on use to the module that defines it, with a
``DeprecationWarning`` naming that module: new code imports from there.  Nothing in timeweave imports this
module (``tests/core/test_import_layers.py``).

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     from timeweave.spark.streaming import pack_rows
>>> str(caught[0].message)
'timeweave.spark.streaming.pack_rows is deprecated: import pack_rows from timeweave.spark.host'
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from timeweave.spark.host import __all__ as _HOST_NAMES

_HOST = "timeweave.spark.host"
_REGISTRATION = "timeweave.spark.temporal_join_streaming"
#: Earlier names that are not the host's public names: old name -> (module, name there).
_RENAMED = {
    "_Index": ("timeweave.spark.host.state", "TimerIndex"),
    "_MapEntry": ("timeweave.spark.host.state", "MapEntry"),
    "_PIECES": ("timeweave.spark.host.state", "PIECES"),
    "_cell_key": ("timeweave.spark.host.state", "cell_key"),
    "_piece_key": ("timeweave.spark.host.state", "piece_key"),
    "_heartbeat": ("timeweave.spark.host.stream", "heartbeat_rows"),
    "_from_wire": ("timeweave.spark.host.wire", "from_wire"),
    "_json": ("timeweave.spark.host.wire", "to_wire"),
    "_TS": (_HOST, "TS"),
    "spark_timer_ms": ("timeweave.core.event_time", "spark_timer_ms"),
    "watermark_us": ("timeweave.core.event_time", "watermark_us"),
}


def __getattr__(name: str) -> Any:
    """The name from the module that defines it now, with a ``DeprecationWarning`` (imported on first use: no cycle).

    A renamed name's module, else the host's for its public names, else the temporal join's registration.
    """
    if name.startswith("__"):  # module protocol lookups (__path__, __wrapped__, ...): not forwarded
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, real = _RENAMED.get(name, (_HOST if name in _HOST_NAMES else _REGISTRATION, name))
    try:
        value = getattr(importlib.import_module(module_name), real)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    warnings.warn(f"{__name__}.{name} is deprecated: import {real} from {module_name}", DeprecationWarning, stacklevel=2)
    return value


#: What ``from timeweave.spark.streaming import *`` gave before 2026-11-26: the host's public names and the renamed ones.
__all__ = [*_HOST_NAMES, *_RENAMED]
