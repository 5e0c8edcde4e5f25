"""Spark output types of the row-pattern functions and aggregates (driver side: ``plan`` starts no JVM).

The core's values must fit the declared Spark column: arrays as ArrayType of the element's type,
``MAX_BY`` as its first argument, the fixed-type functions as their type.
"""

from __future__ import annotations

from pyspark.sql import types as T

from timeweave.spark.match_recognize import plan

SCHEMA = T.StructType([
    T.StructField("k", T.StringType()), T.StructField("t", T.TimestampType()), T.StructField("p", T.IntegerType()),
    T.StructField("w", T.DoubleType()), T.StructField("s", T.StringType()),
])


def test_measure_types() -> None:
    bound = plan("""PARTITION BY k ORDER BY t MEASURES
            ARRAY_AGG(A.p) AS arr, ARRAY_AGG(CLASSIFIER()) AS labels, MAX_BY(A.s, A.w) AS mb, MIN_BY(A.w, A.p) AS nb,
            COUNT_IF(A.p > 1) AS ci, BOOL_AND(A.p > 1) AS ba, ARBITRARY(A.t) AS at, STDDEV(A.p) AS sd, COUNT() AS n,
            ARRAY[A.p, 2] AS lit, ELEMENT_AT(ARRAY_AGG(A.s), 1) AS e, CARDINALITY(ARRAY_AGG(A.p)) AS c,
            CONCAT_WS(',', ARRAY_AGG(A.s)) AS j, A.s LIKE 'x%' AS l, A.p IS DISTINCT FROM 1 AS d,
            IF(A.p > 1, A.w, NULL) AS i, SQRT(A.p) AS r, SUBSTRING(A.s, 1, 2) AS sub
        PATTERN (A+)""", SCHEMA)
    types = {f.name: f.dataType for f in bound.schema.fields}
    assert types["arr"] == T.ArrayType(T.IntegerType(), True)
    assert types["labels"] == T.ArrayType(T.StringType(), True)
    assert types["mb"] == T.StringType() and types["nb"] == T.DoubleType()
    assert types["ci"] == T.LongType() and types["n"] == T.LongType() and types["c"] == T.LongType()
    assert types["ba"] == T.BooleanType() and types["l"] == T.BooleanType() and types["d"] == T.BooleanType()
    assert types["at"] == T.TimestampType() and types["sd"] == T.DoubleType() and types["r"] == T.DoubleType()
    assert types["lit"] == T.ArrayType(T.LongType(), True)
    assert types["e"] == T.StringType() and types["j"] == T.StringType() and types["sub"] == T.StringType()
    assert types["i"] == T.DoubleType()
