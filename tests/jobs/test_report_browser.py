"""The run report opened in headless Chromium: it shows the run's counts, reasons and samples, and its plots
render (issue 18: "the HTML report screenshot-tested in headless Chromium").

No Spark: the run directory is recorded with :class:`~timeweave.jobs.run_dir.RunRecorder` and its outputs
written with pyarrow, as the jobs write them.  Chromium is required (``.ci/run`` installs it); set
``TIMEWEAVE_NO_BROWSER=1`` to skip where no browser can be installed.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from datetime import datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from timeweave.jobs.cli import main
from timeweave.jobs.run_dir import RunRecorder

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("TIMEWEAVE_NO_BROWSER")), reason="TIMEWEAVE_NO_BROWSER is set: the browser check is skipped")

T0 = datetime(2020, 1, 1, 10)
HOSTILE = '<script>alert("x")</script>'


def _browser() -> str:
    if BROWSER is None:  # not a skip: CI installs chromium, a missing one must show
        pytest.fail("no chromium on PATH: install it (apt-get install -y chromium) or set TIMEWEAVE_NO_BROWSER=1")
    return BROWSER


def _recorded_join(tmp_path: Path) -> Path:
    """A two-run streaming temporal join (a restart appends) with late rows and dead letters."""
    out, late, dead = tmp_path / "out", tmp_path / "out_late", tmp_path / "out_dead_letter"
    for path in (out, late, dead, tmp_path / "rates"):
        path.mkdir()
    pq.write_table(pa.table({
        "currency": ["EUR", "USD", "GBP"] * 2,
        "rate": [1.1, 1.0, 1.3, 1.2, 0.9, None],
        "update_time": [T0 - timedelta(hours=1)] * 3 + [T0 + timedelta(hours=2)] * 3,
    }), tmp_path / "rates" / "part-0.parquet")
    orders = [(f"o{i}", ["EUR", "USD", "GBP"][i % 3], T0 + timedelta(minutes=20 * i)) for i in range(12)]
    pq.write_table(pa.table({
        "id": [o[0] for o in orders], "currency": [o[1] for o in orders], "order_time": [o[2] for o in orders],
        "rate": [None if i == 5 else 1.0 + i / 10 for i in range(12)],
    }), out / "part-b000000000001-0.parquet")
    pq.write_table(pa.table({
        "id": ["l1", "l2", "l3"], "currency": ["EUR", "EUR", HOSTILE], "order_time": [T0 - timedelta(hours=3)] * 3,
        "reason": ["late: before the watermark"] * 3, "watermark": [T0] * 3,
    }), late / "part-b000000000002-0.parquet")
    pq.write_table(pa.table({
        "side": ["left", "right"], "reason": ["NULL key", "NULL time"], "row": ['{"id": "d1"}', '{"currency": "EUR"}'],
    }), dead / "part-b000000000000-0.parquet")
    config = {
        "left": {"path": str(tmp_path / "orders"), "format": "parquet", "schema": "id STRING, currency STRING, "
                 "order_time TIMESTAMP"},
        "right": {"path": str(tmp_path / "rates"), "format": "parquet",
                  "schema": "currency STRING, rate DOUBLE, update_time TIMESTAMP"},
        "versioned": {"key": "currency", "time": "update_time"},
        "join": {"left_time": "order_time", "how": "left"},
        "output": {"path": str(out)},
    }
    outputs = {"main": str(out), "late": str(late), "dead_letter": str(dead)}
    run_dir = tmp_path / "run"
    batches = [(0, 6, 5, 0, 2, None), (1, 4, 4, 0, 0, T0), (2, 5, 3, 3, 0, T0 + timedelta(hours=1))]
    for first, last in ((0, 2), (2, 3)):  # two runs: the second appends
        recorder = RunRecorder(run_dir, "streaming", "temporal_join", config, outputs, {"flush": True})
        for batch_id, rows_in, rows_out, n_late, n_dead, mark in batches[first:last]:
            at = T0 + timedelta(days=1, minutes=batch_id)
            recorder.batch({
                "batch_id": batch_id, "run_id": recorder.run, "at": at.isoformat() + "Z", "rows_in": rows_in,
                "rows_out": rows_out, "late": n_late, "dead_letter": n_dead,
                "watermark": None if mark is None else mark.isoformat() + ".000Z",
                "lag_ms": None if mark is None else int((at - mark).total_seconds() * 1000),
                "state_rows": 3 + batch_id, "duration_ms": 100 + batch_id,
            })
        recorder.finished({"rows_in_left": sum(b[1] for b in batches[first:last]), "rows_in_right": 0,
                           "rows_out": sum(b[2] for b in batches[first:last]),
                           "late": sum(b[3] for b in batches[first:last]),
                           "dead_letter": sum(b[4] for b in batches[first:last]), "seconds": 1.5})
    return run_dir


def _recorded_match_backfill(tmp_path: Path) -> Path:
    out, dead = tmp_path / "mr", tmp_path / "mr_dead_letter"
    for i in range(3):
        (out / f"slice=2024010{i + 1}T00").mkdir(parents=True)
        pq.write_table(pa.table({
            "symbol": ["A", "B", "A"], "start_at": [datetime(2024, 1, 1 + i, h) for h in (1, 5, 9)],
            "top": [12.0, 13.0, 14.0],
        }), out / f"slice=2024010{i + 1}T00" / "part-0.parquet")
    (dead / "slice=none").mkdir(parents=True)
    pq.write_table(pa.table({"reason": ["NULL event time"], "row": ['{"symbol": "A"}']}),
                   dead / "slice=none" / "part-0.parquet")
    config = {
        "match_recognize": {"clause": "PARTITION BY symbol ORDER BY rowtime MEASURES FIRST(U.rowtime) AS start_at, "
                                      "LAST(U.price) AS top ONE ROW PER MATCH PATTERN (U) DEFINE U AS U.price > 11"},
        "input": {"path": str(tmp_path / "ticks"), "format": "csv", "schema": "symbol STRING, rowtime TIMESTAMP, "
                  "price DOUBLE"},
        "output": {"path": str(out)},
    }
    run_dir = tmp_path / "mr_run"
    recorder = RunRecorder(run_dir, "backfill", "match_recognize", config,
                           {"main": str(out), "late": str(tmp_path / "mr_late"), "dead_letter": str(dead)},
                           {"start": "2024-01-01T00:00:00", "end": "2024-01-04T00:00:00", "slices": 3})
    for i in range(3):
        recorder.event("slice", slice=i, label=f"2024010{i + 1}T00", start=f"2024-01-0{i + 1}T00:00:00",
                       end=f"2024-01-0{i + 2}T00:00:00", rows_in=10, rows_out=3, state_keys_out=2, seconds=0.5 + i)
    recorder.finished({"rows_in": 30, "rows_out": 9, "dead_letter": 1, "slices": 3, "seconds": 4.5})
    return run_dir


class _Page(HTMLParser):
    """The text by element id, the images' sources and the table cells of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, str] = {}
        self.images: list[str] = []
        self.scripts = 0
        self.cells: list[str] = []
        self._open: list[str | None] = []
        self._cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "img":
            self.images.append(a.get("src") or "")
            return
        if tag == "script":
            self.scripts += 1
        self._open.append(a.get("id"))
        if a.get("id"):
            self.ids[a["id"]] = ""
        self._cell = tag == "td"
        if self._cell:
            self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag != "img" and self._open:
            self._open.pop()
        self._cell = False

    def handle_data(self, data: str) -> None:
        for name in self._open:
            if name:
                self.ids[name] += data
        if self._cell:
            self.cells[-1] += data


