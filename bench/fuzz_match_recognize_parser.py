"""Mutation fuzzing of the MATCH_RECOGNIZE clause parser: how many inputs parse, fail positioned, or escape.

    python bench/fuzz_match_recognize_parser.py [--inputs 10000] [--seed 1] [--show 5]

Inputs are the peer suites' clauses (tests/helpers/mr_suites/) put through random mutations
(tests/helpers/mr_parser_fuzz.py: token insertions, deletions, swaps, duplications, huge numbers, deep
nesting, unicode, unbalanced quotes and parentheses, truncation).  Each is parsed once with
``timeweave.core.pattern.parse_clause``; prints the table: inputs, accepted, rejected (a positioned
QuerySyntaxError), internal errors (any other exception), unpositioned errors, and the CPU seconds of
the slowest input (thread CPU time: the machine may be shared, wall time would measure neighbours).
Exits 1 when any internal or unpositioned error, or any input over 1 CPU-second, was found.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers.mr_parser_fuzz import check, inputs, seeds

LIMIT_CPU_SECONDS = 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=5, help="examples printed per finding")
    args = parser.parse_args()
    started = time.perf_counter()
    kinds: Counter[str] = Counter()
    findings: dict[str, list[str]] = {}
    slowest = (0.0, "")
    for text in inputs(args.seed, args.inputs):
        outcome = check(text)
        kinds[outcome.kind] += 1
        if outcome.cpu_seconds > slowest[0]:
            slowest = (outcome.cpu_seconds, text)
        if outcome.kind in ("internal", "unpositioned"):
            findings.setdefault(f"{outcome.kind}: {outcome.detail}", []).append(text)
    over = slowest[0] >= LIMIT_CPU_SECONDS
    print(f"seed clauses {len(seeds())}, fuzzer seed {args.seed}, wall {time.perf_counter() - started:.0f} s")
    print("| inputs | accepted | rejected | internal errors | unpositioned | max CPU-s per input |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.inputs} | {kinds['accepted']} | {kinds['rejected']} | {kinds['internal']} | "
          f"{kinds['unpositioned']} | {slowest[0]:.3f} |")
    for finding, texts in sorted(findings.items(), key=lambda item: -len(item[1])):
        print(f"\n{len(texts)} x {finding}")
        for text in texts[: args.show]:
            print("   ", repr(text[:300]))
    print(f"\nslowest input ({slowest[0]:.3f} CPU-s, {len(slowest[1])} chars): {slowest[1][:200]!r}")
    return 1 if findings or over else 0


if __name__ == "__main__":
    raise SystemExit(main())
