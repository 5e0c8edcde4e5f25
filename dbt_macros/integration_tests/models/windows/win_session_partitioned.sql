{#- Flink's win_session_partitioned case: SESSION 2 minutes PARTITION BY supplier_id (Flink runs SESSION in
    streaming only; with its 1 s watermark delay no row is late, so its output is every row's). -#}
{{ config(materialized='table') }}
select window_start, window_end, supplier_id, sum(price) as total_price
from ({{ timeweave.session(ref('win_bid'), 'bidtime', '2 minutes', partition_by='supplier_id') }}) w
group by window_start, window_end, supplier_id
