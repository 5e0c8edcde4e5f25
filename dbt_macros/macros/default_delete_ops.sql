{#-
  timeweave.default_delete_ops(): the op codes read as "no version from here on" (Flink's -D / -U,
  Debezium's d, ...): timeweave.core.changelog.DELETE_OPS, generated into
  _timeweave_core.sql (python -m timeweave.dbt_package.generate).  -U counts as a delete;
  the +U at the same time wins.  The default of the `delete_ops` argument of temporal_join, versioned_view
  and temporal_join_dead_letter.

  Example:
      {{ timeweave.versioned_view(..., format='changelog', op='op',
                                  delete_ops=timeweave.default_delete_ops() + ['PURGE']) }}
-#}
{% macro default_delete_ops() -%}
  {{ return(adapter.dispatch('default_delete_ops', 'timeweave')()) }}
{%- endmacro %}

{#- The same on every adapter: op codes are data, not SQL. -#}
{% macro default__default_delete_ops() -%}
  {{ return(timeweave.timeweave__delete_ops()) }}
{%- endmacro %}
