{{ config(materialized='view') }}
-- The versioned table of a changelog with deletes: one row per version, [valid_from, valid_to).
{{ timeweave.versioned_view(ref('rates_changelog'), key='currency', time='update_time', format='changelog', op='op') }}
