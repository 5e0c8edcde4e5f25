{#-
  timeweave.require_session_functions(functions, caller_name): fail with a clear message when the calling
  model is materialized as a view and its SQL uses session (temporary) functions.  The dbt_timeweave plugin
  registers timeweave's functions as temporary functions of dbt-spark's session, and Spark refuses a
  persistent VIEW that references one (INVALID_TEMP_OBJ_REFERENCE), with a message that does not say
  what to do.  temporal_join, versioned_view and temporal_join_dead_letter need none (their plan is plain
  Spark SQL); match_recognize calls this first, and so should a macro of another operator that does.

  Example (in a macro whose SQL calls the session UDTF my_udtf):
      {{ timeweave.require_session_functions(['my_udtf'], 'my_operator') }}
-#}
{% macro require_session_functions(functions, caller_name) -%}
  {{ return(adapter.dispatch('require_session_functions', 'timeweave')(functions, caller_name)) }}
{%- endmacro %}

{#- Any adapter: the check reads only the model's config. -#}
{% macro default__require_session_functions(functions, caller_name) -%}
  {%- if functions and config.get('materialized') == 'view' -%}
    {{ exceptions.raise_compiler_error(
        model.name ~ ": timeweave." ~ caller_name ~ " needs the session function(s) " ~ (functions | join(', '))
        ~ " that the dbt_timeweave plugin registers as temporary functions, and Spark cannot store a view"
        ~ " that references temporary functions; materialize this model as 'table', 'incremental' or 'ephemeral'") }}
  {%- endif -%}
{%- endmacro %}
