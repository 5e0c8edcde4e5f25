-- CUMULATE 10 / 30 minutes over random bids, as a table: what the microbatch model random_win_cumulate_microbatch must equal
-- (tests/dbt/test_window_microbatch.py).
{{ config(materialized='table', enabled=var('timeweave_random_win', false)) }}
select window_start, window_end, window_time, item, count(*) as cnt, sum(price) as total, max(price) as top
from ({{ timeweave.cumulate(source('timeweave_random_win', 'bids'), 'bidtime', '10 minutes', '30 minutes') }}) w
group by window_start, window_end, window_time, item
