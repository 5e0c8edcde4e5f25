"""Layer 2a: golden instruction listings of compiled patterns (the index of each line is its address)."""

from __future__ import annotations

import pytest

from timeweave.core.pattern.parser import parse_pattern
from timeweave.core.pattern.passes import flatten
from timeweave.core.pattern.program import compile_pattern


def listing(pattern: str) -> list[str]:
    return compile_pattern(parse_pattern(pattern)).dump().splitlines()


def test_concatenation_and_label_numbering_by_first_appearance() -> None:
    assert listing("B A B") == [
        "0: label 0 (B)",
        "1: label 1 (A)",
        "2: label 0 (B)",
        "3: done",
    ]


def test_greedy_and_reluctant_star_differ_only_in_split_order() -> None:
    assert listing("A*") == [
        "0: split 1, 3",  # enter the loop first: greedy
        "1: label 0 (A)",
        "2: split 1, 3",
        "3: done",
    ]
    assert listing("A*?") == [
        "0: split 3, 1",  # skip the loop first: reluctant
        "1: label 0 (A)",
        "2: split 3, 1",
        "3: done",
    ]


def test_plus_loops_over_its_only_copy() -> None:
    assert listing("A+") == ["0: label 0 (A)", "1: split 0, 2", "2: done"]
    assert listing("A+?") == ["0: label 0 (A)", "1: split 2, 0", "2: done"]


def test_bounded_quantifiers_are_unrolled() -> None:
    assert listing("A{2,4}") == [
        "0: label 0 (A)",
        "1: label 0 (A)",
        "2: split 3, 6",
        "3: label 0 (A)",
        "4: split 5, 6",
        "5: label 0 (A)",
        "6: done",
    ]
    assert listing("A{,2}?") == [
        "0: split 4, 1",
        "1: label 0 (A)",
        "2: split 4, 3",
        "3: label 0 (A)",
        "4: done",
    ]
    assert listing("A{3}") == ["0: label 0 (A)", "1: label 0 (A)", "2: label 0 (A)", "3: done"]
    assert listing("A{2,}") == ["0: label 0 (A)", "1: label 0 (A)", "2: split 1, 3", "3: done"]
    assert listing("A?") == ["0: split 1, 2", "1: label 0 (A)", "2: done"]


def test_alternation_patches_forward_jumps() -> None:
    assert listing("A | B C | D") == [
        "0: split 1, 3",
        "1: label 0 (A)",
        "2: jump 8",
        "3: split 4, 7",
        "4: label 1 (B)",
        "5: label 2 (C)",
        "6: jump 8",
        "7: label 3 (D)",
        "8: done",
    ]


def test_permute_is_the_alternation_of_orders_in_lexicographic_order() -> None:
    orders = []
    current: list[str] = []
    for line in listing("PERMUTE(A, B, C)"):
        instruction = line.split(": ", 1)[1]
        if instruction.startswith("label"):
            current.append(instruction[-2])
        elif current:
            orders.append("".join(current))
            current = []
    assert orders == ["ABC", "ACB", "BAC", "BCA", "CAB", "CBA"]
    assert listing("PERMUTE(A, B)") == [
        "0: split 1, 4",
        "1: label 0 (A)",
        "2: label 1 (B)",
        "3: jump 6",
        "4: label 1 (B)",
        "5: label 0 (A)",
        "6: done",
    ]


def test_exclusions_anchors_and_empty() -> None:
    assert listing("^ {- A -} B $") == [
        "0: match start",
        "1: save",
        "2: label 0 (A)",
        "3: save",
        "4: label 1 (B)",
        "5: match end",
        "6: done",
    ]
    assert listing("()") == ["0: done"]
    assert listing("A ()* B") == ["0: label 0 (A)", "1: label 1 (B)", "2: done"]


def test_nested_loops() -> None:
    assert listing("(A B?)*") == [
        "0: split 1, 5",
        "1: label 0 (A)",
        "2: split 3, 4",
        "3: label 1 (B)",
        "4: split 1, 5",
        "5: done",
    ]


@pytest.mark.parametrize(
    ("pattern", "flat"),
    [
        ("(A (B C)) D", "A B C D"),
        ("A | (B | C)", "A | B | C"),
        ("PERMUTE(A)", "A"),
        ("(A){1}", "A"),
        ("{- A {- B -} -}", "{- A B -}"),
        ("(() ())+ A", "A"),
    ],
)
def test_flatten(pattern: str, flat: str) -> None:
    assert str(flatten(parse_pattern(pattern))) == flat
