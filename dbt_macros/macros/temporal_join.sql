{#-
  timeweave.temporal_join: Flink's event-time temporal join
      left JOIN right FOR SYSTEM_TIME AS OF left.<left_time> ON left.<left_key> = right.<key>
  as one SELECT.  Each left row gets the version of its key valid at its time: the latest event of the key
  at or before that time, unless that event is a delete.  `key=[]`: the versioned side is one history (an
  as-of join without a key).  The times may be timestamps, dates or numbers, both sides in one of these
  domains.  Arguments: see macros/schema.yml.

  Example (a model):
      {{ config(materialized='table') }}
      {{ timeweave.temporal_join(ref('orders'), ref('rates_changelog'), left_time='order_time',
                                 key='currency', time='update_time', format='changelog', op='op', how='left') }}
-#}
{% macro temporal_join(left, right, left_time, key, time, left_key=none, format='append', op=none, delete_flag=none,
                       sequence=none, how='inner', right_columns=none, right_prefix='', predicate=none,
                       valid_from=none, valid_to=none, left_alias='l', right_alias='r',
                       upsert_ops=none, delete_ops=none) -%}
  {{ return(adapter.dispatch('temporal_join', 'timeweave')(
      left, right, left_time, key, time, left_key, format, op, delete_flag, sequence, how, right_columns,
      right_prefix, predicate, valid_from, valid_to, left_alias, right_alias, upsert_ops, delete_ops)) }}
{%- endmacro %}

{% macro default__temporal_join(left, right, left_time, key, time, left_key, format, op, delete_flag, sequence, how,
                                right_columns, right_prefix, predicate, valid_from, valid_to, left_alias,
                                right_alias, upsert_ops, delete_ops) -%}
  {{ timeweave._unsupported_adapter('temporal_join') }}
{%- endmacro %}

{#- Spark SQL: the plan (timeweave_sql.sql) relies on named_struct, explode / sequence,
    input_file_name and monotonically_increasing_id (https://spark.apache.org/docs/latest/api/sql/) and on
    SELECT * EXCEPT (https://spark.apache.org/docs/latest/sql-ref-syntax-qry-select.html). -#}
{% macro spark__temporal_join(left, right, left_time, key, time, left_key, format, op, delete_flag, sequence, how,
                              right_columns, right_prefix, predicate, valid_from, valid_to, left_alias,
                              right_alias, upsert_ops, delete_ops) -%}
  {#- Shape checks run at parse time too (no database needed), so mistakes surface before any job. -#}
  {%- set where = 'temporal_join' -%}
  {%- set join_keys = timeweave._check_join_keys(key, time, format, op, delete_flag, sequence, left_key, left_time, where) -%}
  {%- set keys = join_keys['versioned'] -%}
  {%- set left_keys = join_keys['left'] -%}
  {%- set join_type = (how | lower) if how is string else how -%}
  {%- if join_type not in ['inner', 'left'] -%}
    {{ timeweave._spec_error(where, 'how', "unknown join type '" ~ how ~ "'; use 'inner' or 'left'") }}
  {%- endif -%}
  {%- set chosen = timeweave._names(right_columns, 'right_columns', where) if right_columns is not none else none -%}
  {%- if predicate is not none and not (predicate | trim) -%}
    {{ timeweave._spec_error(where, 'predicate', 'an empty predicate; pass none for no extra condition') }}
  {%- endif -%}
  {%- if valid_to and not valid_from -%}
    {{ timeweave._spec_error(where, 'valid_to', 'valid_to needs valid_from (the validity interval starts there)') }}
  {%- endif -%}

  {%- if not execute -%}
    {{ return('') }}
  {%- endif -%}

  {#- Bind: columns and types of both sides (TemporalJoinSpec.bind). -#}
  {%- set l = timeweave._side(left, 'left', where, true) -%}
  {%- set r = timeweave._side(right, 'right', where, false) -%}
  {{ timeweave._bind_versioned(r, keys, time, op, delete_flag, sequence, 'versioned') }}
  {{ timeweave._require_columns(l, left_keys, 'left_key', where) }}
  {{ timeweave._require_columns(l, [left_time], 'left_time', where) }}
  {%- set time_domain = timeweave._join_time_domain(l, r, left_time, time, where) -%}
  {%- if chosen is not none -%}
    {{ timeweave._require_columns(r, chosen, 'right_columns', where) }}
  {%- else -%}
    {#- Default payload: every right column but key, time and change metadata (payload_columns). -#}
    {%- set used = keys + [time] + ([op, delete_flag, sequence] | reject('none') | list) -%}
    {%- set chosen = r.columns | reject('in', used) | list -%}
  {%- endif -%}
  {%- set output_right = [] -%}
  {%- for c in chosen -%}
    {%- do output_right.append([c, right_prefix ~ c]) -%}
  {%- endfor -%}
  {%- set outputs = output_right | map(attribute=1) | list + ([valid_from, valid_to] | reject('none') | list) -%}
  {%- for name in outputs -%}
    {%- if name in l.columns -%}
      {{ timeweave._spec_error(where, 'right_columns', "output column '" ~ name ~ "' exists on the left side too; choose right_columns or set right_prefix") }}
    {%- endif -%}
  {%- endfor -%}
  {%- if (outputs | unique | list | length) != (outputs | length) -%}
    {{ timeweave._spec_error(where, 'right_columns', 'duplicate output columns ' ~ outputs) }}
  {%- endif -%}

  {{ return(timeweave.timeweave__temporal_join_sql(
      l.sql, r.sql, l.columns, r.columns, left_keys, left_time, keys, time, output_right,
      how=join_type, format=format, op=op, delete_flag=delete_flag, sequence=sequence, predicate=predicate,
      left_alias=left_alias, right_alias=right_alias, valid_from=valid_from, valid_to=valid_to, time_domain=time_domain,
      upsert_ops=upsert_ops if upsert_ops is not none else timeweave.default_upsert_ops(),
      delete_ops=delete_ops if delete_ops is not none else timeweave.default_delete_ops())) }}
{%- endmacro %}
