{#- timeweave.window_aggregate with ROLLUP over a HOP TVF: Flink's GROUP BY window_start, window_end, ROLLUP (...). -#}
{{ config(materialized='table') }}
{{ timeweave.window_aggregate("(" ~ timeweave.hop(ref('win_bid'), 'bidtime', '5 minutes', '10 minutes') ~ ")",
                              {'cnt': 'count(*)', 'total_price': 'sum(price)', 'big': 'count(*) FILTER (WHERE price > 3)',
                               'g': 'grouping(supplier_id)'},
                              rollup=['supplier_id', 'item']) }}
