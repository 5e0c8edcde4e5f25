{#- Flink's win_hop case (batch output): HOP 5 / 10 minutes. -#}
{{ config(materialized='table') }}
select window_start, window_end, sum(price) as total_price
from ({{ timeweave.hop(ref('win_bid'), 'bidtime', '5 minutes', '10 minutes') }}) w
group by window_start, window_end
