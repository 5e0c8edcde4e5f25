{#-
  timeweave.hop: Flink's HOP(TABLE relation, DESCRIPTOR(time), slide, size [, offset]) window TVF (Flink's order:
  slide, then size; size a multiple of slide): each row once per window holding it, with window_start,
  window_end, window_time.  The plan is timeweave_windows_sql.sql, the file the Python doors render.

  Example (a model):
      select window_start, window_end, sum(price) as total
      from ({{ timeweave.hop(ref('bids'), 'bidtime', '5 minutes', '10 minutes') }}) w
      group by window_start, window_end
-#}
{% macro hop(relation, time, slide, size, offset=0) -%}
  {{ return(adapter.dispatch('hop', 'timeweave')(relation, time, slide, size, offset)) }}
{%- endmacro %}

{% macro default__hop(relation, time, slide, size, offset) -%}
  {{ timeweave._unsupported_adapter('hop') }}
{%- endmacro %}

{% macro spark__hop(relation, time, slide, size, offset) -%}
  {{ return(timeweave._window_tvf('HOP', relation, time, {'slide': slide, 'size': size, 'offset': offset})) }}
{%- endmacro %}
