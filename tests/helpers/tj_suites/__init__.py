"""Peers' temporal join test programs, verbatim, with their published results (run by
``tests/spark/test_temporal_join_flink_itcase.py``)."""
