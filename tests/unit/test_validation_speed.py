"""The shortcuts validation takes for speed give what the plain way gives."""

from __future__ import annotations

from typing import Any

import pytest

from controller.manifests import desired, validating
from controller.manifests.models import Bot, BotDocument

SPECS: list[dict[str, Any]] = [
    {},
    {"title": "Agent", "toolsets": ["web"], "env": {"A_KEY": {"from_env": "A"}, "LEVEL": 3, "ON": True}},
    {
        "model": {"provider": "anthropic", "default": "claude"},
        "config": {"memory": {"memory_char_limit": 4000}, "approvals.mode": "smart"},
        "avatar": {"kind": "blob", "seed": "s"},
        "routines": [{"name": "digest", "schedule": "every 1h", "prompt": "p"}],
        "mcp_servers": {"gh": {"command": "gh-mcp", "env": {"T": {"from_env": "T"}}}},
        "renamed_from": "old",
        "hidden": False,
    },
]


@pytest.mark.parametrize("spec", SPECS)
def test_a_bot_document_gives_the_bot_model_validate_gives(spec: dict[str, Any]) -> None:
    doc = BotDocument.model_validate({"apiVersion": "hermes-fleet/v1", "kind": "Bot", "metadata": {"name": "b1"}, "spec": spec})
    fields = {key: getattr(doc.spec, key) for key in doc.spec.model_fields_set}
    expected = Bot.model_validate({**fields, "name": "b1"})
    got = validating._bot_of(doc.spec, "b1")
    assert got == expected
    assert repr(got) == repr(expected)
    assert got.model_fields_set == expected.model_fields_set
    assert got.model_dump() == expected.model_dump()
    assert got.model_dump(exclude_unset=True) == expected.model_dump(exclude_unset=True)
    assert list(got.__dict__) == list(expected.__dict__)
    with pytest.raises(Exception, match="frozen"):
        got.name = "other"  # type: ignore[misc]


def reference_flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """desired.flatten as it was: a dict per level, merged upwards."""
    out: dict[str, Any] = {}
    if value == {} and not prefix:
        return out
    if isinstance(value, dict) and value and not desired._is_atomic(prefix):
        for key, child in value.items():
            out.update(reference_flatten(child, f"{prefix}{key}." if prefix or key else key))
        return out
    out[prefix.rstrip(".")] = value
    return out


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"a": {}},
        {"": {}},
        {"": {"b": 1}},
        {"a": {"b.c": 1, "b": {"c": 2}}, "a.b.c": 3},
        {"mcp_servers": {"gh": {"env": {"X": 1}}}, "mcp_servers.x": {"a": {"b": 1}}},
        {"a.": {".b": 1}, "x": [1, {"y": 2}]},
        [1, 2],
        5,
    ],
)
def test_flatten_gives_what_the_per_level_flatten_gave(value: Any) -> None:
    for prefix in ("", "p.", "mcp_servers."):
        got, expected = desired.flatten(value, prefix), reference_flatten(value, prefix)
        assert got == expected and list(got) == list(expected)
