{#- timeweave.default_upsert_ops() / default_delete_ops() through dbt's dispatch: disjoint, and together
    they name every op of the changelog seed (Flink's +I/-U/+U/-D).  A row is a failure. -#}
{% set upsert = timeweave.default_upsert_ops() %}
{% set delete = timeweave.default_delete_ops() %}
select op, 'neither an upsert nor a delete op' as problem
from {{ ref('rates_changelog') }}
where op not in ('{{ upsert | join("', '") }}') and op not in ('{{ delete | join("', '") }}')
{%- for op in upsert if op in delete %}
union all
select '{{ op }}' as op, 'both an upsert and a delete op' as problem
{%- endfor %}
