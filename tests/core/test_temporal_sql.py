"""The FOR SYSTEM_TIME AS OF finder: shapes it accepts, positioned errors, and the bare ``*`` it reports."""

from __future__ import annotations

import re

import pytest

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.temporal_sql import find_temporal_joins

JOIN = "FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur"


@pytest.mark.parametrize(
    ("select", "stars"),
    [
        ("SELECT *", ["*"]),
        ("SELECT DISTINCT *", ["*"]),
        ("SELECT *, o.id", ["*"]),
        ("SELECT o.*, r.rate", []),
        ("SELECT count(*) AS n", []),
        ("SELECT o.id, *", ["*"]),
        ("SELECT 2 * 3 AS six", []),
    ],
)
def test_bare_stars_of_the_joins_own_select_list(select: str, stars: list[str]) -> None:
    query = f"{select} {JOIN}"
    [clause] = find_temporal_joins(query)
    assert [query[p] for p in clause.select_stars] == stars
    assert all(query[p - 1] in " ," for p in clause.select_stars)


def test_stars_of_an_outer_query_block_are_not_the_joins() -> None:
    query = f"SELECT * FROM (SELECT o.id, r.rate {JOIN}) AS t"
    [clause] = find_temporal_joins(query)
    assert clause.select_stars == ()
    inner = f"SELECT x.* FROM (SELECT * {JOIN}) AS x"
    [clause] = find_temporal_joins(inner)
    assert [inner.index("SELECT *") + 7] == list(clause.select_stars)


def test_clause_span_and_parts() -> None:
    query = f"SELECT o.id {JOIN} AND r.rate > 1 WHERE o.id > 0"
    [clause] = find_temporal_joins(query)
    assert query[clause.start : clause.end] == f"{JOIN[5:]} AND r.rate > 1"
    assert (clause.left_alias, clause.right_alias, clause.how, clause.left_time) == ("o", "r", "inner", "ts")
    assert clause.key_pairs == (("cur", "cur"),) and clause.predicate == "r.rate > 1"


@pytest.mark.parametrize(
    ("query", "message", "at"),
    [
        ("SELECT * FROM orders o FULL JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur", "FULL", "FULL"),
        ("SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF x.ts r ON o.cur = r.cur", "AS OF needs", "x.ts"),
        ("SELECT * FROM a JOIN b ON a.k = b.k JOIN rates FOR SYSTEM_TIME AS OF b.ts r ON b.cur = r.cur", "right after FROM", "b.k JOIN"),
    ],
)
def test_errors_point_at_the_problem(query: str, message: str, at: str) -> None:
    with pytest.raises(QuerySyntaxError, match=message) as info:
        find_temporal_joins(query)
    assert info.value.position == query.index(at)


# -- key expressions: any deterministic expression over the left side equated to a right key column ---------
KEYED = "SELECT o.id FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON "


@pytest.mark.parametrize(
    ("on", "expression"),
    [
        ("o.nested_row.currency = r.currency", "o.nested_row.currency"),
        ("o.attrs['currency'] = r.currency", "o.attrs['currency']"),
        ("CASE WHEN o.x > 0 THEN o.c ELSE 'EUR' END = r.currency", "CASE WHEN o.x > 0 THEN o.c ELSE 'EUR' END"),
        ("upper(o.cur) = r.currency", "upper(o.cur)"),
        ("r.currency = upper(o.cur)", "upper(o.cur)"),
        ("cast(o.id AS STRING) = r.currency", "cast(o.id AS STRING)"),
        ("coalesce(o.a, o.b) == r.currency", "coalesce(o.a, o.b)"),
    ],
)
def test_left_expressions_are_keys(on: str, expression: str) -> None:
    [clause] = find_temporal_joins(KEYED + on + " AND r.rate > 1")
    [key] = clause.keys
    assert (key.right, key.left_column, key.left_expression) == ("currency", None, expression)
    assert clause.key_pairs == ((expression, "currency"),) and clause.predicate == "r.rate > 1"
    assert clause.for_key(["currency"]) == clause
    assert key.position == len(KEYED)


