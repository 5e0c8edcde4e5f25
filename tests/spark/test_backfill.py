"""The temporal join's sliced backfill (timeweave.spark.temporal_join_backfill) beyond the every-door tests: what a slice's probe
reads from a version (a predicate on a column the output does not carry), and the metrics the writing
jobs count (exact, also for empty and non-contiguous slices re-run with ``only``)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

import timeweave
from tests.spark.test_temporal_join_doors import T0, random_inputs, rejected_count
from timeweave.core.errors import SpecError
from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
from timeweave.core.time import slices_of
from timeweave.spark.temporal_join_backfill import run_slices

pytestmark = pytest.mark.spark

LEFT_DDL = "order_id STRING, currency STRING, order_time TIMESTAMP, amount DOUBLE"
RIGHT_DDL = "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP, seq BIGINT"
VERSIONED = dict(key="currency", time="update_time", format="changelog", op="op", sequence="seq")


def _spec(predicate: str | None, how: str = "left") -> TemporalJoinSpec:
    versioned = VersionedTableSpec("currency", "update_time", "changelog", op="op", sequence="seq")
    return TemporalJoinSpec(versioned, "order_time", how=how, right_columns=["rate"], predicate=predicate)


def _inside(t, start, end) -> bool:
    return t is not None and start <= t < end


@pytest.mark.parametrize("slices_per_job", [None, 1])
def test_backfill_predicate_on_a_column_outside_the_output_equals_the_dataframe_door(spark, tmp_path, slices_per_job) -> None:
    """The run's versions carry only what the probe reads; a predicate may read any right column (here `seq`)."""
    left, right = random_inputs(5, n_left=120, n_right=60)
    orders, rates = spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL)
    predicate = "r.seq % 3 <> 0 AND l.amount < 80"
    start, end = T0, T0 + timedelta(hours=10)
    out = tmp_path / "out"

    metrics = run_slices(
        orders, rates, _spec(predicate), start, end, 4, str(out), str(tmp_path / "dead"), str(tmp_path / "state"),
        slices_per_job=slices_per_job,
    )

    door = timeweave.temporal_join(orders, rates, "order_time", how="left", right_columns=["rate"], predicate=predicate, **VERSIONED)
    expected = sorted(tuple(r) for r in door.select("order_id", "rate").collect())
    got = sorted(tuple(r) for r in spark.read.parquet(str(out)).select("order_id", "rate").collect())
    assert got == expected and any(rate is not None for _, rate in got) and any(rate is None for _, rate in got)
    rejected = rejected_count(left, right)  # a LEFT join: its left rows with a NULL key or time are output
    assert metrics == {
        "late": 0, "slices": 4, "watermark": end.isoformat(),
        "rows_in_left": sum(1 for row in left if row[2] is None or _inside(row[2], start, end)),
        "rows_in_right": sum(1 for row in right if _inside(row[3], start, end)),
        "rows_out": len(got),
        "dead_letter": rejected,
    }
    assert metrics["dead_letter"] == spark.read.parquet(str(tmp_path / "dead")).count()


@pytest.mark.parametrize("slices_per_job", [None, 1])
def test_backfill_metrics_of_empty_and_non_contiguous_slices(spark, tmp_path, slices_per_job) -> None:
    """Slices without left rows count 0 (their observations still complete); `only` counts just its slices."""
    left, right = random_inputs(6, n_left=80, n_right=40)
    orders, rates = spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL)
    start, end = T0 - timedelta(hours=10), T0 + timedelta(hours=10)  # slices 0 and 1 precede every row
    paths = [str(tmp_path / name) for name in ("out", "dead", "state")]
    full = run_slices(orders, rates, _spec(None), start, end, 4, *paths, slices_per_job=slices_per_job)
    before = sorted(tuple(r) for r in spark.read.parquet(paths[0]).select("order_id", "rate").collect())

    again = run_slices(orders, rates, _spec(None), start, end, 4, *paths, only=[1, 3], slices_per_job=slices_per_job)

    third = T0 + timedelta(hours=5)
    # A LEFT join outputs every left row: NULL keys in their slice, NULL times under slice=none, which
    # every run rewrites (so a run of `only` slices counts them too).
    untimed = sum(1 for row in left if row[2] is None)
    assert untimed and any(row[1] is None for row in left)
    assert full["rows_in_left"] == full["rows_out"] == len(left)
    assert before == sorted(tuple(r) for r in spark.read.parquet(paths[0]).select("order_id", "rate").collect())
    assert len(before) == len(left)
    assert again["slices"] == 2
    assert again["rows_in_left"] == again["rows_out"] == sum(1 for row in left if _inside(row[2], third, end)) + untimed
    assert again["rows_in_right"] == sum(1 for row in right if _inside(row[3], third, end))
    assert sorted(tuple(r) for r in spark.read.parquet(paths[0]).select("order_id", "rate").collect()) == before


