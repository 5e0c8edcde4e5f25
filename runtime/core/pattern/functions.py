"""Scalar functions, casts and SQL value semantics (NULL propagation, integer division) for the evaluator.

A plain dict registry (sqlglot's ``Parser.FUNCTIONS`` idea): the parser checks names and argument
counts against :data:`SCALAR_FUNCTIONS`, the evaluator calls the implementation.  Values are plain
Python objects: ``int`` (BIGINT), ``float`` (DOUBLE), ``Decimal``, ``str``, ``bool``, ``datetime``,
``date``, ``timedelta`` (intervals) and ``None`` (NULL).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from numbers import Integral
from typing import Any


@dataclass(frozen=True, slots=True)
class ScalarFunction:
    min_args: int
    max_args: int | None
    impl: Callable[..., Any]
    null_safe: bool = False  # True: the function itself handles NULL arguments (COALESCE)


def _strict(fn: Callable[..., Any]) -> Callable[..., Any]:
    """NULL in, NULL out (the default for SQL scalar functions)."""

    def wrapper(*args: Any) -> Any:
        if any(a is None for a in args):
            return None
        return fn(*args)

    return wrapper


def _coalesce(*args: Any) -> Any:
    return next((a for a in args if a is not None), None)


def _nullif(a: Any, b: Any) -> Any:
    return None if a is not None and b is not None and a == b else a


def _greatest(*args: Any) -> Any:
    return None if any(a is None for a in args) else max(args)


def _least(*args: Any) -> Any:
    return None if any(a is None for a in args) else min(args)


def _round(x: Any, digits: int = 0) -> Any:
    if isinstance(x, Integral):
        return x
    quantum = Decimal(1).scaleb(-digits)
    return type(x)(Decimal(str(x)).quantize(quantum, rounding="ROUND_HALF_UP"))


SCALAR_FUNCTIONS: dict[str, ScalarFunction] = {
    "COALESCE": ScalarFunction(1, None, _coalesce, null_safe=True),
    "NULLIF": ScalarFunction(2, 2, _nullif, null_safe=True),
    "GREATEST": ScalarFunction(1, None, _greatest, null_safe=True),
    "LEAST": ScalarFunction(1, None, _least, null_safe=True),
    "ABS": ScalarFunction(1, 1, _strict(abs)),
    "MOD": ScalarFunction(2, 2, _strict(lambda a, b: sql_arith("%", a, b))),
    "FLOOR": ScalarFunction(1, 1, _strict(lambda x: x if isinstance(x, Integral) else type(x)(math.floor(x)))),
    "CEIL": ScalarFunction(1, 1, _strict(lambda x: x if isinstance(x, Integral) else type(x)(math.ceil(x)))),
    "ROUND": ScalarFunction(1, 2, _strict(_round)),
    "UPPER": ScalarFunction(1, 1, _strict(str.upper)),
    "LOWER": ScalarFunction(1, 1, _strict(str.lower)),
    "CHAR_LENGTH": ScalarFunction(1, 1, _strict(len)),
}

#: CAST target spellings → the normalized type name stored in the AST.
TYPE_NAMES = {
    "BIGINT": "BIGINT", "INT": "BIGINT", "INTEGER": "BIGINT", "SMALLINT": "BIGINT", "TINYINT": "BIGINT",
    "DOUBLE": "DOUBLE", "FLOAT": "DOUBLE", "REAL": "DOUBLE",
    "DECIMAL": "DECIMAL", "NUMERIC": "DECIMAL",
    "VARCHAR": "VARCHAR", "STRING": "VARCHAR", "CHAR": "VARCHAR",
    "BOOLEAN": "BOOLEAN", "TIMESTAMP": "TIMESTAMP", "DATE": "DATE",
}  # fmt: skip


def cast(value: Any, type_name: str) -> Any:
    """SQL CAST of a Python value; raises ValueError on an impossible conversion.

    >>> cast("12", "BIGINT"), cast(7, "DOUBLE"), cast(2.9, "BIGINT"), cast(None, "VARCHAR")
    (12, 7.0, 2, None)
    """
    if value is None:
        return None
    if type_name == "BIGINT":
        if isinstance(value, str):
            return int(value.strip())
        return int(value)  # SQL truncates toward zero for exact types here, as Python's int() does
    if type_name == "DOUBLE":
        return float(value)
    if type_name == "DECIMAL":
        return Decimal(str(value))
    if type_name == "VARCHAR":
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        return str(value)
    if type_name == "BOOLEAN":
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered not in ("true", "false"):
                raise ValueError(f"cannot cast {value!r} to BOOLEAN")
            return lowered == "true"
        return bool(value)
    if type_name == "TIMESTAMP":
        if isinstance(value, datetime):
            return value
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day)
        return datetime.fromisoformat(str(value).strip())
    if type_name == "DATE":
        if isinstance(value, datetime):
            return value.date()
        if isinstance(value, date):
            return value
        return date.fromisoformat(str(value).strip())
    raise ValueError(f"unknown type {type_name}")


def sql_arith(op: str, a: Any, b: Any) -> Any:
    """``+ - * / %`` with SQL rules: NULL propagates, integer division truncates toward zero.

    Division by zero returns NULL rather than failing the whole partition (documented deviation:
    Flink and Trino raise; a streaming job cannot recover from that row).

    >>> sql_arith("/", 7, 2), sql_arith("/", -7, 2), sql_arith("/", 7.0, 2), sql_arith("+", None, 1)
    (3, -3, 3.5, None)
    """
    if a is None or b is None:
        return None
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "||":
        return f"{cast(a, 'VARCHAR')}{cast(b, 'VARCHAR')}"
    if b == 0:
        return None
    # Integral, not int: numpy integers (rows coming from pandas) divide like BIGINT too
    exact = isinstance(a, Integral) and isinstance(b, Integral) and not isinstance(a, bool)
    if op == "/":
        if exact:
            quotient = abs(a) // abs(b)
            return int(quotient if (a >= 0) == (b >= 0) else -quotient)
        return a / b
    if op == "%":
        if exact:
            return int(math.fmod(a, b))
        return math.fmod(a, b)
    raise ValueError(f"unknown operator {op}")


def sql_compare(op: str, a: Any, b: Any) -> bool | None:
    """Comparison with three-valued logic: NULL on either side gives NULL."""
    if a is None or b is None:
        return None
    if op == "=":
        return a == b
    if op in ("<>", "!="):
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    raise ValueError(f"unknown comparison {op}")
