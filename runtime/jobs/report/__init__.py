"""The run report: one self-contained HTML page from a run directory (``timeweave-job report RUN_DIR``).

It reads what a job run with ``--run-dir`` recorded (:mod:`timeweave.jobs.run_dir`: ``events.jsonl``,
``config.json``) and samples of the run's outputs (parquet, read with pyarrow: no Spark), and shows:

* each run (streaming runs, restarts, backfills) with its metrics, and the totals: rows in / out, late,
  dead letters;
* the late and dead-letter outputs: counts per reason and a sample of rows;
* streaming: rows per micro-batch, the watermark and the lag over time;
* backfill: per-slice rows and timings;
* MATCH_RECOGNIZE: a timeline of matches per partition; temporal join: a per-key timeline of the
  versions (from the versioned input, when pyarrow can read it) with the output rows, matched or not.

Plots are PNG images inlined as ``data:`` URIs (matplotlib, the ``report`` extra); the page has no
script and loads nothing.  Every value from the data or the config is escaped (``html.escape``).

Example::

    from timeweave.jobs.report import write_report
    write_report("runs/orders")   # -> runs/orders/report.html
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from timeweave.jobs.run_dir import CONFIG, read_events

#: Rows shown per sample table, keys / partitions per timeline, rows read from an output for a timeline.
SAMPLE_ROWS = 10
TIMELINE_KEYS = 12
TIMELINE_ROWS = 200_000
REPORT_FILE = "report.html"


@dataclass(frozen=True)
class Run:
    """One run recorded in a run directory: its start event, its batch / slice events, its end."""

    run: str
    started: Mapping[str, Any]
    batches: tuple[Mapping[str, Any], ...] = ()
    slices: tuple[Mapping[str, Any], ...] = ()
    finished: Mapping[str, Any] | None = None
    failed: Mapping[str, Any] | None = None

    @property
    def job(self) -> str:
        return str(self.started.get("job"))

    @property
    def operator(self) -> str:
        return str(self.started.get("operator"))

    @property
    def metrics(self) -> Mapping[str, Any]:
        return (self.finished or {}).get("metrics") or {}

    def counts(self) -> dict[str, int]:
        """Rows in / out, late, dead letters of this run: its metrics, or its batches' sums when it did not finish."""
        m = self.metrics
        if not m:
            m = {name: sum(int(b.get(name) or 0) for b in self.batches)
                 for name in ("rows_in", "rows_out", "late", "dead_letter")}
            m["rows_in_left"] = sum(int(b.get("rows_in_left") or 0) for b in self.batches)
            m["rows_in_right"] = sum(int(b.get("rows_in_right") or 0) for b in self.batches)
            m["rows_out"] = m["rows_out"] or sum(int(s.get("rows_out") or 0) for s in self.slices)
        rows_in = int(m.get("rows_in") or 0) if "rows_in_left" not in m or not (m.get("rows_in_left") or m.get(
            "rows_in_right")) else int(m.get("rows_in_left") or 0) + int(m.get("rows_in_right") or 0)
        return {
            "rows_in": rows_in, "rows_in_left": int(m.get("rows_in_left") or 0),
            "rows_in_right": int(m.get("rows_in_right") or 0), "rows_out": int(m.get("rows_out") or 0),
            "late": int(m.get("late") or 0), "dead_letter": int(m.get("dead_letter") or 0),
        }


def load_runs(run_dir: str | Path) -> list[Run]:
    """The runs of ``run_dir``'s events, in the order they started.

    >>> import tempfile, json, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "events.jsonl").write_text(json.dumps({"event": "run_started", "run": "a", "job": "backfill"})
    ...     + "\\n" + json.dumps({"event": "slice", "run": "a", "slice": 0}) + "\\n")
    >>> [(r.job, len(r.slices)) for r in load_runs(d)]
    [('backfill', 1)]
    """
    order: list[str] = []
    parts: dict[str, dict[str, Any]] = {}
    for e in read_events(run_dir):
        run = str(e.get("run"))
        if run not in parts:
            order.append(run)
            parts[run] = {"started": {}, "batches": [], "slices": [], "finished": None, "failed": None}
        kind = e["event"]
        if kind == "run_started":
            parts[run]["started"] = e
        elif kind == "batch":
            parts[run]["batches"].append(e)
        elif kind == "slice":
            parts[run]["slices"].append(e)
        elif kind == "run_finished":
            parts[run]["finished"] = e
        elif kind == "run_failed":
            parts[run]["failed"] = e
    return [Run(run, p["started"], tuple(p["batches"]), tuple(p["slices"]), p["finished"], p["failed"])
            for run, p in ((r, parts[r]) for r in order)]


