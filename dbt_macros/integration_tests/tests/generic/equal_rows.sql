{#- Rows of `model` (optionally filtered by `where`) equal the rows of `expected` (optionally filtered by
    `expected_where`) as multisets over `columns`.  Fails with one row per difference: problem = 'missing'
    (expected, not produced) or 'unexpected' (produced, not expected). -#}
{% test equal_rows(model, expected, columns, where=none, expected_where=none) %}
with actual_rows as (
  select {{ columns | join(', ') }} from {{ model }}{% if where %} where {{ where }}{% endif %}
),
expected_rows as (
  select {{ columns | join(', ') }} from {{ expected }}{% if expected_where %} where {{ expected_where }}{% endif %}
)
select 'missing' as problem, * from (select * from expected_rows except all select * from actual_rows) m
union all
select 'unexpected' as problem, * from (select * from actual_rows except all select * from expected_rows) u
{% endtest %}
