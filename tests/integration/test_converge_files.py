"""config.yaml and .env: only managed keys change; broken files and missing secrets fail one bot only."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.adapters import envfile
from tests.integration.conftest import SECRET_FILE, SECRET_OR, SECRET_PEER
from tests.integration.helpers import (
    apply,
    assert_converged,
    changes,
    fields,
    mode,
    profile,
    read_yaml,
    snapshot,
    write_fleet,
)

# The drift suite runs with the observation cache on and off (tests/conftest.py), and agrees.
pytestmark = pytest.mark.usefixtures("observation_cache")

HAND_CONFIG = """\
# Hand-written header comment
model:
  provider: openai   # the old pin
  default: gpt-4
custom_unknown_key:
  nested: [1, 2, 3]
agent:
  max_turns: 42   # keep me
_config_version: 33
zzz_last: true
"""


def _existing_bot(home: Path, name: str, config: str | None = None, env: str | None = None) -> Path:
    path = profile(home, name)
    path.mkdir(parents=True)
    if config is not None:
        (path / "config.yaml").write_text(config)
    if env is not None:
        (path / ".env").write_text(env)
        (path / ".env").chmod(0o600)
    return path


def test_only_managed_config_keys_change(home: Path, manifests: Path) -> None:
    bot = _existing_bot(home, "researcher", HAND_CONFIG)
    manifest = write_fleet(
        manifests,
        [
            {
                "name": "researcher",
                "model": {"provider": "anthropic", "default": "claude-opus-4"},
                "toolsets": ["web"],
                "config": {"memory.memory_char_limit": 4000},
            }
        ],
    )
    run = apply(manifest, home, "--adopt")
    assert run.code == 0, run.text

    text = (bot / "config.yaml").read_text()
    assert text.startswith("# Hand-written header comment\n")
    assert "max_turns: 42   # keep me" in text
    assert "custom_unknown_key:\n  nested: [1, 2, 3]" in text
    assert "_config_version: 33" in text
    data = read_yaml(bot / "config.yaml")
    assert data["model"] == {"provider": "anthropic", "default": "claude-opus-4"}
    assert "toolsets" not in data  # Hermes picks tools per platform (docs/hermes/files.md#toolsets)
    assert data["platform_toolsets"]["cli"] == ["web"] and data["platform_toolsets"]["cron"] == ["web"]
    assert data["memory"] == {"memory_char_limit": 4000}
    # Untouched keys keep their order (new keys are appended after them).
    order = list(data)
    assert order[:5] == ["model", "custom_unknown_key", "agent", "_config_version", "zzz_last"]
    assert_converged(manifest, home)


def test_unparseable_config_is_never_overwritten_and_other_bots_converge(home: Path, manifests: Path) -> None:
    broken = "model: {provider: [unclosed\n"
    bad = profile(home, "broken")
    manifest = write_fleet(
        manifests,
        [
            {"name": "broken", "model": {"default": "x"}},
            {"name": "good", "model": {"default": "y"}},
        ],
    )
    assert apply(manifest, home).code == 0  # both created and owned
    (bad / "config.yaml").write_text(broken)
    manifest = write_fleet(
        manifests,
        [
            {"name": "broken", "model": {"default": "x2"}},
            {"name": "good", "model": {"default": "y2"}},
        ],
    )

    run = apply(manifest, home)
    assert run.code == 1, run.text
    assert "broken" in run.text and "config.yaml" in run.text
    assert (bad / "config.yaml").read_text() == broken
    assert read_yaml(profile(home, "good") / "config.yaml")["model"]["default"] == "y2"

    # Fix the cause: the next apply finishes the job.
    (bad / "config.yaml").write_text("model:\n  default: x\n")
    run = apply(manifest, home)
    assert run.code == 0, run.text
    assert read_yaml(bad / "config.yaml")["model"]["default"] == "x2"
    assert_converged(manifest, home)


def test_referenced_secrets_land_in_env(home: Path, manifests: Path, tmp_path: Path) -> None:
    secret_file = manifests / "secrets" / "token.txt"
    secret_file.parent.mkdir()
    secret_file.write_text(SECRET_FILE + "\n")
    manifest = write_fleet(
        manifests,
        [
            {
                "name": "researcher",
                "env": {
                    "OPENROUTER_API_KEY": {"from_env": "OR_KEY"},
                    "GITHUB_TOKEN": {"from_file": "secrets/token.txt"},
                    "LOG_LEVEL": "debug",
                },
            }
        ],
    )
    run = apply(manifest, home)
    assert run.code == 0, run.text
    env = envfile.read_env(profile(home, "researcher") / ".env")
    assert env.get("OPENROUTER_API_KEY") == SECRET_OR
    assert env.get("GITHUB_TOKEN") == SECRET_FILE
    assert env.get("LOG_LEVEL") == "debug"
    assert mode(profile(home, "researcher") / ".env") == 0o600
    assert_converged(manifest, home)


def test_other_env_lines_are_kept(home: Path, manifests: Path) -> None:
    original = "# my notes\nEXISTING_KEY=keep-me\n\nexport OTHER=1\nOPENROUTER_API_KEY=old\n"
    bot = _existing_bot(home, "researcher", env=original)
    manifest = write_fleet(manifests, [{"name": "researcher", "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}}}])
    assert apply(manifest, home, "--adopt").code == 0
    text = (bot / ".env").read_text()
    assert text == original.replace("OPENROUTER_API_KEY=old", f"OPENROUTER_API_KEY={SECRET_OR}")
    assert mode(bot / ".env") == 0o600


def test_peer_key_goes_to_the_root_env_and_every_bot(home: Path, manifests: Path) -> None:
    """A bot's process loads only its own .env (docs/hermes/home.md#what-a-bot-reads): the key is in both."""
    home.mkdir()
    (home / ".env").write_text("ROOT_ONLY=1\n")
    manifest = write_fleet(
        manifests,
        [{"name": "researcher"}],
        peers=[{"name": "my-box", "url": "http://box.lan:8642", "key": {"from_env": "SPARK_KEY"}}],
    )
    assert apply(manifest, home).code == 0
    root_env = envfile.read_env(home / ".env")
    assert root_env.get("HERMES_PEER_MY_BOX_KEY") == SECRET_PEER
    assert root_env.get("ROOT_ONLY") == "1"
    assert envfile.read_env(profile(home, "researcher") / ".env").get("HERMES_PEER_MY_BOX_KEY") == SECRET_PEER
    assert read_yaml(home / "config.yaml")["bot_peers"] == {"my-box": {"url": "http://box.lan:8642"}}
    assert read_yaml(profile(home, "researcher") / "config.yaml")["bot_peers"] == {"my-box": {"url": "http://box.lan:8642"}}
    assert_converged(manifest, home)


