"""The plain emitter (adapters/yamlemit.py) writes exactly what ruamel writes, or declines.

A document made from nothing (a new bot's config.yaml or profile.yaml) skips ruamel's emitter when
the plain one accepts it; it must then be byte-identical to ruamel's dump of the same document
(what every other test and Hermes itself have read so far), and PyYAML (Hermes' reader:
`yaml.safe_load` in hermes_cli/config.py, 0.19.0) must read it back as the very same values.
"""

from __future__ import annotations

import io
import string

import pytest
import yaml as pyyaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml.comments import CommentedMap

from controller.adapters import configfile, yamlemit

SAFE_FIRST = string.ascii_letters + string.digits + "_/"
SAFE_REST = SAFE_FIRST + " .,;()+=@~$%^*?'\"<>&!|-"
# Strings PyYAML reads as another type, and characters that need quotes or another layout.
TRICKY = [
    "yes", "On", "0755", "1.5", "1_000", "0x1F", "12:30", "2026-01-01", "Null", "~", "=", "<<", "1.0e+3", ".inf",
    "- a", "a: b", "a #b", "[x]", "{x}", "'q'", '"q"', "é", "a\nb", " a", "a ", "", "a\\b",
    "? x", "!tag", "&anchor", "*alias", "%x", "@x", "`x", "x" * 1001,
]  # fmt: skip


def ruamel_dump(data: dict) -> str:
    """What ConfigDoc wrote before the plain emitter: ruamel's round-trip dump of a new document."""
    doc = configfile.ConfigDoc(CommentedMap(), text="", exists=False, source="x")
    for key, value in data.items():
        doc.set_in([key], value)
    yaml = configfile._make_yaml()
    out = io.StringIO()
    yaml.dump(doc._data, out)
    return out.getvalue()


# Strings that look like another type to YAML 1.2 or to ruamel, but PyYAML reads as strings.
LOOKALIKES = ["y", "n", "1e3", "0o17", "2026-1-1x", "no_way", "true_"]
words = st.builds(str.__add__, st.sampled_from(SAFE_FIRST), st.text(SAFE_REST, max_size=20)) | st.sampled_from(
    TRICKY + LOOKALIKES
)
scalars = words | st.booleans() | st.integers(-(2**70), 2**70) | st.sampled_from([None, 1.5, 0.0, 1e16])
keys = words | st.integers(0, 9)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(words, values, min_size=1, max_size=5))
def test_plain_emitter_matches_ruamel_or_declines(data: dict) -> None:
    emitted = yamlemit.emit(data, configfile._resolves_other)
    if emitted is None:
        return
    text, plain = emitted
    assert text == ruamel_dump(data)
    assert pyyaml.safe_load(text) == data == plain


@pytest.mark.parametrize("text", TRICKY)
def test_strings_that_need_quotes_or_another_layout_are_declined(text: str) -> None:
    assert yamlemit.emit({"key": text}, configfile._resolves_other) is None
    assert yamlemit.emit({text: "v"}, configfile._resolves_other) is None


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_that_pyyaml_reads_as_strings_are_written_plain(text: str) -> None:
    out, plain = yamlemit.emit({"key": text}, configfile._resolves_other) or ("", {})
    assert out == f"key: {text}\n" == ruamel_dump({"key": text})
    assert pyyaml.safe_load(out) == {"key": text} == plain


def test_a_new_bot_config_takes_the_plain_path_and_reads_back_in_hermes_terms() -> None:
    data = {
        "model": {"provider": "openrouter", "default": "anthropic/claude-sonnet-4"},
        "platform_toolsets": {"cli": ["web", "terminal"], "telegram": ["web", "terminal"]},
        "agent": {"max_turns": 27, "verbose": False},
        "display": {"personality": "Benchmark bot number 7; answers questions about topic 7."},
    }
    text, plain = yamlemit.emit(data, configfile._resolves_other) or ("", {})
    assert text == ruamel_dump(data) and plain == data
    assert text.startswith("model:\n  provider: openrouter\n")
    assert "platform_toolsets:\n  cli:\n    - web\n    - terminal\n" in text
    assert pyyaml.safe_load(text) == data


def test_config_doc_made_from_nothing_renders_through_the_plain_emitter_and_an_edited_one_does_not() -> None:
    doc = configfile.ConfigDoc.parse("", exists=False)
    doc.set("model.default", "gpt-5")
    doc.set("agent.max_turns", 30)
    assert doc.render() == "model:\n  default: gpt-5\nagent:\n  max_turns: 30\n"
    # An existing file keeps its comments and layout: ruamel renders it.
    edited = configfile.ConfigDoc.parse("# mine\nmodel:   {default: x}  # keep\n")
    edited.set("model.default", "gpt-5")
    assert "# mine" in edited.render() and "# keep" in edited.render()
