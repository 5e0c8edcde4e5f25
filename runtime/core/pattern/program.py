"""Matcher instructions, :class:`Program`, and the compiler from flattened IR (Trino's rewriter).

The instruction set is Trino's: ``MatchLabel`` consumes one row if the row satisfies the label's
DEFINE condition; ``Split`` forks a thread (``first`` is the preferred branch); ``Jump``; ``Save``
records the current input index (exclusion boundaries, in start/end pairs); ``MatchStart`` /
``MatchEnd`` are the ``^`` / ``$`` anchors; ``Done`` reports a match.

Compilation writes placeholders for forward jumps and patches them once the target is known.
Greedy and reluctant quantifiers differ only in the order of a split's targets.  Bounded
quantifiers are unrolled; ``x{n,}`` is ``n`` copies with a loop back over the last copy.
PERMUTE becomes the alternation of all orders, in lexicographic order of the argument positions.

>>> from timeweave.core.pattern.parser import parse_pattern
>>> print(compile_pattern(parse_pattern("A B*? C")).dump())
0: label 0 (A)
1: split 4, 2
2: label 1 (B)
3: split 4, 2
4: label 2 (C)
5: done
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

from timeweave.core.pattern import ir
from timeweave.core.pattern.passes import flatten


@dataclass(frozen=True, slots=True)
class MatchLabel:
    label: int

    def __str__(self) -> str:
        return f"label {self.label}"


@dataclass(frozen=True, slots=True)
class Split:
    first: int
    second: int

    def __str__(self) -> str:
        return f"split {self.first}, {self.second}"


@dataclass(frozen=True, slots=True)
class Jump:
    target: int

    def __str__(self) -> str:
        return f"jump {self.target}"


@dataclass(frozen=True, slots=True)
class Save:
    def __str__(self) -> str:
        return "save"


@dataclass(frozen=True, slots=True)
class MatchStart:
    def __str__(self) -> str:
        return "match start"


@dataclass(frozen=True, slots=True)
class MatchEnd:
    def __str__(self) -> str:
        return "match end"


@dataclass(frozen=True, slots=True)
class Done:
    def __str__(self) -> str:
        return "done"


Instruction = MatchLabel | Split | Jump | Save | MatchStart | MatchEnd | Done


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled pattern: instructions plus the label names (label ``i`` is ``label_names[i]``)."""

    instructions: tuple[Instruction, ...]
    label_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.instructions)

    def at(self, pointer: int) -> Instruction:
        return self.instructions[pointer]

    @property
    def has_end_anchor(self) -> bool:
        return any(isinstance(i, MatchEnd) for i in self.instructions)

    @property
    def save_count(self) -> int:
        return sum(isinstance(i, Save) for i in self.instructions)

    def dump(self) -> str:
        """One ``index: instruction`` line per instruction; labels are annotated with their names."""
        lines = []
        for index, instruction in enumerate(self.instructions):
            text = str(instruction)
            if isinstance(instruction, MatchLabel):
                text += f" ({self.label_names[instruction.label]})"
            lines.append(f"{index}: {text}")
        return "\n".join(lines)

    def reachable_labels(self) -> list[frozenset[int]]:
        """For every instruction, the labels some path from it to ``done`` may still match.

        A backward fixpoint over label bitmasks: most edges point forward, so one pass per level of
        loop nesting suffices (linear in practice, where a search from every instruction would be
        quadratic in the program size).
        """
        instructions = self.instructions
        masks = [0] * len(instructions)
        changed = True
        while changed:
            changed = False
            for pointer in range(len(instructions) - 1, -1, -1):
                instruction = instructions[pointer]
                if isinstance(instruction, MatchLabel):
                    mask = (1 << instruction.label) | masks[pointer + 1]
                elif isinstance(instruction, Split):
                    mask = masks[instruction.first] | masks[instruction.second]
                elif isinstance(instruction, Jump):
                    mask = masks[instruction.target]
                elif isinstance(instruction, Done):
                    mask = 0
                else:
                    mask = masks[pointer + 1]
                if mask != masks[pointer]:
                    masks[pointer] = mask
                    changed = True
        sets: dict[int, frozenset[int]] = {}
        return [sets.setdefault(m, frozenset(i for i in range(m.bit_length()) if m >> i & 1)) for m in masks]


