{#- Window deduplication: the last bid per 5-minute hop window of 10 minutes and supplier. -#}
{{ config(materialized='table') }}
select * from ({{ timeweave.window_deduplicate("(" ~ timeweave.hop(ref('win_bid'), 'bidtime', '5 minutes', '10 minutes') ~ ")",
                                                'bidtime', keys='supplier_id', keep='last', rank_column='rownum') }}) latest
