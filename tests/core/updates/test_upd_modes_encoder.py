"""Changelog modes and the encoder: retract / upsert / append encodings of a sequence of firings."""

from __future__ import annotations

from decimal import Decimal

import pytest

from timeweave.core.errors import SpecError
from timeweave.core.operator import RowKind, StateLayout, Tag
from timeweave.core.state import InMemoryKeyContext
from timeweave.core.state_codec import decode, encode
from timeweave.core.updates import EMITTED, Change, ChangelogEncoder, ChangelogMode, MaterializedTable

INSERT, DELETE = RowKind.INSERT, RowKind.DELETE


@pytest.mark.parametrize("text, mode", [("append", ChangelogMode.APPEND), (" RETRACT", ChangelogMode.RETRACT),
                                        ("Upsert\n", ChangelogMode.UPSERT), (ChangelogMode.UPSERT, ChangelogMode.UPSERT)])
def test_modes_parse_from_text(text, mode):
    assert ChangelogMode.parse(text) is mode


@pytest.mark.parametrize("text", ["", "retraction", "upserts", None, 3, "append-only"])
def test_an_unknown_mode_is_a_clear_error_naming_where(text):
    with pytest.raises(SpecError, match=r"^job\.yaml changelog: argument 'changelog': expected 'append', 'retract' or "
                                        r"'upsert', got "):
        ChangelogMode.parse(text, where="job.yaml changelog")


def test_mode_kinds_are_flinks():
    assert ChangelogMode.APPEND.kinds == ("+I",)
    assert ChangelogMode.RETRACT.kinds == ("+I", "-U", "+U", "-D")
    assert ChangelogMode.UPSERT.kinds == ("+I", "+U", "-D")  # no UPDATE_BEFORE


def test_append_refuses_an_updating_result_and_upsert_needs_a_key():
    with pytest.raises(SpecError, match=r"clicks_per_user: .*an append-only output cannot carry updates: ask for "
                                        r"changelog='retract' or 'upsert'"):
        ChangelogEncoder("append", output="clicks_per_user", updating=True)
    with pytest.raises(SpecError, match=r"clicks_per_user: .*an upsert output needs a unique key"):
        ChangelogEncoder("upsert", output="clicks_per_user", unique_key=None)
    with pytest.raises(SpecError, match=r"clicks_per_user: .*an upsert output needs a unique key"):
        ChangelogEncoder("upsert", output="clicks_per_user", unique_key=())
    ChangelogEncoder("append", updating=False)  # a final-only result may append
    ChangelogEncoder("retract")  # retract needs no key


FIRINGS = [(1,), (2,), (2,), (5,), None, (3,), (3,), None, None]


def _encode(mode: str, firings=FIRINGS, **kw) -> list[tuple[str, tuple]]:
    encoder = ChangelogEncoder(mode, unique_key=("user",), **kw)
    ctx = InMemoryKeyContext()
    return [(c.op, c.values) for result in firings for c in encoder.update(ctx, ("Mary",), result)]


def test_retract_encoding_of_a_sequence_of_firings():
    assert _encode("retract") == [("+I", (1,)), ("-U", (1,)), ("+U", (2,)),  # (2,) again: nothing
                                  ("-U", (2,)), ("+U", (5,)), ("-D", (5,)),
                                  ("+I", (3,)), ("-D", (3,))]  # a second None: nothing


def test_upsert_encoding_of_the_same_firings():
    assert _encode("upsert") == [("+I", (1,)), ("+U", (2,)), ("+U", (5,)), ("-D", (5,)), ("+I", (3,)), ("-D", (3,))]


def test_an_unchanged_result_emits_nothing_unless_refreshed():
    assert _encode("retract", [(1,), (1,), (1,)]) == [("+I", (1,))]
    assert _encode("upsert", [(1,), (1,)]) == [("+I", (1,))]
    # Flink under state retention: the unchanged result again, so downstream retention sees the key active
    assert _encode("retract", [(1,), (1,)], refresh_unchanged=True) == [("+I", (1,)), ("-U", (1,)), ("+U", (1,))]
    assert _encode("upsert", [(1,), (1,)], refresh_unchanged=True) == [("+I", (1,)), ("+U", (1,))]


