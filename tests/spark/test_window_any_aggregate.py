"""Streaming and backfill window aggregation with any Spark aggregate, expressions, a pandas UDAF and GROUPING SETS.

The core operator keeps such a query's windows' rows (one windowing and one late rule for both ways of
computing, :class:`timeweave.spark.window_streaming.WindowQuery`); Spark aggregates a fired window's rows with the
DataFrame door.  Proved here against the DataFrame door itself:

* the streaming job, restarted from its checkpoint and flushed, over random rows with out-of-order, late and
  NULL-time rows = the DataFrame door over the same rows with each late row left out of the windows it missed
  (the late rows named by the engine-free reference, :func:`tests.helpers.window_random.reference_stream`);
* the backfill in 1 and 3 slices = the DataFrame door over the rows in range (a batch: every row counts);
* errors name the aggregate Spark cannot analyse, before any Spark job.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.window_random import SCHEMA, START, random_rows, reference_stream
from timeweave.core.errors import SpecError
from timeweave.core.windows import cumulate, hop, session, tumble
from timeweave.core.windows.grouping import GroupingSets
from timeweave.jobs.config import ConfigError, WindowJobConfig
from timeweave.jobs.streaming import run_streaming
from timeweave.spark import window_streaming as W
from timeweave.spark.window_backfill import backfill_window_aggregate
from timeweave.spark.windows import window_aggregate, window_tvf

#: none of these but COUNT(*) is an accumulator the core computes: the windows keep their rows
AGGREGATES = {"cnt": "COUNT(*)", "sd": "STDDEV_POP(v)", "twice": "SUM(p * 2) FILTER (WHERE v > 2)",
              "ids": "ARRAY_JOIN(ARRAY_SORT(COLLECT_LIST(id)), ',')"}
#: pandas UDAFs beside built-ins (Spark refuses the mix, INVALID_PANDAS_UDF_PLACEMENT: the door joins them back)
UDAF = {"cnt": "COUNT(*)", "med": "tw_median(v)", "sd": "STDDEV_POP(v)", "med_p": "tw_median(p)"}
FUNCTIONS = {"tw_median": "tests.helpers.window_udafs:median"}
DELAY = timedelta(minutes=5)
_EPOCH = datetime(1970, 1, 1)


def _canonical(rows) -> list[tuple]:
    """Rows comparable across doors: floats to 9 significant digits (STDDEV over a different row order), NaN equal."""
    def value(v: Any) -> Any:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else float(f"{v:.9g}")
        return v
    return sorted((tuple(value(v) for v in r) for r in rows), key=repr)


def _write_json(path: Path, rows: list[dict[str, Any]], extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)

    def value(v: Any) -> Any:
        return v.isoformat() if isinstance(v, datetime) else float(v) if isinstance(v, Decimal) else v

    path.write_text("".join(json.dumps({k: value(v) for k, v in r.items()}) + "\n" for r in rows) + extra)


CASES = {  # window section, the door's spec, grouping (None: keys k), aggregates
    "hop-rollup": ({"function": "hop", "slide": "5 minutes", "size": "15 minutes", "rollup": ["k", "flag"]},
                   hop("5 minutes", "15 minutes"), GroupingSets.of(rollup=["k", "flag"]), AGGREGATES),
    "cumulate-sets": ({"function": "cumulate", "step": "5 minutes", "max_size": "20 minutes",
                       "grouping_sets": [["k"], []]}, cumulate("5 minutes", "20 minutes"),
                      GroupingSets.of([["k"], []]), AGGREGATES),
    "cumulate-ntz": ({"function": "cumulate", "step": "5 minutes", "max_size": "20 minutes", "keys": ["k"]},
                     cumulate("5 minutes", "20 minutes"), None, AGGREGATES),
    "session-udaf": ({"tvf": "SESSION(TABLE input PARTITION BY k, DESCRIPTOR(ts), INTERVAL '4' MINUTES)",
                      "keys": ["k"]}, session("4 minutes", "k"), None, UDAF),
}


def _schema(case_id: str) -> str:
    """The input's DDL: a TIMESTAMP_NTZ event time for the *-ntz cases (its own clock; no zone enters)."""
    return SCHEMA.replace("ts TIMESTAMP", "ts TIMESTAMP_NTZ") if case_id.endswith("-ntz") else SCHEMA


def _door(df, case_id: str, **kwargs):
    _, _, grouping, aggregates = CASES[case_id]
    if grouping is not None:
        return window_aggregate(df, aggregates, grouping_sets=grouping, **kwargs)
    return window_aggregate(df, aggregates, keys=["k"], **kwargs)


