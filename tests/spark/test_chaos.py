"""kill -9 during the streaming jobs and backfills, in CI: a kill or two per job type, nothing duplicated or lost.

The harness is ``tests/helpers/chaos.py`` (``bench/chaos.py`` runs it with 20+ kills per job type): every job is
a ``python -m timeweave.jobs`` subprocess killed with SIGKILL on its whole process group at a random point, then
restarted to completion; its main, late and dead-letter outputs must equal the DataFrame door's rows (the
door is given the input minus the rows the data makes late; a stream's late output must hold exactly those).
Fixed seed; no uninterrupted reference run here (bench/chaos.py adds it) to stay within the CI budget, and the
door is computed on the suite's SparkSession (bench/chaos.py starts a JVM for it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.chaos import JOBS, ChaosSettings, Diff, compare, format_table, read_rows, run_chaos

pytestmark = pytest.mark.slow

#: The temporal-join and MATCH_RECOGNIZE job types (the window job types have a test of their own, below).
JOIN_AND_MATCH_JOBS = ("tj_streaming", "mr_streaming", "tj_backfill", "mr_backfill")
WINDOW_JOBS = ("win_streaming", "win_backfill")


def test_compare_counts_duplicates_losses_and_differing_rows() -> None:
    """The comparison itself can fail: each kind of damage is counted."""
    from collections import Counter

    expected = Counter({(("id", "a"),): 1, (("id", "b"),): 1, (("id", "c"),): 1})
    got = Counter({(("id", "a"),): 2, (("id", "c"),): 1, (("id", "x"),): 1})
    diff = compare(got, expected, "main")
    assert (diff.duplicates, diff.losses, diff.differing) == (1, 1, 1) and not diff.clean
    assert compare(expected, expected, "main").clean and Diff().clean


@pytest.mark.spark
def test_kills_per_job_type_lose_and_duplicate_nothing(spark, tmp_path: Path) -> None:
    # 3 files per input: 3 data micro-batches per stream, late rows in the third; two job types at a time.
    # A stream is killed once, a backfill twice (once in its run, once in its --only re-run): every launch of a
    # job is a JVM start, so each kill costs its restart.  The DataFrame door runs on the suite's session.
    results = run_chaos(ChaosSettings(work=tmp_path, kills=2, streaming_kills=1, jobs=JOIN_AND_MATCH_JOBS, seed=20,
                                      files=3, rows_per_file=8, reference=False, kills_per_round=2, parallel=2),
                        door_spark=spark)
    table = format_table(results)
    examples = [line for r in results for line in r.total.examples]
    assert [r.job for r in results] == list(JOIN_AND_MATCH_JOBS)
    assert [r.kills for r in results] == [1 if job.endswith("_streaming") else 2 for job in JOIN_AND_MATCH_JOBS], table
    assert all(r.clean for r in results), table + "\n" + "\n".join(examples)
    # the backfills also re-ran one slice (--only k) after their kills, and compared again
    assert all(r.only_reruns >= 1 for r in results if r.job.endswith("backfill")), table


@pytest.mark.spark
def test_window_jobs_killed_mid_batch_and_mid_slice_lose_and_duplicate_nothing(spark, tmp_path: Path) -> None:
    """The window job (HOP of an hour every 30 minutes, so windows cross micro-batch and slice edges) killed once
    while a micro-batch is planned but not committed, and once as the backfill's slices or state are written;
    restarted, its main, late and dead-letter outputs (late rows, NULL times, malformed CSV records) equal the
    DataFrame door's.  The smallest input that still has a late row: 3 files of 6 rows."""
    results = run_chaos(ChaosSettings(work=tmp_path, jobs=WINDOW_JOBS, job_kills=dict.fromkeys(WINDOW_JOBS, 1),
                                      triggers={"win_streaming": ("mid_batch",), "win_backfill": ("slice_dirs", "state")},
                                      seed=20, files=3, rows_per_file=6, reference=False, kills_per_round=1,
                                      parallel=2),
                        door_spark=spark)
    table = format_table(results)
    examples = [line for r in results for line in r.total.examples]
    assert [r.job for r in results] == list(WINDOW_JOBS)
    assert [r.kills for r in results] == [1, 1], table
    assert results[0].triggers == {"mid_batch": 1}, table
    assert all(r.clean for r in results), table + "\n" + "\n".join(examples)
    assert results[1].only_reruns >= 1, table
    # the comparison had rows to compare: windows, and each kind of dead letter
    assert len(read_rows(tmp_path / "door" / "win_stream" / "main")) > 10
    reasons = {dict(row)["reason"] for row in read_rows(tmp_path / "door" / "win_batch" / "dead_letter")}
    assert len(reasons) >= 4, reasons  # NULL event time, unparsable BIGINT and TIMESTAMP, wrong column count


def test_every_job_type_is_in_a_ci_test() -> None:
    assert sorted(JOIN_AND_MATCH_JOBS + WINDOW_JOBS) == sorted(JOBS)


@pytest.mark.spark
def test_backfill_dead_letter_rows_carry_only_input_columns(spark, tmp_path: Path) -> None:
    import json

    from timeweave.jobs.backfill import run_backfill

    (tmp_path / "left").mkdir()
    (tmp_path / "right").mkdir()
    (tmp_path / "left" / "a.csv").write_text("id,currency,order_time\no1,EUR,2024-01-01 00:30:00\n")
    (tmp_path / "right" / "a.csv").write_text("op,currency,rate,update_time\n+I,EUR,1.0,2024-01-01 00:00:00\n"
                                              "?,EUR,2.0,2024-01-01 00:10:00\n")
    config = {
        "left": {"path": str(tmp_path / "left"), "format": "csv", "options": {"header": "true"},
                 "schema": "id STRING, currency STRING, order_time TIMESTAMP"},
        "right": {"path": str(tmp_path / "right"), "format": "csv", "options": {"header": "true"},
                  "schema": "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP"},
        "versioned": {"key": ["currency"], "time": "update_time", "format": "changelog", "op": "op"},
        "join": {"left_time": "order_time", "how": "left"},
        "output": {"path": str(tmp_path / "out")},
    }
    run_backfill(config, "2024-01-01T00:00", "2024-01-01T01:00", 1, spark=spark)
    rows = [json.loads(r["row"]) for r in spark.read.parquet(str(tmp_path / "out_dead_letter")).collect()]
    assert [sorted(r) for r in rows] == [["currency", "op", "rate", "update_time"]]
