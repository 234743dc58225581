"""Export a home built by hand with the real Hermes 0.19.0 CLI, then adopt it.

Adoption adds to a CLI-built profile only the headless Bot Mode enablement (the Bot Mode record and the
canonical "Bot Chat" session, which Hermes 0.19 cannot create without a model call), and the
`_config_version` Hermes' own checks expect (`hermes config set` on a new profile writes none).
"""

from __future__ import annotations

import pytest

from tests.integration.helpers import hermes_fleet, plan_json

pytestmark = pytest.mark.hermes


def test_hand_built_home_exports_and_adopts_without_other_changes(hermes, tmp_path):
    hermes.run("profile", "create", "scout", "--no-alias", "--description", "Looks around.")
    hermes.run("config", "set", "model.default", "anthropic/claude-sonnet-4", profile="scout")
    hermes.run("config", "set", "memory.memory_char_limit", "3000", profile="scout")
    made = hermes.run("cron", "create", "every 2h", "Sweep the inbox.", "--name", "[bot:scout] sweep", profile="scout")
    assert "Created" in made.stdout or "created" in made.stdout.lower(), made.stdout
    hermes.run("cron", "create", "0 9 * * *", "Untagged job", "--name", "plain", profile="scout")

    target = tmp_path / "fleet.yaml"
    run = hermes_fleet("export", "--home", hermes.root, "--fleet", "hand", "-o", target)
    assert run.code == 0, run.text
    text = target.read_text()
    assert "name: scout" in text and "description: Looks around." in text
    assert "schedule: every 120m" in text and "prompt: Sweep the inbox." in text
    assert "Untagged job" not in text and "without a [bot:scout] tag" in run.err
    assert hermes_fleet("validate", "-f", target).code == 0

    report = plan_json(target, hermes.root, "--adopt")
    by_name = {f"{o['kind']}/{o['name']}": o for o in report["objects"]}
    assert by_name["bot/scout"]["action"] == "adopt"
    assert [f["field"] for f in by_name["bot/scout"]["fields"]] == ["botchat", "botmode", "config:_config_version"]
    assert by_name["routine/scout/sweep"]["action"] == "adopt"
    assert by_name["routine/scout/sweep"]["fields"] == []

    adopted = hermes_fleet("apply", "-f", target, "--home", hermes.root, "--adopt")
    assert adopted.code == 0, adopted.text
    listing = hermes.run("cron", "list", "--all", profile="scout")
    assert listing.stdout.count("[bot:scout] sweep") == 1 and "plain" in listing.stdout
    assert "Bot Chat" in hermes.run("sessions", "list", profile="scout").stdout


def test_export_leaves_hermes_defaults_to_hermes_so_enabling_a_plugin_later_is_not_drift(hermes, tmp_path):
    """`hermes config migrate` writes display.tool_progress, agent.verify_on_stop and plugins.enabled: []
    into a profile (hermes_cli/config.py migrate_config); they restate Hermes' defaults, so export
    must not turn them into managed settings (docs/hermes/effect-research.md#export-defaults)."""
    hermes.run("profile", "create", "scout", "--no-alias")
    hermes.run("config", "set", "model.default", "anthropic/claude-sonnet-4", profile="scout")
    hermes.run("config", "migrate", profile="scout")
    migrated = (hermes.root / "profiles" / "scout" / "config.yaml").read_text()
    assert "tool_progress: all" in migrated and "enabled: []" in migrated  # the premise holds

    target = tmp_path / "fleet.yaml"
    assert hermes_fleet("export", "--home", hermes.root, "--fleet", "hand", "-o", target).code == 0
    text = target.read_text()
    assert "tool_progress" not in text and "verify_on_stop" not in text and "plugins" not in text
    assert "anthropic/claude-sonnet-4" in text
    assert hermes_fleet("apply", "-f", target, "--home", hermes.root, "--adopt").code == 0

    hermes.run("plugins", "enable", "browser-browser-use", profile="scout")
    report = plan_json(target, hermes.root)
    assert report["summary"]["changes_pending"] is False, report["objects"]
    assert report["summary"]["drifted"] == 0
