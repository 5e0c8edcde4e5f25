"""Scalar functions, casts and SQL value semantics (NULL propagation, integer division) for the evaluator.

A plain dict registry (sqlglot's ``Parser.FUNCTIONS`` idea): the parser checks names and argument
counts against :data:`SCALAR_FUNCTIONS`, the evaluator calls the implementation.  Values are plain
Python objects: ``int`` (BIGINT), ``float`` (DOUBLE), ``Decimal``, ``str``, ``bool``, ``datetime``,
``date``, ``timedelta`` (intervals) and ``None`` (NULL).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from numbers import Integral
from typing import Any


@dataclass(frozen=True, slots=True)
class ScalarFunction:
    """One scalar function: argument counts, implementation, and its result type rule.

    ``returns`` is the rule both schema typers apply: ``"argument"`` (the type of the first argument
    that is not a NULL literal), ``"common"`` (the common type of all arguments), a fixed type
    (``"string"``, ``"bigint"``, ``"double"``, ``"boolean"``), ``"array"`` (an array of the arguments'
    common type), ``"element"`` (the element type of the first argument, an array) or ``"branches"``
    (the common type of the arguments after the first: ``IF``).  ``engine_first``: a Spark function the
    engine computes when its call reads one row (:mod:`.row_functions`); this implementation runs only
    over navigated or aggregated values, and a property test holds it to Spark's results.
    """

    min_args: int
    max_args: int | None
    impl: Callable[..., Any]
    null_safe: bool = False  # True: the function itself handles NULL arguments (COALESCE)
    returns: str = "common"
    engine_first: bool = False


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


def _text(value: Any) -> str:
    return value if isinstance(value, str) else cast(value, "VARCHAR")


def _concat(*args: Any) -> str:
    return "".join(_text(a) for a in args)


def _concat_ws(separator: Any, *args: Any) -> str | None:
    """Spark's and Trino's ``concat_ws``: NULL separator gives NULL; NULL values are skipped; arrays expand."""
    if separator is None:
        return None
    parts: list[str] = []
    for arg in args:
        for value in (arg if isinstance(arg, list) else (arg,)):
            if value is not None:
                parts.append(_text(value))
    return _text(separator).join(parts)


def _substring(text: str, start: int, length: int | None = None) -> str:
    """Spark's ``substring``: 1-based; 0 counts as 1; a negative start counts from the end (the end is
    computed before the start is clamped, as Spark does: ``substring('abc', -5, 3)`` is ``'a'``)."""
    size = len(text)
    begin = start - 1 if start > 0 else (size + start if start < 0 else 0)
    end = size if length is None else begin + length
    begin = max(begin, 0)
    return text[begin:end] if begin < end else ""


def _sqrt(x: Any) -> float:
    value = float(x)
    return math.sqrt(value) if value >= 0 else math.nan  # Spark: NaN for a negative argument


def _ln(x: Any) -> float | None:
    value = float(x)
    return math.log(value) if value > 0 else None  # Spark: NULL for a non-positive argument


def _exp(x: Any) -> float:
    try:
        return math.exp(float(x))
    except OverflowError:
        return math.inf


def _power(base: Any, exponent: Any) -> float:
    try:
        return math.pow(float(base), float(exponent))
    except ValueError:  # a negative base and a fractional exponent
        return math.nan
    except OverflowError:
        return math.inf


def _array(*args: Any) -> list[Any]:
    return list(args)


def _element_at(array: list[Any], index: int) -> Any:
    """1-based; negative counts from the end; beyond either end is NULL; 0 is an error (Spark and Trino)."""
    if index == 0:
        raise ValueError("element_at index 0 is invalid: SQL arrays start at 1")
    if index > len(array) or -index > len(array):
        return None
    return array[index - 1] if index > 0 else array[index]


def _array_contains(array: list[Any] | None, value: Any) -> bool | None:
    """Spark's ``array_contains``: NULL array or value gives NULL; no match with a NULL element gives NULL."""
    if array is None or value is None:
        return None
    if any(element == value for element in array if element is not None):
        return True
    return None if any(element is None for element in array) else False


def _array_join(array: list[Any] | None, separator: Any, null_replacement: Any = None) -> str | None:
    if array is None or separator is None:
        return None
    values = [v if v is not None else null_replacement for v in array]
    return _text(separator).join(_text(v) for v in values if v is not None)


