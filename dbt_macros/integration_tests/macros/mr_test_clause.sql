{#- The clause the match_recognize test models share (tests/spark/test_match_recognize_doors.py runs the
    DataFrame door with the same text, read from this file). -#}
{% macro mr_test_clause() -%}
PARTITION BY k ORDER BY t
MEASURES FIRST(A.t) AS t0, LAST(A.t) AS t1, AVG(A.v) AS a, COUNT(*) AS n, CLASSIFIER() AS c
ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
PATTERN (A+ B) DEFINE A AS AVG(A.v) < 5 AND A.s <> 'it''s'
{%- endmacro %}