@pytest.mark.parametrize("slices_per_job", [2, None])
def test_backfill_several_slices_per_job_equals_one_job_per_slice(spark, tmp_path, slices_per_job) -> None:
    """`slices_per_job`: the same rows, the same slice directories, metrics and edge states as one job per slice."""
    left, right = random_inputs(7, n_left=150, n_right=60)
    orders, rates = spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL)
    start, end = T0 - timedelta(hours=2), T0 + timedelta(hours=11)  # slice 0 precedes every row: no output there
    one = [str(tmp_path / "one" / name) for name in ("out", "dead", "state")]
    grouped = [str(tmp_path / "grouped" / name) for name in ("out", "dead", "state")]

    expected = run_slices(orders, rates, _spec(None), start, end, 7, *one, slices_per_job=1)
    metrics = run_slices(orders, rates, _spec(None), start, end, 7, *grouped, slices_per_job=slices_per_job)

    def rows(path: str) -> list[tuple]:
        return sorted(tuple(r) for r in spark.read.parquet(path).select("slice", "order_id", "rate").collect())

    assert metrics == expected
    assert rows(grouped[0]) == rows(one[0]) and len(rows(one[0])) == expected["rows_out"] > 0
    with_rows = {f"slice={label}" for label, _, _ in rows(one[0])}  # one job per slice also writes empty ones
    assert {p.name for p in (tmp_path / "grouped" / "out").glob("slice=*")} == with_rows
    states = [sorted(map(str, spark.read.parquet(paths[2]).collect())) for paths in (one, grouped)]
    assert states[0] == states[1]


def test_backfill_rerun_inside_a_group_replaces_exactly_its_slices(spark, tmp_path) -> None:
    """Re-running slices 2 and 3 (one group) rebuilds their rows, drops their stale files, leaves the others."""
    left, right = random_inputs(8, n_left=150, n_right=60)
    orders, rates = spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL)
    start, end = T0, T0 + timedelta(hours=10)
    paths = [str(tmp_path / name) for name in ("out", "dead", "state")]
    run_slices(orders, rates, _spec(None), start, end, 5, *paths, slices_per_job=5)
    before = sorted(tuple(r) for r in spark.read.parquet(paths[0]).select("slice", "order_id", "rate").collect())
    dirs = sorted(d for d in (tmp_path / "out").glob("slice=*") if d.name != "slice=none")  # none: NULL-time orders
    assert len(dirs) == 5
    stale = dirs[2] / "part-stale.parquet"
    orders.limit(1).toPandas().to_parquet(stale)  # a leftover file a re-run must not keep
    untouched = {p: p.stat().st_mtime_ns for d in (dirs[0], dirs[1], dirs[4]) for p in d.iterdir()}

    again = run_slices(orders, rates, _spec(None), start, end, 5, *paths, only=[2, 3], slices_per_job=5)

    assert again["slices"] == 2 and not stale.exists()
    assert sorted(tuple(r) for r in spark.read.parquet(paths[0]).select("slice", "order_id", "rate").collect()) == before
    assert {p: p.stat().st_mtime_ns for p in untouched} == untouched


def test_backfill_slices_per_job_errors_name_the_argument(spark, tmp_path) -> None:
    left, right = random_inputs(9, n_left=10, n_right=10)
    orders, rates = spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL)
    paths = [str(tmp_path / name) for name in ("out", "dead", "state")]
    with pytest.raises(SpecError, match=r"slices_per_job.*must be >= 1, got 0"):
        run_slices(orders, rates, _spec(None), T0, T0 + timedelta(hours=1), 2, *paths, slices_per_job=0)
    clash = orders.withColumnRenamed("amount", "slice")
    with pytest.raises(SpecError, match=r"slices_per_job.*column 'slice'"):
        run_slices(clash, rates, _spec(None), T0, T0 + timedelta(hours=1), 2, *paths, slices_per_job=2)


