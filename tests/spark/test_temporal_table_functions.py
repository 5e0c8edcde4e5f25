"""Flink's temporal table function join (``LATERAL TABLE (Rates(o.rowtime))``) through ``timeweave.sql``."""

from __future__ import annotations

import pytest

import timeweave
from tests.helpers.flink_cases import dataframe, load_case, rows_as_text
from timeweave.core.errors import QuerySyntaxError, SpecError

pytestmark = pytest.mark.spark

FLINK_FORM = """
SELECT o.order_id, o.price, o.currency, r.conversion_rate, o.order_time, r.update_time AS rate_time
FROM orders AS o, LATERAL TABLE (Rates(o.order_time)) AS r
WHERE r.currency = o.currency"""


@pytest.fixture()
def case(spark):
    case = load_case("tj_pk_inner")
    dataframe(spark, case.tables["orders"]).createOrReplaceTempView("orders")
    dataframe(spark, case.tables["currency_rates"]).createOrReplaceTempView("rates_history")
    timeweave.create_temporal_table_function(spark, "Rates", "rates_history", time="update_time", key="currency")
    return case


def test_flinks_temporal_table_function_join_gives_flinks_rows(spark, case) -> None:
    header, expected = case.expected()
    assert rows_as_text(timeweave.sql(spark, FLINK_FORM), header) == sorted(expected)


def test_dead_letters_of_the_lateral_form_are_the_temporal_joins(spark, case) -> None:
    rejected = timeweave.dead_letters(spark, FLINK_FORM)
    assert set(rejected.columns) == {"side", "reason", "row", "clause"}
    assert all(r["clause"].startswith("temporal join #1") for r in rejected.collect())


def test_join_lateral_on_form_and_extra_where_terms_equal_the_temporal_join(spark, case) -> None:
    lateral = timeweave.sql(spark, """
        SELECT o.order_id, r.conversion_rate FROM orders AS o
        JOIN LATERAL TABLE (Rates(o.order_time)) AS r ON TRUE
        WHERE o.currency = r.currency AND r.conversion_rate > 0.5""")
    timeweave.register_versioned(spark, "rates_v", spark.table("rates_history"),
                                 timeweave.core.spec.VersionedTableSpec("currency", "update_time"))
    direct = timeweave.sql(spark, """
        SELECT o.order_id, r.conversion_rate FROM orders AS o
        JOIN rates_v FOR SYSTEM_TIME AS OF o.order_time AS r ON o.currency = r.currency
        WHERE r.conversion_rate > 0.5""")
    assert sorted(map(tuple, lateral.collect())) == sorted(map(tuple, direct.collect()))
    assert lateral.count() > 0


def test_unknown_function_and_missing_key_condition_are_positioned(spark, case) -> None:
    with pytest.raises(QuerySyntaxError, match="Prices is not a temporal table function") as caught:
        timeweave.sql(spark, FLINK_FORM.replace("Rates(", "Prices("))
    assert caught.value.line == 3
    with pytest.raises(QuerySyntaxError, match="found no such equality"):
        timeweave.sql(spark, FLINK_FORM.replace("r.currency = o.currency", "r.conversion_rate > 1"))


def test_a_history_without_the_key_column_fails_naming_it(spark, case) -> None:
    with pytest.raises(SpecError, match="'ccy' not found"):
        timeweave.create_temporal_table_function(spark, "Bad", "rates_history", time="update_time", key="ccy")


def test_a_dropped_function_is_unknown_again(spark, case) -> None:
    from timeweave.spark.temporal_functions import drop_temporal_table_function

    timeweave.create_temporal_table_function(spark, "DropMe", "rates_history", time="update_time", key="currency")
    query = FLINK_FORM.replace("Rates(", "DropMe(")
    assert timeweave.sql(spark, query).count() > 0
    assert drop_temporal_table_function(spark, "dropme") and not drop_temporal_table_function(spark, "DropMe")
    with pytest.raises(QuerySyntaxError, match="DropMe is not a temporal table function"):
        timeweave.sql(spark, query)