# ---------------------------------------------------------------------------------------------- HTML pieces
def esc(value: Any) -> str:
    """``value`` as HTML text (None as an empty cell).

    >>> esc("<b>&")
    '&lt;b&gt;&amp;'
    """
    return "" if value is None else html.escape(str(value), quote=True)


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], cls: str = "") -> str:
    """An HTML table, every cell escaped."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _figure_png(draw: Callable[[Any], None], width: float = 9.0, height: float = 3.2, alt: str = "plot") -> str:
    """An ``<img>`` of a matplotlib figure drawn by ``draw(figure)``, inlined as a base64 PNG."""
    import matplotlib

    matplotlib.use("Agg", force=True)  # no display: render to memory
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    draw(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img class="plot" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def _when(text: Any) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when


# ---------------------------------------------------------------------------------------------- outputs
def _local(path: str | None) -> Path | None:
    """A local path of an output (``file:`` URIs too); None for a remote one the report does not read."""
    if not path:
        return None
    text = str(path)
    if text.startswith("file://"):
        text = text[len("file://"):]
    elif text.startswith("file:"):
        text = text[len("file:"):]
    elif "://" in text:
        return None
    return Path(text)


def read_output(path: str | None, columns: Sequence[str] | None = None, limit: int | None = None) -> Any:
    """An output directory as a pyarrow Table (partition directories such as ``slice=<label>`` become a column),
    or None when it is remote, missing or holds no data file.  ``_``- and ``.``-prefixed entries (staging,
    state, ``_SUCCESS``) are skipped, as Spark skips them."""
    import pyarrow.dataset as ds

    local = _local(path)
    if local is None or not local.exists():
        return None
    dataset = ds.dataset(str(local), format="parquet", partitioning="hive", exclude_invalid_files=True)
    if not dataset.files:
        return None
    wanted = [c for c in columns if c in dataset.schema.names] if columns is not None else None
    if limit is not None:
        return dataset.head(limit, columns=wanted)
    return dataset.to_table(columns=wanted)


@dataclass
class _Section:
    title: str
    body: list[str] = field(default_factory=list)
    anchor: str = ""


def _reasons_section(title: str, path: str | None, total: int, anchor: str) -> _Section:
    """Counts per reason and a sample of an output with a ``reason`` column (late, dead letter)."""
    s = _Section(title, anchor=anchor)
    s.body.append(f'<p>Rows: <span class="count" id="{esc(anchor)}-count">{total}</span> '
                  f'(output <code>{esc(path)}</code>)</p>')
    try:
        data = read_output(path, limit=SAMPLE_ROWS)  # the sample's rows only; the reasons: that column only
        reasons_column = read_output(path, columns=["reason"]) if data is not None else None
    except Exception as error:  # an unreadable output: say so, show the rest of the report
        s.body.append(f'<p class="note">Output not readable: {esc(error)}</p>')
        return s
    if data is None or data.num_rows == 0:
        s.body.append('<p class="note">No rows in the output.</p>')
        return s
    stored = reasons_column.num_rows if reasons_column is not None else data.num_rows
    if reasons_column is not None and "reason" in reasons_column.column_names:
        reasons = Counter(str(r) for r in reasons_column.column("reason").to_pylist())
        s.body.append(table(["reason", "rows"], reasons.most_common(), cls=f"{anchor}-reasons"))
    sample = data.slice(0, SAMPLE_ROWS)
    names = [n for n in sample.column_names if n != "reason"]
    names = (["reason"] if "reason" in sample.column_names else []) + names
    s.body.append(f"<p>Sample ({data.num_rows} of the {stored} rows stored in the output):</p>")
    s.body.append(table(names, zip(*(sample.column(n).to_pylist() for n in names), strict=True), cls=f"{anchor}-sample"))
    return s


# ---------------------------------------------------------------------------------------------- plots
def _batches_section(runs: Sequence[Run]) -> _Section | None:
    batches = [b for r in runs for b in r.batches]
    if not batches:
        return None
    s = _Section("Micro-batches", anchor="batches")
    whens = [_when(b.get("at")) for b in batches]
    xs = list(range(len(batches)))

    def rows(fig: Any) -> None:
        ax = fig.add_subplot()
        width = 0.2
        for i, (name, color) in enumerate((("rows_in", "#4477aa"), ("rows_out", "#228833"), ("late", "#ccbb44"),
                                            ("dead_letter", "#ee6677"))):
            ax.bar([x + (i - 1.5) * width for x in xs], [int(b.get(name) or 0) for b in batches], width,
                   label=name.replace("_", " "), color=color)
        step = max(1, len(xs) // 20)  # at most ~20 labels
        ax.set_xticks(xs[::step], [str(b.get("batch_id")) for b in batches][::step], fontsize="small")
        ax.set_xlabel("micro-batch id (in run order; a restart goes on from its checkpoint)")
        ax.set_ylabel("rows")
        ax.set_title("Rows per micro-batch")
        ax.legend(loc="upper right", fontsize="small")

    s.body.append(_figure_png(rows, alt="rows per micro-batch"))
    marks = [(w, _when(b.get("watermark"))) for w, b in zip(whens, batches, strict=True)]
    marks = [(w, m) for w, m in marks if w is not None and m is not None and m.year < 9999]
    lags = [(w, b["lag_ms"] / 1000) for w, b in zip(whens, batches, strict=True)
            if w is not None and b.get("lag_ms") is not None]
    states = [(w, int(b.get("state_rows") or 0)) for w, b in zip(whens, batches, strict=True) if w is not None]
    if marks or lags:
        def watermark(fig: Any) -> None:
            ax1, ax2, ax3 = fig.subplots(1, 3)
            if marks:
                ax1.plot([w for w, _ in marks], [m for _, m in marks], marker="o", color="#4477aa")
            ax1.set_title("Watermark (event time) over wall-clock time")
            ax1.tick_params(axis="x", labelrotation=30, labelsize="small")
            ax1.tick_params(axis="y", labelsize="small")
            if lags:
                ax2.plot([w for w, _ in lags], [lag for _, lag in lags], marker="o", color="#ee6677")
            ax2.set_title("Lag: wall clock - watermark (s)")
            ax2.tick_params(axis="x", labelrotation=30, labelsize="small")
            ax3.plot([w for w, _ in states], [n for _, n in states], marker="o", color="#228833")
            ax3.set_title("Rows in state")
            ax3.tick_params(axis="x", labelrotation=30, labelsize="small")

        s.body.append(_figure_png(watermark, width=12, height=3.6, alt="watermark and lag over time"))
    else:
        s.body.append('<p class="note">No watermark yet in these batches: nothing to plot over event time.</p>')
    header = ["run", "batch", "at", "rows in", "rows out", "late", "dead letter", "watermark", "lag (s)",
              "state rows", "ms"]
    rows_ = [(r.run, b.get("batch_id"), b.get("at"), b.get("rows_in"), b.get("rows_out"), b.get("late"),
              b.get("dead_letter"), b.get("watermark"), None if b.get("lag_ms") is None else round(b["lag_ms"] / 1000, 1),
              b.get("state_rows"), b.get("duration_ms")) for r in runs for b in r.batches]
    s.body.append(table(header, rows_, cls="batches"))
    return s


def _slices_section(runs: Sequence[Run]) -> _Section | None:
    slices = [(r, one) for r in runs for one in r.slices]
    if not slices:
        return None
    s = _Section("Backfill slices", anchor="slices")
    labels = [f"{one.get('slice')}\n{one.get('label')}" for _, one in slices]

    def timings(fig: Any) -> None:
        ax1, ax2 = fig.subplots(1, 2)
        ax1.bar(range(len(slices)), [float(one.get("seconds") or 0) for _, one in slices], color="#4477aa")
        ax1.set_title("Seconds per slice (its Spark job)")
        ax2.bar(range(len(slices)), [int(one.get("rows_out") or 0) for _, one in slices], color="#228833",
                label="rows out")
        if any("rows_in" in one for _, one in slices):
            ax2.plot(range(len(slices)), [int(one.get("rows_in") or 0) for _, one in slices], "o-", color="#ee6677",
                     label="rows in")
        ax2.set_title("Rows per slice")
        ax2.legend(fontsize="small")
        for ax in (ax1, ax2):
            ax.set_xticks(range(len(slices)), labels, fontsize="x-small")

    s.body.append(_figure_png(timings, width=12, height=3.6, alt="per-slice timings"))
    header = ["run", "slice", "label", "start", "end", "rows in", "rows out", "state keys out", "seconds", "Spark job"]
    s.body.append(table(header, [
        (r.run, one.get("slice"), one.get("label"), one.get("start"), one.get("end"), one.get("rows_in"),
         one.get("rows_out"), one.get("state_keys_out"), one.get("seconds"),
         None if not one.get("job") else f"slices {one['job'][0]}-{one['job'][-1]}") for r, one in slices
    ], cls="slices"))
    return s


def _pick(names: Sequence[str], wanted: str) -> str | None:
    """The output column named ``wanted``, compared without case (Spark's default resolution)."""
    return next((n for n in names if n == wanted), None) or next((n for n in names if n.lower() == wanted.lower()), None)


def _key_label(values: Sequence[Any]) -> str:
    return ", ".join("NULL" if v is None else str(v) for v in values)


def _match_recognize_section(config: Mapping[str, Any], main: str | None) -> _Section:
    """A timeline of the matches per partition: one row per partition (the busiest first), a mark per match."""
    import pyarrow as pa

    s = _Section("MATCH_RECOGNIZE: matches per partition", anchor="timeline")
    try:
        from timeweave.jobs.config import load_job_config

        spec = load_job_config(config).spec
        partition_by = list(spec.partition_by)
    except Exception as error:  # an old or hand-edited config: show what can be shown
        s.body.append(f'<p class="note">The clause could not be read ({esc(error)}): no partitions.</p>')
        partition_by = []
    data = read_output(main, limit=TIMELINE_ROWS)
    if data is None or data.num_rows == 0:
        s.body.append('<p class="note">No matches in the output.</p>')
        return s
    names = data.column_names
    keys = [c for c in (_pick(names, p) for p in partition_by) if c is not None]
    times = [f.name for f in data.schema if pa.types.is_timestamp(f.type) and f.name not in keys]
    partitions: Counter[str] = Counter()
    key_values = list(zip(*(data.column(k).to_pylist() for k in keys), strict=True)) if keys else [()] * data.num_rows
    for values in key_values:
        partitions[_key_label(values)] += 1
    s.body.append(f'<p>Matches: <span class="count" id="matches-count">{data.num_rows}</span> in '
                  f'{len(partitions)} partition(s) (by {esc(", ".join(keys) or "none")}).</p>')
    shown = [p for p, _ in partitions.most_common(TIMELINE_KEYS)]
    if times:
        time_column = times[0]
        stamps = data.column(time_column).to_pylist()

        def timeline(fig: Any) -> None:
            ax = fig.add_subplot()
            for row, partition in enumerate(shown):
                xs = [t for t, values in zip(stamps, key_values, strict=True)
                      if t is not None and _key_label(values) == partition]
                ax.plot(xs, [row] * len(xs), "|", markersize=14, markeredgewidth=2, color="#4477aa")
            ax.set_yticks(range(len(shown)), shown, fontsize="small")
            ax.set_ylim(-0.6, len(shown) - 0.4)  # the first and last rows' marks not cut by the frame
            ax.set_xlabel(time_column)
            ax.set_title(f"Matches per partition over {time_column}")
            ax.tick_params(axis="x", labelrotation=30, labelsize="small")

        s.body.append(_figure_png(timeline, height=max(2.5, 0.45 * len(shown) + 1.5), alt="matches per partition"))
    else:
        def bars(fig: Any) -> None:
            ax = fig.add_subplot()
            ax.barh(range(len(shown)), [partitions[p] for p in shown], color="#4477aa")
            ax.set_yticks(range(len(shown)), shown, fontsize="small")
            ax.set_title("Matches per partition (the measures have no timestamp to place them in time)")

        s.body.append(_figure_png(bars, height=max(2.5, 0.45 * len(shown) + 1.5), alt="matches per partition"))
    s.body.append(table(["partition", "matches"], [(p, partitions[p]) for p in shown], cls="partitions"))
    return s


def _schema_names(source: Mapping[str, Any]) -> list[str]:
    """The column names of a source's DDL schema (``"a STRING, b DECIMAL(32,2)"`` -> ``["a", "b"]``).

    >>> _schema_names({"schema": "op STRING, rate DECIMAL(32, 4), `update time` TIMESTAMP"})
    ['op', 'rate', 'update time']
    """
    names, depth, current = [], 0, ""
    for ch in str(source.get("schema") or "") + ",":
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        if ch == "," and depth == 0:
            text = current.strip()
            if text.startswith("`"):
                names.append(text[1:text.index("`", 1)])
            elif text:
                names.append(text.split()[0])
            current = ""
        else:
            current += ch
    return names


def _read_source(source: Mapping[str, Any], columns: Sequence[str]) -> Any:
    """A job source read with pyarrow (parquet, csv, json lines), its ``columns`` only, or an error text."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.dataset as ds
    import pyarrow.json as pjson

    local = _local(source.get("path"))
    if local is None or not local.exists():
        return f"source {source.get('path')!r} is not a local path"
    fmt = str(source.get("format") or "parquet").lower()
    options = {str(k).lower(): str(v).lower() for k, v in (source.get("options") or {}).items()}
    files = sorted(p for p in ([local] if local.is_file() else local.rglob("*"))
                   if p.is_file() and not p.name.startswith(("_", ".")))
    if fmt == "parquet":
        table_ = ds.dataset([str(f) for f in files], format="parquet").to_table()
    elif fmt == "csv":
        schema_names = _schema_names(source)
        header = options.get("header") == "true"
        read = pcsv.ReadOptions(column_names=None if header else schema_names, skip_rows=0)
        table_ = pa.concat_tables([pcsv.read_csv(f, read_options=read) for f in files]) if files else None
    elif fmt == "json":
        table_ = pa.concat_tables([pjson.read_json(f) for f in files]) if files else None
    else:
        return f"source format {fmt!r} is not read by the report"
    if table_ is None:
        return "source has no files"
    missing = [c for c in columns if _pick(table_.column_names, c) is None]
    if missing:
        return f"source has no column(s) {missing}"
    return table_.select([_pick(table_.column_names, c) for c in columns])


def _temporal_join_section(config: Mapping[str, Any], main: str | None) -> _Section:
    """Per key: the versions of the versioned side (ticks) and the output rows at their left time, matched or not."""
    s = _Section("Temporal join: versions and matched rows per key", anchor="timeline")
    try:
        from timeweave.jobs.config import load_job_config

        spec = load_job_config(config).join
    except Exception as error:
        s.body.append(f'<p class="note">The join could not be read from the config ({esc(error)}).</p>')
        return s
    data = read_output(main, limit=TIMELINE_ROWS)
    if data is None or data.num_rows == 0:
        s.body.append('<p class="note">No rows in the output.</p>')
        return s
    names = data.column_names
    left_keys = [_pick(names, k) for k in spec.left_key]
    left_time = _pick(names, spec.left_time)
    if None in left_keys or left_time is None:
        s.body.append('<p class="note">The output lacks the left key or time columns: no timeline.</p>')
        return s
    right_source = config.get("right") or {}
    versions = _read_source(right_source, [*spec.versioned.key, spec.versioned.time])
    # a matched row has a value in some right column of the output (a LEFT join's unmatched rows have none)
    try:
        pairs = spec.output_right_columns(dict.fromkeys(_schema_names(right_source), "other"))
    except Exception:  # a schema the payload rule cannot read: fall back below
        pairs = ()
    right_outputs = [c for c in (_pick(names, out) for _, out in pairs)
                     if c is not None and c not in left_keys and c != left_time]
    key_values = list(zip(*(data.column(k).to_pylist() for k in left_keys), strict=True))
    stamps = data.column(left_time).to_pylist()
    matched = [any(data.column(c)[i].is_valid for c in right_outputs) for i in range(data.num_rows)] \
        if right_outputs else [True] * data.num_rows
    per_key: Counter[str] = Counter(_key_label(v) for v in key_values)
    shown = [k for k, _ in per_key.most_common(TIMELINE_KEYS)]
    ticks: dict[str, list[datetime]] = {k: [] for k in shown}
    if isinstance(versions, str):
        s.body.append(f'<p class="note">Versions not shown: {esc(versions)}.</p>')
    else:
        vkeys = list(zip(*(versions.column(i).to_pylist() for i in range(len(spec.versioned.key))), strict=True))
        vtimes = versions.column(len(spec.versioned.key)).to_pylist()
        for values, when in zip(vkeys, vtimes, strict=True):
            label = _key_label(values)
            if label in ticks and when is not None:
                ticks[label].append(_when(when) if isinstance(when, str) else when)
    n_matched = sum(matched)
    s.body.append(f'<p>Output rows: <span class="count" id="output-count">{data.num_rows}</span>, matched '
                  f'<span class="count" id="matched-count">{n_matched}</span>, unmatched {data.num_rows - n_matched}; '
                  f'{len(per_key)} key(s) (by {esc(", ".join(k for k in left_keys if k))}).</p>')

    def timeline(fig: Any) -> None:
        ax = fig.add_subplot()
        for row, key in enumerate(shown):
            vs = ticks.get(key) or []
            ax.plot(vs, [row] * len(vs), "|", markersize=18, markeredgewidth=2, color="#888888",
                    label="version starts" if row == 0 else None)
            hits = [t for t, v, m in zip(stamps, key_values, matched, strict=True) if m and _key_label(v) == key]
            miss = [t for t, v, m in zip(stamps, key_values, matched, strict=True) if not m and _key_label(v) == key]
            ax.plot(hits, [row] * len(hits), "o", color="#228833", label="matched row" if row == 0 else None)
            ax.plot(miss, [row] * len(miss), "x", color="#ee6677", label="unmatched row" if row == 0 else None)
        ax.set_yticks(range(len(shown)), shown, fontsize="small")
        ax.set_ylim(-0.6, len(shown) - 0.4)
        ax.set_xlabel(left_time)
        ax.set_title("Versions (ticks) and output rows per key")
        ax.tick_params(axis="x", labelrotation=30, labelsize="small")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")

    s.body.append(_figure_png(timeline, width=10.5, height=max(2.5, 0.45 * len(shown) + 1.8),
                              alt="per-key version timeline"))
    s.body.append(table(["key", "output rows", "versions"], [(k, per_key[k], len(ticks.get(k) or [])) for k in shown],
                        cls="keys"))
    return s


# ---------------------------------------------------------------------------------------------- page
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1300px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } .note { color: #666; font-style: italic; }
.totals td.num { text-align: right; font-weight: bold; } img.plot { display: block; margin: 0.5em 0; max-width: 100%; }
.failed { color: #b00; } pre { white-space: pre-wrap; word-break: break-all; }
"""


def build_report(run_dir: str | Path) -> str:
    """The report page of ``run_dir`` as HTML text (see the module docstring for what it shows)."""
    if find_spec("matplotlib") is None:
        raise ValueError("the run report draws its plots with matplotlib: pip install 'timeweave[report]'")
    runs = load_runs(run_dir)
    if not runs:
        raise ValueError(f"{Path(run_dir) / 'events.jsonl'}: no events recorded")
    last = runs[-1]
    config = last.started.get("config")
    if not isinstance(config, Mapping):
        path = Path(run_dir) / CONFIG
        config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    outputs = last.started.get("outputs") or {}
    operator = last.operator
    totals = Counter()
    for r in runs:
        totals.update(r.counts())
    title = f"timeweave run report: {operator.replace('_', ' ')} {last.job}"
    parts = [f"<h1>{esc(title)}</h1>",
             f"<p>Run directory <code>{esc(Path(run_dir).resolve())}</code>; {len(runs)} run(s); "
             f"report written {esc(datetime.now(UTC).isoformat(timespec='seconds'))}.</p>"]
    rows_in = (f"{totals['rows_in']} ({totals['rows_in_left']} left / {totals['rows_in_right']} right)"
               if operator == "temporal_join" and (totals["rows_in_left"] or totals["rows_in_right"]) else totals["rows_in"])
    parts.append('<h2 id="totals">Totals</h2>')
    parts.append('<table class="totals"><tbody>' + "".join(
        f'<tr><th>{esc(label)}</th><td class="num" id="total-{esc(key)}">{esc(value)}</td></tr>'
        for label, key, value in (("rows in", "rows_in", rows_in), ("rows out", "rows_out", totals["rows_out"]),
                                  ("late", "late", totals["late"]), ("dead letter", "dead_letter", totals["dead_letter"]))
    ) + "</tbody></table>")
    parts.append('<h2 id="runs">Runs</h2>')
    run_rows = []
    for r in runs:
        c = r.counts()
        state = "finished" if r.finished else f"failed: {r.failed.get('error')}" if r.failed else "not finished"
        args = {k: v for k, v in (r.started.get("args") or {}).items() if v not in (None, False)}
        run_rows.append((r.run, r.job, r.operator, r.started.get("at"), (r.finished or r.failed or {}).get("at"), state,
                         json.dumps(args, default=str), c["rows_in"], c["rows_out"], c["late"], c["dead_letter"],
                         r.metrics.get("seconds"), r.metrics.get("watermark")))
    parts.append(table(["run", "job", "operator", "started", "ended", "state", "arguments", "rows in", "rows out", "late",
                        "dead letter", "seconds", "watermark"], run_rows, cls="runs"))
    sections: list[_Section | None] = [_batches_section(runs), _slices_section(runs)]
    sections.append(_reasons_section("Late rows", outputs.get("late"), totals["late"], "late"))
    sections.append(_reasons_section("Dead letters", outputs.get("dead_letter"), totals["dead_letter"], "dead-letter"))
    try:
        if operator == "match_recognize":
            sections.append(_match_recognize_section(config, outputs.get("main")))
        elif operator == "temporal_join":
            sections.append(_temporal_join_section(config, outputs.get("main")))
    except Exception as error:  # the page still shows the counts when a timeline cannot be drawn
        sections.append(_Section("Timeline", [f'<p class="note">Timeline not drawn: {esc(error)}</p>'], "timeline"))
    for s in sections:
        if s is None:
            continue
        parts.append(f'<h2 id="{esc(s.anchor)}">{esc(s.title)}</h2>')
        parts.extend(s.body)
    parts.append('<h2 id="config">Config</h2><pre>' + esc(json.dumps(config, indent=2, sort_keys=True, default=str))
                 + "</pre>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>\n" + "\n".join(parts)
            + "\n</body></html>\n")


def write_report(run_dir: str | Path, output: str | Path | None = None) -> Path:
    """Write the report of ``run_dir`` to ``output`` (default ``<run_dir>/report.html``); returns its path.

    Example::

        write_report("runs/orders")   # runs/orders/report.html
    """
    text = build_report(run_dir)
    target = Path(output) if output is not None else Path(run_dir) / REPORT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
    return target


__all__ = ["REPORT_FILE", "Run", "build_report", "load_runs", "read_output", "write_report"]
