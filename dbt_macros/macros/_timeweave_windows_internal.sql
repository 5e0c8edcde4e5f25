{#-
  Private helpers of the window macros (tumble, hop, cumulate, session): durations and window specs with the
  rules and messages of runtime/core/windows/spec.py (Flink's), the input's introspection, and the call of the
  window plan timeweave_windows_sql.sql (the file the Python doors render).  dbt's Jinja cannot import
  timeweave.core, so the spec rules are restated here; tests/core/windows/test_win_dbt_spec.py renders these
  macros and checks they accept, compute and reject exactly what the core does.
-#}

{#- Milliseconds of a duration: an integer (ms) or text '<number> <unit>' (units as duration_ms reads them). -#}
{% macro _window_ms(value, argument, where) -%}
  {%- set units = {'millisecond': 1, 'millis': 1, 'ms': 1, 'second': 1000, 'sec': 1000, 's': 1000,
                   'minute': 60000, 'min': 60000, 'm': 60000, 'hour': 3600000, 'h': 3600000,
                   'day': 86400000, 'd': 86400000} -%}
  {%- if value is sameas true or value is sameas false -%}
    {{ timeweave._spec_error(where, argument, 'expected a duration, got ' ~ value) }}
  {%- endif -%}
  {%- if value is integer -%}
    {{ return(value) }}
  {%- endif -%}
  {%- set text = (value | string) | trim -%}
  {%- set ns = namespace(number='', rest='') -%}
  {%- for ch in text -%}
    {%- if ns.rest == '' and (ch in '0123456789.' or (ch in '+-' and ns.number == '') or (ch == ' ' and ns.number in ['+', '-'])) -%}
      {%- set ns.number = ns.number ~ (ch if ch != ' ' else '') -%}
    {%- else -%}
      {%- set ns.rest = ns.rest ~ ch -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set unit = ns.rest | trim | lower -%}
  {%- set unit = unit[:-1] if (unit.endswith('s') and unit not in ['s', 'ms', 'millis']) else unit -%}
  {%- set digits = ns.number.lstrip('+-') -%}
  {%- set ok = value is string and unit in units and digits and digits.replace('.', '', 1).isdigit()
               and not digits.startswith('.') and not digits.endswith('.') -%}
  {%- if not ok -%}
    {{ timeweave._spec_error(where, argument, "cannot read duration " ~ ("'" ~ value ~ "'" if value is string else value) ~ "; write e.g. '10 minutes', '-8 hours' or 500 (ms)") }}
  {%- endif -%}
  {%- set whole, _, fraction = digits.partition('.') -%}
  {%- set scale = units[unit] -%}
  {%- set fraction_ms = ((fraction ~ '000000000')[:9] | int) * scale -%}
  {%- if fraction_ms % 1000000000 != 0 or fraction[9:].strip('0') -%}
    {{ timeweave._spec_error(where, argument, "'" ~ value ~ "' is not a whole number of milliseconds") }}
  {%- endif -%}
  {%- set ms = (whole | int) * scale + fraction_ms // 1000000000 -%}
  {{ return(-ms if ns.number.startswith('-') else ms) }}
{%- endmacro %}

{#- The window spec's values (ms) by parameter name, checked as TumbleSpec / HopSpec / CumulateSpec / SessionSpec. -#}
{% macro _window_spec(function, values, where) -%}
  {%- set ms = {} -%}
  {%- for name, value in values.items() -%}
    {%- do ms.update({name: timeweave._window_ms(value, name, where)}) -%}
  {%- endfor -%}
  {%- set positive = {'TUMBLE': ['size'], 'HOP': ['slide', 'size'], 'CUMULATE': ['step', 'max_size'], 'SESSION': ['gap']}[function] -%}
  {%- for name in positive -%}
    {%- if ms[name] <= 0 -%}
      {{ timeweave._spec_error(where, name, 'must be greater than 0, but got ' ~ name ~ ' ' ~ ms[name] ~ ' ms') }}
    {%- endif -%}
  {%- endfor -%}
  {%- if function == 'TUMBLE' and (ms['offset'] if ms['offset'] >= 0 else -ms['offset']) >= ms['size'] -%}
    {{ timeweave._spec_error(where, 'offset', 'must satisfy abs(offset) < size, but got size ' ~ ms['size'] ~ ' ms and offset ' ~ ms['offset'] ~ ' ms') }}
  {%- elif function == 'HOP' and ms['size'] % ms['slide'] -%}
    {{ timeweave._spec_error(where, 'size', 'must be an integral multiple of slide, but got size ' ~ ms['size'] ~ ' ms and slide ' ~ ms['slide'] ~ ' ms') }}
  {%- elif function == 'CUMULATE' and ms['max_size'] % ms['step'] -%}
    {{ timeweave._spec_error(where, 'max_size', 'must be an integral multiple of step, but got max_size ' ~ ms['max_size'] ~ ' ms and step ' ~ ms['step'] ~ ' ms') }}
  {%- endif -%}
  {{ return(ms) }}
{%- endmacro %}

{#- The window TVF over `relation` (a Relation or SQL text): checks, introspection, then the shared plan.

  In a microbatch model's batch (model.batch: [event_time_start, event_time_end)), the TVF emits only the
  windows whose window_time lies in the batch, and reads `relation` itself, without dbt's batch filter: every
  row such windows can hold (the plan's read bounds: the longest window before the batch; SESSION: the gap,
  doubled while a session the batch emits could start before the read's first row, at most 16 times, then
  the whole past).  So N batches emit the windows of one full run, each once. -#}
{% macro _window_tvf(function, relation, time, values, partition_by=none) -%}
  {%- set where = function -%}
  {%- set ms = timeweave._window_spec(function, values, where) -%}
  {%- set partition = timeweave._names(partition_by, 'partition_by', where) -%}
  {%- if not execute -%}
    {{ return('') }}
  {%- endif -%}
  {%- set batch = timeweave._microbatch_bounds() -%}
  {#- a batch reads past dbt's filter of the ref() to the batch: windows reach before it -#}
  {%- set info = timeweave._side(relation, 'relation', where, batch is none) -%}
  {{ timeweave._require_columns(info, [time], 'time', where) }}
  {{ timeweave._require_kind(info, time, 'timestamp', 'time', where) }}
  {{ timeweave._require_columns(info, partition, 'partition_by', where) }}
  {%- for name in ['window_start', 'window_end', 'window_time'] -%}
    {%- if name in (info.columns | map('lower') | list) -%}
      {{ timeweave._spec_error(where, 'relation', "the input already has a column '" ~ name ~ "'; " ~ function ~ " adds window_start, window_end and window_time: rename or drop it first") }}
    {%- endif -%}
  {%- endfor -%}
  {%- set dtype = (info.types.get(time) or 'timestamp') | lower -%}
  {%- set kind = 'ntz' if dtype.startswith('timestamp_ntz') else 'ltz' -%}
  {%- set zone = none -%}
  {%- if kind == 'ltz' -%}
    {#- TIMESTAMP windows align on the session time zone's wall clock (Flink's TIMESTAMP_LTZ) -#}
    {%- set found = run_query('select current_timezone()').columns[0].values()[0] -%}
    {%- set zone = none if (found | upper) in ['UTC', 'Z', 'ETC/UTC', 'GMT', '+00:00'] else found -%}
  {%- endif -%}
  {%- set lookback = none -%}
  {%- if batch is not none and function == 'SESSION' -%}
    {%- set ns = namespace(lookback=ms.gap, settled=false) -%}
    {%- for attempt in range(16) -%}
      {%- if not ns.settled -%}
      {%- set edge = timeweave.timeweave__session_edge_sql(info.sql, info.columns, time, kind, zone, ms.gap, partition,
                                                           batch[0], batch[1], ns.lookback) -%}
      {%- set missing = run_query(edge).columns[0].values()[0] -%}
      {%- if missing is none -%}
        {%- set ns.settled = true -%}
      {%- else -%}
        {%- set ns.lookback = [ns.lookback + (missing | int), ns.lookback * 2] | max -%}
      {%- endif -%}
      {%- endif -%}
    {%- endfor -%}
    {%- set lookback = ns.lookback if ns.settled else -1 -%}
  {%- endif -%}
  {{ return(timeweave.timeweave__window_tvf_sql(
      info.sql, info.columns, time, function, kind=kind, zone=zone, size=ms.get('size'), slide=ms.get('slide'),
      step=ms.get('step'), max_size=ms.get('max_size'), offset=ms.get('offset', 0), gap=ms.get('gap'),
      partition_by=partition, batch_start=batch[0] if batch else none, batch_end=batch[1] if batch else none,
      lookback=lookback)) }}
{%- endmacro %}

{#- The running microbatch batch as [start, end) epoch ms, or none outside a microbatch model's batch (a
    table, view or incremental model, or a microbatch model compiled without batches). -#}
{% macro _microbatch_bounds() -%}
  {%- set node = model if model is mapping else {} -%}
  {%- set batch = node.get('batch') -%}
  {%- if not batch or (node.get('config') or {}).get('incremental_strategy') != 'microbatch' -%}
    {{ return(none) }}
  {%- endif -%}
  {{ return([(batch.event_time_start.timestamp() * 1000) | round | int,
             (batch.event_time_end.timestamp() * 1000) | round | int]) }}
{%- endmacro %}
