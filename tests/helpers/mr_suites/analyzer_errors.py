"""Peers' MATCH_RECOGNIZE validation suites: queries that must fail (with the condition) or must analyse.

* ``IOTDB``: Apache IoTDB's ``RowPatternRecognitionTest`` (iotdb-core/datanode, relational analyzer), a port
  of Trino's row-pattern analysis that keeps Trino's error conditions and messages.  Its input is
  ``table1(time, tag1, tag2, tag3, attr1, attr2, s1, s2, s3)``; IoTDB spells the navigation functions
  ``RPR_LAST`` / ``RPR_FIRST`` (its own ``LAST`` is an aggregate), written here as the standard's
  ``LAST`` / ``FIRST`` — the only change to the queries.  IoTDB's cases about that renaming
  ("function names cannot be LAST or FIRST") have no standard counterpart and are left out.
* ``FLINK``: Flink's ``MatchRecognizeValidationTest`` (flink-table-planner), over ``Ticker(symbol, price,
  tax, proctime)`` and ``MyTable(a, b, proctime)``.  Cases that test Flink's own limits (ALL ROWS PER
  MATCH, greedy last quantifier, empty matches, Python UDFs, processing-time sort, update streams) are
  kept with the standard's answer: they run here.

Each case is ``(name, query, expected)``; ``expected`` is an :class:`Error` (a regular expression
accepting the peer's wording and ours) or :data:`RUNS` (the query analyses and runs).
"""

from __future__ import annotations

from tests.helpers.mr_suites.trino_row_pattern_matching import Error

RUNS = "runs"


def setup(spark: object) -> None:
    """The peers' input tables as temporary views (a few rows each; the suites test analysis, not data)."""
    spark.sql("""CREATE OR REPLACE TEMP VIEW table1 AS SELECT * FROM VALUES
        (TIMESTAMP'2024-01-01 00:00:01', 'a', 'b', 'c', 'x', 'y', 1, 10L, 1.5),
        (TIMESTAMP'2024-01-01 00:00:02', 'a', 'b', 'c', 'x', 'y', 2, 3L, 2.5),
        (TIMESTAMP'2024-01-01 00:00:03', 'a', 'b', 'c', 'x', 'y', 3, 7L, 3.5)
        AS t(time, tag1, tag2, tag3, attr1, attr2, s1, s2, s3)""")
    spark.sql("""CREATE OR REPLACE TEMP VIEW Ticker AS SELECT * FROM VALUES
        ('a', 10, 1, TIMESTAMP'2024-01-01 00:00:01'), ('b', 12, 2, TIMESTAMP'2024-01-01 00:00:02')
        AS t(symbol, price, tax, proctime)""")
    spark.sql("""CREATE OR REPLACE TEMP VIEW MyTable AS SELECT * FROM VALUES
        (1L, 1, TIMESTAMP'2024-01-01 00:00:01') AS t(a, b, proctime)""")

_T = "SELECT * FROM table1 MATCH_RECOGNIZE ( ORDER BY time MEASURES {measures} {rows} PATTERN ({pattern}) " \
     "{subset} DEFINE {define}) AS m"


def _t(measures: str = "A.s1 AS col1", pattern: str = "A B+", define: str = "B AS B.s2 > 5", rows: str = "",
       subset: str = "") -> str:
    return _T.format(measures=measures, pattern=pattern, define=define, rows=rows, subset=subset)


IOTDB: list[tuple[str, str, object]] = [
    ("testInputColumns[ok]", _t(), RUNS),
    ("testInputColumns[label column]", _t(define="B AS B.s4 > 5"),
     Error(r"(?i)column s4 prefixed with label B cannot be resolved|s4.*(unknown|not found|cannot be resolved)")),
    ("testInputColumns[partition column]", "SELECT * FROM table1 MATCH_RECOGNIZE ( PARTITION BY s4 ORDER BY time "
     "MEASURES A.s1 AS col1 PATTERN (A B+) DEFINE B AS B.s2 > 5 ) AS m",
     Error(r"(?i)column s4 is not present in the input relation|s4.*(unknown|not found|cannot be resolved)")),
    ("testSubsetClause[duplicate of primary]", _t(subset="SUBSET A = (B)"),
     Error(r"(?i)union pattern variable.*A.*(duplicate|primary)|A.*(already|both).*(primary|pattern variable)")),
    ("testSubsetClause[declared twice]", _t(subset="SUBSET U = (A), U = (B)"),
     Error(r"(?i)U.*(declared|defined) twice|duplicate.*U")),
    ("testSubsetClause[not primary]", _t(subset="SUBSET U = (A, C)"),
     Error(r"(?i)C.*not a primary pattern variable|C.*(not|never).*(in|appears in) (the )?pattern")),
    ("testDefineClause[not primary]", _t(define="B AS B.s2 > 5, C AS true"),
     Error(r"(?i)C.*not a primary pattern variable|C.*(not|never).*(in|appears in) (the )?pattern")),
    ("testDefineClause[defined twice]", _t(define="B AS B.s2 > 5, B AS true"),
     Error(r"(?i)B.*defined twice|duplicate.*B|B.*more than once")),
    ("testDefineClause[not boolean]", _t(define="B AS B.s2"),
     Error(r"(?i)must be boolean|boolean")),
    ("testDefineClause[FINAL]", _t(define="B AS FINAL LAST(B.s2) > 5"),
     Error(r"(?i)FINAL.*(not (supported|allowed)).*DEFINE|DEFINE.*FINAL")),
    ("testDefineClause[RUNNING]", _t(define="B AS RUNNING LAST(B.s2) > 5"), RUNS),
]
_EXCLUSION = _t(pattern="{- A -} B+", rows="{rows}")
IOTDB += [(f"testPatternExclusions[{r or 'default'}]", _EXCLUSION.replace("{rows}", r), RUNS)
          for r in ["", "ONE ROW PER MATCH", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH SHOW EMPTY MATCHES",
                    "ALL ROWS PER MATCH OMIT EMPTY MATCHES"]]
