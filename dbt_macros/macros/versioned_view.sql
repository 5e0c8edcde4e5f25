{#-
  timeweave.versioned_view: a versioned table's history, one row per version with its validity interval
  [valid_from, valid_to) (valid_to NULL: still valid).  Deletes end a version and do not appear; several
  events of one key at one time keep the highest `sequence` (without it: the last row in input order).
  Arguments: see macros/schema.yml.

  Example (a model):
      {{ config(materialized='view') }}
      {{ timeweave.versioned_view(ref('rates_changelog'), key='currency', time='update_time',
                                  format='changelog', op='op') }}
-#}
{% macro versioned_view(relation, key, time, format='append', op=none, delete_flag=none, sequence=none,
                        valid_from='valid_from', valid_to='valid_to', upsert_ops=none, delete_ops=none) -%}
  {{ return(adapter.dispatch('versioned_view', 'timeweave')(
      relation, key, time, format, op, delete_flag, sequence, valid_from, valid_to, upsert_ops, delete_ops)) }}
{%- endmacro %}

{% macro default__versioned_view(relation, key, time, format, op, delete_flag, sequence, valid_from, valid_to,
                                 upsert_ops, delete_ops) -%}
  {{ timeweave._unsupported_adapter('versioned_view') }}
{%- endmacro %}

{#- Spark SQL: the plan (timeweave_sql.sql) relies on named_struct, explode / sequence,
    input_file_name and monotonically_increasing_id (https://spark.apache.org/docs/latest/api/sql/) and on
    SELECT * EXCEPT (https://spark.apache.org/docs/latest/sql-ref-syntax-qry-select.html). -#}
{% macro spark__versioned_view(relation, key, time, format, op, delete_flag, sequence, valid_from, valid_to,
                               upsert_ops, delete_ops) -%}
  {%- set where = 'versioned' -%}
  {%- set keys = timeweave._check_versioned(key, time, format, op, delete_flag, sequence, where) -%}
  {%- for name, argument in [(valid_from, 'valid_from'), (valid_to, 'valid_to')] -%}
    {%- if name is not string or not (name | trim) -%}
      {{ timeweave._spec_error(where, argument, 'the output column name must be a non-empty string') }}
    {%- endif -%}
  {%- endfor -%}
  {%- if not execute -%}
    {{ return('') }}
  {%- endif -%}
  {#- The history needs every version, so the relation is never filtered to a microbatch. -#}
  {%- set r = timeweave._side(relation, 'relation', where, false) -%}
  {{ timeweave._bind_versioned(r, keys, time, op, delete_flag, sequence, where) }}
  {%- set time_domain = timeweave._time_domain(r, time, 'time', where) -%}
  {%- set meta = [op, delete_flag, sequence] | reject('none') | list -%}
  {%- for name in [valid_from, valid_to] -%}
    {%- if name in r.columns and name not in meta -%}
      {{ timeweave._spec_error(where, 'valid_from' if name == valid_from else 'valid_to',
          "output column '" ~ name ~ "' is also a column of " ~ r.label ~ '; choose another name') }}
    {%- endif -%}
  {%- endfor -%}
  {{ return(timeweave.timeweave__versioned_view_sql(
      r.sql, r.columns, keys, time, format=format, op=op, delete_flag=delete_flag, sequence=sequence,
      valid_from=valid_from, valid_to=valid_to, time_domain=time_domain,
      upsert_ops=upsert_ops if upsert_ops is not none else timeweave.default_upsert_ops(),
      delete_ops=delete_ops if delete_ops is not none else timeweave.default_delete_ops())) }}
{%- endmacro %}
