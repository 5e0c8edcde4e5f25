"""The batch window doors (DataFrame, SQL) against Flink's batch outputs and the core's reference.

* every ``win_*`` conformance case through ``timeweave.window_aggregate`` and ``timeweave.sql`` (the case's own
  query as Flink wrote it) equals Flink's batch output (late rows kept: batch has no watermark); SESSION cases,
  which Flink cannot run in batch, equal the core's :func:`~timeweave.core.windows.evaluate`;
* random inputs (out of order, ties, NULL times, before 1970, offsets): the DataFrame TVF = the SQL TVF = the core's
  :func:`~timeweave.core.windows.assign_windows`, and the dead letters of both doors = the core's;
* TIMESTAMP windows in a non-UTC session time zone = the core's TIMESTAMP_LTZ rule; TIMESTAMP_NTZ is unshifted;
* windows cascade on ``window_time``; ROLLUP / CUBE / COUNT(DISTINCT) over a TVF;
* bad specs fail before any Spark job, with the argument named (and its position, SQL).
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta

import pytest

import timeweave
from tests.helpers.flink_cases import dataframe, load_case, normalize
from tests.helpers.spark_jobs import no_spark_job as _no_job
from tests.helpers.window_cases import WINDOW_CASES, WindowPlan, render
from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.windows import (
    Assigned,
    SessionSpec,
    TimeShift,
    assign_windows,
    cumulate,
    evaluate,
    hop,
    session,
    tumble,
)
from timeweave.core.windows.late import format_ms
from timeweave.spark.windows import window_tvf

_EPOCH = datetime(1970, 1, 1)




# -- Flink's cases ------------------------------------------------------------------------------------------


def _expected(case, plan):
    if (case.path / "expected_batch.csv").exists():
        return case.expected("batch")
    header, _ = case.expected("streaming")  # SESSION: Flink has no batch output; the core's batch reference
    rows = []
    for keys in plan.grouping_sets:
        result = evaluate(plan.tvf.spec, plan.calls, plan.rows(), time_column=plan.tvf.time_column,
                          key_of=lambda r, kc=keys: tuple(r[c] for c in kc))
        rows += [render(header, keys, k, r, tuple(c.name for c in plan.calls)) for k, r in result.rows]
    return header, rows


@pytest.mark.parametrize("name", WINDOW_CASES)
def test_case_through_dataframe_and_sql_equals_flink_batch(spark, name) -> None:
    case = load_case(name)
    plan = WindowPlan(case)
    header, expected = _expected(case, plan)
    df = dataframe(spark, plan.table)
    # SQL door: the case's query as written for Flink
    df.createOrReplaceTempView(plan.tvf.relation)
    result = timeweave.sql(spark, case.query)
    got = [tuple(normalize(r[c]) for c in header) for r in result.collect()]
    assert sorted(got, key=str) == sorted(expected, key=str)
    # TUMBLE / HOP / CUMULATE without grouping sets run on shared slices (SESSION and GROUPING SETS: the TVF's rows)
    sliced = re.search(r"\b__tw_se\b", result._jdf.queryExecution().analyzed().toString()) is not None
    assert sliced == (not isinstance(plan.tvf.spec, SessionSpec) and len(plan.grouping_sets) == 1)
    # DataFrame door: window_aggregate per grouping set
    aggregates = {c.name: f"{type(c.accumulator).__name__.replace('CountStar', 'COUNT').upper()}"
                          f"({'*' if c.argument is None else c.argument})" for c in plan.calls}
    got = []
    for keys in plan.grouping_sets:
        out = timeweave.window_aggregate(df, aggregates, keys=list(keys), time=plan.tvf.time_column, window=plan.tvf.spec)
        got += [tuple(normalize(r[c]) if c in out.columns else None for c in header) for r in out.collect()]
    assert sorted(got, key=str) == sorted(expected, key=str)


# -- random inputs ------------------------------------------------------------------------------------------

SPECS = [
    tumble("10 seconds", offset="3 seconds"),
    hop("4 seconds", "12 seconds", offset="-1 second"),
    cumulate("3 seconds", "9 seconds", offset="2 seconds"),
    session("5 seconds", partition_by="k"),
    session("3 seconds"),
]


def _random_rows(seed: int, n: int = 60):
    rnd = random.Random(seed)
    base = datetime(1969, 12, 31, 23, 59, 30)  # crosses 1970: floor and pmod before the epoch
    rows = []
    for i in range(n):
        t = None if rnd.random() < 0.08 else base + timedelta(microseconds=rnd.randrange(0, 90_000_000, 250))
        rows.append((i, rnd.choice(["a", "b", "c"]), rnd.randint(1, 9), t))
    rnd.shuffle(rows)  # out of order
    return rows


def _ms(ts: datetime) -> int:
    return (ts.replace(tzinfo=UTC) - _EPOCH.replace(tzinfo=UTC)) // timedelta(milliseconds=1)


def _tvf_rows(df) -> list[tuple]:
    """(id, window bounds as epoch ms), read by Spark (no Python time-zone conversion on collect)."""
    millis = df.selectExpr("id", "unix_millis(window_start)", "unix_millis(window_end)", "unix_millis(window_time)")
    return sorted(tuple(r) for r in millis.collect())


def _utc(rows):
    """Rows for createDataFrame: times as aware UTC datetimes (a naive one would be read in the process's zone)."""
    return [(*r[:-1], None if r[-1] is None else r[-1].replace(tzinfo=UTC)) for r in rows]


def _core_rows(assigned: Assigned) -> list[tuple]:
    return sorted((row["id"], w.start, w.end, w.time) for row, w in assigned.rows)


@pytest.fixture(scope="module")
def random_input(spark):
    rows = _random_rows(11)
    df = spark.createDataFrame(_utc(rows), "id INT, k STRING, v INT, ts TIMESTAMP")
    df.createOrReplaceTempView("tw_win_random")
    return rows, df


_SQL = {
    "TUMBLE": "TABLE(TUMBLE(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '10' SECONDS, INTERVAL '3' SECONDS))",
    "HOP": "TABLE(HOP(DATA => TABLE tw_win_random, TIMECOL => DESCRIPTOR(ts), SLIDE => INTERVAL '4' SECONDS, "
           "SIZE => INTERVAL '12' SECONDS, OFFSET => INTERVAL '-1' SECOND))",
    "CUMULATE": "CUMULATE(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '3' SECONDS, INTERVAL '9' SECONDS, "
                "INTERVAL '2' SECONDS)",
    "SESSION k": "TABLE(SESSION(TABLE tw_win_random PARTITION BY k, DESCRIPTOR(ts), INTERVAL '5' SECONDS))",
    "SESSION": "TABLE(SESSION(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '3' SECONDS))",
}


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.kind + (" k" if getattr(s, "partition_by", ()) else ""))
def test_random_dataframe_equals_sql_equals_core(spark, random_input, spec) -> None:
    rows, df = random_input
    dicts = [dict(zip(("id", "k", "v", "ts"), r, strict=True)) for r in rows]
    core = assign_windows(spec, dicts, time_column="ts")
    expected = _core_rows(core)
    assert _tvf_rows(window_tvf(df, "ts", spec)) == expected
    call = _SQL[spec.kind + (" k" if isinstance(spec, SessionSpec) and spec.partition_by else "")]
    assert _tvf_rows(timeweave.sql(spark, f"SELECT * FROM {call} AS w")) == expected
    # aggregation: window_aggregate = SQL GROUP BY = the core's evaluate
    keys = ["k"]
    from timeweave.core.windows import AggregateCall, CountStar, Sum

    reference = evaluate(spec, [AggregateCall(CountStar(), None, name="n"), AggregateCall(Sum(), "v", name="s")],
                         dicts, time_column="ts", key_of=lambda r: (r["k"],))
    want = sorted((k[0], row.start, row.end, *row.values) for k, row in reference.rows)
    out = timeweave.window_aggregate(df, {"n": "COUNT(*)", "s": "SUM(v)"}, keys=keys, time="ts", window=spec)
    as_ms = ("k", "unix_millis(window_start)", "unix_millis(window_end)", "n", "s")
    assert sorted(tuple(r) for r in out.selectExpr(*as_ms).collect()) == want
    # (a SESSION aggregated per k is a SESSION partitioned by k: sessions merge per group key)
    grouped_call = _SQL["SESSION k"].replace("'5'", f"'{spec.gap // 1000}'") if isinstance(spec, SessionSpec) else call
    grouped = timeweave.sql(spark, f"SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM {grouped_call} "
                            "GROUP BY window_start, window_end, k")
    assert sorted(tuple(r) for r in grouped.selectExpr(*as_ms).collect()) == want
    # dead letters: both doors = the core's
    core_dead = sorted((d.reason, d.row["id"]) for d in core.dead_letters)
    assert core_dead and all(reason == "NULL event time column ts" for reason, _ in core_dead)
    import json

    _, rejected = timeweave.window_aggregate_with_rejects(df, {"n": "COUNT(*)"}, keys=keys, time="ts", window=spec)
    assert sorted((r["reason"], json.loads(r["row"])["id"]) for r in rejected.collect()) == core_dead
    sql_dead = timeweave.dead_letters(spark, f"SELECT * FROM {call}").collect()
    assert sorted((r["reason"], json.loads(r["row"])["id"]) for r in sql_dead) == core_dead
    assert {r["clause"] for r in sql_dead} == {f"{spec.kind} #1"}


