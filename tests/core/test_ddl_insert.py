"""INSERT INTO and statement sets of a Flink SQL script (no JVM): what a SQL job writes where."""

from __future__ import annotations

import pytest

from timeweave.core.ddl.insert import InsertSet, plan_script
from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.jobs.sql_script import check_script

SINK = "CREATE TABLE s (a INT, b STRING) WITH ('connector' = 'filesystem', 'path' = '/o', 'format' = 'parquet');\n"


def test_lone_inserts_and_both_statement_set_spellings() -> None:
    steps = plan_script(SINK + "INSERT INTO s SELECT 1, 'x';\n"
                        "EXECUTE STATEMENT SET BEGIN INSERT INTO s (b) SELECT 'y'; INSERT OVERWRITE TABLE s SELECT 2, 'z'; END;\n"
                        "BEGIN STATEMENT SET; INSERT INTO `s` VALUES (3, 'w'); END;\nSELECT 1")
    kinds = [len(s.inserts) if isinstance(s, InsertSet) else s.tokens[0].upper for s in steps]
    assert kinds == ["CREATE", 1, 2, 1, "SELECT"]
    second = steps[2].inserts
    assert (second[0].columns, second[0].query, second[0].overwrite) == (("b",), "SELECT 'y'", False)
    assert (second[1].table, second[1].overwrite, second[1].query) == ("s", True, "SELECT 2, 'z'")
    assert steps[3].inserts[0].table == "s" and steps[3].inserts[0].query == "VALUES (3, 'w')"


@pytest.mark.parametrize(("script", "message", "at"), [
    ("INSERT INTO s", "needs a query", None),
    ("INSERT INTO db.s SELECT 1", "one-part name", "db.s"),
    ("INSERT INTO s (a, 1) SELECT 1", "column names", "1)"),
    ("BEGIN STATEMENT SET; SELECT 1; END", "only INSERT statements", "SELECT"),
    ("BEGIN STATEMENT SET; INSERT INTO s SELECT 1", "never closed", "BEGIN"),
    ("INSERT INTO s SELECT 1; END", "END without a statement set", "END"),
    ("INSERT INTO s PARTITION (a = 1) SELECT 1", "PARTITION", "PARTITION"),
])
def test_errors_point_into_the_script(script, message, at) -> None:
    with pytest.raises(QuerySyntaxError, match=message) as caught:
        plan_script(script)
    if at is not None:
        assert script[caught.value.position:].startswith(at)


def test_sinks_are_checked_before_spark_runs() -> None:
    bad = SINK.replace("'parquet'", "'debezium-json'") + "INSERT INTO s SELECT 1, 'x'"
    with pytest.raises(QuerySyntaxError, match="must be a filesystem table"):
        check_script(bad)
    with pytest.raises(SpecError, match="unknown mode 'stream'"):
        check_script(SINK + "INSERT INTO s SELECT 1, 'x'", mode="stream")
    assert len(check_script(SINK + "INSERT INTO s SELECT 1, 'x'")) == 2
    assert len(check_script(SINK + "INSERT INTO s SELECT 1, 'x'", mode="streaming")) == 2


@pytest.mark.parametrize(("script", "message", "at"), [
    (SINK.replace("'parquet'", "'csv'") + "INSERT INTO s SELECT 1, 'x'", "written by a streaming query", "'csv'"),
    (SINK + "INSERT OVERWRITE s SELECT 1, 'x'", "a streaming query appends", "s SELECT"),
    (SINK + "INSERT INTO catalog_t SELECT 1, 'x'", "sink is a filesystem table declared earlier", "catalog_t"),
    ("INSERT INTO s SELECT 1, 'x';\n" + SINK, "sink is a filesystem table declared earlier", "s SELECT 1, 'x';"),
], ids=["csv sink", "overwrite", "catalog sink", "sink declared after"])
def test_a_streaming_script_needs_parquet_sinks_it_declares_and_appends(script: str, message: str, at: str) -> None:
    with pytest.raises(QuerySyntaxError, match=message) as caught:
        check_script(script, mode="streaming")
    assert script[caught.value.position:].startswith(at)
    check_script(script.replace("OVERWRITE", "INTO") if "OVERWRITE" in script else SINK + "INSERT INTO s SELECT 1, 'x'")
