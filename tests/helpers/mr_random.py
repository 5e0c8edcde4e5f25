"""Seeded random MATCH_RECOGNIZE inputs and clauses for the cross-door tests (batch, backfill, streaming).

:func:`random_events` gives rows as dicts (the core's input) with :data:`SCHEMA` (Spark's DDL, same
column order, so ``spark.createDataFrame(as_tuples(rows), SCHEMA)`` builds the DataFrame).  Columns:

* ``k``   STRING partition key (a few values, some NULL: NULL is an ordinary MATCH_RECOGNIZE partition);
* ``t``   TIMESTAMP event time, the first ORDER BY column; unique per partition unless ``ties=True``;
  ``null_times`` rows get a NULL time (no door matches them: dead letters);
* ``seq`` BIGINT, unique over the table: the secondary ORDER BY column that makes tied times reproducible;
* ``v``   BIGINT 0..9, ``s`` STRING in a/b/c, ``w`` DOUBLE: the values DEFINE reads, each sometimes NULL.

:data:`CLAUSES` maps an id to a clause; every clause orders by ``t`` first, ascending (what the
streaming and backfill doors need), then ``seq``, so every door sees one order even with ties.
:func:`canonical` renders output rows as a multiset of text tuples so doors can be compared exactly.

>>> rows = random_events(1, n=5)
>>> [sorted(r) for r in rows[:1]]
[['k', 's', 'seq', 't', 'v', 'w']]
>>> len(rows), len({(r["k"], r["t"]) for r in rows})
(5, 5)
>>> random_events(1, n=5) == rows
True
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

#: The input columns, in order, as Spark DDL.
SCHEMA = "k STRING, t TIMESTAMP, seq BIGINT, v BIGINT, s STRING, w DOUBLE"
COLUMNS = ("k", "t", "seq", "v", "s", "w")
#: Every generated time lies in ``[T0, T0 + SPAN)``.
T0 = datetime(2024, 1, 1)
SPAN = timedelta(hours=2)

CLAUSES: dict[str, str] = {
    # ONE ROW, PAST LAST ROW (the default), greedy loop with a running aggregate in DEFINE, FIRST/LAST, AVG
    "one-row-greedy-avg": """
        PARTITION BY k ORDER BY t, seq
        MEASURES FIRST(A.t) AS t0, LAST(A.t) AS t1, AVG(A.v) AS a, COUNT(*) AS n, LAST(B.s) AS bs
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B) DEFINE A AS AVG(A.v) < 5, B AS B.v >= 5""",
    # ALL ROWS, TO NEXT ROW, reluctant loop, SUBSET, MATCH_NUMBER, CLASSIFIER, RUNNING aggregate
    "all-rows-reluctant-subset": """
        PARTITION BY k ORDER BY t, seq
        MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c, RUNNING SUM(U.v) AS sv, FINAL COUNT(DU.*) AS ndu
        ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (D{2,} U+?) SUBSET DU = (D, U)
        DEFINE D AS D.v < PREV(D.v), U AS U.v > PREV(U.v)""",
    # ALL ROWS WITH UNMATCHED ROWS, SKIP TO LAST v, optional tail, string compare, NULLs in DEFINE
    "unmatched-skip-to-last": """
        PARTITION BY k ORDER BY t, seq
        MEASURES LAST(X.s) AS ls, MAX(Y.w) AS mw, FIRST(X.v) + LAST(Y.v) AS fv, CLASSIFIER() AS c
        ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH SKIP TO LAST Y
        PATTERN (X Y+ Z?) DEFINE X AS X.s = 'a', Y AS Y.v >= X.v, Z AS Z.w > 0.5""",
    # ONE ROW, WITHIN, alternation in a bounded loop, SKIP TO FIRST v
    "within-alternation-skip-first": """
        PARTITION BY k ORDER BY t, seq
        MEASURES FIRST(A.t) AS t0, LAST(C.t) AS t1, COUNT(A.*) AS na, COUNT(B.*) AS nb, MIN(C.w) AS mw
        ONE ROW PER MATCH AFTER MATCH SKIP TO FIRST C
        PATTERN ((A | B){1,3} C) WITHIN INTERVAL '10' MINUTE
        DEFINE A AS A.v % 2 = 0, B AS B.s = 'b', C AS C.v > 6""",
    # ALL ROWS OMIT EMPTY MATCHES over a pattern that matches empty, with a lookahead (NEXT)
    "omit-empty-next": """
        PARTITION BY k ORDER BY t, seq
        MEASURES RUNNING COUNT(*) AS n, MATCH_NUMBER() AS m
        ALL ROWS PER MATCH OMIT EMPTY MATCHES
        PATTERN (UP*) DEFINE UP AS NEXT(UP.v) > UP.v""",
    # ONE ROW with empty matches shown (COUNT(*) = 0 rows), reluctant bounded loop, PREV with an offset
    "show-empty-prev": """
        PARTITION BY k ORDER BY t, seq
        MEASURES COUNT(*) AS n, MATCH_NUMBER() AS m, LAST(A.v) AS lv
        ONE ROW PER MATCH
        PATTERN (A{0,3}? B | A*) DEFINE A AS A.v > PREV(A.v, 2), B AS B.s IS NULL""",
    # PERMUTE, exclusion, NEXT, ALL ROWS, greedy {n,m}
    "permute-exclusion": """
        PARTITION BY k ORDER BY t, seq
        MEASURES CLASSIFIER() AS c, FIRST(P.w) AS fw, LAST(Q.v) AS qv
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (PERMUTE(P, Q, R) {- S{0,2} -} E)
        DEFINE P AS P.v < 4, Q AS Q.s = 'c', R AS R.w < 0.5, S AS S.v <> 9, E AS NEXT(E.v) IS NULL OR E.v >= NEXT(E.v)""",
    # aggregates beyond COUNT/SUM/AVG/MIN/MAX: arrays (with NULLs) and two-argument folds in MEASURES, COUNT_IF in DEFINE
    "beyond-core-aggregates": """
        PARTITION BY k ORDER BY t, seq
        MEASURES RUNNING ARRAY_AGG(CLASSIFIER()) AS labels, MAX_BY(A.s, A.v) AS ms, STDDEV_POP(A.w) AS sd,
            COUNT_IF(B.v > 4) AS nb, BOOL_OR(A.s = 'c') AS anyc, FINAL ARRAY_AGG(B.v) AS bv,
            CONCAT_WS('-', ARRAY_AGG(B.s)) AS bs, ELEMENT_AT(ARRAY[FIRST(A.w), LAST(A.w)], 2) AS lw
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B{1,3}) DEFINE A AS COUNT_IF(A.v > 6) < 2, B AS B.v >= PREV(B.v) OR B.v IS NULL""",
    # no PARTITION BY: one partition over everything, PREV/NEXT on the key column, anchors
    "no-partition-anchor": """
        ORDER BY t, seq
        MEASURES FIRST(A.k) AS fk, LAST(A.k) AS lk, COUNT(*) AS n, SUM(A.v) AS sv
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (^ A{2,4} | A B) DEFINE A AS A.k = PREV(A.k) OR PREV(A.k) IS NULL, B AS B.w < A.w""",
}


def random_events(
    seed: int,
    n: int = 120,
    *,
    keys: Sequence[str | None] = ("x", "y", "z", None),
    ties: bool = False,
    null_times: int = 0,
    span: timedelta = SPAN,
) -> list[dict[str, Any]]:
    """``n`` random rows (dicts in :data:`COLUMNS` order) with event times in ``[T0, T0 + span)``.

    Times are unique per partition (whole seconds, so slice edges fall between rows or on them)
    unless ``ties``, which makes about a third of the rows share a time with another row; ``seq``
    then decides their order.  ``null_times`` extra rows get a NULL ``t``.  The rows are shuffled.

    >>> rows = random_events(3, n=40, ties=True, null_times=2)
    >>> len(rows), sum(r["t"] is None for r in rows)
    (42, 2)
    >>> len({r["seq"] for r in rows})
    42
    >>> all(T0 <= r["t"] < T0 + SPAN for r in rows if r["t"] is not None)
    True
    """
    rnd = random.Random(seed)
    seconds = int(span.total_seconds())
    slots = rnd.sample(range(seconds), n)
    if ties:
        # Re-use an earlier slot for a third of the rows: equal times, told apart by seq only.
        for i in range(1, n):
            if rnd.random() < 0.35:
                slots[i] = slots[rnd.randrange(i)]
    rows = []
    for i in range(n + null_times):
        rows.append({
            "k": rnd.choice(keys),
            "t": T0 + timedelta(seconds=slots[i]) if i < n else None,
            "seq": 0,  # numbered below, after the shuffle
            "v": rnd.randint(0, 9) if rnd.random() > 0.08 else None,
            "s": rnd.choice(["a", "b", "c", None]),
            "w": round(rnd.random(), 3) if rnd.random() > 0.08 else None,
        })
    rnd.shuffle(rows)
    for number, row in enumerate(rnd.sample(range(10 * len(rows)), len(rows))):
        rows[number]["seq"] = row
    return rows


def as_tuples(rows: Iterable[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """Rows as tuples in :data:`COLUMNS` order (for ``spark.createDataFrame(..., SCHEMA)``).

    >>> as_tuples([{"k": "x", "t": T0, "seq": 1, "v": 2, "s": None, "w": 0.5}])
    [('x', datetime.datetime(2024, 1, 1, 0, 0), 1, 2, None, 0.5)]
    """
    return [tuple(row[c] for c in COLUMNS) for row in rows]


def in_range(rows: Iterable[Mapping[str, Any]], start: datetime, end: datetime) -> list[Mapping[str, Any]]:
    """The rows a backfill over ``[start, end)`` processes (NULL times are dead letters, not input).

    >>> len(in_range(random_events(2, n=30), T0, T0 + SPAN / 2)) < 30
    True
    """
    return [r for r in rows if r["t"] is not None and start <= r["t"] < end]


def render(value: Any) -> str | None:
    """One output value as comparable text: floats to 9 significant digits, timestamps to the microsecond.

    >>> render(0.1 + 0.2), render(datetime(2024, 1, 1, 0, 0, 1)), render(None), render(Decimal("1.50"))
    ('0.3', '2024-01-01 00:00:01.000000', None, '1.5')
    """
    if value is None:
        return None
    if isinstance(value, float):
        return f"{value:.9g}"
    if isinstance(value, Decimal):
        return f"{float(value):.9g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return str(value)


def canonical(rows: Iterable[Any], columns: Sequence[str]) -> Counter[tuple[str | None, ...]]:
    """Output rows (dicts or Spark ``Row``s) as a multiset of text tuples over ``columns``.

    >>> canonical([{"a": 1, "b": 2.0}, {"a": 1, "b": 2.0}], ["a", "b"])
    Counter({('1', '2'): 2})
    """
    return Counter(tuple(render(row[c]) for c in columns) for row in rows)


__all__ = ["CLAUSES", "COLUMNS", "SCHEMA", "SPAN", "T0", "as_tuples", "canonical", "in_range", "random_events", "render"]
