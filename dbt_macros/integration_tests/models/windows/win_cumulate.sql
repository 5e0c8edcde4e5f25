{#- Flink's win_cumulate case (batch output): CUMULATE 2 / 10 minutes, as an incremental model (each run adds
    the windows that start after the latest one already stored). -#}
{{ config(materialized='incremental', unique_key=none) }}
select window_start, window_end, sum(price) as total_price
from ({{ timeweave.cumulate(ref('win_bid'), 'bidtime', '2 minutes', '10 minutes') }}) w
{% if is_incremental() %}
where window_start > (select max(window_start) from {{ this }})
{% endif %}
group by window_start, window_end