def _open_in_browser(page: Path, tmp_path: Path) -> tuple[_Page, Path]:
    browser = _browser()
    profile = tmp_path / "profile"
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
              f"--user-data-dir={profile}"]
    dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    shot = tmp_path / "shot.png"
    subprocess.run([*common, f"--screenshot={shot}", "--window-size=1300,2400", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    parsed = _Page()
    parsed.feed(dom)
    return parsed, shot


def _screenshot_shows_plots(shot: Path) -> None:
    """The screenshot is not blank: many distinct colours, and the plots' colours are painted."""
    from matplotlib.image import imread

    pixels = imread(shot)[..., :3]
    assert pixels.shape[0] >= 2000 and pixels.shape[1] >= 1200
    assert float(pixels.std()) > 0.05  # a blank (white) page has ~0 variance
    rgb = (pixels * 255).round().astype(int).reshape(-1, 3)
    colours = {tuple(c) for c in rgb[:: max(1, len(rgb) // 200_000)]}
    assert len(colours) > 50
    blue = ((abs(rgb[:, 0] - 0x44) < 12) & (abs(rgb[:, 1] - 0x77) < 12) & (abs(rgb[:, 2] - 0xAA) < 12)).sum()
    assert blue > 200  # the plots' blue series is on screen


def test_the_report_of_a_streaming_join_in_chromium(tmp_path: Path, capsys) -> None:
    run_dir = _recorded_join(tmp_path)
    assert main(["report", str(run_dir)]) == 0
    page = run_dir / "report.html"
    assert f"run report: {page}" in capsys.readouterr().out
    text = page.read_text()
    assert HOSTILE not in text and html.escape(HOSTILE) in text  # data is escaped, never markup
    assert "<script" not in text.lower() and "http://" not in text and "https://" not in text  # self-contained

    dom, shot = _open_in_browser(page, tmp_path)
    assert dom.scripts == 0
    assert dom.ids["total-rows_out"] == "12"  # 5 + 4 + 3 over the two runs
    assert dom.ids["total-late"] == "3" and dom.ids["total-dead_letter"] == "2"
    assert dom.ids["total-rows_in"] == "15 (15 left / 0 right)"
    assert dom.ids["late-count"] == "3" and dom.ids["dead-letter-count"] == "2"
    assert dom.ids["output-count"] == "12" and dom.ids["matched-count"] == "11"  # o5 has no rate
    assert {"NULL key", "NULL time", "late: before the watermark", HOSTILE} <= set(dom.cells)  # reasons and samples
    assert sum(1 for c in dom.cells if c == "streaming") == 2  # both runs listed
    # plots: rows per batch, watermark / lag / state, the per-key timeline; each a real PNG
    assert len(dom.images) == 3
    for src in dom.images:
        assert src.startswith("data:image/png;base64,") and len(src) > 5000
    _screenshot_shows_plots(shot)


def test_the_report_of_a_match_recognize_backfill_in_chromium(tmp_path: Path) -> None:
    run_dir = _recorded_match_backfill(tmp_path)
    assert main(["report", str(run_dir), "--output", str(tmp_path / "mr.html")]) == 0
    dom, shot = _open_in_browser(tmp_path / "mr.html", tmp_path)
    assert dom.ids["total-rows_out"] == "9" and dom.ids["total-dead_letter"] == "1"
    assert dom.ids["matches-count"] == "9"
    assert re.search(r"in 2 partition\(s\) \(by symbol\)", dom.ids["timeline"] + " ".join(dom.cells)) or \
        "2 partition(s)" in Path(tmp_path / "mr.html").read_text()
    assert {"A", "B"} <= set(dom.cells) and "NULL event time" in dom.cells
    assert len(dom.images) == 2  # per-slice timings, matches per partition
    assert all(len(src) > 5000 for src in dom.images)
    _screenshot_shows_plots(shot)


def test_report_of_a_directory_without_events_is_one_error_line(tmp_path: Path, capsys) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "events.jsonl" in err and "--run-dir" in err
