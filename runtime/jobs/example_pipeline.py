"""The example pipeline, end to end on embedded Spark: ``python -m timeweave.jobs.example_pipeline``.

On the sample data (``dags/sample_data``: two days of orders and a currency-rate changelog) it runs
the three ways timeweave computes the same event-time temporal join and checks they agree:

1. **dbt**: the ``dags/timeweave_example_dbt`` project (``timeweave.temporal_join`` in a model) through
   ``dbtRunner`` with dbt-spark's ``method: session`` on this process's SparkSession;
2. **streaming**: the streaming job, ``availableNow`` with a persistent checkpoint, once per landed day
   (incremental), the last run flushing the watermark past the end of input;
3. **backfill**: the backfill job over all days in N slices (3 by default).

It prints a table with each output's row count and checksum (order-independent, over the dbt
model's columns) and exits 1 if they differ.  The streaming and backfill runs record their run
directories (``<work>/runs/streaming``, ``<work>/runs/backfill``) and the pipeline ends by writing
their run reports (``report.html`` there; :mod:`timeweave.jobs.report`).  The example DAG (``dags/timeweave_example.py``) uses
the same helpers per data interval.

Example::

    python -m timeweave.jobs.example_pipeline --work-dir /tmp/tw-example
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timeweave.jobs.session import default_shuffle_partitions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

REPO = Path(__file__).resolve().parents[2]
#: The sample files: ``orders/<day>.csv`` and ``rates/<day>.csv``, one per source and day.
SAMPLE_DATA = REPO / "dags" / "sample_data"
#: The example dbt project (copied into the work directory before each run).
DBT_PROJECT = REPO / "dags" / "timeweave_example_dbt"
SOURCES = ("orders", "rates")
ORDERS_SCHEMA = "order_id STRING, price DECIMAL(32,2), currency STRING, order_time TIMESTAMP"
RATES_SCHEMA = "op STRING, currency STRING, conversion_rate DECIMAL(32,4), update_time TIMESTAMP"
#: The dbt model whose output is compared with the jobs'.
DBT_MODEL = "orders_enriched"
TIME_COLUMN = "order_time"


@dataclass(frozen=True)
class ExamplePaths:
    """Where one example pipeline keeps its landed input, outputs, checkpoints and catalog."""

    work: Path

    @property
    def landing(self) -> Path:
        return self.work / "landing"

    @property
    def streaming_output(self) -> Path:
        return self.work / "out" / "streaming" / DBT_MODEL

    @property
    def streaming_checkpoint(self) -> Path:
        return self.work / "checkpoints" / "streaming"

    @property
    def backfill_output(self) -> Path:
        return self.work / "out" / "backfill" / DBT_MODEL

    @property
    def backfill_checkpoint(self) -> Path:
        return self.work / "checkpoints" / "backfill"

    @property
    def streaming_run(self) -> Path:
        """The streaming runs' run directory (events, config, ``report.html``)."""
        return self.work / "runs" / "streaming"

    @property
    def backfill_run(self) -> Path:
        """The backfill's run directory (events, config, ``report.html``)."""
        return self.work / "runs" / "backfill"

    @property
    def dbt_project(self) -> Path:
        return self.work / "dbt"

    @property
    def dbt_tables(self) -> Path:
        return self.work / "out" / "dbt"

    @property
    def dbt_output(self) -> Path:
        return self.dbt_tables / DBT_MODEL

    @property
    def warehouse(self) -> Path:
        return self.work / "warehouse"

    @property
    def metastore(self) -> Path:
        return self.work / "metastore"


# ---------------------------------------------------------------------------------------------- input


def sample_days(sample_data: Path = SAMPLE_DATA) -> list[date]:
    """The days the sample data covers, from its file names (``orders/2026-01-01.csv`` ...).

    >>> sample_days()
    [datetime.date(2026, 1, 1), datetime.date(2026, 1, 2)]
    """
    if not (sample_data / "orders").is_dir():
        raise FileNotFoundError(f"argument 'sample_data': no orders/ directory under {sample_data}")
    return sorted({date.fromisoformat(f.stem) for source in SOURCES for f in (sample_data / source).glob("*.csv")})


def land(paths: ExamplePaths, start: datetime | date, end: datetime | date, sample_data: Path = SAMPLE_DATA) -> list[Path]:
    """Copy the sample files of the days in ``[start, end)`` into the landing directory, as if they arrived.

    Re-landing a day is a no-op (same file name and content), so a retried task is harmless.
    """
    first, stop = _as_date(start), _as_date(end)
    landed = []
    for source in SOURCES:
        target = paths.landing / source
        target.mkdir(parents=True, exist_ok=True)
        for file in sorted((sample_data / source).glob("*.csv")):
            if first <= date.fromisoformat(file.stem) < stop:
                shutil.copyfile(file, target / file.name)
                landed.append(target / file.name)
    return landed