def test_missing_env_var_fails_that_bot_only(home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_EXPORTED", raising=False)
    manifest = write_fleet(
        manifests,
        [
            {"name": "needy", "title": "Needy", "env": {"OPENROUTER_API_KEY": {"from_env": "NOT_EXPORTED"}}},
            {"name": "fine", "title": "Fine"},
        ],
    )
    run = apply(manifest, home)
    assert run.code == 1, run.text
    assert "NOT_EXPORTED" in run.text
    assert not profile(home, "needy").exists()
    assert profile(home, "fine").is_dir()

    monkeypatch.setenv("NOT_EXPORTED", "now-set-value")
    assert apply(manifest, home).code == 0
    assert envfile.read_env(profile(home, "needy") / ".env").get("OPENROUTER_API_KEY") == "now-set-value"
    assert_converged(manifest, home)


def test_missing_secret_file_is_an_error_not_a_crash(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "bot", "env": {"GITHUB_TOKEN": {"from_file": "nope.txt"}}}])
    run = apply(manifest, home)
    # validation may refuse a missing file up front (2), or the bot errors at apply (1); never a traceback
    assert run.code in (1, 2), run.text
    assert "Traceback" not in run.text
    assert not profile(home, "bot").exists()


def test_changing_a_secret_at_its_source_updates_env_without_showing_it(
    home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = write_fleet(manifests, [{"name": "bot", "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}}}])
    assert apply(manifest, home).code == 0
    monkeypatch.setenv("OR_KEY", "rotated-SECRETVALUE-000")
    planned = changes(manifest, home)
    field = fields(planned["bot/bot"])["env:OPENROUTER_API_KEY"]
    assert field["op"] == "change" and field["secret"] is True
    assert field["old"] == field["new"] == "(secret)"
    before = snapshot(home)
    assert apply(manifest, home, "--dry-run").code == 0
    assert snapshot(home) == before
    assert apply(manifest, home).code == 0
    assert envfile.read_env(profile(home, "bot") / ".env").get("OPENROUTER_API_KEY") == "rotated-SECRETVALUE-000"


def test_secret_dropped_from_the_manifests_is_removed_without_showing_it(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "bot", "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}, "LOG_LEVEL": "x"}}])
    assert apply(manifest, home).code == 0
    manifest = write_fleet(manifests, [{"name": "bot", "env": {"LOG_LEVEL": "x"}}])
    field = fields(changes(manifest, home)["bot/bot"])["env:OPENROUTER_API_KEY"]
    assert (field["op"], field["old"], field["secret"], field["drift"]) == ("remove", "(secret)", True, False)
    run = apply(manifest, home)
    assert run.code == 0, run.text
    assert SECRET_OR not in run.text
    env = envfile.read_env(profile(home, "bot") / ".env")
    assert env.get("OPENROUTER_API_KEY") is None and env.get("LOG_LEVEL") == "x"
    assert_converged(manifest, home)


def test_hand_edited_secret_is_kept_when_dropped_from_the_manifests(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "bot", "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}}}])
    assert apply(manifest, home).code == 0
    env_path = profile(home, "bot") / ".env"
    env_path.write_text(env_path.read_text().replace(SECRET_OR, "rotated-by-hand"))
    manifest = write_fleet(manifests, [{"name": "bot"}])
    planned = changes(manifest, home).get("bot/bot")
    assert planned is None or "env:OPENROUTER_API_KEY" not in fields(planned)
    assert apply(manifest, home).code == 0
    assert envfile.read_env(env_path).get("OPENROUTER_API_KEY") == "rotated-by-hand"
