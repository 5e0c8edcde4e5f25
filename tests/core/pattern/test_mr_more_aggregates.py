"""Trino's n-argument MIN/MAX/MIN_BY/MAX_BY, the map aggregates, LISTAGG and Spark's aggregates over a match."""

from __future__ import annotations

from typing import Any

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.pattern import match_partition, output_columns, parse_clause

ROWS = [{"t": i, "k": k, "v": v} for i, (k, v) in enumerate([("a", 3), ("b", 1), ("a", 5), ("c", None), ("b", 5)])]


def _measure(expression: str, rows: list[dict[str, Any]] = ROWS) -> Any:
    spec = parse_clause(f"ORDER BY t MEASURES {expression} AS m PATTERN (A+) DEFINE A AS true")
    (out,) = list(match_partition(spec, rows))
    return out["m"]


@pytest.mark.parametrize(("expression", "expected"), [
    ("MAX(A.v, 2)", [5, 5]),
    ("MIN(A.v, 2)", [1, 3]),
    ("MIN(A.v, 10)", [1, 3, 5, 5]),
    ("MAX_BY(A.k, A.v, 2)", ["a", "b"]),  # ties on v = 5: match order
    ("MIN_BY(A.k, A.v, 2)", ["b", "a"]),
    ("MAP_AGG(A.k, A.v)", {"a": 3, "b": 1, "c": None}),  # a key's first value (Trino)
    ("MULTIMAP_AGG(A.k, A.v)", {"a": [3, 5], "b": [1, 5], "c": [None]}),
    ("LISTAGG(A.k, ', ')", "a, b, a, c, b"),
    ("STRING_AGG(A.k)", "abacb"),
    ("LISTAGG(A.v, '-')", "3-1-5-5"),  # NULLs skipped
    ("APPROX_DISTINCT(A.k)", 3),
    ("APPROX_DISTINCT(A.v, 0.01)", 3),
    ("COLLECT_LIST(A.v)", [3, 1, 5, 5]),
    ("COLLECT_SET(A.v)", [3, 1, 5]),
    ("BIT_OR(A.v)", 7),
    ("BIT_AND(A.v)", 1),
    ("BIT_XOR(A.v)", 2),
    ("MEDIAN(A.v)", 4.0),
    ("MODE(A.v)", 5),
    ("PRODUCT(A.v)", 75.0),
    ("SOME(A.v > 4)", True),
    ("ANY(A.v > 9)", False),
])
def test_aggregate_values(expression: str, expected: Any) -> None:
    assert _measure(expression) == expected


def test_map_union_keeps_the_first_value_of_a_key() -> None:
    rows = [{"t": 0, "m": {"a": 1}}, {"t": 1, "m": None}, {"t": 2, "m": [("a", 9), ("b", 2)]}]
    assert _measure("MAP_UNION(A.m)", rows) == {"a": 1, "b": 2}


def test_covariance_and_correlation() -> None:
    rows = [{"t": i, "x": x, "y": y} for i, (x, y) in enumerate([(1, 2), (2, 4), (3, 6), (None, 1)])]
    assert _measure("COVAR_POP(A.x, A.y)", rows) == pytest.approx(4 / 3)
    assert _measure("COVAR_SAMP(A.x, A.y)", rows) == pytest.approx(2.0)
    assert _measure("CORR(A.x, A.y)", rows) == pytest.approx(1.0)


def test_empty_inputs() -> None:
    rows = [{"t": 0, "k": None, "v": None}]
    assert _measure("MAX(A.v, 2)", rows) is None
    assert _measure("MAP_AGG(A.k, A.v)", rows) is None
    assert _measure("LISTAGG(A.k, ',')", rows) is None
    assert _measure("COLLECT_LIST(A.v)", rows) == []  # Spark's collect_list: an empty array
    assert _measure("APPROX_DISTINCT(A.v)", rows) == 0


def test_running_n_aggregate_in_define() -> None:
    """A DEFINE reads the running value: B is a row whose v beats both of the two best A values so far."""
    spec = parse_clause("ORDER BY t MEASURES MAX(A.v, 2) AS top PATTERN (A{2,} B) "
                        "DEFINE B AS B.v > ELEMENT_AT(MAX(A.v, 2), 1)")
    rows = [{"t": i, "v": v} for i, v in enumerate([1, 4, 2, 9])]
    assert list(match_partition(spec, rows)) == [{"top": [4, 2]}]


def test_output_types() -> None:
    spec = parse_clause("ORDER BY t MEASURES MAX(A.v, 2) AS a, MAX_BY(A.k, A.v, 2) AS b, MAP_AGG(A.k, A.v) AS c, "
                        "MULTIMAP_AGG(A.k, A.v) AS d, LISTAGG(A.k, ',') AS e, APPROX_DISTINCT(A.k) AS f, "
                        "MAP_UNION(A.m) AS g, MEDIAN(A.v) AS h PATTERN (A+)")
    types = dict(output_columns(spec, {"t": "bigint", "k": "string", "v": "int", "m": "map<string,int>"}))
    assert types == {"a": "array<int>", "b": "array<string>", "c": "map<string,int>", "d": "map<string,array<int>>",
                     "e": "string", "f": "bigint", "g": "map<string,int>", "h": "double"}


def test_printing_round_trips() -> None:
    spec = parse_clause("MEASURES MAX_BY(A.k, A.v, 3) AS a, LISTAGG(A.k, ', ') AS b PATTERN (A+)")
    assert [str(m.expr) for m in spec.measures] == ["MAX_BY(A.k, A.v, 3)", "LISTAGG(A.k, ', ')"]
    assert parse_clause(str(spec)).measures == spec.measures


@pytest.mark.parametrize(("clause", "message"), [
    ("MEASURES MAX(A.v, 0) AS m PATTERN (A)", "count argument of MAX must be a positive integer constant"),
    ("MEASURES MAX(A.v, A.v) AS m PATTERN (A)", "count argument of MAX must be a positive integer constant"),
    ("MEASURES MIN_BY(A.k, A.v, 2, 3) AS m PATTERN (A)", "MIN_BY takes at most 3 arguments"),
    ("MEASURES LISTAGG(A.k, 1) AS m PATTERN (A)", "separator of LISTAGG must be a string constant"),
    ("MEASURES MAP_AGG(A.k) AS m PATTERN (A)", "expected ','"),
])
def test_argument_errors_are_positioned(clause: str, message: str) -> None:
    with pytest.raises(QuerySyntaxError, match=message) as caught:
        parse_clause(clause)
    assert "col" in str(caught.value)
