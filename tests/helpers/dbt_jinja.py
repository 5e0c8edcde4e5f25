"""dbt's Jinja macros rendered without dbt: the package's ``timeweave.<macro>`` namespace over chosen macro files,
with stand-ins for dbt's ``return`` and ``exceptions.raise_compiler_error`` (tests of the macros that restate a
core rule in Jinja, because dbt cannot import timeweave.core)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

MACROS = Path(__file__).resolve().parents[2] / "dbt_macros" / "macros"


class CompilerError(Exception):
    """What ``exceptions.raise_compiler_error(message)`` raises here."""


class _Return(Exception):
    def __init__(self, value):
        self.value = value


def _raise_return(value):
    raise _Return(value)


class _Exceptions:
    @staticmethod
    def raise_compiler_error(message):
        raise CompilerError(message)


def dbt_macros(*file_names: str) -> Any:
    """The ``timeweave`` namespace over the macro files ``file_names`` (first wins), as dbt resolves it; a
    macro called through it returns its ``return(x)`` value, or its rendered text."""
    env = jinja2.Environment(undefined=jinja2.Undefined, extensions=["jinja2.ext.do"])
    env.globals.update({"return": _raise_return, "exceptions": _Exceptions()})
    modules: list = []

    class Namespace:
        def __getattr__(self, name):
            name = "tw_private_" + name[1:] if name.startswith("_") else name
            macro = next(getattr(m, name) for m in modules if hasattr(m, name))

            def call(*args, **kwargs):  # dbt's macro boundary: `return(x)` is the call's value
                try:
                    return str(macro(*args, **kwargs))
                except _Return as returned:
                    return returned.value
            return call

    namespace = env.globals["timeweave"] = Namespace()
    # jinja2 keeps macros named _x out of a template's module: rename them (dbt exports them as they are)
    modules += [env.from_string((MACROS / name).read_text().replace("macro _", "macro tw_private_")).module
                for name in file_names]
    return namespace
