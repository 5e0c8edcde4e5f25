-- SESSION 2 minutes per item over random bids, as a table: what the microbatch model random_win_session_microbatch must equal
-- (tests/dbt/test_window_microbatch.py).
{{ config(materialized='table', enabled=var('timeweave_random_win', false)) }}
select window_start, window_end, window_time, item, count(*) as cnt, sum(price) as total, max(price) as top
from ({{ timeweave.session(source('timeweave_random_win', 'bids'), 'bidtime', '2 minutes', partition_by='item') }}) w
group by window_start, window_end, window_time, item
