"""A Flink SQL script in streaming mode (``timeweave-job sql --mode streaming``): each INSERT a checkpointed query.

* Flushed, the streaming script writes the batch script's rows and dead letters (random orders with out-of-order
  times, NULL keys and NULL times; inner and LEFT joins; a key expression), and Flink's rows of ``tj_pk_inner``.
* Restarted across runs with late rows, it writes exactly what the temporal join's streaming job config writes
  over the same files in the same runs (main, late and dead letter): the door translates, never re-decides.
* A ``PROCTIME()`` column makes Flink's processing-time temporal join: each order joins its key's latest version.
* What streaming cannot run (an aggregate around the join, MATCH_RECOGNIZE, a left time that is no time attribute)
  fails before any Spark job, positioned in the script.
* Window Top-N, window deduplication, SESSION aggregation and window joins, run in two steps over random rows
  (out of order, NULL times, rows behind the first step's watermark), write the batch script's rows and dead
  letters over the rows that were on time, and the others to ``<sink>_late``; their shapes streaming cannot run
  fail positioned.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

import pytest

from tests.helpers.flink_cases import load_case, rows_as_text
from tests.spark.test_ddl_tables import _headerless_csv
from tests.spark.test_sql_script_job import SCRIPT as FLINK_SCRIPT
from timeweave.core.errors import QuerySyntaxError
from timeweave.jobs import cli
from timeweave.jobs.sql_script import run_sql_script
from timeweave.jobs.streaming import run_streaming

pytestmark = pytest.mark.spark

DELAY = 5

SCRIPT = """-- orders enriched with the rate in force at each order's time
CREATE TEMPORARY TABLE {orders} (
  order_id STRING, currency STRING, price DECIMAL(10, 2), order_time TIMESTAMP(3){proc},
  WATERMARK FOR order_time AS order_time - INTERVAL '{delay}' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{orders_path}', 'format' = 'csv');
CREATE TEMPORARY TABLE {rates} (
  currency STRING, rate DECIMAL(10, 4), update_time TIMESTAMP(3),
  PRIMARY KEY (currency) NOT ENFORCED,
  WATERMARK FOR update_time AS update_time - INTERVAL '{delay}' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{rates_path}', 'format' = 'csv');
CREATE TEMPORARY TABLE {sink} (
  order_id STRING, currency STRING, price DECIMAL(10, 2), order_time TIMESTAMP(3), rate DECIMAL(10, 4),
  update_time TIMESTAMP(3), price_eur DECIMAL(24, 6)
) WITH ('connector' = 'filesystem', 'path' = '{sink_path}', 'format' = 'parquet');
INSERT INTO {sink}
SELECT o.order_id, o.currency, o.price, o.order_time, r.rate, r.update_time, o.price * r.rate AS price_eur
FROM {orders} AS o
{how} JOIN {rates} FOR SYSTEM_TIME AS OF o.{time} AS r
ON {key} = r.currency
WHERE o.price >= 0;
"""

CURRENCIES = ["EUR", "USD", "JPY", "GBP"]


def _script(tmp_path: Path, *, how: str = "", key: str = "o.currency", time: str = "order_time", proc: str = "",
            orders: Path | None = None, rates: Path | None = None, sink: str = "out") -> str:
    tag = uuid.uuid4().hex[:8]
    return SCRIPT.format(
        orders=f"orders_{tag}", rates=f"rates_{tag}", sink=f"sink_{tag}", delay=DELAY, how=how, key=key, time=time,
        proc=proc, orders_path=orders or tmp_path / "orders", rates_path=rates or tmp_path / "rates",
        sink_path=tmp_path / sink)


def _stamp(second: int) -> str:
    return f"2024-03-01 {10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"


def _orders(rng: random.Random, n: int, start: int, span: int, prefix: str) -> list[str]:
    """Orders over ``[start, start + span)`` seconds in random order; some with a NULL currency or time."""
    lines = []
    for i in range(n):
        currency = "" if rng.random() < 0.08 else rng.choice(CURRENCIES)
        when = "" if rng.random() < 0.05 else _stamp(start + rng.randrange(span))
        lines.append(f"{prefix}{i},{currency},{rng.randrange(-5, 500)}.{rng.randrange(100):02d},{when}")
    return lines


def _rates(rng: random.Random, n: int, start: int, span: int) -> list[str]:
    lines = []
    for _ in range(n):
        currency = "" if rng.random() < 0.05 else rng.choice(CURRENCIES)
        lines.append(f"{currency},{rng.randrange(1, 3)}.{rng.randrange(10_000):04d},{_stamp(start + rng.randrange(span))}")
    return lines


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _main(spark, path: Path) -> list[tuple]:
    return sorted(map(tuple, spark.read.parquet(str(path)).collect()), key=repr)


def _dead(spark, path: Path) -> list[tuple]:
    if not path.exists():
        return []
    return sorted((r["reason"], r["row"]) for r in spark.read.parquet(str(path)).collect())


@pytest.mark.parametrize(("how", "key"), [("", "o.currency"), ("LEFT", "o.currency"), ("", "upper(o.currency)")],
                         ids=["inner", "left", "key expression"])
def test_a_flushed_streaming_script_writes_the_batch_scripts_rows(spark, tmp_path: Path, how: str, key: str) -> None:
    rng = random.Random(f"{how}{key}")
    _write(tmp_path / "orders" / "part-0.csv", _orders(rng, 300, 0, 600, "o"))
    _write(tmp_path / "rates" / "part-0.csv", _rates(rng, 60, 0, 600))
    streaming = run_sql_script(spark, _script(tmp_path, how=how, key=key, sink="stream"), mode="streaming",
                               checkpoint=str(tmp_path / "chk"), flush=True)
    batch = run_sql_script(spark, _script(tmp_path, how=how, key=key, sink="batch"))
    rows = _main(spark, tmp_path / "batch")
    assert rows and _main(spark, tmp_path / "stream") == rows
    dead = _dead(spark, tmp_path / "batch_dead_letter")
    assert dead and _dead(spark, tmp_path / "stream_dead_letter") == dead
    [one] = streaming["inserts"]
    assert one["flushed"] and one["late"] == 0 and one["rows_out"] == len(rows) == batch["rows_out"]
    assert one["dead_letter"] == len(dead) and one["rows_in_left"] == 300 and one["rows_in_right"] == 60
    if key != "o.currency":  # the hidden key column stays out of the dead letters, as in the batch door
        assert all("upper" not in row for _, row in dead)


def test_flinks_rows_through_the_streaming_cli(spark, tmp_path: Path, capsys) -> None:
    # the batch job's Flink script (test_sql_script_job) without its GROUP BY insert, which streams no Flink rows
    text = FLINK_SCRIPT.split("CREATE TEMPORARY TABLE {counts}")[0] + "INSERT INTO {sink}\n" + (
        FLINK_SCRIPT.split("INSERT INTO {sink}\n")[1].split("INSERT OVERWRITE")[0])
    tag = uuid.uuid4().hex[:8]
    script = text.format(
        orders=f"orders_{tag}", rates=f"rates_{tag}", sink=f"sink_{tag}",
        orders_path=_headerless_csv(tmp_path, "tj_pk_inner", "orders.csv"),
        rates_path=_headerless_csv(tmp_path, "tj_pk_inner", "currency_rates.csv"), sink_path=tmp_path / "out")
    path = tmp_path / "job.sql"
    path.write_text(script)
    argv = ["sql", "--file", str(path), "--mode", "streaming", "--checkpoint", str(tmp_path / "chk"), "--flush"]
    assert cli.main(argv) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1].split(" ", 1)[1])
    header, expected = load_case("tj_pk_inner").expected()
    assert rows_as_text(spark.read.parquet(str(tmp_path / "out")), header) == sorted(expected)
    assert metrics["mode"] == "streaming" and metrics["rows_out"] == len(expected)
    assert cli.main(argv) == 0  # a re-run resumes from the checkpoint: nothing new, nothing written twice
    assert spark.read.parquet(str(tmp_path / "out")).count() == len(expected)


def _job_config(tmp_path: Path) -> dict:
    schema = "order_id STRING, currency STRING, price DECIMAL(10, 2), order_time TIMESTAMP_NTZ"
    return {
        "left": {"path": str(tmp_path / "orders"), "format": "csv", "schema": schema,
                 "watermark_delay": f"{DELAY} seconds"},
        "right": {"path": str(tmp_path / "rates"), "format": "csv",
                  "schema": "currency STRING, rate DECIMAL(10, 4), update_time TIMESTAMP_NTZ",
                  "watermark_delay": f"{DELAY} seconds"},
        "versioned": {"key": "currency", "time": "update_time"},
        "join": {"left_time": "order_time", "how": "left"},
        "output": {"path": str(tmp_path / "job")},
        "checkpoint": str(tmp_path / "job_chk"),
    }


def test_a_restarted_streaming_script_writes_the_streaming_jobs_rows(spark, tmp_path: Path) -> None:
    rng = random.Random(7)
    script = _script(tmp_path, how="LEFT")
    config = _job_config(tmp_path)

    def both(flush: bool) -> None:
        run_sql_script(spark, script, mode="streaming", checkpoint=str(tmp_path / "chk"), flush=flush)
        run_streaming(config, spark, flush=flush)

    _write(tmp_path / "orders" / "part-0.csv", _orders(rng, 200, 0, 1200, "a"))
    _write(tmp_path / "rates" / "part-0.csv", _rates(rng, 40, 0, 1200))
    both(False)
    # the second file's orders before second 1,000 are behind the watermark the first run reached: late
    _write(tmp_path / "orders" / "part-1.csv", _orders(rng, 200, 600, 1200, "b"))
    _write(tmp_path / "rates" / "part-1.csv", _rates(rng, 40, 1000, 900))
    both(False)
    both(True)
    columns = ["order_id", "currency", "price", "order_time", "rate"]  # the job outputs no version time
    job_rows = spark.read.parquet(str(tmp_path / "job")).where("price >= 0").select(*columns)  # the script's WHERE
    job = sorted(map(tuple, job_rows.collect()), key=repr)
    assert job and sorted((r[:5] for r in _main(spark, tmp_path / "out")), key=repr) == job
    late = sorted(r["order_id"] for r in spark.read.parquet(str(tmp_path / "job_late")).collect())
    assert late and sorted(r["order_id"] for r in spark.read.parquet(str(tmp_path / "out_late")).collect()) == late
    assert _dead(spark, tmp_path / "out_dead_letter") == _dead(spark, tmp_path / "job_dead_letter")
    assert spark.read.parquet(str(tmp_path / "out")).where("price_eur <> price * rate").count() == 0


def test_a_proctime_column_makes_a_processing_time_join(spark, tmp_path: Path) -> None:
    _write(tmp_path / "rates" / "part-0.csv", ["EUR,1.1000,2024-03-01 10:00:00", "EUR,1.2000,2024-03-01 11:00:00",
                                                "USD,0.9000,2024-03-01 10:30:00"])
    script = _script(tmp_path, proc=", proc AS PROCTIME()", time="proc", how="LEFT")
    chk = str(tmp_path / "chk")
    (tmp_path / "orders").mkdir()
    run_sql_script(spark, script, mode="streaming", checkpoint=chk)
    # orders from any time join the version in force when they are processed: the latest, without waiting
    _write(tmp_path / "orders" / "part-0.csv", ["o1,EUR,10.00,2024-03-01 09:00:00", "o2,USD,20.00,2024-03-01 12:00:00",
                                                 "o3,JPY,1.00,2024-03-01 10:00:00"])
    metrics = run_sql_script(spark, script, mode="streaming", checkpoint=chk)
    got = {r["order_id"]: r["rate"] for r in spark.read.parquet(str(tmp_path / "out")).collect()}
    assert {k: None if v is None else str(v) for k, v in got.items()} == {"o1": "1.2000", "o2": "0.9000", "o3": None}
    assert metrics["inserts"][0]["late"] == 0


@pytest.mark.parametrize(("change", "message", "at"), [
    (("SELECT o.order_id, o.currency, o.price, o.order_time, r.rate, r.update_time, o.price * r.rate AS price_eur",
      "SELECT MAX(o.order_id), MAX(o.currency), SUM(o.price), MAX(o.order_time), MAX(r.rate), MAX(r.update_time), 0"),
     "holds Aggregate", "orders_"),
    (("WHERE o.price >= 0;", "ORDER BY o.price LIMIT 5;"), "holds GlobalLimit, LocalLimit, Sort", "orders_"),
    (("SELECT o.order_id,", "SELECT DISTINCT o.order_id,"), "holds Distinct", "orders_"),
    (("o.price * r.rate AS price_eur", "COUNT(*) OVER (PARTITION BY o.currency)"), "holds Window", "orders_"),
    ((",\n  WATERMARK FOR order_time AS order_time - INTERVAL '5' SECOND", ""), "declares no WATERMARK", "orders_"),
])
def test_what_streaming_cannot_run_fails_before_any_spark_job(spark, tmp_path: Path, change, message, at) -> None:
    _write(tmp_path / "orders" / "part-0.csv", ["o1,EUR,10.00,2024-03-01 09:00:00"])
    _write(tmp_path / "rates" / "part-0.csv", ["EUR,1.1000,2024-03-01 08:00:00"])
    script = _script(tmp_path).replace(*change)
    with pytest.raises(QuerySyntaxError, match=message) as caught:
        run_sql_script(spark, script, mode="streaming", checkpoint=str(tmp_path / "chk"))
    assert script[caught.value.position:].startswith(at)
    assert not (tmp_path / "out").exists()


BIDS_SCRIPT = """
CREATE TEMPORARY TABLE {bids} (
  bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING, supplier_id STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '{delay}' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{bids_path}', 'format' = 'csv');
CREATE TEMPORARY TABLE {sink} ({columns}) WITH ('connector' = 'filesystem', 'path' = '{sink_path}', 'format' = 'parquet');
INSERT INTO {sink}
{query};
"""

#: (sink columns, query over {bids}): Flink's window queries, as written for Flink.
BIDS_QUERIES = {
    "tumble": ("window_start TIMESTAMP(3), window_end TIMESTAMP(3), item STRING, n BIGINT, total DECIMAL(20, 2)",
               "SELECT window_start, window_end, item, COUNT(*) AS n, SUM(price) AS total FROM TABLE("
               "TUMBLE(TABLE {bids}, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES)) GROUP BY window_start, window_end, item"),
    "hop": ("window_start TIMESTAMP(3), window_end TIMESTAMP(3), lo DECIMAL(10, 2), hi DECIMAL(10, 2), "
            "mean DECIMAL(14, 6)",
            "SELECT window_start, window_end, MIN(price), MAX(price) AS hi, AVG(price) FROM TABLE(HOP(TABLE {bids}, "
            "DESCRIPTOR(bidtime), INTERVAL '30' SECONDS, INTERVAL '2' MINUTES)) GROUP BY window_start, window_end"),
    "legacy group window": (
        "item STRING, window_end TIMESTAMP(3), n BIGINT",
        "SELECT item, TUMBLE_END(bidtime, INTERVAL '1' MINUTE) AS window_end, COUNT(price) AS n FROM {bids} "
        "GROUP BY TUMBLE(bidtime, INTERVAL '1' MINUTE), item"),
    "match_recognize": (
        "item STRING, start_price DECIMAL(10, 2), bottom DECIMAL(10, 2), rows_in BIGINT",
        "SELECT m.item, m.start_price, m.bottom, m.n * 1 FROM {bids} MATCH_RECOGNIZE (PARTITION BY item "
        "ORDER BY bidtime MEASURES A.price AS start_price, LAST(B.price) AS bottom, COUNT(*) AS n "
        "PATTERN (A B+) DEFINE B AS B.price < PREV(B.price)) AS m WHERE m.n > 2"),
}


def _bids(rng: random.Random, n: int) -> list[str]:
    lines = []
    for _ in range(n):
        when = "" if rng.random() < 0.03 else _stamp(rng.randrange(600))
        lines.append(f"{when},{rng.randrange(1, 90)}.{rng.randrange(100):02d},{rng.choice('abcd')},s{rng.randrange(5)}")
    return lines


def _bids_script(tmp_path: Path, name: str, sink: str) -> str:
    tag = uuid.uuid4().hex[:8]
    columns, query = BIDS_QUERIES[name]
    return BIDS_SCRIPT.format(bids=f"bids_{tag}", sink=f"sink_{tag}", delay=DELAY, bids_path=tmp_path / "bids",
                              sink_path=tmp_path / sink, columns=columns, query=query.format(bids=f"bids_{tag}"))


@pytest.mark.parametrize("name", list(BIDS_QUERIES))
def test_window_aggregations_and_match_recognize_stream_the_batch_scripts_rows(spark, tmp_path: Path, name: str) -> None:
    _write(tmp_path / "bids" / "part-0.csv", _bids(random.Random(name), 400))
    streaming = run_sql_script(spark, _bids_script(tmp_path, name, "stream"), mode="streaming",
                               checkpoint=str(tmp_path / "chk"), flush=True)
    run_sql_script(spark, _bids_script(tmp_path, name, "batch"))
    rows = _main(spark, tmp_path / "batch")
    assert rows and _main(spark, tmp_path / "stream") == rows
    [one] = streaming["inserts"]
    assert one["late"] == 0 and one["rows_out"] == len(rows) and one["rows_in"] == 400
    null_times = sum(1 for line in (tmp_path / "bids" / "part-0.csv").read_text().splitlines() if line.startswith(","))
    assert one["dead_letter"] == null_times > 0
    assert _dead(spark, tmp_path / "stream_dead_letter") == _dead(spark, tmp_path / "batch_dead_letter")


#: (sink columns, query over {bids}): Flink's window Top-N, window deduplication and SESSION aggregation.
WINDOW_OPERATOR_QUERIES = {
    "top-n tumble": (
        "bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING, supplier_id STRING, window_start TIMESTAMP(3), "
        "window_end TIMESTAMP(3), window_time TIMESTAMP(3), rownum BIGINT",
        "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, item ORDER BY price DESC) "
        "AS rownum FROM TABLE(TUMBLE(TABLE {bids}, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES))) WHERE rownum <= 3"),
    "rank hop": (  # RANK, a column list, the TVF's alias as qualifier, BETWEEN and another outer condition
        "item STRING, price DECIMAL(10, 2), window_start TIMESTAMP(3), window_end TIMESTAMP(3), r BIGINT",
        "SELECT item, price, window_start, window_end, r FROM (SELECT b.item, b.price, b.window_start, window_end, "
        "RANK() OVER (PARTITION BY window_start, b.window_end ORDER BY b.price ASC) AS r FROM TABLE(HOP(TABLE {bids}, "
        "DESCRIPTOR(bidtime), INTERVAL '30' SECONDS, INTERVAL '2' MINUTES)) AS b) t WHERE t.r BETWEEN 2 AND 4 "
        "AND price > 5"),
    "deduplication cumulate": (
        "window_start TIMESTAMP(3), window_end TIMESTAMP(3), item STRING, bidtime TIMESTAMP(3), price DECIMAL(10, 2)",
        "SELECT window_start, window_end, item, bidtime, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
        "window_start, window_end, item ORDER BY bidtime DESC) AS rownum FROM TABLE(CUMULATE(TABLE {bids}, "
        "DESCRIPTOR(bidtime), INTERVAL '1' MINUTES, INTERVAL '3' MINUTES))) WHERE rownum = 1"),
    "session": (
        "window_start TIMESTAMP(3), window_end TIMESTAMP(3), item STRING, n BIGINT, total DECIMAL(20, 2)",
        "SELECT window_start, window_end, item, COUNT(*) AS n, SUM(price) AS total FROM TABLE(SESSION(TABLE {bids} "
        "PARTITION BY item, DESCRIPTOR(bidtime), INTERVAL '5' SECONDS)) GROUP BY window_start, window_end, item"),
}


def _timed_bids(rng: random.Random, prices, n: int, start: int, end: int, nulls: bool = True) -> list[str]:
    """Bids at distinct milliseconds of ``[start, end)`` seconds in random order, each at a price of ``prices``
    (distinct: no ranking ties, whose order SQL leaves open); some with a NULL time."""
    lines = []
    for ms in rng.sample(range(start * 1000, end * 1000), n):
        price = next(prices)
        when = "" if nulls and rng.random() < 0.04 else f"{_stamp(ms // 1000)}.{ms % 1000:03d}"
        lines.append(f"{when},{price // 100}.{price % 100:02d},{rng.choice('abcd')},s{rng.randrange(5)}")
    return lines


def _operator_script(tmp_path: Path, name: str, sink: str, bids: str, tag: str) -> str:
    columns, query = WINDOW_OPERATOR_QUERIES[name]
    return BIDS_SCRIPT.format(bids=f"bids_{tag}", sink=f"sink_{tag}", delay=DELAY, bids_path=tmp_path / bids,
                              sink_path=tmp_path / sink, columns=columns, query=query.format(bids=f"bids_{tag}"))


@pytest.mark.parametrize("name", list(WINDOW_OPERATOR_QUERIES))
def test_window_rankings_and_sessions_stream_the_batch_scripts_rows(spark, tmp_path: Path, name: str) -> None:
    rng = random.Random(name)
    prices = iter(rng.sample(range(100, 100_000), 400))
    first = _timed_bids(rng, prices, 150, 300, 600)
    # behind the first run's watermark (~595 s) by minutes: late for every window they fall in
    old = _timed_bids(rng, prices, 30, 0, 120, nulls=False)
    new = _timed_bids(rng, prices, 150, 600, 900)
    script = _operator_script(tmp_path, name, "stream", "bids", uuid.uuid4().hex[:8])
    _write(tmp_path / "bids" / "part-0.csv", first)
    run_sql_script(spark, script, mode="streaming", checkpoint=str(tmp_path / "chk"))
    _write(tmp_path / "bids" / "part-1.csv", old + new)
    streaming = run_sql_script(spark, script, mode="streaming", checkpoint=str(tmp_path / "chk"), flush=True)
    # the batch script over the rows that were on time: what the stream's windows saw
    _write(tmp_path / "on_time" / "part-0.csv", first + new)
    run_sql_script(spark, _operator_script(tmp_path, name, "batch", "on_time", uuid.uuid4().hex[:8]))
    rows = _main(spark, tmp_path / "batch")
    assert rows and _main(spark, tmp_path / "stream") == rows
    dead = _dead(spark, tmp_path / "batch_dead_letter")
    assert dead and _dead(spark, tmp_path / "stream_dead_letter") == dead
    late = sorted(str(r["price"]) for r in spark.read.parquet(str(tmp_path / "stream_late")).collect())
    assert late == sorted(line.split(",")[1] for line in old)
    [one] = streaming["inserts"]
    assert one["flushed"] and one["late"] == len(old) and one["rows_in"] == len(old) + len(new)


@pytest.mark.parametrize(("name", "change", "message", "at"), [
    ("top-n tumble", ("FROM TABLE(TUMBLE(TABLE {bids}, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES))",
                      "FROM (SELECT window_start, window_end, item, SUM(price) AS price FROM TABLE(TUMBLE(TABLE {bids}, "
                      "DESCRIPTOR(bidtime), INTERVAL '1' MINUTES)) GROUP BY window_start, window_end, item)"),
     "runs two operators", "(SELECT window_start"),
    ("top-n tumble", ("INTERVAL '1' MINUTES))", "INTERVAL '1' MINUTES)) WHERE price > 10"),
     "would apply before ranking", "WHERE price > 10"),
    ("top-n tumble", (" WHERE rownum <= 3", " WHERE item <> 'a'"), "keeps the ranks its outer WHERE bounds",
     "WHERE item"),
    ("session", ("GROUP BY window_start, window_end, item", "GROUP BY window_start, window_end, item, supplier_id"),
     r"exactly its PARTITION BY columns \(item\), found item, supplier_id", "GROUP BY window_start, window_end, item, "),
])
def test_window_operator_shapes_streaming_cannot_run_fail_positioned(spark, tmp_path: Path, name, change, message,
                                                                     at) -> None:
    _write(tmp_path / "bids" / "part-0.csv", ["2024-03-01 10:00:00.000,1.00,a,s1"])
    tag = uuid.uuid4().hex[:8]
    script = _operator_script(tmp_path, name, "out", "bids", tag)
    script = script.replace(*(part.format(bids=f"bids_{tag}") for part in change))
    with pytest.raises(QuerySyntaxError, match=message) as caught:
        run_sql_script(spark, script, mode="streaming", checkpoint=str(tmp_path / "chk"))
    assert script[caught.value.position:].startswith(at)
    assert not (tmp_path / "out").exists()


JOIN_SCRIPT = """
CREATE TEMPORARY TABLE {left} (
  row_time TIMESTAMP(3), num INT, id STRING,
  WATERMARK FOR row_time AS row_time - INTERVAL '{delay}' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{left_path}', 'format' = 'csv');
CREATE TEMPORARY TABLE {right} (
  row_time TIMESTAMP(3), num INT, id STRING,
  WATERMARK FOR row_time AS row_time - INTERVAL '{delay}' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{right_path}', 'format' = 'csv');
CREATE TEMPORARY TABLE {sink} ({columns}) WITH ('connector' = 'filesystem', 'path' = '{sink_path}', 'format' = 'parquet');
INSERT INTO {sink}
{query};
"""

#: (sink columns, query over {left} and {right}): Flink's window joins, as its docs write them.
JOIN_QUERIES = {
    "full tumble": (
        "L_Num INT, L_Id STRING, R_Num INT, R_Id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3)",
        "SELECT L.num AS L_Num, L.id AS L_Id, R.num AS R_Num, R.id AS R_Id, COALESCE(L.window_start, R.window_start) "
        "AS window_start, COALESCE(L.window_end, R.window_end) AS window_end FROM (SELECT * FROM TABLE(TUMBLE(TABLE "
        "{left}, DESCRIPTOR(row_time), INTERVAL '1' MINUTES))) L FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE {right}, "
        "DESCRIPTOR(row_time), INTERVAL '1' MINUTES))) R ON L.num = R.num AND L.window_start = R.window_start AND "
        "L.window_end = R.window_end"),
    "left hop": (
        "l_time TIMESTAMP(3), l_id STRING, r_id STRING, window_time TIMESTAMP(3)",
        "SELECT a.row_time, a.id, b.id, a.window_time FROM TABLE(HOP(TABLE {left}, DESCRIPTOR(row_time), "
        "INTERVAL '30' SECONDS, INTERVAL '1' MINUTES)) AS a LEFT OUTER JOIN TABLE(HOP(TABLE {right}, "
        "DESCRIPTOR(row_time), INTERVAL '30' SECONDS, INTERVAL '1' MINUTES)) b ON b.window_end = a.window_end "
        "AND a.num = b.num AND a.window_start = b.window_start WHERE b.id IS NULL OR a.id < b.id"),
}


def _join_rows(rng: random.Random, side: str, n: int, start: int, end: int, nulls: bool = True) -> list[str]:
    """Rows at distinct milliseconds of ``[start, end)`` seconds in random order, ids ``<side><ms>``; a few with a
    NULL time or a NULL key."""
    lines = []
    for ms in rng.sample(range(start * 1000, end * 1000), n):
        when = "" if nulls and rng.random() < 0.04 else f"{_stamp(ms // 1000)}.{ms % 1000:03d}"
        num = "" if rng.random() < 0.05 else str(rng.randrange(6))
        lines.append(f"{when},{num},{side}{ms}")
    return lines


def _join_script(tmp_path: Path, name: str, sink: str, inputs: str, tag: str) -> str:
    columns, query = JOIN_QUERIES[name]
    names = {"left": f"left_{tag}", "right": f"right_{tag}"}
    return JOIN_SCRIPT.format(**names, sink=f"sink_{tag}", delay=DELAY, left_path=tmp_path / inputs / "left",
                              right_path=tmp_path / inputs / "right", sink_path=tmp_path / sink, columns=columns,
                              query=query.format(**names))


@pytest.mark.parametrize("name", list(JOIN_QUERIES))
def test_window_joins_stream_the_batch_scripts_rows(spark, tmp_path: Path, name: str) -> None:
    rng = random.Random(name)
    parts = {side: (_join_rows(rng, side, 80, 300, 600), _join_rows(rng, side, 15, 0, 120, nulls=False),
                    _join_rows(rng, side, 80, 600, 900)) for side in ("left", "right")}
    script = _join_script(tmp_path, name, "stream", "in", uuid.uuid4().hex[:8])
    for side, (first, _, _) in parts.items():
        _write(tmp_path / "in" / side / "part-0.csv", first)
    run_sql_script(spark, script, mode="streaming", checkpoint=str(tmp_path / "chk"))
    for side, (_, old, new) in parts.items():  # the old rows are behind the first run's watermark: late
        _write(tmp_path / "in" / side / "part-1.csv", old + new)
        _write(tmp_path / "on_time" / side / "part-0.csv", parts[side][0] + new)
    streaming = run_sql_script(spark, script, mode="streaming", checkpoint=str(tmp_path / "chk"), flush=True)
    run_sql_script(spark, _join_script(tmp_path, name, "batch", "on_time", uuid.uuid4().hex[:8]))
    rows = _main(spark, tmp_path / "batch")
    assert rows and _main(spark, tmp_path / "stream") == rows
    dead = _dead(spark, tmp_path / "batch_dead_letter")
    assert dead and _dead(spark, tmp_path / "stream_dead_letter") == dead
    late = sorted(json.loads(r["row"])["id"] for r in spark.read.parquet(str(tmp_path / "stream_late")).collect())
    assert late == sorted(line.rsplit(",", 1)[1] for side in parts.values() for line in side[1])
    [one] = streaming["inserts"]
    assert one["flushed"] and one["late"] == len(late)


@pytest.mark.parametrize(("change", "message", "at"), [
    (("L.window_end = R.window_end", "L.window_end = R.window_end AND L.id < R.id"),
     "equates columns of the two sides", "L.id < R.id"),
    (("(SELECT * FROM TABLE(TUMBLE(TABLE {right}", "(SELECT num, id, window_start, window_end FROM TABLE(TUMBLE("
      "TABLE {right}"), "the TVF's rows as they are", "(SELECT num, id"),
    (("FULL JOIN", "CROSS JOIN"), "INNER, LEFT, RIGHT or FULL", "CROSS JOIN"),
])
def test_window_join_shapes_streaming_cannot_run_fail_positioned(spark, tmp_path: Path, change, message, at) -> None:
    tag = uuid.uuid4().hex[:8]
    for side in ("left", "right"):
        _write(tmp_path / "in" / side / "part-0.csv", ["2024-03-01 10:00:00.000,1,x"])
    script = _join_script(tmp_path, "full tumble", "out", "in", tag)
    names = {"left": f"left_{tag}", "right": f"right_{tag}"}
    script = script.replace(*(part.format(**names) for part in change))
    with pytest.raises(QuerySyntaxError, match=message) as caught:
        run_sql_script(spark, script, mode="streaming", checkpoint=str(tmp_path / "chk"))
    assert script[caught.value.position:].startswith(at)
    assert not (tmp_path / "out").exists()