def test_expression_name_is_one_line_and_repeats_compute_once() -> None:
    [clause] = find_temporal_joins(KEYED + "upper(\n  o.cur) = r.k1 AND upper(\n  o.cur) = r.k2 AND o.d = r.k3")
    assert [k.left_name for k in clause.keys] == ["upper( o.cur)", "upper( o.cur)", "d"]
    assert [k.left_name for k in clause.key_expressions] == ["upper( o.cur)"]
    assert clause.keys[2].left_column == "d"


@pytest.mark.parametrize(
    "on",
    [
        "o.cur = r.cur AND r.a = r.b",  # no left side: a filter on the version found
        "o.cur = r.cur AND o.p = r.rate * 2",  # an expression on the versioned side next to a key: the predicate
        "o.cur = r.cur AND o.x IN (1, 2)",
        "o.cur = r.cur AND (o.x = r.y OR o.z = r.y)",
        "o.cur = r.cur AND CASE WHEN o.x = 1 THEN true END",
    ],
)
def test_other_conjuncts_stay_in_the_predicate(on: str) -> None:
    [clause] = find_temporal_joins(KEYED + on)
    assert clause.key_pairs == (("cur", "cur"),)
    assert clause.predicate == on.split(" AND ", 1)[1]


@pytest.mark.parametrize(
    ("on", "key", "message", "at"),
    [
        ("concat(o.cur, rand()) = r.cur", ["cur"], "must be deterministic; rand", "rand"),
        ("o.cur = r.cur AND concat(o.a, current_timestamp) = r.y", ["cur", "y"], "current_timestamp", "current_timestamp"),
        ("r.cur = uuid(o.a)", ["cur"], "uuid", "uuid"),
        ("concat(o.cur, r.x) = r.cur", ["cur"], r"cannot read the versioned side \(r.x\)", "r.x"),
    ],
)
def test_key_expression_errors_point_at_the_problem(on: str, key: list[str], message: str, at: str) -> None:
    query = KEYED + on
    [clause] = find_temporal_joins(query)
    with pytest.raises(QuerySyntaxError, match=message) as info:
        clause.for_key(key)
    assert info.value.position == query.index(at, len(KEYED))


@pytest.mark.parametrize(
    ("on", "message", "at"),
    [
        ("o.cur = upper(r.cur)", "must be a key column r.<key>, not an expression", "upper"),
        ("o.cur = r.nested.cur", "must be a key column", "r.nested"),
        ("o.cur = r.cur OR o.x = r.y", "at least one equality", "o.cur ="),
        ("'EUR' = r.cur", "at least one equality", "'EUR'"),
    ],
)
def test_clause_errors_point_at_the_problem(on: str, message: str, at: str) -> None:
    query = KEYED + on
    [clause] = find_temporal_joins(query)  # a keyless table would take it: raised once the key is known
    with pytest.raises(QuerySyntaxError, match=message) as info:
        clause.join_keys(("cur",), "join")
    assert info.value.position == query.index(at, len(KEYED))


@pytest.mark.parametrize(
    "on",
    [
        "o.cur = r.cur AND upper(o.tag) = r.tag",
        "o.cur = r.cur AND concat(o.a, r.b) = r.tag",  # would be refused as a key: a condition on a non-key column
        "o.cur = r.cur AND concat(o.a, rand()) = r.tag",
    ],
)
def test_expression_equalities_on_non_key_columns_stay_in_the_predicate(on: str) -> None:
    [clause] = find_temporal_joins(KEYED + on)
    resolved = clause.for_key(["cur"])
    assert resolved.key_pairs == (("cur", "cur"),)
    assert resolved.predicate == on.split(" AND ", 1)[1]
    assert resolved.key_expressions == ()


