"""Column names are data (CSV headers, inferred JSON schemas): no name may change what a plan does.

Every generated plan runs twice over the same rows, once with plain column names and once with hostile
ones -- quotes, backticks, ``'||(SELECT ...)||'``, ``java_method(...)``, backslashes, newlines, tabs,
unicode, spaces, dots, braces (``spark.sql(query, **dataframes)`` formats its text) -- and must give the
same rows (after renaming back), the same dead letters (reasons naming the hostile column) and never a value of the ``tw_secrets`` table or of the Java property the
names try to read.  Doors: the temporal join's DataFrame door (INNER, LEFT with a predicate), its dead
letter, ``timeweave.sql``, the streaming job, the 2-slice backfill; MATCH_RECOGNIZE's DataFrame door, SQL
door (view and UDTF), streaming job and backfill; the windows' DataFrame doors (``window_aggregate``, its
dead letter, Top-N, deduplication, join), SQL door (window TVFs, Top-N and join query shapes, its dead
letter), the window streaming job and backfill; and the dbt macros' SQL, rendered without dbt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jinja2
import pytest

import timeweave
from timeweave.core.errors import SpecError
from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
from timeweave.jobs.backfill import run_backfill
from timeweave.jobs.streaming import run_streaming
from timeweave.spark import render, sql_door
from timeweave.spark.match_recognize import register_udtf
from timeweave.spark.match_recognize_backfill import backfill_match_recognize
from timeweave.spark.registration import versioned_spec
from timeweave.spark.render import quote as q

pytestmark = pytest.mark.spark

SECRET = "TOPSECRET-4217"
CANARY = "CANARY-JAVA-9931"  # the value of the Java system property timeweave.canary
INJECT = (
    "' || (SELECT max(secret) FROM tw_secrets) || java_method('java.lang.System', 'getProperty', "
    "'timeweave.canary') || '"
)
FRAGMENTS = ("tw_secrets", "java_method", "getProperty")  # never outside a quoted identifier of generated SQL

# plain name -> hostile name.  No hostile name ends with another (reasons end with the column's name).
LEFT = {
    "id": "id 日本 \\'",
    "k": "k" + INJECT,
    "t": "t`ime.x\n",
    "amount": "a.b\\{left}",
}
RIGHT = {
    "op": "o`p' \\",
    "k": LEFT["k"],
    "rate": "rate', java_method('java.lang.System', 'getProperty', 'timeweave.canary'), '",
    "ut": "u.t\t\"",
    "seq": "s`eq --{0}}",
}
LEFT_TYPES = {"id": "STRING", "k": "STRING", "t": "TIMESTAMP", "amount": "DOUBLE"}
RIGHT_TYPES = {"op": "STRING", "k": "STRING", "rate": "DOUBLE", "ut": "TIMESTAMP", "seq": "BIGINT"}
T0 = datetime(2024, 1, 1)


def _t(minutes: int | None) -> datetime | None:
    return None if minutes is None else T0 + timedelta(minutes=minutes)


LEFT_ROWS = [
    ("o1", "EUR", _t(5), 10.0), ("o2", "EUR", _t(25), 20.0), ("o3", "USD", _t(15), 30.0),
    ("o4", "USD", _t(45), 40.0), ("o5", "EUR", _t(55), 50.0), ("o6", "GBP", _t(30), 60.0),
    ("o7", None, _t(20), 70.0),   # NULL key: dead letter
    ("o8", "EUR", None, 80.0),    # NULL time: dead letter
]
RIGHT_ROWS = [
    ("+I", "EUR", 1.1, _t(0), 1), ("+U", "EUR", 1.2, _t(20), 2), ("-D", "EUR", None, _t(40), 3),
    ("+I", "EUR", 1.3, _t(50), 4), ("+I", "USD", 0.9, _t(10), 5), ("+U", "USD", -0.5, _t(40), 6),
    ("zz", "USD", 7.0, _t(12), 7),   # unknown op: dead letter
    ("+I", None, 2.0, _t(1), 8),     # NULL key: dead letter
]

MR_INPUT = {"id": "id 日本 \\'", "k": "k" + INJECT, "t": "t`ime.x\n", "v": "v.a`l' \\"}
MR_TYPES = {"id": "STRING", "k": "STRING", "t": "TIMESTAMP", "v": "BIGINT"}
MR_MEASURES = {"t0": "t0" + INJECT, "v1": "v.1`", "n": "n\n日"}
MR_ROWS = [
    ("a1", "x", _t(0), 1), ("a2", "x", _t(1), 2), ("a3", "x", _t(2), 3), ("a4", "x", _t(3), 0),
    ("a5", "x", _t(4), 5), ("b1", "y", _t(0), 9), ("b2", "y", _t(5), 10), ("b3", "y", _t(6), 11),
    ("b4", "y", _t(7), 1), ("c1", "x", None, 4),  # NULL event time: the streaming and backfill dead letter
]


def mr_clause(names: Mapping[str, str], measures: Mapping[str, str]) -> str:
    n, m = {p: q(h) for p, h in names.items()}, {p: q(h) for p, h in measures.items()}
    return (f"PARTITION BY {n['k']} ORDER BY {n['t']}\n"
            f"MEASURES FIRST(A.{n['t']}) AS {m['t0']}, LAST(B.{n['v']}) AS {m['v1']}, COUNT(*) AS {m['n']}\n"
            f"PATTERN (A B+) DEFINE B AS B.{n['v']} > PREV(B.{n['v']})")


PLAIN_MR = {p: p for p in MR_INPUT}
PLAIN_MEASURES = {p: p for p in MR_MEASURES}


def identity(names: Mapping[str, str]) -> dict[str, str]:
    return {p: p for p in names}


def ddl(names: Mapping[str, str], types: Mapping[str, str]) -> str:
    return ", ".join(f"{q(names[p])} {types[p]}" for p in types)


# -- normalizing outputs: hostile names back to plain ones -------------------------------------------------


def _plain_reason(reason: str | None, back: Mapping[str, str]) -> str | None:
    for hostile, plain in back.items():
        if reason is not None and reason.endswith("column " + hostile):
            return reason[: len(reason) - len(hostile)] + plain
    return reason


def canonical(rows: Iterable[Any], back: Mapping[str, str]) -> list[str]:
    """Rows (Spark Rows) as sorted JSON texts with hostile column names (keys, reasons, JSON rows) made plain."""
    out = []
    for row in rows:
        d = {back.get(k, k): v for k, v in row.asDict().items()}
        d.pop("slice", None)  # the backfill's partition column
        if "reason" in d:
            d["reason"] = _plain_reason(d["reason"], back)
        if isinstance(d.get("row"), str):
            d["row"] = {back.get(k, k): v for k, v in json.loads(d["row"]).items()}
        out.append(json.dumps(d, sort_keys=True, default=str))
    return sorted(out)


def assert_no_leak(*texts: Any) -> None:
    for text in texts:
        assert SECRET not in str(text) and CANARY not in str(text), f"leaked: {str(text)[:300]}"


def assert_inert(sql: str) -> None:
    """Outside quoted identifiers, generated SQL holds none of the names' SQL fragments."""
    outside = re.sub(r"`(?:[^`]|``)*`", "``", sql)
    for fragment in FRAGMENTS:
        assert fragment not in outside, f"{fragment!r} outside identifiers in:\n{sql[:2000]}"


