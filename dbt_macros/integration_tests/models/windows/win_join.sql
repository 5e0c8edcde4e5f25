{#- Window join: bids of one supplier in the same 10-minute window, FULL join of the input with itself. -#}
{{ config(materialized='table') }}
select * from ({{ timeweave.window_join("(" ~ timeweave.tumble(ref('win_bid'), 'bidtime', '10 minutes') ~ ")",
                                         "(" ~ timeweave.tumble(ref('win_bid'), 'bidtime', '10 minutes') ~ ")",
                                         on='supplier_id', how='full', left_prefix='L_', right_prefix='R_') }}) joined
