{#- timeweave.window_aggregate with plain keys over a CUMULATE TVF, an expression aggregate among them. -#}
{{ config(materialized='table') }}
{{ timeweave.window_aggregate("(" ~ timeweave.cumulate(ref('win_bid'), 'bidtime', '2 minutes', '10 minutes') ~ ")",
                              {'total_price': 'sum(price)', 'spread': 'max(price) - min(price)'}, keys='supplier_id') }}
