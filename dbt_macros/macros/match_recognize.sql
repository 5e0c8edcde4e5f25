{#-
  timeweave.match_recognize: SQL:2016 row pattern recognition (Flink's MATCH_RECOGNIZE, with WITHIN)
      SELECT * FROM <relation> MATCH_RECOGNIZE ( <clause> )
  as one SELECT over the session UDTF timeweave_match_recognize, which the dbt_timeweave plugin registers
  (timeweave.register) and which runs the same engine-free core as timeweave.match_recognize.  `clause` is the
  text between the parentheses; the UDTF partitions and orders its input as the clause says, and checks
  the clause and its columns when Spark analyzes the model (errors give the line and column in `clause`).
  Output: ONE ROW PER MATCH -> PARTITION BY columns + measures; ALL ROWS PER MATCH -> PARTITION BY, ORDER BY
  columns, measures, other input columns.  AFTER MATCH SKIP defaults to the standard's PAST LAST ROW.

  Materializations: table, incremental, ephemeral.  Not view: Spark cannot store a view over a temporary
  (session) function, so a view fails with a clear message at compile time.

  Example (a model):
      {{ config(materialized='table') }}
      {{ timeweave.match_recognize(ref('ticker'), "
           PARTITION BY symbol ORDER BY rowtime
           MEASURES FIRST(A.rowtime) AS start_t, AVG(A.price) AS avg_price
           AFTER MATCH SKIP PAST LAST ROW
           PATTERN (A+ B) DEFINE A AS AVG(A.price) < 15") }}
-#}
{% macro match_recognize(relation, clause) -%}
  {{ return(adapter.dispatch('match_recognize', 'timeweave')(relation, clause)) }}
{%- endmacro %}

{% macro default__match_recognize(relation, clause) -%}
  {{ timeweave._unsupported_adapter('match_recognize') }}
{%- endmacro %}

{#- Spark SQL: a Python UDTF called with a TABLE argument
    (https://spark.apache.org/docs/latest/api/python/tutorial/sql/python_udtf.html). -#}
{% macro spark__match_recognize(relation, clause) -%}
  {%- set where = 'match_recognize' -%}
  {{ timeweave.require_session_functions(['timeweave_match_recognize'], where) }}
  {%- if clause is not string or not (clause | trim) -%}
    {{ timeweave._spec_error(where, 'clause', 'the MATCH_RECOGNIZE clause (the text between its parentheses) is required') }}
  {%- endif -%}
  {%- if relation is none or (relation is string and not (relation | trim)) -%}
    {{ timeweave._spec_error(where, 'relation', 'the input relation (ref(...), source(...) or "(select ...)") is required') }}
  {%- endif -%}
  {#- The clause as a constant STRING whose SQL text holds none of its characters (timeweave__str: no
      reliance on Spark's string escapes), like sql_string() in Python. -#}
select * from timeweave_match_recognize(TABLE({{ relation }}), {{ timeweave.timeweave__str(clause) }})
{%- endmacro %}
