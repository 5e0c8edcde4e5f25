"""Spark's functions in DEFINE and MEASURES: per-row calls computed by Spark, the rest in Python, held to Spark.

The issue's examples run through ``timeweave.sql`` as written; a property test runs each function the core
evaluates over navigated values in Spark SQL on random values and compares; one streaming job computes a
per-row call and writes the batch door's rows and dead letters, and so does a backfill in 3 slices.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import types as T

import timeweave
from timeweave.core.pattern import PatternValidationError
from timeweave.core.pattern.functions import SCALAR_FUNCTIONS
from timeweave.jobs.backfill import run_backfill
from timeweave.jobs.streaming import run_streaming
from timeweave.spark.match_recognize import match_recognize

EVENTS = T.StructType([
    T.StructField("k", T.StringType()), T.StructField("t", T.LongType()), T.StructField("x", T.LongType()),
    T.StructField("y", T.LongType()), T.StructField("arr", T.ArrayType(T.LongType())),
    T.StructField("m", T.MapType(T.StringType(), T.LongType())), T.StructField("s", T.StringType()),
])
ROWS = [
    ("a", 1, 7, 2, [1, 5, None], {"p": 1}, "u"),
    ("a", 2, -9, 4, [8, 2], {"q": 2, "p": 9}, "v"),
    ("a", 3, 20, 3, [], None, "u"),
    ("b", 1, 4, 1, [3], {"r": 3}, "w"),
]


@pytest.fixture(scope="module")
def events(spark):
    df = spark.createDataFrame(ROWS, EVENTS)
    df.createOrReplaceTempView("tw_fn_events")
    return df


def _rows(df) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_the_issue_examples_through_the_sql_door(spark, events) -> None:
    out = timeweave.sql(spark, """
        SELECT * FROM tw_fn_events MATCH_RECOGNIZE (
            PARTITION BY k ORDER BY t
            MEASURES array_max(LAST(A.arr)) AS last_max, array_max(FIRST(A.arr)) AS first_max,
                     DIV(LAST(A.x), PREV(LAST(A.x))) AS d, try_element_at(FIRST(A.m), 'p') AS p,
                     map_agg(A.s, A.x) AS ma, multimap_agg(A.s, A.x) AS mm, map_union(A.m) AS mu,
                     min_by(A.s, A.x, 2) AS mb, max_by(A.s, A.x, 2) AS xb, min(A.x, 2) AS lo, max(A.x, 2) AS hi
            PATTERN (A+) DEFINE A AS DIV(A.x, A.y) <> 0 OR array_max(A.arr) IS NULL)""")
    got = {r["k"]: r.asDict() for r in out.collect()}
    assert got["a"] == {
        "k": "a", "last_max": None, "first_max": 5, "d": -2, "p": 1,  # 20 div -9 = -2 (toward zero)
        "ma": {"u": 7, "v": -9}, "mm": {"u": [7, 20], "v": [-9]}, "mu": {"p": 1, "q": 2},
        "mb": ["v", "u"], "xb": ["u", "u"], "lo": [-9, 7], "hi": [20, 7],
    }
    assert got["b"]["d"] is None and got["b"]["mb"] == ["w"] and got["b"]["mu"] == {"r": 3}
    types = {f.name: f.dataType.simpleString() for f in out.schema.fields}
    assert types["ma"] == "map<string,bigint>" and types["mm"] == "map<string,array<bigint>>"
    assert types["mb"] == "array<string>" and types["d"] == "bigint"


def test_any_spark_function_per_row_in_define_and_measures(spark, events) -> None:
    clause = """PARTITION BY k ORDER BY t
        MEASURES {hash} AS h, LAST(bit_count(A.x)) AS bits, COUNT(*) AS n
        ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS levenshtein(A.s, 'u') <= 1 AND try_divide(A.x, A.y) IS NOT NULL"""
    navigated = match_recognize(events, clause.format(hash="sha2(LAST(A.s), 256)"))  # LAST(sha2(A.s, 256))
    out = match_recognize(events, clause.format(hash="sha2(A.s, 256)"))  # A.s: the row's, as LAST(A.s) is
    assert _rows(navigated) == _rows(out)
    assert not [c for c in out.columns if c.startswith("__tw")]  # the hidden columns are never output
    expected = spark.sql("SELECT k, t, sha2(s, 256) AS h, bit_count(x) AS bits FROM tw_fn_events").collect()
    by_row = {(r["k"], r["t"]): (r["h"], r["bits"]) for r in expected}
    got = out.collect()
    assert len(got) == 4
    assert all((r["h"], r["bits"]) == by_row[(r["k"], r["t"])] for r in got)


def test_spark_errors_point_into_the_clause(spark, events) -> None:
    with pytest.raises(PatternValidationError, match=r"unknown function NO_SUCH_FN in NO_SUCH_FN\(x\)") as caught:
        match_recognize(events, "ORDER BY t MEASURES no_such_fn(A.x) AS v PATTERN (A)")
    assert "col 21" in str(caught.value)
    # any other analysis error keeps Spark's own first line
    with pytest.raises(PatternValidationError, match=r"Spark cannot compute SHA2\(x, x\) per row: .*DATATYPE") as caught:
        match_recognize(events, "ORDER BY t MEASURES sha2(A.x, A.x) AS v PATTERN (A)")
    # the UDTF (dbt, a MATCH_RECOGNIZE over a CTE) receives its rows as they are: named, positioned
    with pytest.raises(Exception, match=r"sha2\(A.s, 256\) is computed by Spark for each input row"):
        timeweave.sql(spark, """WITH e AS (SELECT * FROM tw_fn_events)
            SELECT * FROM e MATCH_RECOGNIZE (ORDER BY t MEASURES sha2(A.s, 256) AS h PATTERN (A))""").collect()


# -- the property test: the core's implementations of Spark functions over navigated values ---------------

PROPERTY = T.StructType([
    T.StructField("arr", T.ArrayType(T.LongType())), T.StructField("darr", T.ArrayType(T.DoubleType())),
    T.StructField("a", T.LongType()), T.StructField("b", T.LongType()), T.StructField("i", T.IntegerType()),
    T.StructField("d", T.DoubleType()), T.StructField("m", T.MapType(T.StringType(), T.LongType())),
    T.StructField("key", T.StringType()),
])
#: (Spark SQL, the core function, its argument columns): every ``engine_first`` function, one case at least
CASES = [
    ("array_max(arr)", "ARRAY_MAX", ("arr",)), ("array_min(arr)", "ARRAY_MIN", ("arr",)),
    ("array_max(darr)", "ARRAY_MAX", ("darr",)), ("array_min(darr)", "ARRAY_MIN", ("darr",)),
    ("div(a, b)", "DIV", ("a", "b")), ("try_element_at(arr, i)", "TRY_ELEMENT_AT", ("arr", "i")),
    ("try_element_at(m, key)", "TRY_ELEMENT_AT", ("m", "key")), ("array_position(arr, a)", "ARRAY_POSITION", ("arr", "a")),
    ("array_distinct(arr)", "ARRAY_DISTINCT", ("arr",)), ("array_size(arr)", "ARRAY_SIZE", ("arr",)),
    ("signum(d)", "SIGNUM", ("d",)), ("sign(a)", "SIGN", ("a",)), ("nvl(a, b)", "NVL", ("a", "b")),
    ("ifnull(d, 1.5D)", "IFNULL", ("d", 1.5)),
]


def _random_row(rng: random.Random) -> tuple[Any, ...]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.15 else value

    arr = maybe([maybe(rng.randint(-3, 3)) for _ in range(rng.randint(0, 4))])
    darr = maybe([maybe(rng.choice([-1.5, 0.0, 2.25, math.nan, 7.0])) for _ in range(rng.randint(0, 3))])
    b = maybe(rng.choice([-3, -2, -1, 1, 2, 5]))  # never 0: Spark under ANSI raises, the core gives NULL
    index = rng.choice([-5, -2, -1, 1, 2, 3, 6])  # never 0: an error in both
    m = maybe({rng.choice("pqr"): maybe(rng.randint(0, 9)) for _ in range(rng.randint(0, 2))})
    return (arr, darr, maybe(rng.randint(-20, 20)), b, maybe(index), maybe(rng.choice([-2.5, 0.0, 3.0, math.nan])),
            m, maybe(rng.choice("pqrs")))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return (a == b and type(a) is type(b)) or (a is None and b is None)


def test_core_implementations_of_spark_functions_agree_with_spark(spark) -> None:
    engine_first = {name for name, f in SCALAR_FUNCTIONS.items() if f.engine_first}
    assert {name for _, name, _ in CASES} == engine_first  # a new implementation needs its case here
    rng = random.Random(20261207)
    values = [_random_row(rng) for _ in range(60)]
    df = spark.createDataFrame(values, PROPERTY)
    results = df.selectExpr("*", *[f"{sql} AS r{n}" for n, (sql, _, _) in enumerate(CASES)]).collect()
    failures = []
    for row in results:
        for n, (sql, name, columns) in enumerate(CASES):
            args = [row[c] if isinstance(c, str) else c for c in columns]
            function = SCALAR_FUNCTIONS[name]
            forms = [args]
            if isinstance(args[0], dict):  # the matcher reads a map from Arrow as (key, value) pairs
                forms.append([list(args[0].items()), *args[1:]])
            for form in forms:
                got = function.impl(*form)
                if not _same(got, row[f"r{n}"]):
                    failures.append(f"{sql} over {form}: core {got!r}, Spark {row[f'r{n}']!r}")
    assert not failures, "\n".join(failures[:10])


# -- one streaming job and one backfill ----------------------------------------------------------------------------------------

STREAM_SCHEMA = "id STRING, k STRING, t TIMESTAMP, v BIGINT, tags ARRAY<STRING>"
STREAM_CLAUSE = """PARTITION BY k ORDER BY t
    MEASURES FIRST(A.t) AS t0, LAST(B.t) AS t1, array_max(LAST(B.tags)) AS top, LAST(sha2(B.id, 256)) AS h,
             max_by(B.id, B.v, 2) AS best, listagg(B.id, ',') AS ids
    PATTERN (A B+) DEFINE B AS array_size(B.tags) > 0 AND DIV(B.v, 2) >= DIV(PREV(B.v), 2)"""


def test_the_streaming_and_backfill_jobs_compute_per_row_calls_like_the_batch_door(spark, tmp_path: Path) -> None:
    rng = random.Random(7)
    rows = [{"id": f"r{i}", "k": rng.choice("xy"), "t": None if i == 5 else f"2020-01-01T00:{i:02d}:00",
             "v": rng.randint(0, 9), "tags": [rng.choice("abc") for _ in range(rng.randint(0, 2))]} for i in range(40)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = {
        "match_recognize": {"clause": STREAM_CLAUSE},
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": STREAM_SCHEMA,
                  "watermark_delay": "3 hours"},
        "output": {"path": str(tmp_path / "out")}, "checkpoint": str(tmp_path / "chk"),
        "trigger": {"available_now": True},
    }
    run = run_streaming(config, spark, flush=True)
    batch = match_recognize(spark.read.schema(STREAM_SCHEMA).json(str(tmp_path / "in")), STREAM_CLAUSE)
    main = spark.read.parquet(str(tmp_path / "out"))
    assert main.schema == batch.schema

    def canonical(df) -> list[str]:
        return sorted(json.dumps(r.asDict(), default=str, sort_keys=True) for r in df.select(*batch.columns).collect())

    assert canonical(main) == canonical(batch) and canonical(batch)
    assert run["dead_letter"] == 1
    (dead,) = spark.read.parquet(str(tmp_path / "out_dead_letter")).collect()
    assert sorted(json.loads(dead["row"])) == ["id", "k", "tags", "v"]  # the input's own columns, no hidden one
    # the backfill in 3 slices: the same rows and dead letter
    job = {**config, "output": {"path": str(tmp_path / "backfill")}}
    metrics = run_backfill(job, "2020-01-01T00:00:00", "2020-01-01T01:00:00", 3, spark=spark)
    assert metrics["dead_letter"] == 1
    assert canonical(spark.read.parquet(str(tmp_path / "backfill"))) == canonical(batch)
    (dead,) = spark.read.parquet(str(tmp_path / "backfill_dead_letter")).collect()
    assert sorted(json.loads(dead["row"])) == ["id", "k", "tags", "v"]


@pytest.mark.parametrize("text", [
    "sha2(upper(s) || 'x', 256)", "array_max(array(x, y, 3))", "concat_ws('-', s, CAST(x AS STRING))",
    "CASE WHEN x > 5 THEN 'big' WHEN x IS NULL THEN NULL ELSE lower(s) END", "CASE s WHEN 'u' THEN 1 ELSE 2 END",
    "x BETWEEN -10 AND 5", "NOT (x IN (7, 20))", "coalesce(try_element_at(m, 'p'), -1) + x * 2 - y % 3",
    "if(s LIKE 'u%', x, y)", "x IS DISTINCT FROM y", "array_contains(arr, 5) AND NOT s = 'w'",
])
def test_calls_given_to_spark_mean_what_spark_sql_means(spark, events, text: str) -> None:
    """The Column a call becomes (match_recognize_functions.spark_column) is the same text run by Spark SQL."""
    from timeweave.core.pattern import parse_expression
    from timeweave.spark.match_recognize_functions import spark_column

    ours = [r[0] for r in events.orderBy("k", "t").select(spark_column(parse_expression(text))).collect()]
    theirs = [r[0] for r in events.orderBy("k", "t").selectExpr(text).collect()]
    assert ours == theirs