def test_backfill_dead_letters_without_null_times_keep_the_null_keys_of_their_slice(spark, tmp_path) -> None:
    """Left input without NULL times (the dead-letter job then tests the key columns only): each NULL-key
    row is a dead letter of the slice its time falls in (an INNER join: a LEFT join outputs them unmatched)."""
    left, right = random_inputs(9, n_left=80, n_right=40)
    left = [row for row in left if row[2] is not None]
    orders, rates = spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL)
    start, end = T0, T0 + timedelta(hours=10)
    dead = tmp_path / "dead"

    metrics = run_slices(orders, rates, _spec(None, how="inner"), start, end, 4, str(tmp_path / "out"), str(dead), str(tmp_path / "state"))

    plan = slices_of(start, end, 4)
    expected = sorted((row[0], s.label) for row in left if row[1] is None for s in plan if _inside(row[2], s.start, s.end))
    rows = spark.read.parquet(str(dead)).where("side = 'left'").selectExpr("get_json_object(row, '$.order_id')", "slice")
    assert expected and sorted(tuple(r) for r in rows.collect()) == expected
    assert metrics["dead_letter"] == spark.read.parquet(str(dead)).count()


def _clean(rows: list[tuple], key: int, time: int) -> list[tuple]:
    return [row for row in rows if row[key] is not None and row[time] is not None]


def test_backfill_clean_input_writes_no_dead_letters_and_clears_the_slices_of_a_rerun(spark, tmp_path) -> None:
    """Without a row to reject no dead-letter job runs, yet a re-run still removes the dead letters its slices
    held before (input corrected since), and the metrics still count both sides."""
    left, right = random_inputs(10, n_left=90, n_right=40)
    start, end = T0, T0 + timedelta(hours=10)
    paths = [str(tmp_path / name) for name in ("out", "dead", "state")]
    dirty = run_slices(spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL), _spec(None),
                       start, end, 3, *paths)
    assert dirty["dead_letter"] > 0 and list((tmp_path / "dead").glob("slice=*"))

    left, right = _clean(left, 1, 2), _clean(right, 1, 3)
    metrics = run_slices(spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL), _spec(None),
                         start, end, 3, *paths)

    assert metrics["dead_letter"] == 0 and not list((tmp_path / "dead").glob("slice=*"))
    assert metrics["rows_in_left"] == metrics["rows_out"] == sum(1 for row in left if _inside(row[2], start, end))
    assert metrics["rows_in_right"] == sum(1 for row in right if _inside(row[3], start, end))


def test_backfill_dead_letters_of_the_right_side_alone(spark, tmp_path) -> None:
    """A clean left side and a right side with NULL keys and times: the dead-letter job reads the right side
    only, and every rejected right row lands in its slice (NULL time: ``none``)."""
    left, right = random_inputs(11, n_left=60, n_right=80)
    left = _clean(left, 1, 2)
    start, end = T0, T0 + timedelta(hours=10)
    dead = tmp_path / "dead"

    metrics = run_slices(spark.createDataFrame(left, LEFT_DDL), spark.createDataFrame(right, RIGHT_DDL), _spec(None),
                         start, end, 4, str(tmp_path / "out"), str(dead), str(tmp_path / "state"))

    plan = slices_of(start, end, 4)

    def slice_of(t) -> str:
        return "none" if t is None else next(s.label for s in plan if _inside(t, s.start, s.end))

    expected = sorted((row[4], slice_of(row[3])) for row in right if row[1] is None or row[3] is None)
    got = spark.read.parquet(str(dead)).selectExpr("side", "cast(get_json_object(row, '$.seq') AS BIGINT)", "slice")
    assert expected and sorted(tuple(r)[1:] for r in got.collect()) == expected
    assert {r[0] for r in got.collect()} == {"right"} and metrics["dead_letter"] == len(expected)


