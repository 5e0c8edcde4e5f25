"""TimeweaveSqlOperator: a Flink SQL script as an Airflow task (templated file, checked first, both launchers)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pendulum
import pytest
from airflow.sdk import DAG

from timeweave.airflow.hooks.timeweave import TimeweaveHook, default_application
from timeweave.airflow.operators.timeweave import TimeweaveSqlOperator

START = pendulum.datetime(2026, 1, 1, tz="UTC")
SCRIPT = """CREATE TABLE bids_{tag} (item STRING, price DOUBLE, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = '{bids}', 'format' = 'csv');
CREATE TABLE counts_{tag} (item STRING, window_start TIMESTAMP(3), n BIGINT, total DOUBLE)
  WITH ('connector' = 'filesystem', 'path' = '{out}/{{{{ ds }}}}', 'format' = 'parquet');
INSERT OVERWRITE counts_{tag}
SELECT item, window_start, COUNT(*), SUM(price)
FROM TABLE(TUMBLE(TABLE bids_{tag}, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
GROUP BY item, window_start, window_end;
"""
BIDS = "a,1.0,2026-01-01 00:01:00\na,2.0,2026-01-01 00:09:59\nb,5.0,2026-01-01 00:05:00\na,4.0,2026-01-01 00:10:00\n"


def _context(**extra: Any) -> dict[str, Any]:
    return {"ds": "2026-01-01", "data_interval_start": START, **extra}


def _script(tmp_path) -> str:
    bids = tmp_path / "bids"
    bids.mkdir(exist_ok=True)
    (bids / "part-0.csv").write_text(BIDS)
    return SCRIPT.format(tag=uuid.uuid4().hex[:8], bids=bids, out=tmp_path / "counts")


def test_a_sql_file_is_rendered_as_a_template(tmp_path):
    (tmp_path / "job.sql").write_text(_script(tmp_path))
    with DAG("tw_sql_render", schedule=None, start_date=START, template_searchpath=[str(tmp_path)]):
        op = TimeweaveSqlOperator(task_id="sql", sql="job.sql")
    op.resolve_template_files()
    op.render_template_fields(_context())
    assert f"{tmp_path / 'counts'}/2026-01-01" in op.sql and "{{" not in op.sql
    assert TimeweaveSqlOperator.template_fields == ("sql", "conn_id", "spark_conf", "metrics_file", "checkpoint")


def test_a_bad_script_fails_the_task_before_anything_is_submitted(fake_spark):
    op = TimeweaveSqlOperator(task_id="sql", launcher="spark-submit", sql=(
        "CREATE TABLE s (a INT) WITH ('connector' = 'filesystem', 'path' = '/o', 'format' = 'avro');\n"
        "INSERT INTO s SELECT 1;"))
    with pytest.raises(Exception, match=r"avro.*\(line 1, col \d+\)|line 1.*avro"):
        op.execute(_context())
    assert fake_spark() == []


def test_a_sql_job_takes_only_its_own_job_arguments():
    with pytest.raises(ValueError, match=r"argument 'start': a sql job does not take it"):
        TimeweaveHook().run("sql", "INSERT INTO t SELECT 1", start="2026-01-01")


def test_spark_submit_ships_the_script_inline_and_the_job_cli_reads_it(fake_spark, tmp_path):
    """Inline, so a driver in cluster mode needs no file of this machine; the CLI parses what the hook builds."""
    from timeweave.jobs.cli import parser

    script = _script(tmp_path)
    metrics = TimeweaveSqlOperator(task_id="sql", sql=script, launcher="spark-submit").execute(_context())
    assert metrics["kind"] == "sql" and metrics["script"] == script
    ((_, argv),) = fake_spark()
    job_args = argv[argv.index(default_application()) + 1:]
    parsed = parser().parse_args(job_args)
    assert (parsed.kind, parsed.script, parsed.file) == ("sql", script, None)


def test_a_streaming_script_reaches_the_job_cli_with_its_checkpoint_and_flush(fake_spark, tmp_path):
    from timeweave.jobs.cli import parser

    script = _script(tmp_path).replace("INSERT OVERWRITE", "INSERT INTO")
    op = TimeweaveSqlOperator(task_id="sql", sql=script, launcher="spark-submit", mode="streaming",
                              checkpoint=str(tmp_path / "chk"), flush=True)
    op.execute(_context())
    ((_, argv),) = fake_spark()
    parsed = parser().parse_args(argv[argv.index(default_application()) + 1:])
    assert (parsed.mode, parsed.checkpoint, parsed.flush, parsed.processing_time) == (
        "streaming", str(tmp_path / "chk"), True, None)


def test_a_streaming_script_is_checked_by_streamings_rules_before_anything_is_submitted(fake_spark, tmp_path):
    op = TimeweaveSqlOperator(task_id="sql", sql=_script(tmp_path), launcher="spark-submit", mode="streaming")
    with pytest.raises(Exception, match="a streaming query appends"):
        op.execute(_context())
    assert fake_spark() == []


def test_a_script_too_long_for_one_argument_is_refused_with_the_reason():
    script = "INSERT INTO t SELECT 1;\n" + "-- padding\n" * 20_000
    with pytest.raises(ValueError, match=r"more than spark-submit takes inline"):
        TimeweaveHook(launcher="spark-submit").spark_submit_command("sql", script)


@pytest.mark.spark
def test_in_process_the_script_writes_its_sink_and_reports_rows_and_lineage(spark, tmp_path):
    (tmp_path / "job.sql").write_text(_script(tmp_path))
    with DAG("tw_sql_run", schedule=None, start_date=START, template_searchpath=[str(tmp_path)]):
        op = TimeweaveSqlOperator(task_id="sql", sql="job.sql")
    op.resolve_template_files()
    op.render_template_fields(_context())
    metrics = op.execute(_context())
    json.dumps(metrics)  # XCom-ready
    out = spark.read.parquet(str(tmp_path / "counts" / "2026-01-01"))
    rows = sorted((r["item"], str(r["window_start"]), r["n"], r["total"]) for r in out.collect())
    assert rows == [("a", "2026-01-01 00:00:00", 2, 3.0), ("a", "2026-01-01 00:10:00", 1, 4.0),
                    ("b", "2026-01-01 00:00:00", 1, 5.0)]
    assert metrics["rows_out"] == 3 and metrics["inserts"][0]["rows"] == 3
    lineage = op.get_openlineage_facets_on_complete(None)
    if lineage is not None:  # the OpenLineage provider is installed
        assert [d.name for d in lineage.inputs] == [str(tmp_path / "bids")]
        names = [d.name for d in lineage.outputs]
        assert names == [f"{tmp_path / 'counts'}/2026-01-01", f"{tmp_path / 'counts'}/2026-01-01_dead_letter"]
        assert lineage.outputs[0].outputFacets["outputStatistics"].rowCount == 3


def test_a_streaming_scripts_lineage_names_each_sinks_late_rows(tmp_path):
    script = _script(tmp_path).replace("INSERT OVERWRITE", "INSERT INTO")
    batch = TimeweaveSqlOperator(task_id="sql", sql=script)._lineage_paths()[1]
    inputs, outputs = TimeweaveSqlOperator(task_id="sql", sql=script, mode="streaming")._lineage_paths()
    roles = [role.split(" ", 1)[-1] if " " in role else "main" for role, _ in outputs]
    assert roles == ["main", "dead_letter", "late"] and outputs[:2] == batch
    assert outputs[2][1] == outputs[0][1].rstrip("/") + "_late"
    assert [path for _, path in inputs] == [str(tmp_path / "bids")]
