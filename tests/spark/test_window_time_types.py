"""The streaming and backfill window doors over a TIMESTAMP_NTZ event time and in a fixed-offset session time zone
(``+08:00``): the DataFrame door's rows, late rows included, for window aggregation, Top-N / deduplication and
window joins.

Both kinds of event time run under ``spark.sql.session.timeZone = +08:00`` (restored after each test): a TIMESTAMP
(Flink's TIMESTAMP_LTZ) has its windows on that zone's wall clock, a TIMESTAMP_NTZ (Flink's TIMESTAMP) on its own
clock, the zone ignored.  The rows are :func:`tests.helpers.window_random.random_rows` stretched 8 times (about 16
hours, late rows hours behind) so that they cross the window clock's midnight (18:00 -> the next day): 1-day TUMBLE
windows, 3-hour HOP slides (not a divisor of the 8-hour offset) and CUMULATE days all depend on the zone.

* Streaming: three micro-batches (two restarts from the checkpoint), the last run flushed: main = the DataFrame
  door over the on-time (row, window) pairs, late = the rows the core's late rule names (the engine-free
  :func:`~tests.helpers.window_random.reference_stream` in the same zone), with the window columns, watermark and
  missed windows of the event time's type (NTZ stays NTZ), dead letter = the NULL-time rows.
* Backfill in 3 slices from a start inside the rows = the DataFrame door over the rows in ``[start, end)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

import timeweave
from tests.helpers.window_random import AGGREGATES, SCHEMA, START, random_rows, reference_stream
from timeweave.core.errors import SpecError
from timeweave.core.windows import TimeShift, cumulate, hop, session, tumble
from timeweave.jobs.config import load_job_config
from timeweave.jobs.streaming import run_streaming
from timeweave.spark.window_backfill import backfill_window_aggregate
from timeweave.spark.window_join_backfill import backfill_window_join
from timeweave.spark.window_join_streaming import window_join_stream
from timeweave.spark.window_rank_backfill import backfill_window_deduplicate, backfill_window_top_n
from timeweave.spark.windows import window_aggregate, window_tvf

ZONE = "+08:00"
STRETCH = 8
DELAY = timedelta(minutes=5 * STRETCH)
#: The rows start at 18:00 on the windows' clock: the NTZ wall clock, or +08:00's (10:00 UTC).
BASE = {"ntz": datetime(2024, 3, 1, 18, 0), "ltz": datetime(2024, 3, 1, 10, 0)}
SCHEMAS = {"ntz": SCHEMA.replace("ts TIMESTAMP", "ts TIMESTAMP_NTZ"), "ltz": SCHEMA}
TYPES = {"ntz": T.TimestampNTZType(), "ltz": T.TimestampType()}
_EPOCH = datetime(1970, 1, 1)
MISSED_ON = ["id", "window_start", "window_end"]


@contextmanager
def session_time_zone(spark, zone: str) -> Iterator[None]:
    """The shared session's time zone set to ``zone`` for the block, restored after it whatever happens."""
    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)


def stretched_rows(seed: int, kind: str, n: int = 60) -> list[dict[str, Any]]:
    """Random rows (late and NULL-time ones included) over ~16 hours from 18:00 on the windows' clock; naive
    times: UTC instants (``ltz``) or wall-clock times (``ntz``).  No two rows share a time (µs apart)."""
    rows = random_rows(seed, n)
    for i, r in enumerate(rows):
        if r["ts"] is not None:
            r["ts"] = BASE[kind] + (r["ts"] - START) * STRETCH + timedelta(microseconds=i)
    return rows


def _write_json(path: Path, rows: list[dict[str, Any]], kind: str) -> None:
    """JSON lines; a TIMESTAMP as an instant (with its UTC offset: the session zone does not read it), an NTZ as
    its wall-clock text."""
    path.parent.mkdir(parents=True, exist_ok=True)

    def value(v: Any) -> Any:
        if isinstance(v, datetime):
            return (v.replace(tzinfo=UTC) if kind == "ltz" else v).isoformat()
        return float(v) if isinstance(v, Decimal) else v

    path.write_text("".join(json.dumps({k: value(v) for k, v in r.items()}) + "\n" for r in rows))


def _micros(column: Column, data_type: T.DataType) -> Column:
    """A TIMESTAMP's µs since the epoch, an NTZ's µs since 1970-01-01 00:00 on its clock (no zone either way)."""
    if isinstance(data_type, T.TimestampNTZType):
        return F.timestamp_diff("MICROSECOND", F.lit("1970-01-01 00:00:00").cast("timestamp_ntz"), column)
    return F.unix_micros(column)


