{{ config(materialized='view') }}
-- Flink case tj_changelog_inner with the rates as an upsert table (seeds/rates_upsert.csv: the changelog's
-- rows keyed by currency, -U dropped, -D as deleted = true): the same versions, so Flink's rows again.
select order_id, price, currency, conversion_rate, order_time, update_time as rate_time
from (
  {{ timeweave.temporal_join(ref('orders_changelog'), ref('rates_upsert'), left_time='order_time',
                             key='currency', time='update_time', format='upsert', delete_flag='deleted',
                             right_columns=['conversion_rate', 'update_time']) }}
) tj