IOTDB += [
    ("testPatternExclusions[WITH UNMATCHED ROWS]", _EXCLUSION.replace("{rows}", "ALL ROWS PER MATCH WITH UNMATCHED ROWS"),
     Error(r"(?i)exclusion.*not allowed.*WITH UNMATCHED ROWS|exclusion.*UNMATCHED")),
    ("testPatternFunctions[LAST]", _t(measures="LAST(A.s1) AS col1"), RUNS),
    ("testPatternFunctions[unknown]", _t(measures="RPR_LAT(A.s1) AS col1"),
     Error(r"(?i)unknown.*RPR_LAT|RPR_LAT.*(unknown|not supported|undefined)")),
    ("testPatternFunctions[delimited]", _t(measures='"RPP_LAST"(s2) AS col1'),
     Error(r"(?i)RPP_LAST")),
    ("testPatternFunctions[qualified]", _t(measures="A.RPP_LAST(s2) AS col1"),
     Error(r"(?i)RPP_LAST|qualified|expected")),
]
IOTDB += [(f"testPatternQuantifiers[{q}]", _t(pattern=f"A B{q}"), RUNS)
          for q in ["*", "*?", "+", "+?", "?", "??", "{,}", "{5}", "{5,}", "{0,}"]]
IOTDB += [(f"testPatternQuantifiers[{q}]", _t(pattern=f"A B{q}"), Error(e)) for q, e in [
    ("{0}", r"(?i)upper bound must be greater than (or equal to 1|0)"),
    ("{,0}", r"(?i)upper bound must be greater than (or equal to 1|0)"),
    ("{0,0}", r"(?i)upper bound must be greater than (or equal to 1|0)"),
    ("{3000000000}", r"(?i)must not exceed 2147483647|too large|exceed"),
    ("{5,1}", r"(?i)lower bound must not exceed upper bound|upper bound \d+ is below the lower bound"),
]]
IOTDB += [(f"testAfterMatchSkipClause[{s or 'default'}]", _t(rows=s), RUNS)
          for s in ["", "AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW", "AFTER MATCH SKIP TO FIRST B",
                    "AFTER MATCH SKIP TO LAST B", "AFTER MATCH SKIP TO B"]]
IOTDB += [
    ("testAfterMatchSkipClause[TO C]", _t(rows="AFTER MATCH SKIP TO C"),
     Error(r"(?i)C is not a primary or union pattern variable|C.*(not|unknown).*(variable|pattern)")),
    ("testRunningAndFinalSemantics[FINAL LAST]", _t(measures="FINAL LAST(A.s1) AS col1"), RUNS),
    ("testRunningAndFinalSemantics[FINAL FIRST]", _t(measures="FINAL FIRST(A.s1) AS col1"), RUNS),
]
IOTDB += [(f"testRunningAndFinalSemantics[FINAL {f}]", _t(measures=f"FINAL {f}(A.s1) AS col1"),
           Error(rf"(?i)FINAL.*{f}|{f}.*FINAL|FINAL.*(only|must).*(FIRST|LAST|aggregate)"))
          for f in ["PREV", "NEXT", "CLASSIFIER", "MATCH_NUMBER"]]
