"""CPU of one key's state cell, written and read back: the state codec against the pickle earlier releases used.

    .venv/bin/python bench/bench_state_codec.py [--rows 250 2500] [--repeat 9]

Cells as the streaming processors hold them: a temporal-join key (``LeftBuffer`` of ``--rows`` left rows with
~100-byte JSON payloads, a three-version history, a timer) and a MATCH_RECOGNIZE key (``--rows`` buffered
``(time, seq, (time, text))`` rows and a matcher mid-attempt).  "pickle" is the earlier releases' encoding
(pickle with reducers for the core's dataclasses), for comparison only: this script pickles, product code
never loads a pickle.  Prints one JSON line per cell: bytes and µs per encode / decode (best of ``--repeat``).
"""

from __future__ import annotations

import argparse
import copyreg
import io
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timeweave.core.pattern import PartitionMatcher, parse_clause
from timeweave.core.pattern.operator import HeldMatcher
from timeweave.core.state_codec import decode_cell, encode_cell
from timeweave.core.temporal_join import LeftBuffer, LeftRow
from timeweave.core.versioned import VersionEvent, VersionHistory

T0 = 1_700_000_000_000_000
_REDUCERS = copyreg.dispatch_table.copy()
_REDUCERS[LeftRow] = lambda r: (LeftRow, (r.time, r.seq, r.payload))
_REDUCERS[VersionEvent] = lambda e: (VersionEvent, (e.time, e.seq, e.deleted, e.payload))
_REDUCERS[VersionHistory] = lambda h: (VersionHistory, (h.events, h._times))


def _pickle(value: Any) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _REDUCERS
    pickler.dump(value)
    return buffer.getvalue()


def _payload(i: int) -> str:
    return json.dumps({"id": i, "user": f"u{i % 97}", "amount": round(i * 0.37 % 100, 2), "ts": T0 + i * 10_000,
                       "note": "x" * 20})


def temporal_join_cell(n: int) -> dict[str, Any]:
    buffer = LeftBuffer()
    buffer.add([T0 + i * 10_000 for i in range(n)], list(range(n)), [_payload(i) for i in range(n)])
    history = VersionHistory.of([VersionEvent(T0 + i * 1_000_000, i, False, _payload(i)) for i in range(3)])
    return {"left": buffer, "right": history, "next-timer": T0}


def match_recognize_cell(n: int) -> dict[str, Any]:
    spec = parse_clause("ORDER BY t MEASURES COUNT(*) AS c PATTERN (A B+ C) DEFINE B AS B.v > PREV(B.v), C AS C.v < 0")
    matcher = PartitionMatcher(spec)
    matcher.push_many([{"t": i, "v": i} for i in range(5)])
    rows = [(T0 + i * 10_000, i, (T0 + i * 10_000, _payload(i))) for i in range(n)]
    return {"mr-buffer": rows, "mr-matcher": HeldMatcher(matcher), "mr-seq": n, "mr-timer": T0}


def best(fn: Any, reps: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(reps):
            fn()
        times.append((time.process_time() - start) / reps)
    return round(min(times) * 1e6, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[250, 2500])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    for name, make in (("temporal_join", temporal_join_cell), ("match_recognize", match_recognize_cell)):
        for n in args.rows:
            print(json.dumps({"cell": name, "rows": n, **measure(make(n), n, args.repeat)}))


def measure(values: dict[str, Any], n: int, repeat: int) -> dict[str, Any]:
    old = _pickle({"values": values, "timers": {T0}, "seq": n})
    new = encode_cell(values, {T0}, n)
    assert decode_cell(new)[0].keys() == values.keys()
    reps = max(1, 50_000 // n)
    return {
        "bytes_pickle": len(old), "bytes_codec": len(new),
        "pickle_dump_us": best(lambda: _pickle({"values": values, "timers": {T0}, "seq": n}), reps, repeat),
        "pickle_load_us": best(lambda: pickle.loads(old), reps, repeat),
        "codec_encode_us": best(lambda: encode_cell(values, {T0}, n), reps, repeat),
        "codec_decode_us": best(lambda: decode_cell(new), reps, repeat),
    }

if __name__ == "__main__":
    main()
