{#-
  A session temporary view over a directory of landed CSV files with a fixed schema: dbt reads the same
  files, with the same schema, as the streaming and backfill jobs.
  Example (dbt_project.yml):  on-run-start: ["{{ landed_csv_view('landed_orders', 'orders', var('orders_schema')) }}"]
-#}
{% macro landed_csv_view(view_name, subdirectory, schema) -%}
  create or replace temporary view {{ view_name }} ({{ schema }})
  using csv options (path '{{ var("landing") }}/{{ subdirectory }}', header 'true')
{%- endmacro %}
