"""The continuous GROUP BY's SQL form (timeweave.core.updates.group_sql) and the job config's ``query`` (no JVM).

* Seed 003's first query reads into the keys / aggregates form, and the operator built from either gives the same
  changelog over the clicks table.
* Names: Spark's for unnamed aggregates, aliases with and without AS, back-quoted and qualified names, WHERE kept
  as written.
* Everything the operator cannot do is a QuerySyntaxError at its line and column.
* The job config: ``query`` equals the keys / aggregates config; both forms at once, and bad queries, are refused.
"""

from __future__ import annotations

import pytest

from timeweave.core.errors import QuerySyntaxError
from timeweave.core.operator import Tag, run_keyed
from timeweave.core.updates import GroupAggregateOperator, GroupAggregateSpec
from timeweave.core.updates.group_sql import parse_group_aggregate_query
from timeweave.core.windows.calls import read_aggregates
from timeweave.jobs.config import ConfigError, GroupAggregateJobConfig

SEED_003 = "SELECT user, COUNT(url) FROM clicks GROUP BY user;"
CLICKS = [{"user": "Mary", "url": "./home"}, {"user": "Bob", "url": "./cart"},
          {"user": "Mary", "url": "./prod?id=1"}, {"user": "Liz", "url": "./home"}]


def _changes(keys: tuple[str, ...], aggregates: dict[str, str], changelog: str) -> list[str]:
    spec = GroupAggregateSpec(keys, tuple(a.call() for a in read_aggregates(aggregates)), changelog=changelog,
                              per_row=True)
    out = run_keyed(GroupAggregateOperator(spec), [(row["user"], row) for row in CLICKS], [])
    return [str(c) for c in out[Tag.CHANGELOG]]


@pytest.mark.parametrize("changelog", ["retract", "upsert"])
def test_seed_003_query_is_the_keys_and_aggregates_form(changelog: str) -> None:
    q = parse_group_aggregate_query(SEED_003)
    assert (q.relation, q.alias, q.keys, q.aggregate_texts, q.where) == (
        "clicks", None, ("user",), {"count(url)": "COUNT(`url`)"}, None)
    by_query = _changes(q.keys, q.aggregate_texts, changelog)
    assert by_query == _changes(("user",), {"count(url)": "COUNT(url)"}, changelog)
    expected = ["+I ('Mary',) (1,)", "+U ('Mary',) (2,)", "+I ('Bob',) (1,)", "+I ('Liz',) (1,)"]
    if changelog == "retract":
        expected.insert(1, "-U ('Mary',) (1,)")
    assert by_query == expected


def test_names_aliases_qualifiers_and_where() -> None:
    q = parse_group_aggregate_query(
        "select c.`user`, region, count(*) n, COUNT(DISTINCT c.url), SUM(`unit price`) AS `total price`,\n"
        "  MIN(v) FILTER (WHERE big), avg(v), max(c.v) AS top\n"
        "FROM db.clicks AS c WHERE c.url IS NOT NULL AND (v > 0 OR big) GROUP BY region, c.user")
    assert q.keys == ("user", "region")  # the select list's order (the changelog's columns)
    assert q.aggregates == (
        ("n", "COUNT(*)"), ("count(DISTINCT url)", "COUNT(DISTINCT `url`)"),
        ("total price", "SUM(`unit price`)"), ("min(v) FILTER (WHERE big)", "MIN(`v`) FILTER (WHERE `big`)"),
        ("avg(v)", "AVG(`v`)"), ("top", "MAX(`v`)"))
    assert (q.relation, q.alias, q.qualifier) == ("db.clicks", "c", "c")
    assert q.where == "c.url IS NOT NULL AND (v > 0 OR big)"
    assert parse_group_aggregate_query("SELECT clicks.user, COUNT(1) FROM clicks GROUP BY user").aggregate_texts == {
        "count(1)": "COUNT(*)"}
    # every text reads back as the keys / aggregates form reads it
    assert [a.function for a in read_aggregates(q.aggregate_texts)] == [
        "COUNT(*)", "COUNT(DISTINCT)", "SUM", "MIN", "AVG", "MAX"]


