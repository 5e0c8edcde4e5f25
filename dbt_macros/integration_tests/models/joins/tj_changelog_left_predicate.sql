{{ config(materialized='view') }}
-- The extra predicate applies to the version found: a failing version pads NULLs (LEFT), it does not
-- make the join look for an older version.
{{ timeweave.temporal_join(ref('orders_changelog'), ref('rates_changelog'), left_time='order_time',
                           key='currency', time='update_time', format='changelog', op='op', how='left',
                           predicate='r.conversion_rate >= 1', right_prefix='rate_') }}
