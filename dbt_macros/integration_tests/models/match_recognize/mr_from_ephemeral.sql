{{ config(materialized='table', enabled=var('timeweave_match_recognize', false)) }}
select * from {{ ref('mr_ephemeral') }}
