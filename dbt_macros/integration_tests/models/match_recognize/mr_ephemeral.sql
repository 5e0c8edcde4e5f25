-- Ephemeral: inlined as a CTE into mr_from_ephemeral (the UDTF call then runs inside that model's query).
{{ config(materialized='ephemeral', enabled=var('timeweave_match_recognize', false)) }}
{{ timeweave.match_recognize('(select * from timeweave_mr.events)', mr_test_clause()) }}
