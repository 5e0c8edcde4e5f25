"""Provider metadata: Airflow's ProvidersManager finds the timeweave connection type, hook and trigger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

from tests.airflow.conftest import REPO
from timeweave.airflow.get_provider_info import get_provider_info


def test_the_entry_point_is_declared_next_to_the_plugin():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    points = project["entry-points"]
    assert points["apache_airflow_provider"] == {"provider_info": "timeweave.airflow.get_provider_info:get_provider_info"}
    assert points["airflow.plugins"] == {"timeweave": "timeweave.airflow.plugin:TimeweavePlugin"}  # kept


def test_provider_info_is_valid_for_airflow():
    import importlib.resources

    import jsonschema

    schema = json.loads(importlib.resources.files("airflow").joinpath("provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    assert info["package-name"] == "timeweave"  # must equal the distribution's name


def test_providers_manager_registers_the_connection_type(tmp_path):
    """An installed timeweave (a dist-info with the pyproject's entry points), seen by a fresh Airflow process."""
    dist = tmp_path / "timeweave-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: timeweave\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text(
        "[apache_airflow_provider]\nprovider_info = timeweave.airflow.get_provider_info:get_provider_info\n")
    probe = (
        "import json; from airflow.providers_manager import ProvidersManager as P; p = P();"
        "hook = p.hooks['timeweave'];"
        "print(json.dumps({'provider': p.providers['timeweave'].data['name'], 'hook': hook.hook_class_name,"
        " 'name': hook.hook_name, 'conn_type': hook.connection_type,"
        " 'triggers': [t.trigger_class_name for t in p.trigger if t.package_name == 'timeweave']}))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300,
                          check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["provider"] == "Timeweave"
    assert (found["hook"], found["conn_type"], found["name"]) == (
        "timeweave.airflow.hooks.timeweave.TimeweaveHook", "timeweave", "Timeweave (Spark)")
    assert found["triggers"] == ["timeweave.airflow.triggers.timeweave"]
