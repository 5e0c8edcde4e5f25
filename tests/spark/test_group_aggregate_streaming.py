"""The streaming continuous GROUP BY (timeweave.spark.group_aggregate_streaming), its job and the changelog sink
helper (timeweave.spark.changelog_sink).

* Seed 003's clicks through the streaming job: its retract and upsert changelogs equal the core operator's.
* Random rows over micro-batches with a restart from the checkpoint mid-stream, each batch's changelog applied with
  the sink helper: the table equals Spark SQL's batch GROUP BY over the input (both encodings).
* The sink helper applied twice with the same batch id writes nothing twice; bad changelogs are refused whole.
* Bad configs and bad queries fail before any Spark job.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.core.updates.harness import Stepper
from timeweave.core.errors import ChangelogError, SpecError
from timeweave.core.operator import Tag
from timeweave.core.pattern.partition import null_event_time_reason
from timeweave.core.updates import GroupAggregateOperator, GroupAggregateSpec
from timeweave.core.windows.calls import read_aggregates
from timeweave.jobs import cli
from timeweave.jobs.config import ConfigError, GroupAggregateJobConfig, load_job_config
from timeweave.jobs.streaming import run_streaming
from timeweave.spark import group_aggregate_streaming as G
from timeweave.spark.changelog_sink import apply_changelog, read_changelog_table

CLICKS_SCHEMA = "user STRING, cTime TIMESTAMP, url STRING"
#: Seed 003's clicks (the GROUP BY COUNT figure).
CLICKS = [("Mary", "12:00:00", "./home"), ("Bob", "12:00:00", "./cart"), ("Mary", "12:00:05", "./prod?id=1"),
          ("Liz", "12:01:00", "./home"), ("Bob", "12:01:30", "./prod?id=3"), ("Mary", "12:01:45", "./prod?id=7")]


def _write_json(path: Path, rows: list[dict[str, Any]], extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + extra)


def _config(tmp_path: Path, changelog: str, **section: Any) -> dict[str, Any]:
    return {
        "group_aggregate": {"keys": ["user"], "aggregates": {"cnt": "COUNT(url)"}, "time": "cTime",
                            "changelog": changelog, **section},
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": CLICKS_SCHEMA,
                  "watermark_delay": "5 seconds"},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
    }


def _changes(rows: list[Any], names: list[str]) -> Counter:
    return Counter(tuple(r[n] for n in names) for r in rows)


@pytest.mark.spark
@pytest.mark.parametrize("changelog", ["retract", "upsert"])
def test_seed_003_clicks_through_the_streaming_job_give_the_cores_changelog(spark, tmp_path: Path,
                                                                            changelog: str) -> None:
    config = _config(tmp_path, changelog)
    # two micro-batches (a restart in between): Mary's count changes across them
    _write_json(tmp_path / "in" / "a.json", [{"user": u, "cTime": f"2026-01-01T{t}Z", "url": url}
                                             for u, t, url in CLICKS[:3]])
    first = run_streaming(config, spark)
    _write_json(tmp_path / "in" / "b.json", [{"user": u, "cTime": f"2026-01-01T{t}Z", "url": url}
                                             for u, t, url in CLICKS[3:]])
    second = run_streaming(config, spark)
    assert first["rows_in"] + second["rows_in"] == len(CLICKS)
    out = spark.read.parquet(config["output"]["path"])
    assert out.columns == ["user", "cnt", "op"]
    assert [f.dataType.simpleString() for f in out.schema] == ["string", "bigint", "string"]

    stepper = Stepper(GroupAggregateOperator(GroupAggregateSpec(("user",), tuple(
        a.call() for a in read_aggregates({"cnt": "COUNT(url)"})), changelog=changelog)))
    for part in (CLICKS[:3], CLICKS[3:]):  # one core step per micro-batch, the keys' state carried over
        stepper.step([{"user": u, "url": url} for u, _, url in part])
    expected = Counter((c.key[0], c.values[0], c.op) for c in stepper.out[Tag.CHANGELOG])
    assert _changes(out.collect(), ["user", "cnt", "op"]) == expected
    # Mary's two clicks of the first micro-batch are one change (+I 2, mini-batch); her third updates it
    assert ("Mary", 3, "+U") in expected and (("Mary", 2, "-U") in expected) == (changelog == "retract")
    _materialise(spark, config["output"]["path"], ["user"], changelog, tmp_path / "table")
    table = read_changelog_table(spark, str(tmp_path / "table"))
    assert sorted(tuple(r) for r in table.collect()) == [("Bob", 2), ("Liz", 1), ("Mary", 3)]


def _materialise(spark, output: str, key: list[str], mode: str, table: Path) -> None:
    """Apply the job's output, micro-batch by micro-batch (its part-b<N>- files), to a changelog table."""
    batches = sorted({int(p.name[len("part-b"):].split("-")[0]) for p in Path(output).glob("part-b*")})
    for batch_id in batches:
        changes = spark.read.parquet(*[str(p) for p in Path(output).glob(f"part-b{batch_id:012d}-*")])
        assert apply_changelog(changes, str(table), key=key, mode=mode, batch_id=batch_id) == changes.count()


