{#- GENERATED from timeweave/spark/timeweave_windows_sql.sql (runtime/spark/ in the repository) by `python -m timeweave.dbt_package.generate`: do not edit; edit the source and regenerate
    (tests/dbt/test_package.py fails while this file differs from what the command writes). -#}
{#-
  THE batch plan of Flink's window TVFs (TUMBLE, HOP, CUMULATE, SESSION), as pure Jinja: no dbt context is
  used here, so the Python DataFrame and SQL doors render this very file with jinja2 (timeweave.spark.
  window_render) and the dbt macros tumble / hop / cumulate / session render it through adapter.dispatch.
  One plan, every batch door.  Calls to the temporal-join plan's helpers (identifier quoting, string
  constants) are written `timeweave.<macro>`, as dbt resolves a package's macros.

  Arguments are already validated window specs (runtime/core/windows/spec.py: Flink's rules) in integer
  milliseconds.  Semantics (the core's, runtime/core/windows/):
  - a row's time is its time column cut to the millisecond (floor, before 1970 too);
  - TUMBLE/HOP/CUMULATE windows start at offset + k * period (Flink's getWindowStartWithOffset:
    t - pmod(t - offset, period)); a window is [start, end);
  - SESSION: rows of one partition at most `gap` apart share a session [first row, last row + gap);
  - window_time = window_end - 1 ms; the three window columns have the time column's type;
  - TIMESTAMP (an instant, Flink's TIMESTAMP_LTZ) is aligned on the wall clock of `zone` (the session time
    zone; none = UTC, no shift) as Flink's TimeWindowUtil does: window bounds are wall-clock times, given
    back as the instants at which that wall clock shows them; TIMESTAMP_NTZ (Flink's TIMESTAMP) is not shifted;
  - a row with a NULL time is in no window: the TVF leaves it out and the dead letter lists it.
  Every step is a Spark SQL expression (no UDF): HOP and CUMULATE explode each row into its windows with
  explode(sequence(...)), SESSION numbers sessions with lag + running max over the partition.

  One batch of a run cut in event-time batches (dbt microbatch): `batch_start` / `batch_end` (epoch ms,
  instants, [start, end)) emit only the windows whose window_time lies in the batch (every window is emitted
  by exactly one batch), and read only the rows such windows can hold: from batch_start - `lookback` (default:
  the longest window, TUMBLE / HOP size, CUMULATE max_size; SESSION the gap, which the caller widens while
  sessions cross the read's start: timeweave__session_edge_sql) to batch_end (inclusive for SESSION: a row at
  the end could still extend a session).  Reading more never changes an emitted window, so both bounds get
  two days of slack where a time zone's wall clock aligns the windows (the widest change of one zone's UTC
  offset: Pacific/Apia skipped a day in 2011); UTC and TIMESTAMP_NTZ bounds are exact.
-#}

{#- Epoch milliseconds of a time column (`kind`: 'ltz' = Spark TIMESTAMP, 'ntz' = TIMESTAMP_NTZ), on the
    wall clock of `zone` for 'ltz' (from_utc_timestamp: the instant's local date-time read as UTC, Flink's
    toUtcTimestampMills).  unix_millis floors (-0.5 ms is -1), as the core's event_time_ms. -#}
{%- macro timeweave__win_ms(expr, kind, zone) -%}
{%- if kind == 'ntz' -%}
(timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {{ expr }}) - pmod(timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {{ expr }}), 1000L)) div 1000L
{%- elif zone -%}
unix_millis(from_utc_timestamp({{ expr }}, {{ timeweave.timeweave__str(zone) }}))
{%- else -%}
unix_millis({{ expr }})
{%- endif -%}
{%- endmacro -%}

{#- The time value of epoch milliseconds `ms` in the time column's type (the inverse of timeweave__win_ms;
    'ltz' with a zone: the instant at which the zone's wall clock shows it, Java's LocalDateTime.atZone). -#}
{%- macro timeweave__win_ts(ms, kind, zone) -%}
{%- if kind == 'ntz' -%}
timestampadd(MILLISECOND, {{ ms }}, TIMESTAMP_NTZ'1970-01-01 00:00:00')
{%- elif zone -%}
to_utc_timestamp(timestamp_millis({{ ms }}), {{ timeweave.timeweave__str(zone) }})
{%- else -%}
timestamp_millis({{ ms }})
{%- endif -%}
{%- endmacro -%}

{#- The columns' list, quoted, each prefixed by `prefix`. -#}
{%- macro timeweave__win_columns(columns, prefix='') -%}
{%- for c in columns -%}{{ prefix }}{{ timeweave.timeweave__q(c) }}{{ ", " if not loop.last }}{%- endfor -%}
{%- endmacro -%}

{#- The window TVF over `relation` (SQL text after FROM): the input's `columns`, then window_start,
    window_end, window_time; `function` is TUMBLE, HOP, CUMULATE or SESSION with its spec's values in ms. -#}
{%- macro timeweave__window_tvf_sql(relation, columns, time, function, kind='ltz', zone=none, size=none,
                                    slide=none, step=none, max_size=none, offset=0, gap=none,
                                    partition_by=[], batch_start=none, batch_end=none, lookback=none) -%}
{%- set bounds = timeweave.timeweave__window_read_bounds(function, kind, zone, batch_start, batch_end, size,
                                                        max_size, gap, lookback) | trim -%}
{%- set rows = timeweave.timeweave__window_rows_sql(relation, columns, time, function, kind, zone, size, slide,
    step, max_size, offset, gap, partition_by, bounds) -%}
{%- if batch_start is none -%}
{{ rows }}
{%- else -%}
SELECT * FROM ({{ rows }}) __tw_all
WHERE window_time >= {{ timeweave.timeweave__win_ts(batch_start ~ 'L', kind, none) }} AND window_time < {{ timeweave.timeweave__win_ts(batch_end ~ 'L', kind, none) }}
{%- endif -%}
{%- endmacro -%}

{#- The batch's read bounds, 'from,until' (epoch ms of the time column, instants; [from, until); from is empty
    for a negative lookback), or '' (no batch: the whole input). -#}
{%- macro timeweave__window_read_bounds(function, kind, zone, batch_start, batch_end, size=none, max_size=none,
                                        gap=none, lookback=none) -%}
{%- if batch_start is not none -%}
{%- set margin = 172800000 if (kind == 'ltz' and zone) else 0 -%}
{%- set back = lookback if lookback is not none else (gap if function == 'SESSION' else (max_size if function == 'CUMULATE' else size)) -%}
{#- a negative lookback: no lower bound (a SESSION whose edge did not settle reads the whole past) -#}
{{ (batch_start - back - margin) if back >= 0 else '' }},{{ batch_end + (1 if function == 'SESSION' else 0) + margin }}
{%- endif -%}
{%- endmacro -%}

{#- SESSION in one batch: how much further back (ms) the read must reach, as one row `missing`: NULL when no
    session the batch emits could hold a row before the read's start (each starts more than one gap after
    it, plus the time zone's slack).  The caller widens `lookback` by at least this and asks again. -#}
{%- macro timeweave__session_edge_sql(relation, columns, time, kind, zone, gap, partition_by, batch_start, batch_end,
                                      lookback) -%}
{%- set bounds = timeweave.timeweave__window_read_bounds('SESSION', kind, zone, batch_start, batch_end, gap=gap,
                                                         lookback=lookback) | trim -%}
{%- if not bounds.split(',')[0] -%}
SELECT CAST(NULL AS BIGINT) AS missing
{%- else -%}
{%- set edge = (bounds.split(',')[0] | int) + (172800000 if (kind == 'ltz' and zone) else 0) -%}
{%- set rows = timeweave.timeweave__window_rows_sql(relation, columns, time, 'SESSION', kind, zone, gap=gap,
                                                    partition_by=partition_by, read=bounds, keep_starts=true) -%}
SELECT max({{ edge }}L - (__tw_ws - {{ gap }}L)) AS missing
FROM ({{ rows }}) __tw_all
WHERE window_time >= {{ timeweave.timeweave__win_ts(batch_start ~ 'L', kind, none) }}
  AND window_time < {{ timeweave.timeweave__win_ts(batch_end ~ 'L', kind, none) }}
  AND __tw_ws - {{ gap }}L < {{ edge }}L
{%- endif -%}
{%- endmacro -%}

{#- The TVF's rows; `read` ('from,until' epoch ms, timeweave__window_read_bounds) limits the input rows read; `keep_starts` keeps the
    session's first row (__tw_ws, ms on the aligning clock) as a column. -#}
{%- macro timeweave__window_rows_sql(relation, columns, time, function, kind='ltz', zone=none, size=none,
                                     slide=none, step=none, max_size=none, offset=0, gap=none, partition_by=[],
                                     read='', keep_starts=false) -%}
{%- set q = timeweave.timeweave__q -%}
{%- set ts = timeweave.timeweave__win_ts -%}
{%- set cols = timeweave.timeweave__win_columns(columns) -%}
{%- set timed -%}
SELECT {{ cols }}, {{ timeweave.timeweave__win_ms(q(time), kind, zone) }} AS __tw_t
FROM {{ relation }}
WHERE {{ q(time) }} IS NOT NULL
{%- if read %}
{%- if read.split(',')[0] %}
  AND {{ q(time) }} >= {{ ts(read.split(',')[0] ~ 'L', kind, none) }}
{%- endif %}
  AND {{ q(time) }} < {{ ts(read.split(',')[1] ~ 'L', kind, none) }}
{%- endif %}
{%- endset -%}
{%- if function == 'SESSION' -%}
{%- set by = timeweave.timeweave__win_columns(partition_by) -%}
{%- set over = ("PARTITION BY " ~ by ~ " " if partition_by else "") ~ "ORDER BY __tw_t" -%}
SELECT {{ cols }}, {{ ts('__tw_ws', kind, zone) }} AS window_start, {{ ts('__tw_we', kind, zone) }} AS window_end, {{ ts('__tw_we - 1', kind, zone) }} AS window_time{{ ", __tw_ws" if keep_starts }}
FROM (
  SELECT *, max(__tw_t) OVER (PARTITION BY {{ by ~ ", " if partition_by }}__tw_ws) + {{ gap }}L AS __tw_we
  FROM (
    SELECT *, max(CASE WHEN __tw_prev IS NULL OR __tw_t - __tw_prev > {{ gap }}L THEN __tw_t END)
                OVER ({{ over }} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS __tw_ws
    FROM (SELECT *, lag(__tw_t) OVER ({{ over }}) AS __tw_prev FROM ({{ timed }}) __tw_in) __tw_lagged
  ) __tw_started
) __tw_sessions
{%- else -%}
{%- if function == 'TUMBLE' -%}
{%- set period, window_start = size, "__tw_t - pmod(__tw_t - (" ~ offset ~ "L), " ~ size ~ "L)" -%}
{%- set windowed = "SELECT *, " ~ window_start ~ " AS __tw_ws, " ~ window_start ~ " + " ~ size ~ "L AS __tw_we FROM (" ~ timed ~ ") __tw_in" -%}
{%- elif function == 'HOP' -%}
{#- the size / slide windows holding t start every slide, the last at the start of t's slide -#}
{%- set last = "__tw_t - pmod(__tw_t - (" ~ offset ~ "L), " ~ slide ~ "L)" -%}
{%- set windowed = "SELECT *, __tw_ws + " ~ size ~ "L AS __tw_we FROM (SELECT *, explode(sequence(" ~ last ~ " - " ~ (size - slide) ~ "L, " ~ last ~ ", " ~ slide ~ "L)) AS __tw_ws FROM (" ~ timed ~ ") __tw_in) __tw_exploded" -%}
{%- else -%}
{#- CUMULATE: the period's start, and every step end from t's step to the period's end -#}
{%- set period_start = "__tw_t - pmod(__tw_t - (" ~ offset ~ "L), " ~ max_size ~ "L)" -%}
{%- set first_end = "__tw_t - pmod(__tw_t - (" ~ offset ~ "L), " ~ step ~ "L) + " ~ step ~ "L" -%}
{%- set windowed = "SELECT *, explode(sequence(" ~ first_end ~ ", " ~ period_start ~ " + " ~ max_size ~ "L, " ~ step ~ "L)) AS __tw_we, " ~ period_start ~ " AS __tw_ws FROM (" ~ timed ~ ") __tw_in" -%}
{%- endif -%}
SELECT {{ cols }}, {{ ts('__tw_ws', kind, zone) }} AS window_start, {{ ts('__tw_we', kind, zone) }} AS window_end, {{ ts('__tw_we - 1', kind, zone) }} AS window_time
FROM ({{ windowed }}) __tw_windows
{%- endif -%}
{%- endmacro -%}

{#- The window TVF's dead letter: the rows of `relation` with a NULL time, as side 'input', the reason and
    the row as JSON (the shape of the other doors' dead letters). -#}
{%- macro timeweave__window_dead_letter_sql(relation, columns, time, reason) -%}
SELECT 'input' AS side, {{ timeweave.timeweave__str(reason) }} AS reason, to_json(named_struct({% for c in columns %}{{ timeweave.timeweave__str(c) }}, {{ timeweave.timeweave__q(c) }}{{ ", " if not loop.last }}{% endfor %})) AS row
FROM {{ relation }}
WHERE {{ timeweave.timeweave__q(time) }} IS NULL
{%- endmacro -%}

{#- Window aggregation with shared slices (Flink's slicing assigners), for aligned windows (TUMBLE, HOP,
    CUMULATE) and mergeable aggregates: each row updates one slice, a (key, slice) partial per slice (HOP:
    `slide` long; CUMULATE: `step`; TUMBLE: the window), then each partial joins the windows its slice belongs
    to and a window merges its slices' partials.  A HOP of size / slide windows per row costs one partial
    per key and slice, not size / slide rows per input row.  The rows equal the TVF's GROUP BY (window_start,
    window_end, window_time, keys): a window with rows has at least one non-empty slice, and every merge
    below is exact (callers keep floating-point SUM / AVG, whose additions would be reordered, on the TVF).
    `aggregates`: dicts {name, function: count | sum | min | max | avg, argument: quoted column or none
    (COUNT(*)), type: the aggregate's Spark type over the input, as SQL}; AVG is a sum and a count. -#}
{%- macro timeweave__window_aggregate_sql(relation, columns, time, function, keys, aggregates, kind='ltz', zone=none,
                                          size=none, slide=none, step=none, max_size=none, offset=0) -%}
{%- set q = timeweave.timeweave__q -%}
{%- set ts = timeweave.timeweave__win_ts -%}
{%- set by = timeweave.timeweave__win_columns(keys) -%}
{%- set slice = size if function == 'TUMBLE' else (slide if function == 'HOP' else step) -%}
{%- set partials, merged = [], [] -%}
{%- for a in aggregates -%}
{%- set p = "__tw_p" ~ loop.index0 -%}
{%- if a.function == 'count' -%}
{%- do partials.append("count(" ~ (a.argument or "*") ~ ") AS " ~ p) -%}
{%- do merged.append("CAST(sum(" ~ p ~ ") AS " ~ a.type ~ ")") -%}
{%- elif a.function == 'avg' -%}
{%- do partials.append("sum(CAST(" ~ a.argument ~ " AS DOUBLE)) AS " ~ p ~ ", count(" ~ a.argument ~ ") AS " ~ p ~ "c") -%}
{%- do merged.append("CAST(CASE WHEN sum(" ~ p ~ "c) = 0 THEN NULL ELSE sum(" ~ p ~ ") / sum(" ~ p ~ "c) END AS " ~ a.type ~ ")") -%}
{%- else -%}
{%- do partials.append(a.function ~ "(" ~ a.argument ~ ") AS " ~ p) -%}
{%- do merged.append("CAST(" ~ a.function ~ "(" ~ p ~ ") AS " ~ a.type ~ ")") -%}
{%- endif -%}
{%- endfor -%}
{%- set slice_end = "__tw_t - pmod(__tw_t - (" ~ offset ~ "L), " ~ slice ~ "L) + " ~ slice ~ "L" -%}
{%- set sliced -%}
SELECT {{ by ~ ", " if keys }}{{ slice_end }} AS __tw_se, {{ partials | join(", ") }}
FROM (
SELECT {{ timeweave.timeweave__win_columns(columns) }}, {{ timeweave.timeweave__win_ms(q(time), kind, zone) }} AS __tw_t
FROM {{ relation }}
WHERE {{ q(time) }} IS NOT NULL) __tw_in
GROUP BY {{ by ~ ", " if keys }}{{ slice_end }}
{%- endset -%}
{%- if function == 'TUMBLE' -%}
{#- a TUMBLE slice is its window: one aggregation, nothing to merge -#}
SELECT {{ ts("__tw_se - " ~ size ~ "L", kind, zone) }} AS window_start, {{ ts('__tw_se', kind, zone) }} AS window_end, {{ ts('__tw_se - 1', kind, zone) }} AS window_time{{ ", " ~ by if keys }}{% for a in aggregates %}, {{ "__tw_p" ~ loop.index0 }} AS {{ q(a.name) }}{% endfor %}
FROM (
SELECT {{ by ~ ", " if keys }}{{ slice_end }} AS __tw_se{% for a in aggregates %}, CAST({{ a.function }}({{ a.argument or "*" }}) AS {{ a.type }}) AS {{ "__tw_p" ~ loop.index0 }}{% endfor %}
FROM (
SELECT {{ timeweave.timeweave__win_columns(columns) }}, {{ timeweave.timeweave__win_ms(q(time), kind, zone) }} AS __tw_t
FROM {{ relation }}
WHERE {{ q(time) }} IS NOT NULL) __tw_in
GROUP BY {{ by ~ ", " if keys }}{{ slice_end }}) __tw_windows
{%- else -%}
{%- if function == 'HOP' -%}
{#- a slice ending at se is in the windows ending at se, se + slide, ..., se + size - slide -#}
{%- set windows = "SELECT *, explode(sequence(__tw_se, __tw_se + " ~ (size - slide) ~ "L, " ~ slide ~ "L)) AS __tw_we FROM (" ~ sliced ~ ") __tw_sliced" -%}
{%- else -%}
{#- CUMULATE: from the slice's own end to the end of its max_size period -#}
{%- set windows = "SELECT *, explode(sequence(__tw_se, __tw_se - " ~ step ~ "L - pmod(__tw_se - " ~ step ~ "L - (" ~ offset ~ "L), " ~ max_size ~ "L) + " ~ max_size ~ "L, " ~ step ~ "L)) AS __tw_we FROM (" ~ sliced ~ ") __tw_sliced" -%}
{%- endif -%}
{%- set window_start = ("__tw_we - " ~ size ~ "L") if function != 'CUMULATE' else ("__tw_we - 1L - pmod(__tw_we - 1L - (" ~ offset ~ "L), " ~ max_size ~ "L)") -%}
SELECT {{ ts(window_start, kind, zone) }} AS window_start, {{ ts('__tw_we', kind, zone) }} AS window_end, {{ ts('__tw_we - 1', kind, zone) }} AS window_time{{ ", " ~ by if keys }}{% for a in aggregates %}, {{ merged[loop.index0] }} AS {{ q(a.name) }}{% endfor %}
FROM ({{ windows }}) __tw_windows
GROUP BY {{ by ~ ", " if keys }}__tw_we
{%- endif -%}
{%- endmacro -%}
