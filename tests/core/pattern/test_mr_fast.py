"""The fast path (timeweave.core.pattern.fast) against the general Pike VM: identical rows, always.

The differential property test draws patterns (mostly ones the fast path accepts), DEFINE
conditions from a menu covering every fast-compiled construct, AFTER MATCH SKIP and ROWS PER MATCH
modes, and random rows; ``PartitionMatcher(fast=False)`` is the general VM.  It also feeds the rows
in random chunks and through a state codec round trip, as the streaming and backfill doors do.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeweave.core.pattern import MatchRuntimeError, ir, parse_clause
from timeweave.core.pattern.fast import collision_free_targets
from timeweave.core.pattern.operator import HeldMatcher
from timeweave.core.pattern.parser import parse_pattern
from timeweave.core.pattern.partition import PartitionMatcher, _fast_measures, compile_clause
from timeweave.core.pattern.program import compile_pattern
from timeweave.core.state_codec import decode, encode

LABELS = ("A", "B", "C")

# {v}: the variable being defined; {w}: another (or the same) variable of the pattern
CONDITIONS = [
    "{v}.p < 3",
    "AVG({v}.p) < 2",
    "SUM({v}.p) <= 6 AND COUNT({v}.*) < 4",
    "{v}.p > LAST({v}.p, 1) OR LAST({v}.p, 1) IS NULL",
    "{v}.p >= FIRST({v}.p) AND p <> 1",
    "FIRST({v}.p, 1) IS NULL OR {v}.p <= FIRST({v}.p, 1)",
    "PREV(p) IS NULL OR p >= PREV(p)",
    "NEXT(p) IS NULL OR p <= NEXT(p)",
    "COUNT(*) <= 3 AND MAX({v}.p) - MIN({v}.p) < 3",
    "PREV({v}.p, 2) IS NULL OR {v}.p <> PREV({v}.p, 2)",
    "LAST(p, 1) IS NULL OR p + LAST(p, 1) BETWEEN 1 AND 5",
    "CASE WHEN p > 2 THEN TRUE ELSE {v}.q END",
    "COALESCE({v}.q, FALSE) OR MATCH_NUMBER() > 2",
    "p IN (0, 2, 3)",
    "NOT ({v}.p = 1)",
    "LAST({w}.p, 1) IS NULL OR {v}.p > LAST({w}.p, 1)",
    "{w}.p IS NULL OR {v}.p < {w}.p + 2",
    "FIRST({w}.p, 1) IS NULL OR {v}.p >= FIRST({w}.p, 1)",
    "COUNT({w}.*) < 3 AND AVG({w}.p) <= 3",
    "PREV(LAST({w}.p, 1)) IS NULL OR {v}.p <> PREV(LAST({w}.p, 1))",
]
MEASURES = ("MEASURES MATCH_NUMBER() AS mn, COUNT(*) AS n, FIRST(p) AS f, LAST(p) AS l, AVG(p) AS a, "
            "SUM(A.p) AS sa, CLASSIFIER() AS cls")
# extra measures ({w}: a variable of the pattern; U: the subset of the first two): every construct
# the compiled ONE ROW PER MATCH measures (fast.MeasureCompiler) handle, and some they hand back
EXTRA_MEASURES = [
    "FIRST({w}.p) AS m", "LAST({w}.p, 1) AS m", "{w}.p AS m", "FIRST(p, 2) AS m", "LAST(p, 2) AS m",
    "FIRST({w}.p, 1) AS m", "MIN({w}.p) AS m", "MAX(p) AS m", "COUNT({w}.*) AS m", "COUNT({w}.q) AS m",
    "AVG({w}.p) AS m", "SUM(p) - COUNT(*) AS m", "CLASSIFIER({w}) AS m", "MATCH_ROWTIME() AS m",
    "CASE WHEN LAST({w}.q) THEN MATCH_NUMBER() ELSE -1 END AS m", "COUNT(U.*) AS m", "LAST(U.p) AS m",
    "SUM(U.p) AS m", "CLASSIFIER(U) AS m", "FIRST(U.p, 1) AS m", "p AS m", "{w}.p + 'x' AS m",
    "PREV({w}.p) AS m", "SUM({w}.p * 2) AS m", "FIRST({w}.q) AND LAST({w}.p) > 1 AS m",
]
SKIPS = ["AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW", "AFTER MATCH SKIP TO LAST A"]
ROWS_PER_MATCH = ["ONE ROW PER MATCH", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH WITH UNMATCHED ROWS",
                  "ALL ROWS PER MATCH OMIT EMPTY MATCHES"]


def patterns() -> st.SearchStrategy[ir.Node]:
    leaves = st.sampled_from(LABELS).map(ir.Label)

    def extend(children: st.SearchStrategy[ir.Node]) -> st.SearchStrategy[ir.Node]:
        bounds = st.sampled_from([(0, None), (1, None), (0, 1), (2, None), (1, 2), (2, 3)])
        concatenation = st.lists(children, min_size=2, max_size=3).map(lambda ps: ir.Concatenation(tuple(ps)))
        quantified = st.tuples(children, bounds, st.sampled_from([True, True, False])).map(
            lambda t: ir.Quantified(t[0], t[1][0], t[1][1], t[2]))
        alternation = st.lists(children, min_size=2, max_size=2).map(lambda ps: ir.Alternation(tuple(ps)))
        return st.one_of(concatenation, concatenation, quantified, quantified, alternation)

    return st.recursive(leaves, extend, max_leaves=5)


rows_strategy = st.lists(
    st.fixed_dictionaries({"p": st.integers(0, 4), "q": st.sampled_from([True, False, None])}),
    min_size=0, max_size=14,
).map(lambda rows: [{"id": i, **row} for i, row in enumerate(rows)])


def run(clause: str, rows: list[dict[str, Any]], *, fast: bool, chunks: list[int] | None = None,
        pickled: bool = False) -> list[dict[str, Any]] | str:
    """Output rows, or the error message of a MatchRuntimeError (both paths must raise alike)."""
    matcher = PartitionMatcher(parse_clause(clause), fast=fast)
    out: list[dict[str, Any]] = []
    try:
        position = 0
        for size in chunks or [1] * len(rows):
            out += matcher.push_many(rows[position : position + size])
            position += size
            if pickled:  # through the stored form (the streaming and backfill state's codec)
                matcher = decode(encode(HeldMatcher(matcher))).get(matcher.spec)
        out += matcher.push_many(rows[position:])
        out += matcher.finish()
    except MatchRuntimeError as error:
        return str(error)
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns(), rows=rows_strategy,
       picks=st.lists(st.tuples(st.integers(0, len(CONDITIONS) - 1), st.integers(0, 2)), min_size=3, max_size=3),
       skip=st.sampled_from(SKIPS), per_match=st.sampled_from(ROWS_PER_MATCH),
       chunks=st.lists(st.integers(1, 5), max_size=4), pickled=st.booleans(),
       extra=st.one_of(st.none(), st.tuples(st.integers(0, len(EXTRA_MEASURES) - 1), st.integers(0, 2))))
def test_fast_path_equals_general_vm(pattern: ir.Node, rows: list[dict[str, Any]], picks: list[tuple[int, int]],
                                     skip: str, per_match: str, chunks: list[int], pickled: bool,
                                     extra: tuple[int, int] | None) -> None:
    used = pattern.labels()
    if skip.endswith(" A") and "A" not in used:
        skip = SKIPS[0]
    define = ", ".join(f"{v} AS {CONDITIONS[pick].format(v=v, w=used[other % len(used)])}"
                       for v, (pick, other) in zip(used, picks, strict=False))
    measures = MEASURES if "A" in used else MEASURES.replace("SUM(A.p)", "SUM(p)")
    subset = ""
    if extra is not None:
        measures += ", " + EXTRA_MEASURES[extra[0]].format(w=used[extra[1] % len(used)])
        subset = f"SUBSET U = ({', '.join(used[:2])})"
    clause = f"ORDER BY id {measures} {per_match} {skip} PATTERN ({pattern}) {subset} DEFINE {define}"
    general = run(clause, rows, fast=False)
    assert run(clause, rows, fast=True) == general, clause
    assert run(clause, rows, fast=True, chunks=chunks, pickled=pickled) == general, clause


@pytest.mark.parametrize(("pattern", "fast"), [
    ("A+ B", True), ("S D+ U", True), ("A B{2,} C?", True), ("A | B C", True), ("A B* C", True),
    ("A* A* B", False), ("(A | A)+ B", False), ("A+ B+", False), ("^ A+ B", False), ("A {- B -}", False),
])
def test_which_programs_are_collision_free(pattern: str, fast: bool) -> None:
    assert (collision_free_targets(compile_pattern(parse_pattern(pattern))) is not None) is fast


def test_benchmark_clauses_take_the_fast_path() -> None:
    avg = parse_clause("PARTITION BY s ORDER BY t MEASURES AVG(A.p) AS a PATTERN (A+ B) DEFINE A AS AVG(A.p) < 15")
    seed = parse_clause("PARTITION BY s ORDER BY t MEASURES LAST(D.t) AS b ONE ROW PER MATCH "
                        "AFTER MATCH SKIP TO LAST U PATTERN (S D+ U) DEFINE "
                        "D AS (LAST(D.p, 1) IS NULL AND D.p < S.p) OR D.p < LAST(D.p, 1), U AS U.p > LAST(D.p, 1)")
    assert compile_clause(avg).fast is not None
    assert compile_clause(seed).fast is not None
    # CLASSIFIER in DEFINE reads the label history: the general VM
    assert compile_clause(parse_clause("PATTERN (A+ B) DEFINE B AS CLASSIFIER() = 'B'")).fast is None


def test_runtime_errors_name_the_condition_on_both_paths() -> None:
    clause = "ORDER BY id PATTERN (A+) DEFINE A AS A.p < 'x'"
    rows = [{"id": 1, "p": 1}]
    message = run(clause, rows, fast=True)
    assert message == run(clause, rows, fast=False)
    assert isinstance(message, str) and "cannot evaluate A.p < 'x'" in message


SEED_001 = ("ORDER BY id MEASURES START_ROW.id AS s, LAST(PRICE_DOWN.id) AS bottom, LAST(PRICE_UP.id) AS e "
            "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST PRICE_UP PATTERN (START_ROW PRICE_DOWN+ PRICE_UP) DEFINE "
            "PRICE_DOWN AS (LAST(PRICE_DOWN.p, 1) IS NULL AND PRICE_DOWN.p < START_ROW.p) "
            "OR PRICE_DOWN.p < LAST(PRICE_DOWN.p, 1), PRICE_UP AS PRICE_UP.p > LAST(PRICE_DOWN.p, 1)")
AVG_BENCH = ("ORDER BY id MEASURES FIRST(A.id) AS s, LAST(A.id) AS e, AVG(A.p) AS a ONE ROW PER MATCH "
             "AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B) DEFINE A AS AVG(A.p) < {limit}")


@pytest.mark.parametrize("clause", [
    SEED_001,
    AVG_BENCH.format(limit=15),
    AVG_BENCH.format(limit=14),
    AVG_BENCH.format(limit=14).replace("PAST LAST ROW", "TO NEXT ROW"),
    AVG_BENCH.format(limit=10).replace("MEASURES", "MEASURES MATCH_NUMBER() AS mn, COUNT(B.*) AS nb,").replace(
        "AVG(A.p) <", "(MOD(MATCH_NUMBER(), 7) <> 0 OR A.p < 3) AND AVG(A.p) <"),
    "ORDER BY id MEASURES COUNT(*) AS n ALL ROWS PER MATCH PATTERN (A{2,} B C?) "
    "DEFINE B AS B.p > LAST(A.p, 1) AND B.p < FIRST(A.p, 1), C AS C.p < PREV(C.p, 3)",
])
def test_benchmark_shaped_clauses_on_longer_random_data(clause: str) -> None:
    generator = random.Random(7)
    rows = [{"id": i, "p": generator.randint(1, 30), "q": None} for i in range(3000)]
    general = run(clause, rows, fast=False)
    assert isinstance(general, list) and len(general) > 50  # enough matches to compare
    assert run(clause, rows, fast=True, chunks=[1000, 17, 1, 600]) == general


@pytest.mark.parametrize("skip", ["AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW",
                                  "AFTER MATCH SKIP TO LAST B"])
def test_compiled_measures_equal_the_general_evaluator(skip: str) -> None:
    """Every compiled measure construct at once, on long random data: the same rows as the general VM."""
    supported = [m for m in EXTRA_MEASURES if "'x'" not in m and "PREV" not in m and "* 2" not in m]
    measures = ", ".join(m.format(w="AB"[i % 2]).replace(" AS m", f" AS m{i}") for i, m in enumerate(supported))
    clause = (f"ORDER BY id MEASURES {measures} ONE ROW PER MATCH {skip} PATTERN (A+ B C?) SUBSET U = (A, C) "
              "DEFINE A AS AVG(A.p) < 3.5 AND COUNT(*) < 9, B AS B.p > 2, C AS C.p < 4")
    spec = parse_clause(clause)
    assert _fast_measures(spec, spec.text) is not None  # the compiled measures, not the general evaluator
    generator = random.Random(11)
    rows = [{"id": i, "p": generator.randint(1, 6), "q": generator.choice([True, False, None])} for i in range(3000)]
    general = run(clause, rows, fast=False)
    assert isinstance(general, list) and len(general) > 100
    assert run(clause, rows, fast=True, chunks=[700, 1, 13, 500]) == general
    assert run(clause, rows, fast=True) == general


def test_compiled_measures_hand_back_what_they_do_not_compile() -> None:
    for measure in ("PREV(A.p) AS m", "SUM(A.p * 2) AS m", "FIRST(A.p + 1) AS m"):
        spec = parse_clause(f"MEASURES {measure} PATTERN (A+ B) DEFINE A AS A.p < 3")
        assert _fast_measures(spec, spec.text) is None
    all_rows = parse_clause("MEASURES FIRST(A.p) AS m ALL ROWS PER MATCH PATTERN (A+ B) DEFINE A AS A.p < 3")
    assert _fast_measures(all_rows, all_rows.text) is None


def test_batched_measures_raise_the_error_of_the_earliest_match() -> None:
    """Compiled measures run measure by measure over many matches; the error is still the first one
    match by match: match 1's second measure, not match 3's first."""
    clause = ("ORDER BY id MEASURES SUM(A.v) AS s, LAST(A.w) + 1 AS z ONE ROW PER MATCH "
              "PATTERN (A+ B) DEFINE A AS A.p < 3")
    spec = parse_clause(clause)
    measures = _fast_measures(spec, spec.text)
    assert measures is not None and measures.batched[0] is not None and measures.batched[1] is None
    rows = [{"id": i, "p": p, "v": v, "w": w} for i, (p, v, w) in enumerate([
        (1, 1, "x"), (5, 1, 1),  # match 1: LAST(A.w) + 1 fails
        (1, 1, 1), (5, 1, 1),  # match 2
        (1, "y", 1), (1, 2, 1), (5, 1, 1),  # match 3: SUM(A.v) fails
        (1, 1, 1), (5, 1, 1), (1, 1, 1),  # match 4 and more rows: matches 1-4 are collected in one push
    ])]
    general = run(clause, rows, fast=False)
    assert isinstance(general, str) and "match 1" in general.lower()
    assert run(clause, rows, fast=True, chunks=[len(rows)]) == general
    rows[0]["w"] = 1  # now only match 3 fails, in the batched SUM
    general = run(clause, rows, fast=False)
    assert isinstance(general, str) and "match 3" in general.lower()
    assert run(clause, rows, fast=True, chunks=[len(rows)]) == general


@pytest.mark.parametrize("clause", [
    "ORDER BY id MEASURES FIRST(A.id) AS s, LAST(B.id) AS e, AVG(A.p) AS a PATTERN (A+ B) DEFINE A AS AVG(A.p) < 2",
    "ORDER BY id MEASURES COUNT(*) AS n, CLASSIFIER() AS c AFTER MATCH SKIP TO NEXT ROW PATTERN (A+ B) "
    "DEFINE A AS A.p < 4",
    "ORDER BY id MEASURES COUNT(*) AS n, LAST(B.id) AS b PATTERN (S A+ B) DEFINE S AS S.p > 3, A AS A.p < S.p - 2",
    "ORDER BY id MEASURES COUNT(*) AS n PATTERN ((A+ B)+ C) DEFINE A AS A.p < 3, C AS C.p = 4",
    "ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+ B C?) DEFINE A AS A.p > 1 AND COUNT(A.*) < 5, C AS C.p > 2",
    "ORDER BY id MEASURES COUNT(*) AS n ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A+ B) DEFINE A AS A.p < 2",
    "ORDER BY id MEASURES MATCH_NUMBER() AS m PATTERN (A+ B) DEFINE A AS A.p < 3 OR PREV(A.p) = 4",
])
def test_loop_with_an_undefined_tail_equals_the_general_vm(clause: str) -> None:
    """X+ T with T undefined (the benchmark's A+ B) runs in FastRun's tight loop: same rows as the VM,
    however the rows are chunked and wherever the matcher is stored and read back."""
    generator = random.Random(5)
    # the partition ends inside a run of A rows: the last match is the loop's result at the end
    rows = [{"id": i, "p": generator.randint(0, 5) if i < 1494 else 0} for i in range(1500)]
    general = run(clause, rows, fast=False)
    assert isinstance(general, list) and len(general) > 20
    assert run(clause, rows, fast=True) == general
    assert run(clause, rows, fast=True, chunks=[1500]) == general
    assert run(clause, rows, fast=True, chunks=[7, 1, 300, 2, 2, 2, 40], pickled=True) == general


@pytest.mark.parametrize("skip", ["AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW"])
@pytest.mark.parametrize(("values", "limit"), [
    ([0, 1, 2, 3, 4, 5, None], 2),  # integers and NULLs (a NULL neither sums nor counts)
    ([0.5, 1.25, 3.0, None, 2.75], 1.5),  # floats: the same additions in the same order
    ([1, 2.5, None, 4, 0], 1),  # integers and floats mixed in one running sum
])
def test_rolled_average_loop_equals_the_general_vm(skip: str, values: list[Any], limit: Any) -> None:
    """``A+ B`` with ``AVG(A.p) <op> literal`` between attempts runs in one call (the compiled consume's
    ``roll``): the same rows as the VM for NULLs, floats, both skips, any chunking, pickling mid-attempt
    and a partition ending inside a run of A rows (after one row, and after several)."""
    clause = (f"ORDER BY id MEASURES FIRST(A.id) AS s, LAST(A.id) AS e, AVG(A.p) AS a, MATCH_NUMBER() AS mn "
              f"ONE ROW PER MATCH {skip} PATTERN (A+ B) DEFINE A AS AVG(A.p) < {limit}")
    generator = random.Random(3)
    rows = [{"id": i, "p": generator.choice(values)} for i in range(2000)]
    run(clause, rows[:5], fast=True)  # the first partition resolves the column's spelling: roll from now on
    fast = compile_clause(parse_clause(clause)).fast
    assert fast is not None
    binding = fast.bind(PartitionMatcher(parse_clause(clause)).rows)
    (entry, _), = binding.initial_threads[0]
    assert hasattr(entry[0], "roll")
    general = run(clause, rows, fast=False)
    assert isinstance(general, list) and len(general) > 100
    assert run(clause, rows, fast=True) == general
    assert run(clause, rows, fast=True, chunks=[1999]) == general
    assert run(clause, rows, fast=True, chunks=[3, 1, 250, 2, 2, 77], pickled=True) == general
    for tail in ([{"id": 2000, "p": 0}], [{"id": 2000, "p": 0}, {"id": 2001, "p": 0}, {"id": 2002, "p": 0}]):
        assert run(clause, rows + tail, fast=True) == run(clause, rows + tail, fast=False)


def test_rolled_average_loop_raises_the_general_vms_error() -> None:
    clause = "ORDER BY id MEASURES COUNT(*) AS n ONE ROW PER MATCH PATTERN (A+ B) DEFINE A AS AVG(A.p) < 3"
    run(clause, [{"id": 0, "p": 1}], fast=True)  # resolves the column's spelling
    for bad in ("x", None):
        rows = [{"id": i, "p": p} for i, p in enumerate([1, 5, 1, 2, 9, 1, bad, 1, 7])]
        general = run(clause, rows, fast=False)
        assert run(clause, rows, fast=True, chunks=[len(rows)]) == general
    rows = [{"id": i, "p": p} for i, p in enumerate([1, 5, 1, 2, 9, 1, "x", 1, 7])]
    message = run(clause, rows, fast=True, chunks=[len(rows)])
    assert isinstance(message, str) and "match 3" in message.lower()


@pytest.mark.parametrize("skip", ["TO FIRST B", "TO LAST B", "TO LAST C", "TO FIRST A"])
def test_collected_matches_skip_to_a_variable_like_the_general_vm(skip: str) -> None:
    """SKIP TO FIRST/LAST v: a fast run collects matches past each skip target; a skip that fails (v
    absent, or the match's first row) ends the collection and raises the general VM's error, with
    the earlier matches of the same push counted."""
    clause = ("ORDER BY id MEASURES COUNT(*) AS n, MATCH_NUMBER() AS mn, LAST(B.id) AS b ONE ROW PER MATCH "
              f"AFTER MATCH SKIP {skip} PATTERN (A B* C) DEFINE A AS A.p = 1, B AS B.p <= 2, C AS C.p = 3")
    assert compile_clause(parse_clause(clause)).fast is not None
    generator = random.Random(13)
    rows = [{"id": i, "p": generator.choice([1, 1, 2, 2, 3])} for i in range(1500)]
    general = run(clause, rows, fast=False)
    assert run(clause, rows, fast=True) == general
    assert run(clause, rows, fast=True, chunks=[1499]) == general
    assert run(clause, rows, fast=True, chunks=[5, 1, 200, 3], pickled=True) == general
    with_b = [{"id": i, "p": p} for i, p in enumerate([1, 2, 3, 1, 1, 2, 2, 3, 2, 1, 3])]  # the last match has no B
    general = run(clause, with_b, fast=False)
    assert run(clause, with_b, fast=True, chunks=[len(with_b)]) == general
    if skip.endswith("B"):
        assert isinstance(general, str) and "B is not present in the match" in general
