"""Load the Flink conformance cases (../shared/conformance/flink/cases) as Spark DataFrames and expected rows."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

CASES = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "flink" / "cases"

_TYPES = {"STRING": "STRING", "BIGINT": "BIGINT", "INT": "INT", "DOUBLE": "DOUBLE", "BOOLEAN": "BOOLEAN"}


def spark_type(flink_type: str) -> str:
    t = flink_type.upper().replace(" ", "")
    if t.startswith("TIMESTAMP"):
        return "TIMESTAMP"
    if t.startswith("DECIMAL"):
        return t
    return _TYPES.get(t, "STRING")


def parse_value(text: str, spark_t: str) -> Any:
    if text == "":
        return None
    if spark_t == "TIMESTAMP":
        return datetime.fromisoformat(text)
    if spark_t.startswith("DECIMAL"):
        return Decimal(text)
    if spark_t in ("BIGINT", "INT"):
        return int(text)
    if spark_t == "DOUBLE":
        return float(text)
    if spark_t == "BOOLEAN":
        return text.lower() == "true"
    return text


@dataclass(frozen=True)
class Table:
    name: str
    columns: list[tuple[str, str]]  # (name, spark type), op column first when a changelog
    rows: list[tuple]
    rowtime: str | None
    primary_key: list[str]
    changelog: bool

    @property
    def ddl(self) -> str:
        return ", ".join(f"`{n}` {t}" for n, t in self.columns)


@dataclass(frozen=True)
class Case:
    name: str
    spec: dict
    tables: dict[str, Table]
    query: str
    path: Path

    def expected(self, mode: str = "streaming") -> tuple[list[str], list[tuple]]:
        with open(self.path / f"expected_{mode}.csv", newline="") as f:
            reader = csv.reader(f)
            header = next(reader)
            return header, [tuple(None if v == "" else v for v in row) for row in reader]


def load_case(name: str) -> Case:
    path = CASES / name
    spec = json.loads((path / "spec.json").read_text())
    tables = {}
    for t in spec["tables"]:
        columns = [(n, spark_type(ft)) for n, ft in t["schema"]]
        if t.get("changelog"):
            columns = [("op", "STRING"), *columns]
        with open(path / t["path"], newline="") as f:
            reader = csv.reader(f)
            header = next(reader)
            types = dict(columns)
            rows = [tuple(parse_value(v, types[h]) for h, v in zip(header, row, strict=True)) for row in reader]
        tables[t["name"]] = Table(t["name"], columns, rows, t.get("rowtime"), t.get("primary_key", []), bool(t.get("changelog")))
    return Case(name, spec, tables, (path / spec["query_file"]).read_text(), path)


def dataframe(spark, table: Table):
    return spark.createDataFrame(table.rows, table.ddl)


def normalize(value: Any) -> str | None:
    """Render a value the way Flink's expected CSVs do (timestamps with millis, decimals as scaled)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    return str(value)


def rows_as_text(df, columns: list[str]) -> list[tuple]:
    rows = (tuple(normalize(r[c]) for c in columns) for r in df.select(*columns).collect())
    return sorted(rows, key=lambda row: tuple((v is None, v or "") for v in row))  # NULLs (grouping sets) sort last