@functools.lru_cache(maxsize=256)
def _like_regex(pattern: str, escape: str) -> re.Pattern[str]:
    """A LIKE pattern as a regular expression: ``%`` any run, ``_`` one character, ``escape`` quotes the next."""
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if escape and char == escape:
            following = pattern[i + 1: i + 2]
            if following not in ("%", "_", escape):  # Spark and Trino reject a dangling or needless escape
                raise ValueError(f"LIKE pattern {pattern!r}: the escape character {escape!r} must precede %, _ "
                                 "or itself")
            parts.append(re.escape(following))
            i += 2
            continue
        parts.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        i += 1
    return re.compile("".join(parts), re.DOTALL)


def _like(text: Any, pattern: Any, escape: str = "\\") -> bool:
    """``text LIKE pattern [ESCAPE e]``; the default escape is a backslash (Spark)."""
    if len(escape) > 1:
        raise ValueError(f"the LIKE escape must be one character, got {escape!r}")
    return _like_regex(_text(pattern), escape).fullmatch(_text(text)) is not None


def _if(condition: Any, then: Any, otherwise: Any = None) -> Any:
    return then if condition is True else otherwise


def _equal_null(a: Any, b: Any) -> bool:
    """Null-safe equality (``IS NOT DISTINCT FROM``, Spark's ``<=>`` / ``equal_null``): never NULL."""
    if a is None or b is None:
        return a is None and b is None
    return sql_compare("=", a, b) is True


def _spark_max(values: list[Any]) -> Any:
    """Spark's ordering of numbers: NaN above every other value."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    if any(isinstance(v, float) and math.isnan(v) for v in present):
        return math.nan
    return max(present)


def _spark_min(values: list[Any]) -> Any:
    present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not present:
        return math.nan if any(v is not None for v in values) else None
    return min(present)


def _div(a: Any, b: Any) -> int | None:
    """Spark's ``a div b``: the quotient truncated toward zero, BIGINT; division by zero gives NULL (the
    core's rule for ``/`` and ``%``: Spark under ANSI mode raises)."""
    if b == 0:
        return None
    if isinstance(a, Integral) and isinstance(b, Integral):
        quotient = abs(int(a)) // abs(int(b))
        return quotient if (a >= 0) == (b >= 0) else -quotient
    return int(Decimal(str(a)) / Decimal(str(b)))  # int() truncates toward zero


def _try_element_at(container: Any, key: Any) -> Any:
    """Spark's ``try_element_at``: an array's 1-based element (NULL beyond either end, an error at 0) or a
    map's value of ``key`` (NULL when absent).  A map arrives as a dict or as Arrow's (key, value) pairs."""
    if isinstance(container, dict):
        return container.get(key)
    if not isinstance(key, Integral) or (container and isinstance(container[0], tuple)):  # map pairs
        return next((value for k, value in container if k == key), None)
    return _element_at(container, key)


def _array_position(array: list[Any], value: Any) -> int:
    """Spark's ``array_position``: the 1-based position of the first ``value``, 0 when absent."""
    return next((i + 1 for i, element in enumerate(array) if element is not None and element == value), 0)


def _array_distinct(array: list[Any]) -> list[Any]:
    """Spark's ``array_distinct``: first occurrences in order, one NULL kept."""
    out: list[Any] = []
    for element in array:
        if element not in out:
            out.append(element)
    return out


def _signum(x: Any) -> float:
    value = float(x)
    return value if math.isnan(value) else float((value > 0) - (value < 0))


#: Spark functions the engine computes per row (``engine_first``), implemented here for navigated values.
_SPARK_FUNCTIONS: dict[str, ScalarFunction] = {
    "ARRAY_MAX": ScalarFunction(1, 1, _strict(_spark_max), returns="element", engine_first=True),
    "ARRAY_MIN": ScalarFunction(1, 1, _strict(_spark_min), returns="element", engine_first=True),
    "DIV": ScalarFunction(2, 2, _strict(_div), returns="bigint", engine_first=True),
    "TRY_ELEMENT_AT": ScalarFunction(2, 2, _strict(_try_element_at), returns="element", engine_first=True),
    "ARRAY_POSITION": ScalarFunction(2, 2, _strict(_array_position), returns="bigint", engine_first=True),
    "ARRAY_DISTINCT": ScalarFunction(1, 1, _strict(_array_distinct), returns="argument", engine_first=True),
    "ARRAY_SIZE": ScalarFunction(1, 1, _strict(len), returns="bigint", engine_first=True),
    "SIGNUM": ScalarFunction(1, 1, _strict(_signum), returns="double", engine_first=True),
    "SIGN": ScalarFunction(1, 1, _strict(_signum), returns="double", engine_first=True),
    "NVL": ScalarFunction(2, 2, _coalesce, null_safe=True, engine_first=True),
    "IFNULL": ScalarFunction(2, 2, _coalesce, null_safe=True, engine_first=True),
}