@pytest.mark.parametrize("before, after", [((1,), (1.0,)), ((Decimal("1.0"),), (Decimal("1.00"),)),
                                           ((True,), (1,)), ((None,), (0,))])
def test_unchanged_is_strict_a_different_written_value_is_a_change(before, after):
    assert len(_encode("retract", [before, after])) == 3


def test_nan_is_unchanged():
    assert [op for op, _ in _encode("retract", [(float("nan"),), (float("nan"),)])] == ["+I"]


def test_append_mode_inserts_final_results_to_the_main_output_and_keeps_no_state():
    encoder = ChangelogEncoder("append", updating=False)
    ctx = InMemoryKeyContext()
    out = encoder.update(ctx, ("Mary", 0, 60), (4,), slot=(0, 60))
    assert out == [Change(INSERT, ("Mary", 0, 60), (4,), Tag.MAIN)] and encoder.tag is Tag.MAIN and ctx.values == {}
    assert encoder.update(ctx, ("Mary", 0, 60), None) == []


def test_slots_keep_one_result_per_window_of_the_key():
    """A windowed operator refined by early / late firings: key = (group key, window), one slot per window."""
    encoder = ChangelogEncoder("retract", unique_key=("user", "window_start", "window_end"))
    ctx = InMemoryKeyContext()
    out = []
    for window, result in [((0, 60), (1,)), ((60, 120), (1,)), ((0, 60), (2,)), ((60, 120), (1,))]:
        out += encoder.update(ctx, ("Mary", *window), result, slot=window)
    assert [str(c) for c in out] == ["+I ('Mary', 0, 60) (1,)", "+I ('Mary', 60, 120) (1,)",
                                     "-U ('Mary', 0, 60) (1,)", "+U ('Mary', 0, 60) (2,)"]
    assert encoder.emitted(ctx, (0, 60)) == (2,)
    encoder.forget(ctx, (0, 60))  # purged after its lateness: no output, the last result stays final
    assert encoder.emitted(ctx, (0, 60)) is None and encoder.emitted(ctx, (60, 120)) == (1,)


def test_the_emitted_results_are_declared_state_that_survives_the_codec():
    encoder = ChangelogEncoder("retract")
    layout = StateLayout(1, (encoder.state,))
    ctx = InMemoryKeyContext()
    encoder.update(ctx, ("Mary",), (1, Decimal("2.50")))
    encoder.update(ctx, ("Mary", 0), (7,), slot=(0, 60))
    snapshot = decode(encode(layout.snapshot(ctx)))
    assert list(snapshot) == [EMITTED]
    fresh = InMemoryKeyContext()
    layout.restore(fresh, snapshot)
    assert [str(c) for c in encoder.update(fresh, ("Mary",), (2, Decimal("2.50")))] == [
        "-U ('Mary',) (1, Decimal('2.50'))", "+U ('Mary',) (2, Decimal('2.50'))"]
    assert encoder.update(fresh, ("Mary", 0), (7,), slot=(0, 60)) == []


@pytest.mark.parametrize("mode", ["retract", "upsert"])
def test_every_prefix_of_the_encoded_firings_materializes_to_the_latest_result(mode):
    encoder = ChangelogEncoder(mode, unique_key=("user",))
    table = MaterializedTable(mode, key_names=("user",), value_names=("n",))
    ctx = InMemoryKeyContext()
    for result in FIRINGS:
        table.apply(encoder.update(ctx, ("Mary",), result))
        assert table.rows() == ([] if result is None else [{"user": "Mary", "n": result[0]}])


def test_change_rows_carry_the_op_column():
    change = Change(DELETE, ("Mary",), (2,))
    assert change.row(("user",), ("cnt",), op_column="tw_op") == {"user": "Mary", "cnt": 2, "tw_op": "-D"}
    with pytest.raises(ValueError):
        change.row(("user", "day"), ("cnt",))
