"""The temporal join's SQL syntax: ``JOIN r FOR SYSTEM_TIME AS OF l.t ON ...`` rewritten to the batch plan.

Each clause (found by :mod:`timeweave.core.temporal_sql`) is replaced by the shared batch plan as a
subquery.  A key whose left side is an expression (``ON upper(o.cur) = r.currency``) is computed first, as a
hidden column of the left relation (:func:`keyed_left_relation`) that the plan keys on and never outputs.
Chained joins nest: each one's left side is the plan of the joins before it (:func:`chained_onto`), whose
aliases it reads as struct columns; a left subquery holding temporal joins is rewritten first.  ``SELECT *``
over a chain is refused with its position (list the columns).

The subquery exposes the left and right columns flat and as struct columns named by the aliases, so
``l.col`` / ``r.col`` in the outer query keep working; a bare ``SELECT *`` of that query block becomes ``SELECT
* EXCEPT (l, r)``: the left columns, then the right columns (change metadata left out).  The versioned table's
key and time columns are listed only under names the left side leaves free (``o.k = r.k`` lists ``k`` once, as
``JOIN ... USING`` does); any other right column whose name the left side also has is listed twice under that
name, as Spark's ``*`` over a join lists it (Flink names the second ``v0``), so an unqualified reference to it
is ambiguous, as in SQL, while ``o.v`` / ``r.v`` each name their side's column.

Importing this module registers the rewriter with the SQL door (:mod:`timeweave.spark.sql_rewrite`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import DataFrame

from timeweave.core.errors import QuerySyntaxError, SpecError
from timeweave.core.spec import TemporalJoinSpec
from timeweave.core.sql_tokens import TokenType, tokenize
from timeweave.core.temporal_sql import CHAIN_TIME, TemporalJoinClause, find_temporal_joins
from timeweave.spark import render, sql_rewrite
from timeweave.spark.registration import versioned_relation, versioned_spec
from timeweave.spark.schema import schema_kinds


def rewrite_temporal_joins(spark: Any, query: str) -> str:
    """``query`` with each ``JOIN r FOR SYSTEM_TIME AS OF ...`` replaced by the batch plan (a subquery).

    Chained joins (``FROM o JOIN r FOR SYSTEM_TIME AS OF o.t AS r ON ... LEFT JOIN r1 FOR SYSTEM_TIME AS OF o.t
    AS r1 ON ...``) nest: each one's left side is the plan of the joins before it (:func:`chained_onto`), and the
    whole chain is replaced by the last plan.

    Example::

        print(rewrite_temporal_joins(spark, "SELECT ... JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON ..."))
    """
    edits: dict[int, tuple[int, str]] = {}  # the chain's first character -> (its end, its plan)
    stars: list[tuple[int, int, str]] = []
    plans = _plans(spark, query)
    spans = [(clause.start, clause.end) for _, clause, _ in plans]
    for _, clause, rendered in plans:
        if any(lo < clause.start and clause.end <= hi for lo, hi in spans):
            continue  # inside another join's left subquery: rewritten with it (:func:`_plans`)
        edits[clause.start] = (clause.end, rendered)
        if clause.chained:
            if clause.select_stars:
                raise QuerySyntaxError(
                    f"SELECT * over chained temporal joins ({', '.join((*clause.chain, clause.right_alias))}) is "
                    "not supported: list the columns, or each side's (o.*, r.*, ...)",
                    text=query, position=clause.select_stars[0])
            continue
        stars.extend(star_edits(clause))
    replaced = [(start, end, text) for start, (end, text) in edits.items()]
    for start, end, replacement in sorted(replaced + stars, reverse=True):
        query = query[:start] + replacement + query[end:]
    return query


def star_edits(clause: TemporalJoinClause) -> list[tuple[int, int, str]]:
    """``(start, end, text)`` edits of the query turning each bare ``*`` of the join's block into ``* EXCEPT
    (<aliases>)``: the rewritten join also exposes the aliases as struct columns (so ``o.col`` keeps working), and
    a bare ``*`` must not list them (the batch door's subquery and the streaming SQL door's rows alike).

    >>> from timeweave.core.temporal_sql import find_temporal_joins
    >>> [c] = find_temporal_joins("SELECT * FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.k = r.k")
    >>> star_edits(c)
    [(7, 8, '* EXCEPT (`o`, `r`)')]
    """
    hidden = ", ".join(render.quote(alias) for alias in (clause.left_alias, clause.right_alias))
    return [(star, star + 1, f"* EXCEPT ({hidden})") for star in clause.select_stars]


def _plans(spark: Any, query: str) -> list[tuple[int, TemporalJoinClause, str]]:
    """Each join of ``query`` (number, clause with its left side as Spark SQL, its plan as SQL): a chained
    join's left side is the plan of the joins before it; a left subquery holding temporal joins of its own
    (``FROM (SELECT ... JOIN r FOR SYSTEM_TIME AS OF ...) AS j JOIN r1 FOR SYSTEM_TIME AS OF j.t ...``) is
    rewritten first."""
    plans: list[tuple[int, TemporalJoinClause, str]] = []
    for n, clause in enumerate(find_temporal_joins(query), start=1):
        if clause.chained:
            clause = chained_onto(clause, plans[-1][2])
        elif find_temporal_joins(clause.left_relation):
            clause = replace(clause, left_relation=rewrite_temporal_joins(spark, clause.left_relation))
        plans.append((n, clause, _render_clause(spark, clause, n)))
    return plans


def bound_clauses(spark: Any, query: str) -> list[BoundClause]:
    """Every join of ``query`` bound to its sides (:func:`bind_clause`; a chained join's left side is the plan of
    the joins before it), in order: what the SQL door's dead letters read."""
    return [bind_clause(spark, clause, n) for n, clause, _ in _plans(spark, query)]


