"""Render the batch plan's macros (``timeweave/spark/timeweave_sql.sql``, beside this module) from Python.

The batch doors (DataFrame, SQL, backfill) and dbt models render the same Jinja plan, so there is one
plan.  This file is its source; the dbt package ships a generated copy (``python -m
timeweave.dbt_package.generate``), so nothing here reads the dbt package.  The plan reads the core's
constants (op codes, dead-letter reasons) through :data:`CORE_MACROS`, which the dbt package has generated
as macros.  This module imports no pyspark: it only produces SQL text.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from timeweave.core.bad_rows import REJECT_REASONS
from timeweave.core.changelog import DELETE_OPS, UPSERT_OPS
from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
from timeweave.core.sql_tokens import split_qualified_name

#: The plan's source (package data, shipped in the wheel beside this module).
PLAN_FILE = Path(__file__).resolve().parent / "timeweave_sql.sql"


def core_macros() -> dict[str, Any]:
    """The core's constants the plan reads, by the macro name it calls (``timeweave.timeweave__reasons()``).

    Python renders them from the core; the dbt package's ``macros/_timeweave_core.sql`` is generated from
    this same mapping, each a macro returning its value.

    >>> core_macros()["timeweave__reasons"]["null_key"]
    'NULL key column {column}'
    """
    return {
        "timeweave__upsert_ops": list(UPSERT_OPS),
        "timeweave__delete_ops": list(DELETE_OPS),
        "timeweave__reasons": dict(REJECT_REASONS),
    }


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


class MacroNamespace:
    """``timeweave.<macro>`` inside a plan file (dbt's package namespace, mirrored): the core's constants
    (:func:`core_macros`), then the macros of each plan module ``files`` gives, in order.

    Both plans (this one and the window plan, :mod:`timeweave.spark.window_render`) resolve their calls
    through it, as dbt resolves them in its one package namespace.

    >>> str(MacroNamespace(_macros).timeweave__q("a`b"))
    '`a``b`'
    >>> MacroNamespace().timeweave__reasons()["null_time"]
    'NULL time column {column}'
    """

    def __init__(self, *files: Callable[[], Any]) -> None:
        self._files = files

    def __getattr__(self, name: str) -> Any:
        core = core_macros()  # fresh values per call: a template cannot change the core's
        if name in core:
            return _constant(core[name])
        for file in self._files:
            found = getattr(file(), name, None)
            if found is not None and not isinstance(found, jinja2.Undefined):
                return found
        raise AttributeError(f"no macro {name!r} in the plan files")


def plan_module(path: Path, *files: Callable[[], Any]) -> Any:
    """The Jinja module of the plan file ``path``, its ``timeweave.<macro>`` calls resolved by a
    :class:`MacroNamespace` over ``files`` (the file's own module first, when it calls its own macros)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, extensions=["jinja2.ext.do"])  # dbt enables "do" too
    env.globals["timeweave"] = MacroNamespace(*files)
    return env.from_string(path.read_text()).module


@cache
def _macros() -> Any:
    return plan_module(PLAN_FILE, _macros)


def macro(name: str, *args: Any, **kwargs: Any) -> str:
    """Render one macro of the plan file to SQL text.

    >>> macro("timeweave__q", "odd`name")
    '`odd``name`'
    """
    return str(getattr(_macros(), name)(*args, **kwargs)).strip()


@cache
def quote(name: str) -> str:
    """A column name or alias as a quoted SQL identifier (the plan file's ``timeweave__q``: one rule).

    Every identifier that comes from users or data (CSV headers, inferred JSON schemas) goes through this
    before it is part of SQL text or of a ``F.col``/``F.expr`` string.

    >>> quote("a.b`c")
    '`a.b``c`'
    """
    return macro("timeweave__q", name)


def qualified(name: str, *, where: str | None = None) -> str:
    """A table name as written in SQL (``db.tbl``, ```odd``name```) re-rendered with every part quoted.

    Each part goes through :func:`quote` (backquoted, backquotes doubled), so the text can only name a
    table; text that is not a dotted name raises :class:`~timeweave.core.errors.SpecError` instead of
    reaching the statement.

    >>> qualified("db.`odd``name`")
    '`db`.`odd``name`'
    """
    return ".".join(quote(part) for part in split_qualified_name(name, where=where))


@cache
def sql_string(text: str) -> str:
    """``text`` as a SQL STRING expression whose SQL text holds none of its characters (``timeweave__str``).

    Text outside ``[A-Za-z0-9_ ]`` becomes ``CAST(X'<UTF-8 hex>' AS STRING)``: no reliance on Spark's
    string escapes (which ``spark.sql.parser.escapedStringLiterals`` changes), and still a constant, so it
    is accepted as a ``named_struct`` field name or a UDTF's constant argument.

    >>> sql_string("NULL key column k")
    "'NULL key column k'"
    >>> sql_string("k'")
    "CAST(X'6B27' AS STRING)"
    """
    return macro("timeweave__str", text)


_TOKEN = secrets.token_hex(8)  # per process: no column name can contain it by chance
_PLACEHOLDER = re.compile(rf"__tw_rel_{_TOKEN}_(\w+)")


def relation(name: str) -> str:
    """A stand-in for the relation ``spark.sql(query, name=df)`` will fill, in SQL rendered for :func:`formattable`.

    >>> formattable(f"SELECT `{{odd}}` FROM {relation('left')}")
    'SELECT `{{odd}}` FROM {left}'
    """
    return f"__tw_rel_{_TOKEN}_{name}"


def formattable(sql: str) -> str:
    """``sql`` ready for ``spark.sql(sql, **dataframes)``, which runs ``str.format`` over the whole text.

    Every brace is doubled (column names and predicates may hold braces: ``{x}`` would name an argument),
    then the :func:`relation` stand-ins become the ``{name}`` fields.
    """
    return _PLACEHOLDER.sub(r"{\1}", sql.replace("{", "{{").replace("}", "}}"))


def _versioned_kwargs(spec: VersionedTableSpec) -> dict[str, Any]:
    return {
        "format": spec.format.value, "op": spec.op, "delete_flag": spec.delete_flag, "sequence": spec.sequence,
        "upsert_ops": list(UPSERT_OPS), "delete_ops": list(DELETE_OPS),
    }


def _finalize_kwargs(spec: TemporalJoinSpec, right_columns: Sequence[str], left_alias: str, right_alias: str) -> dict[str, Any]:
    """The arguments of the finalize step (join type, predicate, projection, validity), shared by both plans."""
    validity = spec.validity
    return {
        "output_right": [list(p) for p in spec.output_right_columns(dict.fromkeys(right_columns, "other"))],
        "how": spec.how.value, "predicate": spec.predicate, "left_alias": left_alias, "right_alias": right_alias,
        "valid_from": validity.valid_from if validity else None,
        "valid_to": validity.valid_to if validity else None,
    }


def temporal_join_sql(
    spec: TemporalJoinSpec,
    left: str,
    right: str,
    left_columns: Sequence[str],
    right_columns: Sequence[str],
    *,
    left_alias: str = "l",
    right_alias: str = "r",
    nested: bool = False,
    time_domain: str = "timestamp",
) -> str:
    """The whole batch plan for ``spec`` over two relations given as SQL text.

    ``time_domain`` is both time columns' (:meth:`TemporalJoinSpec.time_domain
    <timeweave.core.spec.TemporalJoinSpec.time_domain>`, from the sides' schemas).

    >>> from timeweave.core.spec import TemporalJoinSpec, VersionedTableSpec
    >>> spec = TemporalJoinSpec(VersionedTableSpec("k", "t"), left_time="ts", how="left")
    >>> sql = temporal_join_sql(spec, "orders", "rates", ["id", "k", "ts"], ["k", "t", "rate"])
    >>> "explode(sequence(" in sql and "FROM orders" in sql
    True
    """
    return macro(
        "timeweave__temporal_join_sql",
        left, right, list(left_columns), list(right_columns), list(spec.left_key), spec.left_time,
        list(spec.versioned.key), spec.versioned.time,
        nested=nested, time_domain=time_domain, **_finalize_kwargs(spec, right_columns, left_alias, right_alias),
        **_versioned_kwargs(spec.versioned),
    )


def versions_sql(
    what: str, spec: VersionedTableSpec, right: str, right_columns: Sequence[str], *, stats: str | None = None,
    time_domain: str = "timestamp",
) -> str:
    """The right half of the plan over ``right``: ``what="stats"`` (per-key bucket statistics) or ``"intervals"``.

    ``right_columns`` are the columns a version carries to the probe; ``stats`` (intervals only) names
    statistics already built from the same ``right``, so the intervals do not derive them again.

    >>> from timeweave.core.spec import VersionedTableSpec
    >>> "LEAD(__tw_t)" in versions_sql("intervals", VersionedTableSpec("k", "t"), "rates", ["k", "t", "rate"])
    True
    >>> "FROM built_stats" in versions_sql("intervals", VersionedTableSpec("k", "t"), "rates", ["rate"], stats="built_stats")
    True
    """
    return macro(
        "timeweave__versions_sql", what, right, list(right_columns), list(spec.key), spec.time, stats=stats,
        time_domain=time_domain, **_versioned_kwargs(spec),
    )


def probe_join_sql(
    spec: TemporalJoinSpec, left: str, stats: str, intervals: str, left_columns: Sequence[str], right_columns: Sequence[str],
    *, time_domain: str = "timestamp",
) -> str:
    """The left half: ``left`` joined against relations :func:`versions_sql` built (same rows as the one-query plan)."""
    return macro(
        "timeweave__probe_join_sql", left, stats, intervals, list(left_columns), list(right_columns), list(spec.left_key),
        spec.left_time, list(spec.versioned.key), time_domain=time_domain, **_finalize_kwargs(spec, right_columns, "l", "r"),
    )


def finalize_sql(
    spec: TemporalJoinSpec,
    matched: str,
    left_columns: Sequence[str],
    right_columns: Sequence[str],
    *,
    left_alias: str = "l",
    right_alias: str = "r",
    nested: bool = False,
) -> str:
    """Join type + predicate + projection over a relation with columns ``__tw_l`` and ``__tw_v``; ``nested``: each
    side also as a struct named by its alias (the SQL door's shape)."""
    sql = macro(
        "timeweave__finalize_sql", matched, list(left_columns), list(right_columns),
        **_finalize_kwargs(spec, right_columns, left_alias, right_alias), nested=nested,
    )
    return f"SELECT * EXCEPT (__tw_matched) FROM ({sql}) __tw_out"


def versioned_view_sql(
    spec: VersionedTableSpec, relation: str, columns: Sequence[str], valid_from: str = "valid_from", valid_to: str = "valid_to",
    time_domain: str = "timestamp",
) -> str:
    """One row per version with its validity interval."""
    return macro(
        "timeweave__versioned_view_sql", relation, list(columns), list(spec.key), spec.time,
        valid_from=valid_from, valid_to=valid_to, time_domain=time_domain, **_versioned_kwargs(spec),
    )


def deleted_expression(spec: VersionedTableSpec) -> str:
    """SQL boolean: is a right row a delete (NULL: unknown op)."""
    kw = _versioned_kwargs(spec)
    return macro("timeweave__deleted_expr", kw["format"], kw["op"], kw["delete_flag"], kw["upsert_ops"], kw["delete_ops"])


def reject_reason_expression(side: str, key: Sequence[str], time: str, spec: VersionedTableSpec | None = None) -> str:
    """SQL string expression: why a row goes to the dead letter (NULL: it is fine)."""
    kwargs: dict[str, Any] = _versioned_kwargs(spec) if spec is not None and side == "right" else {}
    kwargs.pop("sequence", None)
    return macro("timeweave__reject_reason", side, list(key), time, **kwargs)
