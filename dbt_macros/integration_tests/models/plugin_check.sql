-- Proves the dbt_timeweave plugin ran in this dbt invocation: it registers timeweave on dbt's session.
select '{{ session_registered() }}' as registered
