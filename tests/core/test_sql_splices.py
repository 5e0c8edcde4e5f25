"""No identifier or text is spliced into generated SQL without the quoting rule.

Table and column names come from users and from data (CSV headers, inferred JSON schemas, catalog names); a
name spliced into SQL text as it is can change what the statement does (issue 20: ``SHOW TBLPROPERTIES
{name}``).  This lint walks the product code's syntax trees and fails on every f-string, ``%`` format,
``.format`` call or ``+`` concatenation that builds SQL (its literal text holds a SQL keyword, or it is the
argument of ``.sql`` / ``F.expr`` / ``selectExpr`` / ``where`` / ``filter``) and splices a value that is not
the result of a quoting function (``render.quote``, ``render.qualified``, ``render.sql_string``,
``render.relation``).  A reviewed splice (a constant, the user's own query text, a plan already rendered
under the rule) is listed in ``ALLOWED`` with the reason; an allowance whose code is gone fails too.

The Jinja plans (``timeweave_sql.sql``, ``timeweave_windows_sql.sql``, the dbt macros) are checked by
rendering them with hostile names: ``tests/spark/test_hostile_identifiers.py``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("runtime", "airflow_plugin", "dbt_timeweave", "dags")

#: Functions whose result is safe to splice: they quote identifiers / render text as inert constants.
QUOTING = {"quote", "qualified", "sql_string", "relation", "_quote", "q"}
#: Calls that take SQL text.
SINKS = {"sql", "expr", "selectExpr", "where", "filter"}
_SQLISH = re.compile(
    r"\b(SELECT|FROM|WHERE|SHOW|TBLPROPERTIES|DESCRIBE|INSERT|DROP|ALTER|CREATE|JOIN|UNION|EXCEPT|named_struct)\b"
    r"|\bCAST\(")

#: Reviewed splices: (file, enclosing function, spliced expression) -> why it cannot carry a name or text.
ALLOWED = {
    ("runtime/jobs/sql_script.py", "sink_rows", "insert.table"): "error messages only (the target's name)",
    ("runtime/jobs/sql_script.py", "sink_rows", "missing[0]"): "an error message",
    ("runtime/jobs/sql_script.py", "sink_rows", "[c.name for c in physical]"): "an error message",
    ("runtime/jobs/sql_script.py", "sink_rows", "len(rows.columns)"): "an error message",
    ("runtime/jobs/sql_script.py", "sink_rows", "len(targets)"): "an error message",
    ("runtime/jobs/sql_script.py", "sink_rows", "[c.name for c in targets]"): "an error message",
    ("runtime/core/temporal_function_sql.py", "_rewrite_one", "call.time_text"):
        "the time argument as the user wrote it in their own query (SQL text by definition)",
    ("runtime/core/temporal_function_sql.py", "_rewrite_one", "call.alias"):
        "the alias token as the user wrote it in their query (quoted or not, as written); also error messages",
    ("runtime/core/temporal_function_sql.py", "_rewrite_one", "call.function.text"): "error messages only",
    ("runtime/core/temporal_function_sql.py", "_rewrite_one", "function.key[0]"): "error messages only",
    ("runtime/core/temporal_function_sql.py", "_rewrite_one", "kept"):
        "the user's own WHERE terms, re-joined by AND (SQL text by definition)",
    ("runtime/core/temporal_function_sql.py", "_rewrite_one", "condition"):
        "the user's own ON / WHERE terms, re-joined by AND (SQL text by definition)",
    ("runtime/core/temporal_function_sql.py", "_rewrite_one", "function.table"):
        "the registry's view name __tw_ttf_<name>, name checked to be an identifier (spark/temporal_functions.py)",
    ("runtime/core/windows/legacy_sql.py", "_relation", "window"): "one of the fixed names TUMBLE / HOP / SESSION",
    ("runtime/core/windows/legacy_sql.py", "_relation", "why"): "an error message",
    ("runtime/core/windows/legacy_sql.py", "_rewrite_block", "window"):
        "one of the fixed names TUMBLE / HOP / SESSION",
    ("runtime/core/windows/legacy_sql.py", "_rewrite_block", "relation"):
        "the FROM relation as the user wrote it in their own query (SQL text by definition)",
    ("runtime/core/windows/legacy_sql.py", "_rewrite_block", "' ' + alias if alias else ''"):
        "the relation's alias as the user wrote it",
    ("runtime/core/windows/legacy_sql.py", "_rewrite_block", "text[tokens[where_at + 1].start:tokens[group - 1].end]"):
        "the user's own WHERE condition, moved into the TVF's input subquery",
    ("runtime/core/windows/legacy_sql.py", "_rewrite_block", "tvf"):
        "the window TVF call built from the user's own arguments and the fixed function name",
    ("runtime/core/windows/calls.py", "<module>", "_NAME"):
        "a regular expression (the aggregate-text reader's name pattern), never SQL sent to Spark",
    ("runtime/core/windows/calls.py", "parse_aggregate", "text"):
        "an error message quoting the user's aggregate text (repr), never SQL sent to Spark",
    ("runtime/core/windows/calls.py", "parse_aggregate", "', '.join(_FUNCTIONS)"):
        "an error message listing the fixed function names",
    ("runtime/core/pattern/expr.py", "_sql_literal", "value"):
        "a Decimal printed into the MATCH_RECOGNIZE clause text, which only the core's lexer reads back",
    ("runtime/core/pattern/expr.py", "__str__", "self.operand"):
        "the clause printer: an expression node printed under the clause grammar's own quoting (core lexer)",
    ("runtime/core/pattern/expr.py", "__str__", "self.type_name"): "one of the parser's fixed TYPE_NAMES",
    ("runtime/core/pattern/parser.py", "primary_expression", "word.lower()"):
        "one of the keywords CURRENT_TIMESTAMP / CURRENT_DATE, checked just above",
    ("runtime/spark/dataframe.py", "dead_letters", "fields"):
        "built from render.sql_string(c) and render.quote(c) pairs two lines above",
    ("runtime/spark/dataframe.py", "dead_letters", "kept"): "render.quote(carry) or empty",
    ("runtime/spark/dataframe.py", "dead_letters", "reason"): "the plan's reject-reason macro (names quoted there)",
    ("runtime/spark/dataframe.py", "dead_letters", "output"): "a constant ' AND false' or empty",
    ("runtime/spark/match_recognize.py", "rewrite_match_recognize", "UDTF_NAME"): "a constant",
    ("runtime/spark/match_recognize.py", "rewrite_match_recognize", "found.relation"):
        "the input relation as the user wrote it in their own query (SQL text by definition)",
    ("runtime/spark/render.py", "finalize_sql", "sql"): "a plan this module rendered under the quoting rule",
    ("runtime/spark/sql_door.py", "dead_letters", "found.relation"):
        "the MATCH_RECOGNIZE input as the user wrote it in their own query (SQL text by definition)",
    ("runtime/spark/temporal_join_sql.py", "star_edits", "hidden"):
        "the aliases joined after render.quote, one line above",
    ("runtime/spark/temporal_join_sql.py", "rewrite_temporal_joins", "', '.join((*clause.chain, clause.right_alias))"):
        "an error message naming the chain's aliases",
    ("runtime/spark/temporal_join_sql.py", "chained_onto", "aliases"):
        "the earlier joins' aliases, each through render.quote one line above",
    ("runtime/spark/temporal_join_sql.py", "chained_onto", "clause.time_expression"):
        "the AS OF expression as the user wrote it in their own query (SQL text by definition)",
    ("runtime/spark/temporal_join_sql.py", "chained_onto", "previous"):
        "the previous join's plan, rendered under the quoting rule by _render_clause",
    ("runtime/spark/temporal_join_sql.py", "keyed_left_relation", "clause.left_relation"):
        "the left relation as the user wrote it in their own query (SQL text by definition)",
    ("runtime/spark/temporal_join_sql.py", "keyed_left_relation", "hidden"):
        "the user's own key expressions from their ON clause, each named by render.quote one line above",
    ("runtime/spark/temporal_join_sql.py", "_left_side", "clause.left_relation"):
        "the left relation as the user wrote it in their own query (SQL text by definition)",
    ("runtime/spark/temporal_join_sql.py", "_left_side", "keyed_left_relation(clause)"):
        "the user's left relation and key expressions, names quoted in keyed_left_relation",
    ("runtime/spark/temporal_join_backfill.py", "_run", "reject_reason(spec, 'right')"):
        "the plan's reject-reason macro (names quoted there)",
    ("runtime/core/windows/aggregate_sql.py", "_recognise", "call.function"):
        "a reason the SQL door's window aggregation is not sliced (TUMBLE / HOP...), never SQL sent to Spark",
    ("runtime/core/windows/aggregate_sql.py", "_recognise", "tokens[select + 1].text"):
        "a reason the SQL door's window aggregation is not sliced (the query's own word), never SQL sent to Spark",
    ("runtime/spark/windows.py", "block_select", "', '.join(selected)"):
        "the select list built from render.quote(column) AS render.quote(name) pairs one line above",
    ("runtime/spark/windows.py", "block_select", "relation"):
        "a plan rendered under the quoting rule, or a render.quote'd view name, with a fixed alias (the callers)",
    ("runtime/spark/windows.py", "block_names", "tvf_sql"):
        "the window TVF plan rendered by window_render under the quoting rule",
    ("runtime/spark/windows.py", "block_names", "query[shape.start:call.start]"):
        "the user's own query text (SQL by definition)",
    ("runtime/spark/windows.py", "block_names", "query[call.end:shape.end]"):
        "the user's own query text (SQL by definition)",
    ("runtime/jobs/sql_script.py", "_insert", "insert.table"): "error messages only (the target's name)",
    ("runtime/jobs/sql_script.py", "check_script", "insert.table"): "error messages only (the target's name)",
    ("runtime/core/windows/rank_sql.py", "_ranking_item", "q.tokens[select + 1].text"):
        "an error message quoting the user's own query (a positioned Declined), never SQL sent to Spark",
    ("runtime/core/windows/rank_sql.py", "_ranking_item", "r.text(a, b)[:60]"): "the same error message",
    ("runtime/core/windows/rank_sql.py", "_rank_bound", "found"): "an error message quoting the user's query",
    ("runtime/core/windows/rank_sql.py", "_rank_bound", "alias"): "error messages naming the user's rank alias",
    ("runtime/core/windows/rank_sql.py", "_rank_bound", "error.message"): "an error message (RankRange's own)",
    ("runtime/core/windows/rank_sql.py", "_recognise", "function.text"):
        "an error message quoting the ranking function's name as the user wrote it",
    ("runtime/core/windows/join_sql.py", "_side", "which"): "an error message (the fixed word left / right)",
    ("runtime/spark/sql_streaming.py", "_window_join", "structs[0]"):
        "a side's struct rendered by _side_struct (names through render.quote / render.sql_string)",
    ("runtime/spark/sql_streaming.py", "_window_join", "structs[1]"): "the same, for the right side",
    ("runtime/spark/sql_streaming.py", "_side_struct", "', '.join(fields)"):
        "named_struct arguments, each a render.sql_string name and a render.quote column",
    ("runtime/spark/sql_streaming.py", "streaming_sql", "', '.join((kind for _, kind, _ in found))"):
        "an error message naming the operators found (fixed words)",
    ("runtime/spark/sql_streaming.py", "_streaming_table", "what"): "an error message (a fixed operator name)",
    ("runtime/spark/sql_streaming.py", "_streaming_table", "name"): "an error message naming the relation",
    ("runtime/spark/sql_streaming.py", "_streaming_table", "name[:40]"): "an error message naming the relation",
    ("runtime/spark/sql_streaming.py", "_window_aggregation", "shape.reason"): "an error message",
    ("runtime/spark/sql_streaming.py", "_temporal_join", "side"):
        "an error message (a fixed word, or the versioned table's name as written)",
    ("runtime/spark/windows.py", "_input", "relation"):
        "the TVF's data argument as the user wrote it in their own query, or its rewritten subquery",
    ("runtime/core/updates/group_sql.py", "column", "span[0].text"):
        "an error message quoting the user's own query (a positioned QuerySyntaxError), never SQL sent to Spark",
    ("runtime/core/updates/group_sql.py", "column", "span[2].text"): "the same error message",
    ("runtime/core/updates/group_sql.py", "_spark_name", "name"):
        "an output column's name (Spark's name for an unnamed aggregate), quoted wherever it reaches SQL",
    ("runtime/core/updates/group_sql.py", "_spark_name", "condition"): "the same output column name",
    ("runtime/core/updates/group_sql.py", "_aggregate", "name"): "the same output column name",
    ("runtime/core/updates/group_sql.py", "_aggregate", "condition"): "the same output column name",
    ("runtime/core/updates/group_sql.py", "_item", "q.span(lo, hi)"):
        "an error message quoting the user's own query, never SQL sent to Spark",
    ("runtime/core/updates/group_sql.py", "_relation", "tok.text"): "an error message quoting the user's own query",
    ("runtime/core/updates/group_sql.py", "_relation", "found.text"): "an error message quoting the user's own query",
    ("runtime/core/updates/group_sql.py", "parse_group_aggregate_query", "tokens[1].text"):
        "an error message quoting the user's own query",
    ("runtime/core/updates/group_sql.py", "parse_group_aggregate_query", "tokens[j].text"):
        "an error message quoting the user's own query",
    ("runtime/jobs/group_aggregate.py", "describe", "job.where"):
        "the job's one-line description quoting the user's own WHERE condition, never SQL sent to Spark",
    ("runtime/spark/group_aggregate_streaming.py", "where_rows", "condition"):
        "an error message quoting the user's own WHERE condition (Spark evaluates the text itself, unspliced)",
    ("runtime/spark/group_aggregate_streaming.py", "where_rows", "first"): "Spark's error in the same message",
    ("runtime/spark/windows.py", "window_tvf_dead_letters", "call.relation"):
        "the TVF's data argument as the user wrote it in their own query (SQL text by definition)",
    ("runtime/core/ddl/table.py", "error", "self.name"):
        "an error message naming the DDL table (CREATE TABLE <name>: ...), never SQL sent to Spark",
    ("runtime/core/ddl/table.py", "error", "message"): "the error message's text, never SQL sent to Spark",
    ("runtime/core/ddl/table.py", "parse_create_table", "name"): "an error message naming the DDL table",
    ("runtime/core/ddl/table.py", "parse_create_table", "clause"): "an error message naming PARTITIONED BY / LIKE",
    ("runtime/core/ddl/table.py", "parse_create_table", "cursor.describe()"):
        "an error message quoting the token found (repr), never SQL sent to Spark",
    ("runtime/core/ddl/view.py", "parse_create_view", "name"): "an error message naming the DDL view",
    ("runtime/spark/ddl.py", "create_table", "name"): "the spec's where= label (CREATE TABLE <name>), never SQL",
    ("runtime/spark/ddl.py", "create_view", "name"): "the spec's where= label (CREATE VIEW <name>), never SQL",
    ("runtime/spark/ddl.py", "_view_error", "view.name"): "an error message naming the DDL view",
    ("runtime/spark/ddl.py", "_view_error", "message"): "the error message's text, never SQL sent to Spark",
    ("runtime/spark/ddl.py", "_exists", "name"): "an error message naming the taken view name",
    ("runtime/spark/ddl.py", "_changelog_rows", "source.database_include"):
        "canal-json's database.include regular expression, anchored for Column.rlike (a regex, not SQL text)",
    ("runtime/spark/ddl.py", "_changelog_rows", "source.table_include"):
        "canal-json's table.include regular expression, anchored for Column.rlike (a regex, not SQL text)",
}


@dataclass(frozen=True)
class Splice:
    path: str
    line: int
    function: str
    expression: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} (in {self.function}): {self.expression} spliced into SQL"


def _name(func: ast.AST) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _safe(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) or (isinstance(node, ast.Call) and _name(node.func) in QUOTING))


def _literal_text(node: ast.AST) -> str:
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp):
        return _literal_text(node.left) + _literal_text(node.right)
    return ""


class _Checker(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.functions = ["<module>"]
        self.splices: list[Splice] = []
        self.in_sink = 0

    def _add(self, node: ast.AST) -> None:
        self.splices.append(Splice(self.path, getattr(node, "lineno", 0), self.functions[-1], ast.unparse(node)))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        sink = _name(node.func) in SINKS and bool(node.args)
        if (isinstance(node.func, ast.Attribute) and node.func.attr == "format"
                and (sink or _SQLISH.search(_literal_text(node.func.value)))):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if not _safe(arg):
                    self._add(arg)
        if sink:
            self.in_sink += 1
            self.visit(node.args[0])
            self.in_sink -= 1
            for rest in [node.func, *node.args[1:], *node.keywords]:
                self.visit(rest)
        else:
            self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        if self.in_sink or _SQLISH.search(_literal_text(node)):
            for value in node.values:
                if isinstance(value, ast.FormattedValue) and not _safe(value.value):
                    self._add(value.value)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        text = _literal_text(node)  # empty: arithmetic, not text
        if isinstance(node.op, (ast.Add, ast.Mod)) and text and (self.in_sink or _SQLISH.search(text)):
            sides = [node.left, node.right] if isinstance(node.op, ast.Add) else [node.right]
            for side in sides:
                if isinstance(side, ast.Tuple):
                    unsafe = [e for e in side.elts if not _safe(e)]
                else:
                    unsafe = [] if _safe(side) or isinstance(side, (ast.JoinedStr, ast.BinOp)) else [side]
                for e in unsafe:
                    self._add(e)
        self.generic_visit(node)


def splices_in(source: str, path: str = "<test>") -> list[Splice]:
    checker = _Checker(path)
    checker.visit(ast.parse(source, path))
    return checker.splices


def _product_files() -> list[Path]:
    return sorted(p for top in PRODUCT if (ROOT / top).exists() for p in (ROOT / top).rglob("*.py"))


def _all_splices() -> list[Splice]:
    return [s for path in _product_files() for s in splices_in(path.read_text(), str(path.relative_to(ROOT)))]


def test_generated_sql_splices_only_quoted_values() -> None:
    files = _product_files()
    assert len(files) > 30  # the walk found the product code
    unexplained = [str(s) for s in _all_splices() if (s.path, s.function, s.expression) not in ALLOWED]
    assert unexplained == []


def test_every_allowed_splice_still_exists() -> None:
    """An allowance whose code is gone must go too (it would silently cover a new splice)."""
    assert set(ALLOWED) <= {(s.path, s.function, s.expression) for s in _all_splices()}


@pytest.mark.parametrize(("source", "expression"), [
    ('def f(spark, name):\n    spark.sql(f"SHOW TBLPROPERTIES {name}")', "name"),
    ('def f(df, col):\n    df.where(f"{col} IS NULL")', "col"),
    ('def f(F, col):\n    F.expr(f"upper({col})")', "col"),
    ('def f(col):\n    return f"SELECT {col} FROM t"', "col"),
    ('def f(col):\n    return "SELECT %s FROM t" % col', "col"),
    ('def f(col, t):\n    return "SELECT %s FROM %s" % (col, t)', "t"),
    ('def f(col):\n    return "SELECT {} FROM t".format(col)', "col"),
    ('def f(col):\n    return "SELECT " + col + " FROM t"', "col"),
    ('def f(spark, query):\n    spark.sql("SELECT * FROM " + query)', "query"),
])
def test_the_lint_finds_each_unquoted_splice(source: str, expression: str) -> None:
    assert expression in [s.expression for s in splices_in(source)]


@pytest.mark.parametrize("source", [
    'def f(spark, name):\n    spark.sql(f"SHOW TBLPROPERTIES {render.qualified(name)}")',
    'def f(df, col):\n    df.where(f"{quote(col)} IS NULL")',
    'def f(col):\n    return f"SELECT {render.quote(col)}, {render.sql_string(col)} FROM t"',
    'def f(n):\n    return f"row {n} of the batch"',  # not SQL
    'def f(col):\n    raise ValueError(f"column {col} not found")',
])
def test_the_lint_lets_quoted_values_pass(source: str) -> None:
    assert splices_in(source) == []