def _as_date(value: datetime | date) -> date:
    return value.date() if isinstance(value, datetime) else value


# ---------------------------------------------------------------------------------------------- jobs


def job_config(paths: ExamplePaths, kind: str) -> dict[str, Any]:
    """The job config (``timeweave.jobs.config`` JSON) of the ``streaming`` or ``backfill`` job.

    >>> cfg = job_config(ExamplePaths(Path("/w")), "backfill")
    >>> cfg["output"]["path"], cfg["versioned"]["format"]
    ('/w/out/backfill/orders_enriched', 'changelog')
    """
    if kind not in ("streaming", "backfill"):
        raise ValueError(f"argument 'kind': unknown job kind {kind!r}; use 'streaming' or 'backfill'")
    output = paths.streaming_output if kind == "streaming" else paths.backfill_output
    checkpoint = paths.streaming_checkpoint if kind == "streaming" else paths.backfill_checkpoint
    return {
        "left": {"path": str(paths.landing / "orders"), "format": "csv", "options": {"header": "true"},
                 "schema": ORDERS_SCHEMA, "watermark_delay": "0 seconds"},
        "right": {"path": str(paths.landing / "rates"), "format": "csv", "options": {"header": "true"},
                  "schema": RATES_SCHEMA, "watermark_delay": "0 seconds"},
        "versioned": {"key": ["currency"], "time": "update_time", "format": "changelog", "op": "op"},
        "join": {"left_time": TIME_COLUMN, "left_key": ["currency"], "how": "left"},
        "output": {"path": str(output)},
        "checkpoint": str(checkpoint),
        "trigger": {"available_now": True},
        "mode": "event_time",
    }


def spark_conf(paths: ExamplePaths, hive: bool = True) -> dict[str, str]:
    """Spark properties of the example's session: local, UTC, RocksDB state, catalog in the work dir.

    ``hive=False`` leaves out the Derby metastore (the jobs need none; embedded Derby admits one JVM).
    """
    master = os.environ.get("TIMEWEAVE_SPARK_MASTER", "local[2]")
    # One shuffle partition per local core, as the job session (timeweave.jobs.session): on local[2] a
    # stateful micro-batch then runs 2 state-store tasks, not 4.  TIMEWEAVE_SHUFFLE_PARTITIONS overrides.
    partitions = os.environ.get("TIMEWEAVE_SHUFFLE_PARTITIONS", default_shuffle_partitions(master))
    conf = {
        "spark.master": master,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": partitions,
        "spark.default.parallelism": partitions,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.warehouse.dir": str(paths.warehouse),
    }
    if hive:
        conf |= {
            "spark.sql.catalogImplementation": "hive",
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={paths.metastore / 'metastore_db'};create=true",
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={paths.metastore}",
        }
    return conf


