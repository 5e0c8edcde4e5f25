{#- Flink's win_tumble case (batch output): TUMBLE 10 minutes, SUM(price) per window. -#}
{{ config(materialized='table') }}
select window_start, window_end, sum(price) as total_price
from ({{ timeweave.tumble(ref('win_bid'), 'bidtime', '10 minutes') }}) w
group by window_start, window_end