@pytest.fixture(scope="module")
def secrets(spark):
    spark.createDataFrame([(SECRET,)], "secret STRING").createOrReplaceTempView("tw_secrets")
    spark._jvm.java.lang.System.setProperty("timeweave.canary", CANARY)
    yield
    spark.catalog.dropTempView("tw_secrets")


def frames(spark, left_names: Mapping[str, str], right_names: Mapping[str, str]):
    left = spark.createDataFrame(LEFT_ROWS, ddl(left_names, LEFT_TYPES))
    right = spark.createDataFrame(RIGHT_ROWS, ddl(right_names, RIGHT_TYPES))
    return left, right


def versioned(right: Mapping[str, str]) -> dict[str, Any]:
    """VERSIONED with ``right``'s names."""
    return {"key": [right["k"]], "time": right["ut"], "format": "changelog", "op": right["op"], "sequence": right["seq"]}


def predicate(left: Mapping[str, str], right: Mapping[str, str]) -> str:
    return f"r.{q(right['rate'])} > 0 AND l.{q(left['amount'])} > 0"


def join_kwargs(left: Mapping[str, str], right: Mapping[str, str], how: str) -> dict[str, Any]:
    """The DataFrame door's arguments; LEFT also has a predicate over both sides (struct field access)."""
    return {**versioned(right), "how": how, **({"predicate": predicate(left, right)} if how == "left" else {})}


# -- the temporal join ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["inner", "left"])
def test_dataframe_door_and_dead_letter(spark, secrets, how: str) -> None:
    plain_left, plain_right = frames(spark, identity(LEFT), identity(RIGHT))
    left, right = frames(spark, LEFT, RIGHT)
    expected_rows, expected_dead = timeweave.temporal_join_with_rejects(
        plain_left, plain_right, "t", **join_kwargs(identity(LEFT), identity(RIGHT), how))
    rows, dead = timeweave.temporal_join_with_rejects(left, right, LEFT["t"], **join_kwargs(LEFT, RIGHT, how))
    back = {h: p for p, h in {**LEFT, **RIGHT}.items()}
    got, got_dead = rows.collect(), dead.collect()
    assert rows.columns == [*LEFT.values(), RIGHT["rate"]]
    assert canonical(got, back) == canonical(expected_rows.collect(), {})
    assert canonical(got_dead, back) == canonical(expected_dead.collect(), {})
    reasons = {r["reason"] for r in got_dead}
    assert {"NULL key column " + RIGHT["k"], "unknown op zz in column " + RIGHT["op"]} <= reasons <= {
        "NULL key column " + LEFT["k"], "NULL time column " + LEFT["t"], "NULL key column " + RIGHT["k"],
        "unknown op zz in column " + RIGHT["op"]}
    assert len(got) >= 5
    assert_no_leak(got, got_dead)


