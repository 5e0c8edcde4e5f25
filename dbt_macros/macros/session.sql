{#-
  timeweave.session: Flink's SESSION(TABLE relation PARTITION BY partition_by, DESCRIPTOR(time), gap) window TVF:
  rows of one partition at most gap apart share a session [first row, last row + gap).  Group by the
  partition columns too: sessions are kept apart by them.  The plan is timeweave_windows_sql.sql.

  Example (a model):
      select window_start, window_end, supplier_id, sum(price) as total
      from ({{ timeweave.session(ref('bids'), 'bidtime', '2 minutes', partition_by='supplier_id') }}) w
      group by window_start, window_end, supplier_id
-#}
{% macro session(relation, time, gap, partition_by=none) -%}
  {{ return(adapter.dispatch('session', 'timeweave')(relation, time, gap, partition_by)) }}
{%- endmacro %}

{% macro default__session(relation, time, gap, partition_by) -%}
  {{ timeweave._unsupported_adapter('session') }}
{%- endmacro %}

{% macro spark__session(relation, time, gap, partition_by) -%}
  {{ return(timeweave._window_tvf('SESSION', relation, time, {'gap': gap}, partition_by)) }}
{%- endmacro %}
