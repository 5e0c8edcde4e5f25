"""Every query of Trino's ``TestRowPatternMatching`` (trinodb/trino,
core/trino-main/src/test/java/io/trino/sql/query/TestRowPatternMatching.java) with Trino's published result.

The query text is Trino's, verbatim (Java string concatenation and ``format(query, ...)`` resolved, the
whitespace collapsed).  Spark needed no change to the table literals: ``(VALUES ...) t(a, b)`` is accepted
as Trino writes it.  Each case is ``(name, query, expected)``; ``expected`` is the list of rows (compared as
a multiset, as Trino's ``matches`` does) or an :class:`Error` holding the condition the query must fail on.
Where our answer deliberately differs from Trino's, ``CASES`` holds ours and ``DIFFERENCES`` Trino's, with why.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Error:
    """The query must fail; ``pattern`` is a regular expression its message must contain.

    The patterns accept the peer's own wording and ours (the condition must be the same, not the text).
    """

    pattern: str


N = None

FOUR = "(VALUES (1, 90), (2, 80), (3, 70), (4, 70)) t(id, value)"
EIGHT = "(VALUES (1, 90), (2, 80), (3, 70), (4, 80), (5, 90), (6, 50), (7, 40), (8, 60)) t(id, value)"
STANDARD = ("SELECT m.id AS row_id, m.match, m.val, m.label FROM {input} MATCH_RECOGNIZE ( ORDER BY id "
            "MEASURES match_number() AS match, RUNNING LAST(value) AS val, classifier() AS label "
            "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW {pattern} DEFINE {define} ) AS m")
EMPTY_EACH_ROW = [(1, 1, N, N), (2, 2, N, N), (3, 3, N, N), (4, 4, N, N)]

CASES: list[tuple[str, str, list[tuple] | Error]] = [
    ("testSimpleQuery", "SELECT m.id, m.match, m.val, m.label FROM " + EIGHT + " MATCH_RECOGNIZE ( ORDER BY id "
     "MEASURES MATCH_NUMBER() AS match, RUNNING LAST(value) AS val, CLASSIFIER() AS label "
     "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+ C+) "
     "DEFINE /* A defaults to True, matches any row */ B AS B.value < PREV (B.value), C AS C.value > PREV (C.value) ) AS m",
     [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C"), (5, 1, 90, "C"),
      (6, 2, 50, "A"), (7, 2, 40, "B"), (8, 2, 60, "C")]),
]

_ROW_PATTERN = [
    ("() | A", "A AS true", EMPTY_EACH_ROW),
    ("^A", "A AS true", [(1, 1, 90, "A")]),
    ("A^", "A AS true", []),
    ("^A^", "A AS true", []),
    ("A$", "A AS true", [(4, 1, 70, "A")]),
    ("$A", "A AS true", []),
    ("$A$", "A AS true", []),
    ("A B C", "B AS B.value < PREV (B.value), C AS C.value = PREV (C.value)",
     [(2, 1, 80, "A"), (3, 1, 70, "B"), (4, 1, 70, "C")]),
    ("B | C | A", "B AS B.value < PREV (B.value), C AS C.value <= PREV (C.value)",
     [(1, 1, 90, "A"), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, 70, "C")]),
    ("PERMUTE(B, C)", "B AS B.value < PREV (B.value), C AS C.value < PREV (C.value)",
     [(2, 1, 80, "B"), (3, 1, 70, "C")]),
    ("((A) (B (C)))", "B AS B.value < PREV (B.value), C AS C.value = PREV (C.value)",
     [(2, 1, 80, "A"), (3, 1, 70, "B"), (4, 1, 70, "C")]),
]
CASES += [(f"testRowPattern[{p}]", STANDARD.format(input=FOUR, pattern=f"PATTERN ({p})", define=d), e)
          for p, d, e in _ROW_PATTERN]

_B_ALL = [(2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 70, "B")]
_B_EACH = [(2, 1, 80, "B"), (3, 2, 70, "B"), (4, 3, 70, "B")]
_B_TWO = [(2, 1, 80, "B"), (3, 1, 70, "B")]
_STAR = [(1, 1, N, N), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 2, 70, "B")]
_OPT = [(1, 1, N, N), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, 70, "B")]
_QUANTIFIERS = [
    ("B*", _STAR), ("B*?", EMPTY_EACH_ROW), ("B+", _B_ALL), ("B+?", _B_EACH), ("B?", _OPT), ("B??", EMPTY_EACH_ROW),
    ("B{,}", _STAR), ("B{,}?", EMPTY_EACH_ROW), ("B{1,}", _B_ALL), ("B{1,}?", _B_EACH), ("B{2,}", _B_ALL),
    ("B{2,}?", _B_TWO), ("B{5,}", []), ("B{5,}?", []), ("B{,1}", _OPT), ("B{,1}?", EMPTY_EACH_ROW),
    ("B{,2}", [(1, 1, N, N), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 3, 70, "B")]), ("B{,2}?", EMPTY_EACH_ROW),
    ("B{,5}", _STAR), ("B{,5}?", EMPTY_EACH_ROW), ("B{1,1}", _B_EACH), ("B{1,1}?", _B_EACH),
    ("B{1,5}", _B_ALL), ("B{1,5}?", _B_EACH), ("B{5,7}", []), ("B{5,7}?", []), ("B{1}", _B_EACH),
    ("B{1}?", _B_EACH), ("B{2}", _B_TWO), ("B{2}?", _B_TWO), ("B{5}", []), ("B{5}?", []),
]
CASES += [(f"testPatternQuantifiers[{p}]",
           STANDARD.format(input=FOUR, pattern=f"PATTERN ({p})", define="B AS B.value <= PREV (B.value)"), e)
          for p, e in _QUANTIFIERS]

_ALL8 = [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C"), (5, 1, 90, "C"),
         (6, 2, 50, "A"), (7, 2, 40, "B"), (8, 2, 60, "C")]
_A_ONLY = [(1, 1, 90, "A"), (6, 2, 50, "A")]
_EXCLUSIONS = [
    ("A B+ C+", _ALL8),
    ("A {- B+ -} C+", [(1, 1, 90, "A"), (4, 1, 80, "C"), (5, 1, 90, "C"), (6, 2, 50, "A"), (8, 2, 60, "C")]),
    ("{- A -} {- B+ -} C+", [(4, 1, 80, "C"), (5, 1, 90, "C"), (8, 2, 60, "C")]),
    ("A {- {- B+ -} C+ -}", _A_ONLY),
    ("{- A B+ C+ -}", []),
    ("A B+ {- ()* -} C+", _ALL8),
    (" A {- B -}+ {- C -}+", _A_ONLY),
    (" A {- B -}* {- C -}*", _A_ONLY),
    (" A {- B -}{1,2} {- C -}{1,2}", _A_ONLY),
    (" A {- C -}{2,3} {- B -}{2,3}", [(3, 1, 70, "A")]),
]
CASES += [(f"testExclusionSyntax[{p.strip()}]",
           STANDARD.format(input=EIGHT, pattern=f"PATTERN ({p})",
                           define="B AS B.value < PREV (B.value), C AS C.value > PREV (C.value)"), e)
          for p, e in _EXCLUSIONS]

_BACKREF = ("SELECT value, classy FROM (VALUES 1, 1) t(value) MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS classy "
            "ALL ROWS PER MATCH PATTERN ((A | B)* X) DEFINE X AS value = {label}.value )")
CASES += [
    ("testBackReference[A]", _BACKREF.format(label="A"), [(1, "A"), (1, "X")]),
    ("testBackReference[B]", _BACKREF.format(label="B"), [(1, "B"), (1, "X")]),
    ("testBackReference[A and B]", "SELECT value, classy, defining_condition FROM (VALUES 1, 2, 3, 4, 5, 6) t(value) "
     "MATCH_RECOGNIZE ( ORDER BY value MEASURES CLASSIFIER() AS classy, "
     "PREV(LAST(A.value), 3) + FIRST(A.value) + PREV(LAST(B.value), 2) AS defining_condition "
     "ALL ROWS PER MATCH PATTERN ((A | B)* X) "
     "DEFINE X AS value = PREV(LAST(A.value), 3) + FIRST(A.value) + PREV(LAST(B.value), 2) )",
     [(1, "B", N), (2, "A", N), (3, "A", N), (4, "A", N), (5, "B", 6), (6, "X", 6)]),
    ("testBackReference[classifiers]", "SELECT value, classy, defining_condition FROM (VALUES 1, 2, 3, 4, 5) t(value) "
     "MATCH_RECOGNIZE ( ORDER BY value MEASURES CLASSIFIER() AS classy, "
     "PREV(CLASSIFIER(U), 1) = 'A' AND LAST(CLASSIFIER(), 3) = 'B' AND FIRST(CLASSIFIER(U)) = 'B' AS defining_condition "
     "ALL ROWS PER MATCH PATTERN ((A | B)* X $) SUBSET U = (A, B) "
     "DEFINE X AS PREV(CLASSIFIER(U), 1) = 'A' AND LAST(CLASSIFIER(), 3) = 'B' AND FIRST(CLASSIFIER(U)) = 'B' )",
     [(1, "B", N), (2, "B", False), (3, "A", False), (4, "A", True), (5, "X", True)]),
]

_EMPTY_CYCLES = [
    ("()* | B", EMPTY_EACH_ROW), ("()+ | B", EMPTY_EACH_ROW), ("(){5,} | B", EMPTY_EACH_ROW),
    ("B | ()*", [(1, 1, N, N), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, N, N)]),
    ("(B ()*)*", [(1, 1, N, N), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 3, N, N)]),
    ("(B ()*)*?", EMPTY_EACH_ROW),
    ("^* | B", EMPTY_EACH_ROW),
    ("^+ | B", [(1, 1, N, N), (2, 2, 80, "B"), (3, 3, 70, "B")]),
    ("^* A B", [(1, 1, 90, "A"), (2, 1, 80, "B")]),
    ("$* | B", EMPTY_EACH_ROW),
    ("$+ | B", [(2, 1, 80, "B"), (3, 2, 70, "B")]),
    ("B A $+", [(3, 1, 70, "B"), (4, 1, 70, "A")]),
]
CASES += [(f"testEmptyCycle[{p}]",
           STANDARD.format(input=FOUR, pattern=f"PATTERN ({p})", define="B AS B.value < PREV (B.value)"), e)
          for p, e in _EMPTY_CYCLES]

_MODES = ("SELECT m.match, m.val, m.label FROM " + FOUR + " MATCH_RECOGNIZE ( ORDER BY id "
          "MEASURES match_number() AS match, RUNNING LAST(value) AS val, classifier() AS label "
          "{rows} AFTER MATCH SKIP PAST LAST ROW PATTERN ({pattern}) DEFINE B AS B.value < PREV (B.value) ) AS m")
_OUTPUT_MODES = [
    ("ONE ROW PER MATCH", "B*", [(1, N, N), (2, 70, "B"), (3, N, N)]),
    ("", "B*", [(1, N, N), (2, 70, "B"), (3, N, N)]),
    ("ONE ROW PER MATCH", "B+", [(1, 70, "B")]),
    ("ALL ROWS PER MATCH", "B*", [(1, N, N), (2, 80, "B"), (2, 70, "B"), (3, N, N)]),
    ("ALL ROWS PER MATCH", "B+", [(1, 80, "B"), (1, 70, "B")]),
    ("ALL ROWS PER MATCH SHOW EMPTY MATCHES", "B*", [(1, N, N), (2, 80, "B"), (2, 70, "B"), (3, N, N)]),
    ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "B*", [(2, 80, "B"), (2, 70, "B")]),
    ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "B+", [(1, 80, "B"), (1, 70, "B")]),
    ("ALL ROWS PER MATCH WITH UNMATCHED ROWS", "B+", [(N, N, N), (1, 80, "B"), (1, 70, "B"), (N, N, N)]),
]
CASES += [(f"testOutputModes[{r or 'default'}, {p}]", _MODES.format(rows=r, pattern=p), e)
          for r, p, e in _OUTPUT_MODES]

_SKIP = ("SELECT m.id, m.match, m.val, m.label FROM (VALUES (1, 90), (2, 80), (3, 70), (4, 80), (5, 70), (6, 80)) "
         "t(id, value) MATCH_RECOGNIZE ( ORDER BY id MEASURES match_number() AS match, RUNNING LAST(value) AS val, "
         "classifier() AS label ALL ROWS PER MATCH {skip} PATTERN (A B+ C+ D?) SUBSET U = (C, D) "
         "DEFINE B AS B.value < PREV (B.value), C AS C.value > PREV (C.value), D AS false ) AS m")
_FIRST = [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C")]
_SECOND_AT_4 = [*_FIRST, (4, 2, 80, "A"), (5, 2, 70, "B"), (6, 2, 80, "C")]
_AFTER_MATCH_SKIP = [
    ("AFTER MATCH SKIP PAST LAST ROW", _FIRST),
    ("AFTER MATCH SKIP TO NEXT ROW", [*_FIRST, (2, 2, 80, "A"), (3, 2, 70, "B"), (4, 2, 80, "C"),
                                      (4, 3, 80, "A"), (5, 3, 70, "B"), (6, 3, 80, "C")]),
    ("AFTER MATCH SKIP TO FIRST C", _SECOND_AT_4),
    ("AFTER MATCH SKIP TO LAST B", _SECOND_AT_4),
    ("AFTER MATCH SKIP TO B", _SECOND_AT_4),
    ("AFTER MATCH SKIP TO U", _SECOND_AT_4),
    ("AFTER MATCH SKIP TO A", Error("cannot skip to (the )?first row of (the )?match")),
    ("AFTER MATCH SKIP TO D", Error("(pattern variable|D) is not present in (the )?match")),
]
CASES += [(f"testAfterMatchSkip[{s}]", _SKIP.format(skip=s), e) for s, e in _AFTER_MATCH_SKIP]

CASES += [
    ("testEmptyMatches", "SELECT m.id, m.match, m.value, m.label FROM (VALUES (1, 100), (2, 100), (3, 90), (4, 80), "
     "(5, 70), (6, 100)) t(id, value) MATCH_RECOGNIZE ( ORDER BY id MEASURES match_number() AS match, "
     "classifier() AS label ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH SKIP TO NEXT ROW PATTERN (A B{2}) "
     "DEFINE B AS B.value < PREV (B.value) ) AS m",
     [(1, N, 100, N), (2, 1, 100, "A"), (3, 1, 90, "B"), (4, 1, 80, "B"), (3, 2, 90, "A"), (4, 2, 80, "B"),
      (5, 2, 70, "B"), (6, N, 100, N)]),
    ("testUnionVariable", "SELECT m.id, m.match, m.val, m.lower_or_higher, m.label FROM (VALUES (1, 90), (2, 80), "
     "(3, 70), (4, 80)) t(id, value) MATCH_RECOGNIZE ( ORDER BY id MEASURES match_number() AS match, "
     "RUNNING LAST(value) AS val, classifier(U) AS lower_or_higher, classifier(W) AS label ALL ROWS PER MATCH "
     "PATTERN ((L | H) A) SUBSET U = (L, H), W = (A, L, H) "
     "DEFINE A AS A.value = 80, L AS L.value < 80, H AS H.value > 80 ) AS m",
     [(1, 1, 90, "H", "H"), (2, 1, 80, "H", "A"), (3, 2, 70, "L", "L"), (4, 2, 80, "L", "A")]),
]

_NAV = ("SELECT m.id, m.measure FROM (VALUES (1, 10), (2, 20), (3, 30)) t(id, value) MATCH_RECOGNIZE ( ORDER BY id "
        "MEASURES {measure} AS measure ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true ) AS m")
_NAVIGATION = [
    ("value", [10, 20, 30]), ("LAST(value)", [10, 20, 30]), ("RUNNING LAST(value)", [10, 20, 30]),
    ("FINAL LAST(value)", [30, 30, 30]), ("FIRST(value)", [10, 10, 10]), ("RUNNING FIRST(value)", [10, 10, 10]),
    ("FINAL FIRST(value)", [10, 10, 10]), ("FINAL LAST(value, 2)", [10, 10, 10]), ("FIRST(value, 2)", [30, 30, 30]),
    ("LAST(value, 10)", [N, N, N]), ("FIRST(value, 10)", [N, N, N]), ("PREV(value)", [N, 10, 20]),
    ("NEXT(value)", [20, 30, N]), ("NEXT(FIRST(value), 2)", [30, 30, 30]), ("NEXT(FIRST(value), 10)", [N, N, N]),
    ("PREV(FIRST(value), 10)", [N, N, N]), ("PREV(FIRST(value, 10), 2)", [N, N, N]),
    ("PREV(LAST(value, 10), 2)", [N, N, N]),
]
CASES += [(f"testNavigationFunctions[{m}]", _NAV.format(measure=m), [(i + 1, v) for i, v in enumerate(e)])
          for m, e in _NAVIGATION]
_OUTSIDE = ("SELECT m.measure FROM (VALUES (1, 10), (2, 20), (3, 30), (4, 30), (5, 40)) t(id, value) "
            "MATCH_RECOGNIZE ( ORDER BY id MEASURES {measure} AS measure ONE ROW PER MATCH PATTERN (A B) "
            "DEFINE B AS B.value = PREV(B.value) ) AS m")
CASES += [(f"testNavigationFunctions[{m}]", _OUTSIDE.format(measure=m), [(e,)])
          for m, e in [("PREV(B.value, 4)", N), ("PREV(B.value, 3)", 10), ("PREV(B.value, 2)", 20),
                       ("NEXT(B.value, 1)", 40), ("NEXT(B.value, 2)", N)]]

CASES += [
    ("testClassifierFunctionPastCurrentRow[MEASURES]", "SELECT m.id, m.value, m.label, m.next_label FROM (VALUES "
     "(1, 90), (2, 80), (3, 70), (4, 80)) t(id, value) MATCH_RECOGNIZE ( ORDER BY id MEASURES CLASSIFIER() AS label, "
     "NEXT(CLASSIFIER()) AS next_label ALL ROWS PER MATCH PATTERN (A B+ C+) "
     "DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value) ) AS m",
     [(1, 90, "A", "B"), (2, 80, "B", "B"), (3, 70, "B", "C"), (4, 80, "C", N)]),
    ("testClassifierFunctionPastCurrentRow[DEFINE]", "SELECT m.id, m.val FROM (VALUES (1, 90), (2, 80), (3, 70), "
     "(4, 80)) t(id, value) MATCH_RECOGNIZE ( ORDER BY id MEASURES value AS val ALL ROWS PER MATCH PATTERN (A+) "
     "DEFINE A AS NEXT(CLASSIFIER()) = 'A' ) AS m", []),
    ("testCaseSensitiveLabels", "SELECT m.id, m.label FROM (VALUES (1, 90), (2, 80), (3, 70), (4, 80)) t(id, value) "
     "MATCH_RECOGNIZE ( ORDER BY id MEASURES CLASSIFIER() AS label ALL ROWS PER MATCH PATTERN (a \"b\"+ C+) "
     "DEFINE \"b\" AS \"b\".value < PREV(\"b\".value), C AS C.value > PREV(C.value) ) AS m",
     [(1, "A"), (2, "b"), (3, "b"), (4, "C")]),
    ("testScalarFunctions", "SELECT m.id, m.label FROM (VALUES (1, 90), (2, 80), (3, 60)) t(id, value) "
     "MATCH_RECOGNIZE ( ORDER BY id MEASURES CAST(lower(LAST(CLASSIFIER())) || '_label' AS varchar(7)) AS label "
     "ALL ROWS PER MATCH PATTERN (A B+) DEFINE B AS B.value + 10 < abs(PREV (B.value)) ) AS m",
     [(2, "a_label"), (3, "b_label")]),
    ("testRunningAndFinal", "SELECT id, label, final_label, running_value,final_value, A_running_value, "
     "A_final_value, B_running_value, B_final_value, C_running_value, C_final_value FROM (VALUES (1, 90), (2, 80), "
     "(3, 70), (4, 100), (5, 200)) t(id, value) MATCH_RECOGNIZE ( ORDER BY id MEASURES CLASSIFIER() AS label, "
     "FINAL LAST(CLASSIFIER()) AS final_label, RUNNING LAST(value) AS running_value, FINAL LAST(value) AS final_value,"
     " RUNNING LAST(A.value) AS A_running_value, FINAL LAST(A.value) AS A_final_value, RUNNING LAST(B.value) AS "
     "B_running_value, FINAL LAST(B.value) AS B_final_value, RUNNING LAST(C.value) AS C_running_value, "
     "FINAL LAST(C.value) AS C_final_value ALL ROWS PER MATCH PATTERN (A B+ C+) "
     "DEFINE B AS B.value < PREV (B.value), C AS C.value > PREV (C.value) ) ",
     [(1, "A", "C", 90, 200, 90, 90, N, 70, N, 200), (2, "B", "C", 80, 200, 90, 90, 80, 70, N, 200),
      (3, "B", "C", 70, 200, 90, 90, 70, 70, N, 200), (4, "C", "C", 100, 200, 90, 90, 70, 70, 100, 200),
      (5, "C", "C", 200, 200, 90, 90, 70, 70, 200, 200)]),
    ("testPartitioningAndOrdering[partitions]", "SELECT m.part as partition, m.id AS row_id, m.match, m.val, m.label "
     "FROM (VALUES (1, 'p1', 90), (2, 'p1', 80), (6, 'p1', 80), (2, 'p2', 20), (2, 'p3', 60), (1, 'p3', 50), "
     "(3, 'p1', 70), (4, 'p1', 80), (5, 'p1', 90), (1, 'p2', 20), (3, 'p3', 70), (3, 'p2', 10) ) t(id, part, value) "
     "MATCH_RECOGNIZE ( PARTITION BY part ORDER BY id MEASURES match_number() AS match, "
     "PREV(RUNNING LAST(value)) AS val, classifier() AS label ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW "
     "PATTERN (B+) DEFINE B AS B.value < PREV (B.value) ) AS m",
     [("p1", 2, 1, 90, "B"), ("p1", 3, 1, 80, "B"), ("p1", 6, 2, 90, "B"), ("p2", 3, 1, 20, "B")]),
    ("testPartitioningAndOrdering[empty input]", "SELECT m.part as partition, m.id AS row_id, m.match, m.val, m.label "
     "FROM (SELECT * FROM (VALUES (1, 'p1', 90)) WHERE false) t(id, part, value) MATCH_RECOGNIZE ( PARTITION BY part "
     "ORDER BY id MEASURES match_number() AS match, PREV(RUNNING LAST(value)) AS val, classifier() AS label "
     "ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (B+) DEFINE B AS B.value < PREV (B.value) ) AS m", []),
    ("testPartitioningAndOrdering[unordered]", "SELECT m.id AS row_id, m.match, m.val, m.label FROM (VALUES (5, 10), "
     "(2, 90), (1, 80), (4, 20), (3, 30) )t(id, value) MATCH_RECOGNIZE ( ORDER BY id MEASURES match_number() AS "
     "match, RUNNING LAST(value) AS val, classifier() AS label ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW "
     "PATTERN (B+) DEFINE B AS B.value < PREV (B.value) ) AS m",
     [(3, 1, 30, "B"), (4, 1, 20, "B"), (5, 1, 10, "B")]),
    ("testPartitioningAndOrdering[no measures]", "SELECT m.id AS row_id, m.part as partition FROM (VALUES "
     "(5, 'p2', 10), (2, 'p1', 90), (1, 'p1', 80), (4, 'p2', 20), (3, 'p1', 30) )t(id, part, value) "
     "MATCH_RECOGNIZE ( PARTITION BY part ORDER BY id ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW "
     "PATTERN (B+) DEFINE B AS B.value < PREV (B.value) ) AS m", [(3, "p1"), (5, "p2")]),
]

_LAYOUT = ("SELECT * FROM (VALUES ('ordering', 'partitioning', 90) ) t(id, part, value) MATCH_RECOGNIZE ( "
           "PARTITION BY part ORDER BY id {order}MEASURES CLASSIFIER() AS classy {rows} PATTERN (A) "
           "DEFINE A AS true ) AS m")
CASES += [
    ("testOutputLayout[ALL ROWS]", _LAYOUT.format(order="", rows="ALL ROWS PER MATCH"),
     [("partitioning", "ordering", "A", 90)]),
    ("testOutputLayout[ONE ROW]", _LAYOUT.format(order="", rows="ONE ROW PER MATCH"), [("partitioning", "A")]),
    # Trino lists the column named twice in ORDER BY twice; see DIFFERENCES
    ("testOutputLayout[duplicate ORDER BY]", _LAYOUT.format(order="ASC, id DESC ", rows="ALL ROWS PER MATCH"),
     [("partitioning", "ordering", "A", 90)]),
    ("testMultipleMatchRecognize", "SELECT first.classy, second.classy, third.classy FROM (VALUES (1), (2), (3)) "
     "t(id) MATCH_RECOGNIZE ( ORDER BY id MEASURES CLASSIFIER() AS classy ALL ROWS PER MATCH PATTERN (A) "
     "DEFINE A AS true ) AS first, (VALUES (10), (20) ) t(id) MATCH_RECOGNIZE ( ORDER BY id MEASURES CLASSIFIER() "
     "AS classy ALL ROWS PER MATCH PATTERN (B) DEFINE B AS true ) AS second, (VALUES 100) t(id) MATCH_RECOGNIZE ( "
     "ORDER BY id MEASURES CLASSIFIER() AS classy ALL ROWS PER MATCH PATTERN (C) DEFINE C AS true ) AS third ",
     [("A", "B", "C")] * 6),
]

_SUB = ("SELECT m.val FROM (VALUES (1, 100), (2, 200), (3, 300), (4, 400) ) t(id, value) MATCH_RECOGNIZE ( "
        "ORDER BY id MEASURES {measure} AS val ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A+) "
        "DEFINE A AS {define} ) AS m")
CASES += [(f"testSubqueries[{m}]", _SUB.format(measure=m, define=d), [(v,) for v in e]) for m, d, e in [
    ("(SELECT 'x')", "(SELECT true)", ["x"] * 4),
    ("FINAL LAST(A.value + (SELECT 1000))", "FIRST(A.value < 0 OR (SELECT true))", [1400] * 4),
    ("LAST(A.id < 0 OR 1 IN (SELECT 1))", "FIRST(A.id > 0 AND 1 IN (SELECT 1))", [True] * 4),
    ("FIRST(id % 2 IN (SELECT 0))", "FIRST(value * 0 IN (SELECT 0))", [False, True, False, True]),
    ("LAST(A.value < 0 OR EXISTS(SELECT 1))", "FIRST(A.value < 0 OR EXISTS(SELECT 1))", [True] * 4),
]]
CASES += [(f"testInPredicateWithoutSubquery[{m}]", _SUB.format(measure=m, define="true"), [(v,) for v in e])
          for m, e in [("FIRST(A.value) IN (300, LAST(A.value))", [False, False, True, True]),
                       ("CLASSIFIER() IN ('X', lower(CLASSIFIER()))", [False] * 4),
                       ("MATCH_NUMBER() IN (0, MATCH_NUMBER())", [True] * 4)]]

CASES += [
    ("testPotentiallyExponentialMatch", "SELECT m.classy FROM (VALUES " + ", ".join(["(1)"] * 20) + ") t(value) "
     "MATCH_RECOGNIZE ( MEASURES CLASSIFIER() AS classy PATTERN ((A+)+ B) DEFINE A AS value = 1, B AS value = 2 "
     ") AS m", []),
    ("testExponentialMatch", "SELECT m.classy FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) t(value) "
     "MATCH_RECOGNIZE ( ORDER BY value MEASURES CLASSIFIER() AS classy ALL ROWS PER MATCH PATTERN ((A | B)+ LAST) "
     "DEFINE LAST AS FIRST(CLASSIFIER()) = 'B' AND FIRST(CLASSIFIER(), 1) = 'B' AND FIRST(CLASSIFIER(), 2) = 'B' "
     "AND FIRST(CLASSIFIER(), 3) = 'B' AND FIRST(CLASSIFIER(), 4) = 'B' AND FIRST(CLASSIFIER(), 5) = 'B' AND "
     "FIRST(CLASSIFIER(), 6) = 'B' AND FIRST(CLASSIFIER(), 7) = 'B' ) AS m",
     [("B",)] * 8 + [("LAST",)]),
    ("testProperties", "WITH t(a, b) AS (VALUES (1, 1)), u AS (SELECT * FROM t WHERE b = 1) SELECT * FROM u "
     "MATCH_RECOGNIZE ( PARTITION BY a PATTERN (X) DEFINE X AS (b = 1))", [(1,)]),
    ("testKillThread", "SELECT * FROM (VALUES 1, 2, 3, 4, 5) MATCH_RECOGNIZE ( MEASURES 'foo' AS foo "
     "PATTERN ((Y?){2,}) DEFINE Y AS true)", [("foo",)]),
]

# Where the standard's (our) answer above differs from Trino's published one: Trino's rows and why.
DIFFERENCES = {
    "testOutputLayout[duplicate ORDER BY]": (
        [("partitioning", "ordering", "ordering", "A", 90)],
        "ALL ROWS PER MATCH lists a column named twice in ORDER BY once: a Spark DataFrame cannot tell two "
        "output columns of the same name apart"),
}
