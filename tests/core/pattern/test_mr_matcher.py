"""Layer 2b: the Pike VM on label strings: row i "is" the label named by character i of the input."""

from __future__ import annotations

import pickle
import time
from typing import Any

import pytest

from timeweave.core.pattern.matcher import MatchResult, Run, Thread, full_signature
from timeweave.core.pattern.parser import parse_pattern
from timeweave.core.pattern.program import Program, compile_pattern


class CharEvaluator:
    """DEFINE stand-in: a row matches label X iff its character is X ('.' matches every label)."""

    def __init__(self, text: str, program: Program) -> None:
        self.text = text
        self.names = program.label_names

    def evaluate(self, thread: Thread, label: int, position: int, run: Run) -> tuple[Any, ...] | None:
        char = self.text[position]
        return () if char in (".", self.names[label]) else None


def run_pattern(pattern: str, text: str, start: int = 0) -> tuple[Run, Program, int]:
    program = compile_pattern(parse_pattern(pattern), sorted(parse_pattern(pattern).labels()))
    run = Run(program, start, CharEvaluator(text, program), at_partition_start=start == 0, at_end=start == len(text))
    most_threads = len(run.threads)
    while not run.finished and run.position < len(text):
        run.step(at_end=run.position == len(text) - 1)
        most_threads = max(most_threads, len(run.threads))
    return run, program, most_threads


def match(pattern: str, text: str, start: int = 0) -> str | None:
    """The matched labels as a string, '' for an empty match, None for no match."""
    run, program, _ = run_pattern(pattern, text, start)
    result = run.match()
    return None if result is None else "".join(program.label_names[i] for i in result.labels)


def captures(pattern: str, text: str) -> list[int]:
    run, _, _ = run_pattern(pattern, text)
    result = run.match()
    assert result is not None
    return [p for pair in result.exclusions for p in pair]


def test_labels() -> None:
    assert match("A B", "ABCD") == "AB"
    assert match("A* B", "AABCD") == "AAB"
    assert match("A* B", "BCD") == "B"
    assert match("^ A B", "ABCD") == "AB"
    assert match("A B $", "AB") == "AB"
    assert match("{- A -} B", "ABCD") == "AB"
    assert match("A B | B C", "ABCD") == "AB"
    assert match("PERMUTE(A, B, C)", "ABCD") == "ABC"
    assert match("A B?", "ABCD") == "AB"
    assert match("A B??", "ABCD") == "A"


def test_no_match_and_empty_match() -> None:
    assert match("A", "B") is None
    assert match("()", "ABCD") == ""
    assert match("A*", "BBB") == ""  # the empty match is a match
    assert match("A $", "AA") is None  # $ only at the partition end
    assert match("^ A", "AA", start=1) is None  # ^ only when the attempt starts at row 0


def test_captures_of_exclusions() -> None:
    assert captures("{- A -} B", "ABCD") == [0, 1]
    assert captures("{- A B -}", "ABCD") == [0, 2]
    assert captures("A {- B -}", "ABCD") == [1, 2]
    assert captures("A ({- B -})*", "ABBBCD") == [1, 2, 2, 3, 3, 4]
    assert captures("A {- B* -}", "ABBBCD") == [1, 4]
    assert captures("A ({- B -})* C {- D* -}", "ABBCDDDE") == [1, 2, 2, 3, 4, 7]
    assert captures("A ({- B C -} D {- E -})*", "ABCDEBCDEBCDE") == [1, 3, 4, 5, 5, 7, 8, 9, 9, 11, 12, 13]


def test_greedy_prefers_more_and_reluctant_fewer() -> None:
    assert match("A B* B", "ABBBC") == "ABBB"
    assert match("A B*? B", "ABBBC") == "AB"
    assert match("A B+? B", "ABBBC") == "ABB"
    assert match("A{2,3}", "AAAA") == "AAA"
    assert match("A{2,3}?", "AAAA") == "AA"
    assert match("A B{,2}", "ABBB") == "ABB"


def test_greedy_backtracks_when_the_longer_path_fails() -> None:
    # B* first takes every B, then gives back one so that the final B can match
    assert match("A B* B C", "ABBBC") == "ABBBC"


def test_alternation_prefers_left_even_if_shorter() -> None:
    assert match("(A | A B) C?", "ABC") == "A"
    assert match("(A B | A) B C", "ABC") == "ABC"  # left fails later, right takes over
    assert match("(B | A)+", "ABAB") == "ABAB"


def test_permute_order_is_lexicographic_in_argument_positions() -> None:
    # with every row matching every label ('.'), the first permutation wins: A B C
    assert match("PERMUTE(A, B, C)", "...") == "ABC"
    assert match("PERMUTE(C, A, B)", "...") == "CAB"
    assert match("PERMUTE(A, B, C)", "CBA") == "CBA"
    assert match("PERMUTE(A, B?)", "BA") == "BA"
    assert match("PERMUTE(A, B?)", ".") == "A"  # A then empty B? beats B then A (which fails)


def test_empty_loop_iterations_are_cut() -> None:
    assert match("(A*)*", "AAA") == "AAA"
    assert match("(A?)+ B", "B") == "B"
    assert match("(A*?)* B", "AAB") == "AAB"
    assert match("(() | A)+ B", "AAB") == "AAB"


def test_rows_matching_several_labels_follow_preference() -> None:
    assert match("A+ B", "....") == "AAAB"  # greedy A+ keeps all but the last row
    assert match("A+? B", "....") == "AB"
    assert match("(A | B)* C", "....") == "AAAC"


def test_no_exponential_blowup() -> None:
    # Trino's testLongMatch: nested + over 41 A's and a B, anchored at both ends: no match, quickly
    started = time.perf_counter()
    _, _, threads = run_pattern("^ (A+)+ $", "A" * 41 + "B")
    assert match("^ (A+)+ $", "A" * 41 + "B") is None
    assert threads <= 8
    for pattern in ("(A | A)+ B", "(A* | A)* B", "(A? A?)* B", "((A+)+)+ B"):
        _, _, threads = run_pattern(pattern, "A" * 300 + "C")
        assert threads <= 16, pattern
    assert time.perf_counter() - started < 20  # generous: the thread counts above are the real check


def test_result_positions() -> None:
    run, _, _ = run_pattern("B+", "ABBC", start=1)
    assert run.match() == MatchResult(1, (0, 0))
    assert run.match().end == 2


def test_a_run_in_progress_pickles() -> None:
    text = "ABBBBBBC"
    program = compile_pattern(parse_pattern("A B+ C"), ["A", "B", "C"])
    run = Run(program, 0, CharEvaluator(text, program))
    for _ in range(4):
        run.step()
    restored: Run = pickle.loads(pickle.dumps(run))
    restored.rebind(CharEvaluator(text, program), full_signature)
    while not restored.finished and restored.position < len(text):
        restored.step()
    assert restored.match() == MatchResult(0, (0, 1, 1, 1, 1, 1, 1, 2))


@pytest.mark.parametrize("length", [2000])
def test_long_chains_pickle_without_recursion(length: int) -> None:
    text = "A" * length
    program = compile_pattern(parse_pattern("A+"), ["A"])
    run = Run(program, 0, CharEvaluator(text, program))
    for _ in range(length):
        run.step()
    assert len(pickle.dumps(run)) < 50 * length