def test_plans_hold_no_name_outside_quoted_identifiers() -> None:
    spec = TemporalJoinSpec(VersionedTableSpec(**versioned(RIGHT)), left_time=LEFT["t"], how="left",
                            predicate=predicate(LEFT, RIGHT))
    spec.bind({LEFT[p]: k for p, k in {"id": "string", "k": "string", "t": "timestamp", "amount": "numeric"}.items()},
              {RIGHT[p]: k for p, k in {"op": "string", "k": "string", "rate": "numeric", "ut": "timestamp",
                                         "seq": "numeric"}.items()})
    sqls = [
        render.temporal_join_sql(spec, "l", "r", list(LEFT.values()), list(RIGHT.values()), nested=True),
        render.versioned_view_sql(spec.versioned, "r", list(RIGHT.values())),
        render.finalize_sql(spec, "m", list(LEFT.values()), list(RIGHT.values())),
        render.versions_sql("intervals", spec.versioned, "r", list(RIGHT.values())),
        render.probe_join_sql(spec, "l", "s", "i", list(LEFT.values()), list(RIGHT.values())),
        render.macro("timeweave__dead_letter_sql", "l", list(LEFT.values()), "left", [LEFT["k"]], LEFT["t"]),
    ]
    for sql in sqls:
        assert_inert(sql)
    assert render.sql_string("NULL key column k") == "'NULL key column k'"  # plain text stays readable
    assert render.sql_string("it's") == "CAST(X'69742773' AS STRING)"


def test_sql_door(spark, secrets) -> None:
    results = {}
    for label, left_names, right_names in (("plain", identity(LEFT), identity(RIGHT)), ("hostile", LEFT, RIGHT)):
        left, right = frames(spark, left_names, right_names)
        left.createOrReplaceTempView(f"tw_orders_{label}")
        timeweave.register_versioned(spark, f"tw_rates_{label}", right, VersionedTableSpec(
            [right_names["k"]], right_names["ut"], format="changelog", op=right_names["op"], sequence=right_names["seq"]))
        lq, rq = {p: q(h) for p, h in left_names.items()}, {p: q(h) for p, h in right_names.items()}
        query = (f"SELECT o.{lq['id']}, o.{lq['amount']}, r.{rq['rate']} FROM tw_orders_{label} AS o "
                 f"LEFT JOIN tw_rates_{label} FOR SYSTEM_TIME AS OF o.{lq['t']} AS r ON o.{lq['k']} = r.{rq['k']} "
                 f"AND r.{rq['rate']} > 0")
        assert_inert(timeweave.spark.sql_door.rewrite(spark, query)) if label == "hostile" else None
        results[label] = timeweave.sql(spark, query).collect()
        star = timeweave.sql(spark, f"SELECT * FROM tw_orders_{label} AS o JOIN tw_rates_{label} "
                                  f"FOR SYSTEM_TIME AS OF o.{lq['t']} AS r ON o.{lq['k']} = r.{rq['k']}")
        results[label + "*"] = star.collect()
    back = {h: p for p, h in {**LEFT, **RIGHT}.items()}
    assert canonical(results["hostile"], back) == canonical(results["plain"], {})
    assert canonical(results["hostile*"], back) == canonical(results["plain*"], {})
    assert results["plain"] and results["plain*"]
    assert_no_leak(results)