def test_time_zone_and_ntz(spark) -> None:
    """A TIMESTAMP (instant) is windowed on the session zone's wall clock, as Flink's TIMESTAMP_LTZ; window
    bounds are the instants at which that clock shows them.  TIMESTAMP_NTZ is not shifted."""
    rows = _random_rows(5, n=30)
    # around Los Angeles' 2021-03-14 daylight-saving change (02:00 -> 03:00 local)
    shifted = [(i, k, v, None if t is None else t + (datetime(2021, 3, 14, 9, 30) - datetime(1969, 12, 31, 23, 59, 30)) * 1)
               for i, k, v, t in rows]
    shifted += [(100 + i, "a", 1, datetime(2021, 3, 14, 9, 0) + timedelta(minutes=20 * i)) for i in range(9)]
    zone = "America/Los_Angeles"
    spec = tumble("1 hour", offset="15 minutes")
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        df = spark.createDataFrame(_utc(shifted), "id INT, k STRING, v INT, ts TIMESTAMP")
        got = _tvf_rows(window_tvf(df, "ts", spec))
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    dicts = [dict(zip(("id", "k", "v", "ts"), r, strict=True)) for r in shifted]
    shift = TimeShift.of(zone)
    core = assign_windows(spec, dicts, time_column="ts", time_zone=zone)
    want = sorted((r["id"], shift.instant(w.start), shift.instant(w.end), shift.instant(w.time)) for r, w in core.rows)
    assert got == want
    assert {w.start % 3_600_000 for _, w in core.rows} == {900_000}  # local quarter past (the test aligns on the zone)
    # a fixed-offset session zone (which zoneinfo does not name), in two of Spark's spellings: days from local
    # midnight, 16:00 UTC
    for offset in ("+08:00", "UTC+8"):
        spark.conf.set("spark.sql.session.timeZone", offset)
        try:
            starts = {r[1] % 86_400_000 for r in _tvf_rows(window_tvf(df, "ts", tumble("1 day")))}
        finally:
            spark.conf.set("spark.sql.session.timeZone", previous)
        assert starts == {16 * 3_600_000}, offset
    # TIMESTAMP_NTZ: the wall clock is the value itself; window columns are TIMESTAMP_NTZ
    ntz = spark.createDataFrame(shifted, "id INT, k STRING, v INT, ts TIMESTAMP_NTZ")
    out = window_tvf(ntz, "ts", spec)
    assert {out.schema[c].dataType.simpleString() for c in ("window_start", "window_end", "window_time")} == {"timestamp_ntz"}
    plain = assign_windows(spec, dicts, time_column="ts")
    assert sorted((r["id"], _ms(r["window_start"]), _ms(r["window_end"]), _ms(r["window_time"]))
                  for r in out.collect()) == _core_rows(plain)
    assert _core_rows(plain) != sorted(want)


