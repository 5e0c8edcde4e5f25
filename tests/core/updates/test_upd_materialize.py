"""The reference materializer: upsert by key, retract as a multiset, errors naming the row, idempotent batches."""

from __future__ import annotations

import pytest

from timeweave.core.errors import ChangelogError, SpecError
from timeweave.core.operator import RowKind
from timeweave.core.updates import Change, MaterializedTable

INS, UB, UA, D = "+I", "-U", "+U", "-D"


def _c(op: str, user, n) -> Change:
    return Change(RowKind(op), (user,), (n,))


def _table(mode: str) -> MaterializedTable:
    return MaterializedTable(mode, key_names=("user",), value_names=("cnt",), name="clicks_per_user")


def test_retract_is_a_multiset():
    t = _table("retract")
    t.apply([_c(INS, "Mary", 1), _c(INS, "Mary", 1), _c(UB, "Mary", 1), _c(UA, "Mary", 2)])
    assert t.rows() == [{"user": "Mary", "cnt": 1}, {"user": "Mary", "cnt": 2}]
    t.apply([_c(D, "Mary", 1), _c(D, "Mary", 2)])
    assert t.rows() == []


def test_upsert_applies_by_key():
    t = _table("upsert")
    t.apply([_c(INS, "Mary", 1), _c(UA, "Mary", 2), _c(INS, "Mary", 7), _c(INS, "Bob", 1), _c(D, "Bob", 99)])
    assert t.rows() == [{"user": "Mary", "cnt": 7}]  # an upsert -D needs the key only


@pytest.mark.parametrize("mode, changes, message", [
    ("retract", [_c(UB, "Mary", 1)], "clicks_per_user: -U of a row (row {'user': 'Mary', 'cnt': 1}), which the "
                                     "table does not hold"),
    ("retract", [_c(INS, "Mary", 1), _c(D, "Mary", 2)], "clicks_per_user: -D of a row (row {'user': 'Mary', "
                                                      "'cnt': 2}), which the table does not hold"),
    ("upsert", [_c(D, "Bob", 1)], "clicks_per_user: -D of key ('Bob',) (row {'user': 'Bob', 'cnt': 1}), which the "
                                  "table does not hold"),
    ("upsert", [_c(INS, "Bob", 1), _c(UB, "Bob", 1)], "clicks_per_user: an upsert stream carries no -U (row "
                                                    "{'user': 'Bob', 'cnt': 1}): was it written in retract mode?"),
    ("append", [_c(UA, "Bob", 1)], "clicks_per_user: an append-only stream carries no +U"),
])
def test_a_change_the_table_cannot_take_is_an_error_naming_the_row_and_changes_nothing(mode, changes, message):
    t = _table(mode)
    t.apply([_c(INS, "Liz", 3)])
    with pytest.raises(ChangelogError) as err:
        t.apply(changes)
    assert str(err.value).startswith(message)
    assert t.rows() == [{"user": "Liz", "cnt": 3}]  # the failed batch left nothing behind


def test_applying_the_same_batch_id_twice_changes_nothing():
    t = _table("retract")
    assert t.apply([_c(INS, "Mary", 1)], batch_id=0) == 1
    assert t.apply([_c(UB, "Mary", 1), _c(UA, "Mary", 2)], batch_id=1) == 2
    # the engine re-runs batch 1 after a failure (same rows): applied already, nothing changes
    assert t.apply([_c(UB, "Mary", 1), _c(UA, "Mary", 2)], batch_id=1) == 0
    assert t.apply([_c(INS, "Mary", 1)], batch_id=0) == 0
    assert t.rows() == [{"user": "Mary", "cnt": 2}] and t.last_batch == 1
    # a failed batch is not recorded as applied: re-running it after the fix applies it
    with pytest.raises(ChangelogError):
        t.apply([_c(D, "Bob", 1)], batch_id=2)
    assert t.last_batch == 1 and t.apply([_c(D, "Mary", 2)], batch_id=2) == 1


@pytest.mark.parametrize("batch_id", [-1, 1.0, "3", True])
def test_a_bad_batch_id_is_a_clear_error(batch_id):
    with pytest.raises(SpecError, match="clicks_per_user: argument 'batch_id': expected a micro-batch id"):
        _table("upsert").apply([], batch_id=batch_id)


def test_written_rows_with_an_op_column():
    t = _table("upsert")
    t.apply_rows([{"user": "Mary", "cnt": 1, "op": "+I"}, {"user": "Mary", "cnt": 2, "op": "+U"}], batch_id=4)
    assert t.rows() == [{"user": "Mary", "cnt": 2}]
    with pytest.raises(ChangelogError, match="clicks_per_user: column 'cnt' is missing in row"):
        t.apply_rows([{"user": "Mary", "op": "+U"}])
    with pytest.raises(ChangelogError, match=r"clicks_per_user: unknown op None in column op of row"):
        t.apply_rows([{"user": "Mary", "cnt": 1, "op": None}])


def test_an_upsert_table_needs_key_columns_and_a_known_mode():
    with pytest.raises(SpecError, match="t: argument 'key_names': an upsert table needs its unique key columns"):
        MaterializedTable("upsert", key_names=(), value_names=("n",), name="t")
    with pytest.raises(SpecError, match="t: argument 'changelog': expected 'append', 'retract' or 'upsert'"):
        MaterializedTable("merge", key_names=("k",), value_names=("n",), name="t")
