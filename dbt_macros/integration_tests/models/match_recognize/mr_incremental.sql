-- tests/spark/test_match_recognize_doors.py builds this model over the random table it writes to the
-- timeweave_mr schema; disabled unless that test passes --vars '{timeweave_match_recognize: true}'.
{{ config(materialized='incremental', enabled=var('timeweave_match_recognize', false)) }}
{{ timeweave.match_recognize(api.Relation.create(schema='timeweave_mr', identifier='events'), mr_test_clause()) }}
