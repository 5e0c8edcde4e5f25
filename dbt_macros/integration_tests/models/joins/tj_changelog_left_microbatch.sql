{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='order_time',
          enabled=var('timeweave_microbatch'),
          batch_size='hour', begin='2020-01-01', partition_by=['order_hour']) }}
-- Flink case tj_changelog_left, one hour per batch.  dbt filters ref('orders_changelog') to the batch
-- (the seed has event_time); temporal_join renders the versioned side unfiltered, so the batch starting
-- at 11:00 still finds JPY's version of 10:30 and the one at 10:00 USD's of 09:00.  dbt-spark's
-- microbatch overwrites the batch's partition.  Built only with var timeweave_microbatch and event-time
-- bounds (dbt_project.yml shows the command; the tests build the batches 10:00 to 14:00).
select order_id, price, currency, conversion_rate, order_time, update_time as rate_time,
       date_format(order_time, 'yyyy-MM-dd-HH') as order_hour
from (
  {{ timeweave.temporal_join(ref('orders_changelog'), ref('rates_changelog'), left_time='order_time',
                             key='currency', time='update_time', format='changelog', op='op', how='left',
                             right_columns=['conversion_rate', 'update_time']) }}
) tj
