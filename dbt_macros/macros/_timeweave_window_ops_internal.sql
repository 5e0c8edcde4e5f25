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

{#- The grouping sets of window_aggregate (GroupingSets.of in timeweave.core.windows.grouping: the same forms and
    messages): a list of sets of column names, or none for plain keys. -#}
{% macro _window_grouping_sets(keys, grouping_sets, rollup, cube, where='window aggregate') -%}
  {%- set given = [] -%}
  {%- for name, value in [('grouping_sets', grouping_sets), ('rollup', rollup), ('cube', cube)] -%}
    {%- if value is not none -%}{%- do given.append(name) -%}{%- endif -%}
  {%- endfor -%}
  {%- if not given -%}
    {{ return(none) }}
  {%- endif -%}
  {%- if keys is not none -%}
    {{ timeweave._spec_error(where, 'keys', "give the key columns once: either keys or " ~ given[0] ~ " (whose sets name them)") }}
  {%- endif -%}
  {%- if given | length > 1 -%}
    {{ timeweave._spec_error(where, 'grouping_sets', 'give exactly one of grouping_sets, rollup, cube; got ' ~ given) }}
  {%- endif -%}
  {%- if grouping_sets is not none -%}
    {%- if grouping_sets is string or grouping_sets is mapping or not grouping_sets -%}
      {{ timeweave._spec_error(where, 'grouping_sets', 'expected a non-empty list of sets (each a list of key columns), got ' ~ grouping_sets) }}
    {%- endif -%}
    {%- set sets = [] -%}
    {%- for s in grouping_sets -%}
      {%- if s is string -%}
        {{ timeweave._spec_error(where, 'grouping_sets', 'set ' ~ loop.index ~ ': expected a list of column names, got ' ~ s) }}
      {%- endif -%}
      {%- do sets.append(timeweave._names(s | list, 'grouping_sets', where)) -%}
    {%- endfor -%}
  {%- else -%}
    {%- set columns = timeweave._names(rollup if rollup is not none else cube, given[0], where) -%}
    {%- if not columns -%}
      {{ timeweave._spec_error(where, given[0], (given[0] | upper) ~ ' needs at least one column') }}
    {%- endif -%}
    {%- set sets = [] -%}
    {%- if rollup is not none -%}
      {%- for n in range(columns | length, -1, -1) -%}{%- do sets.append(columns[:n]) -%}{%- endfor -%}
    {%- else -%}
      {%- if columns | length > 10 -%}
        {{ timeweave._spec_error(where, 'cube', 'CUBE of ' ~ (columns | length) ~ ' columns is ' ~ (2 ** (columns | length)) ~ ' grouping sets, more than 1024') }}
      {%- endif -%}
      {#- every subset, largest first, in column order within a size (itertools.combinations' order) -#}
      {%- for size in range(columns | length, -1, -1) -%}
        {%- for mask in range(2 ** (columns | length) - 1, -1, -1) -%}
          {%- set picked = [] -%}
          {%- for c in columns -%}
            {%- if (mask // (2 ** (columns | length - 1 - loop.index0))) % 2 == 1 -%}{%- do picked.append(c) -%}{%- endif -%}
          {%- endfor -%}
          {%- if picked | length == size -%}{%- do sets.append(picked) -%}{%- endif -%}
        {%- endfor -%}
      {%- endfor -%}
    {%- endif -%}
  {%- endif -%}
  {%- set seen = [] -%}
  {%- for s in sets -%}
    {%- set folded = s | map('lower') | sort | list -%}
    {%- if folded in seen -%}
      {{ timeweave._spec_error(where, 'grouping_sets', 'set ' ~ loop.index ~ ' ' ~ s ~ ' repeats set ' ~ (seen.index(folded) + 1) ~ ' ' ~ sets[seen.index(folded)] ~ ': each set must differ') }}
    {%- endif -%}
    {%- do seen.append(folded) -%}
  {%- endfor -%}
  {{ return(sets) }}
{%- endmacro %}

{#- window_aggregate: the aggregates and key columns checked (names quoted, aggregate texts the model's own SQL),
    then one GROUP BY over the window TVF's output. -#}
{% macro _window_aggregate(relation, aggregates, keys, grouping_sets, rollup, cube) -%}
  {%- set where = 'window aggregate' -%}
  {%- if aggregates is not mapping or not aggregates -%}
    {{ timeweave._spec_error(where, 'aggregates', 'expected a mapping of output name -> aggregate SQL text (at least one), got ' ~ aggregates) }}
  {%- endif -%}
  {%- set sets = timeweave._window_grouping_sets(keys, grouping_sets, rollup, cube, where) -%}
  {%- set key_list = [] -%}
  {%- if sets is none -%}
    {%- set key_list = timeweave._names(keys, 'keys', where) -%}
  {%- else -%}
    {%- for s in sets -%}
      {%- for k in s -%}
        {%- if (k | lower) not in (key_list | map('lower') | list) -%}{%- do key_list.append(k) -%}{%- endif -%}
      {%- endfor -%}
    {%- endfor -%}
  {%- endif -%}
  {%- set taken = ['window_start', 'window_end', 'window_time'] + (key_list | map('lower') | list) -%}
  {%- for name, text in aggregates.items() -%}
    {%- if name is not string or not (name | trim) -%}
      {{ timeweave._spec_error(where, 'aggregates', 'an output name must be a non-empty string, got ' ~ name) }}
    {%- endif -%}
    {%- if text is not string or not (text | trim) -%}
      {{ timeweave._spec_error(where, 'aggregates', name ~ ": expected the aggregate as SQL text such as 'sum(price)', got " ~ text) }}
    {%- endif -%}
    {%- if (name | lower) in taken -%}
      {{ timeweave._spec_error(where, 'aggregates', "the output name '" ~ name ~ "' is already a window or key column") }}
    {%- endif -%}
    {%- do taken.append(name | lower) -%}
  {%- endfor -%}
  {%- if not execute -%}
    {{ return('') }}
  {%- endif -%}
  {%- set info = timeweave._window_ops_input(relation, 'relation', where) -%}
  {{ timeweave._require_columns(info, key_list + ['window_time'], 'keys', where) }}
  {%- set windows = ['window_start', 'window_end', 'window_time'] -%}
  {%- set grouped = [] -%}
  {%- for w in windows -%}{%- do grouped.append(timeweave.timeweave__q(w)) -%}{%- endfor -%}
  {%- if sets is none -%}
    {%- for k in key_list -%}{%- do grouped.append(timeweave.timeweave__q(k)) -%}{%- endfor -%}
  {%- else -%}
    {%- set rendered = [] -%}
    {%- for s in sets -%}
      {%- set quoted = [] -%}
      {%- for k in s -%}{%- do quoted.append(timeweave.timeweave__q(k)) -%}{%- endfor -%}
      {%- do rendered.append('(' ~ (quoted | join(', ')) ~ ')') -%}
    {%- endfor -%}
    {%- do grouped.append('GROUPING SETS (' ~ (rendered | join(', ')) ~ ')') -%}
  {%- endif -%}
  {%- set selected = [] -%}
  {%- for c in windows + key_list -%}{%- do selected.append(timeweave.timeweave__q(c)) -%}{%- endfor -%}
  {%- for name, text in aggregates.items() -%}{%- do selected.append('(' ~ text ~ ') AS ' ~ timeweave.timeweave__q(name)) -%}{%- endfor -%}
  {{ return('SELECT ' ~ (selected | join(', ')) ~ '\nFROM ' ~ info.sql ~ ' __tw_windows\nGROUP BY ' ~ (grouped | join(', '))) }}
{%- endmacro %}
