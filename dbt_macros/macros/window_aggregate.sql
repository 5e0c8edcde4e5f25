{#-
  timeweave.window_aggregate: Flink's window aggregation, GROUP BY window_start, window_end (window_time) and the
  keys -- or GROUPING SETS / ROLLUP / CUBE of them -- over a window TVF's output: one row per window and group
  with `aggregates` (output name -> any Spark aggregate as SQL text: expressions, FILTER (WHERE ...),
  GROUPING(k), a UDF registered in the session).  The same rows as the Python door
  `timeweave.window_aggregate(tvf_output, aggregates, keys=... | grouping_sets=...)`; in a microbatch model
  the TVF emits only the batch's windows (whole windows), so N batches aggregate as one full run.

  Example (a model):
      {{ timeweave.window_aggregate("(" ~ timeweave.hop(ref('bids'), 'bidtime', '5 minutes', '10 minutes') ~ ")",
                                    {'cnt': 'count(*)', 'total': 'sum(price)'}, keys=['item']) }}
      {{ timeweave.window_aggregate("(" ~ timeweave.tumble(ref('bids'), 'bidtime', '10 minutes') ~ ")",
                                    {'cnt': 'count(*)'}, rollup=['item', 'supplier_id']) }}
-#}
{% macro window_aggregate(relation, aggregates, keys=none, grouping_sets=none, rollup=none, cube=none) -%}
  {{ return(adapter.dispatch('window_aggregate', 'timeweave')(relation, aggregates, keys, grouping_sets, rollup, cube)) }}
{%- endmacro %}

{% macro default__window_aggregate(relation, aggregates, keys, grouping_sets, rollup, cube) -%}
  {{ timeweave._unsupported_adapter('window_aggregate') }}
{%- endmacro %}

{% macro spark__window_aggregate(relation, aggregates, keys, grouping_sets, rollup, cube) -%}
  {{ return(timeweave._window_aggregate(relation, aggregates, keys, grouping_sets, rollup, cube)) }}
{%- endmacro %}
