"""The example pipeline (the README's main job): landing, configs, checksums, and the whole run."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from timeweave.jobs import example_pipeline as ep
from timeweave.jobs.config import JobConfig


def test_land_copies_only_the_interval_and_is_idempotent(tmp_path):
    paths = ep.ExamplePaths(tmp_path)
    landed = ep.land(paths, datetime(2026, 1, 2), datetime(2026, 1, 3))
    assert sorted(p.relative_to(paths.landing).as_posix() for p in landed) == ["orders/2026-01-02.csv",
                                                                                 "rates/2026-01-02.csv"]
    assert ep.land(paths, date(2026, 1, 2), date(2026, 1, 3)) == landed
    assert sorted(p.name for p in (paths.landing / "orders").iterdir()) == ["2026-01-02.csv"]
    assert ep.land(paths, date(2026, 1, 3), date(2026, 1, 4)) == []


def test_job_configs_are_valid_and_differ_only_in_output_and_checkpoint(tmp_path):
    paths = ep.ExamplePaths(tmp_path)
    streaming, backfill = ep.job_config(paths, "streaming"), ep.job_config(paths, "backfill")
    for config in (streaming, backfill):
        JobConfig.from_dict(config)
    differing = {k for k in streaming if streaming[k] != backfill[k]}
    assert differing == {"output", "checkpoint"}
    with pytest.raises(ValueError, match="'kind'"):
        ep.job_config(paths, "batch")


def test_spark_conf_runs_one_shuffle_partition_per_local_core(tmp_path, monkeypatch):
    """local[2] gets 2 shuffle partitions (as the job session), not a fixed 4; the variable still overrides."""
    monkeypatch.delenv("TIMEWEAVE_SHUFFLE_PARTITIONS", raising=False)
    monkeypatch.setenv("TIMEWEAVE_SPARK_MASTER", "local[2]")
    conf = ep.spark_conf(ep.ExamplePaths(tmp_path))
    assert (conf["spark.sql.shuffle.partitions"], conf["spark.default.parallelism"]) == ("2", "2")
    monkeypatch.setenv("TIMEWEAVE_SPARK_MASTER", "spark://host:7077")
    assert ep.spark_conf(ep.ExamplePaths(tmp_path))["spark.sql.shuffle.partitions"] == "4"
    monkeypatch.setenv("TIMEWEAVE_SHUFFLE_PARTITIONS", "3")
    assert ep.spark_conf(ep.ExamplePaths(tmp_path), hive=False)["spark.sql.shuffle.partitions"] == "3"


def test_checksum_ignores_row_order_and_storage_scale_but_not_values():
    rows = [("o1", Decimal("1.1000"), datetime(2026, 1, 1)), ("o2", None, datetime(2026, 1, 2))]
    same = [("o2", None, datetime(2026, 1, 2)), ("o1", Decimal("1.1"), datetime(2026, 1, 1))]
    changed = [("o1", Decimal("1.1001"), datetime(2026, 1, 1)), ("o2", None, datetime(2026, 1, 2))]
    assert ep.checksum(rows) == ep.checksum(same)
    assert ep.checksum(rows) != ep.checksum(changed)
    assert ep.agree([ep.OutputSummary("a", 2, "x"), ep.OutputSummary("b", 2, "x")])
    assert not ep.agree([ep.OutputSummary("a", 2, "x"), ep.OutputSummary("b", 2, "y")])


def test_main_refuses_a_non_empty_work_dir(tmp_path):
    (tmp_path / "leftover").write_text("x")
    with pytest.raises(SystemExit) as exit_info:
        ep.main(["--work-dir", str(tmp_path)])
    assert exit_info.value.code == 2


def test_the_sample_data_and_dbt_project_ship_with_the_repository():
    assert ep.sample_days() == [date(2026, 1, 1), date(2026, 1, 2)]
    assert (ep.DBT_PROJECT / "dbt_project.yml").is_file()
    assert (ep.dbt_macros_path() / "dbt_project.yml").is_file()


@pytest.mark.slow
@pytest.mark.spark
def test_main_job_runs_all_three_doors_and_they_agree(spark, tmp_path, capsys):
    """dbt, two incremental streaming runs (the last flushed) and a 3-slice backfill: same rows."""
    work = Path(tmp_path) / "example"
    assert ep.main(["--work-dir", str(work), "--slices", "3"]) == 0
    out = capsys.readouterr().out
    assert "OK: dbt, streaming and backfill produced the same rows" in out
    table = [line.split() for line in out.splitlines() if line.split()[:1] in (["dbt"], ["streaming"], ["backfill"])]
    assert [row[0] for row in table] == ["dbt", "streaming", "backfill"]
    assert {row[1] for row in table} == {"17"}  # every sample order, once, in every door
    assert len({row[2] for row in table}) == 1
    assert len(list(ep.ExamplePaths(work).backfill_output.glob("slice=*"))) == 3
    # the run reports are written at the end and listed
    for run_dir in (ep.ExamplePaths(work).streaming_run, ep.ExamplePaths(work).backfill_run):
        assert f"  {run_dir / 'report.html'}" in out
        assert 'id="total-rows_out">17<' in (run_dir / "report.html").read_text()
