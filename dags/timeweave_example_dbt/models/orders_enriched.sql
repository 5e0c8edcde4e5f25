-- Each order with the conversion rate valid at its order_time (NULL when none is: before the first
-- rate, after a delete, or an unknown currency) - Flink's
--   orders LEFT JOIN rates FOR SYSTEM_TIME AS OF orders.order_time ON orders.currency = rates.currency
{{ timeweave.temporal_join(ref('stg_orders'), ref('stg_rates_changelog'), left_time='order_time',
                           key='currency', time='update_time', format='changelog', op='op', how='left') }}
