{{ config(materialized='table') }}
select * from {{ ref('mr_avg_price_ephemeral') }}
