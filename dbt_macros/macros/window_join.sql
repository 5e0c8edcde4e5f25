{#-
  timeweave.window_join: Flink's window join of two window TVF outputs (the same TVF and sizes on both sides,
  Flink's rule: build both with the same timeweave.tumble / hop / cumulate call) on window_start, window_end and
  the `on` keys; how = inner, left, right, full, semi (IN / EXISTS) or anti (NOT EXISTS).  The plan is
  timeweave_window_ops_sql.sql, the file the Python DataFrame door renders.

  Example (a model):
      select * from ({{ timeweave.window_join(
          "(" ~ timeweave.tumble(ref('left_rows'), 'row_time', '5 minutes') ~ ")",
          "(" ~ timeweave.tumble(ref('right_rows'), 'row_time', '5 minutes') ~ ")",
          on='num', how='full', left_prefix='L_', right_prefix='R_') }}) joined
-#}
{% macro window_join(left, right, on, how='inner', left_prefix='', right_prefix='') -%}
  {{ return(adapter.dispatch('window_join', 'timeweave')(left, right, on, how, left_prefix, right_prefix)) }}
{%- endmacro %}

{% macro default__window_join(left, right, on, how, left_prefix, right_prefix) -%}
  {{ timeweave._unsupported_adapter('window_join') }}
{%- endmacro %}

{% macro spark__window_join(left, right, on, how, left_prefix, right_prefix) -%}
  {{ return(timeweave._window_join(left, right, on, how, left_prefix, right_prefix)) }}
{%- endmacro %}
