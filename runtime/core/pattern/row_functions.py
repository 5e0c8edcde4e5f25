"""Functions computed per input row by the engine before matching: the rule of which sub-expressions go.

The evaluator implements a fixed set of scalar functions (:mod:`.functions`, with Flink's and Trino's
semantics).  Any other function call of DEFINE or MEASURES (``array_max(A.arr)``, ``div(x, 2)``,
``try_element_at(A.m, 'k')``, ...) is computed by the engine (Spark) for every input row, with the
engine's own semantics, as a hidden column ``__tw_fn_<i>`` the matcher reads like any column, when the
call reads the columns of one row: no navigation (PREV/NEXT/FIRST/LAST), no aggregate, no CLASSIFIER /
MATCH_NUMBER / MATCH_ROWTIME, no subquery, and every column qualified by the same pattern variable (or
none).  ``f(A.x)`` then reads ``A.__tw_fn_0``: the value on the row ``A.x`` reads.  Inside such a call,
everything (operators included) is the engine's: ``array_max(array(A.x / 2))`` divides as Spark divides.

A call that reads navigated or aggregated values (``array_max(LAST(A.arr))``, ``div(A.x, PREV(A.y))``)
stays in Python when the evaluator implements it (:data:`.functions.SCALAR_FUNCTIONS`, entries with
``engine_first``, checked against Spark by a property test).  Any other call whose arguments are constants
and one same navigation of one row (``sha2(LAST(A.s), 256)``, ``f(PREV(A.x), PREV(A.y))``) reads one row
too: it becomes that navigation of the per-row call (``LAST(A.__tw_fn_0)``).  Any other call is an error
naming the function and its position.  When the row a computed column is read on does not exist
(``f(B.x)`` in MEASURES with no B row, a navigation beyond the partition), the value is NULL, as the
column would be, whatever ``f`` gives for NULL.

>>> from timeweave.core.pattern.parser import parse_clause
>>> split = split_row_functions(parse_clause(
...     "MEASURES array_max(A.arr) AS m, LAST(A.v) AS v PATTERN (A+) DEFINE A AS div(A.v, 2) > 1"))
>>> [(f.column, str(f.expr)) for f in split.functions]
[('__tw_fn_0', 'ARRAY_MAX(arr)'), ('__tw_fn_1', 'DIV(v, 2)')]
>>> str(split.spec.measures[0].expr), str(split.spec.definitions[0].condition)
('A.__tw_fn_0', 'A.__tw_fn_1 > 1')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from timeweave.core.pattern import expr as E
from timeweave.core.pattern.errors import PatternValidationError
from timeweave.core.pattern.functions import SCALAR_FUNCTIONS
from timeweave.core.pattern.spec import ClauseSpec

#: Hidden input columns of computed functions are named ``__tw_fn_0``, ``__tw_fn_1``, ...; input columns
#: must not use the prefix, and no door outputs such a column.
HIDDEN_PREFIX = "__tw_fn_"

_NOT_PER_ROW = (E.Navigation, E.Aggregate, E.Classifier, E.MatchNumber, E.MatchRowtime, E.Subquery, E.InSubquery)


@dataclass(frozen=True, slots=True)
class RowFunction:
    """One computed function: hidden ``column`` = ``expr`` over an input row (columns unqualified)."""

    column: str
    expr: E.Func
    start: int  # the call's position in the clause text (errors)


@dataclass(frozen=True, slots=True)
class SplitClause:
    """A clause whose per-row function calls are hidden column reads, and the functions computing them."""

    spec: ClauseSpec
    functions: tuple[RowFunction, ...]

    def check_input(self, names: Sequence[str], door: str) -> None:
        """Raise, at the function's position, when the input lacks a computed column (a door that runs none).

        >>> from timeweave.core.pattern.parser import parse_clause
        >>> split_row_functions(parse_clause("MEASURES array_max(A.a) AS m PATTERN (A)")).check_input(["a"], "the UDTF")
        Traceback (most recent call last):
        ...
        timeweave.core.pattern.errors.PatternValidationError: array_max(A.a) is computed by Spark for each input row before matching, which the UDTF does not do; add ARRAY_MAX(a) as a column of the input relation and read that column, or use timeweave.sql / timeweave.match_recognize (line 1, col 10)
        MEASURES array_max(A.a) AS m PATTERN (A)
                 ^
        """
        present = {name.lower() for name in names}
        for function in self.functions:
            if function.column not in present:
                written = _written(self.spec, function.start)
                raise PatternValidationError(
                    f"{written} is computed by Spark for each input row before matching, which {door} does not "
                    f"do; add {function.expr} as a column of the input relation and read that column, or use "
                    "timeweave.sql / timeweave.match_recognize", text=self.spec.text, position=function.start)


def engine_evaluated(name: str) -> bool:
    """Whether a call of function ``name`` is computed by the engine when it reads one row.

    >>> engine_evaluated("COALESCE"), engine_evaluated("ARRAY_MAX"), engine_evaluated("SHA2")
    (False, True, True)
    """
    function = SCALAR_FUNCTIONS.get(name)
    return function is None or function.engine_first


def _per_row_var(node: E.Expr) -> tuple[bool, str | None]:
    """(reads one row, the variable qualifying its columns)."""
    variables: set[str | None] = set()
    for inner in node.walk():
        if isinstance(inner, _NOT_PER_ROW):
            return False, None
        if isinstance(inner, E.Column):
            variables.add(inner.var)
    if len(variables) > 1:
        return False, None
    return True, next(iter(variables), None)


def _navigated_row(node: E.Func) -> tuple[E.Navigation, E.Func, str | None] | None:
    """For a call without an implementation here whose arguments are constants and one same navigation of
    one row (``sha2(LAST(A.s), 256)``): that navigation, the call over the row, the row's variable."""
    if node.name in SCALAR_FUNCTIONS:
        return None  # the evaluator computes it over the navigated values, exactly
    shape: tuple[Any, ...] | None = None
    navigation: E.Navigation | None = None
    args: list[E.Expr] = []
    for arg in node.args:
        if isinstance(arg, E.Navigation):
            per_row, var = _per_row_var(arg.arg)
            if not per_row:
                return None
            here = (arg.kind, arg.offset, arg.semantics, var)
            if shape is not None and here != shape:
                return None
            shape, navigation = here, arg
            args.append(arg.arg)
        elif any(isinstance(inner, (*_NOT_PER_ROW, E.Column)) for inner in arg.walk()):
            return None  # a column outside the navigation reads another row
        else:
            args.append(arg)
    if navigation is None or shape is None:
        return None
    return navigation, dataclasses.replace(node, args=tuple(args)), shape[3]


