"""Names earlier releases exported here, kept so existing imports work.

The backfill driver is :mod:`timeweave.spark.host.backfill`; the slicing is :mod:`timeweave.core.time`; the
temporal join's sliced backfill is :mod:`timeweave.spark.temporal_join_backfill`, MATCH_RECOGNIZE's
:mod:`timeweave.spark.match_recognize_backfill`.  New code imports from those.
"""

from __future__ import annotations

from timeweave.core.time import Slice, slice_label, slices_of
from timeweave.spark.host.backfill import SLICE_COLUMN
from timeweave.spark.host.backfill import parquet_scan_files as _parquet_scan_files
from timeweave.spark.temporal_join_backfill import run_slices

__all__ = ["SLICE_COLUMN", "Slice", "_parquet_scan_files", "run_slices", "slice_label", "slices_of"]
