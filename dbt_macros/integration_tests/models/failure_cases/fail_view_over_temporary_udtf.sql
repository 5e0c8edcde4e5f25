{{ config(enabled=var('timeweave_failure_cases'), materialized='view') }}
-- Must fail with Spark's error: a persistent view cannot reference a temporary (session) UDTF.  The
-- test registers tw_test_udtf on the session first.
select * from tw_test_udtf(3)