def spark_session(paths: ExamplePaths, hive: bool = True) -> SparkSession:
    """The active SparkSession, or a new one with :func:`spark_conf` (dbt's session method then reuses it)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("timeweave-example")
    for key, value in spark_conf(paths, hive).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


# ---------------------------------------------------------------------------------------------- dbt


def dbt_macros_path() -> Path:
    """The timeweave dbt package (``dbt_macros/``, installed as ``timeweave.dbt_package``)."""
    spec = find_spec("timeweave.dbt_package")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("timeweave's dbt package (timeweave.dbt_package) is not installed; see the README's install command")
    return Path(next(iter(spec.submodule_search_locations)))


def run_dbt(paths: ExamplePaths, project: Path = DBT_PROJECT) -> dict[str, Any]:
    """``dbt deps`` + ``dbt build`` of the example project on the landed files, in-process (dbtRunner).

    The project is copied into the work directory first, so dbt's target/, logs/ and dbt_packages/
    never land in the source tree (and partial parsing speeds up the runs after the first).  Returns ``{"models": n, "tests": n, "output": path}``; raises if
    a node fails.  A SparkSession must exist already (see :func:`spark_session`).
    """
    from dbt.cli.main import dbtRunner

    # Refresh the project's sources but keep target/ (dbt's partial parsing makes the next run faster).
    for source in ("models", "macros"):
        shutil.rmtree(paths.dbt_project / source, ignore_errors=True)
    skip = shutil.ignore_patterns("target", "dbt_packages", "logs", "package-lock.yml")
    shutil.copytree(project, paths.dbt_project, ignore=skip, dirs_exist_ok=True)
    # packages.yml reads the package location from here; a caller may point it at another copy.
    os.environ.setdefault("TIMEWEAVE_DBT_MACROS", str(dbt_macros_path()))
    dbt_vars = {
        "landing": str(paths.landing), "orders_schema": ORDERS_SCHEMA, "rates_schema": RATES_SCHEMA,
        "location_root": str(paths.dbt_tables),
    }
    common = ["--project-dir", str(paths.dbt_project), "--profiles-dir", str(paths.dbt_project)]
    logs = ["--log-path", str(paths.dbt_project / "logs")]
    # Every model is a full-refresh table at location_root/<model>; dbt drops such an external table
    # without deleting its files, and Spark refuses CTAS into a non-empty location: clear them first.
    shutil.rmtree(paths.dbt_tables, ignore_errors=True)
    runner = dbtRunner()
    deps = runner.invoke(["deps", *common, *logs, "--quiet"])
    if not deps.success:
        raise RuntimeError(f"dbt deps failed: {deps.exception}")
    build = runner.invoke(["build", *common, *logs, "--vars", json.dumps(dbt_vars)])
    if not build.success:
        failed = [f"{r.node.name}: {r.message}" for r in (build.result or []) if str(r.status) not in ("success", "pass")]
        raise RuntimeError(f"dbt build failed: {failed or build.exception}")
    kinds = [r.node.resource_type for r in build.result]
    return {
        "models": sum(1 for k in kinds if str(k) == "model"),
        "tests": sum(1 for k in kinds if str(k) == "test"),
        "output": str(paths.dbt_output),
    }


# ---------------------------------------------------------------------------------------------- comparing


@dataclass(frozen=True)
class OutputSummary:
    """One door's output: its row count and an order-independent checksum of its rows."""

    door: str
    rows: int
    checksum: str
    notes: str = ""
    columns: tuple[str, ...] = field(default=(), compare=False)


def _canonical(value: Any) -> str:
    """One text per value, whatever the storage type (a DECIMAL(32,4) read back from any parquet file)."""
    if value is None:
        return "NULL"
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, datetime | date):
        return value.isoformat()
    return repr(value)


def checksum(rows: Iterable[Sequence[Any]]) -> tuple[int, str]:
    """(row count, SHA-256 prefix over the sorted canonical rows): equal for equal multisets of rows.

    >>> checksum([(1, "a"), (2, None)]) == checksum([(2, None), (1, "a")])
    True
    >>> checksum([(1, "a")]) == checksum([(1, "a"), (1, "a")])
    False
    """
    lines = sorted("\x1f".join(_canonical(v) for v in row) for row in rows)
    digest = hashlib.sha256("\x1e".join(lines).encode()).hexdigest()[:16]
    return len(lines), digest


def read_output(spark: SparkSession, path: Path | str) -> DataFrame:
    """A parquet output directory as a DataFrame (a backfill's ``slice=...`` partition column dropped)."""
    df = spark.read.parquet(str(path))
    return df.drop("slice") if "slice" in df.columns else df


def summarize(
    door: str,
    df: DataFrame,
    columns: Sequence[str],
    start: datetime | None = None,
    end: datetime | None = None,
    notes: str = "",
) -> OutputSummary:
    """Row count and checksum of ``df`` over ``columns``, restricted to ``start <= order_time < end`` if given."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"argument 'columns': the {door} output has no column(s) {missing}; it has {df.columns}")
    if start is not None:
        df = df.where(df[TIME_COLUMN] >= start)
    if end is not None:
        df = df.where(df[TIME_COLUMN] < end)
    rows, digest = checksum(tuple(row) for row in df.select(*columns).collect())
    return OutputSummary(door, rows, digest, notes, tuple(columns))


def agree(summaries: Sequence[OutputSummary]) -> bool:
    """True when every output has the first one's row count and checksum."""
    return len({(s.rows, s.checksum) for s in summaries}) == 1


def format_table(summaries: Sequence[OutputSummary]) -> str:
    """The summary table the main job prints.

    >>> print(format_table([OutputSummary("dbt", 3, "ab12", "3 models"), OutputSummary("backfill", 3, "ab12")]))
    door       rows  checksum          notes
    dbt           3  ab12              3 models
    backfill      3  ab12
    """
    lines = [f"{'door':<9} {'rows':>6}  {'checksum':<16}  notes"]
    lines += [f"{s.door:<9} {s.rows:>6}  {s.checksum:<16}  {s.notes}".rstrip() for s in summaries]
    return "\n".join(lines)