@pytest.mark.parametrize(("query", "message", "line", "col"), [
    ("SELECT user, COUNT(url) FROM clicks GROUP BY user HAVING COUNT(url) > 1", "HAVING: the continuous GROUP BY "
     "takes no HAVING", 1, 51),
    ("SELECT user, COUNT(*) FROM clicks c JOIN users u ON c.user = u.user GROUP BY user", "JOIN: the continuous "
     "GROUP BY reads one relation, no join", 1, 37),
    ("SELECT user, COUNT(*) FROM clicks, users GROUP BY user", "no join", 1, 34),
    ("SELECT user, COUNT(*) FROM clicks JOIN r FOR SYSTEM_TIME AS OF clicks.t ON true GROUP BY user", "no join",
     1, 35),
    ("SELECT user, COUNT(*) FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(t), INTERVAL '1' HOUR)) GROUP BY user",
     "a windowed GROUP BY is a window aggregation", 1, 28),
    ("SELECT user, COUNT(*) FROM clicks\nGROUP BY user, TUMBLE(t, INTERVAL '1' HOUR)", "a group window", 2, 16),
    ("SELECT user, SUM(DISTINCT v) FROM clicks GROUP BY user", "only COUNT takes DISTINCT", 1, 18),
    ("SELECT DISTINCT user, COUNT(*) FROM clicks GROUP BY user", "takes a plain select list", 1, 8),
    ("SELECT user, COUNT(*) AS n FROM clicks GROUP BY user ORDER BY n", "a continuous result has no order", 1, 54),
    ("SELECT user, COUNT(*) FROM clicks GROUP BY user LIMIT 3", "has no order", 1, 49),
    ("SELECT user, COUNT(*) FROM (SELECT * FROM clicks) GROUP BY user", "FROM (subquery)", 1, 28),
    ("SELECT user, COUNT(*) + 1 FROM clicks GROUP BY user", "an expression around an aggregate", 1, 23),
    ("SELECT user, SUM(v * 2) FROM clicks GROUP BY user", "an aggregate of one column", 1, 18),
    ("SELECT user, MEDIAN(v) FROM clicks GROUP BY user", "computes COUNT, SUM, MIN, MAX and AVG only", 1, 14),
    ("SELECT user, upper(url) FROM clicks GROUP BY user", "computes COUNT, SUM, MIN, MAX and AVG only", 1, 14),
    ("SELECT COUNT(*) FROM clicks", "a global aggregate is not supported", 1, 28),
    ("SELECT user, COUNT(*) FROM clicks GROUP BY ROLLUP (user)", "grouping sets are not supported", 1, 44),
    ("SELECT user, region, COUNT(*) FROM clicks GROUP BY user", "not a GROUP BY column", 1, 14),
    ("SELECT user, COUNT(*) FROM clicks GROUP BY user, region", "every GROUP BY column must be selected", 1, 35),
    ("SELECT COUNT(*), user FROM clicks GROUP BY user", "list the GROUP BY columns before the aggregates", 1, 18),
    ("SELECT user AS who, COUNT(*) FROM clicks GROUP BY user", "a GROUP BY column keeps its name", 1, 8),
    ("SELECT user FROM clicks GROUP BY user", "the select list has no aggregate", 1, 8),
    ("SELECT user, COUNT(*) AS user2, SUM(v) AS user2 FROM clicks GROUP BY user", "is taken", 1, 33),
    ("WITH x AS (SELECT * FROM clicks) SELECT user, COUNT(*) FROM x GROUP BY user", "WITH", 1, 1),
    ("SELECT user, COUNT(*) FROM a GROUP BY user UNION ALL SELECT user, COUNT(*) FROM b GROUP BY user",
     "a set operation", 1, 44),
    ("SELECT user, COUNT(*) FROM clicks c GROUP BY d.user", "qualified by a name that is not the FROM relation's",
     1, 46),
    ("SELECT *, COUNT(*) FROM clicks GROUP BY user", "SELECT *", 1, 8),
    ("SELECT user, COUNT(*) FILTER (WHERE v > 1) FROM clicks GROUP BY user", "one BOOLEAN column", 1, 37),
    ("SELECT user, COUNT(*) FROM clicks WHERE GROUP BY user", "WHERE: expected a condition", 1, 41),
    ("UPDATE clicks SET n = 1", "expected SELECT", 1, 1),
])
def test_what_the_operator_cannot_do_is_a_positioned_error(query: str, message: str, line: int, col: int) -> None:
    with pytest.raises(QuerySyntaxError) as raised:
        parse_group_aggregate_query(query)
    assert message in raised.value.description
    assert (raised.value.line, raised.value.col) == (line, col), raised.value.description