IOTDB += [
    ("testPatternNavigationFunctions[ok]", _t(measures="PREV(LAST(A.s1, 2), 3) AS col1"), RUNS),
    ("testPatternNavigationFunctions[PREV()]", _t(measures="PREV() AS col1"),
     Error(r"(?i)PREV.*(1 or 2 arguments|argument)")),
    ("testPatternNavigationFunctions[string offset]", _t(measures="PREV(A.s1, 'str') AS col1"),
     Error(r"(?i)PREV.*(number|integer|offset)|offset.*(number|integer)")),
    ("testPatternNavigationFunctions[negative offset]", _t(measures="PREV(A.s1, -5) AS col1"),
     Error(r"(?i)non-negative|negative|offset")),
    ("testPatternNavigationFunctions[huge offset]", _t(measures="PREV(A.s1, 3000000000) AS col1"),
     Error(r"(?i)must not exceed 2147483647|too large|exceed")),
    ("testPatternNavigationFunctions[LAST(NEXT)]", _t(measures="LAST(NEXT(A.s1, 2)) AS col1"),
     Error(r"(?i)cannot nest.*NEXT.*LAST|NEXT.*inside.*LAST|nest")),
    ("testPatternNavigationFunctions[PREV(NEXT)]", _t(measures="PREV(NEXT(A.s1, 2)) AS col1"),
     Error(r"(?i)cannot nest.*NEXT.*PREV|NEXT.*inside.*PREV|nest")),
]
_CLS = "SUBSET U = (A, B)"
IOTDB += [(f"testClassifierFunction[{c}]", _t(measures=f"{c} AS col1", subset=_CLS), RUNS)
          for c in ["CLASSIFIER()", "CLASSIFIER(A)", "CLASSIFIER(U)"]]
IOTDB += [
    ("testClassifierFunction[two arguments]", _t(measures="CLASSIFIER(A, B) AS col1", subset=_CLS),
     Error(r"(?i)CLASSIFIER.*(no arguments or 1 argument|argument)")),
    ("testClassifierFunction[column]", _t(measures="CLASSIFIER(A.s1) AS col1", subset=_CLS),
     Error(r"(?i)CLASSIFIER.*(argument|variable|subset)")),
    ("testClassifierFunction[unknown]", _t(measures="CLASSIFIER(C) AS col1", subset=_CLS),
     Error(r"(?i)C is not a primary pattern variable or subset name|unknown pattern variable C")),
    ("testMatchNumberFunction[ok]", _t(measures="MATCH_NUMBER() AS col1", subset=_CLS), RUNS),
    ("testMatchNumberFunction[argument]", _t(measures="MATCH_NUMBER(A) AS col1", subset=_CLS),
     Error(r"(?i)MATCH_NUMBER.*(takes no arguments|argument)")),
]

_TICKER = "SELECT * FROM Ticker MATCH_RECOGNIZE ( {order} MEASURES {measures} {rows} PATTERN ({pattern}) " \
          "DEFINE A AS A.symbol = 'a' ) AS T"


def _k(measures: str = "A.symbol AS aSymbol", pattern: str = "A B", order: str = "ORDER BY proctime",
       rows: str = "") -> str:
    return _TICKER.format(order=order, measures=measures, pattern=pattern, rows=rows)


FLINK: list[tuple[str, str, object]] = [
    # Flink's streaming planner needs an ascending time attribute first; a batch sort does not
    ("testSortProcessingTimeDesc", _k(order="ORDER BY proctime DESC"), RUNS),
    ("testSortProcessingTimeSecondaryField", _k(order="ORDER BY price, proctime"), RUNS),
    # the standard allows no ORDER BY (Trino's testKillThread has none); the input order is then arbitrary
    ("testSortNoOrder", _k(order=""), RUNS),
    ("testUpdatesInUpstreamOperatorNotSupported", "SELECT * FROM (SELECT DISTINCT * FROM Ticker) MATCH_RECOGNIZE ( "
     "ORDER BY proctime MEASURES A.symbol AS aSymbol ONE ROW PER MATCH PATTERN (A B) DEFINE A AS A.symbol = 'a' ) "
     "AS T", RUNS),
    ("testAggregatesOnMultiplePatternVariablesNotSupported", _k(measures="SUM(A.price + B.tax) AS taxedPrice"),
     Error(r"(?i)(aggregat|SUM).*(single|one|same|more than one|several|multiple).*(pattern )?variable")),
    ("testValidatingAmbiguousColumns", "SELECT * FROM Ticker MATCH_RECOGNIZE ( PARTITION BY symbol, price ORDER BY "
     "proctime MEASURES A.symbol AS symbol, A.price AS price PATTERN (A) DEFINE A AS A.symbol = 'a' ) AS T",
     Error(r"(?i)ambiguously defined|output column symbol appears twice")),
    ("testAllRowsPerMatch", _k(rows="ALL ROWS PER MATCH"), RUNS),
    ("testGreedyQuantifierAtTheEndIsNotSupported", _k(pattern="A B+"), RUNS),
    ("testPatternsProducingEmptyMatchesAreNotSupported", _k(pattern="A*"), RUNS),
    ("testDistinctAggregationsNotSupported", _k(measures="COUNT(DISTINCT A.price) AS price"),
     Error(r"(?i)DISTINCT")),
]

CASES: list[tuple[str, str, object]] = (
    [("iotdb." + n, q, e) for n, q, e in IOTDB] + [("flink." + n, q, e) for n, q, e in FLINK])
