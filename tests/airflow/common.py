"""Constants shared by the Airflow tests."""

from __future__ import annotations

CONFIG = {
    "left": {"path": "data/orders", "format": "csv", "options": {"header": "true"},
             "schema": "order_id STRING, currency STRING, order_time TIMESTAMP"},
    "right": {"path": "data/rates", "format": "csv", "options": {"header": "true"},
              "schema": "op STRING, currency STRING, rate DOUBLE, update_time TIMESTAMP"},
    "versioned": {"key": ["currency"], "time": "update_time", "format": "changelog", "op": "op"},
    "join": {"left_time": "order_time", "left_key": ["currency"], "how": "left"},
    "output": {"path": "out/enriched"},
    "checkpoint": "chk/enriched",
}