class _RecordingSession:
    """Just what ``versioned_spec`` touches of a session, recording the statements it would run."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.conf = self

    def get(self, key: str, default: Any = None) -> Any:
        return default

    def sql(self, statement: str) -> Any:
        self.statements.append(statement)
        raise LookupError("no catalog here")


@pytest.mark.parametrize(("name", "statement"), [
    ("rates", "SHOW TBLPROPERTIES `rates`"),
    ("db.`odd``na.me`", "SHOW TBLPROPERTIES `db`.`odd``na.me`"),
    ("spark_catalog . db . rates", "SHOW TBLPROPERTIES `spark_catalog`.`db`.`rates`"),
])
def test_table_properties_name_is_quoted(name: str, statement: str) -> None:
    """A table name reaches ``SHOW TBLPROPERTIES`` with every part backquoted (issue 20: it was spliced as is)."""
    session = _RecordingSession()
    assert versioned_spec(session, name) is None
    assert session.statements == [statement]


@pytest.mark.parametrize("name", [
    "rates ('timeweave.time')", "rates; DROP TABLE x", "rates -- c", "`unterminated", "db..rates", "",
    "rates" + INJECT,
])
def test_table_properties_refuse_text_that_is_not_a_name(name: str) -> None:
    session = _RecordingSession()
    with pytest.raises(SpecError, match="is not a table name"):
        versioned_spec(session, name)
    assert session.statements == []  # nothing ran


def test_sql_door_reads_catalog_properties_of_a_qualified_name(spark) -> None:
    """A catalog table found by ``db.table`` in a query: its ``timeweave.*`` properties make it versioned."""
    spark.sql("CREATE DATABASE IF NOT EXISTS tw_hostile_db")
    try:
        spark.sql("CREATE TABLE tw_hostile_db.rates_props (k STRING, ut TIMESTAMP, rate DOUBLE) USING parquet "
                  "TBLPROPERTIES ('timeweave.key' = 'k', 'timeweave.time' = 'ut')")
        spark.createDataFrame([("EUR", T0, 1.5)], "k STRING, ut TIMESTAMP, rate DOUBLE").write.insertInto(
            "tw_hostile_db.rates_props")
        spark.createDataFrame([("o1", "EUR", _t(5))], "id STRING, k STRING, t TIMESTAMP").createOrReplaceTempView(
            "tw_props_orders")
        rows = timeweave.sql(spark, "SELECT o.id, r.rate FROM tw_props_orders AS o JOIN `tw_hostile_db`.rates_props "
                                    "FOR SYSTEM_TIME AS OF o.t AS r ON o.k = r.k").collect()
        assert [tuple(r) for r in rows] == [("o1", 1.5)]
        assert versioned_spec(spark, "tw_hostile_db.`rates_props`").key == ("k",)
    finally:
        spark.sql("DROP DATABASE IF EXISTS tw_hostile_db CASCADE")
        spark.catalog.dropTempView("tw_props_orders")


def _write_json(path: Path, names: Mapping[str, str], types: Mapping[str, str], rows: list[tuple]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(
        json.dumps({names[c]: (v.isoformat() if isinstance(v, datetime) else v) for c, v in zip(types, r, strict=True)})
        + "\n" for r in rows))


def job_config(tmp_path: Path, name: str) -> dict[str, Any]:
    """The hostile-named temporal join as a job (inputs: JSON files under tmp_path/orders and tmp_path/rates)."""
    return {
        "left": {"path": str(tmp_path / "orders"), "format": "json", "schema": ddl(LEFT, LEFT_TYPES),
                 "watermark_delay": "30 days"},  # > the data's span: nothing is late, whatever the batches
        "right": {"path": str(tmp_path / "rates"), "format": "json", "schema": ddl(RIGHT, RIGHT_TYPES),
                  "watermark_delay": "30 days"},
        "versioned": versioned(RIGHT),
        "join": {"left_time": LEFT["t"], "how": "left", "predicate": predicate(LEFT, RIGHT)},
        "output": {"path": str(tmp_path / name)},
        "checkpoint": str(tmp_path / f"{name}_chk"),
        "trigger": {"available_now": True},
    }


def test_streaming_job_and_backfill(spark, secrets, tmp_path: Path) -> None:
    plain_left, plain_right = frames(spark, identity(LEFT), identity(RIGHT))
    kwargs = join_kwargs(identity(LEFT), identity(RIGHT), "left")
    expected, expected_dead = timeweave.temporal_join_with_rejects(plain_left, plain_right, "t", **kwargs)
    expected, expected_dead = canonical(expected.collect(), {}), canonical(expected_dead.collect(), {})
    back = {h: p for p, h in {**LEFT, **RIGHT}.items()}
    for part, rows in enumerate((LEFT_ROWS[:4], LEFT_ROWS[4:])):
        _write_json(tmp_path / "orders" / f"{part}.json", LEFT, LEFT_TYPES, rows)
    for part, rows in enumerate((RIGHT_ROWS[:3], RIGHT_ROWS[3:])):
        _write_json(tmp_path / "rates" / f"{part}.json", RIGHT, RIGHT_TYPES, rows)

    config = job_config(tmp_path, "stream")
    metrics = run_streaming(config, spark, flush=True)
    main = spark.read.parquet(config["output"]["path"]).collect()
    dead = spark.read.parquet(config["output"]["path"] + "_dead_letter").collect()
    assert canonical(main, back) == expected
    assert canonical(dead, back) == expected_dead
    assert (metrics["dead_letter"], metrics["late"]) == (len(expected_dead), 0)

    config = job_config(tmp_path, "backfill")
    metrics = run_backfill(config, T0, T0 + timedelta(hours=1), 2, spark=spark)
    assert metrics["slices"] == 2
    filled_rows = spark.read.parquet(config["output"]["path"]).collect()
    filled_dead = spark.read.parquet(config["output"]["path"] + "_dead_letter").collect()
    assert canonical(filled_rows, back) == expected
    assert canonical(filled_dead, back) == expected_dead
    assert_no_leak(main, dead, filled_rows, filled_dead)


# -- MATCH_RECOGNIZE -----------------------------------------------------------------------------------------


def mr_frame(spark, names: Mapping[str, str]):
    return spark.createDataFrame(MR_ROWS, ddl(names, MR_TYPES))


def test_match_recognize_doors(spark, secrets, tmp_path: Path) -> None:
    back = {h: p for p, h in {**MR_INPUT, **MR_MEASURES}.items()}
    plain_clause, clause = mr_clause(PLAIN_MR, PLAIN_MEASURES), mr_clause(MR_INPUT, MR_MEASURES)
    plain_df, df = mr_frame(spark, PLAIN_MR), mr_frame(spark, MR_INPUT)
    timed_plain, timed = plain_df.where("t IS NOT NULL"), df.where(f"{q(MR_INPUT['t'])} IS NOT NULL")
    expected = canonical(timeweave.match_recognize(timed_plain, plain_clause).collect(), {})
    assert expected
    got = {"dataframe": timeweave.match_recognize(timed, clause).collect()}

    timed.createOrReplaceTempView("tw_mr_hostile")
    register_udtf(spark)
    got["sql"] = timeweave.sql(spark, f"SELECT * FROM tw_mr_hostile MATCH_RECOGNIZE ({clause}) AS m").collect()
    udtf_query = f"WITH src AS (SELECT * FROM tw_mr_hostile) SELECT * FROM src MATCH_RECOGNIZE ({clause}) AS m"
    rewritten = timeweave.spark.sql_door.rewrite(spark, udtf_query)
    assert "timeweave_match_recognize(" in rewritten  # the UDTF door (a CTE cannot be resolved alone)
    assert_inert(rewritten)
    got["udtf"] = timeweave.sql(spark, udtf_query).collect()
    spark.conf.set("spark.sql.parser.escapedStringLiterals", "true")  # changes escaped literals; ours are hex
    try:
        got["udtf, escapedStringLiterals"] = timeweave.sql(spark, udtf_query).collect()
    finally:
        spark.conf.unset("spark.sql.parser.escapedStringLiterals")

    out = tmp_path / "mr_backfill"
    metrics = backfill_match_recognize(df, clause, T0, T0 + timedelta(hours=1), 2, str(out), dead_letter=str(out) + "_dead")
    assert metrics["slices"] == 2 and metrics["dead_letter"] == 1
    got["backfill"] = spark.read.parquet(str(out)).collect()
    mr_dead = spark.read.parquet(str(out) + "_dead").collect()

    _write_json(tmp_path / "mr_in" / "a.json", MR_INPUT, MR_TYPES, MR_ROWS[:5])
    _write_json(tmp_path / "mr_in" / "b.json", MR_INPUT, MR_TYPES, MR_ROWS[5:])
    config = {
        "match_recognize": {"clause": clause},
        "input": {"path": str(tmp_path / "mr_in"), "format": "json", "schema": ddl(MR_INPUT, MR_TYPES),
                  "watermark_delay": "30 days"},
        "output": {"path": str(tmp_path / "mr_stream")},
        "checkpoint": str(tmp_path / "mr_chk"),
        "trigger": {"available_now": True},
    }
    streamed = run_streaming(config, spark, flush=True)
    assert (streamed["dead_letter"], streamed["late"]) == (1, 0)
    got["streaming"] = spark.read.parquet(str(tmp_path / "mr_stream")).collect()
    mr_dead += spark.read.parquet(str(tmp_path / "mr_stream") + "_dead_letter").collect()

    for door, rows in got.items():
        assert canonical(rows, back) == expected, door
    assert [(r["side"], r["reason"]) for r in mr_dead] == [("input", "NULL event time column " + MR_INPUT["t"])] * 2
    assert all(json.loads(r["row"])[MR_INPUT["id"]] == "c1" for r in mr_dead)
    assert_no_leak(got, mr_dead)


# -- the dbt macros, rendered without dbt ---------------------------------------------------------------------


class _Return(Exception):  # dbt's `return()` is an exception too
    def __init__(self, value: Any) -> None:
        self.value = value


class _Table:
    """What the macros read of ``run_query``'s agate table: ``column_names`` and ``columns[i].values()``."""

    def __init__(self, df) -> None:
        self.column_names = df.columns
        # values() runs the query (the window macros read `select current_timezone()`); the rest only introspect
        self.columns = [type("Column", (), {"values": lambda _, i=i: [r[i] for r in df.collect()]})()
                        for i in range(len(df.columns))]


