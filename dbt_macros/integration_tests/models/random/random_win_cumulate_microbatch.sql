-- CUMULATE 10 / 30 minutes over random bids in hourly microbatches: each batch emits the windows whose window_time lies
-- in it, read from the source past dbt's batch filter (tests/dbt/test_window_microbatch.py).
{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='window_time',
          batch_size='hour', begin='2024-01-01', partition_by=['window_hour'],
          enabled=var('timeweave_random_win', false)) }}
select window_start, window_end, window_time, item, count(*) as cnt, sum(price) as total, max(price) as top,
       date_format(window_time, 'yyyy-MM-dd-HH') as window_hour
from ({{ timeweave.cumulate(source('timeweave_random_win', 'bids'), 'bidtime', '10 minutes', '30 minutes') }}) w
group by window_start, window_end, window_time, item
