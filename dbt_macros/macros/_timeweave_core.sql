{#- GENERATED from timeweave.spark.render.core_macros() (timeweave.core.changelog, timeweave.core.bad_rows) by `python -m timeweave.dbt_package.generate`: do not edit; edit the source and regenerate
    (tests/dbt/test_package.py fails while this file differs from what the command writes). -#}

{% macro timeweave__upsert_ops() -%}
  {{ return(["+I", "+U", "c", "r", "u", "I", "U", "INSERT", "UPDATE_AFTER"]) }}
{%- endmacro %}

{% macro timeweave__delete_ops() -%}
  {{ return(["-D", "-U", "d", "D", "DELETE", "UPDATE_BEFORE"]) }}
{%- endmacro %}

{% macro timeweave__reasons() -%}
  {{ return({"null_key": "NULL key column {column}", "null_time": "NULL time column {column}", "unknown_op": "unknown op {op} in column {column}", "null_op": "NULL", "null_event_time": "NULL event time column {column}"}) }}
{%- endmacro %}
