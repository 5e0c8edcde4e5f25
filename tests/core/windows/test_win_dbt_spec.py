"""The dbt window macros' spec checks (dbt_macros/macros/_timeweave_windows_internal.sql, restated in Jinja because
dbt cannot import timeweave.core) accept, compute and reject exactly what the core specs do.  No JVM, no dbt:
the macros are rendered with jinja2 and dbt's ``return`` / ``exceptions`` stand-ins."""

from __future__ import annotations

import pytest

from tests.helpers.dbt_jinja import CompilerError, dbt_macros
from timeweave.core.errors import SpecError
from timeweave.core.windows import cumulate, hop, session, tumble

DBT = dbt_macros("_timeweave_windows_internal.sql", "_timeweave_internal.sql")

_CASES = [
    ("TUMBLE", {"size": "10 minutes", "offset": 0}, lambda: tumble("10 minutes")),
    ("TUMBLE", {"size": "1 day", "offset": "-8 hours"}, lambda: tumble("1 day", "-8 hours")),
    ("TUMBLE", {"size": "1.5 seconds", "offset": "- 250 ms"}, lambda: tumble("1.5 seconds", "- 250 ms")),
    ("TUMBLE", {"size": 600000, "offset": "1 min"}, lambda: tumble(600000, "1 min")),
    ("TUMBLE", {"size": "0 seconds", "offset": 0}, lambda: tumble("0 seconds")),
    ("TUMBLE", {"size": "10 s", "offset": "10 s"}, lambda: tumble("10 s", "10 s")),
    ("TUMBLE", {"size": "ten minutes", "offset": 0}, lambda: tumble("ten minutes")),
    ("TUMBLE", {"size": "1.0005 s", "offset": 0}, lambda: tumble("1.0005 s")),
    ("TUMBLE", {"size": "1.0000000001 s", "offset": 0}, lambda: tumble("1.0000000001 s")),
    ("TUMBLE", {"size": True, "offset": 0}, lambda: tumble(True)),
    ("TUMBLE", {"size": "10 fortnights", "offset": 0}, lambda: tumble("10 fortnights")),
    ("HOP", {"slide": "5 minutes", "size": "10 minutes", "offset": 0}, lambda: hop("5 minutes", "10 minutes")),
    ("HOP", {"slide": "2 seconds", "size": "5 seconds", "offset": 0}, lambda: hop("2 seconds", "5 seconds")),
    ("HOP", {"slide": "-2 seconds", "size": "4 seconds", "offset": 0}, lambda: hop("-2 seconds", "4 seconds")),
    ("HOP", {"slide": "1 h", "size": "1d", "offset": "30m"}, lambda: hop("1 h", "1d", "30m")),
    ("CUMULATE", {"step": "2 minutes", "max_size": "10 minutes", "offset": 0}, lambda: cumulate("2 minutes", "10 minutes")),
    ("CUMULATE", {"step": "2 minutes", "max_size": "5 minutes", "offset": 0}, lambda: cumulate("2 minutes", "5 minutes")),
    ("CUMULATE", {"step": "0 minutes", "max_size": "5 minutes", "offset": 0}, lambda: cumulate("0 minutes", "5 minutes")),
    ("SESSION", {"gap": "2 minutes"}, lambda: session("2 minutes")),
    ("SESSION", {"gap": "-1 ms"}, lambda: session("-1 ms")),
    ("SESSION", {"gap": "+3 secs"}, lambda: session("+3 secs")),
]


@pytest.mark.parametrize(("function", "values", "core"), _CASES, ids=lambda v: str(v) if not callable(v) else "")
def test_dbt_window_spec_is_the_core_spec(function, values, core) -> None:
    try:
        spec = core()
    except SpecError as error:
        with pytest.raises(CompilerError) as raised:
            DBT._window_spec(function, values, function)
        # the same argument named, in SpecError's format
        assert f"{function}: argument '{error.argument}': " in str(raised.value)
        assert str(raised.value) == str(error), (str(raised.value), str(error))
        return
    got = DBT._window_spec(function, values, function)
    fields = {"TUMBLE": ("size", "offset"), "HOP": ("slide", "size", "offset"), "CUMULATE": ("step", "max_size", "offset"),
              "SESSION": ("gap",)}[function]
    assert {f: got[f] for f in fields} == {f: getattr(spec, f) for f in fields}
