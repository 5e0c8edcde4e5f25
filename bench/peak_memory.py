"""Peak resident memory of a command's JVM and of its largest Python worker (Spark benches).

    .venv/bin/python bench/peak_memory.py -- .venv/bin/python bench/bench_match_recognize_streaming.py --symbols 1

Runs the command, samples every 0.2 s the resident memory of every process under it (the JVM: a
``java`` command line; anything else but the command itself: a Python worker), and prints one JSON line
after the command's own output: its exit code, wall seconds and the peaks in MB (the JVM's also as the
kernel's ``VmHWM``, read just before it exits when the sampler sees it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_hot_key import _status, _tree


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(__doc__)
        return 2
    t0 = time.monotonic()
    child = subprocess.Popen(argv)
    peak = {"jvm": 0.0, "worker": 0.0, "jvm_hwm": 0.0}
    while child.poll() is None:
        for pid, kind in _tree(child.pid):
            if pid == child.pid:
                continue
            rss = _status(pid, "VmRSS")
            kind = "jvm" if kind == "jvm" else "worker"
            peak[kind] = max(peak[kind], rss)
            if kind == "jvm":
                peak["jvm_hwm"] = max(peak["jvm_hwm"], _status(pid, "VmHWM"))
        time.sleep(0.2)
    print(json.dumps({"command": argv[1:] if len(argv) > 1 else argv, "exit": child.returncode,
                      "seconds": round(time.monotonic() - t0, 1), "peak_mb": {k: round(v) for k, v in peak.items()}}),
          flush=True)
    return child.returncode


if __name__ == "__main__":
    raise SystemExit(main())
