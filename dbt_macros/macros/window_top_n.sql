{#-
  timeweave.window_top_n: Flink's window Top-N, ROW_NUMBER() / RANK() / DENSE_RANK() OVER (PARTITION BY
  window_start, window_end [, partition_by] ORDER BY order_by) kept for ranks 1..n (or lower..upper), over a
  window TVF's output or a window aggregate.  The plan is timeweave_window_ops_sql.sql, the file the Python
  DataFrame door renders.

  Example (a model):
      select * from ({{ timeweave.window_top_n("(" ~ timeweave.tumble(ref('bids'), 'bidtime', '10 minutes') ~ ")",
                                                'price DESC', n=3) }}) top3
-#}
{% macro window_top_n(relation, order_by, n=none, partition_by=none, function='ROW_NUMBER', lower=none, upper=none, rank_column='rownum') -%}
  {{ return(adapter.dispatch('window_top_n', 'timeweave')(relation, order_by, n, partition_by, function, lower, upper, rank_column)) }}
{%- endmacro %}

{% macro default__window_top_n(relation, order_by, n, partition_by, function, lower, upper, rank_column) -%}
  {{ timeweave._unsupported_adapter('window_top_n') }}
{%- endmacro %}

{% macro spark__window_top_n(relation, order_by, n, partition_by, function, lower, upper, rank_column) -%}
  {{ return(timeweave._window_top_n(relation, order_by, n, partition_by, function, lower, upper, rank_column)) }}
{%- endmacro %}