def test_cascade_on_window_time_and_grouping(spark, random_input) -> None:
    _, df = random_input
    inner = ("SELECT window_time AS rowtime, k, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE tw_win_random, "
             "DESCRIPTOR(ts), INTERVAL '5' SECONDS)) GROUP BY window_start, window_end, window_time, k")
    outer = timeweave.sql(spark, f"SELECT window_start, window_end, SUM(n) AS n FROM TABLE(TUMBLE(TABLE ({inner}), "
                          "DESCRIPTOR(rowtime), INTERVAL '15' SECONDS)) GROUP BY window_start, window_end")
    direct = timeweave.window_aggregate(df, {"n": "COUNT(*)"}, time="ts", window=tumble("15 seconds"))
    assert sorted(tuple(r) for r in outer.collect()) == sorted((r["window_start"], r["window_end"], r["n"])
                                                               for r in direct.collect())
    # the DataFrame door cascades the same way (window_aggregate over a TVF's output)
    first = timeweave.window_aggregate(timeweave.tumble(df, "ts", "5 seconds"), {"n": "COUNT(*)"}, keys="k")
    second = timeweave.window_aggregate(
        timeweave.tumble(first.selectExpr("window_time AS rowtime", "n"), "rowtime", "15 seconds"), {"n": "SUM(n)"})
    assert sorted((r["window_start"], r["n"]) for r in second.collect()) == sorted(
        (r["window_start"], r["n"]) for r in direct.collect())
    # ROLLUP, CUBE, COUNT(DISTINCT), FILTER: Spark's GROUP BY over the TVF
    rolled = timeweave.sql(spark, "SELECT window_start, k, COUNT(DISTINCT v) AS d, COUNT(*) FILTER (WHERE v > 4) AS f "
                           "FROM TABLE(HOP(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '5' SECONDS, "
                           "INTERVAL '10' SECONDS)) GROUP BY window_start, window_end, ROLLUP (k)").collect()
    per_key = timeweave.window_aggregate(df, {"d": "COUNT(DISTINCT v)", "f": "COUNT_IF(v > 4)"}, keys="k",
                                         time="ts", window=hop("5 seconds", "10 seconds"))
    everything = timeweave.window_aggregate(df, {"d": "COUNT(DISTINCT v)", "f": "COUNT_IF(v > 4)"}, time="ts",
                                            window=hop("5 seconds", "10 seconds"))
    want = [(r["window_start"], r["k"], r["d"], r["f"]) for r in per_key.collect()]
    want += [(r["window_start"], None, r["d"], r["f"]) for r in everything.collect()]
    assert sorted(map(tuple, rolled), key=str) == sorted(want, key=str)


