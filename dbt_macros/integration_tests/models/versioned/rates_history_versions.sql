{{ config(materialized='view') }}
-- Flink's versioned view over an append-only history (tj_versioned_view_changelog): the open versions
-- (valid_to IS NULL) are Flink's final table.
{{ timeweave.versioned_view(ref('rates_history'), key='currency', time='update_time') }}
