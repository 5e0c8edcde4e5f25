"""A Flink SQL script as a batch job (``timeweave-job sql --file``): DDL, a statement set, Flink's rows in the sinks."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.helpers.flink_cases import load_case, rows_as_text
from tests.spark.test_ddl_tables import _headerless_csv
from timeweave.jobs import cli

pytestmark = pytest.mark.spark

SCRIPT = """-- a Flink job file, as written for Flink
CREATE TEMPORARY TABLE {orders} (
  order_id STRING, price DECIMAL(32, 2), currency STRING, order_time TIMESTAMP(3),
  WATERMARK FOR order_time AS order_time
) WITH ('connector' = 'filesystem', 'path' = '{orders_path}', 'format' = 'csv');
CREATE TEMPORARY TABLE {rates} (
  currency STRING, conversion_rate DECIMAL(32, 4), update_time TIMESTAMP(3),
  PRIMARY KEY (currency) NOT ENFORCED,
  WATERMARK FOR update_time AS update_time
) WITH ('connector' = 'filesystem', 'path' = '{rates_path}', 'format' = 'csv');
CREATE TEMPORARY TABLE {sink} (
  order_id STRING, price DECIMAL(32, 2), currency STRING, conversion_rate DECIMAL(32, 4),
  order_time TIMESTAMP(3), rate_time TIMESTAMP(3)
) WITH ('connector' = 'filesystem', 'path' = '{sink_path}', 'format' = 'parquet');
CREATE TEMPORARY TABLE {counts} (currency STRING, n BIGINT)
WITH ('connector' = 'filesystem', 'path' = '{counts_path}', 'format' = 'csv');
EXECUTE STATEMENT SET BEGIN
INSERT INTO {sink}
SELECT o.order_id, o.price, o.currency, r.conversion_rate, o.order_time, r.update_time AS rate_time
FROM {orders} AS o
JOIN {rates} FOR SYSTEM_TIME AS OF o.order_time AS r
ON o.currency = r.currency;
INSERT OVERWRITE {counts} SELECT currency, COUNT(*) FROM {orders} GROUP BY currency;
END;
"""


def test_a_flink_script_writes_flinks_rows_into_its_sinks(spark, tmp_path, capsys) -> None:
    tag = uuid.uuid4().hex[:8]
    names = {n: f"{n}_{tag}" for n in ("orders", "rates", "sink", "counts")}
    script = SCRIPT.format(
        **names, orders_path=_headerless_csv(tmp_path, "tj_pk_inner", "orders.csv"),
        rates_path=_headerless_csv(tmp_path, "tj_pk_inner", "currency_rates.csv"),
        sink_path=tmp_path / "out" / "joined", counts_path=tmp_path / "out" / "counts")
    path = tmp_path / "job.sql"
    path.write_text(script)
    assert cli.main(["sql", "--file", str(path)]) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1].split(" ", 1)[1])
    header, expected = load_case("tj_pk_inner").expected()
    joined = spark.read.parquet(str(tmp_path / "out" / "joined"))
    assert rows_as_text(joined, header) == sorted(expected)
    counts = spark.read.csv(str(tmp_path / "out" / "counts"), schema="currency STRING, n BIGINT")
    orders = spark.read.csv(_headerless_csv(tmp_path / "again", "tj_pk_inner", "orders.csv"),
                            schema="order_id STRING, price STRING, currency STRING, t STRING")
    by_currency = sorted(map(tuple, orders.groupBy("currency").count().collect()))
    assert sorted(map(tuple, counts.collect())) == by_currency
    assert [i["rows"] for i in metrics["inserts"]] == [len(expected), len(by_currency)]
    assert metrics["inserts"][0]["dead_letter"] == 0 and metrics["rows_out"] == len(expected) + len(by_currency)
    # A second run: INSERT OVERWRITE replaces its sink, INSERT INTO appends to its own
    path.write_text(script.replace(tag, tag + "b"))
    assert cli.main(["sql", "--file", str(path)]) == 0
    assert spark.read.csv(str(tmp_path / "out" / "counts"), schema="currency STRING, n BIGINT").count() == len(by_currency)
    assert spark.read.parquet(str(tmp_path / "out" / "joined")).count() == 2 * len(expected)


def test_an_error_in_a_statement_names_its_line_and_the_file(tmp_path, capsys) -> None:
    path = tmp_path / "bad.sql"
    path.write_text("CREATE TABLE s (a INT) WITH ('connector' = 'filesystem', 'path' = '/o', 'format' = 'avro');\n"
                    "INSERT INTO s SELECT 1;\n")
    assert cli.main(["sql", "--file", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"timeweave-job: error: {path}: ") and "avro" in err