def test_parquet_rows_counts_data_files_from_their_footers(spark, tmp_path) -> None:
    """What the backfill reports as rows written: every data file's footer count; missing directories hold
    none, and _SUCCESS / .crc files are not data."""
    from timeweave.spark.hadoop import HadoopFiles

    spark.range(7).repartition(3).write.parquet(str(tmp_path / "a"))
    spark.range(5).write.parquet(str(tmp_path / "b"))
    assert (tmp_path / "a" / "_SUCCESS").exists()

    files = HadoopFiles(spark)
    assert files.parquet_rows([str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "missing")]) == 12
    assert files.parquet_rows([]) == 0


def _parquet(spark, rows: list[tuple], ddl: str, path):
    spark.createDataFrame(rows, ddl).write.parquet(str(path))
    return spark.read.parquet(str(path))


@pytest.mark.parametrize(("how", "nulls", "counted"), [("left", False, False), ("left", True, True), ("inner", False, True)])
def test_backfill_left_rows_on_parquet_counted_by_a_job_only_when_footers_cannot_tell(
    spark, tmp_path, monkeypatch, how, nulls, counted
) -> None:
    """A LEFT join gives every left row with a key and a time one output row: on a parquet left input whose
    footers count no NULL in those columns no job counts the left rows (rows in = rows written).  With a
    NULL there, or for an INNER join, the count job runs.  The metrics are exact and equal to those of the
    same rows given in memory either way."""
    from timeweave.spark import temporal_join_backfill as backfill  # its private count job

    left, right = random_inputs(12, n_left=90, n_right=40)
    left = left if nulls else _clean(left, 1, 2)
    orders = _parquet(spark, left, LEFT_DDL, tmp_path / "orders")
    rates = spark.createDataFrame(right, RIGHT_DDL)
    spec = TemporalJoinSpec(VersionedTableSpec("currency", "update_time", "changelog", op="op", sequence="seq"),
                            "order_time", how=how, right_columns=["rate"])
    start, end = T0 + timedelta(hours=1), T0 + timedelta(hours=9)  # some left rows fall outside the run
    calls: list[int] = []
    count_left = backfill._count_left
    monkeypatch.setattr(backfill, "_count_left", lambda *a: calls.append(1) or count_left(*a))

    metrics = run_slices(orders, rates, spec, start, end, 3, *(str(tmp_path / n) for n in ("out", "dead", "state")))

    assert calls == ([1] if counted else [])
    in_memory = run_slices(spark.createDataFrame(left, LEFT_DDL), rates, spec, start, end, 3,
                           *(str(tmp_path / "mem" / n) for n in ("out", "dead", "state")))
    assert metrics == in_memory
    # A LEFT join counts (and outputs, under slice=none) its NULL-time rows too: one row out per row in.
    untimed = sum(1 for row in left if row[2] is None) if how == "left" else 0
    assert metrics["rows_in_left"] == sum(1 for row in left if _inside(row[2], start, end)) + untimed
    assert (untimed > 0) == nulls and (metrics["rows_in_left"] == metrics["rows_out"]) == (how == "left")
    rows = [sorted(map(tuple, spark.read.parquet(str(p)).select("order_id", "rate").collect()))
            for p in (tmp_path / "out", tmp_path / "mem" / "out")]
    assert rows[0] == rows[1] and rows[0]


def test_parquet_scan_files_only_for_an_unfiltered_scan_of_stored_columns(spark, tmp_path) -> None:
    """Footers speak for the DataFrame only when it reads the files' rows as they are."""
    from timeweave.spark.host.backfill import parquet_scan_files as _parquet_scan_files

    df = spark.sql("SELECT CAST(id AS STRING) AS k, id AS v, id % 2 AS part FROM range(6)")
    df.coalesce(1).write.partitionBy("part").parquet(str(tmp_path / "p"))
    scan = spark.read.parquet(str(tmp_path / "p"))

    assert len(_parquet_scan_files(scan, ["k", "v"])) == 2
    assert _parquet_scan_files(scan.select("v", "k"), ["k"]) == _parquet_scan_files(scan, ["k"])
    assert _parquet_scan_files(scan, ["part"]) is None  # a partition column: not in the files
    assert _parquet_scan_files(scan.where("v > 2"), ["k"]) is None
    assert _parquet_scan_files(scan.selectExpr("v AS k"), ["k"]) is None
    assert _parquet_scan_files(scan.selectExpr("upper(k) AS k"), ["k"]) is None
    assert _parquet_scan_files(df, ["k"]) is None


