"""No two test modules outside a package share a file name.

``tests/core`` and ``tests/spark`` have no ``__init__.py`` (rootdir-relative imports), so pytest imports their
modules by basename: a second ``test_x.py`` in another such folder fails collection with "import file
mismatch" and its tests silently do not run in that process.  This test names the clash before CI does.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_module_basenames_outside_packages_are_unique() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if not (path.parent / "__init__.py").exists():
            by_name[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: sorted(paths) for name, paths in by_name.items() if len(paths) > 1}
    assert not clashes, f"test modules sharing a name (rename one): {clashes}"
