"""The state codec (timeweave.core.state_codec): every value and core state object comes back exactly, and
anything that is not this release's format fails with StateFormatError without running anything."""

from __future__ import annotations

import math
import pickle
import random
import zlib
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeweave.core.errors import StateFormatError, TimeweaveError
from timeweave.core.pattern import PartitionMatcher, parse_clause
from timeweave.core.pattern.aggregates import ArrayChain
from timeweave.core.pattern.operator import BUFFER, MATCHER, HeldMatcher
from timeweave.core.state_codec import MAGIC, REBUILD_HINT, VERSION, decode, decode_cell, encode, encode_cell
from timeweave.core.temporal_join import LeftBuffer
from timeweave.core.versioned import VersionEvent, VersionHistory

INT64 = st.integers(-(2**63), 2**63 - 1)


def shape(value: Any) -> Any:
    """``value`` with every type made explicit (so tuple vs list, bool vs int, NaN and -0.0 compare exactly)."""
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [shape(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(shape(k), shape(v)) for k, v in value.items()])
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, sorted(repr(shape(v)) for v in value))
    if isinstance(value, datetime):
        return ("datetime", value.isoformat(), value.fold, str(value.tzinfo))
    if isinstance(value, Decimal):
        return ("Decimal", str(value))
    if isinstance(value, ArrayChain):
        return ("ArrayChain", shape(value.values()))
    return (type(value).__name__, value)


zones = st.sampled_from([None, UTC, timezone(timedelta(hours=-5, minutes=-30)), ZoneInfo("Europe/Paris")])
datetimes = st.builds(lambda d, tz: d.replace(tzinfo=tz), st.datetimes(allow_imaginary=False), zones)
scalars = st.one_of(
    st.none(), st.booleans(), INT64, st.integers(), st.floats(), st.text(), st.binary(),
    st.decimals(allow_nan=True), datetimes, st.dates(), st.times(), st.timedeltas(),
)
hashables = st.one_of(st.none(), st.booleans(), st.integers(), st.text(), st.decimals(allow_nan=False), st.dates())
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=5).map(tuple),
        st.dictionaries(st.text(max_size=5), inner, max_size=5),
        st.dictionaries(st.integers(), inner, max_size=3),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
        st.lists(inner, max_size=4).map(ArrayChain.of),
        # lists of equal-length tuples take the column-wise path (nested ones too)
        st.integers(1, 3).flatmap(lambda n: st.lists(st.tuples(*[inner] * n), min_size=1, max_size=6)),
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=values)
def test_every_plain_value_comes_back_exactly(value: Any) -> None:
    assert shape(decode(encode(value))) == shape(value)
    cell = {"a": value, "b": [value]}
    values_back, timers, seq = decode_cell(encode_cell(cell, {3, -(2**63)}, 7))
    assert shape(values_back) == shape(cell) and timers == {3, -(2**63)} and seq == 7


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(INT64, INT64, st.one_of(st.text(), st.none(), st.integers())), max_size=30),
       events=st.lists(st.tuples(INT64, INT64, st.booleans(), st.one_of(st.text(), st.none())), max_size=10))
