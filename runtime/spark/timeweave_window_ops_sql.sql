{#-
  THE batch plan of Flink's window Top-N, window deduplication and window join, as pure Jinja (no dbt context):
  the Python DataFrame door renders this very file with jinja2 (timeweave.spark.window_ops_render) and the dbt
  macros window_top_n / window_deduplicate / window_join render it through their spark__ implementations.
  One plan, every batch door.  Calls to the temporal-join plan's helpers (identifier quoting) are written
  `timeweave.<macro>`, as dbt resolves a package's macros.

  Arguments are already validated (runtime/core/windows/ranking.py: Flink's rules): the inputs are window
  TVF outputs or window aggregates (they have window_start and window_end), ranks are 1-based and the range
  non-empty, sort directions are explicit ('ASC NULLS FIRST'...), join types one of INNER, LEFT, RIGHT, FULL,
  SEMI, ANTI.  Semantics (the SQL standard's, as Flink's):
  - Top-N: ROW_NUMBER / RANK / DENSE_RANK over (PARTITION BY window_start, window_end, keys ORDER BY ...),
    the rows whose rank is in [lower, upper] kept; deduplication is Top-1 by ROW_NUMBER on the time column;
  - window join: equal window_start, window_end and keys (SQL `=`: a NULL key joins nothing); an outer
    join's window columns are the matched side's (COALESCE); SEMI keeps the left rows with a match (EXISTS),
    ANTI those without (NOT EXISTS).
  In batch there is no watermark, so no row is late: every row of the inputs enters the ranking or the join.
-#}

{#- The quoted columns, each prefixed by `prefix` (a relation alias and a dot, or nothing). -#}
{%- macro timeweave__wop_columns(columns, prefix='') -%}
{%- for c in columns -%}{{ prefix }}{{ timeweave.timeweave__q(c) }}{{ ", " if not loop.last }}{%- endfor -%}
{%- endmacro -%}

{#- Window Top-N over `relation` (SQL text after FROM) with `columns`: `function` (ROW_NUMBER, RANK or
    DENSE_RANK) over PARTITION BY window_start, window_end and `partition_by`, ORDER BY `order_by` (a list of
    [column, direction] pairs); the rows ranked in [lower, upper], with the rank as `rank_column` (none: left
    out, as Flink leaves out an unselected rownum). -#}
{%- macro timeweave__window_rank_sql(relation, columns, partition_by, order_by, function='ROW_NUMBER', lower=1,
                                     upper=1, rank_column=none) -%}
{%- set q = timeweave.timeweave__q -%}
SELECT {{ timeweave.timeweave__wop_columns(columns) }}{{ ", __tw_rank AS " ~ q(rank_column) if rank_column }}
FROM (
  SELECT {{ timeweave.timeweave__wop_columns(columns) }}, {{ function }}() OVER (PARTITION BY window_start, window_end{% for k in partition_by %}, {{ q(k) }}{% endfor %} ORDER BY {% for column, direction in order_by %}{{ q(column) }} {{ direction }}{{ ", " if not loop.last }}{% endfor %}) AS __tw_rank
  FROM {{ relation }}
) __tw_ranked
WHERE __tw_rank BETWEEN {{ lower }} AND {{ upper }}
{%- endmacro -%}

{#- Window join of `left` and `right` (SQL text after FROM) on window_start, window_end and `on` (a list of
    [left column, right column] pairs).  `how`: INNER, LEFT, RIGHT, FULL (output: window_start, window_end,
    window_time, then `left_columns` renamed to `left_names` and `right_columns` to `right_names`), SEMI or
    ANTI (output: the left input's columns `left_columns`, as they are). -#}
{%- macro timeweave__window_join_sql(left, left_columns, right, right_columns, on, how='INNER', left_names=none,
                                     right_names=none) -%}
{%- set q = timeweave.timeweave__q -%}
{%- set condition -%}
__tw_l.window_start = __tw_r.window_start AND __tw_l.window_end = __tw_r.window_end{% for l, r in on %} AND __tw_l.{{ q(l) }} = __tw_r.{{ q(r) }}{% endfor %}
{%- endset -%}
{%- if how in ('SEMI', 'ANTI') -%}
SELECT {{ timeweave.timeweave__wop_columns(left_columns, '__tw_l.') }}
FROM {{ left }} __tw_l
LEFT {{ how }} JOIN {{ right }} __tw_r
ON {{ condition }}
{%- else -%}
{%- set left_names = left_names if left_names is not none else left_columns -%}
{%- set right_names = right_names if right_names is not none else right_columns -%}
{%- set items = [] -%}
{%- for w in ['window_start', 'window_end', 'window_time'] -%}
{%- do items.append(("coalesce(__tw_l." ~ w ~ ", __tw_r." ~ w ~ ")" if how in ('RIGHT', 'FULL') else "__tw_l." ~ w) ~ " AS " ~ w) -%}
{%- endfor -%}
{%- for c in left_columns -%}{%- do items.append("__tw_l." ~ q(c) ~ " AS " ~ q(left_names[loop.index0])) -%}{%- endfor -%}
{%- for c in right_columns -%}{%- do items.append("__tw_r." ~ q(c) ~ " AS " ~ q(right_names[loop.index0])) -%}{%- endfor %}
SELECT {{ items | join(', ') }}
FROM {{ left }} __tw_l
{{ 'FULL OUTER' if how == 'FULL' else how }} JOIN {{ right }} __tw_r
ON {{ condition }}
{%- endif -%}
{%- endmacro -%}
