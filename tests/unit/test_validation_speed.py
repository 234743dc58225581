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


def same_model(got: Any, expected: Any) -> None:
    assert type(got) is type(expected)
    assert got == expected and repr(got) == repr(expected)
    assert got.model_fields_set == expected.model_fields_set
    assert got.model_dump(exclude_unset=True) == expected.model_dump(exclude_unset=True)
    assert list(got.__dict__) == list(expected.__dict__)


@pytest.mark.parametrize(
    "name", ["digest", "a", " padded ", "x" * 200, "x" * 201, "", " ", "a\nb", "a\rb", "a\x00b", "\t", "ü ok", "\u00a0"]
)
def test_a_routine_document_gives_the_routine_model_validate_gives(name: str) -> None:
    from pydantic import ValidationError

    from controller.manifests.models import Routine, RoutineDocument

    doc = RoutineDocument.model_validate(
        {
            "apiVersion": "hermes-fleet/v1",
            "kind": "Routine",
            "metadata": {"name": "m"},
            "spec": {"bot": "b1", "schedule": "every 1h", "prompt": "p", "paused": True},
        }
    )
    fields = {key: getattr(doc.spec, key) for key in doc.spec.model_fields_set if key != "bot"}
    try:
        expected = Routine.model_validate({**fields, "name": name})
    except ValidationError:
        assert validating._routine_of(doc.spec, name) is None  # the caller validates again, for the error
        return
    got = validating._routine_of(doc.spec, name)
    assert got is not None
    same_model(got, expected)


def test_defaults_merge_into_the_bot_model_copy_gives() -> None:
    from controller.manifests.models import BotDefaults

    defaults = BotDefaults.model_validate(
        {"model": {"provider": "p", "default": "m"}, "env": {"A": "1", "B": "2"}, "config": {"x": {"y": 1}}, "toolsets": ["web"]}
    )
    for spec in SPECS:
        bot = Bot.model_validate({**spec, "name": "b1"})
        update: dict[str, Any] = {}
        for name in BotDefaults.model_fields:
            default_value = getattr(defaults, name)
            own = getattr(bot, name)
            if default_value is None:
                continue
            if own is None:
                update[name] = default_value
            elif name == "env":
                update[name] = {**default_value, **own}
            elif name == "config":
                update[name] = {**desired.flatten(default_value), **desired.flatten(own)}
        same_model(desired.merged_with_defaults(bot, defaults), bot.model_copy(update=update))


def test_the_digest_is_made_on_first_read_and_is_the_state_digest() -> None:
    """DesiredState.digest is computed when first read (validate's text output never reads it),
    and is then what state_digest gives; a digest given to the constructor is kept as given."""
    import dataclasses
    from pathlib import Path

    from controller.manifests import reading

    repo = Path(__file__).resolve().parents[2]
    state = reading.load_paths([str(repo / "examples" / "team")], recursive=True, fleet=None).state
    assert state is not None
    assert state.__dict__["_digest"] == ""  # not made yet
    expected = desired.state_digest(state)
    assert state.digest == expected and state.__dict__["_digest"] == expected
    for host in ("office", "nowhere", None):
        sliced = desired.for_host(state, host)
        assert sliced.digest == desired.state_digest(sliced)
    given = dataclasses.replace(state, digest="sha256:given")
    assert given.digest == "sha256:given" and given == dataclasses.replace(given)
    assert "digest" in {f.name for f in dataclasses.fields(state)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.digest = "sha256:other"  # type: ignore[misc]