def _from_micros(column: Column, data_type: T.DataType) -> Column:
    if isinstance(data_type, T.TimestampNTZType):
        return F.timestamp_add("MICROSECOND", column, F.lit("1970-01-01 00:00:00").cast("timestamp_ntz"))
    return F.timestamp_micros(column)


def _comparable(df: DataFrame) -> list[tuple]:
    """The rows, sorted, every timestamp as µs (collect would read a TIMESTAMP in the Python process's zone)."""
    columns = [_micros(F.col(f"`{f.name}`"), f.dataType).alias(f.name)
               if isinstance(f.dataType, (T.TimestampType, T.TimestampNTZType)) else F.col(f"`{f.name}`")
               for f in df.schema.fields]
    return sorted((tuple(r) for r in df.select(*columns).collect()), key=str)


def _types(df: DataFrame) -> list[tuple[str, T.DataType]]:
    return [(f.name, f.dataType) for f in df.schema.fields]


def _instant_us(kind: str):
    """A core window bound (ms on the windows' clock) as the output's µs: +08:00's instant, or the NTZ clock's."""
    shift = TimeShift.of(ZONE) if kind == "ltz" else None
    return lambda ms: (ms if shift is None else shift.instant(ms)) * 1000


def _check_late(spark, path: str, late: list, kind: str, columns: list[str]) -> None:
    """The late output = the reference's late rows: reason, watermark and missed windows of the event time's type."""
    time_type = TYPES[kind]
    out = spark.read.parquet(path)
    assert out.columns == [*columns, "reason", "watermark", "missed_windows"]
    assert out.schema["watermark"].dataType == time_type
    assert out.schema["missed_windows"].dataType.elementType["window_start"].dataType == time_type
    instant = _instant_us(kind)
    got = out.select(F.col("row").alias("id") if "row" in columns else "id", "reason",
                     _micros(F.col("watermark"), time_type).alias("watermark"),
                     F.transform("missed_windows", lambda w: F.array(_micros(w["window_start"], time_type),
                                                                      _micros(w["window_end"], time_type))).alias("missed"))
    found = {(json.loads(r["id"])["id"] if "row" in columns else r["id"]): (r["reason"], r["watermark"],
                                                                          [tuple(m) for m in r["missed"]])
             for r in got.collect()}
    assert late, "the random rows must have late ones"
    # the watermark is the event time's clock as it is (an instant, or the NTZ clock); the windows are shifted
    assert found == {r.row["id"]: (r.reason, r.watermark * 1000, [(instant(w.start), instant(w.end)) for w in r.missed])
                     for r in late}


def _missed(spark, late: list, kind: str) -> DataFrame:
    """(id, window_start, window_end) of every window a late row missed, of the event time's type (a CUMULATE's
    windows share their start)."""
    instant = _instant_us(kind)
    pairs = [(r.row["id"], instant(w.start), instant(w.end)) for r in late for w in r.missed] or [("", 0, 0)]
    return spark.createDataFrame(pairs, "id STRING, ws BIGINT, we BIGINT").select(
        "id", _from_micros(F.col("ws"), TYPES[kind]).alias("window_start"),
        _from_micros(F.col("we"), TYPES[kind]).alias("window_end"))


def _inside(df: DataFrame, kind: str, start: datetime, end: datetime, time: str = "ts") -> DataFrame:
    """The rows of ``[start, end)``: a TIMESTAMP's instants (naive = UTC), an NTZ's wall clock read as UTC."""
    us = [int((at - _EPOCH) / timedelta(microseconds=1)) for at in (start, end)]
    t = _micros(F.col(time), TYPES[kind])
    return df.where((t >= us[0]) & (t < us[1]))


def _stream_three_runs(spark, config: dict[str, Any], runs: list[dict[str, list]], tmp_path: Path, kind: str) -> None:
    """Each run's files then a streaming run (the first starts, the next restart from the checkpoint); the last
    run is flushed."""
    for i, files in enumerate(runs):
        for side, rows in files.items():
            _write_json(tmp_path / side / f"{i}.json", rows, kind)
        run_streaming(config, spark, flush=i == len(runs) - 1)


def _source(name: str, tmp_path: Path, kind: str, delay: bool = True) -> dict[str, Any]:
    source = {"path": str(tmp_path / name), "format": "json", "schema": SCHEMAS[kind]}
    return {**source, "watermark_delay": f"{DELAY.seconds} seconds"} if delay else source


