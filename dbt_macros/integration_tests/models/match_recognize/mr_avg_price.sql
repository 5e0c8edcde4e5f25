-- Flink case mr_avg_price_double (Flink's documentation example), ONE ROW PER MATCH, as a table: the
-- session UDTF runs in the model's CREATE TABLE ... AS SELECT.
{{ config(materialized='table') }}
{{ timeweave.match_recognize(ref('ticker'), mr_avg_price_clause()) }}
