"""The MATCH_RECOGNIZE core imports no engine."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_pattern_core_does_not_import_pyspark() -> None:
    code = ("import sys, timeweave.core.pattern, timeweave.core.pattern.operator, timeweave.core.pattern.schema; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pandas', 'py4j')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
