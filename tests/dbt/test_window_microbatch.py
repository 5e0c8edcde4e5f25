"""Window TVFs in dbt ``microbatch`` models: N hourly batches give the rows of one full (table) run.

The project's ``random_win_*`` models (dbt_macros/integration_tests/models/random) aggregate HOP, CUMULATE and
SESSION windows of random bids, once as a table and once as an hourly microbatch model.  The bids are out of
order on disk, have sub-millisecond times, rows exactly on batch edges and one gap before them, NULL times,
and sessions that run over one and two batch edges (the batch's read must reach back past the gap, several
times).  Late rows: the microbatch models are first built without them, then the late rows arrive and only the
batches the README names are re-run (from the batch holding the earliest late row to the one holding the
last window a late row belongs to); the result must equal the table built over everything.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from tests.helpers.dbt_run import run_dbt_project
from timeweave.core.windows import cumulate, hop, session
from timeweave.core.windows.batch import assign_windows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

T0 = datetime(2024, 1, 1)
HOURS = 7
BIDS_DDL = "bid_id INT, bidtime TIMESTAMP, price DECIMAL(10,2), item STRING"
SPECS = {"hop": hop("5 minutes", "10 minutes"), "cumulate": cumulate("10 minutes", "30 minutes"),
         "session": session("2 minutes", "item")}
COLUMNS = "window_start, window_end, window_time, item, cnt, total, top"


def _at(seconds: float) -> datetime:
    return T0 + timedelta(microseconds=round(seconds * 1_000_000))


def random_bids(seed: int) -> tuple[list[tuple], list[tuple]]:
    """(on-time rows, late rows), each (bid_id, bidtime, price, item); bidtime may be NULL."""
    rng = random.Random(seed)
    times: list[tuple[float | None, str]] = []
    times += [(rng.uniform(0, 6 * 3600), rng.choice("ABCD")) for _ in range(260)]
    for hour in range(1, 6):  # batch edges: on it, 1 µs / 0.5 ms / 1 ms before it, one gap (2 min) before it
        edge = hour * 3600.0
        times += [(edge, "E"), (edge - 1e-6, "A"), (edge - 0.0005, "F"), (edge - 0.001, "C"), (edge - 120, "E"),
                  (edge - 120, "F")]
    times += [(5400 + 90 * i, "X") for i in range(47)]            # 01:30 .. 02:39: a session over the 02:00 edge
    times += [(11400 + 100 * i, "Y") for i in range(79)]          # 03:10 .. 05:20: over two edges
    times += [(10800.0, "G"), (11010.0, "G")]                     # 03:00 and 03:03:30: two sessions ...
    bridge = (10905.0, "G")                                       # ... that a late row at 03:01:45 bridges
    times += [(None, "A"), (None, "D"), (None, "E")]              # dead letters: in no window
    rows = [(i, None if t is None else _at(t), Decimal(rng.randint(1, 99_999)) / 100, item)
            for i, (t, item) in enumerate(times)]
    # late rows between 01:00 and 04:00, so that re-running their batches is a real subset of the 7
    late = [r for r in rows if r[1] is not None and _at(3600) <= r[1] < _at(4 * 3600) and rng.random() < 0.15]
    late.append((len(rows), _at(bridge[0]), Decimal("7.77"), bridge[1]))
    late_ids = {r[0] for r in late}
    on_time = [r for r in rows if r[0] not in late_ids]
    rng.shuffle(on_time)
    rng.shuffle(late)
    return on_time, late


def rerun_range(rows: list[tuple], late: list[tuple]) -> tuple[datetime, datetime]:
    """The README's rule: the batches from the one holding the earliest late row to the one holding the last
    window (by window_time) that any late row belongs to, computed over the complete input."""
    late_ids = {r[0] for r in late}
    dicts = [{"bid_id": i, "bidtime": t, "item": item} for i, t, _, item in rows]
    last = max(w.end - 1 for spec in SPECS.values()
               for row, w in assign_windows(spec, dicts, time_column="bidtime").rows if row["bid_id"] in late_ids)
    first = min(r[1] for r in late).replace(minute=0, second=0, microsecond=0)
    end = (datetime.fromtimestamp(last / 1000, UTC).replace(tzinfo=None)).replace(minute=0, second=0, microsecond=0)
    return first, end + timedelta(hours=1)


def window_rows(spark, schema: str, model: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT {COLUMNS} FROM {schema}.{model}").collect())


def dbt_run(spark_home, tmp_path, name: str, models: list[str], *args: str):
    schema, result = run_dbt_project(spark_home, tmp_path / name, "run", "--select", *models,
                                     "--vars", json.dumps({"timeweave_random_win": True}), *args)
    assert result.success, result.exception or [(r.node.name, r.message) for r in result.result]
    return schema, result


def _bounds(start: datetime, end: datetime) -> list[str]:
    return ["--event-time-start", start.isoformat(), "--event-time-end", end.isoformat()]


def test_microbatches_equal_the_full_run_with_late_rows(spark, spark_home, tmp_path) -> None:
    on_time, late = random_bids(23)
    spark.sql("CREATE DATABASE IF NOT EXISTS timeweave_random_win")
    spark.createDataFrame(on_time, BIDS_DDL).repartition(3).write.mode("overwrite").saveAsTable(
        "timeweave_random_win.bids")
    microbatch = [f"random_win_{f}_microbatch" for f in SPECS]
    # every batch from scratch: the first run builds the table from its first batch on
    schema, first = dbt_run(spark_home, tmp_path, "batches", microbatch, "--full-refresh",
                            *_bounds(T0, T0 + timedelta(hours=HOURS)))
    batches = {r.node.name: len(r.batch_results.successful) for r in first.result}
    assert batches == {m: HOURS for m in microbatch}, batches

    # the late rows arrive; only the batches their windows end in are built again
    spark.createDataFrame(late, BIDS_DDL).repartition(2).write.mode("append").saveAsTable("timeweave_random_win.bids")
    rerun_from, rerun_until = rerun_range(on_time + late, late)
    assert T0 < rerun_from and rerun_until < T0 + timedelta(hours=HOURS)  # a real subset of the batches
    # (the table models in the same invocation: event-time bounds apply to microbatch models only)
    _, second = dbt_run(spark_home, tmp_path, "late", [*microbatch, *(f"random_win_{f}" for f in SPECS)],
                        *_bounds(rerun_from, rerun_until))
    hours = (rerun_until - rerun_from) // timedelta(hours=1)
    rerun = {r.node.name: len(r.batch_results.successful) for r in second.result if r.node.name in microbatch}
    assert rerun == {m: hours for m in microbatch}, rerun

    for function in SPECS:
        expected = window_rows(spark, schema, f"random_win_{function}")
        assert len(expected) > 100
        assert window_rows(spark, schema, f"random_win_{function}_microbatch") == expected, function
    sessions = window_rows(spark, schema, "random_win_session")
    # the sessions crossing batch edges, and the two the late row bridged, are whole
    spans = {(s[3], s[0].strftime("%H:%M:%S"), s[1].strftime("%H:%M:%S")) for s in sessions}
    assert {("X", "01:30:00", "02:41:00"), ("Y", "03:10:00", "05:22:00"), ("G", "03:00:00", "03:05:30")} <= spans
