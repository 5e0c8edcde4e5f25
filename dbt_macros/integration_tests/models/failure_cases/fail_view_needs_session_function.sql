{{ config(enabled=var('timeweave_failure_cases'), materialized='view') }}
-- Must fail with timeweave's message: an operator needing session functions cannot be a view.
{{ timeweave.require_session_functions(['timeweave_example_udtf'], 'example_operator') }}
select 1 as x
