"""Window Top-N, window deduplication and window join through the batch doors (DataFrame, SQL).

* Flink's documented examples (the docs' Bid, LeftTable and RightTable with their published outputs): the
  SQL door runs the docs' queries as written, the DataFrame helpers give the same rows;
* random inputs (out of order, ties on the order key, NULL event times, rows that a stream would see late:
  batch has no watermark, so every row counts): DataFrame = SQL = an independent Python reference built on the
  core's window assignment;
* queries and calls Flink refuses fail before any Spark job, SQL with the position in the query.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

import timeweave
from tests.helpers.spark_jobs import no_spark_job as _no_job
from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.windows import assign_windows, cumulate, hop, session, tumble
from timeweave.core.windows.late import format_ms

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)




def _text(value):
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, Decimal):
        return f"{value:.2f}"
    return str(value)


def _rows(df, columns):
    return sorted((tuple(_text(r[c]) for c in columns) for r in df.collect()), key=str)


# -- Flink's documented examples ----------------------------------------------------------------------------

BIDS = [("08:05", "4.00", "A", "supplier1"), ("08:06", "4.00", "C", "supplier2"), ("08:07", "2.00", "G", "supplier1"),
        ("08:08", "2.00", "B", "supplier3"), ("08:09", "5.00", "D", "supplier4"), ("08:11", "2.00", "B", "supplier3"),
        ("08:13", "1.00", "E", "supplier1"), ("08:15", "3.00", "H", "supplier2"), ("08:17", "6.00", "F", "supplier5")]


@pytest.fixture(scope="module")
def bid(spark):
    rows = [(datetime.fromisoformat(f"2020-04-15 {t}").replace(tzinfo=UTC), Decimal(p), i, s) for t, p, i, s in BIDS]
    df = spark.createDataFrame(rows, "bidtime TIMESTAMP, price DECIMAL(10, 2), item STRING, supplier_id STRING")
    df.createOrReplaceTempView("Bid")
    return df


@pytest.fixture(scope="module")
def left_right(spark):
    def table(rows, name):
        df = spark.createDataFrame([(datetime.fromisoformat(f"2020-04-15 {t}").replace(tzinfo=UTC), n, i)
                                    for t, n, i in rows], "row_time TIMESTAMP, num INT, id STRING")
        df.createOrReplaceTempView(name)
        return df

    return (table([("12:02", 1, "L1"), ("12:06", 2, "L2"), ("12:03", 3, "L3")], "LeftTable"),
            table([("12:01", 2, "R2"), ("12:04", 3, "R3"), ("12:05", 4, "R4")], "RightTable"))


TOP_AFTER_AGG = """SELECT *
  FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) as rownum
    FROM (
      SELECT window_start, window_end, supplier_id, SUM(price) as price, COUNT(*) as cnt
      FROM TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)
      GROUP BY window_start, window_end, supplier_id
    )
  ) WHERE rownum <= 3"""
TOP_AFTER_AGG_OUT = [  # window_start, window_end, supplier_id, price, cnt, rownum (Flink's docs)
    ("2020-04-15 08:00", "2020-04-15 08:10", "supplier1", "6.00", "2", "1"),
    ("2020-04-15 08:00", "2020-04-15 08:10", "supplier4", "5.00", "1", "2"),
    ("2020-04-15 08:00", "2020-04-15 08:10", "supplier2", "4.00", "1", "3"),
    ("2020-04-15 08:10", "2020-04-15 08:20", "supplier5", "6.00", "1", "1"),
    ("2020-04-15 08:10", "2020-04-15 08:20", "supplier2", "3.00", "1", "2"),
    ("2020-04-15 08:10", "2020-04-15 08:20", "supplier3", "2.00", "1", "3")]

TOP_AFTER_TVF = """SELECT *
  FROM (
    SELECT bidtime, price, item, supplier_id, window_start, window_end, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) as rownum
    FROM TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)
  ) WHERE rownum <= 3"""
TOP_AFTER_TVF_OUT = [  # bidtime, price, item, supplier_id, window_start, window_end, rownum (Flink's docs)
    ("2020-04-15 08:05", "4.00", "A", "supplier1", "2020-04-15 08:00", "2020-04-15 08:10", "2"),
    ("2020-04-15 08:06", "4.00", "C", "supplier2", "2020-04-15 08:00", "2020-04-15 08:10", "3"),
    ("2020-04-15 08:09", "5.00", "D", "supplier4", "2020-04-15 08:00", "2020-04-15 08:10", "1"),
    ("2020-04-15 08:11", "2.00", "B", "supplier3", "2020-04-15 08:10", "2020-04-15 08:20", "3"),
    ("2020-04-15 08:15", "3.00", "H", "supplier2", "2020-04-15 08:10", "2020-04-15 08:20", "2"),
    ("2020-04-15 08:17", "6.00", "F", "supplier5", "2020-04-15 08:10", "2020-04-15 08:20", "1")]

DEDUP = """SELECT *
  FROM (
    SELECT bidtime, price, item, supplier_id, window_start, window_end,
      ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY bidtime DESC) AS rownum
    FROM TABLE(
               TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
  ) WHERE rownum <= 1"""
DEDUP_OUT = [("2020-04-15 08:09", "5.00", "D", "supplier4", "2020-04-15 08:00", "2020-04-15 08:10", "1"),
             ("2020-04-15 08:17", "6.00", "F", "supplier5", "2020-04-15 08:10", "2020-04-15 08:20", "1")]


def _untied(rows, rank_at):
    """Rows with a ROW_NUMBER among equal order values (A and C both 4.00): SQL leaves their order open, so
    the rank is compared as the set of ranks of the tied rows."""
    return sorted((r[:rank_at] + r[rank_at + 1:], r[rank_at]) for r in rows)


def test_flink_top_n_after_window_aggregation(spark, bid) -> None:
    columns = ["window_start", "window_end", "supplier_id", "price", "cnt", "rownum"]
    assert _rows(timeweave.sql(spark, TOP_AFTER_AGG), columns) == sorted(TOP_AFTER_AGG_OUT, key=str)
    per_supplier = timeweave.window_aggregate(bid, {"price": "SUM(price)", "cnt": "COUNT(*)"}, keys="supplier_id",
                                              time="bidtime", window=tumble("10 minutes"))
    got = timeweave.window_top_n(per_supplier, 3, order_by="price DESC")
    assert _rows(got, columns) == sorted(TOP_AFTER_AGG_OUT, key=str)


def test_flink_top_n_after_window_tvf(spark, bid) -> None:
    columns = ["bidtime", "price", "item", "supplier_id", "window_start", "window_end", "rownum"]
    expected = [r for r in TOP_AFTER_TVF_OUT]
    tie_free = lambda rows: sorted((r[:6], r[6] if r[1] != "4.00" else "2|3") for r in rows)  # noqa: E731
    assert tie_free(_rows(timeweave.sql(spark, TOP_AFTER_TVF), columns)) == tie_free(expected)
    got = timeweave.window_top_n(bid, 3, order_by="price DESC", time="bidtime", window=tumble("10 minutes"))
    assert tie_free(_rows(got, columns)) == tie_free(expected)
    # the tied pair takes ranks 2 and 3, one each
    ranks = sorted(r["rownum"] for r in got.collect() if str(r["price"]) == "4.00")
    assert ranks == [2, 3]


def test_flink_window_deduplication(spark, bid) -> None:
    columns = ["bidtime", "price", "item", "supplier_id", "window_start", "window_end", "rownum"]
    assert _rows(timeweave.sql(spark, DEDUP), columns) == sorted(DEDUP_OUT, key=str)
    got = timeweave.window_deduplicate(bid, time="bidtime", keep="last", window=tumble("10 minutes"),
                                       rank_column="rownum")
    assert _rows(got, columns) == sorted(DEDUP_OUT, key=str)
    first = timeweave.window_deduplicate(timeweave.tumble(bid, "bidtime", "10 minutes"), time="bidtime")
    assert _rows(first, ["item"]) == [("A",), ("B",)] and "rownum" not in first.columns


WINDOW_JOIN = """SELECT L.num as L_Num, L.id as L_Id, R.num as R_Num, R.id as R_Id,
           COALESCE(L.window_start, R.window_start) as window_start,
           COALESCE(L.window_end, R.window_end) as window_end
           FROM (
               SELECT * FROM TABLE(TUMBLE(TABLE LeftTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
           ) L
           FULL JOIN (
               SELECT * FROM TABLE(TUMBLE(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
           ) R
           ON L.num = R.num AND L.window_start = R.window_start AND L.window_end = R.window_end"""
WINDOW_JOIN_OUT = [("1", "L1", None, None, "2020-04-15 12:00", "2020-04-15 12:05"),
                   (None, None, "2", "R2", "2020-04-15 12:00", "2020-04-15 12:05"),
                   ("3", "L3", "3", "R3", "2020-04-15 12:00", "2020-04-15 12:05"),
                   ("2", "L2", None, None, "2020-04-15 12:05", "2020-04-15 12:10"),
                   (None, None, "4", "R4", "2020-04-15 12:05", "2020-04-15 12:10")]
_L = "SELECT * FROM TABLE(TUMBLE(TABLE LeftTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))"
_R = "SELECT * FROM TABLE(TUMBLE(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))"
SEMI_ANTI = {
    "IN": f"SELECT * FROM ({_L}) L WHERE L.num IN (SELECT num FROM ({_R}) R WHERE L.window_start = R.window_start "
          "AND L.window_end = R.window_end)",
    "EXISTS": f"SELECT * FROM ({_L}) L WHERE EXISTS (SELECT * FROM ({_R}) R WHERE L.num = R.num AND L.window_start "
              "= R.window_start AND L.window_end = R.window_end)",
    "NOT IN": f"SELECT * FROM ({_L}) L WHERE L.num NOT IN (SELECT num FROM ({_R}) R WHERE L.window_start = "
              "R.window_start AND L.window_end = R.window_end)",
    "NOT EXISTS": f"SELECT * FROM ({_L}) L WHERE NOT EXISTS (SELECT * FROM ({_R}) R WHERE L.num = R.num AND "
                  "L.window_start = R.window_start AND L.window_end = R.window_end)",
}
SEMI_OUT = [("2020-04-15 12:03", "3", "L3", "2020-04-15 12:00", "2020-04-15 12:05")]
ANTI_OUT = [("2020-04-15 12:02", "1", "L1", "2020-04-15 12:00", "2020-04-15 12:05"),
            ("2020-04-15 12:06", "2", "L2", "2020-04-15 12:05", "2020-04-15 12:10")]


def test_flink_window_join_full(spark, left_right) -> None:
    left, right = left_right
    columns = ["L_Num", "L_Id", "R_Num", "R_Id", "window_start", "window_end"]
    assert _rows(timeweave.sql(spark, WINDOW_JOIN), columns) == sorted(WINDOW_JOIN_OUT, key=str)
    got = timeweave.window_join(left, right, on="num", how="full", time="row_time", window=tumble("5 minutes"),
                                left_prefix="L_", right_prefix="R_")
    assert got.columns == ["window_start", "window_end", "window_time", "L_row_time", "L_num", "L_id",
                           "R_row_time", "R_num", "R_id"]
    assert _rows(got.withColumnRenamed("L_num", "L_Num").withColumnRenamed("L_id", "L_Id")
                 .withColumnRenamed("R_num", "R_Num").withColumnRenamed("R_id", "R_Id"), columns) == sorted(
        WINDOW_JOIN_OUT, key=str)


@pytest.mark.parametrize("kind", list(SEMI_ANTI))
def test_flink_semi_and_anti_window_joins(spark, left_right, kind) -> None:
    left, right = left_right
    columns = ["row_time", "num", "id", "window_start", "window_end"]
    expected = sorted(ANTI_OUT if kind.startswith("NOT") else SEMI_OUT, key=str)
    out = timeweave.sql(spark, SEMI_ANTI[kind])
    assert _rows(out, columns) == expected
    assert [format_ms(r[0]) for r in out.selectExpr("unix_millis(window_time)").collect()][:1] in (
        ["2020-04-15 12:04:59.999"], ["2020-04-15 12:09:59.999"])
    how = "anti" if kind.startswith("NOT") else "semi"
    got = timeweave.window_join(left, right, on="num", how=how, time="row_time", window=tumble("5 minutes"))
    assert got.columns == ["row_time", "num", "id", "window_start", "window_end", "window_time"]
    assert _rows(got, columns) == expected


def test_null_event_times_go_to_the_dead_letter(spark, bid) -> None:
    null_row = spark.createDataFrame([(None, Decimal("9.00"), "Z", "supplier9")], bid.schema)
    with_null = bid.unionByName(null_row)
    top, rejected = timeweave.window_top_n_with_rejects(with_null, 3, order_by="price DESC", time="bidtime",
                                                        window=tumble("10 minutes"))
    assert "Z" not in {r["item"] for r in top.collect()} and top.count() == 6
    assert [(r["side"], r["reason"]) for r in rejected.collect()] == [("input", "NULL event time column bidtime")]
    latest, rejected = timeweave.window_deduplicate_with_rejects(with_null, time="bidtime", keep="last",
                                                                 window=tumble("10 minutes"))
    assert latest.count() == 2 and rejected.count() == 1
    joined, rejected = timeweave.window_join_with_rejects(with_null, bid, on="supplier_id", how="semi",
                                                          time="bidtime", window=tumble("10 minutes"))
    assert joined.count() == len(BIDS)
    assert [(r["side"], '"Z"' in r["row"]) for r in rejected.collect()] == [("left", True)]


# -- random inputs against a Python reference ------------------------------------------------------------

def _random_rows(seed: int, n: int = 70, unique_times: bool = False):
    """Rows (id, k, v, ts): times out of order, some NULL, a tail of rows far behind the newest ones (late
    in a stream with a small watermark delay; batch counts them), ties on v."""
    rnd = random.Random(seed)
    base = datetime(2020, 4, 15, 8, 0, tzinfo=UTC)
    offsets = rnd.sample(range(0, 60_000_000, 1000), n) if unique_times else [
        rnd.randrange(0, 60_000_000, 500) for _ in range(n)]
    rows = []
    for i, offset in enumerate(offsets):
        t = None if rnd.random() < 0.07 else base + timedelta(microseconds=offset)
        rows.append((i, rnd.choice(["a", "b", None]), rnd.randint(1, 6), t))
    rnd.shuffle(rows)
    late = [(n + j, "a", rnd.randint(1, 6), base + timedelta(seconds=rnd.randint(0, 10))) for j in range(5)]
    return rows + late  # the late tail arrives last, with times near the start


def _ms(ts: datetime) -> int:
    return (ts - _EPOCH) // timedelta(milliseconds=1)


def _assigned(rows, spec):
    dicts = [{"id": i, "k": k, "v": v, "ts": None if t is None else _ms(t)} for i, k, v, t in rows]
    return assign_windows(spec, dicts, time_column="ts", time_of=lambda r: r["ts"]).rows


def _reference_rank(rows, spec, function, lower, upper, keyed, order):
    """(id, window start, window end, rank), ranked by ``order`` (a key function; smaller first)."""
    groups = {}
    for row, w in _assigned(rows, spec):
        groups.setdefault((w.start, w.end, row["k"] if keyed else None), []).append(row)
    out = []
    for (start, end, _), members in groups.items():
        members.sort(key=order)
        for position, row in enumerate(members, start=1):
            rank = position if function == "ROW_NUMBER" else None
            if function == "RANK":
                rank = 1 + sum(1 for m in members if order(m)[:-1] < order(row)[:-1])
            if function == "DENSE_RANK":
                rank = len({order(m)[:-1] for m in members if order(m)[:-1] < order(row)[:-1]}) + 1
            if lower <= rank <= upper:
                out.append((row["id"], start, end, rank))
    return sorted(out)


def _ranked(df, rank_column="rownum"):
    return sorted(tuple(r) for r in df.selectExpr("id", "unix_millis(window_start)", "unix_millis(window_end)",
                                                  rank_column).collect())


@pytest.fixture(scope="module")
def random_input(spark):
    rows = _random_rows(7)
    df = spark.createDataFrame(rows, "id INT, k STRING, v INT, ts TIMESTAMP")
    df.createOrReplaceTempView("tw_ops_random")
    return rows, df


_TVF_SQL = {
    "TUMBLE": "TABLE(TUMBLE(TABLE tw_ops_random, DESCRIPTOR(ts), INTERVAL '10' SECONDS))",
    "HOP": "TABLE(HOP(TABLE tw_ops_random, DESCRIPTOR(ts), INTERVAL '5' SECONDS, INTERVAL '15' SECONDS))",
    "CUMULATE": "TABLE(CUMULATE(TABLE tw_ops_random, DESCRIPTOR(ts), INTERVAL '4' SECONDS, INTERVAL '12' SECONDS))",
}
_SPECS = {"TUMBLE": tumble("10 seconds"), "HOP": hop("5 seconds", "15 seconds"),
          "CUMULATE": cumulate("4 seconds", "12 seconds")}


@pytest.mark.parametrize(("function", "tvf", "lower", "upper", "keyed", "where"), [
    ("ROW_NUMBER", "TUMBLE", 1, 3, True, "rownum <= 3"),
    ("RANK", "HOP", 1, 2, False, "rownum < 3"),
    ("DENSE_RANK", "CUMULATE", 2, 3, True, "rownum BETWEEN 2 AND 3"),
    ("ROW_NUMBER", "HOP", 2, 2, False, "rownum = 2"),
])
def test_random_top_n_dataframe_equals_sql_equals_reference(spark, random_input, function, tvf, lower, upper,
                                                            keyed, where) -> None:
    rows, df = random_input
    # ROW_NUMBER needs a total order to be comparable: v DESC, then id; RANK and DENSE_RANK rank v DESC alone.
    by_id = function == "ROW_NUMBER"
    expected = _reference_rank(rows, _SPECS[tvf], function, lower, upper, keyed,
                               lambda r: (-r["v"], r["id"] if by_id else 0))
    assert expected  # the case ranks something
    partition = ", k" if keyed else ""
    order = "v DESC, id" if by_id else "v DESC"
    query = (f"SELECT * FROM (SELECT *, {function}() OVER (PARTITION BY window_start, window_end{partition} "
             f"ORDER BY {order}) AS rownum FROM {_TVF_SQL[tvf]}) WHERE {where}")
    assert _ranked(timeweave.sql(spark, query)) == expected
    got = timeweave.window_top_n(df, ranks=(lower, upper), function=function, order_by=order.split(", "),
                                 partition_by=["k"] if keyed else [], time="ts", window=_SPECS[tvf])
    assert _ranked(got) == expected


@pytest.mark.parametrize("keep", ["first", "last"])
def test_random_deduplication_dataframe_equals_sql_equals_reference(spark, keep) -> None:
    rows = _random_rows(23, unique_times=True)
    rows = [r for r in rows if r[0] < 70]  # the late tail may tie on times; dedup needs distinct times
    df = spark.createDataFrame(rows, "id INT, k STRING, v INT, ts TIMESTAMP")
    df.createOrReplaceTempView("tw_ops_dedup")
    sign = 1 if keep == "first" else -1
    expected = _reference_rank(rows, _SPECS["HOP"], "ROW_NUMBER", 1, 1, True, lambda r: (sign * r["ts"], 0))
    direction = "ASC" if keep == "first" else "DESC"
    query = (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, k ORDER BY ts "
             f"{direction}) AS rownum FROM TABLE(HOP(TABLE tw_ops_dedup, DESCRIPTOR(ts), INTERVAL '5' SECONDS, "
             "INTERVAL '15' SECONDS))) WHERE rownum < 2")
    assert _ranked(timeweave.sql(spark, query)) == expected
    got = timeweave.window_deduplicate(df, time="ts", keys="k", keep=keep, window=_SPECS["HOP"], rank_column="rn")
    assert _ranked(got, "rn") == expected


def _reference_join(left_rows, right_rows, spec, how):
    """(left id, right id, window start) of a window join on k (NULL keys join nothing)."""
    left = [(r["id"], r["k"], w) for r, w in _assigned(left_rows, spec)]
    right = [(r["id"], r["k"], w) for r, w in _assigned(right_rows, spec)]
    matches = [(li, ri, lw.start) for li, lk, lw in left for ri, rk, rw in right
               if lk is not None and lk == rk and lw == rw]
    matched_left = {(li, s) for li, _, s in matches}
    matched_right = {(ri, s) for _, ri, s in matches}
    if how == "semi":
        return sorted({(li, None, lw.start) for li, _, lw in left if (li, lw.start) in matched_left}, key=str)
    if how == "anti":
        return sorted({(li, None, lw.start) for li, _, lw in left if (li, lw.start) not in matched_left}, key=str)
    out = list(matches)
    if how in ("left", "full"):
        out += [(li, None, lw.start) for li, _, lw in left if (li, lw.start) not in matched_left]
    if how in ("right", "full"):
        out += [(None, ri, rw.start) for ri, _, rw in right if (ri, rw.start) not in matched_right]
    return sorted(out, key=str)


_JOIN_SQL = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN"}


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
def test_random_window_join_dataframe_equals_sql_equals_reference(spark, how) -> None:
    left_rows, right_rows = _random_rows(31, n=40), _random_rows(32, n=40)
    left = spark.createDataFrame(left_rows, "id INT, k STRING, v INT, ts TIMESTAMP")
    right = spark.createDataFrame(right_rows, "id INT, k STRING, v INT, ts TIMESTAMP")
    left.createOrReplaceTempView("tw_ops_left")
    right.createOrReplaceTempView("tw_ops_right")
    spec = hop("5 seconds", "10 seconds")
    expected = _reference_join(left_rows, right_rows, spec, how)
    tvf = "SELECT * FROM TABLE(HOP(TABLE {t}, DESCRIPTOR(ts), INTERVAL '5' SECONDS, INTERVAL '10' SECONDS))"
    lt, rt = tvf.format(t="tw_ops_left"), tvf.format(t="tw_ops_right")
    if how in _JOIN_SQL:
        query = (f"SELECT L.id AS l_id, R.id AS r_id, unix_millis(COALESCE(L.window_start, R.window_start)) AS ws "
                 f"FROM ({lt}) L {_JOIN_SQL[how]} ({rt}) R ON L.k = R.k AND L.window_start = R.window_start AND "
                 "L.window_end = R.window_end")
        got_sql = [tuple(r) for r in timeweave.sql(spark, query).collect()]
        df = timeweave.window_join(left, right, on="k", how=how, time="ts", window=spec, left_prefix="l_",
                                   right_prefix="r_").selectExpr("l_id", "r_id", "unix_millis(window_start)")
    else:
        negate = "NOT " if how == "anti" else ""
        query = (f"SELECT L.id, NULL AS r_id, unix_millis(L.window_start) FROM ({lt}) L WHERE {negate}EXISTS "
                 f"(SELECT * FROM ({rt}) R WHERE L.k = R.k AND L.window_start = R.window_start AND "
                 "L.window_end = R.window_end)")
        got_sql = [tuple(r) for r in timeweave.sql(spark, query).collect()]
        df = timeweave.window_join(left, right, on="k", how=how, time="ts", window=spec).selectExpr(
            "id", "NULL", "unix_millis(window_start)")
    assert sorted(got_sql, key=str) == expected
    assert sorted((tuple(r) for r in df.collect()), key=str) == expected


# -- what Flink refuses: before any Spark job ------------------------------------------------------------

def test_bad_sql_fails_before_any_job_with_position(spark, left_right, bid) -> None:
    hop_right = WINDOW_JOIN.replace(
        "TUMBLE(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES)",
        "HOP(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)")
    with pytest.raises(QuerySyntaxError, match="same window TVF") as error:
        _no_job(spark, lambda: timeweave.sql(spark, hop_right))
    assert error.value.line == 8 and hop_right[error.value.position:].startswith("TABLE(HOP")
    ten = SEMI_ANTI["EXISTS"].replace("TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5'",
                                      "TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '10'")
    with pytest.raises(QuerySyntaxError, match="same window TVF"):
        _no_job(spark, lambda: timeweave.sql(spark, ten))
    session_top = TOP_AFTER_TVF.replace("TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)",
                                        "SESSION(TABLE Bid PARTITION BY item, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES)")
    with pytest.raises(QuerySyntaxError, match="not SESSION windows directly") as error:
        _no_job(spark, lambda: timeweave.sql(spark, session_top))
    assert session_top[error.value.position:].startswith("ROW_NUMBER")


@pytest.mark.parametrize(("call", "argument"), [
    (lambda df, r: timeweave.window_top_n(df, 0, order_by="price", time="bidtime", window=tumble("1 minute")), "n"),
    (lambda df, r: timeweave.window_top_n(df, 3, order_by="nope", time="bidtime", window=tumble("1 minute")),
     "order_by"),
    (lambda df, r: timeweave.window_top_n(df, 3, order_by="price"), "df"),
    (lambda df, r: timeweave.window_top_n(df, ranks=(3, 2), order_by="price", time="bidtime",
                                          window=tumble("1 minute")), "upper"),
    (lambda df, r: timeweave.window_top_n(df, 3, function="NTILE", order_by="price", time="bidtime",
                                          window=tumble("1 minute")), "function"),
    (lambda df, r: timeweave.window_top_n(df, 3, order_by="price", time="bidtime", window=session("1 minute")),
     "window"),
    (lambda df, r: timeweave.window_deduplicate(df, time="price", window=tumble("1 minute")), "time"),
    (lambda df, r: timeweave.window_deduplicate(timeweave.tumble(df, "bidtime", "1 minute"), time="price"), "time"),
    (lambda df, r: timeweave.window_deduplicate(df, time="bidtime", keep="any", window=tumble("1 minute")), "keep"),
    (lambda df, r: timeweave.window_join(df, r, on="num", time=("bidtime", "row_time"),
                                         window=(tumble("5 minutes"), hop("5 minutes", "10 minutes"))),
     "right_window"),
    (lambda df, r: timeweave.window_join(r, r, on="num", how="full", time="row_time", window=tumble("5 minutes")),
     "right_prefix"),
    (lambda df, r: timeweave.window_join(r, r, on="num", how="cross", time="row_time", window=tumble("5 minutes")),
     "how"),
    (lambda df, r: timeweave.window_join(r, r, on="nope", time="row_time", window=tumble("5 minutes")), "on"),
])
def test_bad_calls_fail_before_any_job(spark, bid, left_right, call, argument) -> None:
    with pytest.raises(SpecError) as error:
        _no_job(spark, lambda: call(bid, left_right[1]))
    assert error.value.argument == argument, str(error.value)
