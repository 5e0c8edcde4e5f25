{{ config(materialized='view') }}
-- Flink case tj_changelog_inner: a changelog versioned table with -U/+U updates and -D deletes.
select order_id, price, currency, conversion_rate, order_time, update_time as rate_time
from (
  {{ timeweave.temporal_join(ref('orders_changelog'), ref('rates_changelog'), left_time='order_time',
                             key='currency', time='update_time', format='changelog', op='op',
                             right_columns=['conversion_rate', 'update_time']) }}
) tj
