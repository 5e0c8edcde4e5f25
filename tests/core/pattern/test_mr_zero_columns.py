"""No PARTITION BY, no MEASURES, ONE ROW PER MATCH: zero output columns, one (empty) row per match.

Trino's answer for such a clause is one row per match with no columns (``count(*)`` counts the matches).
Issue 20: the core's bulk path (matches rolled into an :class:`OutputBlock`) counted a block's rows off
its first column, so a block of zero columns had no rows: 1 row came out where 28 matches exist.
"""

from __future__ import annotations

import pytest

from timeweave.core.pattern import PartitionMatcher, match_partition, match_recognize, parse_clause
from timeweave.core.pattern.partition import OutputBlock, as_dicts

CLAUSES = [
    "ORDER BY t PATTERN (A B) DEFINE A AS A.v > 0, B AS B.v < 0",  # the fast path, rolled into blocks
    "ORDER BY t AFTER MATCH SKIP TO NEXT ROW PATTERN (A B) DEFINE A AS A.v > 0, B AS B.v < 0",
    "ORDER BY t PATTERN (A B | C) DEFINE A AS A.v > 0, B AS B.v < 0, C AS FALSE",  # the general VM
]
ROWS = [{"t": t, "v": 1 if t % 2 == 0 else -1} for t in range(56)]  # 28 matches of A B


@pytest.mark.parametrize("clause", CLAUSES)
def test_one_empty_row_per_match_through_every_core_entry(clause: str) -> None:
    spec = parse_clause(clause)
    assert list(match_partition(spec, ROWS)) == [{}] * 28
    assert list(match_recognize(spec, ROWS)) == [{}] * 28
    for fast in (True, False):
        one_by_one = PartitionMatcher(spec, fast=fast)
        assert [out for row in ROWS for out in one_by_one.push(row)] + one_by_one.finish() == [{}] * 28
        at_once = PartitionMatcher(spec, fast=fast)
        blocks = at_once.push_many_blocks(ROWS) + at_once.finish_blocks()
        assert sum(len(b) if isinstance(b, OutputBlock) else 1 for b in blocks) == 28
        assert as_dicts(blocks) == [{}] * 28


def test_all_rows_per_match_keeps_the_input_columns() -> None:
    spec = parse_clause("ORDER BY t ALL ROWS PER MATCH PATTERN (A B) DEFINE A AS A.v > 0, B AS B.v < 0")
    assert list(match_partition(spec, ROWS[:4])) == ROWS[:4]