def test_parquet_null_counts_from_footers(spark, tmp_path) -> None:
    """NULLs per column summed over files and row groups; a file without the column cannot tell (None)."""
    from timeweave.spark.hadoop import HadoopFiles

    spark.sql("SELECT IF(id % 3 = 0, NULL, id) AS a, TIMESTAMP'2020-01-01 00:00:00' AS t FROM range(9)") \
        .repartition(2).write.parquet(str(tmp_path / "a"))
    files = spark.read.parquet(str(tmp_path / "a")).inputFiles()

    hadoop = HadoopFiles(spark)
    assert len(files) == 2 and hadoop.parquet_null_counts(files, ["a", "t"]) == {"a": 3, "t": 0}
    assert hadoop.parquet_null_counts(files, ["a", "missing"]) is None


def test_backfill_edge_without_state_after_a_rerun_is_empty_not_stale(spark, tmp_path) -> None:
    """An edge where no key has state exists as an empty directory: a re-run after the versioned input lost its
    early rows empties the edges it held state at, and a later run reading such an edge starts from nothing."""
    left, right = random_inputs(13, n_left=60, n_right=40)
    left, right = _clean(left, 1, 2), _clean(right, 1, 3)
    start, end = T0, T0 + timedelta(hours=10)
    paths = [str(tmp_path / name) for name in ("out", "dead", "state")]
    orders = spark.createDataFrame(left, LEFT_DDL)
    run_slices(orders, spark.createDataFrame(right, RIGHT_DDL), _spec(None), start, end, 4, *paths)
    first_edge = tmp_path / "state" / f"edge={slices_of(start, end, 4)[1].label}"
    assert list(first_edge.glob("*.parquet"))

    later = [row for row in right if row[3] >= T0 + timedelta(hours=5)]
    rates = spark.createDataFrame(later, RIGHT_DDL)
    run_slices(orders, rates, _spec(None), start, end, 4, *paths)
    assert first_edge.is_dir() and not list(first_edge.glob("*.parquet"))
    run_slices(orders, rates, _spec(None), start, end, 4, *paths, only=[1])

    door = timeweave.temporal_join(orders, rates, "order_time", how="left", right_columns=["rate"], **VERSIONED)
    expected = sorted(tuple(r) for r in door.select("order_id", "rate").collect())
    assert sorted(tuple(r) for r in spark.read.parquet(paths[0]).select("order_id", "rate").collect()) == expected


# Issue 20: the ends of TIMESTAMP and the calendar switch.  Times are given as text and cast by Spark (proleptic
# Gregorian); the run's bounds as Python datetimes, as the job passes them.
CALENDAR_LEFT = [  # (order_id, currency, order_time)
    ("y1", "GBP", "0001-01-01 00:00:00"),  # TIMESTAMP's first value, the run's start
    ("y1b", "GBP", "0001-01-01 00:00:00.000001"),
    ("j4", "USD", "1582-10-04 23:59:59.999999"),  # the Julian calendar's last day
    ("gap", "USD", "1582-10-10 12:00:00"),  # a day the hybrid calendar has not got
    ("g15", "USD", "1582-10-15 00:00:00"),  # the Gregorian calendar's first day
    ("e99", "USD", "1899-12-31 23:00:00"),
    ("pre", "EUR", "1969-12-31 23:59:59.999999"),  # the epoch's last negative µs
    ("ep", "EUR", "1970-01-01 00:00:00"),
    ("late", "EUR", "9999-12-31 23:59:59.999998"),
    ("last", "GBP", "9999-12-31 23:59:59.999999"),  # TIMESTAMP's last value: outside any [start, end)
]
CALENDAR_RIGHT = [  # (op, currency, rate, update_time)
    ("+I", "GBP", 2.0, "0001-01-01 00:00:00"),
    ("+I", "USD", 0.25, "1582-10-04 00:00:00"),
    ("+U", "USD", 0.5, "1582-10-12 00:00:00"),
    ("+U", "USD", 0.75, "1899-12-31 23:30:00"),
    ("+I", "EUR", 1.5, "1969-12-31 23:59:59.999999"),
    ("+U", "EUR", 3.0, "9999-12-31 23:59:59.999998"),
]
_FIRST, _LAST = datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59, 999999)
_JULIAN_END, _EPOCH = datetime(1582, 10, 15), datetime(1970, 1, 1)