class _DbtMacros:
    """The dbt package's macros under ``timeweave.<name>``, with the few dbt context objects they use.

    Relations are passed as SQL text (a view name), so the macros introspect them with ``run_query``.
    """

    def __init__(self, spark) -> None:
        env = jinja2.Environment(extensions=["jinja2.ext.do"])
        env.globals.update({
            "timeweave": self, "execute": True, "return": self._return,
            "adapter": type("Adapter", (), {"dispatch": lambda _, name, package: self._dispatch(name)})(),
            "run_query": lambda sql: _Table(spark.sql(sql)),
            "exceptions": type("Exceptions", (), {"raise_compiler_error": staticmethod(self._fail)})(),
            "config": {"materialized": "table"},
        })
        macros = Path(__file__).resolve().parents[2] / "dbt_macros" / "macros"
        # Jinja does not export macros whose name starts with "_": the package's helpers are renamed to load.
        self._modules = [
            env.from_string(path.read_text().replace("macro _", "macro private_").replace("timeweave._", "timeweave.private_")).module
            for path in sorted(macros.glob("*.sql"))
        ]

    def _dispatch(self, name: str) -> Any:
        """dbt's adapter.dispatch on Spark: spark__<name>, else default__<name>."""
        for prefix in ("spark__", "default__"):
            if any(hasattr(m, prefix + name) for m in self._modules):
                return getattr(self, prefix + name)
        raise AssertionError(f"no spark__ or default__ implementation of {name}")

    @staticmethod
    def _return(value: Any) -> None:
        raise _Return(value)

    @staticmethod
    def _fail(message: str) -> None:
        raise AssertionError(message)

    def __getattr__(self, name: str) -> Any:
        macro = next(getattr(m, name) for m in self._modules if hasattr(m, name))

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return macro(*args, **kwargs)
            except _Return as returned:
                return returned.value

        return call


