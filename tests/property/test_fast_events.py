"""Property: the fast path (loading._fast_documents: plain data from the parser's events, no node
tree) gives exactly the documents the node path (loading._node_documents, with the reference
constructor behind it) gives, or declines; it never accepts a text the node path refuses. And a
document it built locates every field path where the node tree does (or leaves it to the tree)."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.manifests import loading
from tests.property.yaml_text import SETTINGS, VALUES

REPO = Path(__file__).resolve().parents[2]


def node_outcome(text: str) -> Any:
    """The node path's documents (index, data as JSON so 1 and True stay apart) or its problem."""
    try:
        documents = loading._node_documents(text, source="m.yaml", base_dir=Path("."))
    except loading._FileProblem as exc:
        return ("problem", exc.message, exc.hint, exc.code, exc.line, exc.column)
    return [(doc.index, json.dumps(doc.data)) for doc in documents]


def paths(value: Any, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every field path in `value`, and for each one a step that goes nowhere."""
    found = [prefix, (*prefix, "no-such-key"), (*prefix, 0), (*prefix, -1), (*prefix, 99), (*prefix, True), (*prefix, 1.0)]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += paths(item, (*prefix, i))
    return found


def assert_same(text: str, *, fast_expected: bool = False) -> None:
    expected = node_outcome(text)
    fast = loading._fast_documents(text)
    if fast is None:
        assert not fast_expected, "the fast path declined a plain text"
        return
    assert not (expected and expected[0] == "problem"), f"the fast path accepted a text the node path refuses: {expected}"
    assert [(index, json.dumps(data)) for index, data in fast[0]] == expected
    # Locating: what the fast documents answer without a tree is what the tree answers.
    fast_docs = loading.parse_text(text, source="m.yaml", base_dir=Path("."))
    tree_docs = loading._node_documents(text, source="m.yaml", base_dir=Path("."))
    for fast_doc, tree_doc in zip(fast_docs, tree_docs, strict=True):
        assert fast_doc.node is None and fast_doc.origin is not None
        for loc in paths(fast_doc.data):
            quick = fast_doc.origin.locate(fast_doc.data, loc)
            assert quick in (None, tree_doc.locate(loc)), loc
            assert fast_doc.locate(loc) == tree_doc.locate(loc), loc


def plain(text: str) -> bool:
    """A text the fast path must take: no anchors, aliases, tags or merge keys (a rough test)."""
    return not any(mark in text for mark in ("&", "*", "!", "<<"))


@pytest.mark.parametrize(
    "path",
    sorted(p for p in (REPO / "examples").rglob("*") if p.suffix in loading.MANIFEST_SUFFIXES),
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_the_example_manifests(path: Path) -> None:
    text = path.read_text()
    assert_same(text, fast_expected=plain(text))


BAD = {
    "syntax": "a: [\n",
    "tab": "a:\n\t- b\n",
    "duplicate key": "a: 1\nb:\n  c: 1\n  c: 2\n",
    "duplicate key in a later document": "a: 1\n---\nx: 1\nx: 2\n",
    "big int": "a: {b: 99999999999999999999}\n",
    "big hex": "a: 0xFFFFFFFFFFFFFFFFFF\n",
    "infinity": "a: [.inf]\n",
    "nan": "a: .nan\n",
    "nesting": "a: " + "[" * 70 + "]" * 70 + "\n",
    "nesting of maps": "a: " + "{b: " * 64 + "1" + "}" * 64 + "\n",
    "nesting past the composer bound": "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
    "alias bomb": "l0: &l0 ["
    + ", ".join(["lol"] * 9)
    + "]\n"
    + "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 7)),
    "recursive alias": "a: &a\n  b: *a\n",
    "non-string key": "? [a]\n: 1\n",
    "control character": "a: b\x07\n",
    "unknown tag": "a: !!python/object x\n",
    "long string": "a: " + "x" * (loading.MAX_STRING + 1) + "\n",
    "long key": "x" * (loading.MAX_STRING + 1) + ": 1\n",
    "long list": "a: [" + ",".join("1" * (loading.MAX_ITEMS + 1)) + "]\n",
    "undefined alias": "a: *nope\n",
}


@pytest.mark.parametrize("text", list(BAD.values()), ids=list(BAD))
def test_every_problem_is_left_to_the_node_path(text: str) -> None:
    """The fast path declines each kind of problem, so parse_text reports it exactly as the node
    path does (message, hint, code, line and column)."""
    assert loading._fast_documents(text) is None
    expected = node_outcome(text)
    assert expected and expected[0] == "problem"
    with pytest.raises(loading._FileProblem) as caught:
        loading.parse_text(text, source="m.yaml", base_dir=Path("."))
    problem = caught.value
    assert ("problem", problem.message, problem.hint, problem.code, problem.line, problem.column) == expected


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\n",
        "--- 5\n--- [a]\n--- {a: ~}\n",
        "---\n---\n- x\n",
        "# only a comment\n",
        "",
        "a: {}\nb: []\nc: [[], {}, [[]]]\n",
        "? a\n? b\n: 2\n",
        "a: 'q'\nb: \"0x1f\"\nc: |\n  lit\nd: >\n  folded\ne: ''\nf:\n",
        "a: " + "[" * 63 + "x" + "]" * 63 + "\n",
        "a: " + "{b: " * 63 + "1" + "}" * 63 + "\n",
        "%YAML 1.2\n---\na: 0o17\nb: 0x1F\nc: -12\nd: 1.5e3\ne: True\nf: NULL\ng: +1\n",
        "- - - a\n  - b\n- c: d\n  e: [f, {g: h}]\n",
        "a: &x 1\nb: &y [2, &z {c: 3}]\n",  # anchors no alias refers to change nothing
        "prompt: Be brief! Really!\nurl: http://x/?a=1&b=2\ncron: '*/5 * * * *'\n",
    ],
)
def test_hand_picked_texts(text: str) -> None:
    assert_same(text, fast_expected=True)


pieces = st.sampled_from(
    [
        *" \n:-[]{},?",
        "a: ",
        "b: ",
        "a",
        "<<: ",
        "&a ",
        "*a",
        "!!str ",
        "'q'",
        '"0x1f"',
        "1",
        "0x1f",
        "0o8",
        "1e999",
        "99999999999999999999",
        "true",
        "~",
        "|\n  x",
        "\n  ",
        "\n    ",
        "\n- ",
        "\n---\n",
        "[",
        "{",
    ]
)


@SETTINGS
@given(text=st.lists(pieces, max_size=60).map("".join))
def test_yaml_ish_text(text: str) -> None:
    assert_same(text)


@SETTINGS
@given(value=VALUES, flow=st.booleans())
def test_structures_dumped_as_yaml(value: Any, flow: bool) -> None:
    from ruamel.yaml import YAML

    stream = io.StringIO()
    yaml = YAML()
    yaml.default_flow_style = flow
    yaml.dump({"v": value, "w": [value, {"x": value}]}, stream)
    assert_same(stream.getvalue())


def test_a_fleet_file_and_bot_documents_take_the_fast_path_and_locate_without_a_tree() -> None:
    """The common case: no node tree is composed, even for the bots' origins (spec.bots[i], spec)."""
    fleet = textwrap.dedent(
        """\
        apiVersion: hermes-fleet/v1
        kind: Fleet
        metadata:
          name: demo
        spec:
          bots:
            - name: a
              title: A
            - {name: b}
        """
    )
    (doc,) = loading.parse_text(fleet, source="f.yaml", base_dir=Path("."))
    assert doc.locate(("spec", "bots", 0)) == (7, 7)
    assert doc.locate(("spec", "bots", 1)) == (9, 7)
    assert doc.locate(("spec",)) == (5, 1)
    assert doc.node is None  # answered from the positions alone
    assert doc.locate(("spec", "bots", 0, "title")) == (8, 7)  # a scalar: the tree, composed now
    assert doc.node is not None
    bots = "---\n".join(
        f"apiVersion: hermes-fleet/v1\nkind: Bot\nmetadata: {{name: b{i}}}\nspec:\n  title: T\n" for i in range(3)
    )
    docs = loading.parse_text(bots, source="b.yaml", base_dir=Path("."))
    assert [d.locate(("spec",)) for d in docs] == [(4, 1), (10, 1), (16, 1)]
    assert all(d.node is None for d in docs)


def test_a_collection_the_fast_path_did_not_build_is_located_by_the_tree() -> None:
    text = "spec:\n  bots:\n    - name: a\n      env: {X: 1}\n"
    (doc,) = loading.parse_text(text, source="f.yaml", base_dir=Path("."))
    doc.data["spec"]["bots"][0]["env"] = {"X": 2}  # a dict with no kept position
    assert doc.origin is not None and doc.origin.locate(doc.data, ("spec", "bots", 0, "env")) is None
    assert doc.locate(("spec", "bots", 0, "env")) == (4, 7)  # the tree's answer: the key env
    assert doc.node is not None
