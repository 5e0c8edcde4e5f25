{#-
  Private helpers of the package's public macros (each public macro has a file of its own, named after it,
  and its arguments documented in schema.yml): argument validation with the same rules and messages as runtime/core/spec.py, relation introspection,
  and the rendering of each side.  The SQL plan itself lives in timeweave_sql.sql, a generated copy
  of the plan Python renders (runtime/spark/timeweave_sql.sql); the core's op codes and dead-letter reasons are
  generated into _timeweave_core.sql.

  Why validate here again: dbt's Jinja cannot import timeweave.core, so the rules of VersionedTableSpec /
  TemporalJoinSpec are restated; tests/dbt/test_dbt_models.py checks both doors reject the same input.
-#}

{#- Raise "<model>: <where>: argument '<argument>': <message>", the format of timeweave.core.errors.SpecError. -#}
{% macro _spec_error(where, argument, message) -%}
  {%- set owner = (model.name ~ ': ') if model is defined and model and model.name is defined else '' -%}
  {{ exceptions.raise_compiler_error(owner ~ where ~ ": argument '" ~ argument ~ "': " ~ message) }}
{%- endmacro %}

{#- A column argument as a list of names: none -> [], 'a' -> ['a'], ['a', 'b'] -> ['a', 'b']. -#}
{% macro _names(value, argument, where) -%}
  {%- if value is none -%}
    {{ return([]) }}
  {%- endif -%}
  {%- set names = [value] if value is string else (value | list) -%}
  {%- for name in names -%}
    {%- if name is not string or not (name | trim) -%}
      {{ timeweave._spec_error(where, argument, 'column names must be non-empty strings, got ' ~ name) }}
    {%- endif -%}
  {%- endfor -%}
  {%- if (names | unique | list | length) != (names | length) -%}
    {{ timeweave._spec_error(where, argument, 'duplicate column in ' ~ names) }}
  {%- endif -%}
  {{ return(names) }}
{%- endmacro %}

{#- The versioned-table rules of VersionedTableSpec.__init__ (shape only; columns are checked by _bind_versioned). -#}
{% macro _check_versioned(key, time, format, op, delete_flag, sequence, where='versioned') -%}
  {#- no key columns (key=[] or none): the table is one history -#}
  {%- set keys = timeweave._names(key, 'key', where) -%}
  {%- if time is not string or not (time | trim) -%}
    {{ timeweave._spec_error(where, 'time', 'a version-time column is required') }}
  {%- endif -%}
  {%- if format not in ['append', 'changelog', 'upsert'] -%}
    {{ timeweave._spec_error(where, 'format', "unknown format '" ~ format ~ "'; use one of ['append', 'changelog', 'upsert']") }}
  {%- endif -%}
  {%- if format == 'changelog' and not op -%}
    {{ timeweave._spec_error(where, 'op', "format 'changelog' needs the op column (+I/-U/+U/-D or c/r/u/d)") }}
  {%- endif -%}
  {%- if format != 'changelog' and op -%}
    {{ timeweave._spec_error(where, 'op', "an op column only applies to format 'changelog', not '" ~ format ~ "'") }}
  {%- endif -%}
  {%- if format != 'upsert' and delete_flag -%}
    {{ timeweave._spec_error(where, 'delete_flag', "a delete flag only applies to format 'upsert', not '" ~ format ~ "'") }}
  {%- endif -%}
  {%- if time in keys -%}
    {{ timeweave._spec_error(where, 'time', "column '" ~ time ~ "' is also a key column") }}
  {%- endif -%}
  {%- for name, argument in [(op, 'op'), (delete_flag, 'delete_flag'), (sequence, 'sequence')] -%}
    {%- if name is not none and (name in keys or name == time) -%}
      {{ timeweave._spec_error(where, argument, "column '" ~ name ~ "' is already used as key or time") }}
    {%- endif -%}
  {%- endfor -%}
  {{ return(keys) }}
{%- endmacro %}

{#- Fail unless every name is a column of the side described by `info` (see _side). -#}
{% macro _require_columns(info, names, argument, where) -%}
  {%- for name in names -%}
    {%- if name not in info.columns -%}
      {{ timeweave._spec_error(where, argument, "column '" ~ name ~ "' not found; available: " ~ (info.columns | sort) ~ " (" ~ info.label ~ ")") }}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro %}

{#- Fail unless `name` has the Spark type family `kind` (skipped when the side's types are unknown). -#}
{% macro _require_kind(info, name, kind, argument, where) -%}
  {%- set dtype = info.types.get(name) -%}
  {%- if dtype is not none -%}
    {%- set family = (dtype | lower).split('(')[0] -%}
    {%- set ok = family in ['timestamp', 'timestamp_ntz', 'timestamp_ltz'] if kind == 'timestamp' else family == kind -%}
    {%- if not ok -%}
      {{ timeweave._spec_error(where, argument, "column '" ~ name ~ "' must be a " ~ kind ~ ", found " ~ dtype) }}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

{#- The kind (timeweave.core.spec's names) of a Spark type as dbt-spark spells it ("decimal(32,4)", "bigint"). -#}
{% macro _kind_of(dtype) -%}
  {%- set family = (dtype | lower).split('(')[0] | trim -%}
  {%- set kinds = {'timestamp': 'timestamp', 'timestamp_ltz': 'timestamp', 'timestamp_ntz': 'timestamp_ntz',
                   'date': 'date', 'tinyint': 'integer', 'byte': 'integer', 'smallint': 'integer', 'short': 'integer',
                   'int': 'integer', 'integer': 'integer', 'bigint': 'integer', 'long': 'integer',
                   'decimal': 'decimal', 'dec': 'decimal', 'numeric': 'decimal',
                   'float': 'floating', 'real': 'floating', 'double': 'floating',
                   'boolean': 'boolean', 'string': 'string', 'varchar': 'string', 'char': 'string'} -%}
  {{ return(kinds.get(family, 'other')) }}
{%- endmacro %}

{#- timeweave.core.spec.time_domain_of: the time domain of a time column ('timestamp', 'date', 'numeric'), or the
    core's error; 'timestamp' when the side's types are unknown (no check, as before). -#}
{% macro _time_domain(info, name, argument, where) -%}
  {%- set dtype = info.types.get(name) -%}
  {%- if dtype is none -%}
    {{ return('timestamp') }}
  {%- endif -%}
  {%- set kind = timeweave._kind_of(dtype) -%}
  {%- set domains = {'timestamp': 'timestamp', 'timestamp_ntz': 'timestamp', 'date': 'date',
                     'integer': 'numeric', 'decimal': 'numeric', 'floating': 'numeric'} -%}
  {%- if kind not in domains -%}
    {{ timeweave._spec_error(where, argument, "column '" ~ name ~ "' must be a timestamp, date or number (an orderable time), found " ~ kind) }}
  {%- endif -%}
  {{ return(domains[kind]) }}
{%- endmacro %}

{#- TemporalJoinSpec.time_domain: both sides' times in one domain; returns it. -#}
{% macro _join_time_domain(l, r, left_time, time, where) -%}
  {%- set right = timeweave._time_domain(r, time, 'time', 'versioned') -%}
  {%- set left = timeweave._time_domain(l, left_time, 'left_time', where) -%}
  {%- if left != right -%}
    {{ timeweave._spec_error(where, 'left_time', "left time '" ~ left_time ~ "' (" ~ timeweave._kind_of(l.types.get(left_time, 'timestamp'))
        ~ ") and version time '" ~ time ~ "' (" ~ timeweave._kind_of(r.types.get(time, 'timestamp'))
        ~ ") cannot be compared: both must be timestamps, both dates or both numbers") }}
  {%- endif -%}
  {{ return(left) }}
{%- endmacro %}

{#- VersionedTableSpec.bind: the versioned side's columns exist and have the right types. -#}
{% macro _bind_versioned(info, keys, time, op, delete_flag, sequence, where='versioned') -%}
  {{ timeweave._require_columns(info, keys, 'key', where) }}
  {{ timeweave._require_columns(info, [time], 'time', where) }}
  {%- do timeweave._time_domain(info, time, 'time', where) -%}
  {%- for name, argument in [(op, 'op'), (delete_flag, 'delete_flag'), (sequence, 'sequence')] -%}
    {%- if name is not none -%}
      {{ timeweave._require_columns(info, [name], argument, where) }}
    {%- endif -%}
  {%- endfor -%}
  {%- if delete_flag -%}
    {{ timeweave._require_kind(info, delete_flag, 'boolean', 'delete_flag', where) }}
  {%- endif -%}
{%- endmacro %}

{#-
  One input side as a dict:
    columns   its column names, in order;
    types     column -> Spark type (a SQL text side's from DESCRIBE QUERY);
    sql       the text to put after FROM;
    label     how error messages name it.
  `relation` is a dbt Relation (ref(), source(), this) or SQL text (a table name or "(select ...)").

  Microbatch: dbt filters a ref() to the current batch when the referenced node has `event_time`, and
  it does so when the Relation is turned into text (str()).  `filtered=true` (the left side) keeps that
  filter; `filtered=false` (the versioned side) renders with render_limited(), which drops the event-time
  filter but keeps dbt's --empty/--sample LIMIT, because a batch needs the version valid at its start,
  which was written before the batch.  Introspection always uses the unfiltered relation: Spark's
  `describe extended` cannot describe the filtered subquery.
-#}
{% macro _side(relation, argument, where, filtered) -%}
  {%- if relation is string -%}
    {%- if not (relation | trim) -%}
      {{ timeweave._spec_error(where, argument, 'an empty relation; pass ref(...), source(...) or SQL text') }}
    {%- endif -%}
    {#- Spark's DESCRIBE QUERY gives the columns and their types (col_name, data_type) without reading a row. -#}
    {%- set described = run_query('describe query select * from ' ~ relation) -%}
    {%- set types = {} -%}
    {%- for row in described.rows -%}
      {%- do types.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {{ return({'columns': described.columns[0].values() | list, 'types': types, 'sql': relation, 'label': argument ~ ' ' ~ relation}) }}
  {%- endif -%}
  {%- if relation.identifier is not defined -%}
    {{ timeweave._spec_error(where, argument, 'expected a Relation (ref/source) or SQL text, got ' ~ relation) }}
  {%- endif -%}
  {%- if relation.is_cte -%}
    {{ timeweave._spec_error(where, argument, 'ephemeral model ' ~ relation.identifier ~ ' has no columns to introspect'
        ~ ' (it is a CTE); materialize it as a view or table') }}
  {%- endif -%}
  {%- set found = adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
  {%- if found is none -%}
    {{ timeweave._spec_error(where, argument, 'relation ' ~ relation.render() ~ ' does not exist; build it first (dbt seed / dbt run)') }}
  {%- endif -%}
  {%- set columns = adapter.get_columns_in_relation(found) -%}
  {%- set types = {} -%}
  {%- for c in columns -%}
    {%- do types.update({c.name: c.dtype}) -%}
  {%- endfor -%}
  {%- set sql = (relation | string) if filtered else relation.render_limited() -%}
  {{ return({'columns': columns | map(attribute='name') | list, 'types': types, 'sql': sql, 'label': argument ~ ' ' ~ relation.render()}) }}
{%- endmacro %}

{#- Fail on adapters other than Spark (and its descendants, e.g. Databricks): the plan is Spark SQL. -#}
{% macro _unsupported_adapter(macro_name) -%}
  {{ exceptions.raise_compiler_error(
      "timeweave." ~ macro_name ~ " renders Spark SQL (named_struct, LAST ... IGNORE NULLS, SELECT * EXCEPT) and supports"
      ~ " dbt-spark and adapters that dispatch to spark__ (e.g. dbt-databricks); this project uses '" ~ adapter.type() ~ "'") }}
{%- endmacro %}

{#- The key checks every join macro shares (TemporalJoinSpec's constructor): returns
    {'versioned': versioned key columns, 'left': left key columns}. -#}
{% macro _check_join_keys(key, time, format, op, delete_flag, sequence, left_key, left_time, where) -%}
  {%- set keys = timeweave._check_versioned(key, time, format, op, delete_flag, sequence, 'versioned') -%}
  {%- set left_keys = timeweave._names(left_key, 'left_key', where) or keys -%}
  {%- if (left_keys | length) != (keys | length) -%}
    {{ timeweave._spec_error(where, 'left_key', (left_keys | length) ~ ' left key column(s) ' ~ left_keys ~ ' for '
        ~ (keys | length) ~ ' versioned key column(s) ' ~ keys) }}
  {%- endif -%}
  {%- if left_time is not string or not (left_time | trim) -%}
    {{ timeweave._spec_error(where, 'left_time', "the left side's event-time column is required") }}
  {%- endif -%}
  {{ return({'versioned': keys, 'left': left_keys}) }}
{%- endmacro %}
