-- The same match as an ephemeral model: inlined as a CTE into mr_avg_price_from_ephemeral.
{{ config(materialized='ephemeral') }}
{{ timeweave.match_recognize(ref('ticker'), mr_avg_price_clause()) }}
