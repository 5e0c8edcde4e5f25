"""The continuous GROUP BY's SQL form on Spark, and its sliced backfill (timeweave.spark.group_aggregate_backfill).

* The job's ``query`` (with a WHERE) writes the changelog the keys / aggregates form writes over the rows the WHERE
  keeps, micro-batch by micro-batch; its backfill job materialises to Spark's batch query; ``timeweave.sql`` over
  a streaming view refuses the query and names the job, over a batch view it is Spark's GROUP BY.
* Random updating input (retractions, rows arriving out of event-time order, a NULL event time): the flushed stream,
  the backfill in 1, 3 and 7 slices and the batch GROUP BY materialise to the same table; fed one slice per
  micro-batch, the stream's changelog rows are the backfill's, slice by slice; a re-run slice replaces only its
  files.
* Idle-state retention: a stream of one slice per micro-batch and the backfill forget the same keys (the same
  changelog rows, a forgotten key's ``+I`` again).
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import timeweave
from timeweave.core.errors import SpecError
from timeweave.core.time import slices_of
from timeweave.jobs.backfill import run_backfill
from timeweave.jobs.streaming import run_streaming
from timeweave.spark.changelog_sink import apply_changelog, read_changelog_table

SCHEMA = "user STRING, cTime TIMESTAMP, url STRING, v INT, op STRING"
BEGIN = datetime(2026, 1, 1)
AGGREGATES = {"n": "COUNT(*)", "cnt": "COUNT(url)", "total": "SUM(v)", "low": "MIN(v)", "high": "MAX(v)",
              "urls": "COUNT(DISTINCT url)"}
BATCH_SQL = ("SELECT user, COUNT(*) AS n, COUNT(url) AS cnt, SUM(v) AS total, MIN(v) AS low, MAX(v) AS high, "
             "COUNT(DISTINCT url) AS urls FROM {rows} GROUP BY user")


def _text(row: dict[str, Any]) -> str:
    return json.dumps({**row, "cTime": None if row["cTime"] is None else row["cTime"].isoformat() + "Z"})


def _write_files(directory: Path, parts: list[list[dict[str, Any]]], extra: str = "") -> None:
    """One JSON file per part, their modification times in order (the file source reads them one per batch)."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(parts):
        path = directory / f"part{i:02d}.json"
        path.write_text("".join(_text(r) + "\n" for r in part) + (extra if i == len(parts) - 1 else ""))
        os.utime(path, (1_700_000_000 + i * 10, 1_700_000_000 + i * 10))


def _config(tmp_path: Path, name: str, changelog: str, **section: Any) -> dict[str, Any]:
    return {
        "group_aggregate": {"time": "cTime", "changelog": changelog, **section},
        "input": {"path": str(tmp_path / name / "in"), "format": "json", "schema": SCHEMA,
                  "watermark_delay": "5 seconds", "options": {"maxFilesPerTrigger": "1"}},
        "output": {"path": str(tmp_path / name / "out")},
        "checkpoint": str(tmp_path / name / "chk"),
    }


def _stream_batches(spark, output: str) -> list[Counter]:
    """The stream's changelog, one Counter of rows per micro-batch with rows, in batch order."""
    ids = sorted({int(p.name[len("part-b"):].split("-")[0]) for p in Path(output).glob("part-b*")})
    out = []
    for batch_id in ids:
        rows = spark.read.parquet(*[str(p) for p in Path(output).glob(f"part-b{batch_id:012d}-*")]).collect()
        if rows:
            out.append(Counter(tuple(r) for r in rows))
    return out


def _slice_batches(spark, output: str, slices: int, end: datetime) -> list[Counter]:
    """The backfill's changelog, one Counter of rows per slice with rows, in slice order."""
    out = []
    for s in slices_of(BEGIN, end, slices):
        rows = spark.read.parquet(f"{output}/slice={s.label}").collect()
        if rows:
            out.append(Counter(tuple(r) for r in rows))
    return out


def _materialise(spark, batches: list[Counter], columns: list[str], mode: str, table: Path) -> Counter:
    """The batches applied in order with the sink helper: the table's rows."""
    for batch_id, batch in enumerate(batches):
        rows = [row for row, count in batch.items() for _ in range(count)]
        df = spark.createDataFrame(rows, _CHANGELOG_SCHEMA)
        apply_changelog(df.select(*columns), str(table), key=["user"] if mode == "upsert" else (), mode=mode,
                        batch_id=batch_id)
    return Counter(tuple(r) for r in read_changelog_table(spark, str(table)).collect())


_CHANGELOG_SCHEMA = "user STRING, n BIGINT, cnt BIGINT, total BIGINT, low INT, high INT, urls BIGINT, op STRING"


