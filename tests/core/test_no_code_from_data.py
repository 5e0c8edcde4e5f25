"""Product code never turns data into code: no pickle/marshal loads, no eval/exec, no shell strings.

State files, configs and checkpoints live on storage other people can write to (shared buckets); loading
them with pickle, or evaluating text, runs whatever they hold.  This lint walks the product code's syntax
trees (``runtime/``, ``airflow_plugin/``, ``dbt_timeweave/``, ``dags/``) and fails on:

* ``pickle``/``_pickle``/``cPickle``/``dill``/``cloudpickle`` ``load``/``loads``, any ``Unpickler``,
  ``marshal.load(s)``, ``shelve.open``, ``jsonpickle.decode`` (called, or imported by name);
* calls of the builtins ``eval``/``exec``;
* ``shell=True`` in any call, ``os.system``, ``os.popen``;
* ``yaml.load`` without a safe loader, ``yaml.unsafe_load``, ``yaml.full_load``.

(PySpark pickling our functions to ship them is PySpark's business: only loading is checked.)
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("runtime", "airflow_plugin", "dbt_timeweave", "dags")

_LOADERS = {
    "pickle": {"load", "loads", "Unpickler"},
    "_pickle": {"load", "loads", "Unpickler"},
    "cPickle": {"load", "loads", "Unpickler"},
    "dill": {"load", "loads", "Unpickler"},
    "cloudpickle": {"load", "loads", "Unpickler"},
    "marshal": {"load", "loads"},
    "shelve": {"open", "Shelf", "DbfilenameShelf"},
    "jsonpickle": {"decode", "Unpickler"},
    "os": {"system", "popen"},
    "yaml": {"unsafe_load", "full_load", "unsafe_load_all", "full_load_all"},
}
_SAFE_YAML_LOADERS = {"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"}

#: Reviewed exceptions: (file, enclosing function, finding) -> why it is not code from data.
ALLOWED = {
    ("runtime/core/pattern/fast.py", "dict_rows", "exec"):
        "compiles a dict-display comprehension generated from a column *count*; the column names are bound "
        "as values in its namespace, never spliced into the source",
}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    function: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} (in {self.function}): {self.what}"


class _Checker(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.aliases: dict[str, str] = {}  # local name -> module (import pickle as p)
        self.functions: list[str] = ["<module>"]
        self.findings: list[Finding] = []

    def _add(self, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(self.path, getattr(node, "lineno", 0), self.functions[-1], what))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = (node.module or "").split(".")[0]
        for alias in node.names:
            if alias.name in _LOADERS.get(module, ()) or (module == "yaml" and alias.name == "load"):
                self._add(node, f"from {node.module} import {alias.name}")

    def _module_attribute(self, node: ast.AST) -> tuple[str, str] | None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.aliases:
            return self.aliases[node.value.id].split(".")[0], node.attr
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        found = self._module_attribute(node)
        if found is not None and found[1] in _LOADERS.get(found[0], ()):
            self._add(node, f"{found[0]}.{found[1]}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("eval", "exec"):
            self._add(node, node.func.id)
        found = self._module_attribute(node.func)
        if found == ("builtins", "eval") or found == ("builtins", "exec"):
            self._add(node, found[1])
        if found == ("yaml", "load") or found == ("yaml", "load_all"):
            loader = next((k.value for k in node.keywords if k.arg == "Loader"), None)
            if loader is None and len(node.args) > 1:
                loader = node.args[1]
            name = loader.attr if isinstance(loader, ast.Attribute) else getattr(loader, "id", None)
            if name not in _SAFE_YAML_LOADERS:
                self._add(node, "yaml.load without a safe loader")
        for keyword in node.keywords:
            if keyword.arg == "shell" and not (isinstance(keyword.value, ast.Constant) and keyword.value.value is False):
                self._add(node, "shell=True")
        self.generic_visit(node)


def findings_in(source: str, path: str = "<test>") -> list[Finding]:
    checker = _Checker(path)
    checker.visit(ast.parse(source, path))
    return checker.findings


def _product_files() -> list[Path]:
    return sorted(p for top in PRODUCT if (ROOT / top).exists() for p in (ROOT / top).rglob("*.py"))


def test_product_code_never_turns_data_into_code() -> None:
    files = _product_files()
    assert len(files) > 30  # the walk found the product code
    found = [f for path in files for f in findings_in(path.read_text(), str(path.relative_to(ROOT)))]
    unexplained = [str(f) for f in found if (f.path, f.function, f.what) not in ALLOWED]
    assert unexplained == []


def test_every_allowed_exception_still_exists() -> None:
    """An allowance whose code is gone must go too (it would silently cover a new finding)."""
    found = {(f.path, f.function, f.what) for path in _product_files()
             for f in findings_in(path.read_text(), str(path.relative_to(ROOT)))}
    assert set(ALLOWED) <= found


@pytest.mark.parametrize(("source", "what"), [
    ("import pickle\npickle.loads(b'')", "pickle.loads"),
    ("import pickle as p\ndef f(fh):\n    return p.load(fh)", "pickle.load"),
    ("import pickle\nclass U(pickle.Unpickler): pass", "pickle.Unpickler"),
    ("from pickle import loads", "from pickle import loads"),
    ("import _pickle\n_pickle.loads(b'')", "_pickle.loads"),
    ("import marshal\nmarshal.loads(b'')", "marshal.loads"),
    ("import shelve\nshelve.open('x')", "shelve.open"),
    ("import dill\ndill.loads(b'')", "dill.loads"),
    ("import cloudpickle\ncloudpickle.loads(b'')", "cloudpickle.loads"),
    ("import jsonpickle\njsonpickle.decode('')", "jsonpickle.decode"),
    ("eval('1')", "eval"),
    ("exec('x = 1')", "exec"),
    ("import builtins\nbuiltins.eval('1')", "eval"),
    ("import subprocess\nsubprocess.run('ls', shell=True)", "shell=True"),
    ("import subprocess\nflag = True\nsubprocess.run('ls', shell=flag)", "shell=True"),
    ("import os\nos.system('ls')", "os.system"),
    ("import os\nos.popen('ls')", "os.popen"),
    ("import yaml\nyaml.load(text)", "yaml.load without a safe loader"),
    ("import yaml\nyaml.load(text, Loader=yaml.Loader)", "yaml.load without a safe loader"),
    ("import yaml\nyaml.unsafe_load(text)", "yaml.unsafe_load"),
])
def test_the_lint_finds_each_forbidden_construct(source: str, what: str) -> None:
    assert what in [f.what for f in findings_in(source)]


@pytest.mark.parametrize("source", [
    "import pickle\npickle.dumps(1)",  # writing is not loading
    "import yaml\nyaml.load(text, Loader=yaml.SafeLoader)",
    "import yaml\nyaml.safe_load(text)",
    "import subprocess\nsubprocess.run(['ls', '-l'], shell=False)",
    "import json\njson.loads('{}')",
    "class Udtf:\n    def eval(self, row):\n        return row\nUdtf().eval(1)",  # a method named eval
])
def test_the_lint_lets_data_stay_data(source: str) -> None:
    assert findings_in(source) == []
