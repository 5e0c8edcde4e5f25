{#- 'true' when the dbt_timeweave plugin registered timeweave on this session (timeweave.register sets the
    session conf timeweave.registered), else Spark's '<undefined>'.  Used by models/plugin_check.sql. -#}
{% macro session_registered() %}
  {%- if not execute -%}{{ return('') }}{%- endif -%}
  {%- set result = run_query('SET timeweave.registered') -%}
  {{ return(result.columns[1].values()[0]) }}
{% endmacro %}
