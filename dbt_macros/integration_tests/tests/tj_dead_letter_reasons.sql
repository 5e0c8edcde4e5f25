-- The dead letters of models/joins/rates_dirty.sql: one per unusable rates row, each with its reason.
-- A row is a failure (missing: expected, not listed; unexpected: listed, not expected).
with expected as (
  select * from values
    ('right', 'unknown op X in column op'),
    ('right', 'NULL key column currency'),
    ('right', 'NULL time column update_time')
    as t(side, reason)
),
actual as (select side, reason from {{ ref('tj_dead_letter') }})
select 'missing' as problem, * from (select * from expected except all select * from actual) m
union all
select 'unexpected' as problem, * from (select * from actual except all select * from expected) u