def _dead_ids(spark, path: str) -> list[str]:
    return sorted(json.loads(r["row"])["id"] for r in spark.read.parquet(path).collect())


# -- window aggregation ------------------------------------------------------------------------------------------
AGGREGATE_WINDOWS = {
    "tumble_day": {"function": "tumble", "time": "ts", "size": "1 day"},
    "hop": {"function": "hop", "time": "ts", "slide": "3 hours", "size": "9 hours"},
    "session": {"tvf": f"SESSION(TABLE input PARTITION BY k, DESCRIPTOR(ts), INTERVAL '{4 * STRETCH}' MINUTES)"},
}


@pytest.mark.spark
@pytest.mark.slow  # three streaming runs and a 3-slice backfill
@pytest.mark.parametrize("window_id", list(AGGREGATE_WINDOWS))
@pytest.mark.parametrize("kind", ["ntz", "ltz"])
def test_window_aggregation_streamed_and_backfilled_equals_the_dataframe_door(
        spark, tmp_path: Path, kind: str, window_id: str) -> None:
    rows = stretched_rows(81, kind)
    runs = [rows[:25], rows[25:45], rows[45:]]
    config = {"window": {**AGGREGATE_WINDOWS[window_id], "keys": ["k"], "aggregates": AGGREGATES},
              "input": _source("in", tmp_path, kind), "output": {"path": str(tmp_path / "out")},
              "checkpoint": str(tmp_path / "chk"), "trigger": {"available_now": True}}
    spec = load_job_config(config).spec
    with session_time_zone(spark, ZONE):
        _stream_three_runs(spark, config, [{"in": run} for run in runs], tmp_path, kind)
        results, late, dead = reference_stream(runs, spec, ("k",), DELAY, time_zone=ZONE if kind == "ltz" else None)
        source = spark.read.schema(SCHEMAS[kind]).json(str(tmp_path / "in"))
        door = window_aggregate(source, AGGREGATES, keys=["k"], time="ts", window=spec)
        main = spark.read.parquet(config["output"]["path"])
        assert _types(main) == _types(door) and door.schema["window_start"].dataType == TYPES[kind]
        _check_late(spark, f"{config['output']['path']}_late", late, kind, ["id", "k", "ts", "v", "p", "flag"])
        assert _dead_ids(spark, f"{config['output']['path']}_dead_letter") == sorted(r["id"] for r in dead)
        # main = the DataFrame door over the rows, each late row left out of the windows it missed
        missed = _missed(spark, late, kind)
        if window_id == "session":  # a late session row merged with nothing: dropped whole
            kept = window_aggregate(source.join(missed.select("id"), "id", "left_anti"), AGGREGATES, keys=["k"],
                                    time="ts", window=spec)
        else:
            windowed = window_tvf(source, "ts", spec).join(missed, MISSED_ON, "left_anti")
            kept = window_aggregate(windowed, AGGREGATES, keys=["k"])
        expected = _comparable(kept.select(*main.columns))
        assert len(expected) == len(results) > 3 and _comparable(main) == expected

        # the backfill in 3 slices, from a start inside the rows (on the event time's clock)
        start, end = BASE[kind] + timedelta(hours=2), BASE[kind] + timedelta(days=3)
        metrics = backfill_window_aggregate(source, AGGREGATES, keys="k", time="ts", window=spec, start=start, end=end,
                                            slices=3, output=str(tmp_path / "backfill"))
        got = spark.read.parquet(str(tmp_path / "backfill")).drop("slice")
        expected = window_aggregate(_inside(source, kind, start, end), AGGREGATES, keys=["k"], time="ts", window=spec)
        assert _types(got) == _types(expected) and _comparable(got) == _comparable(expected)
        assert metrics["rows_out"] == len(_comparable(expected)) > 3
    if window_id == "tumble_day":  # the windows are the days of the windows' clock: one ends at its midnight
        ends = {r[1] for r in _comparable(main.select("window_start", "window_end"))}
        midnight = int((BASE["ntz"].replace(hour=0) + timedelta(days=1) - _EPOCH) / timedelta(microseconds=1))
        assert midnight - (8 * 3_600_000_000 if kind == "ltz" else 0) in ends


