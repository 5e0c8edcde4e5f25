{{ config(materialized='view') }}
-- Flink case tj_view_left, materialized as a view: the plan is plain Spark SQL (no session functions).
{{ timeweave.temporal_join(ref('orders'), ref('rates_history'), left_time='order_time',
                           key='currency', time='update_time', how='left',
                           right_columns=['conversion_rate'], valid_from='rate_time') }}
