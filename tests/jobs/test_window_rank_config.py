"""The window Top-N and window deduplication job configs (sections ``window_top_n`` / ``window_deduplicate``): strict
keys with a did-you-mean, Flink's rules checked before any Spark job, the registry selecting them, and
``timeweave-job validate`` describing them.  No Spark."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from timeweave.core.windows import hop, tumble
from timeweave.core.windows.ranking import RankRange
from timeweave.jobs import cli
from timeweave.jobs.config import ConfigError, WindowDeduplicateJobConfig, WindowTopNJobConfig, load_job_config
from timeweave.jobs.registry import operator_of

INPUT = {"path": "data/bids", "format": "json", "watermark_delay": "1 minute",
         "schema": "bidtime TIMESTAMP, price DECIMAL(10,2), item STRING, supplier_id STRING"}
TOP_N = {"window_top_n": {"function": "tumble", "time": "bidtime", "size": "10 minutes", "keys": ["supplier_id"],
                          "order_by": ["price DESC"], "n": 3},
         "input": INPUT, "output": {"path": "out/top3"}}
DEDUP = {"window_deduplicate": {"function": "hop", "time": "bidtime", "slide": "5 minutes", "size": "10 minutes",
                                "keys": "item", "keep": "last"},
         "input": INPUT, "output": {"path": "out/last"}}


def _with(data: dict[str, Any], section: str, **values: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for name, value in values.items():
        if value is None:
            out[section].pop(name, None)
        else:
            out[section][name] = value
    return out


def test_sections_select_the_operators() -> None:
    top = load_job_config(TOP_N)
    assert type(top) is WindowTopNJobConfig and operator_of(top).name == "window_top_n"
    assert (top.spec, top.time, top.keys, top.order_by, top.ranks, top.rank_column, top.keep) == (
        tumble("10 minutes"), "bidtime", ("supplier_id",), ("price DESC",), RankRange.top(3), "rownum", None)
    assert (top.late_path, top.dead_letter_path, top.mode, top.event_time) == (
        "out/top3_late", "out/top3_dead_letter", "event_time", "bidtime")
    dedup = load_job_config(DEDUP)
    assert type(dedup) is WindowDeduplicateJobConfig and operator_of(dedup).name == "window_deduplicate"
    assert (dedup.spec, dedup.keys, dedup.order_by, dedup.ranks, dedup.rank_column, dedup.keep) == (
        hop("5 minutes", "10 minutes"), ("item",), ("bidtime DESC",), RankRange.top(1), None, "last")


def test_ranges_functions_and_rank_column() -> None:
    job = load_job_config(_with(TOP_N, "window_top_n", n=None, ranks=[2, 4], rank_function="dense_rank",
                                rank_column=False))
    assert job.ranks == RankRange("DENSE_RANK", 2, 4) and job.rank_column is None
    tvf = {"window_top_n": {"tvf": "CUMULATE(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES)",
                            "order_by": "price", "n": 1}, "input": INPUT, "output": {"path": "o"}}
    assert load_job_config(tvf).spec.kind == "CUMULATE"


@pytest.mark.parametrize(("data", "message"), [
    (_with(TOP_N, "window_top_n", ordr_by="x"), "window_top_n.ordr_by: unknown key; did you mean 'order_by'?"),
    (_with(TOP_N, "window_top_n", ranks=[1, 2]), "window_top_n.n: give exactly one of 'n'"),
    (_with(TOP_N, "window_top_n", n=None), "window_top_n.n: give exactly one of 'n'"),
    (_with(TOP_N, "window_top_n", n=0), "window_top_n.n: a rank bound is an integer >= 1"),
    (_with(TOP_N, "window_top_n", n=None, ranks=[3, 2]), "window_top_n.ranks: the rank range is empty"),
    (_with(TOP_N, "window_top_n", n=None, ranks=[3]), r"window_top_n.ranks: expected \[lower, upper\]"),
    (_with(TOP_N, "window_top_n", rank_function="NTILE"), "window_top_n.rank_function: expected one of ROW_NUMBER"),
    (_with(TOP_N, "window_top_n", rank_column=True), "window_top_n.rank_column: expected the rank's column name"),
    (_with(TOP_N, "window_top_n", order_by=[]), "window_top_n.order_by: a window Top-N needs at least one ORDER BY"),
    (_with(TOP_N, "window_top_n", order_by=None), "window_top_n.order_by: missing key"),
    (_with(TOP_N, "window_top_n", function="session", size=None, gap="1 minute"),
     "window_top_n.gap: unknown key"),
    (_with(TOP_N, "window_top_n", function="tumbel"), "window_top_n.function: unknown window function 'tumbel'; did you mean 'tumble'"),
    (_with(TOP_N, "window_top_n", size=None), r"window_top_n.size: missing key \(required by TUMBLE\)"),
    (_with(DEDUP, "window_deduplicate", keep="middle"), "window_deduplicate.keep: expected 'first' or 'last'"),
    (_with(DEDUP, "window_deduplicate", order_by="x"), "window_deduplicate.order_by: unknown key"),
    ({**TOP_N, "window_deduplicate": {}}, "window_deduplicate: this section belongs to another operator's job, not a "
     "window Top-N job"),
])
def test_a_bad_key_is_one_error_that_names_its_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_job_config(data)


def test_a_session_window_is_refused_as_flink_does() -> None:
    data = {"window_deduplicate": {"tvf": "SESSION(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)"},
            "input": INPUT, "output": {"path": "o"}}
    with pytest.raises(ConfigError, match=r"window_deduplicate\.function: Flink runs window deduplication over TUMBLE"):
        load_job_config(data)


def test_validate_describes_the_job(capsys) -> None:
    assert cli.main(["validate", json.dumps(TOP_N)]) == 0
    assert capsys.readouterr().out.split(": valid ", 1)[1] == (
        "window Top-N job: TumbleSpec(size=600000, offset=0) on bidtime, keys [supplier_id], "
        "ROW_NUMBER in [1, 3] by price DESC as rownum; input data/bids -> output out/top3\n")
    assert cli.main(["validate", json.dumps(DEDUP)]) == 0
    assert "valid window deduplication job: HopSpec(slide=300000, size=600000, offset=0) on bidtime, keys [item], keep " \
           "the last row by bidtime" in capsys.readouterr().out


JOIN = {"window_join": {"function": "tumble", "time": "row_time", "size": "5 minutes", "on": "num", "how": "full",
                        "left_prefix": "L_", "right_prefix": "R_"},
        "left": {"path": "l", "format": "json", "schema": "row_time TIMESTAMP, num INT, id STRING"},
        "right": {"path": "r", "format": "json", "schema": "t TIMESTAMP, n INT, id STRING"},
        "output": {"path": "out"}}


def test_the_window_join_section() -> None:
    from timeweave.jobs.config import WindowJoinJobConfig

    job = load_job_config(_with(JOIN, "window_join", right_time="t", right_on="n"))
    assert type(job) is WindowJoinJobConfig and operator_of(job).name == "window_join"
    assert (job.times, job.on, job.how, job.left_prefix) == (("row_time", "t"), (("num", "n"),), "FULL", "L_")
    for data, message in [
        (_with(JOIN, "window_join", keys="num"), "window_join.keys: unknown key"),
        (_with(JOIN, "window_join", how="cross"), "window_join.how: expected one of inner"),
        (_with(JOIN, "window_join", right_on=["a", "b"]), "window_join.right_on: as many columns as 'on'"),
        (_with(JOIN, "window_join", function="session", size=None, gap="1 minute"), "window_join.gap: unknown key"),
    ]:
        with pytest.raises(ConfigError, match=message):
            load_job_config(data)
    assert cli.main(["validate", json.dumps(JOIN)]) == 0
