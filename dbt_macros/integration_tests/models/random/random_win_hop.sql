-- HOP 5 / 10 minutes over random bids, as a table: what the microbatch model random_win_hop_microbatch must equal
-- (tests/dbt/test_window_microbatch.py).
{{ config(materialized='table', enabled=var('timeweave_random_win', false)) }}
select window_start, window_end, window_time, item, count(*) as cnt, sum(price) as total, max(price) as top
from ({{ timeweave.hop(source('timeweave_random_win', 'bids'), 'bidtime', '5 minutes', '10 minutes') }}) w
group by window_start, window_end, window_time, item
