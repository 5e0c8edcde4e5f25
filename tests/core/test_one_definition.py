"""A rule or a piece of machinery is defined in one module; the others import it (read with ``ast``: no JVM).

Each check names what is defined twice and where, e.g.::

    REJECT_ROW is assigned in runtime/spark/match_recognize.py:87 and runtime/spark/host/backfill.py:58
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPARK = REPO / "runtime" / "spark"


def assigned(path: Path) -> dict[str, int]:
    """The module-level names ``path`` assigns (``A = ...``, ``A, B = ...``, ``A: T = ...``), with their lines."""
    names: dict[str, int] = {}
    for node in ast.parse(path.read_text(), str(path)).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    names[name.id] = node.lineno
    return names


def classes_with_getattr(path: Path) -> list[str]:
    """The classes of ``path`` defining ``__getattr__`` (a namespace that resolves names)."""
    return [node.name for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.ClassDef)
            and any(isinstance(f, ast.FunctionDef) and f.name == "__getattr__" for f in node.body)]


def test_the_rejected_row_columns_are_defined_once() -> None:
    """The MATCH_RECOGNIZE door's rejects and the backfill driver name the rejected row and its reason alike:
    the driver defines the names, the door imports them."""
    driver, door = SPARK / "host" / "backfill.py", SPARK / "match_recognize.py"
    for name in ("REJECT_ROW", "REJECT_REASON"):
        assert name in assigned(driver), name
        assert name not in assigned(door), (f"{name} is assigned in {door.relative_to(REPO)}:{assigned(door)[name]} "
                                            f"and {driver.relative_to(REPO)}:{assigned(driver)[name]}")


def test_one_macro_namespace_for_both_plans() -> None:
    """``timeweave.<macro>`` is resolved by one class (render.MacroNamespace) for every plan file's renderer."""
    renderers = sorted(SPARK.glob("*render*.py"))
    assert {p.name for p in renderers} >= {"render.py", "window_render.py", "window_ops_render.py"}
    found = {str(p.relative_to(REPO)): classes_with_getattr(p) for p in renderers}
    assert found == {key: (["MacroNamespace"] if key.endswith("/render.py") else []) for key in found}, found


def test_the_checks_find_a_second_definition(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("A, B = 1, 2\nC: int = 3\nclass N:\n    def __getattr__(self, name): ...\n")
    assert assigned(path) == {"A": 1, "B": 1, "C": 2} and classes_with_getattr(path) == ["N"]
