"""MATCH_RECOGNIZE work budget: the worst case of a fuzzed pattern corpus, and the issue's slow patterns.

For every (pattern, data) input the core matcher runs one 1,000-row partition with the default
:class:`~timeweave.core.pattern.MatchBudget` in dead-letter mode; the table gives CPU seconds per 1,000 rows,
split by whether the budget ran out.  The claim checked: no input takes more than 1 CPU-s per 1,000 rows
without hitting the limit (inputs that hit it stop there; their time is the budget's price).

``--calibrate`` checks the work units instead (:class:`~timeweave.core.pattern.budget.WorkWeights`): every input
runs until it has spent ``--units`` work units (or ends), and the table gives the CPU microseconds per unit,
whose spread over the corpus is what the weights keep small (the budget maps to CPU time only if a unit
costs about the same whatever the pattern).

Run: ``PYTHONPATH=. python bench/match_budget.py [--patterns 200] [--rows 1000] [--seed 7] [--calibrate]``
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from timeweave.core.errors import TimeweaveError
from timeweave.core.pattern import DEFAULT_BUDGET, MatchBudget, PartitionMatcher, parse_clause

VARS = ("A", "B", "C")
CONDITIONS = (
    "{v}.v > {k}", "{v}.v <= {k}", "{v}.v > PREV({v}.v)", "{v}.v < PREV({v}.v)", "AVG({v}.v) > {k}",
    "SUM({v}.v) >= {k}", "COUNT({v}.v) < 50", "true", "{v}.v = {k}",
)

ISSUE = [  # the issue's measured slow patterns: (name, PATTERN, DEFINE, rows)
    ("(A|B)* C, AVG, C never", "(A|B)* C", "A AS AVG(A.v) > 0, B AS AVG(B.v) >= 0, C AS C.v < 0", 40),
    ("(A|B){1000}, AVG", "(A|B){1000}", "A AS AVG(A.v) > 0, B AS AVG(B.v) >= 0", 80),
    ("PERMUTE(A,B,C,D,E)+", "PERMUTE(A, B, C, D, E)+",
     "A AS A.v > 0, B AS B.v > 0, C AS C.v > 0, D AS D.v > 0, E AS E.v > 0", 500),
    ("A+? B, B never", "A+? B", "A AS A.v > 0, B AS B.v < 0", 10_000),
    ("(A|B)+ C ALL ROWS, no end", "(A|B)+ C", "A AS A.v > 0, B AS B.v > 0, C AS C.v < 0", 1_000),
    ("A+ B, B never", "A+ B", "A AS A.v > 0, B AS B.v < 0", 10_000),
    ("(A|AA)* B, B never", "(A|A A)* B", "A AS A.v > 0, B AS B.v < 0", 2_000),
]


def random_pattern(rng: random.Random, depth: int = 0) -> str:
    """A random row pattern over A, B, C: concatenation, alternation, quantifiers (greedy/reluctant), PERMUTE."""
    roll = rng.random()
    if depth > 2 or roll < 0.3:
        item = rng.choice(VARS)
    elif roll < 0.5:
        item = "(" + " | ".join(random_pattern(rng, depth + 1) for _ in range(rng.randint(2, 3))) + ")"
    elif roll < 0.6:
        item = "PERMUTE(" + ", ".join(rng.sample(VARS, rng.randint(2, 3))) + ")"
    else:
        item = "(" + " ".join(random_pattern(rng, depth + 1) for _ in range(rng.randint(2, 3))) + ")"
    quantifier = rng.choice(["", "", "*", "+", "?", "{2,}", "{1,3}", "{5}"])
    if quantifier and rng.random() < 0.25:
        quantifier += "?"
    return item + quantifier


def random_clause(rng: random.Random) -> str:
    pattern = " ".join(random_pattern(rng) for _ in range(rng.randint(1, 3)))
    used = [v for v in VARS if v in pattern]  # DEFINE may only name variables of PATTERN
    define = ", ".join(f"{v} AS " + rng.choice(CONDITIONS).format(v=v, k=rng.randint(0, 9)) for v in used)
    rows = rng.choice(["ONE ROW PER MATCH", "ALL ROWS PER MATCH"])
    skip = rng.choice(["PAST LAST ROW", "TO NEXT ROW"])
    return f"ORDER BY t MEASURES COUNT(*) AS n {rows} AFTER MATCH SKIP {skip} PATTERN ({pattern}) DEFINE {define}"


def datasets(rng: random.Random, n: int) -> dict[str, list[dict[str, Any]]]:
    return {
        "random": [{"t": t, "v": rng.randint(0, 9)} for t in range(n)],
        "constant": [{"t": t, "v": 5} for t in range(n)],  # every condition is the same on every row
        "rising": [{"t": t, "v": t % 500} for t in range(n)],
    }


def measure(clause: str, rows: list[dict[str, Any]], budget: MatchBudget = DEFAULT_BUDGET) -> tuple[float, bool, int]:
    """CPU seconds to match ``rows`` as one partition, whether the budget ran out, and the work units spent."""
    matcher = PartitionMatcher(parse_clause(clause), dead_letter=True, budget=budget)
    started = time.process_time()
    try:
        matcher.push_many(rows)
        matcher.finish()
    except TimeweaveError:
        pass  # a runtime error of the standard (SKIP TO ...) is not this measurement's concern
    return time.process_time() - started, matcher.exceeded is not None, matcher.meter.work


def calibrate(rng: random.Random, patterns: int, rows: int, units: int) -> None:
    """CPU microseconds per work unit over the issue's patterns and the fuzzed corpus (inputs stopped at ``units``)."""
    budget = MatchBudget(base_work=units, work_per_row=1)
    inputs = [(f"ORDER BY t MEASURES COUNT(*) AS n {'ALL' if 'ALL ROWS' in name else 'ONE'} ROW{'S' if 'ALL ROWS' in name else ''} "
               f"PER MATCH PATTERN ({pattern}) DEFINE {define}", "v = 1", [{"t": t, "v": 1} for t in range(n)])
              for name, pattern, define, n in ISSUE]
    data = datasets(rng, rows)
    for _ in range(patterns):
        clause = random_clause(rng)
        inputs += [(clause, name, values) for name, values in data.items()]
    costs: list[tuple[float, str, str, int]] = []
    for clause, name, values in inputs:
        seconds, _, work = measure(clause, values, budget)
        if work >= units // 10:  # smaller runs are mostly timer noise and set-up
            costs.append((seconds * 1e6 / work, name, clause, work))
    costs.sort()
    per_unit = [c[0] for c in costs]
    pick = [per_unit[min(len(per_unit) - 1, int(q * len(per_unit)))] for q in (0, 0.1, 0.5, 0.9, 1)]
    print(f"{len(inputs)} inputs, {len(costs)} spent >= {units // 10:,} units; CPU us per unit: min {pick[0]:.2f}, "
          f"p10 {pick[1]:.2f}, median {pick[2]:.2f}, p90 {pick[3]:.2f}, max {pick[4]:.2f}")
    for per, name, clause, work in costs[-3:]:
        print(f"  dearest: {per:.2f} us per unit, {work:,} units ({name} data): {clause}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", type=int, default=200)
    parser.add_argument("--rows", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--calibrate", action="store_true", help="CPU microseconds per work unit instead")
    parser.add_argument("--units", type=int, default=300_000, help="with --calibrate: stop each input here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    if args.calibrate:
        calibrate(rng, args.patterns, args.rows, args.units)
        return
    print(f"budget: {DEFAULT_BUDGET}")
    print("\n| issue pattern | rows | CPU-s | budget hit |\n|---|---:|---:|---|")
    for name, pattern, define, n in ISSUE:
        rows_per_match = "ALL ROWS PER MATCH" if "ALL ROWS" in name else "ONE ROW PER MATCH"
        clause = f"ORDER BY t MEASURES COUNT(*) AS n {rows_per_match} PATTERN ({pattern}) DEFINE {define}"
        seconds, hit, _ = measure(clause, [{"t": t, "v": 1} for t in range(n)])
        print(f"| {name} | {n:,} | {seconds:.2f} | {'yes' if hit else 'no'} |", flush=True)
    data = datasets(rng, args.rows)
    worst: dict[bool, tuple[float, str, str]] = {}
    hits = total = 0
    for _ in range(args.patterns):
        clause = random_clause(rng)
        for name, rows in data.items():
            seconds, hit, _ = measure(clause, rows)
            per_thousand = seconds * 1_000 / args.rows
            total += 1
            hits += hit
            if per_thousand > worst.get(hit, (-1.0, "", ""))[0]:
                worst[hit] = (per_thousand, name, clause)
                print(f"  new worst ({'hit' if hit else 'within'}): {per_thousand:.2f} CPU-s per 1,000 rows, "
                      f"{name}: {clause}", flush=True)
    print(f"\nfuzzed corpus: {args.patterns} patterns x {len(data)} data sets x {args.rows:,} rows, seed {args.seed}: "
          f"{total} inputs, budget hit by {hits}")
    for hit, (per_thousand, name, clause) in sorted(worst.items()):
        label = "hit the limit" if hit else "within the limit"
        print(f"worst {label}: {per_thousand:.2f} CPU-s per 1,000 rows ({name} data): {clause}")


if __name__ == "__main__":
    main()
