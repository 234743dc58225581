"""A Hermes writer that changes config.yaml or .env between our read and our replace loses nothing.

Hermes' `config set` and `save_env_value` take no lock; apply re-reads and retries when the file
moved under it (fsio's `expect`). The race is forced deterministically with a write hook that
plays the other writer at the last moment before our replace.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.adapters import fsio
from tests.integration.helpers import apply, plan, profile, read_yaml, write_fleet


@pytest.fixture
def other_writer():
    played: list[Path] = []

    def install(target_name: str, append: str):
        def hook(path: Path) -> None:
            if Path(path).name == target_name and not played:
                played.append(Path(path))
                with open(path, "a", encoding="utf-8") as handle:  # the other writer wins the race
                    handle.write(append)

        fsio.WRITE_HOOKS.append(hook)
        return played

    yield install
    fsio.WRITE_HOOKS.clear()


def test_a_config_key_written_by_hermes_mid_apply_survives(home: Path, manifests: Path, other_writer):
    bot = [{"name": "scout", "toolsets": ["web"]}]
    assert apply(write_fleet(manifests, bot), home).code == 0
    played = other_writer("config.yaml", "hermes_wrote_this: 1\n")
    changed = [{"name": "scout", "toolsets": ["web", "terminal"]}]
    run = apply(write_fleet(manifests, changed), home)
    assert run.code == 0, run.text
    assert played, "the race was not played"
    data = read_yaml(profile(home, "scout") / "config.yaml")
    assert data["hermes_wrote_this"] == 1 and data["platform_toolsets"]["cli"] == ["web", "terminal"]


def test_an_env_key_written_by_hermes_mid_apply_survives(home: Path, manifests: Path, other_writer):
    assert apply(write_fleet(manifests, [{"name": "scout", "env": {"MODE": "a"}}]), home).code == 0
    played = other_writer(".env", "HERMES_ADDED=1\n")
    run = apply(write_fleet(manifests, [{"name": "scout", "env": {"MODE": "b"}}]), home)
    assert run.code == 0, run.text
    assert played
    text = (profile(home, "scout") / ".env").read_text()
    assert "HERMES_ADDED=1" in text and "MODE=b" in text
    assert plan(write_fleet(manifests, [{"name": "scout", "env": {"MODE": "b"}}]), home, "--detailed-exitcode").code == 0


def test_a_secret_that_env_cannot_carry_fails_its_bot_before_any_write(home: Path, manifests: Path, tmp_path):
    from tests.integration.helpers import snapshot

    secret = tmp_path / "multi-line.secret"
    secret.write_text("line one\nline two\n")
    bots = [
        {"name": "good", "title": "Good"},
        {"name": "bad", "title": "Bad", "toolsets": ["web"], "env": {"TOKEN": {"from_file": str(secret)}}},
    ]
    assert apply(write_fleet(manifests, [bots[0]]), home).code == 0
    before_good = snapshot(profile(home, "good"))
    run = apply(write_fleet(manifests, bots), home)
    assert run.code == 1, run.text
    assert "line break" in run.text and "line one" not in run.text
    assert not profile(home, "bad").exists()  # not created at all: no half-written bot
    assert snapshot(profile(home, "good")) == before_good


def test_a_config_yaml_with_windows_line_endings_is_still_writable(home: Path, manifests: Path):
    # The change-since-read check compares bytes: reading must not translate \r\n.
    assert apply(write_fleet(manifests, [{"name": "scout"}]), home).code == 0
    config = profile(home, "scout") / "config.yaml"
    config.write_bytes(b"custom_key: 1\r\nagent:\r\n  max_turns: 7\r\n")
    run = apply(write_fleet(manifests, [{"name": "scout", "toolsets": ["web"]}]), home)
    assert run.code == 0, run.text
    data = read_yaml(config)
    assert data["custom_key"] == 1 and data["agent"]["max_turns"] == 7 and data["platform_toolsets"]["cli"] == ["web"]
