{#-
  timeweave.temporal_join_dead_letter: the rows of either side that a temporal_join with the same
  arguments cannot use, with the reason: a NULL key or time column, or (format 'changelog') an op code
  that is neither an upsert nor a delete.  Columns: side ('left' / 'right'), reason, row (the original
  row as JSON) -- the shape of the DataFrame door's temporal_join_with_rejects.  Pass the join's `how`:
  a LEFT join outputs its left rows with a NULL key or time (unmatched), so they are dead letters of an
  INNER join only.
  Arguments: those of temporal_join that describe the two sides, and `how`; see macros/schema.yml.

  Example (a model):
      {{ config(materialized='table') }}
      {{ timeweave.temporal_join_dead_letter(ref('orders'), ref('rates_changelog'), left_time='order_time',
                                             key='currency', time='update_time', format='changelog', op='op',
                                             how='left') }}
-#}
{% macro temporal_join_dead_letter(left, right, left_time, key, time, left_key=none, format='append', op=none,
                                   delete_flag=none, sequence=none, upsert_ops=none, delete_ops=none, how='inner') -%}
  {{ return(adapter.dispatch('temporal_join_dead_letter', 'timeweave')(
      left, right, left_time, key, time, left_key, format, op, delete_flag, sequence, upsert_ops, delete_ops, how)) }}
{%- endmacro %}

{% macro default__temporal_join_dead_letter(left, right, left_time, key, time, left_key, format, op, delete_flag,
                                            sequence, upsert_ops, delete_ops, how) -%}
  {{ timeweave._unsupported_adapter('temporal_join_dead_letter') }}
{%- endmacro %}

{#- Spark SQL: the plan (timeweave_sql.sql) and the row's to_json rely on named_struct, explode / sequence,
    input_file_name and monotonically_increasing_id (https://spark.apache.org/docs/latest/api/sql/) and on
    SELECT * EXCEPT (https://spark.apache.org/docs/latest/sql-ref-syntax-qry-select.html). -#}
{% macro spark__temporal_join_dead_letter(left, right, left_time, key, time, left_key, format, op, delete_flag,
                                          sequence, upsert_ops, delete_ops, how) -%}
  {%- set where = 'temporal_join' -%}
  {%- set join_keys = timeweave._check_join_keys(key, time, format, op, delete_flag, sequence, left_key, left_time, where) -%}
  {%- set keys = join_keys['versioned'] -%}
  {%- set left_keys = join_keys['left'] -%}
  {%- set join_type = (how | lower) if how is string else how -%}
  {%- if join_type not in ['inner', 'left'] -%}
    {{ timeweave._spec_error(where, 'how', "unknown join type '" ~ how ~ "'; use 'inner' or 'left'") }}
  {%- endif -%}
  {%- if not execute -%}
    {{ return('') }}
  {%- endif -%}
  {#- Same rendering as temporal_join: the left side follows a microbatch, the versioned side does not. -#}
  {%- set l = timeweave._side(left, 'left', where, true) -%}
  {%- set r = timeweave._side(right, 'right', where, false) -%}
  {{ timeweave._bind_versioned(r, keys, time, op, delete_flag, sequence, 'versioned') }}
  {{ timeweave._require_columns(l, left_keys, 'left_key', where) }}
  {{ timeweave._require_columns(l, [left_time], 'left_time', where) }}
  {%- set ops = {
      'upsert_ops': upsert_ops if upsert_ops is not none else timeweave.default_upsert_ops(),
      'delete_ops': delete_ops if delete_ops is not none else timeweave.default_delete_ops()} -%}
  {%- set parts = [] -%}
  {%- for side, info, side_keys, side_time, side_format in [
        ('left', l, left_keys, left_time, 'append'), ('right', r, keys, time, format)] -%}
    {%- set rejected = timeweave.timeweave__dead_letter_sql(
        info.sql, info.columns, side, side_keys, side_time, format=side_format,
        op=op if side == 'right' else none, delete_flag=delete_flag if side == 'right' else none,
        upsert_ops=ops.upsert_ops, delete_ops=ops.delete_ops, how=join_type) -%}
    {%- set fields = [] -%}
    {%- for c in info.columns -%}
      {%- do fields.append(timeweave.timeweave__str(c) ~ ", " ~ timeweave.timeweave__q(c)) -%}
    {%- endfor -%}
    {%- do parts.append(
        "SELECT __tw_side AS side, reason, to_json(named_struct(" ~ (fields | join(', '))
        ~ ")) AS row FROM (" ~ rejected ~ ") __tw_dl") -%}
  {%- endfor -%}
  {{ return(parts | join('\nUNION ALL\n')) }}
{%- endmacro %}
