"""The streaming host's earlier import path (before 2026-11-26); it holds no code of its own.

The host is :mod:`timeweave.spark.host` (state bridge, packs, wire format, heartbeats, the generic processor,
the writer); the temporal join's registration is :mod:`timeweave.spark.temporal_join_streaming`.  Names
imported from here keep working: the host's directly, the temporal join's (``temporal_join_stream``,
``TemporalJoinProcessor``, ``StreamingJoin``, its op codes and tagged columns) forwarded on first use.  New
code imports from the modules above.
"""

from __future__ import annotations

import importlib
from typing import Any

from timeweave.core.event_time import spark_timer_ms, watermark_us
from timeweave.spark.host import *  # noqa: F403 (this module is the host's earlier name)
from timeweave.spark.host import __all__ as _host_names
from timeweave.spark.host.state import PIECES as _PIECES
from timeweave.spark.host.state import MapEntry as _MapEntry
from timeweave.spark.host.state import TimerIndex as _Index
from timeweave.spark.host.state import cell_key as _cell_key
from timeweave.spark.host.state import piece_key as _piece_key
from timeweave.spark.host.stream import heartbeat_rows as _heartbeat
from timeweave.spark.host.wire import from_wire as _from_wire
from timeweave.spark.host.wire import to_wire as _json

_TS = TS  # noqa: F405
_REGISTRATION = "timeweave.spark.temporal_join_streaming"


def __getattr__(name: str) -> Any:
    """The temporal join's names, from its registration (imported on first use: no cycle, no code here)."""
    module = importlib.import_module(_REGISTRATION)
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


__all__ = [
    *_host_names,
    "_Index",
    "_MapEntry",
    "_PIECES",
    "_cell_key",
    "_from_wire",
    "_heartbeat",
    "_json",
    "_piece_key",
    "spark_timer_ms",
    "watermark_us",
]