# -- bad specs: before any job, the argument named ------------------------------------------------------------

_BAD_SQL = [
    ("SELECT * FROM TABLE(TUMBLE(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '0' MINUTES))", "SIZE", "INTERVAL '0'"),
    ("SELECT * FROM TABLE(HOP(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '2' SECONDS, INTERVAL '5' SECONDS))",
     "SIZE", "INTERVAL '5'"),
    ("SELECT * FROM CUMULATE(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '2' MINUTES, INTERVAL '5' MINUTES)",
     "MAX_SIZE", "INTERVAL '5'"),
    ("SELECT * FROM TABLE(SESSION(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '-1' MINUTES))", "GAP", "INTERVAL '-1'"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE tw_win_random, DESCRIPTOR(nope), INTERVAL '1' MINUTES))", "TIMECOL", "nope"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE tw_win_random, DESCRIPTOR(k), INTERVAL '1' MINUTES))", "TIMECOL", "k)"),
    ("SELECT * FROM TABLE(SESSION(TABLE tw_win_random PARTITION BY missing, DESCRIPTOR(ts), INTERVAL '1' MINUTES))",
     "PARTITION BY", "PARTITION BY missing"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE no_such_table, DESCRIPTOR(ts), INTERVAL '1' MINUTES))", "DATA", "no_such_table"),
    ("SELECT n FROM TABLE(TUMBLE(TABLE (SELECT 1 AS n, ts FROM TABLE(HOP(TABLE tw_win_random, DESCRIPTOR(ts), "
     "INTERVAL '3' SECONDS, INTERVAL '5' SECONDS))), DESCRIPTOR(ts), INTERVAL '1' MINUTES))", "SIZE", "INTERVAL '5'"),
]