def _updating_rows(seed: int, n: int, step: int = 8) -> list[dict[str, Any]]:
    """Rows in event-time order (distinct times); some retract a live row of their key (``-U`` then maybe
    ``+U``, or ``-D``), so the input's net rows are a multiset the batch GROUP BY reads."""
    rng = random.Random(seed)
    live: dict[Any, list[tuple[Any, Any]]] = {}
    rows = []
    for i in range(n):
        t = BEGIN + timedelta(seconds=i * step + rng.randint(0, step - 1), milliseconds=rng.randint(0, 999))
        user = rng.choice(["a", "b", "c", None])
        held = live.setdefault(user, [])
        if held and rng.random() < 0.3:
            url, v = held.pop(rng.randrange(len(held)))
            rows.append({"user": user, "cTime": t, "url": url, "v": v, "op": rng.choice(["-U", "-D"])})
            continue
        url, v = rng.choice(["u1", "u2", "u3", None]), rng.choice([None, *range(-5, 10)])
        held.append((url, v))
        rows.append({"user": user, "cTime": t, "url": url, "v": v, "op": rng.choice(["+I", "+I", "+U"])})
    return rows


def _net_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows the updates leave (each retraction takes back one equal row of its key)."""
    kept: list[dict[str, Any]] = []
    for row in rows:
        if row["op"] in ("-U", "-D"):
            kept.remove(next(k for k in kept if (k["user"], k["url"], k["v"]) == (row["user"], row["url"], row["v"])))
        else:
            kept.append(row)
    return kept


def _by_slice(rows: list[dict[str, Any]], slices: int, end: datetime, rng: random.Random) -> list[list[dict]]:
    """The rows of each slice, each part in event-time order but for a few neighbours of different keys swapped
    (they arrive late, behind a later row)."""
    parts = []
    for s in slices_of(BEGIN, end, slices):
        part = [r for r in rows if s.start <= r["cTime"] < s.end]
        for i in range(len(part) - 1):
            if part[i]["user"] != part[i + 1]["user"] and rng.random() < 0.3:
                part[i], part[i + 1] = part[i + 1], part[i]
        parts.append(part)
    return parts


@pytest.mark.spark
def test_the_query_form_is_the_keys_form_and_the_sql_door_points_to_the_job(spark, tmp_path: Path) -> None:
    rows = [r for r in _updating_rows(5, 24) if r["op"] in ("+I", "+U")]
    end = BEGIN + timedelta(seconds=24 * 8)
    kept = [r for r in rows if r["v"] is None or r["v"] >= 0]
    query = ("SELECT c.user, COUNT(url) AS cnt, SUM(c.v) AS total, count(DISTINCT url) FROM clicks AS c "
             "WHERE c.v IS NULL OR c.v >= 0 GROUP BY user")
    by_query = _config(tmp_path, "q", "upsert", query=query)
    by_keys = _config(tmp_path, "k", "upsert", keys=["user"],
                      aggregates={"cnt": "COUNT(url)", "total": "SUM(v)", "count(DISTINCT url)": "COUNT(DISTINCT url)"})
    _write_files(tmp_path / "q" / "in", [rows[:12], rows[12:]])
    _write_files(tmp_path / "k" / "in", [[r for r in rows[:12] if r in kept], [r for r in rows[12:] if r in kept]])
    first, second = run_streaming(by_query, spark, flush=True), run_streaming(by_keys, spark, flush=True)
    assert first["rows_in"] == len(kept) and second["rows_in"] == len(kept)
    q_batches = _stream_batches(spark, by_query["output"]["path"])
    assert len(q_batches) == 2 and q_batches == _stream_batches(spark, by_keys["output"]["path"])
    assert spark.read.parquet(by_query["output"]["path"]).columns == ["user", "cnt", "total", "count(DISTINCT url)",
                                                                      "op"]

    # the query's backfill job, materialised, is Spark's batch query (timeweave.sql over a batch view: Spark's)
    backfill = _config(tmp_path, "q", "upsert", query=query)
    backfill["output"] = {"path": str(tmp_path / "bq" / "out")}
    run_backfill(backfill, BEGIN, end, 2, spark)
    spark.read.schema(SCHEMA).json(str(tmp_path / "q" / "in")).createOrReplaceTempView("clicks")
    expected = Counter(tuple(r) for r in timeweave.sql(spark, query).collect())
    table = Counter()
    for s in slices_of(BEGIN, end, 2):
        for r in spark.read.parquet(f"{tmp_path / 'bq' / 'out'}/slice={s.label}").collect():
            key = r["user"]
            for old in [k for k in table if k[0] == key]:
                del table[old]
            if r["op"] != "-D":
                table[tuple(r)[:-1]] += 1
    assert table == expected and len(expected) == 4

    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path / "q" / "in"))
    stream.createOrReplaceTempView("clicks_stream")
    with pytest.raises(SpecError, match=r"clicks_stream is a streaming relation: .*group_aggregate job"):
        timeweave.sql(spark, query.replace("FROM clicks", "FROM clicks_stream"))


@pytest.mark.spark
@pytest.mark.slow  # a stream of 3 micro-batches and 11 slice runs
def test_random_updates_stream_equals_backfill_in_1_3_7_slices_equals_the_batch_group_by(spark, tmp_path: Path
                                                                                        ) -> None:
    n = 60
    rows = _updating_rows(11, n)
    end = BEGIN + timedelta(seconds=n * 8)
    null_time = '{"user": "a", "cTime": null, "url": "x", "v": 1, "op": "+I"}\n'
    config = _config(tmp_path, "s", "retract", keys=["user"], aggregates=AGGREGATES, op_column="op")
    _write_files(tmp_path / "s" / "in", _by_slice(rows, 3, end, random.Random(2)), extra=null_time)
    metrics = run_streaming(config, spark, flush=True)
    assert metrics["rows_in"] == n + 1 and metrics["dead_letter"] == 1
    stream = _stream_batches(spark, config["output"]["path"])
    columns = ["user", "n", "cnt", "total", "low", "high", "urls", "op"]
    net = spark.createDataFrame(_net_rows(rows), SCHEMA)
    expected = Counter(tuple(r) for r in spark.sql(BATCH_SQL, rows=net).collect())
    assert len(expected) == 4
    assert _materialise(spark, stream, columns, "retract", tmp_path / "stream_table") == expected

    df = spark.read.schema(SCHEMA).json(str(tmp_path / "s" / "in"))
    for slices in (1, 3, 7):
        job = {**config, "output": {"path": str(tmp_path / f"b{slices}" / "out")}}
        done = run_backfill(job, BEGIN, end, slices, spark)
        assert done["rows_in"] == n and done["dead_letter"] == 1, done
        sliced = _slice_batches(spark, job["output"]["path"], slices, end)
        assert _materialise(spark, sliced, columns, "retract", tmp_path / f"table{slices}") == expected, slices
        if slices == 3:  # one slice per micro-batch: the same changelog rows, slice by slice
            assert sliced == stream
    assert spark.read.parquet(f"{tmp_path / 'b7' / 'out'}_dead_letter/slice=none").count() == 1
    assert df.count() == n + 1

    # --only 1 re-runs slice 1 from the state slice 0 left: its files are replaced, no other slice's
    out = tmp_path / "b3" / "out"
    before = {d.name: sorted(f.stat().st_mtime for f in d.glob("*.parquet")) for d in sorted(out.glob("slice=*"))}
    run_backfill({**config, "output": {"path": str(out)}}, BEGIN, end, 3, spark, only=[1])
    after = {d.name: sorted(f.stat().st_mtime for f in d.glob("*.parquet")) for d in sorted(out.glob("slice=*"))}
    assert [name for name in before if before[name] != after[name]] == [sorted(before)[1]]
    assert _slice_batches(spark, str(out), 3, end) == stream


@pytest.mark.spark
@pytest.mark.slow  # a stream of 4 micro-batches and a backfill of 4 slices
def test_idle_state_retention_forgets_the_same_keys_in_the_stream_and_the_backfill(spark, tmp_path: Path) -> None:
    n = 48
    rows = [{**r, "op": "+I"} for r in _updating_rows(13, n) if r["op"] in ("+I", "+U")]
    end = BEGIN + timedelta(seconds=n * 8)
    plan = slices_of(BEGIN, end, 4)
    # key z: early in slice 1, then in slice 3 (idle for over a slice: forgotten, it starts over with +I); key y:
    # early in slice 1, then in slice 2, its cleanup time between the two slices' watermarks: the stream takes its
    # rows before its timer fires (kept, +U), and so does the backfill
    rows += [{"user": u, "cTime": plan[1].start + timedelta(seconds=2), "url": "u9", "v": 1, "op": "+I"}
             for u in ("y", "z")]
    rows += [{"user": "z", "cTime": plan[3].start + timedelta(seconds=3), "url": "u9", "v": 2, "op": "+I"},
             {"user": "y", "cTime": plan[2].start + timedelta(seconds=3), "url": "u9", "v": 2, "op": "+I"}]
    rows.sort(key=lambda r: r["cTime"])
    config = _config(tmp_path, "r", "upsert", keys=["user"], aggregates=AGGREGATES,
                     retention={"min_idle": "30 seconds", "max_idle": "40 seconds"})
    _write_files(tmp_path / "r" / "in", _by_slice(rows, 4, end, random.Random(3)))
    run_streaming(config, spark, flush=True)
    stream = _stream_batches(spark, config["output"]["path"])
    job = {**config, "output": {"path": str(tmp_path / "rb" / "out")}}
    run_backfill(job, BEGIN, end, 4, spark)
    sliced = _slice_batches(spark, job["output"]["path"], 4, end)
    assert sliced == stream
    z = [row for batch in sliced for row in batch if row[0] == "z"]
    assert sorted(z) == [("z", 1, 1, 1, 1, 1, 1, "+I"), ("z", 1, 1, 2, 2, 2, 1, "+I")]
    y = [row for batch in sliced for row in batch if row[0] == "y"]
    assert sorted(y) == [("y", 1, 1, 1, 1, 1, 1, "+I"), ("y", 2, 2, 3, 1, 2, 1, "+U")]