SCALAR_FUNCTIONS: dict[str, ScalarFunction] = {
    "COALESCE": ScalarFunction(1, None, _coalesce, null_safe=True),
    "NULLIF": ScalarFunction(2, 2, _nullif, null_safe=True, returns="argument"),
    "GREATEST": ScalarFunction(1, None, _greatest, null_safe=True),
    "LEAST": ScalarFunction(1, None, _least, null_safe=True),
    "ABS": ScalarFunction(1, 1, _strict(abs), returns="argument"),
    "MOD": ScalarFunction(2, 2, _strict(lambda a, b: sql_arith("%", a, b))),
    "FLOOR": ScalarFunction(1, 1, _strict(lambda x: x if isinstance(x, Integral) else type(x)(math.floor(x))),
                            returns="argument"),
    "CEIL": ScalarFunction(1, 1, _strict(lambda x: x if isinstance(x, Integral) else type(x)(math.ceil(x))),
                           returns="argument"),
    "ROUND": ScalarFunction(1, 2, _strict(_round), returns="argument"),
    "UPPER": ScalarFunction(1, 1, _strict(str.upper), returns="string"),
    "LOWER": ScalarFunction(1, 1, _strict(str.lower), returns="string"),
    "CHAR_LENGTH": ScalarFunction(1, 1, _strict(len), returns="bigint"),
    "LENGTH": ScalarFunction(1, 1, _strict(len), returns="bigint"),
    "CONCAT": ScalarFunction(1, None, _strict(_concat), returns="string"),
    "CONCAT_WS": ScalarFunction(1, None, _concat_ws, null_safe=True, returns="string"),
    "SUBSTRING": ScalarFunction(2, 3, _strict(_substring), returns="string"),
    "SUBSTR": ScalarFunction(2, 3, _strict(_substring), returns="string"),
    "TRIM": ScalarFunction(1, 1, _strict(lambda text: text.strip(" ")), returns="string"),
    "REPLACE": ScalarFunction(3, 3, _strict(lambda text, old, new: text.replace(old, new)), returns="string"),
    "SQRT": ScalarFunction(1, 1, _strict(_sqrt), returns="double"),
    "LN": ScalarFunction(1, 1, _strict(_ln), returns="double"),
    "EXP": ScalarFunction(1, 1, _strict(_exp), returns="double"),
    "POWER": ScalarFunction(2, 2, _strict(_power), returns="double"),
    "POW": ScalarFunction(2, 2, _strict(_power), returns="double"),
    "ARRAY": ScalarFunction(0, None, _array, null_safe=True, returns="array"),
    "CARDINALITY": ScalarFunction(1, 1, _strict(len), returns="bigint"),
    "SIZE": ScalarFunction(1, 1, _strict(len), returns="bigint"),
    "ELEMENT_AT": ScalarFunction(2, 2, _strict(_element_at), returns="element"),
    "ARRAY_CONTAINS": ScalarFunction(2, 2, _array_contains, null_safe=True, returns="boolean"),
    "CONTAINS": ScalarFunction(2, 2, _array_contains, null_safe=True, returns="boolean"),
    "ARRAY_JOIN": ScalarFunction(2, 3, _array_join, null_safe=True, returns="string"),
    "LIKE": ScalarFunction(2, 3, _strict(_like), returns="boolean"),  # also ``a [NOT] LIKE p [ESCAPE e]``
    "IF": ScalarFunction(2, 3, _if, null_safe=True, returns="branches"),
    "EQUAL_NULL": ScalarFunction(2, 2, _equal_null, null_safe=True, returns="boolean"),  # IS [NOT] DISTINCT FROM
    **_SPARK_FUNCTIONS,
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
