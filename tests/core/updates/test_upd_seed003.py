"""Seed 003 (dynamic tables, continuous queries): the ``clicks`` examples as tests.

The seed's first query, ``SELECT user, COUNT(url) FROM clicks GROUP BY user``, over ``clicks`` (user, cTime,
url): "after the first row [Mary, ./home] is inserted, the result table consists of one row [Mary, 1]; when the
second row [Bob, ./cart] is inserted, the query updates the result table and inserts a new row [Bob, 1]; the
third row [Mary, ./prod?id=1] updates the computed row [Mary, 1] to [Mary, 2]; finally, when the fourth row is
appended to clicks, the query inserts a third row [Liz, 1] into the result table."  (The fourth row's URL is
only in the seed's figure; any URL gives the same count.)  Its retract stream encodes the update as a retraction
of the previous row and an addition of the new one; its upsert stream as one upsert by the unique key (user).
"""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.core.updates.harness import Stepper
from timeweave.core.operator import Tag
from timeweave.core.spec import StateRetention
from timeweave.core.updates import GroupAggregateOperator, GroupAggregateSpec, MaterializedTable
from timeweave.core.windows.accumulators import AggregateCall, Count, CountStar

CLICKS = [
    {"user": "Mary", "cTime": datetime(2026, 1, 1, 12, 0), "url": "./home"},
    {"user": "Bob", "cTime": datetime(2026, 1, 1, 12, 0), "url": "./cart"},
    {"user": "Mary", "cTime": datetime(2026, 1, 1, 12, 2), "url": "./prod?id=1"},
    {"user": "Liz", "cTime": datetime(2026, 1, 1, 12, 3), "url": "./home"},
]

#: The result table after each row of CLICKS (the seed's text, row by row).
RESULT_AFTER_EACH_ROW = [
    [("Mary", 1)],
    [("Mary", 1), ("Bob", 1)],
    [("Mary", 2), ("Bob", 1)],
    [("Mary", 2), ("Bob", 1), ("Liz", 1)],
]

#: ``SELECT user, COUNT(url) FROM clicks GROUP BY user``
QUERY = GroupAggregateSpec(("user",), (AggregateCall(Count(), "url", name="cnt"),), output="clicks_per_user")


def _run_row_by_row(mode: str):
    op = GroupAggregateOperator(GroupAggregateSpec(QUERY.group_by, QUERY.aggregates, changelog=mode,
                                                   output=QUERY.output))
    host, table = Stepper(op), MaterializedTable(mode, key_names=("user",), value_names=("cnt",))
    streams, tables = [], []
    for row in CLICKS:
        changes = host.step([row])[Tag.CHANGELOG]
        streams.append([(c.op, *c.key, *c.values) for c in changes])
        table.apply(changes)
        tables.append(sorted(table.as_multiset().elements()))
    return streams, tables


@pytest.mark.parametrize("mode", ["retract", "upsert"])
def test_the_result_table_evolves_row_by_row_as_the_seed_shows(mode):
    _, tables = _run_row_by_row(mode)
    assert tables == [sorted(rows) for rows in RESULT_AFTER_EACH_ROW]


def test_the_retract_stream():
    streams, _ = _run_row_by_row("retract")
    assert streams == [
        [("+I", "Mary", 1)],
        [("+I", "Bob", 1)],
        [("-U", "Mary", 1), ("+U", "Mary", 2)],  # the update: retract [Mary, 1], add [Mary, 2]
        [("+I", "Liz", 1)],
    ]


def test_the_upsert_stream():
    streams, _ = _run_row_by_row("upsert")
    assert streams == [[("+I", "Mary", 1)], [("+I", "Bob", 1)], [("+U", "Mary", 2)], [("+I", "Liz", 1)]]


def test_the_whole_input_in_one_step_gives_the_same_table():
    """A continuous query's result equals the batch query on a snapshot of its input, however it is split."""
    for mode in ("retract", "upsert"):
        op = GroupAggregateOperator(GroupAggregateSpec(("user",), QUERY.aggregates, changelog=mode))
        table = MaterializedTable(mode, key_names=("user",), value_names=("cnt",))
        table.apply(Stepper(op).step(CLICKS)[Tag.CHANGELOG])
        assert sorted(table.as_multiset().elements()) == sorted(RESULT_AFTER_EACH_ROW[-1])


def test_the_seed_idle_state_example_a_forgotten_session_counts_from_zero_again():
    """``SELECT sessionId, COUNT(*) FROM clicks GROUP BY sessionId`` with idle state retention: "if a record of a
    key whose state was removed is processed, it is treated as the first record of that key: the count of the
    sessionId starts again from 0"."""
    hour = 3_600_000_000
    op = GroupAggregateOperator(GroupAggregateSpec(
        ("sessionId",), (AggregateCall(CountStar(), name="cnt"),), changelog="retract",
        retention=StateRetention(min_idle=12 * hour, max_idle=24 * hour)))
    host = Stepper(op)
    table = MaterializedTable("retract", key_names=("sessionId",), value_names=("cnt",))
    for watermark in (0, hour):
        table.apply(host.step([{"sessionId": "s1"}], watermark)[Tag.CHANGELOG])
    assert sorted(table.as_multiset().elements()) == [("s1", 2)]
    out = host.step([], 26 * hour)  # idle past max retention: forgotten, silently
    assert out[Tag.CHANGELOG] == [] and host.contexts == {}
    changes = host.step([{"sessionId": "s1"}], 27 * hour)[Tag.CHANGELOG]
    assert [(c.op, *c.key, *c.values) for c in changes] == [("+I", "s1", 1)]  # from 0 again, no -U of [s1, 2]
    table.apply(changes)
    assert sorted(table.as_multiset().elements()) == [("s1", 1), ("s1", 2)]  # the retract table holds both
