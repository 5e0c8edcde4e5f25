"""The wheel: `import timeweave` is the public name, mapped onto the design's folders (setup.py).

Builds the wheel from this checkout (with pyproject.toml's build requirements, as pip installs it) and checks what a user
gets: every module of runtime/, airflow_plugin/ and the dbt package under ``timeweave``, the type marker, the
dbt package's macros, the entry points naming modules that exist, and no generic top-level names (``runtime``,
``airflow_plugin``, ``dbt_macros``) that would collide in a shared site-packages.
"""

from __future__ import annotations

import configparser
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # a copy-free build: setuptools writes build/ and *.egg-info under the checkout unless told otherwise
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        check=True, cwd=build, capture_output=True,
    )
    (path,) = out.glob("timeweave-*.whl")
    return zipfile.ZipFile(path)


def _expected_modules() -> set[str]:
    expected = set()
    for prefix, folder in (("timeweave", "runtime"), ("timeweave/airflow", "airflow_plugin"),
                           ("timeweave/dbt_package", "dbt_macros"), ("dbt_timeweave", "dbt_timeweave")):
        for file in (REPO / folder).rglob("*.py"):
            relative = file.relative_to(REPO / folder)
            if "integration_tests" in relative.parts or "__pycache__" in relative.parts:
                continue
            expected.add(f"{prefix}/{relative.as_posix()}")
    return expected


def test_every_module_ships_under_the_timeweave_name(wheel):
    names = set(wheel.namelist())
    missing = _expected_modules() - names
    assert not missing, f"modules missing from the wheel: {sorted(missing)[:10]}"
    assert "timeweave/py.typed" in names
    assert "timeweave/dbt_package/macros/timeweave_sql.sql" in names
    assert "timeweave/dbt_package/macros/_timeweave_core.sql" in names
    assert "timeweave/spark/timeweave_sql.sql" in names  # the plan's source, which the Python doors render
    assert "timeweave/dbt_package/dbt_project.yml" in names
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert top_level == {"timeweave", "dbt_timeweave"}, f"unexpected top-level names: {sorted(top_level)}"


def test_entry_points_name_shipped_modules(wheel):
    names = set(wheel.namelist())
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    parser = configparser.ConfigParser()
    parser.read_string(wheel.read(entry_points).decode())
    targets = [value for section in parser.sections() for value in parser[section].values()]
    assert any("timeweave.jobs.cli" in t for t in targets)
    for target in targets:
        module = target.split(":")[0].strip()
        path = module.replace(".", "/")
        assert f"{path}.py" in names or f"{path}/__init__.py" in names, f"entry point {target} names no shipped module"


# spelled in pieces so that a mechanical rename of imports cannot rewrite the test itself
OLD_IMPORTS = tuple(f"{verb} {name}" for verb in ("import", "from") for name in ("run" "time", "airflow" "_plugin"))


def test_the_old_import_name_is_gone():
    """`runtime` was a generic top-level name (README, Upgrading): nothing in the product imports it any more."""
    offenders = []
    for folder in ("runtime", "airflow_plugin", "dbt_timeweave", "dags"):
        for file in (REPO / folder).rglob("*.py"):
            for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
                stripped = line.strip()
                if stripped.startswith(OLD_IMPORTS):
                    offenders.append(f"{file.relative_to(REPO)}:{number}")
    assert not offenders, offenders