def test_dbt_macros(spark, secrets) -> None:
    dbt = _DbtMacros(spark)
    results: dict[str, list[Any]] = {}
    for label, left_names, right_names in (("plain", identity(LEFT), identity(RIGHT)), ("hostile", LEFT, RIGHT)):
        left, right = frames(spark, left_names, right_names)
        left.createOrReplaceTempView(f"tw_dbt_orders_{label}")
        right.createOrReplaceTempView(f"tw_dbt_rates_{label}")
        args = (f"tw_dbt_orders_{label}", f"tw_dbt_rates_{label}", left_names["t"], [right_names["k"]], right_names["ut"])
        meta = {k: v for k, v in versioned(right_names).items() if k not in ("key", "time")}
        sqls = {
            "join": dbt.temporal_join(*args, how="left", predicate=predicate(left_names, right_names), **meta),
            "dead": dbt.temporal_join_dead_letter(*args, **meta),
            "view": dbt.versioned_view(f"tw_dbt_rates_{label}", [right_names["k"]], right_names["ut"], **meta),
        }
        mr = mr_frame(spark, PLAIN_MR if label == "plain" else MR_INPUT)
        mr.where(f"{q((PLAIN_MR if label == 'plain' else MR_INPUT)['t'])} IS NOT NULL").createOrReplaceTempView(
            f"tw_dbt_mr_{label}")
        register_udtf(spark)
        sqls["mr"] = dbt.match_recognize(
            f"tw_dbt_mr_{label}", mr_clause(PLAIN_MR, PLAIN_MEASURES) if label == "plain" else mr_clause(MR_INPUT, MR_MEASURES))
        for name, sql in sqls.items():
            if label == "hostile":
                assert_inert(str(sql))
            results[f"{label} {name}"] = spark.sql(str(sql)).collect()
    back = {h: p for p, h in {**LEFT, **RIGHT, **MR_INPUT, **MR_MEASURES}.items()}
    for name in ("join", "dead", "view", "mr"):
        assert canonical(results[f"hostile {name}"], back) == canonical(results[f"plain {name}"], {}), name
        assert results[f"plain {name}"], name
    assert_no_leak(results)


# -- windows ------------------------------------------------------------------------------------------------

WIN_INPUT = {"id": "id 日本 \\'", "k": "k" + INJECT, "t": "t`ime.x\n", "v": "v.a`l' \\", "f": "f`lag' {0}"}
WIN_TYPES = {"id": "STRING", "k": "STRING", "t": "TIMESTAMP", "v": "BIGINT", "f": "BOOLEAN"}
#: The aggregates' output names.
WIN_OUTPUTS = {"n": "n\n日", "total": "total" + INJECT, "top": "t.o`p", "ids": "ids' \\", "big": "b`ig\t"}
WIN_ROWS = [  # distinct times and values per key: rankings and deduplication have no ties
    ("a1", "x", _t(0), 1, True), ("a2", "x", _t(3), 4, False), ("a3", "x", _t(7), 2, True),
    ("a4", "x", _t(12), 8, None), ("a5", "x", _t(26), 3, True), ("b1", "y", _t(2), 9, False),
    ("b2", "y", _t(4), 10, True), ("b3", "y", _t(15), 11, True), ("b4", "y", _t(18), 5, False),
    ("n1", None, _t(6), 6, True), ("n2", None, _t(9), 7, False),   # a NULL key: a group of its own
    ("c1", "x", None, 4, True),                                       # NULL event time: every door's dead letter
]
PLAIN_WIN, PLAIN_OUTPUTS = identity(WIN_INPUT), identity(WIN_OUTPUTS)
WIN_BACK = {h: p for p, h in {**WIN_INPUT, **WIN_OUTPUTS}.items()}


def win_frame(spark, names: Mapping[str, str]):
    return spark.createDataFrame(WIN_ROWS, ddl(names, WIN_TYPES))


def win_aggregates(names: Mapping[str, str], outputs: Mapping[str, str], general: bool) -> dict[str, str]:
    """COUNT / SUM / MAX (the DataFrame door's shared-slice plan), and with ``general`` COUNT(DISTINCT) and a
    FILTER too (the TVF-rows plan); the texts name the columns back-quoted, the outputs are the keys."""
    n = {p: q(h) for p, h in names.items()}
    aggregates = {outputs["n"]: "COUNT(*)", outputs["total"]: f"SUM({n['v']})", outputs["top"]: f"MAX({n['v']})"}
    if general:
        aggregates |= {outputs["ids"]: f"COUNT(DISTINCT {n['id']})", outputs["big"]: f"SUM({n['v']}) FILTER (WHERE {n['f']})"}
    return aggregates


def prefixed_back(*prefixes: str) -> dict[str, str]:
    return {prefix + h: prefix + p for prefix in prefixes for h, p in WIN_BACK.items()}


def test_window_plans_hold_no_name_outside_quoted_identifiers() -> None:
    from timeweave.core.windows import hop, session, tumble
    from timeweave.core.windows.ranking import RankRange, SortKey
    from timeweave.spark.window_ops_render import window_join_sql, window_rank_sql
    from timeweave.spark.window_render import window_aggregate_sql, window_dead_letter_sql, window_tvf_sql

    columns, w = list(WIN_INPUT.values()), WIN_INPUT
    aggregates = [{"name": WIN_OUTPUTS["n"], "function": "count", "argument": None, "type": "bigint"},
                  {"name": WIN_OUTPUTS["total"], "function": "sum", "argument": q(w["v"]), "type": "bigint"}]
    sqls = [
        window_tvf_sql(hop("5 minutes", "10 minutes"), "src", columns, w["t"], zone="Asia/Shanghai"),
        window_tvf_sql(session("5 minutes", partition_by=w["k"]), "src", columns, w["t"]),
        window_aggregate_sql(hop("5 minutes", "10 minutes"), "src", columns, w["t"], [w["k"]], aggregates),
        window_aggregate_sql(tumble("10 minutes"), "src", columns, w["t"], [w["k"], w["id"]], aggregates),
        window_dead_letter_sql("src", columns, w["t"], "NULL event time column " + w["t"]),
        window_rank_sql("src", [*columns, "window_start", "window_end"], [w["k"]], [SortKey(w["v"], True)],
                        RankRange.top(2), WIN_OUTPUTS["n"]),
        window_join_sql("l", columns, "r", columns, [(w["k"], w["k"])], "FULL", ["L_" + c for c in columns],
                        ["R_" + c for c in columns]),
        window_join_sql("l", columns, "r", columns, [(w["k"], w["k"])], "SEMI"),
    ]
    for sql in sqls:
        assert_inert(sql)