def chained_onto(clause: TemporalJoinClause, previous: str) -> TemporalJoinClause:
    """A chained join whose left side is ``previous`` (the plan of the joins before it, ``(...) AS __tw_join<n>``):
    the earlier aliases' struct columns and the AS OF expression, computed as :data:`CHAIN_TIME`.  The extra
    predicate reads the earlier aliases through the chain's alias (the plan's predicate sees the sides as
    structs).

    >>> [_, c] = find_temporal_joins("SELECT 1 FROM o JOIN a FOR SYSTEM_TIME AS OF o.t AS r ON o.k = r.k "
    ...                              "JOIN b FOR SYSTEM_TIME AS OF o.t AS r1 ON o.k = r1.k AND r.x < r1.x")
    >>> c = chained_onto(c, "(plan) AS __tw_join1")
    >>> print(c.left_relation)
    (SELECT `o`, `r`, o.t AS `__tw_as_of` FROM (plan) AS __tw_join1)
    >>> c.left_alias, c.left_time, c.key_pairs, c.predicate
    ('__tw_chain2', '__tw_as_of', (('o.k', 'k'),), '`__tw_chain2`.r.x < r1.x')
    """
    aliases = ", ".join(render.quote(alias) for alias in clause.chain)
    relation = f"(SELECT {aliases}, {clause.time_expression} AS {render.quote(CHAIN_TIME)} FROM {previous})"
    return replace(clause, left_relation=relation,
                   conditions=tuple(_through(c, clause.chain, clause.left_alias) for c in clause.conditions))


def _through(condition: str, aliases: tuple[str, ...], chain: str) -> str:
    """``condition`` with each ``<alias>.`` of an earlier join read through the chain's struct column."""
    tokens = tokenize(condition)
    edits = [t.start for i, t in enumerate(tokens)
             if t.type in (TokenType.WORD, TokenType.QUOTED) and t.name in aliases and i + 1 < len(tokens)
             and tokens[i + 1].text == "." and (i == 0 or tokens[i - 1].text != ".")]
    for at in reversed(edits):
        condition = f"{condition[:at]}{render.quote(chain)}.{condition[at:]}"
    return condition


def keyed_left_relation(clause: TemporalJoinClause) -> str:
    """The clause's left relation as SQL text, with each key expression computed as a hidden column named
    by the expression (the join keys on it; the plan never outputs it; a dead letter's reason names it).

    >>> from timeweave.core.temporal_sql import find_temporal_joins
    >>> [c] = find_temporal_joins("SELECT o.id FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
    ...                           "ON upper(o.cur) = r.cur")
    >>> print(keyed_left_relation(c))
    (SELECT *, upper(o.cur) AS `upper(o.cur)` FROM orders AS `o`)
    """
    if not clause.key_expressions:
        return clause.left_relation
    # The expressions are the user's own SQL over the left alias, computed where that alias is in scope.
    hidden = ", ".join(f"{k.left_expression} AS {render.quote(k.left_name)}" for k in clause.key_expressions)
    return f"(SELECT *, {hidden} FROM {clause.left_relation} AS {render.quote(clause.left_alias)})"


@dataclass(frozen=True)
class BoundClause:
    """Join #n of a query bound to its tables: the clause with its keys resolved against the versioned
    table's key (:meth:`TemporalJoinClause.for_key`), the spec checked against both sides, and the sides."""

    clause: TemporalJoinClause
    spec: TemporalJoinSpec
    left: DataFrame
    right: DataFrame


