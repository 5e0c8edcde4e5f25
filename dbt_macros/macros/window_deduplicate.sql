{#-
  timeweave.window_deduplicate: Flink's window deduplication, the first (keep='first') or last ('last') row by
  the time column per window and keys (ROW_NUMBER() ... ORDER BY time ASC|DESC = 1), over a window TVF's
  output.  The plan is timeweave_window_ops_sql.sql, the file the Python DataFrame door renders.

  Example (a model):
      select * from ({{ timeweave.window_deduplicate("(" ~ timeweave.tumble(ref('bids'), 'bidtime', '10 minutes') ~ ")",
                                                      'bidtime', keep='last') }}) latest
-#}
{% macro window_deduplicate(relation, time, keys=none, keep='first', rank_column=none) -%}
  {{ return(adapter.dispatch('window_deduplicate', 'timeweave')(relation, time, keys, keep, rank_column)) }}
{%- endmacro %}

{% macro default__window_deduplicate(relation, time, keys, keep, rank_column) -%}
  {{ timeweave._unsupported_adapter('window_deduplicate') }}
{%- endmacro %}

{% macro spark__window_deduplicate(relation, time, keys, keep, rank_column) -%}
  {{ return(timeweave._window_deduplicate(relation, time, keys, keep, rank_column)) }}
{%- endmacro %}
