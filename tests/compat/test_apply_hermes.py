"""apply against the real hermes-agent 0.19.0: Hermes sees what the manifests say, and what Hermes'
own writers do afterwards (config set, plugins enable/disable, .env normalisation) is not drift."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.hermes_support import HermesCLI
from tests.integration.helpers import (
    apply,
    assert_converged,
    changes,
    fields,
    profile,
    snapshot,
    write_fleet,
)

pytestmark = pytest.mark.hermes

SECRET = "sk-or-COMPAT-SECRET-4242"
PLUGIN = "browser-browser-use"  # bundled with the 0.19.0 wheel, so `plugins enable` accepts it


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OR_KEY", SECRET)
    monkeypatch.setenv("NO_COLOR", "1")
    folder = tmp_path / "manifests"
    return write_fleet(
        folder,
        [
            {
                "name": "researcher",
                "title": "Research Buddy",
                "description": "Reads papers.",
                "model": {"provider": "anthropic", "default": "claude-opus-4"},
                "toolsets": ["web", "terminal"],
                "soul": "You are a meticulous researcher.\n",
                "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}, "LOG_LEVEL": "debug"},
                "config": {"approvals.mode": "manual", "memory.memory_char_limit": 4000},
            },
            {"name": "writer", "title": "Writer", "create_empty": True, "config": {"agent.max_turns": 12}},
        ],
        gateway={"bot_mode_protocol": False},
        config={"timezone": "Europe/Berlin"},
    )


def listed_profiles(hermes: HermesCLI) -> list[str]:
    lines = hermes.run("profile", "list").stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if "───" in line)
    return [line.replace("◆", " ").split()[0] for line in lines[rule + 1 :] if line.strip()]


def config_get(hermes: HermesCLI, bot: str, key: str) -> str:
    return hermes.run("config", "get", key, profile=bot).stdout.strip()


def test_hermes_sees_what_the_manifest_says(hermes: HermesCLI, hermes_root: Path, fleet: Path) -> None:
    run = apply(fleet, hermes_root)
    assert run.code == 0, run.text

    assert {"default", "researcher", "writer"} <= set(listed_profiles(hermes))
    assert config_get(hermes, "researcher", "model.default") == "claude-opus-4"
    assert config_get(hermes, "researcher", "model.provider") == "anthropic"
    assert config_get(hermes, "researcher", "platform_toolsets.cli").split() == ["-", "web", "-", "terminal"]
    assert config_get(hermes, "researcher", "approvals.mode") == "manual"
    assert config_get(hermes, "researcher", "memory.memory_char_limit") == "4000"
    assert config_get(hermes, "writer", "agent.max_turns") == "12"
    assert config_get(hermes, "default", "timezone") == "Europe/Berlin"
    shown = hermes.run("config", profile="researcher").stdout
    assert "Max turns:    90" in shown  # researcher does not pin it: Hermes' default
    assert SECRET not in shown
    assert re.search(r"OpenRouter\s+sk-o\.\.\.4242", shown), shown  # Hermes found the key (masked)

    for bot in ("researcher", "writer"):
        sessions = hermes.run("sessions", "list", profile=bot).stdout
        assert sessions.count("Bot Chat") == 1, sessions

    env_value = hermes.python(
        "import os; from hermes_cli.env_loader import load_hermes_dotenv; load_hermes_dotenv();"
        "print(os.environ.get('OPENROUTER_API_KEY'), os.environ.get('LOG_LEVEL'))",
        profile="researcher",
    )
    assert env_value.stdout.split() == [SECRET, "debug"]  # Hermes' own loader reads our .env
    assert_converged(fleet, hermes_root)


def test_hermes_writers_do_not_cause_drift(hermes: HermesCLI, hermes_root: Path, fleet: Path) -> None:
    assert apply(fleet, hermes_root).code == 0
    assert_converged(fleet, hermes_root)

    # `hermes config set` on a key the fleet does not manage (raw PyYAML rewrite, comments dropped).
    out = hermes.run("config", "set", "agent.max_turns", "7", profile="researcher")
    assert "Set agent.max_turns = 7" in out.stdout
    assert_converged(fleet, hermes_root)

    # save_config() writers: plugins enable / disable (adds _config_version, comment blocks, may
    # drop default-valued keys), in a bot and in the root profile.
    for who in ("researcher", "writer", "default"):
        hermes.run("plugins", "enable", PLUGIN, profile=who)
        assert_converged(fleet, hermes_root)
        hermes.run("plugins", "disable", PLUGIN, profile=who)
        assert_converged(fleet, hermes_root)
    assert "_config_version" in (profile(hermes_root, "researcher") / "config.yaml").read_text()

    # Hermes' first-use setup in every profile (ensure_hermes_home: SOUL.md seed, extra folders).
    hermes.run("config", profile="writer")
    hermes.run("sessions", "list", profile="writer")
    assert_converged(fleet, hermes_root)

    # And apply after all that still changes nothing.
    run = apply(fleet, hermes_root)
    assert run.code == 0 and "Apply complete: 0 object(s) changed." in run.out, run.text


def test_env_normalised_by_hermes_is_not_drift(hermes: HermesCLI, hermes_root: Path, fleet: Path) -> None:
    assert apply(fleet, hermes_root).code == 0
    env = profile(hermes_root, "researcher") / ".env"
    dirty = env.read_text().replace("LOG_LEVEL=debug", "  LOG_LEVEL=debug   ")
    dirty = dirty.replace(f"OPENROUTER_API_KEY={SECRET}", f"OPENROUTER_API_KEY={SECRET}  ")
    env.write_text(dirty + "EXTRA_UNMANAGED=1\n")
    hermes.run("config", "get", "model.default", profile="researcher")  # a start that normalises .env
    text = env.read_text()
    assert "  LOG_LEVEL" not in text, "Hermes 0.19 normalises a dirty .env on start"
    assert "EXTRA_UNMANAGED=1" in text
    assert_converged(fleet, hermes_root)


def test_hand_edit_through_hermes_on_a_managed_key_is_drift(hermes: HermesCLI, hermes_root: Path, fleet: Path) -> None:
    assert apply(fleet, hermes_root).code == 0
    hermes.run("config", "set", "model.default", "gpt-5", profile="researcher")
    obj = changes(fleet, hermes_root)["bot/researcher"]
    field = fields(obj)["config:model.default"]
    assert (field["old"], field["new"], field["drift"]) == ("gpt-5", "claude-opus-4", True)
    assert apply(fleet, hermes_root).code == 0
    assert config_get(hermes, "researcher", "model.default") == "claude-opus-4"
    assert_converged(fleet, hermes_root)


def test_profiles_made_by_hermes_are_untouched(hermes: HermesCLI, hermes_root: Path, fleet: Path) -> None:
    hermes.run("profile", "create", "theirs", "--no-alias")
    hermes.run("config", "set", "agent.max_turns", "3", profile="theirs")
    theirs = profile(hermes_root, "theirs")
    before = snapshot(theirs)

    assert apply(fleet, hermes_root).code == 0
    assert apply(fleet, hermes_root, "--prune", "--yes").code == 0
    shrunk = write_fleet(fleet.parent, [{"name": "researcher", "title": "Research Buddy"}])
    assert apply(shrunk, hermes_root, "--prune", "--yes").code == 0
    assert snapshot(theirs) == before
    assert "theirs" in listed_profiles(hermes)
    assert "writer" not in listed_profiles(hermes)  # pruned: owned by the fleet


def test_apply_over_a_hermes_created_profile_with_adopt(hermes: HermesCLI, hermes_root: Path, fleet: Path) -> None:
    hermes.run("profile", "create", "researcher", "--no-alias", "--description", "made by hand")
    hermes.run("config", "set", "agent.max_turns", "5", profile="researcher")
    before = snapshot(hermes_root)
    assert apply(fleet, hermes_root).code == 3
    assert snapshot(hermes_root) == before
    run = apply(fleet, hermes_root, "--adopt")
    assert run.code == 0, run.text
    assert config_get(hermes, "researcher", "agent.max_turns") == "5"
    assert config_get(hermes, "researcher", "model.default") == "claude-opus-4"
    assert hermes.run("sessions", "list", profile="researcher").stdout.count("Bot Chat") == 1
    assert_converged(fleet, hermes_root)


def test_hermes_own_checks_ask_no_migration(hermes: HermesCLI, hermes_root: Path, fleet: Path) -> None:
    """`hermes config check` and `hermes doctor` compare each file's raw `_config_version` with
    0.19.0's (hermes_cli/config.py check_config_version): apply writes it, so they ask for nothing."""
    assert apply(fleet, hermes_root).code == 0
    for who in ("researcher", "writer", "default"):
        check = hermes.run("config", "check", profile=who).stdout
        assert "Config version: 33 ✓" in check, check
        assert "update available" not in check and "new config option" not in check, check
    doctor = hermes.run("doctor", profile="researcher", check=False, timeout=180).stdout
    assert "Config version up to date (v33)" in doctor, doctor
    assert "Config version outdated" not in doctor, doctor

    # A later Hermes migrating the file bumps the version: that is not drift.
    config = profile(hermes_root, "researcher") / "config.yaml"
    config.write_text(config.read_text().replace("_config_version: 33", "_config_version: 40"))
    assert_converged(fleet, hermes_root)
