"""A plan's values are shown as JSON (`reporting._fmt`); its shortcut for plain strings, numbers,
booleans and null must give exactly what `json.dumps` gives, credentials masked and long values cut.
Only a `Withheld` (the secret marker, a SOUL's summary) is shown bare: known by its type, so a value
that reads "(secret)" is shown quoted, as a value."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.redact import SECRET, Withheld, mask_text, redact_text
from controller.verbs import reporting


def reference(value: Any) -> str:
    if isinstance(value, Withheld):
        return value
    text = json.dumps(mask_text(value) if isinstance(value, str) else value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


@given(st.one_of(st.text(max_size=200), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False)))
def test_a_shown_value_is_its_json(value: Any) -> None:
    assert reporting._fmt(value) == reference(value)


def test_edges() -> None:
    for value in ['say "hi"', "a\\b", "tab\there", "x" * 118, "x" * 119, "ünï\u2028", "(secret)", "(x", ""]:
        assert reporting._fmt(value) == reference(value), value
    assert reporting._fmt(SECRET) == "(secret)" and reporting._fmt("(secret)") == '"(secret)"'
    assert reporting._fmt("ghp_" + "a1" * 18) == '"ghp_***"'
    assert reporting._fmt("abc", "env:GITHUB_TOKEN") == "(secret)"
    url = "https://user:pw@example.com/x"
    assert reporting._fmt(url) == json.dumps(redact_text(url)) and "pw" not in reporting._fmt(url)
    assert reporting._fmt(True) == "true" and reporting._fmt(1) == "1" and reporting._fmt(None) == "null"
