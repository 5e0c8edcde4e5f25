"""Maps the import names onto the repository's folders (pyproject.toml holds everything else).

The design keeps the folders ``runtime/`` (engine-free core, Spark doors, jobs), ``airflow_plugin/`` and
``dbt_macros/``; users import ``timeweave``, ``timeweave.airflow`` and ``timeweave.dbt_package``.  The
package list is computed so that a new sub-package ships without editing this file.
"""

from setuptools import find_packages, setup

FOLDERS = {"timeweave": "runtime", "timeweave.airflow": "airflow_plugin", "timeweave.dbt_package": "dbt_macros"}

packages = ["dbt_timeweave"]
for name, folder in FOLDERS.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(folder, exclude=["integration_tests*"])]

setup(package_dir=FOLDERS, packages=packages)