@pytest.mark.spark
@pytest.mark.slow  # three streaming runs each
@pytest.mark.parametrize("case_id", list(CASES))
def test_the_streaming_job_keeping_rows_equals_the_dataframe_door(spark, tmp_path: Path, case_id: str) -> None:
    zone = spark.conf.get("spark.sql.session.timeZone")
    if case_id.endswith("-ntz"):  # an NTZ event time ignores the session zone: a shifted one must change nothing
        spark.conf.set("spark.sql.session.timeZone", "+08:00")
    try:
        _streaming_case(spark, tmp_path, case_id)
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def _streaming_case(spark, tmp_path: Path, case_id: str) -> None:
    window, spec, grouping, aggregates = CASES[case_id]
    window = {**window, "aggregates": aggregates, "functions": FUNCTIONS}
    schema = _schema(case_id)
    if "tvf" not in window:
        window["time"] = "ts"
    config = {
        "window": window,
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": schema,
                  "watermark_delay": f"{DELAY.seconds} seconds"},
        "output": {"path": str(tmp_path / "out")}, "checkpoint": str(tmp_path / "chk"),
        "trigger": {"available_now": True},
    }
    assert WindowJobConfig.from_dict(config).grouping == grouping
    rows = random_rows(8 if case_id.startswith("session") else 7)
    runs = [rows[:25], rows[25:45], rows[45:]]
    metrics = []
    for i, run in enumerate(runs):
        _write_json(tmp_path / "in" / f"{i}.json", run)
        metrics.append(run_streaming(config, spark, flush=i == len(runs) - 1))  # restarts from the checkpoint

    # Which rows are late for which windows is the core's rule, independent of the aggregates (the reference
    # keys by k: HOP lateness does not depend on the key, sessions are per k in both).
    _, late, dead = reference_stream(runs, spec, ("k",), DELAY)
    assert late, "the random rows must have late ones"
    source = spark.read.schema(schema).json(str(tmp_path / "in"))
    kind = "TIMESTAMP_NTZ" if case_id.endswith("-ntz") else "TIMESTAMP"
    missed = spark.createDataFrame(  # by start and end: a CUMULATE period's windows share their start
        [(r.row["id"], _EPOCH + timedelta(milliseconds=w.start), _EPOCH + timedelta(milliseconds=w.end))
         for r in late for w in r.missed], f"id STRING, window_start {kind}, window_end {kind}")
    if case_id.startswith("session"):  # a late session row merged with nothing: dropped whole
        expected = _door(source.join(missed.select("id"), "id", "left_anti"), case_id, time="ts", window=spec)
    else:
        windowed = window_tvf(source, "ts", spec).join(missed, ["id", "window_start", "window_end"], "left_anti")
        expected = _door(windowed, case_id)
    main = spark.read.parquet(config["output"]["path"])
    assert [(f.name, f.dataType) for f in main.schema] == [(f.name, f.dataType) for f in expected.schema]
    got = _canonical(main.collect())
    assert len(got) > 10 and got == _canonical(expected.select(*main.columns).collect())
    late_out = spark.read.parquet(f"{config['output']['path']}_late").collect()
    assert sorted(r["id"] for r in late_out) == sorted(r.row["id"] for r in late)
    dead_out = spark.read.parquet(f"{config['output']['path']}_dead_letter").collect()
    assert sorted(json.loads(r["row"])["id"] for r in dead_out) == sorted(r["id"] for r in dead)
    assert sum(m["rows_out"] for m in metrics) == len(got)
    assert sum(m["late"] for m in metrics) == len(late) and sum(m["rows_in"] for m in metrics) == len(rows)


@pytest.mark.spark
@pytest.mark.parametrize("case_id", list(CASES))
def test_the_backfill_keeping_rows_equals_the_dataframe_door(spark, tmp_path: Path, case_id: str) -> None:
    from tests.helpers.window_udafs import median

    _, spec, grouping, aggregates = CASES[case_id]
    spark.udf.register("tw_median", median)
    rows = random_rows(21)
    begin, end = START - timedelta(hours=1), START + timedelta(hours=4)
    df = spark.createDataFrame(rows, _schema(case_id))
    inside = df.where(f"ts >= '{begin}' AND ts < '{end}'")
    expected = _canonical(_door(inside, case_id, time="ts", window=spec).collect())
    assert len(expected) > 20
    keys = {} if grouping is not None else {"keys": "k"}
    for slices in (1, 3):
        out = tmp_path / f"out{slices}"
        metrics = backfill_window_aggregate(df, aggregates, time="ts", window=spec, start=begin, end=end,
                                            slices=slices, output=str(out), grouping_sets=grouping, **keys)
        assert _canonical(spark.read.parquet(str(out)).drop("slice").collect()) == expected, slices
        assert metrics["rows_out"] == len(expected) and metrics["dead_letter"] == 2


