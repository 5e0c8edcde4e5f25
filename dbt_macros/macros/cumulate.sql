{#-
  timeweave.cumulate: Flink's CUMULATE(TABLE relation, DESCRIPTOR(time), step, max_size [, offset]) window TVF:
  windows growing by step from the start of each max_size period (max_size a multiple of step); each row once
  per window holding it.  The plan is timeweave_windows_sql.sql, the file the Python doors render.

  Example (a model):
      select window_start, window_end, sum(price) as total
      from ({{ timeweave.cumulate(ref('bids'), 'bidtime', '2 minutes', '10 minutes') }}) w
      group by window_start, window_end
-#}
{% macro cumulate(relation, time, step, max_size, offset=0) -%}
  {{ return(adapter.dispatch('cumulate', 'timeweave')(relation, time, step, max_size, offset)) }}
{%- endmacro %}

{% macro default__cumulate(relation, time, step, max_size, offset) -%}
  {{ timeweave._unsupported_adapter('cumulate') }}
{%- endmacro %}

{% macro spark__cumulate(relation, time, step, max_size, offset) -%}
  {{ return(timeweave._window_tvf('CUMULATE', relation, time, {'step': step, 'max_size': max_size, 'offset': offset})) }}
{%- endmacro %}
