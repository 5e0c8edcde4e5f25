"""Seed 003's rule as a property: "the result of a continuous query is always semantically equivalent to the result
of the same query run in batch mode on a snapshot of the input table".

Random clicks (keys including NULL), random retractions of rows still held, split into random steps, with every
key's state carried through the state codec (a restart) after some steps: at every step end the changelog,
materialized in its encoding, equals the batch GROUP BY over the input so far.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.updates.harness import CALLS, Stepper, batch_group_by
from timeweave.core.operator import Tag
from timeweave.core.updates import GroupAggregateOperator, GroupAggregateSpec, MaterializedTable

USERS = ["Mary", "Bob", "Liz", None]
URLS = ["./home", "./cart", "./prod?id=1", None]
VALUES = st.one_of(st.none(), st.integers(-3, 3))


@st.composite
def clicks(draw, updating: bool):
    """(events, held after each event): inserts of random rows, and (updating) retractions of rows still held."""
    events, held, snapshots = [], [], []
    for _ in range(draw(st.integers(0, 40))):
        if updating and held and draw(st.integers(0, 2)) == 0:
            row = held.pop(draw(st.integers(0, len(held) - 1)))
            events.append({**row, "op": draw(st.sampled_from(["-U", "-D"]))})
        else:
            row = {"user": draw(st.sampled_from(USERS)), "url": draw(st.sampled_from(URLS)), "v": draw(VALUES)}
            held.append(row)
            events.append({**row, "op": draw(st.sampled_from(["+I", "+U"]))} if updating else row)
        snapshots.append(list(held))
    return events, snapshots


def _check(data, updating: bool) -> None:
    events, snapshots = data.draw(clicks(updating))
    inner = data.draw(st.sets(st.integers(1, len(events)), max_size=8)) if events else set()
    cuts = sorted(inner | {len(events)})
    per_row = data.draw(st.booleans())
    hosts, tables = {}, {}
    for mode in ("retract", "upsert"):
        spec = GroupAggregateSpec(("user",), CALLS, changelog=mode, op_column="op" if updating else None,
                                  per_row=per_row)
        hosts[mode] = Stepper(GroupAggregateOperator(spec))
        tables[mode] = MaterializedTable(mode, key_names=("user",), value_names=spec.value_names)
    start = 0
    for end in cuts:
        restart = data.draw(st.booleans())
        for mode, host in hosts.items():
            out = host.step(events[start:end])
            assert out[Tag.DEAD_LETTER] == []
            tables[mode].apply(out[Tag.CHANGELOG], batch_id=end)
            if restart:
                host.restart()
        expected = batch_group_by(snapshots[end - 1] if end else [])
        for mode, table in tables.items():
            assert table.as_multiset() == expected, (mode, events[:end])
        start = end
    assert Counter(tables["retract"].as_multiset()) == Counter(tables["upsert"].as_multiset())


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_updating_input_materializes_to_the_batch_group_by_at_every_step_end(data):
    _check(data, updating=True)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_append_only_input_materializes_to_the_batch_group_by_at_every_step_end(data):
    _check(data, updating=False)