def test_the_temporal_join_state_comes_back_exactly(rows: list[tuple], events: list[tuple]) -> None:
    buffer = LeftBuffer()
    buffer.add([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
    history = VersionHistory.of([VersionEvent(*e) for e in events])
    event = VersionEvent(*events[0]) if events else None
    values, _, _ = decode_cell(encode_cell({"left": buffer, "right": history, "event": event}, set(), 0))
    assert values["left"] == buffer and values["right"] == history and values["event"] == event
    assert values["right"].version_runs(sorted(buffer.times)) == history.version_runs(sorted(buffer.times))
    assert decode(encode([buffer, history, event])) == [buffer, history, event]


CLAUSES = [
    "MEASURES COUNT(*) AS n PATTERN (A B+) DEFINE B AS B.x > PREV(B.x)",
    "MEASURES AVG(B.x) AS a, ARRAY_AGG(B.x) AS arr, MAX_BY(B.x, B.t) AS mb, STDDEV(B.x) AS sd PATTERN (A B+ C) "
    "DEFINE B AS SUM(B.x) < 1000 AND ARRAY_AGG(B.x) IS NOT NULL AND MAX_BY(B.x, B.t) IS NOT NULL "
    "AND STDDEV(B.x) >= 0, C AS C.x < 0",
    "ORDER BY t MEASURES FIRST(A.t) AS s, LAST(C.d) AS e PATTERN (A {- B -} C+) DEFINE B AS B.x > 1, C AS C.d > 0",
    "ORDER BY t MEASURES FIRST(A.t) AS s PATTERN (PERMUTE(A, B) C+ $) DEFINE A AS A.x > 1, B AS B.x > 0, C AS C.d > 0",
    "ORDER BY t MEASURES FIRST(A.t) AS s ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A B*? C) "
    "DEFINE B AS B.x > 1, C AS C.x > 4",
    "ORDER BY t MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c AFTER MATCH SKIP TO LAST B PATTERN (A B{2,} C?) "
    "DEFINE A AS A.x >= 0, B AS B.x > A.x",
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clause=st.sampled_from(CLAUSES), fast=st.booleans(), seed=st.integers(0, 2**32 - 1),
       n=st.integers(0, 40), cuts=st.lists(st.integers(0, 40), max_size=4))
def test_a_matcher_stored_anywhere_mid_partition_gives_the_same_rows(clause: str, fast: bool, seed: int, n: int,
                                                                     cuts: list[int]) -> None:
    rng = random.Random(seed)
    spec = parse_clause(clause)
    rows = [{"x": rng.randint(-2, 8), "t": datetime(2024, 1, 1) + timedelta(seconds=i), "d": Decimal(rng.randint(-1, 5))}
            for i in range(n)]
    reference = PartitionMatcher(spec, fast=fast)
    expected = reference.push_many(rows) + reference.finish()
    matcher, got, position = PartitionMatcher(spec, fast=fast), [], 0
    for cut in [*sorted(c for c in cuts if c <= n), n]:
        got += matcher.push_many(rows[position:cut])
        position = cut
        values, _, _ = decode_cell(encode_cell({MATCHER: HeldMatcher(matcher), BUFFER: [(1, 0, (1, "{}"))]}, set(), 0))
        matcher = values[MATCHER].get(spec)
    assert got + matcher.finish() == expected


# -- what is refused --------------------------------------------------------------------------------------
class _Marker:
    """A pickle that, if loaded, creates a file: what a crafted state file could do."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple:
        return (open, (self.path, "w"))


def _nested_tuples(depth: int) -> bytes:
    payload = msgpack.packb(1)
    for _ in range(depth):
        payload = msgpack.packb(msgpack.ExtType(1, payload))
    return payload


def _framed(payload: bytes, version: int = VERSION) -> bytes:
    return MAGIC + bytes((version,)) + zlib.crc32(payload).to_bytes(4, "little") + payload


def test_pickled_state_of_earlier_releases_is_refused_and_never_loaded(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        blob = pickle.dumps({"values": {"x": _Marker(marker)}, "timers": set(), "seq": 0}, protocol=protocol)
        with pytest.raises(StateFormatError, match="checkpoint of key 'k': state written by an earlier") as error:
            decode_cell(blob, where="checkpoint of key 'k'")
        assert REBUILD_HINT in str(error.value) and error.value.where == "checkpoint of key 'k'"
        assert isinstance(error.value, TimeweaveError)
    # a pickle inside a well-formed frame is just bytes of an unknown structure
    with pytest.raises(StateFormatError, match="malformed state"):
        decode(_framed(pickle.dumps(_Marker(marker))))
    assert not marker.exists()


@pytest.mark.parametrize(("blob", "message"), [
    (b"", "not timeweave state"),
    (b"TWs", "not timeweave state"),
    (b"PAR1....", "not timeweave state"),
    (_framed(msgpack.packb(1), version=2), "unknown state format version 2"),
    (_framed(msgpack.packb(1), version=0), "unknown state format version 0"),
    (_framed(msgpack.packb(1))[:-1] + b"\x02", "bad checksum"),
    (_framed(msgpack.packb([1, 2]))[:-1], "bad checksum"),
    (_framed(b"\xc1"), "malformed state"),  # a byte MessagePack never uses
    (_framed(msgpack.packb([1, 2])[:-1]), "malformed state"),  # truncated, with a matching checksum
    (_framed(msgpack.packb(msgpack.ExtType(99, b""))), "unknown value tag 99"),
    (_framed(msgpack.packb(msgpack.ExtType(4, b"12abc"))), "bad decimal"),
    (_framed(msgpack.packb(msgpack.ExtType(5, msgpack.packb([2024, 13, 1, 0, 0, 0, 0, 0])))), "malformed state"),
    (_framed(msgpack.packb(msgpack.ExtType(5, msgpack.packb([2024, 1, 1, 0, 0, 0, 0, 0, "No/Such_Zone"])))),
     "unknown time zone"),
    (_framed(msgpack.packb(msgpack.ExtType(20, msgpack.packb([[1, 2], [0], ["a", "b"]])))), "left buffer"),
    (_framed(msgpack.packb(msgpack.ExtType(20, msgpack.packb([["1"], [0], ["a"]])))), "left buffer"),
    (_framed(msgpack.packb(msgpack.ExtType(21, msgpack.packb([[2, 1], [0, 0], [False, False], [None, None]])))),
     "strictly ascending"),
    (_framed(msgpack.packb(msgpack.ExtType(22, msgpack.packb([1, 2, 3])))), "version event"),
    (_framed(msgpack.packb(msgpack.ExtType(23, msgpack.packb({"rows": []})))), "matcher state"),
    (_framed(b"\x91" * 100_000 + b"\x01"), "malformed state"),  # lists nested 100 000 deep
    (_framed(_nested_tuples(3000)), "nested deeper than 64"),  # would overflow the C stack (a crash) unbounded
])
def test_bad_blobs_fail_with_the_format_error(blob: bytes, message: str) -> None:
    with pytest.raises(StateFormatError, match=message) as error:
        decode(blob, where="somewhere")
    assert str(error.value).startswith("somewhere: ")


@pytest.mark.parametrize(("cell", "message"), [
    ([{}, [], 0, 1], "a key's cell is"),
    ([{"a": 1}, [], 0], "a cell value is"),
    ([{"a": [7, 1]}, [], 0], "unknown cell value kind 7"),
    ([{"a": [0, 1]}, ["x"], 0], "a key's cell is"),
    ([{"a": [5, [2, [[0, [1]]]]]}, [], 0], "unequal length"),
    ([{"a": [1, [[1], [0]]]}, [], 0], "left buffer"),
])
def test_bad_cells_fail_with_the_format_error(cell: list, message: str) -> None:
    with pytest.raises(StateFormatError, match=message):
        decode_cell(_framed(msgpack.packb(cell)), where="cell")


def test_a_matcher_state_that_does_not_fit_its_clause_fails_clearly() -> None:
    spec = parse_clause(CLAUSES[0])
    matcher = PartitionMatcher(spec)
    matcher.push_many([{"x": 1}, {"x": 2}])
    state = HeldMatcher(matcher).to_state()
    other = parse_clause("MEASURES COUNT(*) AS n PATTERN (A) DEFINE A AS A.x > 0")
    bad_pc = {**state, "run": {**state["run"], "threads": [[999, [0], (), ()]]}}
    for broken, message in ((bad_pc, "not in the"), ({**state, "base": "0"}, "bad rows"),
                            ({**state, "run": {"kind": "vm"}}, "does not fit|malformed")):
        with pytest.raises(StateFormatError, match=message):
            decode(encode(HeldMatcher(None, broken))).get(spec)
    with pytest.raises(StateFormatError, match="not in the compiled pattern"):  # a state of another clause
        decode(encode(HeldMatcher(matcher))).get(other)


def test_values_outside_the_format_are_refused_when_written() -> None:
    class Custom:
        pass

    with pytest.raises(TypeError, match=r"cannot hold a .*Custom"):
        encode({"x": Custom()})
    with pytest.raises(TypeError, match="time zone"):
        encode(datetime(2024, 1, 1, tzinfo=_OddZone()))


class _OddZone(tzinfo):  # a time zone of no kind the format knows
    def utcoffset(self, dt: Any) -> timedelta:
        return timedelta(0)


def test_the_blob_layout() -> None:
    blob = encode({"a": 1})
    assert blob[:4] == MAGIC == b"TWst" and blob[4] == VERSION == 1
    assert int.from_bytes(blob[5:9], "little") == zlib.crc32(blob[9:])
    assert msgpack.unpackb(blob[9:]) == {"a": 1}
    assert decode(encode(date(1, 1, 1))) == date(1, 1, 1) and decode(encode(time(23, 59, 59, 999999))) == time(
        23, 59, 59, 999999)
