{#-
  timeweave.default_upsert_ops(): the op codes read as "a version starts here" (Flink's +I / +U, Debezium's
  c / r / u, ...): timeweave.core.changelog.UPSERT_OPS, generated into
  _timeweave_core.sql (python -m timeweave.dbt_package.generate).  The default of the
  `upsert_ops` argument of temporal_join, versioned_view and temporal_join_dead_letter.

  Example:
      {{ timeweave.temporal_join(..., format='changelog', op='op',
                                 upsert_ops=timeweave.default_upsert_ops() + ['UPSERT']) }}
-#}
{% macro default_upsert_ops() -%}
  {{ return(adapter.dispatch('default_upsert_ops', 'timeweave')()) }}
{%- endmacro %}

{#- The same on every adapter: op codes are data, not SQL. -#}
{% macro default__default_upsert_ops() -%}
  {{ return(timeweave.timeweave__upsert_ops()) }}
{%- endmacro %}
