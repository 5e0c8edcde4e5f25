{{ config(materialized='view') }}
-- The versioned table of an upsert stream with a delete flag: the same versions as rates_changelog_versions.
{{ timeweave.versioned_view(ref('rates_upsert'), key='currency', time='update_time', format='upsert',
                            delete_flag='deleted') }}
