"""Property: the fast constructor (loading._build, no per-collection check for recursive aliases)
gives the same data, or the same problem at the same place, as the reference one
(loading._construct) on every node tree: the example manifests, YAML-ish text with anchors,
aliases, merges, tags and nesting, and structures dumped as YAML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.manifests import loading
from tests.property.yaml_text import SETTINGS, VALUES

REPO = Path(__file__).resolve().parents[2]


def outcome(construct: Any, text: str) -> list[Any]:
    """Per document: its data (as JSON, so 1 and True stay apart) or its problem and position."""
    results: list[Any] = []
    try:
        nodes = list(loading._compose_all(text))
    except Exception as exc:
        return [type(exc).__name__]
    budget = loading._Budget(max(200, 2 * len(text)))  # small, so alias expansion reaches it
    for node in nodes:
        if node is None:
            continue
        try:
            data = construct(node, budget)
            results.append(json.dumps(data, sort_keys=False))
        except loading._LoadProblem as exc:
            results.append((exc.message, exc.hint, exc.code, loading._mark(exc.node) if exc.node is not None else None))
            break
    results.append(budget.used)
    return results


def reference(node: Any, budget: loading._Budget) -> Any:
    return loading._construct(node, budget, depth=0, active=set())


def assert_same(text: str) -> None:
    assert outcome(loading._construct_document, text) == outcome(reference, text)


@pytest.mark.parametrize(
    "path",
    sorted(p for p in (REPO / "examples").rglob("*") if p.suffix in loading.MANIFEST_SUFFIXES),
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_the_example_manifests(path: Path) -> None:
    assert_same(path.read_text())


@pytest.mark.parametrize(
    "text",
    [
        "a: &a\n  b: *a\n",  # recursive: the reference names the cycle, the fast one retraces
        "a: &a [1, *a]\n",
        "a: &a {b: [x, {c: *a}]}\n",
        "l0: &l0 [lol, lol, lol]\nl1: &l1 [*l0, *l0, *l0]\nl2: &l2 [*l1, *l1, *l1]\nl3: [*l2, *l2, *l2, *l2]\n",
        "a: " + "[" * 70 + "]" * 70 + "\n",
        "a: " + "[" * 64 + "x" + "]" * 64 + "\n",
        "a: " + "{b: " * 63 + "1" + "}" * 63 + "\n",
        "a: " + "{b: " * 64 + "1" + "}" * 64 + "\n",
        "base: &b {x: 1, y: 2}\nm:\n  <<: [*b, {z: 3}]\n  x: 9\n",
        "<<: {a: 1}\na: 2\n",
        "a: !!str 5\nb: !!int '7'\nc: !!map {d: 1}\ne: !!str {f: 1}\n",
        "a: !!seq [1]\nb: !!float '1.5'\nc: !!bool 'true'\nd: !!null ''\n",
        "? [a]\n: 1\n",
        "a: 1\na: 2\n",
        "a: .nan\n",
        "a: 99999999999999999999\n",
        "--- 5\n--- [a]\n--- {a: ~}\n",
    ],
)
def test_hand_picked_trees(text: str) -> None:
    assert_same(text)


pieces = st.sampled_from(
    [
        *" \n:-[]{},",
        "a: ",
        "b: ",
        "<<: ",
        "&a ",
        "&b ",
        "*a",
        "*b",
        "!!str ",
        "!!int ",
        "!!map ",
        "!!seq ",
        "!custom ",
        "'q'",
        "1",
        "0x1f",
        "1e999",
        "true",
        "~",
        "\n  ",
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
@given(value=VALUES)
def test_structures_dumped_as_yaml(value: Any) -> None:
    import io

    from ruamel.yaml import YAML

    stream = io.StringIO()
    YAML().dump({"v": value}, stream)
    assert_same(stream.getvalue())


def test_nesting_past_the_composer_bound_is_a_problem_not_a_crash() -> None:
    """The C composer recursed without bound: 100,000 `[` overflowed the C stack (a segfault)."""
    for text in ("a: " + "[" * 100_000 + "]" * 100_000 + "\n", "- " * 100_000 + "x\n"):
        with pytest.raises(loading._FileProblem) as caught:
            loading.parse_text(text, source="m.yaml", base_dir=Path("."))
        assert caught.value.message == f"nesting is deeper than {loading.MAX_DEPTH} levels"
        assert caught.value.line == 1