def test_column_equalities_on_non_key_columns_stay_in_the_predicate() -> None:
    # Flink's TemporalJoinITCase.testEventTimeTemporalJoinThatJoinkeyContainsPk: the equalities contain the key
    [clause] = find_temporal_joins(KEYED + "o.cur = r.cur AND o.cur_no = r.cur_no")
    resolved, left_key, predicate = clause.join_keys(("cur",), "join")
    assert (resolved.key_pairs, left_key, predicate) == ((("cur", "cur"),), ("cur",), "o.cur_no = r.cur_no")
    # equalities that miss a key column are still refused, naming every equality's column
    with pytest.raises(SpecError, match=r"join on \['cur', 'cur_no'\], but the versioned table's key is \['cur', 'k'\]"):
        clause.join_keys(("cur", "k"), "join")
    with pytest.raises(SpecError, match=r"join on \['cur', 'cur_no'\], but the versioned table's key is \['id'\]"):
        clause.join_keys(("id",), "join")


def test_chained_joins_read_every_alias_before_them() -> None:
    # Flink's TemporalJoinITCase.testEventTimeMultiTemporalJoin: the second join's left side is the first join
    query = ("SELECT o.id, r.rate, r1.rate FROM orders AS o LEFT JOIN a FOR SYSTEM_TIME AS OF o.ts AS r "
             "ON o.cur = r.cur AND o.no = r.no LEFT JOIN b FOR SYSTEM_TIME AS OF o.ts AS r1 "
             "ON o.cur = r1.cur AND r.rate < r1.rate JOIN c FOR SYSTEM_TIME AS OF r1.t AS r2 ON r2.k = upper(r.no) "
             "WHERE o.id > 0")
    first, second, third = find_temporal_joins(query)
    assert not first.chained and first.left_relation == "orders" and first.key_pairs == (("cur", "cur"), ("no", "no"))
    assert second.chained and second.chain == ("o", "r") and second.start == first.start == query.index("orders")
    assert (second.how, second.left_time, second.time_expression) == ("left", "__tw_as_of", "o.ts")
    assert second.key_pairs == (("o.cur", "cur"),) and second.predicate == "r.rate < r1.rate"
    assert third.chain == ("o", "r", "r1") and third.time_expression == "r1.t" and third.how == "inner"
    assert third.key_pairs == (("upper(r.no)", "k"),) and third.end == query.index(" WHERE")


@pytest.mark.parametrize(("tail", "message", "at"), [
    ("JOIN b FOR SYSTEM_TIME AS OF x.ts AS r1 ON o.cur = r1.cur", "AS OF needs a time column of the joins before it "
     "(o / r.<column>)", "x.ts"),
    ("JOIN b FOR SYSTEM_TIME AS OF ts AS r1 ON o.cur = r1.cur", "AS OF needs a time column", "ts AS r1"),
])
def test_chained_join_errors_point_at_the_problem(tail: str, message: str, at: str) -> None:
    query = f"SELECT 1 FROM orders AS o JOIN a FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur {tail}"
    with pytest.raises(QuerySyntaxError, match=re.escape(message)) as info:
        find_temporal_joins(query)
    assert info.value.position == query.index(at)


def test_a_join_after_another_tables_join_still_needs_a_subquery() -> None:
    query = "SELECT 1 FROM orders AS o JOIN x ON o.a = x.a JOIN r FOR SYSTEM_TIME AS OF o.ts AS r ON o.c = r.c"
    with pytest.raises(QuerySyntaxError, match="one table or subquery right after FROM"):
        find_temporal_joins(query)


def test_a_column_named_like_a_function_is_no_call() -> None:
    [clause] = find_temporal_joins(KEYED + "concat(o.now, o.rand) = r.cur")
    assert clause.keys[0].left_expression == "concat(o.now, o.rand)"


def test_a_keyed_table_needs_equalities_a_keyless_one_takes_any_on() -> None:
    query = "SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.cur > r.cur"
    [clause] = find_temporal_joins(query)
    with pytest.raises(QuerySyntaxError, match="at least one equality") as info:
        clause.join_keys(("cur",), "join")
    assert info.value.position == query.index("o.cur >")
    assert clause.join_keys((), "join")[1:] == ((), "o.cur > r.cur")
    [on_true] = find_temporal_joins("SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON TRUE")
    assert on_true.key_pairs == () and on_true.join_keys((), "join")[1:] == ((), None)
    [both] = find_temporal_joins("SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.c = r.c AND o.n < r.n")
    assert both.join_keys((), "join")[1:] == ((), "(o.c = r.c) AND (o.n < r.n)")
