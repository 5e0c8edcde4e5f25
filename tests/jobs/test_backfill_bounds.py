"""The backfill job's bounds in the time column's own domain (issue 17): integers for a temporal join over BIGINT
epoch millis, dates over DATE times, timestamps as before.  The CLI in 3 slices gives the one-shot DataFrame
door's rows; a bound of the wrong form is one error line naming ``--start`` / ``--end``, before Spark starts.

Decided here: a DATE time takes ``YYYY-MM-DD`` or a timestamp at exactly 00:00 UTC (what a daily schedule's data
interval renders), any other timestamp is refused (its time of day would move the slice edge); a BIGINT time
takes integers only (``1.5``, ``1e3``, dates and timestamps are refused: the column's unit is the user's)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import timeweave
from timeweave.core.errors import SpecError
from timeweave.jobs import cli
from timeweave.jobs.backfill import backfill_bounds
from timeweave.jobs.run_dir import read_events

BASE_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z in epoch millis
END_MS = BASE_MS + 3 * 3_600_000
CURRENCIES = ("EUR", "USD", "GBP")


def _join(tmp_path: Path, time_type: str, name: str = "job") -> dict[str, Any]:
    return {
        "left": {"path": str(tmp_path / "orders"), "format": "csv", "options": {"header": "true"},
                 "schema": f"order_id STRING, currency STRING, t {time_type}"},
        "right": {"path": str(tmp_path / "rates"), "format": "csv", "options": {"header": "true"},
                  "schema": f"currency STRING, rate DOUBLE, t {time_type}"},
        "versioned": {"key": ["currency"], "time": "t"},
        "join": {"left_time": "t", "how": "left"},
        "output": {"path": str(tmp_path / name)},
    }


def _cli(config: dict[str, Any], tmp_path: Path, start: str, end: str, *extra: str) -> int:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(config))
    return cli.main(["backfill", "--config", str(path), "--start", start, "--end", end, *extra])


# -- refusals: no Spark ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("time_type", "start", "end", "message"), [
    ("BIGINT", "1.5", "10", "argument '--start': expected an integer, e.g. 1706659200000 (the time columns left.t "
                            "(BIGINT) and right.t (BIGINT) are integral), got '1.5': not a whole number"),
    ("BIGINT", "0", "2024-01-31", "argument '--end': expected an integer, e.g. 1706659200000 (the time columns left.t "
                                  "(BIGINT) and right.t (BIGINT) are integral), got '2024-01-31': a date or timestamp "
                                  "does not slice a numeric time: give numbers in the column's own unit"),
    ("INT", "1e3", "2000", "argument '--start': expected an integer"),
    ("DATE", "2024-01-01", "2024-01-31T06:00:00", "argument '--end': expected a date, e.g. 2024-01-31 (or a timestamp "
                                                  "at 00:00 UTC) (the time columns left.t (DATE) and right.t (DATE) are "
                                                  "DATEs), got '2024-01-31T06:00:00': it is not at 00:00 UTC"),
    ("DATE", "20", "30", "argument '--start': expected a date, e.g. 2024-01-31 (or a timestamp at 00:00 UTC) (the time "
                         "columns left.t (DATE) and right.t (DATE) are DATEs), got '20': a number does not slice a DATE time"),
    ("TIMESTAMP", str(BASE_MS), str(END_MS), "argument '--start': expected an ISO timestamp (UTC), e.g. "
                                             "2024-01-31T00:00:00 (the time columns left.t (TIMESTAMP) and right.t "
                                             "(TIMESTAMP) are timestamps), got '1704067200000': a number does not slice"),
    ("BIGINT", "100", "100", "argument '--end': end 100 must be after start 100"),
])
def test_a_bound_of_the_wrong_form_is_one_line_naming_the_argument(tmp_path: Path, capsys, time_type: str, start: str,
                                                                   end: str, message: str) -> None:
    status = tmp_path / "status.json"
    assert _cli(_join(tmp_path, time_type), tmp_path, start, end, "--metrics-file", str(status)) == cli.EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"timeweave-job: error: backfill: {message}")
    assert json.loads(status.read_text())["state"] == "failed"  # the status file says so too


def test_refused_before_spark_starts(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(_join(tmp_path, "BIGINT")))
    code = ("import sys; from timeweave.jobs import cli; "
            f"code = cli.main(['backfill', '--config', {str(path)!r}, '--start', '1.5', '--end', '10']); "
            "print(code, 'pyspark' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ),
                            timeout=120, check=False)
    assert result.stdout.split() == ["2", "False"], result.stderr
    assert "argument '--start'" in result.stderr


def test_each_time_type_takes_its_own_form(tmp_path: Path) -> None:
    assert backfill_bounds(_join(tmp_path, "BIGINT"), "-5", str(END_MS)) == (-5, END_MS)
    assert backfill_bounds(_join(tmp_path, "BIGINT"), 0, 7) == (0, 7)  # in-process: Python values
    assert backfill_bounds(_join(tmp_path, "DECIMAL(20, 3)"), "0.5", "12") == (Decimal("0.5"), Decimal("12"))
    assert backfill_bounds(_join(tmp_path, "DOUBLE"), "1e3", "2.5e3") == (1000.0, 2500.0)
    # a daily data interval (a timestamp at midnight UTC, in any zone) bounds a DATE time
    assert backfill_bounds(_join(tmp_path, "DATE"), "2024-01-01", "2024-02-01T01:00:00+01:00") == (
        date(2024, 1, 1), date(2024, 2, 1))
    assert backfill_bounds(_join(tmp_path, "TIMESTAMP"), "2024-01-01", datetime(2024, 1, 2)) == (
        datetime(2024, 1, 1), datetime(2024, 1, 2))
    # a BIGINT left time with a DOUBLE version time: numbers, not only integers
    mixed = _join(tmp_path, "BIGINT")
    mixed["right"]["schema"] = "currency STRING, rate DOUBLE, t DOUBLE"
    assert backfill_bounds(mixed, "0.5", "10") == (0.5, 10.0)
    # MATCH_RECOGNIZE (and every other operator's backfill) slices on timestamps
    match = {"match_recognize": {"clause": "PARTITION BY s ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+) "
                                           "DEFINE A AS A.p > 0"},
             "input": {"path": "in", "format": "json", "schema": "s STRING, t TIMESTAMP, p DOUBLE"},
             "output": {"path": "out"}}
    with pytest.raises(SpecError, match=r"argument 'start': expected an ISO timestamp .*the MATCH_RECOGNIZE "
                                        r"backfill's bounds are timestamps\), got '0'"):
        backfill_bounds(match, "0", "10")
    # a time column the schema text does not name: the bounds' own form (the run's checks name the column)
    unnamed = _join(tmp_path, "BIGINT")
    unnamed["join"]["left_time"] = "when"
    assert backfill_bounds(unnamed, "0", "10") == (0, 10)
    with pytest.raises(SpecError, match=r"argument 'end': .* is not of the time domain of start"):
        backfill_bounds(unnamed, "0", "2024-01-01")


def test_incomparable_time_columns_are_refused_by_name(tmp_path: Path) -> None:
    config = _join(tmp_path, "BIGINT")
    config["right"]["schema"] = "currency STRING, rate DOUBLE, t DATE"
    with pytest.raises(SpecError, match=r"left time 't' \(integer\) and version time 't' \(date\) cannot be compared"):
        backfill_bounds(config, "0", "10")


# -- the CLI backfill equals the one-shot DataFrame door ---------------------------------------------------------


def _write(tmp_path: Path, orders: list[tuple], rates: list[tuple]) -> None:
    for name, header, rows in (("orders", "order_id,currency,t", orders), ("rates", "currency,rate,t", rates)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "part.csv").write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))


def _one_shot(spark, config: dict[str, Any], start: Any, end: Any) -> list[tuple]:
    orders = spark.read.schema(config["left"]["schema"]).option("header", "true").csv(config["left"]["path"])
    rates = spark.read.schema(config["right"]["schema"]).option("header", "true").csv(config["right"]["path"])
    window = orders.where((orders.t >= start) & (orders.t < end))
    joined = timeweave.temporal_join(window, rates, "t", key="currency", time="t", how="left")
    return sorted(tuple(r) for r in joined.select("order_id", "rate").collect())


def _backfilled(spark, path: Path) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.parquet(str(path)).select("order_id", "rate").collect())


@pytest.mark.spark
def test_cli_backfill_over_bigint_millis_equals_the_one_shot_join(spark, tmp_path: Path, capsys) -> None:
    # 260 orders every 45 s from 10 before the range to past its end; 3 x 30 versions every 400 s
    orders = [(f"o{i}", CURRENCIES[i % 3], BASE_MS + i * 45_000) for i in range(-10, 250)]
    rates = [(c, round(1 + j / 100 + k, 2), BASE_MS - 600_000 + j * 400_000) for k, c in enumerate(CURRENCIES)
             for j in range(30)]
    _write(tmp_path, orders, rates)
    config = _join(tmp_path, "BIGINT")
    run = tmp_path / "run"
    assert _cli(config, tmp_path, str(BASE_MS), str(END_MS), "--slices", "3", "--run-dir", str(run)) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1].removeprefix(cli.METRICS_PREFIX))
    expected = _one_shot(spark, config, BASE_MS, END_MS)
    assert len(expected) == 240 and _backfilled(spark, tmp_path / "job") == expected
    assert metrics["rows_out"] == 240 and metrics["slices"] == 3
    # the run directory records the bounds as numbers, the slices' edges too; the report reads them
    events = list(read_events(run))
    assert events[0]["args"]["start"] == BASE_MS and events[0]["args"]["end"] == END_MS
    slices = [e for e in events if e["event"] == "slice"]
    assert [(s["start"], s["end"]) for s in slices] == [
        (BASE_MS, BASE_MS + 3_600_000), (BASE_MS + 3_600_000, BASE_MS + 7_200_000), (BASE_MS + 7_200_000, END_MS)]
    assert sorted(p.name for p in (tmp_path / "job").glob("slice=*")) == [
        f"slice={BASE_MS}", f"slice={BASE_MS + 3_600_000}", f"slice={BASE_MS + 7_200_000}"]
    from timeweave.jobs.report import build_report

    assert 'id="total-rows_out">240<' in build_report(run)
    # --only re-runs one slice from the state at its start edge, with the same numeric bounds
    shutil.rmtree(tmp_path / "job" / f"slice={BASE_MS + 3_600_000}")
    assert _cli(config, tmp_path, str(BASE_MS), str(END_MS), "--slices", "3", "--only", "1") == 0
    capsys.readouterr()
    assert _backfilled(spark, tmp_path / "job") == expected


@pytest.mark.spark
def test_cli_backfill_over_dates_equals_the_one_shot_join(spark, tmp_path: Path, capsys) -> None:
    day0 = date(2024, 1, 1)
    orders = [(f"o{i}", CURRENCIES[i % 3], day0 + timedelta(days=i // 2)) for i in range(-10, 200)]
    rates = [(c, round(1 + j / 100 + k, 2), day0 + timedelta(days=7 * j - 3)) for k, c in enumerate(CURRENCIES)
             for j in range(16)]
    _write(tmp_path, orders, rates)
    config = _join(tmp_path, "DATE")
    # the end as a daily data interval renders it: midnight UTC
    assert _cli(config, tmp_path, "2024-01-01", "2024-04-01T00:00:00+00:00", "--slices", "3") == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1].removeprefix(cli.METRICS_PREFIX))
    expected = _one_shot(spark, config, day0, date(2024, 4, 1))
    assert len(expected) == 182 and _backfilled(spark, tmp_path / "job") == expected
    assert [s["label"] for s in metrics["per_slice"]] == ["2024-01-01", "2024-01-31", "2024-03-01"]
