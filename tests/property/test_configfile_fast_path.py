"""The fast (C) read path of config.yaml never disagrees with the round-trip parser.

`ConfigDoc` reads through ruamel's C parser when a text is in the safe subset and builds the
round-trip tree only for writes (docs/performance.md). A differential test: for generated
documents, and for random single-character mutations of them, the fast path either steps aside
(None) or returns exactly what the round-trip parser reads.
"""

from __future__ import annotations

import yaml as pyyaml
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.adapters import configfile
from controller.errors import HermesStateError

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.sampled_from(
        [
            "off",
            "on",
            "yes",
            "no",
            "y",
            "n",
            "0755",
            "1e3",
            "1.0e+3",
            "~",
            "null",
            "0x1F",
            "12:30",
            "2026-11-30",
            "- a",
            "a: b",
            "#x",
            "'q'",
            '"q"',
            "[1]",
            "{a: 1}",
            "*x",
            "&y",
            "!t",
        ]
    ),
)
KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_.-0123456789", min_size=1, max_size=10)
TREES = st.recursive(
    SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)), max_leaves=20
)
DOCS = st.dictionaries(KEYS, TREES, max_size=6)


def _round_trip(text: str) -> dict | None:
    try:
        return configfile.to_plain(configfile._round_trip_load(text, "<config.yaml>"))
    except HermesStateError:
        return None


def _check(text: str) -> bool:
    """The fast parse (never the memo) equals the round-trip read, or steps aside; True if it ran."""
    fast = configfile._parse_plain(text)
    if fast is None:
        return False  # the round-trip parser decides
    assert fast == _round_trip(text), text
    return True


@settings(max_examples=300, deadline=None)
@given(DOCS, st.sampled_from(["pyyaml-block", "pyyaml-flow", "ours"]))
def test_fast_path_agrees_on_generated_documents(doc, style):
    if style == "ours":
        parsed = configfile.ConfigDoc.parse("", exists=False)
        for key, value in doc.items():
            parsed.set_in([key], value)
        text = parsed.render()
    else:
        text = pyyaml.safe_dump(doc, default_flow_style=(style == "pyyaml-flow"), allow_unicode=True)
    _check(text)


@settings(max_examples=300, deadline=None)
@given(DOCS, st.integers(0, 10_000), st.sampled_from(list(" :-#'\"\n[]{},?*&!|>%@`\\\t")))
def test_fast_path_agrees_on_mutated_documents(doc, position, char):
    text = pyyaml.safe_dump(doc, allow_unicode=True)
    if text:
        i = position % len(text)
        _check(text[:i] + char + text[i + 1 :])


# Documents inside the fast path's subset (plain keys, ints, booleans, words): it must take them, or
# the tests above would compare nothing and pass.
PLAIN_SCALARS = st.one_of(
    st.booleans(), st.integers(-(10**9), 10**9), st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
)
PLAIN_TREES = st.recursive(
    PLAIN_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, min_size=1, max_size=3)),
    max_leaves=10,
)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(KEYS, PLAIN_TREES, max_size=6), st.sampled_from(["pyyaml-block", "pyyaml-flow"]))
def test_fast_path_takes_plain_documents(doc, style):
    text = pyyaml.safe_dump(doc, default_flow_style=(style == "pyyaml-flow"), allow_unicode=True)
    assert _check(text), text
