"""plan: per-field operations, drift marking, the JSON shape, exit codes, and no secret in any output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import SECRET_FILE, SECRET_OR, SECRET_PEER
from tests.integration.helpers import (
    Run,
    all_text_under,
    apply,
    changes,
    fields,
    hermes_fleet,
    mode,
    plan,
    plan_json,
    profile,
    write_fleet,
)

# The drift suite runs with the observation cache on and off (tests/conftest.py), and agrees.
pytestmark = pytest.mark.usefixtures("observation_cache")

SECRETS = (SECRET_OR, SECRET_PEER, SECRET_FILE)


def _secret_fleet(manifests: Path, **extra: object) -> Path:
    (manifests / "token.txt").write_text(SECRET_FILE + "\n")
    bot = {
        "name": "researcher",
        "title": "Research Buddy",
        "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}, "GITHUB_TOKEN": {"from_file": "token.txt"}},
        **extra,
    }
    return write_fleet(
        manifests,
        [bot],
        peers=[{"name": "spark", "url": "http://spark.lan:8642", "key": {"from_env": "SPARK_KEY"}}],
    )


def test_plan_lists_field_adds_changes_and_removes(home: Path, manifests: Path) -> None:
    manifest = write_fleet(
        manifests,
        [
            {
                "name": "bot",
                "title": "One",
                "toolsets": ["web"],
                "config": {"approvals.mode": "manual", "agent.max_turns": 12},
            }
        ],
    )
    created = changes(manifest, home)["bot/bot"]
    assert created["action"] == "create"
    assert {f["op"] for f in created["fields"]} == {"add"}
    assert apply(manifest, home).code == 0

    manifest = write_fleet(
        manifests,
        [
            {
                "name": "bot",
                "title": "Two",
                "toolsets": ["web"],
                "config": {"approvals.mode": "manual", "memory.memory_char_limit": 9},
            }
        ],
    )
    updated = changes(manifest, home)["bot/bot"]
    assert updated["action"] == "update"
    by_field = fields(updated)
    assert by_field["meta:title"]["op"] == "change"
    assert (by_field["meta:title"]["old"], by_field["meta:title"]["new"]) == ("One", "Two")
    assert by_field["config:memory.memory_char_limit"]["op"] == "add"
    assert by_field["config:agent.max_turns"]["op"] == "remove"
    assert by_field["config:agent.max_turns"]["old"] == 12
    assert "config:toolsets" not in by_field
    assert not any(f["drift"] for f in updated["fields"])

    text = plan(manifest, home).out
    assert "~ bot/bot  update" in text
    assert '~ meta:title: "One" -> "Two"' in text
    assert "+ config:memory.memory_char_limit = 9" in text
    assert "- config:agent.max_turns (was 12)" in text


def test_hand_edit_of_a_managed_value_is_marked_as_drift(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "bot", "title": "One", "model": {"default": "m1"}}])
    assert apply(manifest, home).code == 0
    config = profile(home, "bot") / "config.yaml"
    config.write_text(config.read_text().replace("m1", "hand-edited"))

    obj = changes(manifest, home)["bot/bot"]
    assert obj["drift"] is True
    field = fields(obj)["config:model.default"]
    assert field == {**field, "op": "change", "old": "hand-edited", "new": "m1", "drift": True}
    text = plan(manifest, home).out
    assert "[drift]" in text
    assert "drift: changed outside hermes-fleet" in text
    assert "1 drifted" in text
    # A change made in the manifests is not drift.
    manifest = write_fleet(manifests, [{"name": "bot", "title": "Two", "model": {"default": "m1"}}])
    assert fields(changes(manifest, home)["bot/bot"])["meta:title"]["drift"] is False


def test_json_plan_shape(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "bot", "title": "One"}])
    data = plan_json(manifest, home)
    assert {"schemaVersion", "kind", "fleet", "digest", "home", "summary", "objects"} <= set(data)
    assert data["kind"] == "plan" and data["fleet"] == "acme"
    assert data["digest"].startswith("sha256:")
    assert data["home"] == str(home)
    assert data["summary"]["changes_pending"] is True
    assert data["summary"]["create"] == 1
    obj = next(o for o in data["objects"] if o["name"] == "bot")
    assert {"kind", "name", "action", "reason", "drift", "origin", "fields"} <= set(obj)
    assert obj["origin"].startswith(str(manifest))
    for field in obj["fields"]:
        assert {"field", "op", "old", "new", "secret", "drift"} <= set(field)

    dry = hermes_fleet("apply", "-f", manifest, "--home", home, "--dry-run", "-o", "json").json()
    assert dry["kind"] == "dry-run"
    applied = hermes_fleet("apply", "-f", manifest, "--home", home, "-o", "json")
    assert applied.code == 0
    result = applied.json()
    assert result["kind"] == "apply"
    assert all(r["ok"] for r in result["results"]) and result["summary"]["failed"] == 0


def test_detailed_exitcode_is_4_only_while_changes_are_pending(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "bot", "title": "One"}])
    assert plan(manifest, home).code == 0
    assert plan(manifest, home, "--detailed-exitcode").code == 4
    assert apply(manifest, home).code == 0
    assert plan(manifest, home, "--detailed-exitcode").code == 0


def _assert_no_secret(*outputs: str) -> None:
    for output in outputs:
        for secret in SECRETS:
            assert secret not in output


def test_secret_values_never_appear_in_any_output(home: Path, manifests: Path) -> None:
    manifest = _secret_fleet(manifests)
    runs: list[Run] = [
        plan(manifest, home),
        plan(manifest, home, "-o", "json"),
        apply(manifest, home, "--dry-run"),
        apply(manifest, home, "--dry-run", "-o", "json"),
        apply(manifest, home),
    ]
    # Drift on a secret: a hand edit of the .env value.
    env = profile(home, "researcher") / ".env"
    env.write_text(env.read_text().replace(SECRET_OR, "hand-SECRETVALUE-edit"))
    runs += [
        plan(manifest, home),
        plan(manifest, home, "-o", "json"),
        hermes_fleet("status", "--home", home),
        hermes_fleet("status", "--home", home, "-o", "json"),
        hermes_fleet("status", "--home", home, "-f", manifest),
        apply(manifest, home, "-o", "json"),
    ]
    # A failing apply (missing variable) and a removal of the secret from the manifests.
    manifest2 = _secret_fleet(
        manifests,
        env={
            "OPENROUTER_API_KEY": {"from_env": "OR_KEY"},
            "MISSING_TOKEN": {"from_env": "NOT_EXPORTED_ANYWHERE"},
        },
    )
    failing = apply(manifest2, home)
    assert failing.code == 1, failing.text
    runs += [failing]
    write_fleet(manifests, [{"name": "researcher", "title": "Research Buddy"}])
    runs += [plan(manifest, home), apply(manifest, home), plan(manifest, home, "-o", "json")]

    for run in runs:
        assert "Traceback" not in run.text
        _assert_no_secret(run.out, run.err)
        assert "hand-SECRETVALUE-edit" not in run.text
    inventory = home / ".hermes-fleet" / "inventory" / "acme.json"
    stored = inventory.read_text()
    _assert_no_secret(stored)
    assert "hand-SECRETVALUE-edit" not in stored
    # Nothing under .hermes-fleet (inventory, lock, backups metadata, history) holds a secret,
    # except the kept copy of the hand-edited .env that apply overwrote: owner-only, never shown
    # (docs/cli.md#replaced-content).
    state = home / ".hermes-fleet"
    kept = sorted((state / "replaced").rglob("*"))
    assert [str(p.relative_to(state / "replaced")).split("/", 1)[1] for p in kept if p.is_file()] == ["profiles/researcher/.env"]
    assert all(mode(p) == (0o700 if p.is_dir() else 0o600) for p in kept)
    for part in state.iterdir():
        if part.name != "replaced":
            _assert_no_secret(all_text_under(part) if part.is_dir() else part.read_text())
    json.loads(stored)


def test_install_wide_keys_the_default_bot_takes_over_are_kept(home: Path, manifests: Path) -> None:
    """Found by the validate-predicts-apply property: install-wide `memory`/`timezone` dropped from the
    Fleet in the same apply that gives them to the `default` bot (the root profile) were removed by
    install/root after the bot saw them present, so the next plan showed drift."""
    first = write_fleet(manifests, [{"name": "alpha"}], config={"timezone": "Europe/Berlin", "memory": []})
    assert apply(first, home).code == 0
    second = write_fleet(manifests, [{"name": "default"}], defaults={"config": {"timezone": "Europe/Berlin", "memory": []}})
    assert apply(second, home, "--adopt").code == 0
    root = (home / "config.yaml").read_text()
    assert "timezone: Europe/Berlin" in root and "memory: []" in root
    assert plan(second, home, "--detailed-exitcode").code == 0