def test_window_aggregate_dataframe_door(spark, secrets) -> None:
    from timeweave.core.windows import hop, session

    plain, df = win_frame(spark, PLAIN_WIN), win_frame(spark, WIN_INPUT)
    cases = {"hop, shared slices": (hop("5 minutes", "10 minutes"), False),
             "hop, TVF rows": (hop("5 minutes", "10 minutes"), True),
             "session": (session("5 minutes", partition_by="k"), True)}
    for label, (window, general) in cases.items():
        hostile_window = window if label != "session" else session("5 minutes", partition_by=WIN_INPUT["k"])
        expected, expected_dead = timeweave.window_aggregate_with_rejects(
            plain, win_aggregates(PLAIN_WIN, PLAIN_OUTPUTS, general), keys="k", time="t", window=window)
        rows, dead = timeweave.window_aggregate_with_rejects(
            df, win_aggregates(WIN_INPUT, WIN_OUTPUTS, general), keys=WIN_INPUT["k"], time=WIN_INPUT["t"],
            window=hostile_window)
        got, got_dead = rows.collect(), dead.collect()
        assert canonical(got, WIN_BACK) == canonical(expected.collect(), {}), label
        assert canonical(got_dead, WIN_BACK) == canonical(expected_dead.collect(), {}), label
        assert len(got) >= 5, label
        assert [r["reason"] for r in got_dead] == ["NULL event time column " + WIN_INPUT["t"]], label
        assert_no_leak(got, got_dead)


def test_window_ops_dataframe_doors(spark, secrets) -> None:
    from timeweave.core.windows import tumble

    w = tumble("10 minutes")
    results: dict[str, dict[str, list[Any]]] = {}
    for label, names in (("plain", PLAIN_WIN), ("hostile", WIN_INPUT)):
        df = win_frame(spark, names)
        right = df.where(f"{q(names['v'])} > 3")
        top, top_dead = timeweave.window_top_n_with_rejects(df, 2, order_by=f"{q(names['v'])} DESC",
                                                             partition_by=names["k"], time=names["t"], window=w)
        last, last_dead = timeweave.window_deduplicate_with_rejects(df, time=names["t"], keys=names["k"],
                                                                    keep="last", window=w)
        joined, joined_dead = timeweave.window_join_with_rejects(df, right, on=names["k"], how="full", time=names["t"],
                                                                 window=w, left_prefix="L_", right_prefix="R_")
        windowed = timeweave.tumble(df, names["t"], "10 minutes")
        semi = timeweave.window_join(windowed, timeweave.tumble(right, names["t"], "10 minutes"), on=names["k"],
                                     how="anti")
        results[label] = {name: frame.collect() for name, frame in {
            "top": top, "top dead": top_dead, "last": last, "last dead": last_dead, "join": joined,
            "join dead": joined_dead, "anti": semi}.items()}
    back = {**WIN_BACK, **prefixed_back("L_", "R_")}
    for name, expected in results["plain"].items():
        assert canonical(results["hostile"][name], back) == canonical(expected, {}), name
        assert expected, name
    assert_no_leak(results)


def test_window_sql_door(spark, secrets) -> None:
    results: dict[str, list[Any]] = {}
    for label, names, outputs in (("plain", PLAIN_WIN, PLAIN_OUTPUTS), ("hostile", WIN_INPUT, WIN_OUTPUTS)):
        win_frame(spark, names).createOrReplaceTempView(f"tw_win_{label}")
        n, o = {p: q(h) for p, h in names.items()}, {p: q(h) for p, h in outputs.items()}
        src = f"tw_win_{label}"
        tumble_call = f"TABLE(TUMBLE(TABLE {src}, DESCRIPTOR({n['t']}), INTERVAL '10' MINUTES))"
        queries = {
            "hop": f"SELECT window_start, window_end, {n['k']}, COUNT(*) AS {o['n']}, SUM({n['v']}) AS {o['total']}, "
                   f"COUNT(DISTINCT {n['id']}) FILTER (WHERE {n['f']}) AS {o['ids']} "
                   f"FROM TABLE(HOP(TABLE {src}, DESCRIPTOR({n['t']}), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)) "
                   f"GROUP BY window_start, window_end, {n['k']}",
            # mergeable aggregates, the key and the TVF's alias as qualifier: the sliced plan
            "hop sliced": f"SELECT w.window_start, {n['k']}, window_end, COUNT(*) AS {o['n']}, SUM(w.{n['v']}) AS "
                          f"{o['total']}, MAX({n['v']}) {o['top']} FROM TABLE(HOP(TABLE {src}, DESCRIPTOR({n['t']}), INTERVAL '5' "
                          f"MINUTES, INTERVAL '10' MINUTES)) AS w GROUP BY window_start, window_end, w.{n['k']}",
            "session": f"SELECT * FROM TABLE(SESSION(TABLE {src} PARTITION BY {n['k']}, DESCRIPTOR({n['t']}), "
                       f"INTERVAL '5' MINUTES))",
            "top-n": f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, {n['k']} "
                     f"ORDER BY {n['v']} DESC) AS rownum FROM {tumble_call}) AS ranked WHERE rownum <= 2",
            "join": f"SELECT L.{n['id']} AS lid, R.{n['id']} AS rid, L.window_start, L.window_end "
                    f"FROM (SELECT * FROM {tumble_call}) L JOIN (SELECT * FROM {tumble_call}) R "
                    f"ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.{n['k']} = R.{n['k']}",
        }
        for name, query in queries.items():
            rendered = sql_door.rewrite(spark, query)
            if label == "hostile":
                assert_inert(rendered)
            assert (" __tw_sliced" in rendered) == (name == "hop sliced"), name
            results[f"{label} {name}"] = timeweave.sql(spark, query).collect()
            results[f"{label} {name} dead"] = timeweave.dead_letters(spark, query).collect()
    for key in [k for k in results if k.startswith("plain ")]:
        name = key[len("plain "):]
        assert canonical(results["hostile " + name], WIN_BACK) == canonical(results[key], {}), name
        assert results[key], name
    assert_no_leak(results)


