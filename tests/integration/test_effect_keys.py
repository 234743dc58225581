"""Drift, prune and migration for the keys that make settings take effect (docs/manifest.md, "Effect").

toolsets are pinned per platform (`platform_toolsets.<p>`), install-wide settings are written into
every bot, and every bot carries a Bot Mode record. These keys follow the same three-way rules as
every other field: a hand edit is drift, a setting the manifests drop is removed where this fleet
wrote it, and keys an older hermes-fleet wrote converge to the new form.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from controller.hermes import platforms
from tests.integration.helpers import (
    apply,
    assert_converged,
    changes,
    fields,
    hermes_fleet,
    profile,
    read_yaml,
    write_fleet,
)


def _edit_config(path: Path, edit) -> None:  # type: ignore[no-untyped-def]
    yaml = YAML()
    data = yaml.load(path.read_text())
    edit(data)
    with path.open("w") as handle:
        yaml.dump(data, handle)


def test_toolsets_are_pinned_on_every_platform_and_a_hand_edit_is_drift(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "scout", "toolsets": ["web", "file"]}])
    assert apply(manifest, home).code == 0
    pinned = read_yaml(profile(home, "scout") / "config.yaml")["platform_toolsets"]
    assert set(pinned) == set(platforms.PLATFORMS_0_19) and all(v == ["web", "file"] for v in pinned.values())

    _edit_config(profile(home, "scout") / "config.yaml", lambda d: d["platform_toolsets"].update(telegram=["terminal"]))
    planned = changes(manifest, home)
    changed = fields(planned["bot/scout"])
    assert list(changed) == ["config:platform_toolsets.telegram"] and changed["config:platform_toolsets.telegram"]["drift"]
    status = hermes_fleet("status", "--home", home, "-o", "json").json()
    (bot,) = [o for o in status["fleets"][0]["objects"] if o["object"] == "bot/scout"]
    assert bot["drifted_fields"] == ["config:platform_toolsets.telegram"]  # status and plan agree
    assert apply(manifest, home).code == 0
    assert_converged(manifest, home)


def test_dropping_toolsets_unpins_every_platform(home: Path, manifests: Path) -> None:
    assert apply(write_fleet(manifests, [{"name": "scout", "toolsets": ["web"]}]), home).code == 0
    manifest = write_fleet(manifests, [{"name": "scout"}])
    assert apply(manifest, home).code == 0
    assert "platform_toolsets" not in (read_yaml(profile(home, "scout") / "config.yaml") or {})
    assert_converged(manifest, home)


def test_a_top_level_toolsets_key_from_an_older_hermes_fleet_is_replaced(home: Path, manifests: Path) -> None:
    """hermes-fleet 0.1 wrote `toolsets:` (which picks no tools); the next apply moves it to the pins."""
    manifest = write_fleet(manifests, [{"name": "scout", "toolsets": ["web"]}])
    assert apply(manifest, home).code == 0
    config = profile(home, "scout") / "config.yaml"
    _edit_config(config, lambda d: (d.pop("platform_toolsets"), d.update(toolsets=["web"])))
    inventory = home / ".hermes-fleet" / "inventory" / "acme.json"
    data = json.loads(inventory.read_text())
    applied = data["objects"]["bot/scout"]["applied"]
    for key in [k for k in applied if k.startswith("config:platform_toolsets.")]:
        del applied[key]
    applied["config:toolsets"] = ["web"]  # what the older release recorded
    inventory.write_text(json.dumps(data))

    planned = fields(changes(manifest, home)["bot/scout"])
    assert planned["config:toolsets"]["op"] == "remove" and not planned["config:toolsets"]["drift"]
    assert planned["config:platform_toolsets.cron"]["op"] == "add"
    assert apply(manifest, home).code == 0
    assert "toolsets" not in read_yaml(config)
    assert_converged(manifest, home)


def test_an_inherited_setting_edited_in_one_bot_is_drift_and_marked_install_wide(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "a"}, {"name": "b"}], config={"timezone": "Europe/Berlin"})
    assert apply(manifest, home).code == 0
    _edit_config(profile(home, "a") / "config.yaml", lambda d: d.update(timezone="UTC"))
    planned = changes(manifest, home)
    assert set(planned) == {"bot/a"}
    field = fields(planned["bot/a"])["config:timezone"]
    assert field["drift"] and field["inherited"] and field["new"] == "Europe/Berlin"
    assert "(install-wide)" in hermes_fleet("plan", "-f", manifest, "--home", home).out


def test_a_bots_own_value_wins_over_the_install_wide_one(home: Path, manifests: Path) -> None:
    manifest = write_fleet(
        manifests,
        [{"name": "a"}, {"name": "b", "config": {"timezone": "Asia/Tokyo"}}],
        config={"timezone": "Europe/Berlin", "display": {"bell": True}},
    )
    assert apply(manifest, home).code == 0
    b = read_yaml(profile(home, "b") / "config.yaml")
    assert b["timezone"] == "Asia/Tokyo" and b["display"] == {"bell": True}
    assert read_yaml(profile(home, "a") / "config.yaml")["timezone"] == "Europe/Berlin"
    assert_converged(manifest, home)


def test_a_bot_with_only_a_model_carries_the_bot_mode_marker(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "plain", "model": {"default": "openai/gpt-5"}}])
    assert apply(manifest, home).code == 0
    record = read_yaml(profile(home, "plain") / "profile.yaml")["ui_meta"]["hermes-bots"]
    assert record["shape"] == "blobatar" and record["imageKind"] == "shape" and isinstance(record["created"], int)
    assert_converged(manifest, home)


def test_plan_warns_when_hermes_managed_scope_overrides_a_fleet_setting(
    home: Path, manifests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    managed = tmp_path / "managed"
    managed.mkdir()
    (managed / "config.yaml").write_text("timezone: Asia/Tokyo\napprovals:\n  mode: manual\n")
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(managed))
    manifest = write_fleet(
        manifests, [{"name": "a", "config": {"approvals": {"mode": "smart"}}}], config={"timezone": "Europe/Berlin"}
    )
    notes = hermes_fleet("plan", "-f", manifest, "--home", home, "-o", "json").json()["notes"]
    (warning,) = [n for n in notes if "managed scope" in n]
    assert str(managed) in warning and "timezone (install-wide)" in warning and "approvals.mode (bot/a)" in warning
    monkeypatch.delenv("HERMES_MANAGED_DIR")
    notes = hermes_fleet("plan", "-f", manifest, "--home", home, "-o", "json").json()["notes"]
    assert not [n for n in notes if "managed scope" in n]
