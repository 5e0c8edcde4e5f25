"""The streaming window join (timeweave.spark.window_join_streaming).

* The processor on the streaming host without a JVM (PySpark's TwsTester plays Spark): Flink's documented FULL
  JOIN (LeftTable / RightTable, 5-minute TUMBLE windows) with its published rows; late and dead rows per side.
* Through Spark (file streams, flushed by a heartbeat): Flink's documented examples for every join kind = the
  DataFrame door's rows; random inputs with late and NULL-time rows = the DataFrame door over the on-time pairs.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pyarrow as pa
from pyspark.sql.streaming.tws_tester import TwsTester

from timeweave.core.event_time import END_OF_INPUT_MS
from timeweave.core.windows import tumble
from timeweave.spark import window_join_streaming as J
from timeweave.spark.host import BUCKET, KEY_TEXT, OP, ROW, TIME, pack_rows

MINUTE = 60_000_000
NOON = int((datetime(2020, 4, 15, 12) - datetime(1970, 1, 1)).total_seconds()) * 1_000_000


def _send(tester: TwsTester, side: int, minute: int | None, num: int | None, ident: str) -> Any:
    us = None if minute is None else NOON + minute * MINUTE
    text = json.dumps({"num": num, "id": ident} | ({} if us is None else {"row_time": us}))
    op = (J.LEFT_ROW, J.RIGHT_ROW)[side] if us is not None else (J.DEAD_LEFT, J.DEAD_RIGHT)[side]
    batch = pa.record_batch({
        BUCKET: pa.array([0], pa.int32()), KEY_TEXT: pa.array([json.dumps({"k0": num}) if num is not None else "{}"]),
        OP: pa.array([op], pa.int8()), TIME: pa.array([us or 0], pa.int64()), ROW: pa.array([text], pa.string())})
    return tester.testInPandas(0, next(pack_rows(iter([batch]))).to_pandas())


def _ids(frame, column: str) -> list[str | None]:
    return [None if t is None else json.loads(t)["id"] for t in frame[column]]


def test_flink_docs_full_join_through_the_processor_without_a_jvm() -> None:
    tester = TwsTester(J.JoinProcessor(tumble("5 minutes"), "FULL", ("row_time", "row_time"), 1),
                       timeMode="EventTime", eventTimeExtractor=lambda _r: 2**62)
    for side, minute, num, ident in [(0, 2, 1, "L1"), (0, 6, 2, "L2"), (0, 3, 3, "L3"), (1, 1, 2, "R2"),
                                     (1, 4, 3, "R3"), (1, 5, 4, "R4"), (0, 4, None, "LN")]:
        _send(tester, side, minute, num, ident)
    out = tester.setWatermark((NOON + 5 * MINUTE) // 1000 - 1)  # 12:04:59.999: [12:00, 12:05) fires
    main = out[out[J.KIND] == J.MAIN]
    assert sorted(zip(_ids(main, J.L_ROW), _ids(main, J.R_ROW), strict=True), key=str) == sorted(
        [("L1", None), (None, "R2"), ("L3", "R3"), ("LN", None)], key=str)  # a NULL key joins nothing
    late = _send(tester, 1, 2, 1, "RL")  # the right row for L1 comes after its window fired
    assert late[late[J.KIND] == J.LATE][J.SIDE].tolist() == ["right"]
    dead = _send(tester, 0, None, 9, "LD")
    assert dead[J.SIDE].tolist() == ["left"] and dead[J.REASON].tolist() == ["NULL event time column row_time"]
    out = tester.setWatermark(END_OF_INPUT_MS)
    main = out[out[J.KIND] == J.MAIN]
    assert sorted(zip(_ids(main, J.L_ROW), _ids(main, J.R_ROW), strict=True), key=str) == sorted(
        [("L2", None), (None, "R4")], key=str)
    assert set(main[J.W_START]) == {NOON + 5 * MINUTE}
    assert tester.peekMapState(J.STATE.keys, 0) == {}