@pytest.mark.parametrize(("query", "argument", "at"), _BAD_SQL)
def test_bad_sql_specs_fail_before_any_job_with_position(spark, random_input, query, argument, at) -> None:
    with pytest.raises(QuerySyntaxError) as raised:
        _no_job(spark, lambda: timeweave.sql(spark, query))
    assert raised.value.description.split(":")[0].endswith(f"argument {argument}"), str(raised.value)
    assert raised.value.position == query.index(at), str(raised.value)


@pytest.mark.parametrize(("group_by", "found"), [
    ("window_start, window_end, k, v", "found k, v"),  # a key besides the partition's
    ("window_start, window_end", "found none"),  # the partition's key missing
])
def test_session_window_aggregation_groups_by_exactly_its_partition_in_every_sql_door(spark, random_input, group_by,
                                                                                       found) -> None:
    """Flink's rule (its batch and streaming doors): the batch door cannot return rows the streaming door refuses."""
    query = ("SELECT window_start, COUNT(*) AS n FROM TABLE(SESSION(TABLE tw_win_random PARTITION BY k, "
             f"DESCRIPTOR(ts), INTERVAL '5' SECONDS)) GROUP BY {group_by}")
    with pytest.raises(QuerySyntaxError) as raised:
        _no_job(spark, lambda: timeweave.sql(spark, query))
    assert "exactly its PARTITION BY columns (k), " + found in raised.value.description, str(raised.value)
    assert raised.value.position == query.index("GROUP BY"), str(raised.value)
    # the same grouping over the TVF's rows in a subquery is plain SQL over sessions per k: not refused
    timeweave.sql(spark, query.replace("FROM TABLE(SESSION", "FROM (SELECT * FROM TABLE(SESSION")
                  .replace(" GROUP BY", ") s GROUP BY")).collect()


@pytest.mark.parametrize(("call", "argument"), [
    (lambda df: timeweave.tumble(df, "ts", "0 seconds"), "size"),
    (lambda df: timeweave.tumble(df, "ts", "10 seconds", offset="10 seconds"), "offset"),
    (lambda df: timeweave.hop(df, "ts", "2 seconds", "5 seconds"), "size"),
    (lambda df: timeweave.cumulate(df, "ts", "2 seconds", "5 seconds"), "max_size"),
    (lambda df: timeweave.session(df, "ts", "ten seconds"), "gap"),
    (lambda df: timeweave.session(df, "ts", "1 second", partition_by="missing"), "partition_by"),
    (lambda df: timeweave.tumble(df, "nope", "1 second"), "time"),
    (lambda df: timeweave.tumble(df, "k", "1 second"), "time"),
    (lambda df: timeweave.tumble(timeweave.tumble(df, "ts", "1 second"), "ts", "1 second"), "df"),
    (lambda df: timeweave.window_aggregate(df, {"n": "COUNT(*)"}, time="ts", window=session("1 second", "k")), "keys"),
    (lambda df: timeweave.window_aggregate(df, {"n": "COUNT(*)"}), "df"),
    (lambda df: timeweave.window_aggregate(df, {}, time="ts", window=tumble(1000)), "aggregates"),
])
def test_bad_dataframe_specs_fail_before_any_job(spark, random_input, call, argument) -> None:
    _, df = random_input
    with pytest.raises(SpecError) as raised:
        _no_job(spark, lambda: call(df))
    assert raised.value.argument == argument, str(raised.value)


def test_window_time_renders_like_flink(spark) -> None:
    df = spark.createDataFrame([(datetime(2020, 4, 15, 8, 5, tzinfo=UTC),)], "bidtime TIMESTAMP")
    [row] = timeweave.tumble(df, "bidtime", "10 minutes").collect()
    assert normalize(row["window_time"]) == format_ms(_ms(datetime(2020, 4, 15, 8, 10)) - 1) == "2020-04-15 08:09:59.999"