def test_window_streaming_job_and_backfill(spark, secrets, tmp_path: Path) -> None:
    from timeweave.core.windows import hop

    expected, expected_dead = timeweave.window_aggregate_with_rejects(
        win_frame(spark, PLAIN_WIN), win_aggregates(PLAIN_WIN, PLAIN_OUTPUTS, True), keys="k", time="t",
        window=hop("5 minutes", "10 minutes"))
    expected, expected_dead = canonical(expected.collect(), {}), canonical(expected_dead.collect(), {})
    _write_json(tmp_path / "win_in" / "a.json", WIN_INPUT, WIN_TYPES, WIN_ROWS[:6])
    _write_json(tmp_path / "win_in" / "b.json", WIN_INPUT, WIN_TYPES, WIN_ROWS[6:])

    def config(name: str) -> dict[str, Any]:
        return {
            "window": {"function": "hop", "time": WIN_INPUT["t"], "slide": "5 minutes", "size": "10 minutes",
                       "keys": [WIN_INPUT["k"]], "aggregates": win_aggregates(WIN_INPUT, WIN_OUTPUTS, True)},
            "input": {"path": str(tmp_path / "win_in"), "format": "json", "schema": ddl(WIN_INPUT, WIN_TYPES),
                      "watermark_delay": "30 days"},  # > the data's span: nothing is late, whatever the batches
            "output": {"path": str(tmp_path / name)},
            "checkpoint": str(tmp_path / f"{name}_chk"),
            "trigger": {"available_now": True},
        }

    stream = config("win_stream")
    metrics = run_streaming(stream, spark, flush=True)
    assert (metrics["dead_letter"], metrics["late"]) == (1, 0)
    got = {"stream": spark.read.parquet(stream["output"]["path"]).collect()}
    dead = {"stream": spark.read.parquet(stream["output"]["path"] + "_dead_letter").collect()}
    filled = config("win_backfill")
    metrics = run_backfill(filled, T0 - timedelta(hours=1), T0 + timedelta(hours=1), 3, spark=spark)
    assert metrics["slices"] == 3
    got["backfill"] = spark.read.parquet(filled["output"]["path"]).collect()
    dead["backfill"] = spark.read.parquet(filled["output"]["path"] + "_dead_letter").collect()
    for door in got:
        assert canonical(got[door], WIN_BACK) == expected, door
        assert canonical(dead[door], WIN_BACK) == expected_dead, door
    assert_no_leak(got, dead)


def test_window_dbt_macros(spark, secrets) -> None:
    dbt = _DbtMacros(spark)
    results: dict[str, list[Any]] = {}
    for label, names in (("plain", PLAIN_WIN), ("hostile", WIN_INPUT)):
        view = f"tw_dbt_win_{label}"
        win_frame(spark, names).where(f"{q(names['t'])} IS NOT NULL").createOrReplaceTempView(view)
        win_frame(spark, names).where(f"{q(names['v'])} > 3").createOrReplaceTempView(view + "_r")
        tumbled = "(" + dbt.tumble(view, names["t"], "10 minutes") + ")"
        tumbled_right = "(" + dbt.tumble(view + "_r", names["t"], "10 minutes") + ")"
        sqls = {
            "hop": dbt.hop(view, names["t"], "5 minutes", "10 minutes"),
            "cumulate": dbt.cumulate(view, names["t"], "5 minutes", "10 minutes"),
            "session": dbt.session(view, names["t"], "5 minutes", partition_by=names["k"]),
            "top-n": dbt.window_top_n(tumbled, f"{q(names['v'])} DESC", n=2, partition_by=names["k"]),
            "dedup": dbt.window_deduplicate(tumbled, names["t"], keys=names["k"], keep="last"),
            "join": dbt.window_join(tumbled, tumbled_right, names["k"], how="full", left_prefix="L_",
                                    right_prefix="R_"),
            "anti": dbt.window_join(tumbled, tumbled_right, [[names["k"], names["k"]]], how="anti"),
        }
        for name, sql in sqls.items():
            if label == "hostile":
                assert_inert(str(sql))
            results[f"{label} {name}"] = spark.sql(str(sql)).collect()
    back = {**WIN_BACK, **prefixed_back("L_", "R_")}
    for name in ("hop", "cumulate", "session", "top-n", "dedup", "join", "anti"):
        assert canonical(results[f"hostile {name}"], back) == canonical(results[f"plain {name}"], {}), name
        assert results[f"plain {name}"], name
    assert_no_leak(results)
