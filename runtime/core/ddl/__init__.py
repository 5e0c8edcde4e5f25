"""Flink's DDL as written, engine-free: scripts split into statements, ``CREATE TABLE`` (columns, computed and
metadata columns, ``PRIMARY KEY ... NOT ENFORCED``, ``WATERMARK FOR``, ``WITH`` options), Flink types as Spark
type text, connector options as reader options, and ``CREATE VIEW`` with Flink's versioned-view shape.

Every module here parses or decides; :mod:`timeweave.spark.ddl` registers what they describe on a session.
"""
