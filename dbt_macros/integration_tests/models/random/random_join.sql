-- The cross-door equality test (tests/spark/test_every_door_equal.py) builds this model over random tables it
-- writes to the `timeweave_random` schema; disabled unless that test passes --vars '{timeweave_random: true}'.
{{ config(materialized='table', enabled=var('timeweave_random', false)) }}
{%- set orders = api.Relation.create(schema='timeweave_random', identifier='orders') -%}
{%- set rates = api.Relation.create(schema='timeweave_random', identifier='rates') -%}
select order_id, rate
from (
  {{ timeweave.temporal_join(orders, rates, left_time='order_time', key='currency', time='update_time',
                             format='changelog', op='op', sequence='seq', how='left', right_columns=['rate']) }}
) tj
