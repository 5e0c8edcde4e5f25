"""Flink's temporal table function joins (LATERAL TABLE (Rates(o.rowtime))) rewritten as temporal joins."""

from __future__ import annotations

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.temporal_function_sql import TemporalFunction, rewrite_temporal_functions

RATES = {"rates": TemporalFunction("`rates_history`", ("currency",))}


def rewrite(text: str) -> str:
    return " ".join(rewrite_temporal_functions(text, RATES).split())


def test_flinks_comma_form_moves_the_key_equality_into_on() -> None:
    assert rewrite("SELECT o.amount * r.rate AS amount FROM Orders AS o, LATERAL TABLE (Rates(o.rowtime)) AS r "
                   "WHERE r.currency = o.currency") == (
        "SELECT o.amount * r.rate AS amount FROM Orders AS o JOIN `rates_history` FOR SYSTEM_TIME AS OF o.rowtime "
        "AS r ON r.currency = o.currency")


def test_other_where_terms_stay_in_where_and_the_clauses_after_it_are_kept() -> None:
    out = rewrite("SELECT o.id FROM Orders o, LATERAL TABLE (Rates(o.t)) r WHERE o.amount > 2 AND "
                  "upper(o.cur) = r.currency AND r.rate BETWEEN 1 AND 2 GROUP BY o.id ORDER BY o.id")
    assert out == ("SELECT o.id FROM Orders o JOIN `rates_history` FOR SYSTEM_TIME AS OF o.t AS r ON "
                   "upper(o.cur) = r.currency WHERE o.amount > 2 AND r.rate BETWEEN 1 AND 2 GROUP BY o.id "
                   "ORDER BY o.id")


def test_join_on_form_and_on_true_with_the_key_in_where() -> None:
    assert rewrite("SELECT * FROM Orders AS o JOIN LATERAL TABLE (Rates(o.t)) AS r ON r.currency = o.c") == (
        "SELECT * FROM Orders AS o JOIN `rates_history` FOR SYSTEM_TIME AS OF o.t AS r ON r.currency = o.c")
    assert rewrite("SELECT * FROM Orders AS o INNER JOIN LATERAL TABLE (Rates(o.t)) AS r ON TRUE "
                   "WHERE o.c = r.currency") == (
        "SELECT * FROM Orders AS o JOIN `rates_history` FOR SYSTEM_TIME AS OF o.t AS r ON o.c = r.currency")


def test_function_names_are_case_insensitive_and_subqueries_are_rewritten() -> None:
    out = rewrite("SELECT * FROM (SELECT o.id, r.rate FROM Orders o, LATERAL TABLE (RATES(o.t)) AS r "
                  "WHERE r.currency = o.c) AS x WHERE x.rate > 1")
    assert out == ("SELECT * FROM (SELECT o.id, r.rate FROM Orders o JOIN `rates_history` FOR SYSTEM_TIME AS OF o.t "
                   "AS r ON r.currency = o.c ) AS x WHERE x.rate > 1")


def test_two_calls_in_a_union_are_both_rewritten() -> None:
    one = "SELECT o.id FROM Orders o, LATERAL TABLE (Rates(o.t)) AS r WHERE r.currency = o.c"
    out = rewrite(f"{one} UNION ALL {one}")
    assert out.count("FOR SYSTEM_TIME AS OF o.t") == 2 and "LATERAL" not in out


def test_text_without_lateral_table_is_unchanged() -> None:
    text = "SELECT * FROM t WHERE x = 'LATERAL TABLE (Rates(o.t))'"
    assert rewrite_temporal_functions(text, RATES) == text


def test_several_functions_after_one_relation_chain_their_temporal_joins() -> None:
    # Flink's TemporalTableFunctionJoinITCase.testNestedTemporalJoin: Rates is keyed by a column of Prices' rows
    functions = {**RATES, "prices": TemporalFunction("prices_history", ("productId",))}
    query = ("SELECT o.orderId, (o.amount * p.price * r.rate) as total_price FROM Orders AS o, "
             "LATERAL TABLE (Prices(o.rowtime)) AS p, LATERAL TABLE (Rates(o.rowtime)) AS r "
             "WHERE o.productId = p.productId AND r.currency = p.currency AND o.amount > 1")
    assert " ".join(rewrite_temporal_functions(query, functions).split()) == (
        "SELECT o.orderId, (o.amount * p.price * r.rate) as total_price FROM Orders AS o "
        "JOIN prices_history FOR SYSTEM_TIME AS OF o.rowtime AS p ON o.productId = p.productId "
        "JOIN `rates_history` FOR SYSTEM_TIME AS OF o.rowtime AS r ON r.currency = p.currency WHERE o.amount > 1")
    on_form = ("SELECT 1 FROM Orders AS o JOIN LATERAL TABLE (Prices(o.t)) AS p ON p.productId = o.id, "
               "LATERAL TABLE (Rates(o.t)) AS r WHERE r.currency = p.currency")
    assert rewrite_temporal_functions(on_form, functions).count("FOR SYSTEM_TIME AS OF o.t") == 2


@pytest.mark.parametrize(("query", "message", "at"), [
    ("SELECT * FROM Orders o, LATERAL TABLE (Prices(o.t)) AS r WHERE r.currency = o.c",
     "Prices is not a temporal table function", "Prices"),
    ("SELECT * FROM Orders o LEFT JOIN LATERAL TABLE (Rates(o.t)) AS r ON TRUE",
     "is an INNER join", "LEFT"),
    ("SELECT * FROM Orders o, LATERAL TABLE (Rates(o.t)) AS r WHERE r.rate > 1",
     "found no such equality", "WHERE"),
    ("SELECT * FROM Orders o, LATERAL TABLE (Rates(o.t)) AS r",
     "needs a condition equating its key", "r"),
    ("SELECT * FROM Orders o, LATERAL TABLE (Rates(o.t, 1)) AS r WHERE r.currency = o.c",
     "takes one argument", ","),
    ("SELECT * FROM Orders o, LATERAL TABLE (Rates(o.t)) WHERE r.currency = o.c",
     "needs an alias", "WHERE"),
    ("SELECT * FROM a, Orders o, LATERAL TABLE (Rates(o.t)) AS r WHERE r.currency = o.c",
     "joins one relation", "LATERAL"),
    ("SELECT * FROM Orders o, LATERAL TABLE (Rates(o.t)) AS r WHERE r.currency = o.c OR o.x = 1",
     "found no such equality", "WHERE"),
])
def test_errors_are_positioned(query, message, at) -> None:
    with pytest.raises(QuerySyntaxError, match=message) as caught:
        rewrite_temporal_functions(query, RATES)
    assert query[caught.value.position:].startswith(at)