def _unqualified(node: E.Expr) -> Any:
    return _rewrite(node, lambda n: E.Column(None, n.name, n.start) if isinstance(n, E.Column) else None)


def _rewrite(node: Any, replace: Any) -> Any:
    """``node`` with each sub-expression ``replace`` maps to a node replaced (top down; None: keep, descend)."""
    if isinstance(node, E.Expr):
        replaced = replace(node)
        if replaced is not None:
            return replaced
        changed = {}
        for f in dataclasses.fields(node):  # type: ignore[arg-type]
            value = getattr(node, f.name)
            new = _rewrite(value, replace)
            if new is not value:
                changed[f.name] = new
        return dataclasses.replace(node, **changed) if changed else node  # type: ignore[type-var]
    if isinstance(node, tuple):
        items = tuple(_rewrite(item, replace) for item in node)
        return items if any(a is not b for a, b in zip(items, node, strict=True)) else node
    return node


def _written(spec: ClauseSpec, start: int) -> str:
    """The call as the user wrote it, for messages (the name up to its closing parenthesis)."""
    text = spec.text
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:start + 40]


def split_row_functions(spec: ClauseSpec) -> SplitClause:
    """``spec`` with every engine-evaluated call that reads one row replaced by a hidden column read.

    Deterministic (the same clause always gives the same columns, in MEASURES then DEFINE order), so the
    driver and every executor that parses the clause text again agree; equal calls share one column.
    """
    columns: dict[E.Expr, str] = {}
    functions: list[RowFunction] = []

    def column(node: E.Func, var: str | None) -> E.Column:
        expression = _unqualified(node)
        name = columns.get(expression)
        if name is None:
            name = columns[expression] = f"{HIDDEN_PREFIX}{len(functions)}"
            functions.append(RowFunction(name, expression, node.start))
        return E.Column(var, name, node.start)

    def hoist(node: E.Expr) -> E.Expr | None:
        if not (isinstance(node, E.Func) and engine_evaluated(node.name)):
            return None
        per_row, var = _per_row_var(node)
        if per_row:
            return column(node, var)
        pulled = _navigated_row(node)
        if pulled is not None:  # f(LAST(A.x), LAST(A.y)) reads one row: LAST(f(A.x, A.y))
            navigation, inner, var = pulled
            return dataclasses.replace(navigation, arg=column(inner, var))
        return None

    measures = tuple(dataclasses.replace(m, expr=_rewrite(m.expr, hoist)) for m in spec.measures)
    definitions = tuple(dataclasses.replace(d, condition=_rewrite(d.condition, hoist)) for d in spec.definitions)
    if not functions:
        return SplitClause(spec, ())
    return SplitClause(dataclasses.replace(spec, measures=measures, definitions=definitions), tuple(functions))