def test_errors_name_the_aggregate_and_come_before_any_spark_job(spark) -> None:
    context = spark.sparkContext
    context.setJobGroup("tw-window-any-checks", "errors before any job")
    df = spark.createDataFrame([], SCHEMA)
    stream = dict(time="ts", window=hop("1 minute", "2 minutes"), watermark="1 minute")
    with pytest.raises(SpecError, match=r"argument 'aggregates': bad = SUM\(nope \* 2\): Spark cannot analyse it: "
                                        r".*nope"):
        W.window_aggregate_stream(df, {"n": "COUNT(*)", "bad": "SUM(nope * 2)"}, keys="k", **stream)
    with pytest.raises(SpecError, match=r"argument 'aggregates': bad = SUM\(v\) \+: Spark cannot analyse it"):
        W.window_aggregate_stream(df, {"bad": "SUM(v) +"}, keys="k", **stream)
    with pytest.raises(SpecError, match=r"argument 'grouping_sets': a SESSION window aggregation merges sessions per "
                                        r"key"):
        W.window_aggregate_stream(df, {"n": "COUNT(*)"}, grouping_sets=[["k"], []], time="ts",
                                  window=session("1 minute", "k"), watermark="1 minute")
    with pytest.raises(SpecError, match=r"argument 'keys': give the key columns once"):
        W.window_aggregate_stream(df, {"n": "COUNT(*)"}, keys="k", grouping_sets=[["k"]], **stream)
    with pytest.raises(SpecError, match=r"argument 'keys': column 'nope' not found"):
        W.window_aggregate_stream(df, {"n": "COUNT(*)"}, grouping_sets=[["k", "nope"], []], **stream)
    assert context.statusTracker().getJobIdsForGroup("tw-window-any-checks") == []
    context.setJobGroup("", "")
    with pytest.raises(ConfigError, match=r"window.functions.m: expected 'package.module:attr'"):
        WindowJobConfig.from_dict({"window": {"function": "tumble", "time": "ts", "size": "1 minute", "keys": ["k"],
                                              "aggregates": {"m": "m(v)"}, "functions": {"m": "median"}},
                                   "input": {"path": "in", "format": "json", "schema": SCHEMA},
                                   "output": {"path": "out"}})
    with pytest.raises(ConfigError, match=r"window.rollup: give the key columns once"):
        WindowJobConfig.from_dict({"window": {"function": "tumble", "time": "ts", "size": "1 minute", "keys": ["k"],
                                              "rollup": ["k"], "aggregates": {"n": "COUNT(*)"}},
                                   "input": {"path": "in", "format": "json", "schema": SCHEMA},
                                   "output": {"path": "out"}})


def test_the_dataframe_door_takes_grouping_sets_and_grouping_functions(spark) -> None:
    rows = random_rows(3)
    df = spark.createDataFrame(rows, SCHEMA)
    spec = tumble("30 minutes")
    got = window_aggregate(df, {"n": "COUNT(*)", "g": "GROUPING(k)"}, grouping_sets=[["k"], []], time="ts",
                           window=spec)
    by_window: dict = {}
    for r in got.collect():
        by_window.setdefault(r["window_start"], []).append(r)
    for window_rows in by_window.values():
        total = [r for r in window_rows if r["g"] == 1]
        assert len(total) == 1 and total[0]["k"] is None
        assert total[0]["n"] == sum(r["n"] for r in window_rows if r["g"] == 0)


def test_pandas_udafs_beside_built_ins_are_joined_back_by_group(spark) -> None:
    from tests.helpers.window_udafs import median

    spark.udf.register("tw_median", median)
    df = spark.createDataFrame(random_rows(5), SCHEMA)
    spec = hop("10 minutes", "20 minutes")
    mixed = window_aggregate(df, UDAF, keys="k", time="ts", window=spec)
    assert mixed.columns == ["window_start", "window_end", "window_time", "k", *UDAF]
    plain = window_aggregate(df, {n: UDAF[n] for n in ("cnt", "sd")}, keys="k", time="ts", window=spec)
    udafs = window_aggregate(df, {n: UDAF[n] for n in ("med", "med_p")}, keys="k", time="ts", window=spec)
    groups = ["window_start", "window_end", "window_time", "k"]
    expected = {tuple(r[g] for g in groups): dict(r.asDict()) for r in plain.collect()}
    for r in udafs.collect():
        expected[tuple(r[g] for g in groups)].update(r.asDict())
    assert len(expected) > 5 and any(key[3] is None for key in expected)  # NULL keys join back too
    assert _canonical(mixed.collect()) == _canonical(tuple(e[c] for c in mixed.columns) for e in expected.values())
    with pytest.raises(SpecError, match=r"pandas UDAFs \['med', 'med_p'\] beside other aggregates need plain keys"):
        window_aggregate(df, UDAF, grouping_sets=[["k"], []], time="ts", window=spec)
