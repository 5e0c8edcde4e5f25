{#- The MATCH_RECOGNIZE clause of Flink case mr_avg_price_double (query.sql, between the parentheses). -#}
{% macro mr_avg_price_clause() -%}
PARTITION BY symbol
ORDER BY rowtime
MEASURES
    FIRST(A.rowtime) AS start_tstamp,
    LAST(A.rowtime) AS end_tstamp,
    AVG(CAST(A.price AS DOUBLE)) AS avgPrice
ONE ROW PER MATCH
AFTER MATCH SKIP PAST LAST ROW
PATTERN (A+ B)
DEFINE
    A AS AVG(A.price) < 15
{%- endmacro %}
