"""The MATCH_RECOGNIZE work budget through the streaming job: a hot key is dead-lettered, other keys match.

The hot key's rows make ``A+ B`` re-read one long A run per start row (quadratic); with a small
``match_recognize.budget`` the key runs out, its rows from the open attempt on (and every later row) go to the
dead letter with the reason, in the other dead letters' shape, and the same rows as the core's matcher gives;
the cold key's matches equal the batch door's.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mr_random import canonical
from timeweave.core.pattern import BUDGET_REASON_CODE, MatchBudget, PartitionMatcher, parse_clause
from timeweave.jobs.streaming import run_streaming
from timeweave.spark.match_recognize import match_recognize

pytestmark = pytest.mark.spark

CLAUSE = ("PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS t0, COUNT(*) AS n "
          "PATTERN (A+ B) DEFINE A AS A.v > 0, B AS B.v < 0")
SCHEMA = "id STRING, k STRING, t TIMESTAMP, v BIGINT"
BUDGET = {"base_work": 300, "work_per_row": 2}
_T0 = datetime(2026, 11, 26, 10, 0)


def _rows() -> list[dict[str, Any]]:
    rows = []
    for i in range(240):
        # hot: two matches, then A runs of 80 rows that end without a B (v = 0): each start re-reads the run
        hot = -1 if i in (3, 7) else 0 if i % 80 == 79 else 1
        cold = -1 if i % 4 == 3 else 1  # cold: A A A B, linear
        t = (_T0 + timedelta(seconds=i)).isoformat()
        rows.append({"id": f"h{i}", "k": "hot", "t": t, "v": hot})
        rows.append({"id": f"c{i}", "k": "cold", "t": t, "v": cold})
    return rows


def test_streaming_job_dead_letters_the_hot_key_and_keeps_the_others(spark, tmp_path: Path) -> None:
    rows = _rows()
    (tmp_path / "in").mkdir()
    for part in range(3):  # three files, three micro-batches' worth of input
        chunk = rows[part * 160:(part + 1) * 160]
        (tmp_path / "in" / f"{part}.json").write_text("".join(json.dumps(r) + "\n" for r in chunk))
    config = {
        "match_recognize": {"clause": CLAUSE, "budget": BUDGET},
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": SCHEMA, "watermark_delay": "0 seconds"},
        "output": {"path": str(tmp_path / "out")},
        "checkpoint": str(tmp_path / "chk"),
        "trigger": {"available_now": True},
    }
    metrics = run_streaming(config, spark, flush=True)

    # the core's matcher with the same budget: which hot rows are rejected, and the hot matches before
    spec = parse_clause(CLAUSE)
    core = PartitionMatcher(spec, budget=MatchBudget.from_mapping(BUDGET), dead_letter=True)
    hot = [{"id": r["id"], "k": "hot", "t": datetime.fromisoformat(r["t"]), "v": r["v"]} for r in rows if r["k"] == "hot"]
    core_out = core.push_many(hot) + core.finish()
    rejected_ids = [r["id"] for r in core.take_rejected()]
    assert core.exceeded is not None and len(core_out) == 2 and rejected_ids[-1] == "h239"

    dead = spark.read.parquet(f"{tmp_path}/out_dead_letter").collect()
    assert sorted(json.loads(r["row"])["id"] for r in dead) == sorted(rejected_ids)
    assert metrics["dead_letter"] == len(rejected_ids)
    assert {r["side"] for r in dead} == {"input"}
    assert {r["reason"] for r in dead} == {core.exceeded.reason}
    assert core.exceeded.reason.startswith(f"{BUDGET_REASON_CODE}: pattern A+ B ran out of its match budget at row ")
    # the dead letter's row is the input row's to_json, as for the other dead letters
    source = spark.read.schema(SCHEMA).json(str(tmp_path / "in"))
    as_json = {r["id"]: r["row"] for r in source.selectExpr("id", "to_json(struct(*)) AS row").collect()}
    assert all(r["row"] == as_json[json.loads(r["row"])["id"]] for r in dead)

    main = spark.read.parquet(str(tmp_path / "out"))
    cold = match_recognize(source.where("k = 'cold'"), CLAUSE)
    assert len(cold.collect()) == 60
    expected = canonical(cold.collect(), cold.columns) + canonical(core_out, cold.columns)
    assert canonical(main.collect(), cold.columns) == expected


def test_dataframe_door_and_backfill_dead_letter_the_same_rows(spark, tmp_path: Path) -> None:
    from timeweave.jobs.backfill import run_backfill
    from timeweave.spark.match_recognize import match_recognize_with_rejects

    rows = _rows()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "all.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    source = spark.read.schema(SCHEMA).json(str(tmp_path / "in"))
    spec = parse_clause(CLAUSE)
    core = PartitionMatcher(spec, budget=MatchBudget.from_mapping(BUDGET), dead_letter=True)
    hot = [{"id": r["id"], "k": "hot", "t": datetime.fromisoformat(r["t"]), "v": r["v"]} for r in rows if r["k"] == "hot"]
    core_out = core.push_many(hot) + core.finish()
    rejected_ids = sorted(r["id"] for r in core.take_rejected())
    assert core.exceeded is not None
    as_json = {r["id"]: r["row"] for r in source.selectExpr("id", "to_json(struct(*)) AS row").collect()}
    cold = match_recognize(source.where("k = 'cold'"), CLAUSE)
    expected = canonical(cold.collect(), cold.columns) + canonical(core_out, cold.columns)

    # the DataFrame door: the plain door leaves the rows out, with_rejects lists them with the reason
    matches, dead = match_recognize_with_rejects(source, CLAUSE, budget=BUDGET)
    assert canonical(matches.collect(), cold.columns) == expected
    assert canonical(match_recognize(source, CLAUSE, budget=BUDGET).collect(), cold.columns) == expected
    dead_rows = dead.collect()
    assert sorted(json.loads(r["row"])["id"] for r in dead_rows) == rejected_ids
    assert {(r["side"], r["reason"]) for r in dead_rows} == {("input", core.exceeded.reason)}
    assert all(r["row"] == as_json[json.loads(r["row"])["id"]] for r in dead_rows)

    # the backfill, three slices: the poisoned key's state carries over, its later rows are dead-lettered too
    config = {
        "match_recognize": {"clause": CLAUSE, "budget": BUDGET},
        "input": {"path": str(tmp_path / "in"), "format": "json", "schema": SCHEMA},
        "output": {"path": str(tmp_path / "bf")},
    }
    metrics = run_backfill(config, _T0.isoformat(), (_T0 + timedelta(seconds=240)).isoformat(), slices=3,
                           spark=spark)
    out = spark.read.parquet(str(tmp_path / "bf"))
    assert canonical(out.collect(), cold.columns) == expected
    backfill_dead = spark.read.parquet(f"{tmp_path}/bf_dead_letter").collect()
    assert sorted(json.loads(r["row"])["id"] for r in backfill_dead) == rejected_ids
    assert {r["reason"] for r in backfill_dead} == {core.exceeded.reason}
    assert metrics["dead_letter"] == len(rejected_ids)
    assert sum(1 for m in metrics["per_slice"] if m["dead_letter"]) >= 2  # more than the slice where it ran out