def _config(**section) -> dict:
    return {"group_aggregate": {"time": "cTime", **section},
            "input": {"path": "in", "format": "json", "schema": "user STRING, cTime TIMESTAMP, url STRING"},
            "output": {"path": "out"}}


def test_the_job_configs_query_is_its_keys_and_aggregates() -> None:
    by_query = GroupAggregateJobConfig.from_dict(_config(query="SELECT user, COUNT(url) AS cnt FROM clicks GROUP "
                                                         "BY user", changelog="upsert"))
    by_keys = GroupAggregateJobConfig.from_dict(_config(keys=["user"], aggregates={"cnt": "COUNT(`url`)"},
                                                        changelog="upsert"))
    for name in ("keys", "aggregates", "time", "changelog", "input", "output_path", "where", "op_column", "retention"):
        assert getattr(by_query, name) == getattr(by_keys, name), name
    filtered = GroupAggregateJobConfig.from_dict(_config(
        query="SELECT user, COUNT(url) FROM clicks AS c WHERE c.url <> './home' GROUP BY user"))
    assert (filtered.where, filtered.qualifier, filtered.changelog.value) == ("c.url <> './home'", "c", "retract")


def test_the_job_config_refuses_both_forms_and_bad_queries() -> None:
    with pytest.raises(ConfigError, match=r"group_aggregate.keys: give the GROUP BY either as 'query'"):
        GroupAggregateJobConfig.from_dict(_config(query=SEED_003, keys=["user"]))
    with pytest.raises(ConfigError, match=r"group_aggregate.query: HAVING: .* \(line 1, col 51\)"):
        GroupAggregateJobConfig.from_dict(_config(query="SELECT user, COUNT(url) FROM clicks GROUP BY user HAVING "
                                                        "COUNT(url) > 1"))
    with pytest.raises(ConfigError, match=r"group_aggregate.aggregates: missing key \(required\).*or give 'query'"):
        GroupAggregateJobConfig.from_dict(_config(keys=["user"]))
    with pytest.raises(ConfigError, match=r"group_aggregate.changelog: an append-only output"):
        GroupAggregateJobConfig.from_dict(_config(query=SEED_003, changelog="append"))


@pytest.mark.parametrize("name", ["timeweave.core.updates.group_sql", "timeweave.core.updates.group_aggregate",
                                  "timeweave.core.event_time"])
def test_docstring_examples_run(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_forget_idle_drops_a_key_only_once_the_watermark_reached_its_cleanup_time() -> None:
    from timeweave.core.spec import StateRetention
    from timeweave.core.state import InMemoryKeyContext

    spec = GroupAggregateSpec(("user",), tuple(a.call() for a in read_aggregates({"n": "COUNT(*)"})),
                              retention=StateRetention(10, 20))
    op = GroupAggregateOperator(spec)
    ctx = InMemoryKeyContext(current_watermark=100)
    op.process_elements(ctx, [{"user": "Mary"}])
    assert ctx.get("cleanup-timestamp") == 120
    ctx.current_watermark = 119
    assert not op.forget_idle(ctx) and ctx.get("group-accumulators") == [1, 1]
    ctx.current_watermark = 120
    assert op.forget_idle(ctx) and ctx.is_empty()
    assert not op.forget_idle(ctx)  # nothing left to forget
    assert not GroupAggregateOperator(GroupAggregateSpec(("user",), spec.aggregates)).forget_idle(ctx)