# -- window Top-N and deduplication ------------------------------------------------------------------------------
RANKS = {  # the job section, the spec, the DataFrame door's arguments
    "top_n_hop": ({"function": "hop", "time": "ts", "slide": "3 hours", "size": "9 hours", "keys": ["k"],
                   "order_by": ["p DESC", "id"], "n": 2}, hop("3 hours", "9 hours")),
    "dedup_cumulate": ({"function": "cumulate", "time": "ts", "step": "3 hours", "max_size": "1 day", "keys": "k",
                        "keep": "last"}, cumulate("3 hours", "1 day")),
}


def _rank_door(df: DataFrame, op_id: str, **kwargs) -> DataFrame:
    if op_id.startswith("top_n"):
        return timeweave.window_top_n(df, 2, order_by=["p DESC", "id"], partition_by="k", **kwargs)
    return timeweave.window_deduplicate(df, **{"time": "ts", "keys": "k", "keep": "last", **kwargs})


@pytest.mark.spark
@pytest.mark.slow  # three streaming runs and a 3-slice backfill
@pytest.mark.parametrize("op_id", list(RANKS))
@pytest.mark.parametrize("kind", ["ntz", "ltz"])
def test_top_n_and_deduplication_streamed_and_backfilled_equal_the_dataframe_door(
        spark, tmp_path: Path, kind: str, op_id: str) -> None:
    section, spec = RANKS[op_id]
    name = "window_top_n" if op_id.startswith("top_n") else "window_deduplicate"
    rows = stretched_rows(82, kind)
    runs = [rows[:25], rows[25:45], rows[45:]]
    config = {name: section, "input": _source("in", tmp_path, kind), "output": {"path": str(tmp_path / "out")},
              "checkpoint": str(tmp_path / "chk")}
    with session_time_zone(spark, ZONE):
        _stream_three_runs(spark, config, [{"in": run} for run in runs], tmp_path, kind)
        _, late, dead = reference_stream(runs, spec, ("k",), DELAY, time_zone=ZONE if kind == "ltz" else None)
        _check_late(spark, f"{config['output']['path']}_late", late, kind, ["id", "k", "ts", "v", "p", "flag"])
        assert _dead_ids(spark, f"{config['output']['path']}_dead_letter") == sorted(r["id"] for r in dead)
        source = spark.read.schema(SCHEMAS[kind]).json(str(tmp_path / "in"))
        main = spark.read.parquet(config["output"]["path"])
        assert _types(main) == _types(_rank_door(source, op_id, time="ts", window=spec))
        on_time = window_tvf(source, "ts", spec).join(_missed(spark, late, kind), MISSED_ON, "left_anti")
        expected = _comparable(_rank_door(on_time, op_id).select(*main.columns))
        assert len(expected) > 5 and _comparable(main) == expected

        start, end = BASE[kind] + timedelta(hours=2), BASE[kind] + timedelta(days=3)
        backfill = backfill_window_top_n if op_id.startswith("top_n") else backfill_window_deduplicate
        arguments = ({"n": 2, "order_by": ["p DESC", "id"], "partition_by": "k"} if op_id.startswith("top_n")
                     else {"keys": "k", "keep": "last"})
        backfill(source, **arguments, time="ts", window=spec, start=start, end=end, slices=3,
                 output=str(tmp_path / "backfill"))
        got = spark.read.parquet(str(tmp_path / "backfill")).drop("slice")
        expected = _rank_door(_inside(source, kind, start, end), op_id, time="ts", window=spec)
        assert _types(got) == _types(expected) and _comparable(got) == _comparable(expected)