@pytest.mark.parametrize(("end", "slices", "time_type", "slices_per_job"), [
    (_LAST, 3, "timestamp", None),  # the whole range
    (_JULIAN_END + (_JULIAN_END - _FIRST), 2, "timestamp", 1),  # an edge at 1582-10-15, one job per slice
    (_EPOCH + 2 * (_EPOCH - _FIRST), 3, "timestamp_ntz", None),  # an edge at 1970-01-01
], ids=["whole-range", "edge-1582-10-15", "edge-1970-ntz"])
def test_backfill_from_year_1_across_the_calendar_switch_equals_the_dataframe_door(
    spark, tmp_path, end, slices, time_type, slices_per_job
) -> None:
    """The union of the slices over [0001-01-01, end) equals the DataFrame door's rows with a time in the range.

    The bounds were Spark literals of Python datetimes (``F.lit``), which Spark rebased from the Julian
    calendar: the start 0001-01-01 became 0001-01-03 and the order at the start belonged to no slice.
    Inputs are parquet (the footer shortcut counts the left rows; dates before 1582 round-trip), and a
    re-run of the later slices reads the state at a middle edge back from parquet.
    """
    from pyspark.sql import functions as F

    plan = slices_of(_FIRST, end, slices)
    assert plan[0].label == "0001-01-01T00-00-00"
    assert bool({s.start for s in plan[1:]} & {_JULIAN_END, _EPOCH}) == (end != _LAST)
    left = spark.createDataFrame(CALENDAR_LEFT, "order_id STRING, currency STRING, t STRING").select(
        "order_id", "currency", F.col("t").cast(time_type).alias("order_time"))
    right = spark.createDataFrame(CALENDAR_RIGHT, "op STRING, currency STRING, rate DOUBLE, t STRING").select(
        "op", "currency", "rate", F.col("t").cast(time_type).alias("update_time"))
    left.write.parquet(str(tmp_path / "orders"))
    right.write.parquet(str(tmp_path / "rates"))
    orders, rates = spark.read.parquet(str(tmp_path / "orders")), spark.read.parquet(str(tmp_path / "rates"))
    spec = TemporalJoinSpec(VersionedTableSpec("currency", "update_time", "changelog", op="op"), "order_time",
                            how="left", right_columns=["rate"])
    paths = [str(tmp_path / name) for name in ("out", "dead", "state")]

    metrics = run_slices(orders, rates, spec, _FIRST, end, slices, *paths, slices_per_job=slices_per_job)

    def rows(df) -> list[tuple]:  # µs, not datetimes: PySpark cannot collect a year-1 TIMESTAMP as a datetime
        return sorted(tuple(r) for r in df.select("order_id", F.unix_micros(F.col("order_time").cast("timestamp")),
                                                    "rate").collect())

    door = timeweave.temporal_join(orders, rates, "order_time", how="left", key="currency", time="update_time",
                                 format="changelog", op="op", right_columns=["rate"])
    end_us = (end - _EPOCH) // timedelta(microseconds=1)
    expected = [r for r in rows(door) if r[1] < end_us]
    got = rows(spark.read.parquet(paths[0]))
    assert got == expected
    by_id = {r[0]: r for r in got}
    assert by_id["y1"][1:] == (-62_135_596_800_000_000, 2.0)  # TIMESTAMP's first µs, matched in its own µs
    assert (by_id["j4"][2], by_id["gap"][2], by_id["g15"][2], by_id["e99"][2]) == (0.25, 0.25, 0.5, 0.5)
    assert (by_id["pre"][1:], by_id["ep"][2]) == ((-1, 1.5), 1.5)
    assert "last" not in by_id and ("late" in by_id) == (end == _LAST)
    assert (metrics["rows_in_left"], metrics["rows_out"], metrics["dead_letter"]) == (len(expected),) * 2 + (0,)
    assert metrics["rows_in_right"] == sum(1 for *_, t in CALENDAR_RIGHT if t < str(end))

    # The later slices again, from the state at the first middle edge (written and read back as parquet).
    again = run_slices(orders, rates, spec, _FIRST, end, slices, *paths, only=range(1, slices),
                       slices_per_job=slices_per_job)
    assert rows(spark.read.parquet(paths[0])) == expected
    assert again["rows_out"] == sum(1 for r in expected if r[1] >= (plan[1].start - _EPOCH) // timedelta(microseconds=1))
