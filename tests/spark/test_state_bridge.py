"""The streaming adapter's processor and state bridge without a JVM (PySpark's TwsTester, in memory).

TwsTester plays Spark's part: per-key state, event-time timers that fire when ``setWatermark``
reaches them (``expiry <= watermark``), and the refusal to register a timer at or below the
watermark.  Its late-row filter is disabled with an extractor that returns "far future", because the
real query hands the operator no watermarked column (see timeweave.spark.host): lateness is the
core's decision, and these tests check it reaches the output.
"""

from __future__ import annotations

import json
import pickle
import random

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql.streaming.tws_tester import TwsTester

from timeweave.core import event_time as EV
from timeweave.core.errors import StateFormatError
from timeweave.core.spec import StateRetention, TemporalJoinSpec, VersionedTableSpec
from timeweave.core.state import NO_WATERMARK
from timeweave.core.state_codec import decode, decode_cell, encode, encode_cell
from timeweave.core.temporal_join import Joined, JoinedRows, Late, LeftBuffer, LeftRow
from timeweave.core.versioned import Match, VersionEvent, VersionHistory
from timeweave.spark import host as H
from timeweave.spark import temporal_join_streaming as TJ
from timeweave.spark.host import packs as host_packs

MS = 1_000  # µs per ms
T0 = 1_577_872_800_000_000  # 2020-01-01 10:00:00 UTC in µs


def _spec(how: str = "left", fmt: str = "append") -> TemporalJoinSpec:
    versioned = VersionedTableSpec("currency", "update_time", format=fmt, op="op" if fmt == "changelog" else None)
    return TemporalJoinSpec(versioned, left_time="order_time", how=how)


_OPS = {"L": TJ.LEFT_ROW, "R": TJ.UPSERT, "D": TJ.DELETE, "H": H.HEARTBEAT}


B = 3  # the bucket (the operator's grouping key) the tests' keys are in


def _rows(*rows: tuple, key: str | None = "EUR") -> pd.DataFrame:
    """Operator input of rows of one key: (L/R/D/H, time µs, payload, file), packed as the query packs them."""
    frame = pd.DataFrame([
        {H.BUCKET: B, H.KEY_TEXT: key, H.OP: _OPS[op], H.TIME: t, TJ.FILE: file, H.ROW: payload}
        for op, t, payload, file in rows
    ])
    schema = pa.schema([(H.BUCKET, pa.int32()), (H.KEY_TEXT, pa.string()), (H.OP, pa.int8()), (H.TIME, pa.int64()),
                        (TJ.FILE, pa.string()), (H.ROW, pa.string())])
    batch = pa.RecordBatch.from_pandas(frame, schema=schema, preserve_index=False)
    return next(H.pack_rows(iter([batch]))).to_pandas()


def _tester(spec: TemporalJoinSpec, mode: str = "event_time", retention: StateRetention | None = None) -> TwsTester:
    processor = TJ.TemporalJoinProcessor(spec, mode, retention)
    if mode == "event_time":
        # Never filter: the real query has no watermarked input column, the core decides lateness.
        return TwsTester(processor, timeMode="EventTime", eventTimeExtractor=lambda _row: 2**62)
    return TwsTester(processor, timeMode="None")


def _out(frame: pd.DataFrame) -> list[tuple]:
    """(kind, left id, version rate or None) per output row; joined rows unpacked from their documents."""
    if frame.empty:
        return []
    rows: list[tuple] = []
    for kind, payload in zip(frame[TJ.KIND], frame[TJ.L_ROW], strict=True):
        if kind == TJ.JOINED:
            rows.extend(
                (kind, e["l"]["id"], e["v"]["rate"] if "v" in e else None) for e in json.loads(payload)
            )
        elif kind == TJ.LATE:
            rows.append((kind, json.loads(payload)["id"], None))
    return rows


def _state(tester: TwsTester, key: str = "EUR") -> dict | None:
    """The key's cell in the bucket's MapState (None: the key holds nothing)."""
    stored = tester.peekMapState("timeweave_keys", B).get((key,))
    if not stored:
        return None
    values, timers, seq = decode_cell(stored[0])
    return {"values": values, "timers": timers, "seq": seq}


def _index(tester: TwsTester) -> tuple[dict, int | None] | None:
    """The bucket's timer index: (key -> smallest core timer, the bucket's Spark timer)."""
    stored = tester.peekValueState("timeweave_index", B)
    return tuple(decode(stored[0])) if stored else None  # type: ignore[return-value]


