{#-
  timeweave.tumble: Flink's TUMBLE(TABLE relation, DESCRIPTOR(time), size [, offset]) window TVF, as one SELECT:
  every input column plus window_start, window_end, window_time (= window_end - 1 ms).  Rows with a NULL time
  are in no window.  The plan is timeweave_windows_sql.sql, the file the Python doors render.

  Example (a model):
      {{ config(materialized='table') }}
      select window_start, window_end, item, count(*) as cnt
      from ({{ timeweave.tumble(ref('bids'), 'bidtime', '10 minutes') }}) w
      group by window_start, window_end, item
-#}
{% macro tumble(relation, time, size, offset=0) -%}
  {{ return(adapter.dispatch('tumble', 'timeweave')(relation, time, size, offset)) }}
{%- endmacro %}

{% macro default__tumble(relation, time, size, offset) -%}
  {{ timeweave._unsupported_adapter('tumble') }}
{%- endmacro %}

{% macro spark__tumble(relation, time, size, offset) -%}
  {{ return(timeweave._window_tvf('TUMBLE', relation, time, {'size': size, 'offset': offset})) }}
{%- endmacro %}