def not_computable(spec: ClauseSpec, node: E.Func) -> PatternValidationError:
    """The error for a call neither the engine (it reads several rows) nor the evaluator computes."""
    computed = ", ".join(sorted(name for name, f in SCALAR_FUNCTIONS.items() if f.engine_first))
    return PatternValidationError(
        f"{_written(spec, node.start)} reads several rows (navigations or aggregates, or the columns of "
        f"different pattern variables), which Spark cannot compute per row, and {node.name} has no "
        f"implementation over such values (Spark functions computed over them: {computed}); compute it per row "
        "and navigate its value (LAST(f(A.x)) - PREV(f(A.x)), not f(LAST(A.x) - PREV(A.x)))", text=spec.text, position=node.start)


#: Spark aggregates (and window and generator functions) that have no meaning per row or no fold here: a
#: clear error, not a per-row call Spark would reject.
NOT_ROW_FUNCTIONS = frozenset({
    "APPROX_COUNT_DISTINCT", "APPROX_PERCENTILE", "PERCENTILE_APPROX", "PERCENTILE", "PERCENTILE_CONT",
    "PERCENTILE_DISC", "COUNT_MIN_SKETCH", "HISTOGRAM_NUMERIC", "HLL_SKETCH_AGG", "HLL_UNION_AGG",
    "KURTOSIS", "SKEWNESS", "REGR_AVGX", "REGR_AVGY", "REGR_COUNT", "REGR_INTERCEPT", "REGR_R2", "REGR_SLOPE",
    "REGR_SXX", "REGR_SXY", "REGR_SYY", "TRY_AVG", "TRY_SUM", "MEAN", "FIRST_VALUE", "LAST_VALUE", "GROUPING",
    "GROUPING_ID", "COLLECT_TOP_K", "BITMAP_CONSTRUCT_AGG", "BITMAP_OR_AGG", "THETA_SKETCH_AGG",
    "ROW_NUMBER", "RANK", "DENSE_RANK", "PERCENT_RANK", "CUME_DIST", "NTILE", "LAG", "LEAD", "NTH_VALUE",
    "EXPLODE", "EXPLODE_OUTER", "POSEXPLODE", "POSEXPLODE_OUTER", "INLINE", "INLINE_OUTER", "STACK",
    "JSON_TUPLE", "RAND", "RANDN", "RANDOM", "UUID", "SHUFFLE", "MONOTONICALLY_INCREASING_ID",
    "SPARK_PARTITION_ID", "INPUT_FILE_NAME",
})


def check_computable(spec: ClauseSpec) -> None:
    """Raise for the first engine function the engine cannot compute per row and the evaluator lacks.

    >>> from timeweave.core.pattern.parser import parse_clause
    >>> parse_clause("MEASURES sha2(LAST(A.x) || FIRST(A.x), 256) AS h PATTERN (A)")
    Traceback (most recent call last):
    ...
    timeweave.core.pattern.errors.PatternValidationError: sha2(LAST(A.x) || FIRST(A.x), 256) reads several rows (navigations or aggregates, or the columns of different pattern variables), which Spark cannot compute per row, and SHA2 has no implementation over such values (Spark functions computed over them: ARRAY_DISTINCT, ARRAY_MAX, ARRAY_MIN, ARRAY_POSITION, ARRAY_SIZE, DIV, IFNULL, NVL, SIGN, SIGNUM, TRY_ELEMENT_AT); compute it per row and navigate its value (LAST(f(A.x)) - PREV(f(A.x)), not f(LAST(A.x) - PREV(A.x))) (line 1, col 10)
    MEASURES sha2(LAST(A.x) || FIRST(A.x), 256) AS h PATTERN (A)
             ^
    """
    split = split_row_functions(spec)
    for expression in (*(m.expr for m in split.spec.measures), *(d.condition for d in split.spec.definitions)):
        for node in expression.walk():
            if isinstance(node, E.Func) and node.name not in SCALAR_FUNCTIONS:
                raise not_computable(spec, node)


def is_hidden(name: str) -> bool:
    """Whether an input column is a computed function's hidden column (never output, never in a dead letter)."""
    return name.lower().startswith(HIDDEN_PREFIX)


__all__ = ["HIDDEN_PREFIX", "NOT_ROW_FUNCTIONS", "RowFunction", "SplitClause", "check_computable", "engine_evaluated", "is_hidden", "not_computable", "split_row_functions"]
