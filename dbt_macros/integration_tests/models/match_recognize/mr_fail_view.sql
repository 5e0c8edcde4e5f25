{{ config(enabled=var('timeweave_match_recognize_view', false), materialized='view') }}
-- Must fail with timeweave's message: match_recognize calls a session UDTF, which a stored view cannot
-- reference (tests/spark/test_match_recognize_doors.py enables it with --vars '{timeweave_match_recognize_view: true}').
{{ timeweave.match_recognize('(select 1 as x)', 'PATTERN (A) DEFINE A AS A.x > 0') }}
