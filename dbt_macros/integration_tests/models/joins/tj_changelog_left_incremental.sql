{{ config(materialized='incremental', incremental_strategy='append') }}
-- Flink case tj_changelog_left, built incrementally: each run joins the orders newer than the table's
-- newest order.  var orders_until lets a test build it in two runs.
{% set new_orders %}
(select * from {{ ref('orders_changelog') }}
 where order_time < timestamp'{{ var("orders_until", "9999-12-31 00:00:00") }}'
 {% if is_incremental() %}and order_time > (select max(order_time) from {{ this }}){% endif %})
{% endset %}
select order_id, price, currency, conversion_rate, order_time, update_time as rate_time
from (
  {{ timeweave.temporal_join(new_orders, ref('rates_changelog'), left_time='order_time',
                             key='currency', time='update_time', format='changelog', op='op', how='left',
                             right_columns=['conversion_rate', 'update_time']) }}
) tj