def compare_outputs(
    spark: SparkSession,
    paths: ExamplePaths,
    start: datetime | None = None,
    end: datetime | None = None,
    notes: Mapping[str, str] | None = None,
) -> list[OutputSummary]:
    """Summaries of the dbt, streaming and backfill outputs over the dbt model's columns (in ``[start, end)``)."""
    notes = notes or {}
    dbt = read_output(spark, paths.dbt_output)
    columns = list(dbt.columns)
    outputs = [("dbt", dbt), ("streaming", read_output(spark, paths.streaming_output)),
               ("backfill", read_output(spark, paths.backfill_output))]
    return [summarize(door, df, columns, start, end, notes.get(door, "")) for door, df in outputs]


# ---------------------------------------------------------------------------------------------- main


def run_pipeline(paths: ExamplePaths, slices: int = 3, sample_data: Path = SAMPLE_DATA) -> tuple[list[OutputSummary], dict]:
    """Land the days one by one with a streaming run after each, then dbt and the backfill; compare."""
    from timeweave import jobs

    spark = spark_session(paths)
    days = sample_days(sample_data)
    streaming_runs = []
    for i, day in enumerate(days):
        land(paths, day, day + timedelta(days=1), sample_data)
        last = i == len(days) - 1
        # Incremental availableNow runs on one checkpoint; the last flushes: the input has ended.
        streaming_runs.append(jobs.run("streaming", job_config(paths, "streaming"), spark=spark, flush=last,
                                       run_dir=paths.streaming_run))
    dbt = run_dbt(paths)
    start = datetime.combine(days[0], datetime.min.time())
    end = datetime.combine(days[-1] + timedelta(days=1), datetime.min.time())
    backfill = jobs.run("backfill", job_config(paths, "backfill"), spark=spark, start=start, end=end, slices=slices,
                        run_dir=paths.backfill_run)
    streamed = {k: sum(run[k] for run in streaming_runs) for k in ("rows_out", "late", "dead_letter")}
    notes = {
        "dbt": f"dbt build: {dbt['models']} models, {dbt['tests']} tests passed",
        "streaming": (f"{len(streaming_runs)} availableNow runs, last flushed; late {streamed['late']}, "
                      f"dead letter {streamed['dead_letter']}"),
        "backfill": f"{slices} slices of [{start:%Y-%m-%d}, {end:%Y-%m-%d}); dead letter {backfill['dead_letter']}",
    }
    summaries = compare_outputs(spark, paths, notes=notes)
    return summaries, {"dbt": dbt, "streaming": streaming_runs, "backfill": backfill}


def write_reports(paths: ExamplePaths) -> list[Path]:
    """The run reports of the streaming and backfill runs (``<run dir>/report.html``); none without matplotlib."""
    if find_spec("matplotlib") is None:
        print("\nno run reports: they need matplotlib (pip install 'timeweave[report]')", file=sys.stderr)
        return []
    from timeweave.jobs.report import write_report

    return [write_report(run_dir) for run_dir in (paths.streaming_run, paths.backfill_run) if run_dir.is_dir()]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the example pipeline; print the summary table; 0 when the three outputs agree, else 1."""
    parser = argparse.ArgumentParser(prog="python -m timeweave.jobs.example_pipeline", description=__doc__.split("\n")[0])
    parser.add_argument("--work-dir", help="where input lands and outputs go (default: a new temp directory)")
    parser.add_argument("--slices", type=int, default=3, help="backfill slices (default 3)")
    parser.add_argument("--sample-data", default=str(SAMPLE_DATA), help="sample data directory")
    args = parser.parse_args(argv)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="timeweave-example-"))
    if work.exists() and any(work.iterdir()):
        parser.error(f"argument --work-dir: {work} is not empty (the pipeline starts from a clean state)")
    paths = ExamplePaths(work.resolve())
    summaries, _ = run_pipeline(paths, args.slices, Path(args.sample_data))
    print(f"\ntimeweave example pipeline (work dir {paths.work})\n")
    print("orders with the rate valid at their order time (dbt output):")
    rows = read_output(spark_session(paths), paths.dbt_output).orderBy(TIME_COLUMN, "order_id").collect()
    for row in rows:
        print("  " + "  ".join(value if isinstance(value, str) else _canonical(value) for value in row))
    print(f"\ncolumns compared: {', '.join(summaries[0].columns)}\n")
    print(format_table(summaries))
    reports = write_reports(paths)
    if reports:
        print("\nrun reports:")
        for report in reports:
            print(f"  {report}")
    if agree(summaries):
        print("\nOK: dbt, streaming and backfill produced the same rows")
        return 0
    print("\nMISMATCH: the outputs differ", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
