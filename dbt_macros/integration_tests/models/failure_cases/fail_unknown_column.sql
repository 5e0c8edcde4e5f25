{{ config(enabled=var('timeweave_failure_cases')) }}
-- Must fail at compile time naming the argument and the column: rates have no column 'valid_since'.
{{ timeweave.temporal_join(ref('orders'), ref('rates_history'), left_time='order_time',
                           key='currency', time='valid_since') }}