# -- window join -------------------------------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.slow  # three streaming runs and a 3-slice backfill
@pytest.mark.parametrize("kind", ["ntz", "ltz"])
def test_window_join_streamed_and_backfilled_equals_the_dataframe_door(spark, tmp_path: Path, kind: str) -> None:
    spec = cumulate("3 hours", "1 day")
    sides = {"left": stretched_rows(83, kind, n=40), "right": stretched_rows(84, kind, n=40)}
    for side, rows in sides.items():
        for r in rows:
            r["id"] = f"{side[0]}{r['id']}"
    cuts = [(0, 15), (15, 28), (28, 40)]
    config = {"window_join": {"function": "cumulate", "time": "ts", "step": "3 hours", "max_size": "1 day", "on": "k",
                              "how": "full", "left_prefix": "L_", "right_prefix": "R_"},
              "left": _source("left", tmp_path, kind), "right": _source("right", tmp_path, kind, delay=False),
              "output": {"path": str(tmp_path / "out")}, "checkpoint": str(tmp_path / "chk")}
    runs = [{side: rows[a:b] for side, rows in sides.items()} for a, b in cuts]
    with session_time_zone(spark, ZONE):
        _stream_three_runs(spark, config, runs, tmp_path, kind)
        # one watermark over both inputs: the late rule of their union, run by run
        _, late, dead = reference_stream([run["left"] + run["right"] for run in runs], spec, ("k",), DELAY,
                                         time_zone=ZONE if kind == "ltz" else None)
        _check_late(spark, f"{tmp_path / 'out'}_late", late, kind, ["side", "row"])
        assert _dead_ids(spark, f"{tmp_path / 'out'}_dead_letter") == sorted(r["id"] for r in dead)
        tables = {side: spark.read.schema(SCHEMAS[kind]).json(str(tmp_path / side)) for side in sides}
        missed = _missed(spark, late, kind)
        on_time = {side: window_tvf(df, "ts", spec).join(missed, MISSED_ON, "left_anti")
                   for side, df in tables.items()}
        expected = timeweave.window_join(on_time["left"], on_time["right"], on="k", how="full", left_prefix="L_",
                                         right_prefix="R_")
        main = spark.read.parquet(str(tmp_path / "out"))
        door = timeweave.window_join(tables["left"], tables["right"], on="k", how="full", time="ts", window=spec,
                                     left_prefix="L_", right_prefix="R_")
        assert _types(main) == _types(door) and door.schema["window_start"].dataType == TYPES[kind]
        expected_rows = _comparable(expected.select(*main.columns))
        assert len(expected_rows) > 10 and _comparable(main) == expected_rows

        start, end = BASE[kind] + timedelta(hours=2), BASE[kind] + timedelta(days=3)
        backfill_window_join(tables["left"], tables["right"], on="k", how="full", time="ts", window=spec,
                             left_prefix="L_", right_prefix="R_", start=start, end=end, slices=3,
                             output=str(tmp_path / "backfill"))
        got = spark.read.parquet(str(tmp_path / "backfill")).drop("slice")
        expected = timeweave.window_join(*(_inside(tables[s], kind, start, end) for s in ("left", "right")), on="k",
                                         how="full", time="ts", window=spec, left_prefix="L_", right_prefix="R_")
        assert _types(got) == _types(expected) and _comparable(got) == _comparable(expected)


@pytest.mark.spark
def test_a_join_of_an_ntz_and_a_timestamp_event_time_is_refused_before_any_spark_job(spark) -> None:
    from tests.helpers.spark_jobs import no_spark_job

    left, right = spark.createDataFrame([], SCHEMAS["ntz"]), spark.createDataFrame([], SCHEMA)
    with pytest.raises(SpecError, match=r"window join stream: argument 'time': the left event time 'ts' is a "
                                        r"TIMESTAMP_NTZ and the right 'ts' a TIMESTAMP"):
        no_spark_job(spark, lambda: window_join_stream(left, right, on="k", time="ts", window=tumble("1 hour"),
                                                       watermark="1 minute", left_prefix="L_", right_prefix="R_"))


@pytest.mark.spark
@pytest.mark.parametrize("spelled", ["UTC+8", "GMT+08:00", "+08:00"])
def test_fixed_offset_spellings_give_the_same_streaming_windows_as_the_dataframe_door(spark, spelled: str) -> None:
    """The session zone in Spark's other spellings of +08:00: the door's window columns and the streaming query's
    bound zone agree (no Spark job runs for the check)."""
    from timeweave.spark.window_streaming import bind_window_query

    with session_time_zone(spark, spelled):
        df = spark.createDataFrame([], SCHEMA)
        query = bind_window_query(df, {"n": "COUNT(*)"}, "k", "ts", session("1 hour", "k"), "test")
        assert query.zone == "+08:00" and query.time_type == T.TimestampType()
        ntz = bind_window_query(spark.createDataFrame([], SCHEMAS["ntz"]), {"n": "COUNT(*)"}, "k", "ts",
                                tumble("1 day"), "test")
        assert ntz.zone is None and ntz.schema["window_start"].dataType == T.TimestampNTZType()
        at = spark.createDataFrame([(datetime(2024, 3, 1, 15, 59, tzinfo=UTC),)], "ts TIMESTAMP")
        [row] = window_tvf(at, "ts", tumble("1 day")).select(F.unix_micros("window_start").alias("s")).collect()
        assert row["s"] == int((datetime(2024, 2, 29, 16) - _EPOCH) / timedelta(microseconds=1))  # +08:00's midnight
