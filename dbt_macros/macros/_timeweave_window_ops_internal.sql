{#-
  Private helpers of window_top_n, window_deduplicate and window_join: the rules of
  runtime/core/windows/ranking.py (RankRange, SortKey, dedup_order, join_type; Flink's) restated with the same
  messages (dbt's Jinja cannot import timeweave.core; tests/core/windows/test_win_ops_dbt_spec.py renders these
  macros and checks they accept and reject what the core does), the inputs' introspection, and the call of the
  window-ops plan timeweave_window_ops_sql.sql (the file the Python DataFrame door renders).
-#}

{#- ROW_NUMBER / RANK / DENSE_RANK and the kept ranks [lower, upper] (RankRange). -#}
{% macro _window_rank_range(function, lower, upper, where='window Top-N') -%}
  {%- set name = (function | string | upper) if function is string else function -%}
  {%- if name not in ['ROW_NUMBER', 'RANK', 'DENSE_RANK'] -%}
    {{ timeweave._spec_error(where, 'function', "expected one of ROW_NUMBER, RANK, DENSE_RANK, got '" ~ function ~ "'") }}
  {%- endif -%}
  {%- for value, argument in [(lower, 'lower'), (upper, 'upper')] -%}
    {%- if value is sameas true or value is sameas false or value is not integer or value < 1 -%}
      {{ timeweave._spec_error(where, argument, 'a rank bound is an integer >= 1 (ranks start at 1), got ' ~ ("'" ~ value ~ "'" if value is string else value)) }}
    {%- endif -%}
  {%- endfor -%}
  {%- if lower > upper -%}
    {{ timeweave._spec_error(where, 'upper', 'the rank range is empty: lower ' ~ lower ~ ' > upper ' ~ upper) }}
  {%- endif -%}
  {{ return({'function': name, 'lower': lower, 'upper': upper}) }}
{%- endmacro %}

{#- ORDER BY keys 'column [ASC|DESC] [NULLS FIRST|LAST]' (SortKey.parse) as [column, 'ASC NULLS FIRST'] pairs;
    NULLs are the smallest values unless NULLS says otherwise.  A back-quoted column may hold spaces and
    doubled back-quotes (`bid time`, `a``b`), as in SortKey.parse: the name is read up to its closing quote,
    never split on spaces, so the plan quotes the very column the user named. -#}
{% macro _window_sort_keys(order_by, where='window Top-N') -%}
  {%- set items = [order_by] if order_by is string else (order_by | list) -%}
  {%- if not items -%}
    {{ timeweave._spec_error(where, 'order_by', 'a window Top-N needs at least one ORDER BY key') }}
  {%- endif -%}
  {%- set keys = [] -%}
  {%- for item in items -%}
    {%- set text = (item | string).lstrip() if item is string else '' -%}
    {%- if text.startswith('`') -%}
      {#- states: 'in' (inside the quotes), 'tick' (a quote: closing, or the first of a doubled one), 'after' -#}
      {%- set ns = namespace(state='in', column='', rest='') -%}
      {%- for ch in text[1:] -%}
        {%- if ns.state == 'in' -%}
          {%- if ch == '`' -%}{%- set ns.state = 'tick' -%}{%- else -%}{%- set ns.column = ns.column ~ ch -%}{%- endif -%}
        {%- elif ns.state == 'tick' and ch == '`' -%}
          {%- set ns.column = ns.column ~ '`' -%}{%- set ns.state = 'in' -%}
        {%- else -%}
          {%- set ns.state = 'after' -%}{%- set ns.rest = ns.rest ~ ch -%}
        {%- endif -%}
      {%- endfor -%}
      {#- closed, and what follows the closing quote starts with a space (or nothing follows) -#}
      {%- set closed = ns.state != 'in' and ns.column and (not ns.rest or not ns.rest[:1].strip()) -%}
      {%- set column = ns.column if closed else '' -%}
      {%- set words = ns.rest.split() -%}
    {%- else -%}
      {%- set words = text.split() -%}
      {%- set column = words[0] if (words and '`' not in words[0]) else '' -%}
      {%- set words = words[1:] -%}
    {%- endif -%}
    {%- set rest = words | map('upper') | list -%}
    {%- set descending = rest[:1] == ['DESC'] -%}
    {%- set rest = rest[1:] if rest[:1] in (['ASC'], ['DESC']) else rest -%}
    {%- if not column or rest not in ([], ['NULLS', 'FIRST'], ['NULLS', 'LAST']) -%}
      {{ timeweave._spec_error(where, 'order_by', "expected 'column [ASC|DESC] [NULLS FIRST|LAST]', got '" ~ item ~ "'") }}
    {%- endif -%}
    {%- set nulls_first = (rest[1] == 'FIRST') if rest else (not descending) -%}
    {%- do keys.append([column, ('DESC' if descending else 'ASC') ~ (' NULLS FIRST' if nulls_first else ' NULLS LAST')]) -%}
  {%- endfor -%}
  {{ return(keys) }}
{%- endmacro %}

{#- The window join type of `how` (join_type). -#}
{% macro _window_join_type(how, where='window join') -%}
  {%- set aliases = {'LEFT OUTER': 'LEFT', 'RIGHT OUTER': 'RIGHT', 'FULL OUTER': 'FULL', 'OUTER': 'FULL',
                     'LEFT SEMI': 'SEMI', 'LEFT ANTI': 'ANTI'} -%}
  {%- set name = ((how | string).upper().split() | join(' ')) if how is string else how -%}
  {%- set name = aliases.get(name, name) -%}
  {%- if name not in ['INNER', 'LEFT', 'RIGHT', 'FULL', 'SEMI', 'ANTI'] -%}
    {{ timeweave._spec_error(where, 'how', "expected one of inner, left, right, full, semi, anti, got '" ~ how ~ "'") }}
  {%- endif -%}
  {{ return(name) }}
{%- endmacro %}

{#- A window TVF's output or a window aggregate (it has window_start and window_end), introspected. -#}
{% macro _window_ops_input(relation, argument, where) -%}
  {%- set info = timeweave._side(relation, argument, where, true) -%}
  {%- for name in ['window_start', 'window_end'] -%}
    {%- if name not in (info.columns | map('lower') | list) -%}
      {{ timeweave._spec_error(where, argument, "column '" ~ name ~ "' not found; available: " ~ (info.columns | sort) ~ " (pass a window TVF's output, e.g. \"(\" ~ timeweave.tumble(...) ~ \")\", or a window aggregate)") }}
    {%- endif -%}
  {%- endfor -%}
  {{ return(info) }}
{%- endmacro %}

{% macro _window_rank(relation, order, ranks, partition_by, rank_column, where) -%}
  {%- set keys = timeweave._names(partition_by, 'partition_by', where) -%}
  {%- if not execute -%}
    {{ return('') }}
  {%- endif -%}
  {%- set info = timeweave._window_ops_input(relation, 'relation', where) -%}
  {{ timeweave._require_columns(info, keys, 'partition_by', where) }}
  {{ timeweave._require_columns(info, order | map('first') | list, 'order_by', where) }}
  {%- if rank_column is not none and (rank_column | lower) in (info.columns | map('lower') | list) -%}
    {{ timeweave._spec_error(where, 'rank_column', "the input already has a column '" ~ rank_column ~ "'; name the rank otherwise (or none to leave it out)") }}
  {%- endif -%}
  {{ return(timeweave.timeweave__window_rank_sql(info.sql, info.columns, keys, order, function=ranks.function,
                                                 lower=ranks.lower, upper=ranks.upper, rank_column=rank_column)) }}
{%- endmacro %}

{% macro _window_top_n(relation, order_by, n, partition_by, function, lower, upper, rank_column) -%}
  {%- set where = 'window Top-N' -%}
  {%- if (n is none) == (upper is none) -%}
    {{ timeweave._spec_error(where, 'n', 'pass exactly one of n (ranks 1..n) and lower/upper') }}
  {%- endif -%}
  {%- set ranks = timeweave._window_rank_range(function, 1 if n is not none else (lower if lower is not none else 1),
                                               n if n is not none else upper, where) -%}
  {%- set order = timeweave._window_sort_keys(order_by, where) -%}
  {{ return(timeweave._window_rank(relation, order, ranks, partition_by, rank_column, where)) }}
{%- endmacro %}

{% macro _window_deduplicate(relation, time, keys, keep, rank_column) -%}
  {%- set where = 'window deduplication' -%}
  {%- if keep not in ['first', 'last'] -%}
    {{ timeweave._spec_error(where, 'keep', "expected 'first' or 'last', got '" ~ keep ~ "'") }}
  {%- endif -%}
  {%- if time is not string or not (time | trim) -%}
    {{ timeweave._spec_error(where, 'time', 'the time column to order by is required') }}
  {%- endif -%}
  {%- set order = [[time, 'DESC NULLS LAST' if keep == 'last' else 'ASC NULLS FIRST']] -%}
  {%- if execute -%}
    {%- set info = timeweave._window_ops_input(relation, 'relation', where) -%}
    {{ timeweave._require_columns(info, [time], 'time', where) }}
    {{ timeweave._require_kind(info, time, 'timestamp', 'time', where) }}
  {%- endif -%}
  {{ return(timeweave._window_rank(relation, order, {'function': 'ROW_NUMBER', 'lower': 1, 'upper': 1}, keys,
                                   rank_column, where)) }}
{%- endmacro %}

{% macro _window_join(left, right, on, how, left_prefix, right_prefix) -%}
  {%- set where = 'window join' -%}
  {%- set kind = timeweave._window_join_type(how, where) -%}
  {%- set items = [on] if on is string else (on | list) -%}
  {%- set pairs = [] -%}
  {%- for item in items -%}
    {%- if item is string -%}
      {%- do pairs.append([item, item]) -%}
    {%- elif item is not mapping and item is iterable and (item | list | length) == 2 -%}
      {%- do pairs.append(item | list) -%}
    {%- else -%}
      {{ timeweave._spec_error(where, 'on', 'expected a column name or a [left, right] pair, got ' ~ item) }}
    {%- endif -%}
  {%- endfor -%}
  {%- if not execute -%}
    {{ return('') }}
  {%- endif -%}
  {%- set l = timeweave._window_ops_input(left, 'left', where) -%}
  {%- set r = timeweave._window_ops_input(right, 'right', where) -%}
  {{ timeweave._require_columns(l, pairs | map('first') | list, 'on', where) }}
  {{ timeweave._require_columns(r, pairs | map('last') | list, 'on', where) }}
  {%- if kind in ['SEMI', 'ANTI'] -%}
    {{ return(timeweave.timeweave__window_join_sql(l.sql, l.columns, r.sql, r.columns, pairs, how=kind)) }}
  {%- endif -%}
  {%- set windows = ['window_start', 'window_end', 'window_time'] -%}
  {%- set left_columns = l.columns | reject('in', windows) | list -%}
  {%- set right_columns = r.columns | reject('in', windows) | list -%}
  {%- set seen = {} -%}
  {%- for w in windows -%}{%- do seen.update({w: 'window'}) -%}{%- endfor -%}
  {%- set left_names, right_names = [], [] -%}
  {%- for side, columns, prefix, names in [('left', left_columns, left_prefix, left_names), ('right', right_columns, right_prefix, right_names)] -%}
    {%- for c in columns -%}
      {%- set name = (prefix or '') ~ c -%}
      {%- if (name | lower) in seen -%}
        {{ timeweave._spec_error(where, side ~ '_prefix', "the output would have two columns named '" ~ name ~ "' (" ~ seen[name | lower] ~ " and " ~ side ~ "); give left_prefix / right_prefix (e.g. 'L_', 'R_')") }}
      {%- endif -%}
      {%- do seen.update({name | lower: side}) -%}
      {%- do names.append(name) -%}
    {%- endfor -%}
  {%- endfor -%}
  {{ return(timeweave.timeweave__window_join_sql(l.sql, left_columns, r.sql, right_columns, pairs, how=kind,
                                                 left_names=left_names, right_names=right_names)) }}
{%- endmacro %}
