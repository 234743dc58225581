"""A history entry's documents are parsed again by the manifest loader at rollback: every value a
manifest can hold must come back the same (tests engine/history.as_yaml_text with the real loader)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from controller.engine.history import as_yaml_text
from controller.manifests import loading

INT64 = st.integers(min_value=loading.INT_MIN, max_value=loading.INT_MAX)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
# Any text a manifest can carry: YAML escapes reach every code point but surrogates.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
VALUES = st.recursive(
    st.none() | st.booleans() | INT64 | FLOATS | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


def reparsed(data: object) -> object:
    (doc,) = loading.parse_text(as_yaml_text(data), source="entry", base_dir=Path("."))
    return doc.data


def test_escaped_characters_and_look_alike_strings_come_back_as_they_were() -> None:
    data = {
        "title": "x\x80y\x85\u2028\U0001f600 \x07 \ufeff\ufffe\x7f",
        "yes": "yes",
        "octal": "0o17",
        "float": 1e16,
        "list": [1.5, None, True, 2**62, -3, ""],
        "k\x9f": {},
    }
    assert reparsed(data) == data


@given(st.dictionaries(TEXT, VALUES, min_size=1, max_size=5))
def test_any_manifest_value_round_trips(data: dict[str, object]) -> None:
    assert reparsed(data) == data


def test_a_line_separator_in_a_key_comes_back() -> None:
    """Found by the property test: a raw U+2028 in a mapping key is a line break to YAML (5.4)."""
    data = {"\u2028": None, "a\u2029b": {"\x85": "\u2028"}}
    assert reparsed(data) == data