def _random_rows(seed: int, n: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    start = datetime(2026, 1, 1)
    rows = []
    for i in range(n):
        t = start + timedelta(seconds=i + rng.randint(-3, 3))
        rows.append({"user": rng.choice(["a", "b", "c", "d", None]), "cTime": t.isoformat() + "Z",
                     "url": rng.choice(["u1", "u2", "u3", None]), "v": rng.choice([None, *range(-5, 10)])})
    return rows


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("changelog", ["retract", "upsert"])
def test_random_batches_restarted_materialise_to_the_batch_group_by(spark, tmp_path: Path, changelog: str,
                                                                    capsys) -> None:
    rows = _random_rows(3 if changelog == "retract" else 4, 60)
    config = _config(tmp_path, changelog)
    config["group_aggregate"]["aggregates"] = {
        "n": "COUNT(*)", "cnt": "COUNT(url)", "total": "SUM(v)", "low": "MIN(v)", "high": "MAX(v)",
        "urls": "COUNT(DISTINCT url)"}
    config["input"]["schema"] = CLICKS_SCHEMA + ", v INT"
    config["input"]["options"] = {"maxFilesPerTrigger": "1"}  # one file per micro-batch
    _write_json(tmp_path / "in" / "a.json", rows[:20])
    _write_json(tmp_path / "in" / "b.json", rows[20:35], extra='{"user": "a", "cTime": null, "url": "x"}\n')
    first = run_streaming(config, spark)
    _write_json(tmp_path / "in" / "c.json", rows[35:])
    assert cli.main(["streaming", "--config", json.dumps(config), "--flush"]) == 0  # a restart from the checkpoint
    second = json.loads(capsys.readouterr().out.strip().splitlines()[-1].removeprefix(cli.METRICS_PREFIX))
    assert first["batches"] >= 2 and first["rows_in"] + second["rows_in"] == len(rows) + 1
    assert first["dead_letter"] + second["dead_letter"] == 1
    dead = spark.read.parquet(f"{config['output']['path']}_dead_letter").collect()
    assert [r["reason"] for r in dead] == [null_event_time_reason("cTime")]

    _materialise(spark, config["output"]["path"], ["user"], changelog, tmp_path / "table")
    table = read_changelog_table(spark, str(tmp_path / "table"))
    spark.read.schema(CLICKS_SCHEMA + ", v INT").json(str(tmp_path / "in")).where("cTime IS NOT NULL"
                                                                                   ).createOrReplaceTempView("clicks")
    expected = spark.sql("SELECT user, COUNT(*) AS n, COUNT(url) AS cnt, SUM(v) AS total, MIN(v) AS low, "
                         "MAX(v) AS high, COUNT(DISTINCT url) AS urls FROM clicks GROUP BY user")
    assert table.columns == expected.columns
    assert Counter(tuple(r) for r in table.collect()) == Counter(tuple(r) for r in expected.collect())


@pytest.mark.spark
def test_the_sink_helper_applies_a_batch_id_once_and_refuses_bad_changelogs_whole(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    schema = "user STRING, cnt BIGINT, op STRING"
    b0 = spark.createDataFrame([("Mary", 1, "+I"), ("Bob", 1, "+I"), (None, 1, "+I")], schema)
    b1 = spark.createDataFrame([("Mary", 1, "-U"), ("Mary", 2, "+U"), ("Bob", 1, "-D")], schema)
    assert apply_changelog(b0, path, mode="retract", batch_id=0) == 3
    assert apply_changelog(b0, path, mode="retract", batch_id=0) == 0  # a replay: nothing written twice
    assert apply_changelog(b1, path, mode="retract", batch_id=1) == 3
    assert apply_changelog(b1, path, mode="retract", batch_id=1) == 0
    assert apply_changelog(b0, path, mode="retract", batch_id=0) == 0
    rows = sorted(read_changelog_table(spark, path).collect(), key=repr)
    assert sorted(tuple(r) for r in rows if r[0]) == [("Mary", 2)] and len(rows) == 2
    with pytest.raises(ChangelogError, match=r"1 retraction\(s\) of row \{'user': 'Bob', 'cnt': 1\} more than"):
        apply_changelog(spark.createDataFrame([("Bob", 1, "-D")], schema), path, mode="retract", batch_id=2)
    with pytest.raises(ChangelogError, match=r"a retract changelog carries no op '\?\?'"):
        apply_changelog(spark.createDataFrame([("Bob", 1, "??")], schema), path, mode="retract", batch_id=2)
    assert sorted(tuple(r) for r in read_changelog_table(spark, path).collect() if r[0]) == [("Mary", 2)]
    assert apply_changelog(spark.createDataFrame([("Liz", 1, "+I")], schema), path, mode="retract", batch_id=2) == 1
    with pytest.raises(SpecError, match=r"is a retract table keyed by \[\]"):
        apply_changelog(b0, path, key="user", mode="upsert", batch_id=3)

    up = str(tmp_path / "u")
    assert apply_changelog(b0, up, key="user", mode="upsert", batch_id=5) == 3
    with pytest.raises(ChangelogError, match=r"an upsert changelog carries no op '-U'"):
        apply_changelog(b1, up, key="user", mode="upsert", batch_id=6)
    with pytest.raises(ChangelogError, match=r"names key \('Mary',\) 2 times"):
        apply_changelog(spark.createDataFrame([("Mary", 2, "+U"), ("Mary", 3, "+U")], schema), up, key="user",
                        mode="upsert", batch_id=6)
    with pytest.raises(ChangelogError, match=r"-D of key \('Liz',\)"):
        apply_changelog(spark.createDataFrame([("Liz", 1, "-D")], schema), up, key="user", mode="upsert", batch_id=6)
    b6 = spark.createDataFrame([("Mary", 2, "+U"), ("Bob", 1, "-D"), (None, 5, "+U")], schema)
    assert apply_changelog(b6, up, key="user", mode="upsert", batch_id=6) == 3
    assert apply_changelog(b6, up, key="user", mode="upsert", batch_id=6) == 0
    assert sorted((tuple(r) for r in read_changelog_table(spark, up).collect()), key=repr) == sorted(
        [("Mary", 2), (None, 5)], key=repr)


def test_bad_configs_fail_with_clear_errors(tmp_path: Path, capsys) -> None:
    config = _config(tmp_path, "retract")
    config["group_aggregate"]["aggregats"] = {}
    with pytest.raises(ConfigError, match=r"group_aggregate.aggregats: unknown key; did you mean 'aggregates'\?"):
        load_job_config(config)
    config = _config(tmp_path, "append")
    with pytest.raises(ConfigError, match=r"group_aggregate.changelog: an append-only output cannot carry updates"):
        load_job_config(config)
    config = _config(tmp_path, "retract", keys=[])
    with pytest.raises(ConfigError, match=r"group_aggregate.keys: missing key \(required\)"):
        load_job_config(config)
    config = _config(tmp_path, "retract", aggregates={"x": "MEDIAN(url)"})
    with pytest.raises(ConfigError, match=r"group_aggregate.aggregates: .*cannot read 'MEDIAN\(url\)'"):
        load_job_config(config)
    config = _config(tmp_path, "retract", retention={"min_idle": "0 seconds"})
    with pytest.raises(ConfigError, match=r"group_aggregate.retention.min_idle: must be positive"):
        load_job_config(config)
    config = _config(tmp_path, "upsert")
    assert isinstance(load_job_config(config), GroupAggregateJobConfig)
    assert cli.main(["validate", json.dumps(config)]) == 0
    assert "continuous GROUP BY job: keys [user], aggregates cnt = COUNT(url), upsert changelog" in \
        capsys.readouterr().out


@pytest.mark.spark
def test_bad_queries_fail_before_any_spark_job(spark) -> None:
    context = spark.sparkContext
    context.setJobGroup("tw-group-checks", "errors before any job")
    df = spark.createDataFrame([], CLICKS_SCHEMA + ", op STRING, v INT")
    with pytest.raises(SpecError, match=r"argument 'keys': column 'nope' not found"):
        G.group_aggregate_stream(df, {"n": "COUNT(*)"}, keys="nope", time="cTime", watermark="1 second")
    with pytest.raises(SpecError, match=r"argument 'time': column 'user' is string"):
        G.group_aggregate_stream(df, {"n": "COUNT(*)"}, keys="user", time="user", watermark="1 second")
    with pytest.raises(SpecError, match=r"argument 'aggregates': the output name 'op'"):
        G.group_aggregate_stream(df, {"op": "COUNT(*)"}, keys="user", time="cTime", watermark="1 second")
    with pytest.raises(SpecError, match=r"argument 'changelog': an append-only output"):
        G.group_aggregate_stream(df, {"n": "COUNT(*)"}, keys="user", time="cTime", watermark="1 second",
                                 changelog="append")
    with pytest.raises(SpecError, match=r"argument 'watermark'"):
        G.group_aggregate_stream(df, {"n": "COUNT(*)"}, keys="user", time="cTime", watermark=None)
    with pytest.raises(SpecError, match=r"argument 'op_column': column 'kind' not found"):
        G.group_aggregate_stream(df, {"n": "COUNT(*)"}, keys="user", time="cTime", watermark="1 second",
                                 op_column="kind")
    assert context.statusTracker().getJobIdsForGroup("tw-group-checks") == []
    context.setJobGroup("", "")


@pytest.mark.parametrize("name", ["timeweave.core.updates.materialize", "timeweave.jobs.group_aggregate",
                                  "timeweave.jobs.config", "timeweave.jobs.registry"])
def test_docstring_examples_run(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
