{{ config(materialized='view') }}
-- Rows a temporal join cannot use (unknown op, NULL key or time), with the reason.
{{ timeweave.temporal_join_dead_letter(ref('orders_changelog'), ref('rates_dirty'), left_time='order_time',
                                       key='currency', time='update_time', format='changelog', op='op') }}