class _Compiler(ir.Visitor[None]):
    def __init__(self, label_index: dict[str, int]) -> None:
        self.label_index = label_index
        self.code: list[Instruction | None] = []

    def emit(self, instruction: Instruction | None) -> int:
        self.code.append(instruction)
        return len(self.code) - 1

    def visit_label(self, node: ir.Label) -> None:
        self.emit(MatchLabel(self.label_index[node.name]))

    def visit_empty(self, node: ir.Empty) -> None:
        return None

    def visit_anchor(self, node: ir.Anchor) -> None:
        self.emit(MatchStart() if node.kind == "^" else MatchEnd())

    def visit_exclusion(self, node: ir.Exclusion) -> None:
        self.emit(Save())
        self.visit(node.pattern)
        self.emit(Save())

    def visit_concatenation(self, node: ir.Concatenation) -> None:
        for part in node.patterns:
            self.visit(part)

    def visit_alternation(self, node: ir.Alternation) -> None:
        self.alternatives([(p,) for p in node.patterns])

    def visit_permutation(self, node: ir.Permutation) -> None:
        if len(node.patterns) < 2:
            raise ValueError("permutation with a single element: run passes.flatten first")
        self.alternatives(list(permutations(node.patterns)))

    def alternatives(self, parts: list[tuple[ir.Node, ...]]) -> None:
        jumps: list[int] = []
        for part in parts[:-1]:
            split = self.emit(None)
            for node in part:
                self.visit(node)
            jumps.append(self.emit(None))
            self.code[split] = Split(split + 1, len(self.code))
        for node in parts[-1]:
            self.visit(node)
        for jump in jumps:
            self.code[jump] = Jump(len(self.code))

    def visit_quantified(self, node: ir.Quantified) -> None:
        if node.max is None:
            self.looping(node.pattern, node.greedy, node.min)
        else:
            self.ranged(node.pattern, node.greedy, node.min, node.max)

    def looping(self, pattern: ir.Node, greedy: bool, minimum: int) -> None:
        if minimum == 0:
            split = self.emit(None)
            body = len(self.code)
            self.visit(pattern)
            self.loop(body, greedy)
            exit_ = len(self.code)
            self.code[split] = Split(body, exit_) if greedy else Split(exit_, body)
            return
        body = len(self.code)
        for _ in range(minimum):
            body = len(self.code)
            self.visit(pattern)
        self.loop(body, greedy)

    def loop(self, body: int, greedy: bool) -> None:
        after = len(self.code) + 1
        self.emit(Split(body, after) if greedy else Split(after, body))

    def ranged(self, pattern: ir.Node, greedy: bool, minimum: int, maximum: int) -> None:
        for _ in range(minimum):
            self.visit(pattern)
        splits: list[tuple[int, int]] = []
        for _ in range(minimum, maximum):
            split = self.emit(None)
            splits.append((split, len(self.code)))
            self.visit(pattern)
        end = len(self.code)
        for split, target in splits:
            self.code[split] = Split(target, end) if greedy else Split(end, target)


def compile_pattern(pattern: ir.Node, label_names: list[str] | None = None) -> Program:
    """Flatten ``pattern`` and compile it; labels are numbered in ``label_names`` order.

    ``label_names`` defaults to the pattern's variables in order of first appearance.

    >>> from timeweave.core.pattern.parser import parse_pattern
    >>> print(compile_pattern(parse_pattern("A | B"), ["B", "A"]).dump())
    0: split 1, 3
    1: label 1 (A)
    2: jump 4
    3: label 0 (B)
    4: done
    """
    flat = flatten(pattern)
    names = list(label_names) if label_names is not None else pattern.labels()
    index = {name: i for i, name in enumerate(names)}
    missing = [n for n in flat.labels() if n not in index]
    if missing:
        raise ValueError(f"label_names lacks {missing}")
    compiler = _Compiler(index)
    compiler.visit(flat)
    compiler.emit(Done())
    assert all(i is not None for i in compiler.code), "unpatched placeholder"
    return Program(tuple(compiler.code), tuple(names))  # type: ignore[arg-type]
