"""Generate the dbt package's copies of timeweave's single sources: ``python -m timeweave.dbt_package.generate``.

dbt loads a package's macros from its own folder (``packages: - local: .../dbt_macros`` or a git
``subdirectory``), and its Jinja cannot import Python, so four files of ``macros/`` are generated and
committed, never edited by hand:

* ``macros/timeweave_sql.sql``: the batch plan, copied from its source ``timeweave/spark/timeweave_sql.sql``
  (``runtime/spark/`` in the repository), which the Python doors render;
* ``macros/timeweave_windows_sql.sql``: the window-TVF plan, from ``timeweave/spark/timeweave_windows_sql.sql``;
* ``macros/timeweave_window_ops_sql.sql``: the window Top-N / deduplication / join plan, from
  ``timeweave/spark/timeweave_window_ops_sql.sql``;
* ``macros/_timeweave_core.sql``: the core's constants the plan and the public macros read, one macro
  each (``timeweave__upsert_ops()``, ``timeweave__delete_ops()``: :mod:`timeweave.core.changelog`;
  ``timeweave__reasons()``: the dead-letter reasons of :mod:`timeweave.core.bad_rows`), from
  :func:`timeweave.spark.render.core_macros`.

``--check`` writes nothing and exits 1 naming the stale files; ``tests/dbt/test_package.py`` fails while a
generated file differs from what this module generates.

>>> sorted(generated_files())
['macros/_timeweave_core.sql', 'macros/timeweave_sql.sql', 'macros/timeweave_window_ops_sql.sql', 'macros/timeweave_windows_sql.sql']
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from timeweave.spark.render import PLAN_FILE, core_macros
from timeweave.spark.window_ops_render import WINDOW_OPS_PLAN_FILE
from timeweave.spark.window_render import WINDOW_PLAN_FILE

#: The dbt package's folder (resolved: an editable install's link tree points back at the repository).
PACKAGE = Path(__file__).resolve().parent
COMMAND = "python -m timeweave.dbt_package.generate"


def _header(source: str) -> str:
    return (f"{{#- GENERATED from {source} by `{COMMAND}`: do not edit; edit the source and regenerate\n"
            "    (tests/dbt/test_package.py fails while this file differs from what the command writes). -#}\n")


def jinja_literal(value: Any) -> str:
    """``value`` (strings, lists and dicts of them) as a Jinja literal that evaluates to an equal value.

    >>> jinja_literal({"a": ["+I", 'x"y']})
    '{"a": ["+I", "x\\\\"y"]}'
    """
    if isinstance(value, str):
        return json.dumps(value)  # Jinja reads a double-quoted string with JSON's escapes (\\", \\\\, \\uXXXX)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(jinja_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{jinja_literal(k)}: {jinja_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no Jinja literal for a {type(value).__name__} ({value!r:.60})")


def core_file() -> str:
    """The text of ``macros/_timeweave_core.sql``: one macro per core constant, returning it."""
    parts = [_header("timeweave.spark.render.core_macros() (timeweave.core.changelog, timeweave.core.bad_rows)")]
    for name, value in core_macros().items():
        parts.append(f"\n{{% macro {name}() -%}}\n  {{{{ return({jinja_literal(value)}) }}}}\n{{%- endmacro %}}\n")
    return "".join(parts)


def generated_files() -> dict[str, str]:
    """Path (relative to the package) -> the text it must hold."""
    return {
        "macros/timeweave_sql.sql": _header("timeweave/spark/timeweave_sql.sql (runtime/spark/ in the repository)")
        + PLAN_FILE.read_text(),
        "macros/timeweave_windows_sql.sql": _header(
            "timeweave/spark/timeweave_windows_sql.sql (runtime/spark/ in the repository)") + WINDOW_PLAN_FILE.read_text(),
        "macros/timeweave_window_ops_sql.sql": _header(
            "timeweave/spark/timeweave_window_ops_sql.sql (runtime/spark/ in the repository)")
        + WINDOW_OPS_PLAN_FILE.read_text(),
        "macros/_timeweave_core.sql": core_file(),
    }


def stale_files(package: Path = PACKAGE) -> list[str]:
    """The generated files of ``package`` that are missing or differ from :func:`generated_files`."""
    return [name for name, text in generated_files().items()
            if not (package / name).exists() or (package / name).read_text() != text]


def main(argv: Sequence[str] | None = None) -> int:
    """Write the generated files (``--check``: only report the stale ones, exit 1 if any)."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a generated file is stale")
    args = parser.parse_args(argv)
    stale = stale_files()
    if args.check:
        for name in stale:
            print(f"stale: {PACKAGE / name} (run `{COMMAND}`)", file=sys.stderr)
        return 1 if stale else 0
    for name in stale:
        (PACKAGE / name).write_text(generated_files()[name])
        print(f"wrote {PACKAGE / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