def bind_clause(spark: Any, clause: TemporalJoinClause, n: int) -> BoundClause:
    """Join #``n`` of a query with its spec (checked against both sides) and its two sides as DataFrames.

    The left DataFrame carries the clause's hidden key columns last (:func:`keyed_left_relation`); the spec
    keys on them.  Right columns named like a left column are not in the spec's outputs (the SQL door lists
    them beside the left ones: :func:`_render_clause`), so the check of colliding outputs passes.
    """
    where = f"temporal join #{n} ({clause.right_name} AS {clause.right_alias})"
    versioned = versioned_spec(spark, clause.right_name)
    if versioned is None:
        raise SpecError(
            "versioned",
            f"'{clause.right_name}' is not a versioned table: register it with timeweave.versioned_table(..., name=...) "
            "or timeweave.register_versioned(...), or set timeweave.key / timeweave.time table properties",
            where=where,
        )
    clause, left_key, predicate = clause.join_keys(versioned.key, where)
    left_df = _left_side(spark, clause, where)
    right_df = spark.table(_versions_of(spark, clause))
    left_kinds, right_kinds = schema_kinds(left_df.schema), schema_kinds(right_df.schema)
    spec = TemporalJoinSpec(
        versioned, left_time=clause.left_time, left_key=left_key, how=clause.how,
        right_columns=[c for c in versioned.payload_columns(right_kinds) if c not in left_kinds],
        predicate=predicate, where=where,
    )
    spec.bind(left_kinds, right_kinds)
    return BoundClause(clause, spec, left_df, right_df)


def hidden_columns(clause: TemporalJoinClause) -> tuple[str, ...]:
    """The hidden key columns :func:`bind_clause`'s left DataFrame ends with (none for plain column keys)."""
    return tuple(k.left_name for k in clause.key_expressions)


def _left_side(spark: Any, clause: TemporalJoinClause, where: str) -> DataFrame:
    """The left relation with its hidden key columns, resolved now, so a bad key expression is named here."""
    hidden = hidden_columns(clause)
    try:
        left_df = spark.sql(f"SELECT * FROM {keyed_left_relation(clause)} AS __tw_probe")
        columns = left_df.columns
    except Exception as error:
        if not hidden:
            raise
        spark.sql(f"SELECT * FROM {clause.left_relation} AS __tw_probe").columns  # noqa: B018 - its own error first
        raise SpecError(
            "ON", f"the key expression(s) {list(hidden)} do not resolve over the left side "
            f"{clause.left_alias} ({str(error).splitlines()[0]})", where=where,
        ) from error
    taken = [c for c in hidden if c in columns[: len(columns) - len(hidden)]]
    if taken:
        raise SpecError(
            "ON", f"the left side already has a column named like the key expression {taken[0]!r}; "
            "rename that column or write the expression differently", where=where,
        )
    return left_df


def _versions_of(spark: Any, clause: TemporalJoinClause) -> str:
    """The relation holding the right side's versions: a versioned view's history, else the table as written."""
    history = versioned_relation(spark, clause.right_name)
    return render.quote(history) if history else clause.right_name


def exposed_spec(bound: BoundClause) -> TemporalJoinSpec:
    """The spec of the SQL door's shape of join ``bound``: the right columns it lists flat beside the left ones.

    The versioned table's key and time columns are listed flat only under a name the left side leaves free
    (as before: `SELECT ts` and `SELECT *` of a query that ran keep their meaning); its other columns are
    listed flat also under a name the left side has (as Spark's `*` over a join), so only a reference to such
    a name without its alias is ambiguous.  The streaming SQL door shapes its joined rows by the same spec.
    """
    spec, right_columns = bound.spec, bound.right.columns
    versioned = spec.versioned
    left_columns = bound.left.columns[: len(bound.left.columns) - len(hidden_columns(bound.clause))]
    own = {*versioned.key, versioned.time}
    flat_right = [
        c for c in right_columns if c not in versioned.meta_columns and not (c in own and c in left_columns)
    ]
    return TemporalJoinSpec(
        versioned, left_time=spec.left_time, left_key=spec.left_key, how=spec.how, right_columns=flat_right,
        predicate=spec.predicate, where=spec.where,
    )


def _render_clause(spark: Any, clause: TemporalJoinClause, n: int) -> str:
    bound = bind_clause(spark, clause, n)
    clause, left_df, right_df = bound.clause, bound.left, bound.right
    spec = exposed_spec(bound)
    hidden = hidden_columns(clause)
    left_columns = left_df.columns[: len(left_df.columns) - len(hidden)]
    body = render.temporal_join_sql(
        spec, f"{keyed_left_relation(clause)} AS __tw_left{n}", _versions_of(spark, clause), left_columns,
        right_df.columns, left_alias=clause.left_alias, right_alias=clause.right_alias, nested=True,
        time_domain=spec.time_domain(schema_kinds(left_df.schema), schema_kinds(right_df.schema)),
    )
    return f"({body}) AS __tw_join{n}"


sql_rewrite.register(sql_rewrite.ClauseRewriter("temporal join", 20, rewrite_temporal_joins))

__all__ = ["BoundClause", "bind_clause", "bound_clauses", "chained_onto", "exposed_spec", "hidden_columns",
           "keyed_left_relation", "rewrite_temporal_joins", "star_edits"]
