{#- Window Top-N: the 2 highest prices per 10-minute window and supplier (item breaks ties). -#}
{{ config(materialized='table') }}
select * from ({{ timeweave.window_top_n("(" ~ timeweave.tumble(ref('win_bid'), 'bidtime', '10 minutes') ~ ")",
                                          ['price DESC', 'item'], n=2, partition_by='supplier_id') }}) ranked