# -- Flink's legacy group windows (GROUP BY TUMBLE(ts, ...)) ---------------------------------------------------

_LEGACY = [
    ("SELECT k, TUMBLE_START(ts, INTERVAL '10' SECOND) AS s, TUMBLE_END(ts, INTERVAL '10' SECOND) AS e, "
     "TUMBLE_ROWTIME(ts, INTERVAL '10' SECOND) AS rt, COUNT(*) AS n, SUM(v) AS sv FROM tw_win_random "
     "GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND)",
     "SELECT k, window_start AS s, window_end AS e, window_time AS rt, COUNT(*) AS n, SUM(v) AS sv FROM "
     "TABLE(TUMBLE(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end, "
     "window_time"),
    ("SELECT r.k, HOP_END(r.ts, INTERVAL '4' SECOND, INTERVAL '12' SECOND) AS e, MAX(r.v) AS mv FROM tw_win_random r "
     "WHERE r.v > 2 GROUP BY HOP(r.ts, INTERVAL '4' SECOND, INTERVAL '12' SECOND), r.k HAVING COUNT(*) > 1",
     "SELECT k, window_end AS e, MAX(v) AS mv FROM TABLE(HOP(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '4' SECOND, "
     "INTERVAL '12' SECOND)) WHERE v > 2 GROUP BY window_start, window_end, k HAVING COUNT(*) > 1"),
    # WHERE before sessionizing: a filtered-out row no longer bridges two sessions
    ("SELECT k, SESSION_START(ts, INTERVAL '5' SECOND) AS s, SESSION_END(ts, INTERVAL '5' SECOND) AS e, COUNT(*) AS n "
     "FROM tw_win_random WHERE v <> 5 GROUP BY k, SESSION(ts, INTERVAL '5' SECOND)",
     "SELECT k, window_start AS s, window_end AS e, COUNT(*) AS n FROM TABLE(SESSION(TABLE (SELECT * FROM "
     "tw_win_random WHERE v <> 5) PARTITION BY k, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY k, window_start, "
     "window_end"),
    # a cascade: a global session over the tumbling windows' time attribute
    ("SELECT SESSION_START(rt, INTERVAL '15' SECOND) AS s, SUM(n) AS n FROM (SELECT k, TUMBLE_ROWTIME(ts, INTERVAL "
     "'10' SECOND) AS rt, COUNT(*) AS n FROM tw_win_random GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND)) "
     "GROUP BY SESSION(rt, INTERVAL '15' SECOND)",
     "SELECT window_start AS s, SUM(n) AS n FROM TABLE(SESSION(TABLE (SELECT k, window_time AS rt, COUNT(*) AS n FROM "
     "TABLE(TUMBLE(TABLE tw_win_random, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end, "
     "window_time), "
     "DESCRIPTOR(rt), INTERVAL '15' SECOND)) GROUP BY window_start, window_end"),
]


@pytest.mark.parametrize(("legacy", "tvf"), _LEGACY, ids=["tumble", "hop-where-having", "session-where", "cascade"])
def test_legacy_group_windows_equal_their_window_tvf_form(spark, random_input, legacy, tvf) -> None:
    got = timeweave.sql(spark, legacy)
    want = timeweave.sql(spark, tvf)
    assert got.schema == want.schema
    rows = sorted(map(tuple, got.collect()), key=str)
    assert rows and rows == sorted(map(tuple, want.collect()), key=str)
    # the NULL-time rows of the group window's input reach the SQL door's dead letters, named by the call
    dead = timeweave.dead_letters(spark, legacy).collect()
    assert dead and all(r["reason"] == "NULL event time column ts" for r in dead)


def test_legacy_group_window_errors_are_positioned_in_the_query_as_written(spark, random_input) -> None:
    query = "SELECT k, TUMBLE_END(ts, INTERVAL '5' SECOND) FROM tw_win_random GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND)"
    with pytest.raises(QuerySyntaxError, match="must repeat the arguments") as info:
        _no_job(spark, lambda: timeweave.sql(spark, query))
    assert info.value.position == query.index("TUMBLE_END")
