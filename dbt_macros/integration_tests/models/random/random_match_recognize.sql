-- The MATCH_RECOGNIZE cross-door test (tests/spark/test_match_recognize_every_door.py) builds this model over the
-- random table it writes to the `timeweave_random_mr` schema, with the clause it passes in the same var:
-- --vars '{timeweave_random_mr: {clause: "..."}}'.  Disabled (and never rendered with a clause) otherwise.
{%- set random_mr = var('timeweave_random_mr', none) -%}
{{ config(materialized='table', enabled=random_mr is not none) }}
{%- if random_mr is not none %}
{{ timeweave.match_recognize(api.Relation.create(schema='timeweave_random_mr', identifier='events'), random_mr['clause']) }}
{%- else %}
select 1 as disabled
{%- endif %}
