-- Flink case tj_view_inner: append-only rates, inner join.  The matched version's start is rate_time.
{{ timeweave.temporal_join(ref('orders'), ref('rates_history'), left_time='order_time',
                           key='currency', time='update_time',
                           right_columns=['conversion_rate'], valid_from='rate_time') }}
