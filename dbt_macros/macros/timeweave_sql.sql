{#- GENERATED from timeweave/spark/timeweave_sql.sql (runtime/spark/ in the repository) by `python -m timeweave.dbt_package.generate`: do not edit; edit the source and regenerate
    (tests/dbt/test_package.py fails while this file differs from what the command writes). -#}
{#-
  Calls between these macros are written `timeweave.<macro>`: dbt resolves a package's macros that way from
  any project, and the Python renderer provides a `timeweave` namespace over this file.

  THE temporal-join plan of timeweave, as pure Jinja: no dbt context is used here, so the Python
  DataFrame / SQL doors render this very file with jinja2 (timeweave.spark.render) and dbt models render
  it through the public macros.  One plan, every batch door.  This file is the source: the dbt package's
  macros/timeweave_sql.sql is a generated copy (`python -m timeweave.dbt_package.generate`; a test fails
  while they differ).

  The core's constants come through macros of the same namespace: timeweave.timeweave__reasons() (the
  dead-letter reasons of timeweave.core.bad_rows) and timeweave.timeweave__upsert_ops() / __delete_ops()
  (timeweave.core.changelog).  Python provides them from the core; the dbt package has them generated
  (macros/_timeweave_core.sql).

  Rules implemented (the same rules runtime/core/versioned.py states for the streaming operator):
  - a version is valid from its time (inclusive) to the key's next event (exclusive);
  - a delete event ends validity at its time; a later upsert starts a new version;
  - ties (same key and time): the highest sequence (last in input order) wins;
  - the extra predicate is applied to the version found, never used to search for another one;
  - a left row with a NULL key or NULL time can never match: a LEFT join keeps it, unmatched (right side
    NULL), as SQL's LEFT JOIN, Flink and DuckDB do; an INNER join drops it and the dead letter lists it
    (timeweave__probe_sql and timeweave__dead_letter_sql, the two places that read `how` for it).

  - without key columns (key = []) the versioned table is one history: every left row probes it (a constant
    key __tw_k0 = 0 on both sides; the probe still spreads the left rows over the history's buckets);
  - the time is any orderable column, in one time domain on both sides (timeweave.core.spec.TIME_DOMAINS,
    `time_domain`): 'timestamp' (TIMESTAMP / TIMESTAMP_NTZ, read as µs), 'date', 'numeric' (integers,
    decimals, floating point).  Ranges are checked on exact values (timeweave__time_exact); only the
    bucket numbers of numeric times go through DOUBLE, a monotone map, so a bucket never loses a match.

  Plan: see timeweave__matched_sql (a per-key bucketed range join: no sort of the left side, no
  per-key range join multiplying rows by versions, skew-proof bucket widths).

  Relations (`left`, `right`) are SQL text: a table name, a ref() or "(subquery)".
  Column lists are explicit; the public dbt macros introspect them, Python passes the DataFrame's.
-#}

{#- An identifier (column, alias) from users or data, quoted: inside backticks Spark reads every character
    literally except the backtick, written twice (no backslash escapes, no configuration changes that). -#}
{%- macro timeweave__q(name) -%}
`{{ name | replace('`', '``') }}`
{%- endmacro -%}

{#- Any text from users or data (a column name in a reason or as a named_struct field, an op code) as a SQL
    STRING expression whose SQL text holds none of the text's characters: CAST(X'<UTF-8 hex>' AS STRING).
    Escaping is not relied upon: Spark's string literals take backslash escapes, doubled quotes and
    adjacent-literal concatenation, and `spark.sql.parser.escapedStringLiterals` turns the backslash rules
    off, so an escaped literal means different things under different settings.  Hex digits mean one thing
    everywhere.  The cast of a binary literal is foldable, so it is accepted where Spark wants a constant
    (named_struct field names, a UDTF's constant argument).  Plain text ([A-Za-z0-9_ ]) stays a readable
    '...' literal: those characters are inert in a literal under every setting.
    timeweave.spark.render.sql_string renders this macro for Python, so both doors share the one rule. -#}
{%- macro timeweave__str(text) -%}
{%- set s = text | string -%}
{%- if s | list | reject('in', 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_ ') | list | length == 0 -%}
'{{ s }}'
{%- else -%}
CAST(X'{{ s.encode('utf-8').hex() | upper }}' AS STRING)
{%- endif -%}
{%- endmacro -%}

{%- macro timeweave__in_list(values) -%}
{%- for v in values -%}{{ timeweave.timeweave__str(v) }}{{ ", " if not loop.last }}{%- endfor -%}
{%- endmacro -%}

{#- Input order when no sequence column is given: file path, then position (rows of one file keep their
    order; rows of different files are ordered by path).  Give a `sequence` column for full control. -#}
{%- macro timeweave__input_order() -%}
named_struct('file', input_file_name(), 'pos', monotonically_increasing_id())
{%- endmacro -%}

{#- SQL boolean: is this right row a delete?  NULL means an unknown op (dead letter). -#}
{%- macro timeweave__deleted_expr(format, op, delete_flag, upsert_ops, delete_ops) -%}
{%- if format == 'changelog' -%}
CASE WHEN trim({{ timeweave.timeweave__q(op) }}) IN ({{ timeweave.timeweave__in_list(upsert_ops) }}) THEN false WHEN trim({{ timeweave.timeweave__q(op) }}) IN ({{ timeweave.timeweave__in_list(delete_ops) }}) THEN true END
{%- elif format == 'upsert' and delete_flag -%}
coalesce({{ timeweave.timeweave__q(delete_flag) }}, false)
{%- else -%}
false
{%- endif -%}
{%- endmacro -%}

{#- SQL string: why this row cannot be used (NULL when it can).  The reasons' text is the core's
    (timeweave.core.bad_rows.REJECT_REASONS: "{column}" is the column, "{op}" the op code read). -#}
{%- macro timeweave__reject_reason(side, key, time, format='append', op=none, delete_flag=none, upsert_ops=[], delete_ops=[]) -%}
{%- set reasons = timeweave.timeweave__reasons() -%}
CASE
{%- for k in key %}
  WHEN {{ timeweave.timeweave__q(k) }} IS NULL THEN {{ timeweave.timeweave__str(reasons['null_key'] | replace('{column}', k)) }}
{%- endfor %}
  WHEN {{ timeweave.timeweave__q(time) }} IS NULL THEN {{ timeweave.timeweave__str(reasons['null_time'] | replace('{column}', time)) }}
{%- if side == 'right' and format == 'changelog' %}
{%- set around = reasons['unknown_op'].split('{op}') %}
  WHEN ({{ timeweave.timeweave__deleted_expr(format, op, delete_flag, upsert_ops, delete_ops) }}) IS NULL THEN concat({{ timeweave.timeweave__str(around[0] | replace('{column}', op)) }}, coalesce(cast({{ timeweave.timeweave__q(op) }} AS STRING), {{ timeweave.timeweave__str(reasons['null_op']) }}), {{ timeweave.timeweave__str(around[1] | replace('{column}', op)) }})
{%- endif %}
END
{%- endmacro -%}

{#- How many key columns the plan's relations carry (__tw_k0 ...): a keyless table has the one constant key. -#}
{%- macro timeweave__key_count(key) -%}
{{ [key | length, 1] | max }}
{%- endmacro -%}

{#- The key columns __tw_k<i> of one side's row (a trailing comma follows): the constant 0 for a keyless table. -#}
{%- macro timeweave__key_columns(key) -%}
{%- for k in key %}{{ timeweave.timeweave__q(k) }} AS __tw_k{{ loop.index0 }}, {% endfor %}{% if not key %}0 AS __tw_k0, {% endif %}
{%- endmacro -%}

{#- A time column's value as the plan carries it (__tw_t, the validity columns): a TIMESTAMP for the
    'timestamp' domain (TIMESTAMP_NTZ read on the session's clock, as before), the column itself otherwise. -#}
{%- macro timeweave__time_value(expr, time_domain='timestamp') -%}
{%- if time_domain == 'timestamp' -%}CAST({{ expr }} AS TIMESTAMP){%- else -%}{{ expr }}{%- endif -%}
{%- endmacro -%}

{#- A time value (timeweave__time_value's) as what ranges are checked on, exactly: µs since the epoch, days since
    the epoch, or the number itself. -#}
{%- macro timeweave__time_exact(expr, time_domain='timestamp') -%}
{%- if time_domain == 'timestamp' -%}unix_micros({{ expr }}){%- elif time_domain == 'date' -%}CAST(unix_date({{ expr }}) AS BIGINT){%- else -%}{{ expr }}{%- endif -%}
{%- endmacro -%}

{#- An exact time (timeweave__time_exact's) as the number buckets are cut on: BIGINT as it is (µs, days), a
    number as DOUBLE (monotone: equal or ordered values keep their order, so buckets stay exact covers). -#}
{%- macro timeweave__ordinal(exact, time_domain='timestamp') -%}
{%- if time_domain == 'numeric' -%}CAST({{ exact }} AS DOUBLE){%- else -%}{{ exact }}{%- endif -%}
{%- endmacro -%}

{#- The bucket (within its key) of an ordinal `o`, over the statistics `s` (an alias): clamped to the key's
    buckets.  BIGINT ordinals: o DIV width, clamped to [__tw_b0, __tw_umax DIV width].  DOUBLE ordinals: the
    offset from the key's smallest time in widths, clamped to [0, __tw_nb - 1] before the floor (no overflow;
    NaN, which Spark orders above every number, falls in the last bucket as it must).  `o` NULL gives NULL. -#}
{%- macro timeweave__bucket_of(o, s, time_domain='timestamp') -%}
{%- if time_domain == 'numeric' -%}
floor(least(greatest((least(greatest({{ o }}, {{ s }}.__tw_umin), {{ s }}.__tw_umax) - {{ s }}.__tw_umin) / {{ s }}.__tw_w, 0D), CAST({{ s }}.__tw_nb - 1 AS DOUBLE)))
{%- else -%}
least(greatest({{ o }} DIV {{ s }}.__tw_w, {{ s }}.__tw_b0), {{ s }}.__tw_umax DIV {{ s }}.__tw_w)
{%- endif -%}
{%- endmacro -%}

{#- The right side as version events: __tw_k<i>, __tw_t, __tw_seq, __tw_deleted, __tw_p (all right columns). -#}
{%- macro timeweave__right_events_sql(right, right_columns, key, time, format='append', op=none, delete_flag=none, sequence=none, upsert_ops=[], delete_ops=[], time_domain='timestamp') -%}
SELECT
  {{ timeweave.timeweave__key_columns(key) }}
  {{ timeweave.timeweave__time_value(timeweave.timeweave__q(time), time_domain) }} AS __tw_t,
  {% if sequence %}{{ timeweave.timeweave__q(sequence) }}{% else %}{{ timeweave.timeweave__input_order() }}{% endif %} AS __tw_seq,
  {{ timeweave.timeweave__deleted_expr(format, op, delete_flag, upsert_ops, delete_ops) }} AS __tw_deleted,
  named_struct({% for c in right_columns %}{{ timeweave.timeweave__str(c) }}, {{ timeweave.timeweave__q(c) }}{{ ", " if not loop.last }}{% endfor %}) AS __tw_p
FROM {{ right }}
WHERE ({{ timeweave.timeweave__reject_reason('right', key, time, format, op, delete_flag, upsert_ops, delete_ops) }}) IS NULL
{%- endmacro -%}

{#- Left rows matched with the version in force at their time, in the flat form timeweave__probe_sql
    describes: no version (__tw_found false, __tw_p NULL) before the key's first version or inside a deleted
    span.  Left rows with a NULL key or time find no version; the probe keeps them for a LEFT join only
    (see timeweave__probe_sql).

    Plan (a bucketed range join, exact; O(n log n) in the versions and O(1) probes per left row):
    1. one event per (key, time): the newest by timeweave__version_order wins (ROW_NUMBER);
    2. validity end = the key's next event time (LEAD); deletes end intervals and are then dropped;
    3. per key, a bucket width w = key's time span / its event count, so a key has about 2 buckets per
       version however skewed the keys are (a hot key gets narrow buckets, a quiet key wide ones);
    4. each interval is exploded into the buckets it covers; a left row probes the (key, bucket) of its
       time (clamped to the key's first and last bucket; the open-ended version lives in the last) and
       checks the exact range.  Intervals of a key are disjoint, so at most one matches.
    The left side is never sorted nor shuffled when the versions fit a broadcast; a hot key spreads over
    many buckets otherwise. -#}
{%- macro timeweave__matched_sql(left, left_columns, left_key, left_time, events, nkeys, how='inner', time_domain='timestamp') -%}
WITH __tw_ev AS ({{ events }}),
__tw_st AS ({{ timeweave.timeweave__stats_sql('__tw_ev', nkeys, time_domain) }}),
__tw_iv AS ({{ timeweave.timeweave__intervals_sql('__tw_ev', '__tw_st', nkeys, time_domain) }})
{{ timeweave.timeweave__probe_sql(left, left_columns, left_key, left_time, '__tw_st', '__tw_iv', nkeys, how, time_domain) }}
{%- endmacro -%}

{#- Step 3's per-key statistics over version events: bucket width __tw_w, the last event time __tw_umax, the
    key's first bucket __tw_b0, its bucket count __tw_nb and __tw_off, where its buckets start in one
    numbering of all keys' buckets (keys in order).  The probe's second lookup is then by one BIGINT (the
    global bucket __tw_gb), a direct array index in Spark's long hashed relation, instead of hashing and
    comparing a (key..., bucket) row per left row.  The window has no partition: one row per key. -#}
{%- macro timeweave__stats_sql(events, nkeys, time_domain='timestamp') -%}
{%- set ks = [] -%}{%- for i in range(nkeys | int) -%}{%- do ks.append('__tw_k' ~ i) -%}{%- endfor -%}
{%- set u = timeweave.timeweave__ordinal(timeweave.timeweave__time_exact('__tw_t', time_domain), time_domain) -%}
SELECT *, coalesce(sum(__tw_nb) OVER (ORDER BY {{ ks | join(', ') }} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0L) AS __tw_off
FROM (
{%- if time_domain == 'numeric' %}
  {#- DOUBLE ordinals: buckets 0 .. n of width (max - min) / n from the key's smallest time (a width that is
      not a positive finite number, for one distinct time or infinite ones, is 1: still exact, coarser). #}
  SELECT * EXCEPT (__tw_n), 0L AS __tw_b0, __tw_n + 1 AS __tw_nb
  FROM (
    SELECT *, CASE WHEN (__tw_umax - __tw_umin) / __tw_n > 0D AND (__tw_umax - __tw_umin) / __tw_n < double('Infinity')
      THEN (__tw_umax - __tw_umin) / __tw_n ELSE 1D END AS __tw_w
    FROM (
      SELECT {{ ks | join(', ') }}, count(1) AS __tw_n, max({{ u }}) AS __tw_umax, min({{ u }}) AS __tw_umin
      FROM {{ events }}
      GROUP BY {{ ks | join(', ') }}
    ) __tw_a
  ) __tw_b
{%- else %}
  SELECT *, __tw_umax DIV __tw_w - __tw_b0 + 1 AS __tw_nb
  FROM (
    SELECT *, __tw_umin DIV __tw_w AS __tw_b0
    FROM (
      SELECT {{ ks | join(', ') }}, greatest(1L, (max({{ u }}) - min({{ u }})) DIV count(1)) AS __tw_w,
        max({{ u }}) AS __tw_umax, min({{ u }}) AS __tw_umin
      FROM {{ events }}
      GROUP BY {{ ks | join(', ') }}
    ) __tw_a
  ) __tw_b
{%- endif %}
) __tw_c
{%- endmacro -%}

{#- The version order, the one rule of which event of a key is newer: a later time wins, and at equal times the
    higher sequence (the input order when the table has none).  `form='newest_first'`: an ORDER BY list, the newest
    event first (step 1's ROW_NUMBER keeps it; the versioned view's likewise); `form='key'`: one comparable value,
    the newest event's the greatest (timeweave__newest_sql's max_by / min_by).  `time` and `sequence` are SQL
    expressions. -#}
{%- macro timeweave__version_order(time, sequence, form='key') -%}
{%- if form == 'newest_first' -%}
{{ time }} DESC, {{ sequence }} DESC
{%- else -%}
named_struct('t', {{ time }}, 's', {{ sequence }})
{%- endif -%}
{%- endmacro -%}

{#- Steps 1, 2 and 4: validity intervals of the versions (deletes dropped), exploded into their buckets
    (__tw_bucket within the key, __tw_gb in the numbering of all keys' buckets the statistics define). -#}
{%- macro timeweave__intervals_sql(events, stats, nkeys, time_domain='timestamp') -%}
{%- set ks = [] -%}{%- for i in range(nkeys | int) -%}{%- do ks.append('__tw_k' ~ i) -%}{%- endfor -%}
{%- set from_u = timeweave.timeweave__ordinal(timeweave.timeweave__time_exact('__tw_iv.__tw_t', time_domain), time_domain) -%}
{%- set to_exact = timeweave.timeweave__time_exact('__tw_iv.__tw_valid_to', time_domain) -%}
SELECT {{ ks | join(', ') }}, __tw_t, __tw_valid_to, __tw_p, __tw_bucket, __tw_off + __tw_bucket - __tw_b0 AS __tw_gb
FROM (
  SELECT __tw_iv.*, __tw_s2.__tw_w, __tw_s2.__tw_off, __tw_s2.__tw_b0,
{%- if time_domain == 'numeric' %}
    {#- the interval's buckets: from its start's to its end's (inclusive: a DOUBLE has no "just below") #}
    explode(sequence({{ timeweave.timeweave__bucket_of(from_u, '__tw_s2', time_domain) }},
                     coalesce({{ timeweave.timeweave__bucket_of(timeweave.timeweave__ordinal(to_exact, time_domain), '__tw_s2', time_domain) }}, __tw_s2.__tw_nb - 1))) AS __tw_bucket
{%- else %}
    explode(sequence({{ from_u }} DIV __tw_s2.__tw_w,
                     coalesce({{ to_exact }} - 1, __tw_s2.__tw_umax) DIV __tw_s2.__tw_w)) AS __tw_bucket
{%- endif %}
  FROM (
    SELECT *, LEAD(__tw_t) OVER (PARTITION BY {{ ks | join(', ') }} ORDER BY __tw_t) AS __tw_valid_to
    FROM (
      SELECT *, ROW_NUMBER() OVER (PARTITION BY {{ ks | join(', ') }}, __tw_t ORDER BY {{ timeweave.timeweave__version_order('__tw_t', '__tw_seq', 'newest_first') }}) AS __tw_rn
      FROM {{ events }}
    ) __tw_d
    WHERE __tw_rn = 1
  ) __tw_iv
  JOIN {{ stats }} __tw_s2 ON {% for k in ks %}__tw_iv.{{ k }} = __tw_s2.{{ k }}{{ " AND " if not loop.last }}{% endfor %}
  WHERE NOT __tw_iv.__tw_deleted
) __tw_x
{%- endmacro -%}

{#- The version rule of steps 1 and 2 as one aggregate: per key (and per `group` column, when given) the newest
    event by timeweave__version_order (the order step 1's ROW_NUMBER keeps) is the version in force after those events (or the delete that ended the last one).
    `oldest`: the first event instead (the one that ends the version in force before them).  The backfill's
    state at a slice edge is this over the events before the edge.  Output: the key columns (and `group`) and
    `__tw_row`, the chosen event's `columns` as a struct (a sort aggregate: max_by of a struct has no
    fixed-width buffer; no window over all the events). -#}
{%- macro timeweave__newest_sql(events, columns, key, time, sequence, group=none, oldest=false) -%}
{#- A keyless table without `group` groups by a constant: one row for the history, none for no events. -#}
SELECT {% for k in key %}{{ timeweave.timeweave__q(k) }}, {% endfor %}{% if group %}{{ timeweave.timeweave__q(group) }}, {% endif -%}
  {{ 'min_by' if oldest else 'max_by' }}(named_struct({% for c in columns %}{{ timeweave.timeweave__str(c) }}, {{ timeweave.timeweave__q(c) }}{{ ", " if not loop.last }}{% endfor %}),
    {{ timeweave.timeweave__version_order(timeweave.timeweave__q(time), timeweave.timeweave__q(sequence)) }}) AS __tw_row
FROM {{ events }}
GROUP BY {% for k in key %}{{ timeweave.timeweave__q(k) }}{{ ", " if not loop.last }}{% endfor %}{% if group %}{{ ", " if key }}{{ timeweave.timeweave__q(group) }}{% elif not key %}'one history'{% endif %}
{%- endmacro -%}

{#- The probe: each valid left row looks up the (key, bucket) of its time (one global bucket number) and checks
    the exact range.
    Output (the flat `matched` relation finalize reads): the left columns as __tw_c<i> (by position in
    left_columns), __tw_p (the version's struct of right columns, NULL without a version), __tw_found,
    __tw_vf / __tw_vt (the version's validity).  The left row travels through both joins as plain columns:
    a struct of it was built per row and taken apart again after the joins (with the second lookup, most
    of the probe's per-row CPU at 10 M rows), and flat columns the output does not read are pruned.
    A left row with a NULL key or NULL time finds no statistics (NULL never equals) and so no version: a
    LEFT join (how='left') keeps it, unmatched; an INNER join filters it out here (it is a dead letter), so
    it travels through neither join. -#}
{%- macro timeweave__probe_sql(left, left_columns, left_key, left_time, stats, intervals, nkeys, how='inner', time_domain='timestamp') -%}
{%- set ks = [] -%}{%- for i in range(nkeys | int) -%}{%- do ks.append('__tw_k' ~ i) -%}{%- endfor -%}
SELECT {% for c in left_columns %}__tw_lb.__tw_c{{ loop.index0 }}, {% endfor %}__tw_b.__tw_p,
  __tw_b.__tw_t IS NOT NULL AS __tw_found, __tw_b.__tw_t AS __tw_vf, __tw_b.__tw_valid_to AS __tw_vt
FROM (
  SELECT __tw_lr.*,
    -- the key's bucket of the row's time, clamped to the key's buckets (a row outside the key's first
    -- and last event cannot match an interval in the clamped bucket either: the range check holds)
    __tw_s.__tw_off + {{ timeweave.timeweave__bucket_of(timeweave.timeweave__ordinal('__tw_lr.__tw_lu', time_domain), '__tw_s', time_domain) }} - __tw_s.__tw_b0 AS __tw_gb
  FROM (
    SELECT {{ timeweave.timeweave__key_columns(left_key) }}{{ timeweave.timeweave__time_exact(timeweave.timeweave__time_value(timeweave.timeweave__q(left_time), time_domain), time_domain) }} AS __tw_lu
      {%- for c in left_columns %}, {{ timeweave.timeweave__q(c) }} AS __tw_c{{ loop.index0 }}{% endfor %}
    FROM {{ left }}
{%- if how != 'left' %}
    WHERE ({{ timeweave.timeweave__reject_reason('left', left_key, left_time) }}) IS NULL
{%- endif %}
  ) __tw_lr
  LEFT JOIN {{ stats }} __tw_s ON {% for k in ks %}__tw_lr.{{ k }} = __tw_s.{{ k }}{{ " AND " if not loop.last }}{% endfor %}
) __tw_lb
LEFT JOIN {{ intervals }} __tw_b
ON __tw_lb.__tw_gb = __tw_b.__tw_gb
  AND __tw_lb.__tw_lu >= {{ timeweave.timeweave__time_exact('__tw_b.__tw_t', time_domain) }}
  AND (__tw_b.__tw_valid_to IS NULL OR __tw_lb.__tw_lu < {{ timeweave.timeweave__time_exact('__tw_b.__tw_valid_to', time_domain) }})
{%- endmacro -%}

{#- Join type, extra predicate, projection: the one finalize step of every door (batch and streaming).
    `matched` is flat: the left columns as __tw_c<i> (by position in left_columns), __tw_p (struct of the
    version's right columns, NULL without one), __tw_found (a version is in force), __tw_vf / __tw_vt (its
    validity).  output_right: [[source_column, output_name], ...].  The sides are structs named by their
    aliases only for the predicate and nested=true (the SQL door's outer query reads `o.col` / `r.col`); the
    plain output reads the flat columns, so no struct is built per row for it. -#}
{%- macro timeweave__finalize_flat_sql(matched, left_columns, right_columns, output_right, how='inner', predicate=none, left_alias='l', right_alias='r', valid_from=none, valid_to=none, nested=false) -%}
{%- set left_struct -%}
named_struct({% for c in left_columns %}{{ timeweave.timeweave__str(c) }}, __tw_c{{ loop.index0 }}{{ ", " if not loop.last }}{% endfor %})
{%- endset -%}
SELECT
{%- for c in left_columns %}
  __tw_c{{ loop.index0 }} AS {{ timeweave.timeweave__q(c) }},
{%- endfor %}
{%- for pair in output_right %}
  CASE WHEN __tw_ok THEN __tw_p.{{ timeweave.timeweave__q(pair[0]) }} END AS {{ timeweave.timeweave__q(pair[1]) }},
{%- endfor %}
{%- if valid_from %}
  CASE WHEN __tw_ok THEN __tw_vf END AS {{ timeweave.timeweave__q(valid_from) }},
{%- endif %}
{%- if valid_to %}
  CASE WHEN __tw_ok THEN __tw_vt END AS {{ timeweave.timeweave__q(valid_to) }},
{%- endif %}
{%- if nested %}
  {{ left_struct }} AS {{ timeweave.timeweave__q(left_alias) }},
  CASE WHEN __tw_ok THEN __tw_p END AS {{ timeweave.timeweave__q(right_alias) }},
{%- endif %}
  __tw_ok AS __tw_matched
FROM (
  SELECT *, coalesce(__tw_found{% if predicate %} AND ({{ predicate }}){% endif %}, false) AS __tw_ok
  FROM (
    SELECT *{% if predicate %}, {{ left_struct }} AS {{ timeweave.timeweave__q(left_alias) }}, __tw_p AS {{ timeweave.timeweave__q(right_alias) }}{% endif %}
    FROM {{ matched }}
  ) __tw_m
) __tw_f
{%- if how == 'inner' %}
WHERE __tw_ok
{%- endif %}
{%- endmacro -%}

{#- finalize over the streaming operator's struct form: `matched` has __tw_l (struct of all left columns)
    and __tw_v (struct deleted, valid_from, valid_to, p; NULL when no version is in force), taken apart
    into the flat form of timeweave__finalize_flat_sql. -#}
{%- macro timeweave__finalize_sql(matched, left_columns, right_columns, output_right, how='inner', predicate=none, left_alias='l', right_alias='r', valid_from=none, valid_to=none, nested=false) -%}
{%- set flat -%}
(SELECT {% for c in left_columns %}__tw_l.{{ timeweave.timeweave__q(c) }} AS __tw_c{{ loop.index0 }}, {% endfor %}__tw_v.p AS __tw_p,
  (__tw_v IS NOT NULL AND NOT __tw_v.deleted) AS __tw_found, __tw_v.valid_from AS __tw_vf, __tw_v.valid_to AS __tw_vt
FROM {{ matched }}) __tw_fm
{%- endset -%}
{{ timeweave.timeweave__finalize_flat_sql(flat, left_columns, right_columns, output_right, how, predicate, left_alias, right_alias, valid_from, valid_to, nested) }}
{%- endmacro -%}

{#- The right side's half of the plan as two relations a sliced backfill builds once and every slice probes:
    what="stats" gives the per-key statistics, what="intervals" the exploded validity intervals.  `stats`
    names an already built statistics relation of the same `right` for the intervals to use (so they do
    not derive them again); `right_columns` are the columns the probe reads from a version (__tw_p). -#}
{%- macro timeweave__versions_sql(what, right, right_columns, key, time, format='append', op=none, delete_flag=none, sequence=none, upsert_ops=[], delete_ops=[], stats=none, time_domain='timestamp') -%}
{%- set nkeys = timeweave.timeweave__key_count(key) -%}
WITH __tw_ev AS ({{ timeweave.timeweave__right_events_sql(right, right_columns, key, time, format, op, delete_flag, sequence, upsert_ops, delete_ops, time_domain) }}),
__tw_st AS ({% if stats %}SELECT * FROM {{ stats }}{% else %}{{ timeweave.timeweave__stats_sql('__tw_ev', nkeys, time_domain) }}{% endif %})
{% if what == 'stats' %}SELECT * FROM __tw_st{% else %}{{ timeweave.timeweave__intervals_sql('__tw_ev', '__tw_st', nkeys, time_domain) }}{% endif %}
{%- endmacro -%}

{#- The left half: the temporal join of `left` against relations built by timeweave__versions_sql. -#}
{%- macro timeweave__probe_join_sql(left, stats, intervals, left_columns, right_columns, left_key, left_time, key, output_right, how='inner', predicate=none, left_alias='l', right_alias='r', valid_from=none, valid_to=none, time_domain='timestamp') -%}
SELECT * EXCEPT (__tw_matched) FROM (
{{ timeweave.timeweave__finalize_flat_sql(
    "(" ~ timeweave.timeweave__probe_sql(left, left_columns, left_key, left_time, stats, intervals, timeweave.timeweave__key_count(key), how, time_domain) ~ ") __tw_mm",
    left_columns, right_columns, output_right, how, predicate, left_alias, right_alias, valid_from, valid_to) }}
) __tw_out
{%- endmacro -%}

{#- The whole event-time temporal join as one query (the batch doors' plan). -#}
{%- macro timeweave__temporal_join_sql(left, right, left_columns, right_columns, left_key, left_time, key, time, output_right, how='inner', format='append', op=none, delete_flag=none, sequence=none, predicate=none, left_alias='l', right_alias='r', valid_from=none, valid_to=none, nested=false, upsert_ops=[], delete_ops=[], time_domain='timestamp') -%}
SELECT * EXCEPT (__tw_matched) FROM (
{{ timeweave.timeweave__finalize_flat_sql(
    "(" ~ timeweave.timeweave__matched_sql(left, left_columns, left_key, left_time,
        timeweave.timeweave__right_events_sql(right, right_columns, key, time, format, op, delete_flag, sequence, upsert_ops, delete_ops, time_domain),
        timeweave.timeweave__key_count(key), how, time_domain) ~ ") __tw_mm",
    left_columns, right_columns, output_right, how, predicate, left_alias, right_alias, valid_from, valid_to, nested) }}
) __tw_out
{%- endmacro -%}

{#- A versioned table's history: one row per version with [valid_from, valid_to); deletes end versions
    and do not appear themselves.  Tied events: timeweave__version_order decides. -#}
{%- macro timeweave__versioned_view_sql(right, right_columns, key, time, format='append', op=none, delete_flag=none, sequence=none, valid_from='valid_from', valid_to='valid_to', upsert_ops=[], delete_ops=[], time_domain='timestamp') -%}
{%- set ks = [] -%}{%- for i in range(timeweave.timeweave__key_count(key) | int) -%}{%- do ks.append('__tw_k' ~ i) -%}{%- endfor -%}
{%- set meta = [op, delete_flag, sequence] | reject('none') | list -%}
SELECT {% for c in right_columns if c not in meta %}__tw_p.{{ timeweave.timeweave__q(c) }} AS {{ timeweave.timeweave__q(c) }}, {% endfor %}__tw_t AS {{ timeweave.timeweave__q(valid_from) }}, __tw_next AS {{ timeweave.timeweave__q(valid_to) }}
FROM (
  SELECT *, LEAD(__tw_t) OVER (PARTITION BY {{ ks | join(', ') }} ORDER BY __tw_t) AS __tw_next
  FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY {{ ks | join(', ') }}, __tw_t ORDER BY {{ timeweave.timeweave__version_order('__tw_t', '__tw_seq', 'newest_first') }}) AS __tw_rn
    FROM ({{ timeweave.timeweave__right_events_sql(right, right_columns, key, time, format, op, delete_flag, sequence, upsert_ops, delete_ops, time_domain) }}) __tw_e
  ) __tw_d
  WHERE __tw_rn = 1
) __tw_h
WHERE NOT __tw_deleted
{%- endmacro -%}

{#- Rows of one side that cannot take part, with the reason: the dead-letter output.  `how` is the join's:
    a LEFT join outputs its left rows with a NULL key or time (unmatched), so they are no dead letters. -#}
{%- macro timeweave__dead_letter_sql(relation, columns, side, key, time, format='append', op=none, delete_flag=none, upsert_ops=[], delete_ops=[], how='inner') -%}
SELECT {% for c in columns %}{{ timeweave.timeweave__q(c) }}, {% endfor %}{{ timeweave.timeweave__str(side) }} AS __tw_side, __tw_reason AS reason FROM (
  SELECT *, {{ timeweave.timeweave__reject_reason(side, key, time, format, op, delete_flag, upsert_ops, delete_ops) }} AS __tw_reason
  FROM {{ relation }}
) __tw_r
WHERE __tw_reason IS NOT NULL{% if side == 'left' and how == 'left' %} AND false{% endif %}
{%- endmacro -%}
