{{ config(materialized='view') }}
-- Versioned-side rows a temporal join cannot use, next to a good one.  A model, not a seed: dbt-spark's
-- session method loads an empty CSV field of a string column as the text 'None'.
select * from values
  ('+I', 'EUR', 1.14, timestamp'2020-01-01 09:00:00'),
  ('X', 'EUR', 1.16, timestamp'2020-01-01 10:00:00'),
  ('+U', cast(null as string), 1.20, timestamp'2020-01-01 10:00:00'),
  ('+I', 'USD', 1.00, cast(null as timestamp))
  as rates(op, currency, conversion_rate, update_time)