def _spark_timers(tester: TwsTester) -> list[int]:
    return list(tester.handle._timers.listTimers(B))


def test_rows_wait_for_the_watermark_then_join_the_version_valid_at_their_time() -> None:
    tester = _tester(_spec())
    first = tester.testInPandas(B, _rows(
        ("R", T0, '{"rate": 1.1}', "r1"),
        ("R", T0 + 60_000_000, '{"rate": 1.2}', "r1"),
        ("L", T0 + 30_000_000, '{"id": "o1"}', "l1"),
        ("L", T0 - 1, '{"id": "o0"}', "l1"),
    ))
    # No watermark yet: nothing is emitted, both left rows wait; one Spark timer at the smallest time.
    assert _out(first) == []
    assert first[TJ.N_LEFT].tolist() == [2] and first[TJ.N_RIGHT].tolist() == [2]
    assert _spark_timers(tester) == [EV.spark_timer_ms(T0 - 1)]
    assert _index(tester) == ({"EUR": T0 - 1}, EV.spark_timer_ms(T0 - 1))
    fired = tester.setWatermark((T0 + 30_000_000) // MS)
    assert _out(fired) == [("joined", "o0", None), ("joined", "o1", 1.1)]
    # The key's versions stay (the newest older than the watermark is still in force); no timer left.
    assert _state(tester)["timers"] == set()
    assert _spark_timers(tester) == [] and _index(tester) is None


def test_a_left_row_below_the_watermark_goes_to_the_late_output_with_the_reason() -> None:
    tester = _tester(_spec())
    tester.testInPandas(B, _rows(("R", T0, '{"rate": 1.1}', "r1")))
    tester.setWatermark((T0 + 10_000_000) // MS)
    out = tester.testInPandas(B, _rows(
        ("L", T0 + 5_000_000, '{"id": "late"}', "l2"),
        ("L", T0 + 10_000_000, '{"id": "on-time"}', "l2"),
    ))
    assert _out(out) == [("late", "late", None), ("joined", "on-time", 1.1)]
    late = out[out[TJ.KIND] == TJ.LATE].iloc[0]
    assert late[TJ.WATERMARK] == T0 + 10_000_000
    assert f"event time {T0 + 5_000_000} < watermark {T0 + 10_000_000}" in late[TJ.REASON]


def test_changelog_ties_break_by_input_order_within_a_batch() -> None:
    # -U then +U at the same time, the -U in a file sorting first: +U (later in input order) wins,
    # although the +U's file reached the operator first.
    tester = _tester(_spec(fmt="changelog"))
    tester.testInPandas(B, _rows(
        ("R", T0, '{"rate": 1.15}', "b.csv"),
        ("D", T0, '{"rate": 1.14}', "a.csv"),
        ("L", T0, '{"id": "o1"}', "orders.csv"),
    ))
    assert _out(tester.setWatermark(T0 // MS)) == [("joined", "o1", 1.15)]


def test_heartbeat_only_invocations_touch_no_state() -> None:
    tester = _tester(_spec())
    assert tester.testInPandas(B, _rows(("H", T0, None, None), key=None)).empty
    assert tester.peekMapState("timeweave_keys", B) == {} and tester.peekValueState("timeweave_index", B) is None


def test_retention_drops_an_idle_key_on_the_event_time_clock() -> None:
    retention = StateRetention(min_idle=60_000_000, max_idle=120_000_000)
    tester = _tester(_spec(), retention=retention)
    tester.testInPandas(B, _rows(("R", T0, '{"rate": 1.1}', "r1")))
    tester.setWatermark(T0 // MS)  # first watermark: the next element arms the cleanup timer
    tester.testInPandas(B, _rows(("R", T0 + 1, '{"rate": 1.2}', "r1")))
    assert _state(tester)["values"]["cleanup-timestamp"] == T0 + 120_000_000
    tester.setWatermark((T0 + 120_000_000) // MS)
    assert _state(tester) is None  # cleared: no value, no timer
    assert _spark_timers(tester) == [] and _index(tester) is None


def test_processing_time_mode_joins_the_latest_version_at_once() -> None:
    tester = _tester(_spec(), mode="processing_time")
    out = tester.testInPandas(B, _rows(
        ("L", T0 - 10, '{"id": "o1"}', "l1"),  # left first in input: versions of the batch still apply
        ("R", T0, '{"rate": 1.1}', "r1"),
    ))
    assert _out(out) == [("joined", "o1", 1.1)]
    out = tester.testInPandas(B, _rows(("D", T0 + 5, None, "r2"), ("L", T0, '{"id": "o2"}', "l2")))
    assert _out(out) == [("joined", "o2", None)]


class _FakeValueState:
    def __init__(self) -> None:
        self.value: tuple | None = None
        self.writes = 0

    def get(self) -> tuple | None:
        return self.value

    def update(self, value: tuple) -> None:
        self.value, self.writes = value, self.writes + 1

    def clear(self) -> None:
        self.value, self.writes = None, self.writes + 1


class _FakeHandle:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def registerTimer(self, ms: int) -> None:
        self.calls.append(("register", ms))

    def deleteTimer(self, ms: int) -> None:
        self.calls.append(("delete", ms))


def test_the_bridge_writes_once_per_commit_and_applies_timer_differences() -> None:
    state, handle = _FakeValueState(), _FakeHandle()
    ctx = H.SparkKeyContext(handle, state, watermark=NO_WATERMARK)
    ctx.put("left", [1])
    ctx.register_timer(1_500)
    ctx.register_timer(1_999)  # same Spark ms timer (2) as 1_500
    ctx.commit()
    assert state.writes == 1 and handle.calls == [("register", 2)]
    ctx = H.SparkKeyContext(handle, state, watermark=2_000)
    assert ctx.get("left") == [1] and ctx.timers() == [1_500, 1_999]
    ctx.delete_timer(1_500)
    ctx.commit()
    assert handle.calls == [("register", 2)]  # 1_999 still needs the ms-2 timer
    ctx.delete_timer(1_999)
    ctx.clear("left")
    ctx.commit()
    assert handle.calls[-1] == ("delete", 2) and state.value is None


def test_a_commit_without_changes_does_not_write() -> None:
    state = _FakeValueState()
    ctx = H.SparkKeyContext(None, state, watermark=0)
    assert ctx.get("right") is None
    ctx.commit()
    assert state.writes == 0


@pytest.mark.parametrize(("us", "ms"), [(0, 1), (1, 1), (999, 1), (1_000, 1), (1_001, 2)])
def test_a_spark_timer_never_fires_before_the_core_time(us: int, ms: int) -> None:
    assert EV.spark_timer_ms(us) == ms
    assert EV.spark_timer_ms(us) * MS >= us


def test_a_bucket_runs_only_its_due_keys_and_keeps_one_spark_timer_at_the_smallest() -> None:
    tester = _tester(_spec())
    tester.testInPandas(B, pd.concat([
        _rows(("R", T0, '{"rate": 1.1}', "r1"), ("L", T0 + 10_000_000, '{"id": "e1"}', "l1")),
        _rows(("R", T0, '{"rate": 2.2}', "r1"), ("L", T0 + 60_000_000, '{"id": "u1"}', "l1"), key="USD"),
    ], ignore_index=True))
    # One Spark timer for the bucket, at the smallest of its keys' timers.
    assert _spark_timers(tester) == [EV.spark_timer_ms(T0 + 10_000_000)]
    usd_before = tester.peekMapState("timeweave_keys", B)[("USD",)]
    assert _out(tester.setWatermark((T0 + 30_000_000) // MS)) == [("joined", "e1", 1.1)]
    # USD is not due: its cell is not rewritten; the bucket's timer moved to USD's row.
    assert tester.peekMapState("timeweave_keys", B)[("USD",)] is usd_before
    assert _index(tester) == ({"USD": T0 + 60_000_000}, EV.spark_timer_ms(T0 + 60_000_000))
    assert _spark_timers(tester) == [EV.spark_timer_ms(T0 + 60_000_000)]
    assert _out(tester.setWatermark((T0 + 60_000_000) // MS)) == [("joined", "u1", 2.2)]
    assert _index(tester) is None and _spark_timers(tester) == []


def test_joined_rows_leave_in_documents_of_at_most_doc_rows_with_their_validity() -> None:
    # Every joined row of an invocation is an element of a JSON document (one output row per
    # DOC_ROWS rows); late rows stay one output row each, and the counts ride on the stats row.
    version = VersionEvent(T0, 7, False, '{"rate": 1.5}')
    closed = Match(version, T0 + 5)
    outputs: list = [Joined(LeftRow(T0 + i, i, json.dumps({"id": i})), closed) for i in range(TJ.DOC_ROWS + 1)]
    outputs += [Joined(LeftRow(T0, 0, '{"id": "none"}'), None), Late(LeftRow(T0 - 1, 0, '{"id": "l"}'), T0)]
    outputs.append(Joined(LeftRow(T0 + 9, 0, '{"id": "open"}'), Match(version, None)))
    frame = TJ._frame(outputs, n_left=9, n_right=1)
    kinds = frame[TJ.KIND].tolist()
    assert kinds == [TJ.LATE, TJ.JOINED, TJ.JOINED, TJ.STATS]
    documents = [json.loads(d) for d in frame[frame[TJ.KIND] == TJ.JOINED][TJ.L_ROW]]
    assert [len(d) for d in documents] == [TJ.DOC_ROWS, 3]
    elements = documents[0] + documents[1]
    assert [e["l"]["id"] for e in elements[-3:]] == [TJ.DOC_ROWS, "none", "open"]
    assert elements[0] == {"l": {"id": 0}, "v": {"rate": 1.5}, "f": T0, "t": T0 + 5}
    assert elements[-2] == {"l": {"id": "none"}}  # no version: no "v", "f", "t"
    assert elements[-1] == {"l": {"id": "open"}, "v": {"rate": 1.5}, "f": T0}  # in force: no "t"
    stats = frame[frame[TJ.KIND] == TJ.STATS].iloc[0]
    assert (stats[TJ.N_LEFT], stats[TJ.N_RIGHT]) == (9, 1)


def test_packs_keep_each_buckets_rows_in_input_order_across_batches_and_pack_limits(monkeypatch) -> None:
    # The operator sees a bucket's rows in the order the source partition produced them, whichever
    # batch (Arrow record batch of the packing worker) or pack (at most PACK_ROWS rows) they are in.
    monkeypatch.setattr(host_packs, "PACK_ROWS", 4)
    buckets = [2, 0, 2, 1, 2, 0, 2, 2, 1, 0]
    batches = [
        pa.record_batch({H.BUCKET: pa.array(buckets[i : i + 3], pa.int32()),
                         H.ROW: [f"r{j}" for j in range(i, min(i + 3, len(buckets)))]})
        for i in range(0, len(buckets), 3)
    ]
    packs = pa.Table.from_batches(list(H.pack_rows(iter(batches)))).to_pydict()
    got: dict[int, list[str]] = {}
    for bucket, pack in zip(packs[H.BUCKET], packs[H.PACK], strict=True):
        got.setdefault(bucket, []).extend(H.unpack([pack])[H.ROW].tolist())
    expected: dict[int, list[str]] = {}
    for j, bucket in enumerate(buckets):
        expected.setdefault(bucket, []).append(f"r{j}")
    assert got == expected
    assert len(packs[H.PACK]) > 3  # the limit split the partition's rows into several packs per bucket
    monkeypatch.setattr(host_packs, "PACK_ROWS", 1000)
    monkeypatch.setattr(host_packs, "PACK_BYTES", 1)  # every batch is a packing step of its own
    packs = pa.Table.from_batches(list(H.pack_rows(iter(batches)))).to_pydict()
    by_bytes: dict[int, list[str]] = {}
    for bucket, pack in zip(packs[H.BUCKET], packs[H.PACK], strict=True):
        by_bytes.setdefault(bucket, []).extend(H.unpack([pack])[H.ROW].tolist())
    assert by_bytes == expected and len(packs[H.PACK]) == sum(len(set(buckets[i : i + 3])) for i in range(0, 10, 3))


def test_unpack_keeps_a_sequence_above_2_to_the_53_exact_and_nulls_as_none() -> None:
    big = 2**62 + 1  # not representable as a float64
    batch = pa.record_batch({H.BUCKET: pa.array([0, 0], pa.int32()), H.SEQ: pa.array([big, None], pa.int64()),
                             H.TIME: pa.array([1, 2], pa.int64())})
    (packed,) = H.pack_rows(iter([batch]))
    frame = H.unpack(packed.column(H.PACK).to_pylist())
    assert frame[H.SEQ].tolist() == [big, None]
    assert frame[H.TIME].tolist() == [1, 2]


def test_positions_by_key_groups_in_first_appearance_order_with_positions_ascending() -> None:
    # The processor numbers a key's rows by these positions (ties between equal times): they must be
    # exactly what one pass in input order gives, the NULL key included.
    rng = random.Random(3)
    for _ in range(200):
        keys = [rng.choice(["a", "b", "ab", None, '{"k0":1}']) for _ in range(rng.randrange(1, 25))]
        expected: dict = {}
        for i, key in enumerate(keys):
            expected.setdefault(key, []).append(i)
        got = H.positions_by_key(pd.DataFrame({H.KEY_TEXT: pd.array(keys, dtype=object)}))
        assert got == expected and list(got) == list(expected)


def test_joined_rows_column_wise_leave_in_the_same_documents_as_joined_objects(monkeypatch) -> None:
    # The event-time processor hands _frame the core's JoinedRows (runs of rows sharing a version); the
    # documents must be exactly those of the same rows as Joined objects, across document boundaries.
    monkeypatch.setattr(TJ, "DOC_ROWS", 3)
    rng = random.Random(5)
    versions = [None, Match(VersionEvent(T0, 1, False, '{"rate": 1.5}'), None),
                Match(VersionEvent(T0 - 7, 0, False, '{"rate": 0.5}'), T0)]
    for _ in range(200):
        blocks: list = []
        objects: list = []
        for _ in range(rng.randrange(0, 4)):
            if rng.random() < 0.3:
                late = Late(LeftRow(T0 - 1, 0, '{"id": "late"}'), T0)
                blocks.append(late)
                objects.append(late)
                continue
            runs = [(rng.randrange(1, 5), rng.choice(versions)) for _ in range(rng.randrange(1, 4))]
            n = sum(count for count, _ in runs)
            times = [T0 + i for i in range(n)]
            payloads = [json.dumps({"id": rng.randrange(100)}) for _ in range(n)]
            rows = JoinedRows(times, list(range(n)), payloads, runs)
            if rng.random() < 0.5:
                blocks.append(rows)
            else:
                blocks.extend(rows.outputs())
            objects.extend(rows.outputs())
        got, expected = TJ._frame(blocks, n_left=1, n_right=0), TJ._frame(objects, n_left=1, n_right=0)
        pd.testing.assert_frame_equal(got, expected)
        assert all(len(json.loads(d)) <= 3 for d in got[got[TJ.KIND] == TJ.JOINED][TJ.L_ROW])


def test_a_key_cell_resumes_from_its_encoded_state() -> None:
    # A cell as the state codec writes it (buffered rows out of time order in arrival order are kept sorted):
    # read, emitted in (time, seq) order, and written back.
    tester = _tester(_spec())
    buffer = LeftBuffer()
    buffer.add([T0 + 20_000, T0 + 10_000], [1, 2], ['{"id": "o2"}', '{"id": "o1"}'])
    values = {"left": buffer, "right": VersionHistory.of([VersionEvent(T0, 0, False, '{"rate": 1.1}')]),
              "next-timer": T0 + 10_000}
    tester.updateMapState("timeweave_keys", B, {("EUR",): (encode_cell(values, {T0 + 10_000}, 3),)})
    tester.updateValueState("timeweave_index", B, (encode([{"EUR": T0 + 10_000}, EV.spark_timer_ms(T0 + 10_000)]),))
    tester.setWatermark((T0 + 15_000) // MS)  # the bucket has no Spark timer in the tester: nothing fires
    out = tester.testInPandas(B, _rows(("L", T0 + 30_000, '{"id": "o3"}', "l2")))
    assert _out(out) == [("joined", "o1", 1.1)]
    state = _state(tester)
    assert state["values"]["left"] == LeftBuffer([T0 + 20_000, T0 + 30_000], [1, 3], ['{"id": "o2"}', '{"id": "o3"}'])
    assert state["seq"] == 4 and state["timers"] == {T0 + 20_000}
    assert _out(tester.setWatermark((T0 + 30_000) // MS)) == [("joined", "o2", 1.1), ("joined", "o3", 1.1)]


class _Marker:
    """A pickle payload that, when loaded, writes a marker file (what a crafted state file could do)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (open, (self.path, "w"))  # loading it creates the file


def test_a_pickled_cell_of_an_earlier_release_is_refused_and_never_loaded(tmp_path) -> None:
    # Earlier releases pickled their cells; loading a pickle from a checkpoint could run code, so such a cell
    # (here a crafted one that would create a marker file) fails with the format error naming the key.
    marker = tmp_path / "marker"
    old_cell = {"values": {"left": [LeftRow(T0, 0, '{"id": "o1"}')], "x": _Marker(str(marker))},
                "timers": {T0}, "seq": 1}
    tester = _tester(_spec())
    tester.updateMapState("timeweave_keys", B, {("EUR",): (pickle.dumps(old_cell),)})
    with pytest.raises(StateFormatError, match=r"key .EUR.*earlier timeweave release.*fresh checkpoint"):
        tester.testInPandas(B, _rows(("L", T0 + 30_000, '{"id": "o3"}', "l2")))
    assert not marker.exists()
    # The bucket's timer index is state too.
    tester = _tester(_spec())
    tester.updateValueState("timeweave_index", B, (pickle.dumps(({"EUR": T0}, _Marker(str(marker)))),))
    with pytest.raises(StateFormatError, match=r"timer index.*earlier timeweave release"):
        tester.testInPandas(B, _rows(("L", T0 + 30_000, '{"id": "o3"}', "l2")))
    assert not marker.exists()


def test_a_damaged_cell_fails_with_the_format_error() -> None:
    tester = _tester(_spec())
    good = encode_cell({"next-timer": T0}, {T0}, 1)
    damaged = good[:-1] + bytes([good[-1] ^ 1])
    tester.updateMapState("timeweave_keys", B, {("EUR",): (damaged,)})
    with pytest.raises(StateFormatError, match=r"key .EUR.*bad checksum"):
        tester.testInPandas(B, _rows(("L", T0 + 30_000, '{"id": "o3"}', "l2")))


def test_an_event_time_invocation_with_dead_letters_heartbeats_files_and_a_sequence_column() -> None:
    # The event-time processor reads its packs' Arrow columns directly: dead letters leave at once with their
    # reason, heartbeats are dropped, versions order by file (none first) and the spec's sequence decides ties.
    spec = TemporalJoinSpec(VersionedTableSpec("currency", "update_time", sequence="seq"), left_time="order_time")
    tester = _tester(spec)
    rows = [  # (op, key, time, file, payload, seq, reason)
        (TJ.UPSERT, "EUR", T0, "b.csv", '{"rate": 1.2}', 9, None),
        (TJ.UPSERT, "EUR", T0, "a.csv", '{"rate": 1.1}', 5, None),
        (TJ.UPSERT, "USD", T0, "a.csv", '{"rate": 2.0}', 2**62 + 1, None),
        (TJ.LEFT_ROW, "EUR", T0 + 1_000, None, '{"id": "o1"}', None, None),
        (H.HEARTBEAT, None, T0, None, None, None, None),
        (TJ.DEAD_LEFT, None, 0, None, '{"id": "dead"}', None, "currency is NULL"),
        (TJ.LEFT_ROW, "USD", T0 + 2_000, None, '{"id": "u1"}', None, None),
    ]
    names = [H.OP, H.KEY_TEXT, H.TIME, TJ.FILE, H.ROW, H.SEQ, TJ.REJECT]
    types = [pa.int8(), pa.string(), pa.int64(), pa.string(), pa.string(), pa.int64(), pa.string()]
    batch = pa.record_batch(
        [pa.array([B] * len(rows), pa.int32()), *[pa.array(list(c), t) for c, t in zip(zip(*rows, strict=True), types,
                                                                                       strict=True)]],
        names=[H.BUCKET, *names],
    )
    out = tester.testInPandas(B, next(H.pack_rows(iter([batch]))).to_pandas())
    dead = out[out[TJ.KIND] == TJ.DEAD]
    assert dead[TJ.REASON].tolist() == ["currency is NULL"] and dead[TJ.OUT_SIDE].tolist() == ["left"]
    stats = out[out[TJ.KIND] == TJ.STATS].iloc[0]
    assert (stats[TJ.N_LEFT], stats[TJ.N_RIGHT]) == (2, 3)
    assert _out(tester.setWatermark((T0 + 2_000) // MS)) == [("joined", "o1", 1.2), ("joined", "u1", 2.0)]
    usd = _state(tester, "USD")["values"]["right"].events
    assert [e.seq for e in usd] == [2**62 + 1]
