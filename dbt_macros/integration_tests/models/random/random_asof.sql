-- The as-of test (tests/spark/test_asof_any_time.py) builds this model over tables it writes to the
-- `timeweave_asof` schema (any time type; `timeweave_asof_key`: ['k'] or [] for one history); disabled unless
-- that test passes --vars '{timeweave_asof: true, ...}'.
{{ config(materialized='table', enabled=var('timeweave_asof', false)) }}
{#- `timeweave_asof_text`: both sides as SQL text (their types read with DESCRIBE QUERY) instead of Relations -#}
{%- if var('timeweave_asof_text', false) -%}
{%- set orders = 'timeweave_asof.orders' -%}
{%- set rates = '(select * from timeweave_asof.rates)' -%}
{%- else -%}
{%- set orders = api.Relation.create(schema='timeweave_asof', identifier='orders') -%}
{%- set rates = api.Relation.create(schema='timeweave_asof', identifier='rates') -%}
{%- endif -%}
select id, rate
from (
  {{ timeweave.temporal_join(orders, rates, left_time='t', key=var('timeweave_asof_key', []), time='ut',
                             format='upsert', delete_flag='gone', sequence='seq', how='left', right_columns=['rate']) }}
) tj
