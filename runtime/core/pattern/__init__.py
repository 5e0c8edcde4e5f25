"""Engine-free MATCH_RECOGNIZE (SQL:2016 row pattern recognition, with Flink's WITHIN).

Pipeline: :func:`parse_clause` (lexer → recursive-descent parser → validation) gives a frozen
:class:`ClauseSpec`; the pattern is flattened and compiled into a Trino-style :class:`Program`;
a Pike VM (:mod:`.matcher`) runs it with SQL-standard preference — or, for programs whose threads
provably never meet (``A+ B``, ``START DOWN+ UP``, ...), the fast path of :mod:`.fast` with the same
results; :func:`match_partition` drives one ordered partition and yields output rows as soon as they
are decided (:meth:`PartitionMatcher.push_many` feeds many rows at once);
:class:`MatchRecognizeOperator` does the same per key on an event-time stream.

Supported (parsed, validated, executed, tested): PARTITION BY; ORDER BY (ASC/DESC, NULLS FIRST/LAST);
MEASURES; ONE ROW PER MATCH; ALL ROWS PER MATCH [SHOW EMPTY MATCHES | OMIT EMPTY MATCHES | WITH
UNMATCHED ROWS]; AFTER MATCH SKIP PAST LAST ROW | TO NEXT ROW | TO FIRST v | TO LAST v | TO v (v may be
a SUBSET) with the standard's runtime errors; PATTERN with concatenation, ``|``, grouping, ``* + ?
{n} {n,} {n,m} {,m}`` greedy and reluctant, PERMUTE, ``^ $``, ``{- -}``, ``()``; SUBSET; DEFINE;
Flink's WITHIN INTERVAL (exclusive bound).  Expressions: columns, ``v.col``, literals (numbers,
strings, booleans, NULL, DATE, TIMESTAMP, INTERVAL), ``+ - * / % ||``, comparisons, AND/OR/NOT with
three-valued logic, CASE, CAST, IS [NOT] NULL, [NOT] BETWEEN, [NOT] IN, COALESCE/NULLIF/GREATEST/LEAST/
ABS/MOD/FLOOR/CEIL/ROUND/SQRT/LN/EXP/POWER, UPPER/LOWER/CHAR_LENGTH/LENGTH/CONCAT/CONCAT_WS/SUBSTRING/
TRIM/REPLACE, arrays (``ARRAY[...]``, CARDINALITY/SIZE, ELEMENT_AT, ARRAY_CONTAINS, ARRAY_JOIN; see
``functions``), PREV/NEXT/FIRST/LAST with offsets and FIRST/LAST nested in PREV/NEXT, RUNNING/FINAL,
CLASSIFIER([v]), MATCH_NUMBER(), aggregates running in DEFINE: COUNT(*)/COUNT()/COUNT(v.*)/COUNT/SUM/
AVG/MIN/MAX and ARRAY_AGG, MAX_BY/MIN_BY, COUNT_IF, BOOL_AND/EVERY/BOOL_OR, ARBITRARY/ANY_VALUE,
STDDEV/VARIANCE families, Trino's MIN/MAX(x, n) and MIN_BY/MAX_BY(x, y, n), MAP_AGG, MULTIMAP_AGG, MAP_UNION,
APPROX_DISTINCT, LISTAGG/STRING_AGG and Spark's COLLECT_LIST/SET, BIT_*, MEDIAN, MODE, PRODUCT, COVAR/CORR
(``aggregates``), MATCH_ROWTIME([col]).  Any other function call over one row's columns is computed by the
engine before matching, as a hidden column (``row_functions``); a few Spark functions (ARRAY_MAX, DIV, ...)
also run here over navigated values.

Not supported: DISTINCT aggregates, MATCH_PROCTIME(), PREV/NEXT inside aggregates, window functions
over matches, subqueries, ORDER BY expressions (columns only).

>>> spec = parse_clause('''
...     PARTITION BY symbol ORDER BY t
...     MEASURES FIRST(DOWN.price) AS top, LAST(DOWN.price) AS bottom
...     PATTERN (DOWN{2,})
...     DEFINE DOWN AS PREV(DOWN.price) IS NULL OR DOWN.price < PREV(DOWN.price)''')
>>> rows = [{"symbol": "X", "t": t, "price": p} for t, p in enumerate([5, 4, 3, 9, 8])]
>>> list(match_partition(spec, rows))
[{'symbol': 'X', 'top': 5, 'bottom': 3}]
"""

from timeweave.core.pattern.budget import BUDGET_REASON_CODE, DEFAULT_BUDGET, MatchBudget, MatchBudgetExceeded
from timeweave.core.pattern.errors import MatchRuntimeError, PatternValidationError
from timeweave.core.pattern.operator import BudgetRejected, LateRow, Matched, MatchRecognizeOperator
from timeweave.core.pattern.parser import ClauseLocation, locate_clauses, parse_clause, parse_expression, parse_pattern
from timeweave.core.pattern.partition import (
    PartitionMatcher,
    event_time_column,
    match_partition,
    match_recognize,
    null_event_time_reason,
)
from timeweave.core.pattern.program import Program, compile_pattern
from timeweave.core.pattern.schema import output_columns
from timeweave.core.pattern.spec import (
    AfterMatchSkip,
    ClauseSpec,
    Definition,
    Measure,
    RowsPerMatch,
    SkipMode,
    SortKey,
    Subset,
)

__all__ = [
    "BUDGET_REASON_CODE",
    "DEFAULT_BUDGET",
    "AfterMatchSkip",
    "BudgetRejected",
    "ClauseLocation",
    "ClauseSpec",
    "Definition",
    "LateRow",
    "MatchBudget",
    "MatchBudgetExceeded",
    "MatchRecognizeOperator",
    "MatchRuntimeError",
    "Matched",
    "Measure",
    "PartitionMatcher",
    "PatternValidationError",
    "Program",
    "RowsPerMatch",
    "SkipMode",
    "SortKey",
    "Subset",
    "compile_pattern",
    "event_time_column",
    "locate_clauses",
    "match_partition",
    "match_recognize",
    "null_event_time_reason",
    "output_columns",
    "parse_clause",
    "parse_expression",
    "parse_pattern",
]
