"""The streaming door end to end: file sources -> streaming job -> parquet outputs (shared SparkSession)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from tests.helpers.flink_cases import CASES, load_case, rows_as_text
from timeweave.jobs import cli
from timeweave.jobs.streaming import run_streaming

pytestmark = pytest.mark.spark

CONFORMANCE = ["tj_pk_inner", "tj_pk_left", "tj_changelog_inner", "tj_changelog_left", "tj_view_inner", "tj_view_left"]


def _case_config(tmp_path: Path, name: str, trigger: dict | None = None) -> tuple[dict, list[str], list[tuple]]:
    """A job config over a Flink conformance case's CSV files, and the case's expected streaming rows."""
    case = load_case(name)
    left = case.tables["orders"]
    right = next(t for n, t in case.tables.items() if n != "orders")
    for side, table in (("left", left), ("right", right)):
        (tmp_path / side).mkdir()
        shutil.copy(CASES / name / next(t["path"] for t in case.spec["tables"] if t["name"] == table.name),
                    tmp_path / side / "part-0.csv")
    versioned = {"key": right.primary_key or ["currency"], "time": right.rowtime}
    if right.changelog:
        versioned |= {"format": "changelog", "op": "op"}
    config = {
        "left": {"path": str(tmp_path / "left"), "format": "csv", "options": {"header": "true"}, "schema": left.ddl},
        "right": {"path": str(tmp_path / "right"), "format": "csv", "options": {"header": "true"}, "schema": right.ddl},
        "versioned": versioned,
        "join": {"left_time": left.rowtime, "how": "left" if name.endswith("_left") else "inner",
                 "right_columns": ["conversion_rate", "update_time"]},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
        "trigger": trigger or {"available_now": True},
    }
    header, rows = case.expected("streaming")
    return config, header, sorted(rows)


def _main_rows(spark, config: dict, header: list[str]) -> list[tuple]:
    df = spark.read.parquet(config["output"]["path"]).withColumnRenamed("update_time", "rate_time")
    return rows_as_text(df, header)


@pytest.mark.parametrize("name", CONFORMANCE)
def test_flink_conformance_cases(spark, tmp_path: Path, name: str) -> None:
    config, header, expected = _case_config(tmp_path, name)
    metrics = run_streaming(config, spark, flush=True)
    assert _main_rows(spark, config, header) == expected
    assert metrics["rows_out"] == len(expected)
    assert metrics["late"] == 0 and metrics["dead_letter"] == 0
    assert metrics["rows_in_left"] == len(load_case(name).tables["orders"].rows)
    assert metrics["watermark"] == "+10000-01-01T00:00:00.000Z"  # the end of input: past every TIMESTAMP


def _write_csv(path: Path, header: str, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([header, *lines]) + "\n")


def test_late_rows_dead_letters_and_restart_from_checkpoint(spark, tmp_path: Path) -> None:
    left_header, right_header = "id,currency,order_time", "op,currency,rate,update_time"
    _write_csv(tmp_path / "left" / "a.csv", left_header, [
        "o1,EUR,2020-01-01 10:00:00", "o2,USD,2020-01-01 10:15:00", "o3,EUR,2020-01-01 10:30:00",
        "o4,EUR,2020-01-01 11:00:00",
    ])
    _write_csv(tmp_path / "right" / "a.csv", right_header, [
        "+I,EUR,1.1,2020-01-01 09:00:00", "+I,USD,1.0,2020-01-01 09:00:00", "+U,EUR,1.2,2020-01-01 10:45:00",
    ])
    config = {
        "left": {"path": str(tmp_path / "left"), "format": "csv", "options": {"header": "true"},
                 "schema": "id STRING, currency STRING, order_time TIMESTAMP"},
        "right": {"path": str(tmp_path / "right"), "format": "csv", "options": {"header": "true"},
                  "schema": "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP"},
        "versioned": {"key": "currency", "time": "update_time", "format": "changelog", "op": "op"},
        "join": {"left_time": "order_time", "how": "left", "valid_from": "rate_from"},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
    }
    cache_compressed = spark.conf.get("spark.sql.inMemoryColumnarStorage.compressed")
    first = run_streaming(config, spark)
    # Watermark = min(left 11:00, right 10:45): rows up to 10:45 are out, o4 (11:00) waits in state.
    assert first["watermark"] == "2020-01-01T10:45:00.000Z"
    assert (first["rows_in_left"], first["rows_in_right"], first["rows_out"]) == (4, 3, 3)

    _write_csv(tmp_path / "left" / "b.csv", left_header, [
        "late1,EUR,2020-01-01 10:40:00",    # below the watermark: late
        "o5,EUR,2020-01-01 10:45:00",       # at the watermark: not late (Spark itself would drop it)
        "o6,EUR,2020-01-01 11:30:00",
        "nokey,,2020-01-01 11:00:00",       # NULL key: a LEFT join outputs it at once, unmatched
        "notime,EUR,",                      # NULL time: likewise (an INNER join would dead-letter both)
    ])
    _write_csv(tmp_path / "right" / "b.csv", right_header, [
        "+U,EUR,1.3,2020-01-01 11:15:00",
        "?,EUR,9.9,2020-01-01 11:20:00",    # dead letter: unknown op
        "+I,,2.0,2020-01-01 11:00:00",      # dead letter: NULL key
    ])
    second = run_streaming(config, spark, flush=True)
    assert (second["rows_in_left"], second["rows_in_right"]) == (5, 3)
    assert (second["late"], second["dead_letter"]) == (1, 2)
    # The writer turns cache compression off in the query's own session only, never in the caller's.
    assert spark.conf.get("spark.sql.inMemoryColumnarStorage.compressed") == cache_compressed

    main = {r["id"]: (r["rate"], r["rate_from"]) for r in spark.read.parquet(config["output"]["path"]).collect()}
    assert spark.read.parquet(config["output"]["path"]).count() == len(main) == 8  # no duplicates, no loss
    assert main == {
        "nokey": (None, None), "notime": (None, None),
        "o1": (1.1, datetime(2020, 1, 1, 9)), "o2": (1.0, datetime(2020, 1, 1, 9)),
        "o3": (1.1, datetime(2020, 1, 1, 9)), "o4": (1.2, datetime(2020, 1, 1, 10, 45)),
        "o5": (1.2, datetime(2020, 1, 1, 10, 45)), "o6": (1.3, datetime(2020, 1, 1, 11, 15)),
    }
    late = spark.read.parquet(f"{config['output']['path']}_late").collect()
    assert [(r["id"], r["watermark"]) for r in late] == [("late1", datetime(2020, 1, 1, 10, 45))]
    assert late[0]["reason"].startswith("late: event time ")
    dead = spark.read.parquet(f"{config['output']['path']}_dead_letter").collect()
    assert sorted((r["side"], r["reason"], json.loads(r["row"]).get("id", json.loads(r["row"]).get("op"))) for r in dead) == [
        ("right", "NULL key column currency", "+I"),
        ("right", "unknown op ? in column op", "?"),
    ]
    # The same rows as the batch DataFrame door on the same input (late rows excluded: they were reported).
    from timeweave import temporal_join

    left = spark.read.schema(config["left"]["schema"]).option("header", "true").csv(str(tmp_path / "left"))
    right = spark.read.schema(config["right"]["schema"]).option("header", "true").csv(str(tmp_path / "right"))
    batch = temporal_join(left.where("id != 'late1'"), right, "order_time", key="currency", time="update_time",
                          format="changelog", op="op", how="left", validity=False)
    assert sorted((r["id"], r["rate"]) for r in batch.collect()) == sorted((k, v[0]) for k, v in main.items())


def test_processing_time_trigger_bounded_run_from_the_cli(spark, tmp_path: Path, capsys) -> None:
    config, header, expected = _case_config(tmp_path, "tj_pk_left", trigger={"processing_time": "1 second"})
    path = tmp_path / "job.json"
    path.write_text(json.dumps(config))
    assert cli.main(["streaming", "--config", str(path), "--flush", "--timeout", "240"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith(cli.METRICS_PREFIX)
    metrics = json.loads(line[len(cli.METRICS_PREFIX):])
    assert metrics["rows_out"] == len(expected) and metrics["batches"] >= 2
    assert _main_rows(spark, config, header) == expected


def test_state_survives_a_heartbeat_in_the_same_micro_batch(spark, tmp_path: Path) -> None:
    """Versions stored in one run are found in a later micro-batch that also carries the flush heartbeat.

    PySpark takes a grouping key from a pandas frame of the whole Arrow batch: a NULL grouping key
    in that batch turns the integer buckets beside it into floats, which address other state.
    Heartbeats therefore travel in a real bucket; with 64 keys over every bucket, a bucket sharing
    an Arrow batch with the heartbeat would lose its versions here.
    """
    keys = [f"K{i:02d}" for i in range(64)]
    left_header, right_header = "id,currency,order_time", "currency,rate,update_time"
    _write_csv(tmp_path / "left" / "a.csv", left_header, ["early,K00,2020-01-01 08:00:00"])
    _write_csv(tmp_path / "right" / "a.csv", right_header, [f"{k},{i}.5,2020-01-01 09:00:00" for i, k in enumerate(keys)])
    config = {
        "left": {"path": str(tmp_path / "left"), "format": "csv", "options": {"header": "true"},
                 "schema": "id STRING, currency STRING, order_time TIMESTAMP"},
        "right": {"path": str(tmp_path / "right"), "format": "csv", "options": {"header": "true"},
                  "schema": "currency STRING, rate DOUBLE, update_time TIMESTAMP"},
        "versioned": {"key": "currency", "time": "update_time"},
        "join": {"left_time": "order_time", "how": "left"},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
    }
    run_streaming(config, spark)
    _write_csv(tmp_path / "left" / "b.csv", left_header, [f"o{k},{k},2020-01-01 10:00:00" for k in keys])
    run_streaming(config, spark, flush=True)
    out = {r["id"]: r["rate"] for r in spark.read.parquet(config["output"]["path"]).collect()}
    assert out == {"early": None, **{f"o{k}": float(f"{i}.5") for i, k in enumerate(keys)}}
