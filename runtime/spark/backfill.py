"""Names earlier releases exported here (before 2026-11-26), kept so existing imports work; no code of its own.

The backfill driver is :mod:`timeweave.spark.host.backfill`; the slicing is :mod:`timeweave.core.time`; the
temporal join's sliced backfill is :mod:`timeweave.spark.temporal_join_backfill`, MATCH_RECOGNIZE's
:mod:`timeweave.spark.match_recognize_backfill`.  Each name is forwarded on use to the module that defines it,
with a ``DeprecationWarning`` naming it: new code imports from there.  Nothing in timeweave imports this
module (``tests/core/test_import_layers.py``).

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     from timeweave.spark.backfill import slices_of
>>> str(caught[0].message)
'timeweave.spark.backfill.slices_of is deprecated: import slices_of from timeweave.core.time'
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

#: old name -> (module, name there)
_MOVED = {
    "SLICE_COLUMN": ("timeweave.spark.host.backfill", "SLICE_COLUMN"),
    "Slice": ("timeweave.core.time", "Slice"),
    "_parquet_scan_files": ("timeweave.spark.host.backfill", "parquet_scan_files"),
    "run_slices": ("timeweave.spark.temporal_join_backfill", "run_slices"),
    "slice_label": ("timeweave.core.time", "slice_label"),
    "slices_of": ("timeweave.core.time", "slices_of"),
}


def __getattr__(name: str) -> Any:
    """The name from the module that defines it now, with a ``DeprecationWarning``."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, real = _MOVED[name]
    warnings.warn(f"{__name__}.{name} is deprecated: import {real} from {module_name}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module_name), real)


__all__ = ["SLICE_COLUMN", "Slice", "_parquet_scan_files", "run_slices", "slice_label", "slices_of"]  # noqa: F822
