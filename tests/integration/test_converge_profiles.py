"""apply creates profiles the way Hermes does: layout, .env, markers, clones, no staging leftovers."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.adapters.profiles import PROFILE_DIRS
from controller.hermes.env import PROFILE_ENV_HEADER
from tests.integration.helpers import apply, assert_converged, mode, profile, write_fleet

# The drift suite runs with the observation cache on and off (tests/conftest.py), and agrees.
pytestmark = pytest.mark.usefixtures("observation_cache")


def test_new_bot_gets_the_hermes_profile_layout(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "researcher", "title": "Research Buddy"}])
    run = apply(manifest, home)
    assert run.code == 0, run.text

    bot = profile(home, "researcher")
    for sub in PROFILE_DIRS:
        assert (bot / sub).is_dir(), sub
    env = bot / ".env"
    assert mode(env) == 0o600
    assert env.read_text().startswith(PROFILE_ENV_HEADER)
    assert not (bot / ".no-bundled-skills").exists()
    assert_converged(manifest, home)


def test_apply_never_writes_a_wrapper_outside_the_home(home: Path, manifests: Path, tmp_path: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "researcher"}, {"name": "writer"}])
    assert apply(manifest, home).code == 0
    user = tmp_path / "user"
    assert list(user.iterdir()) == []  # no ~/.local/bin/<name> wrapper, nothing at all in $HOME
    assert not (user / ".local" / "bin" / "researcher").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hermes", "manifests", "user"]


def test_create_empty_marks_no_bundled_skills(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "bare", "create_empty": True}, {"name": "full"}])
    assert apply(manifest, home).code == 0
    assert (profile(home, "bare") / ".no-bundled-skills").is_file()
    assert not (profile(home, "full") / ".no-bundled-skills").exists()
    assert_converged(manifest, home)


def test_clone_from_copies_config_env_soul_skills_and_memories(home: Path, manifests: Path) -> None:
    src = profile(home, "template")
    (src / "skills" / "cat" / "one").mkdir(parents=True)
    (src / "memories").mkdir()
    (src / "config.yaml").write_text("agent:\n  max_turns: 11\n")
    (src / ".env").write_text("SOME_TOKEN=tok\n")
    (src / "SOUL.md").write_text("Template persona\n")
    (src / "skills" / "cat" / "one" / "SKILL.md").write_text("---\nname: one\n---\n")
    (src / "memories" / "MEMORY.md").write_text("remember\n")
    (src / "memories" / "USER.md").write_text("user facts\n")
    (src / "state.db").write_bytes(b"not copied")

    manifest = write_fleet(manifests, [{"name": "clone", "clone_from": "template", "title": "Clone"}])
    run = apply(manifest, home)
    assert run.code == 0, run.text

    clone = profile(home, "clone")
    assert "max_turns: 11" in (clone / "config.yaml").read_text()
    assert "SOME_TOKEN=tok" in (clone / ".env").read_text()
    assert mode(clone / ".env") == 0o600
    assert (clone / "SOUL.md").read_text() == "Template persona\n"
    assert (clone / "skills" / "cat" / "one" / "SKILL.md").is_file()
    assert (clone / "memories" / "MEMORY.md").read_text() == "remember\n"
    assert (clone / "memories" / "USER.md").read_text() == "user facts\n"
    # The clone's own Bot Chat lives in a fresh state.db, not the template's.
    assert (clone / "state.db").read_bytes() != b"not copied"
    # The source is never written through.
    assert (src / "state.db").read_bytes() == b"not copied"
    assert_converged(manifest, home)


def test_clone_from_only_applies_at_creation(home: Path, manifests: Path) -> None:
    src = profile(home, "template")
    src.mkdir(parents=True)
    (src / "SOUL.md").write_text("v1\n")
    manifest = write_fleet(manifests, [{"name": "clone", "clone_from": "template"}])
    assert apply(manifest, home).code == 0
    (src / "SOUL.md").write_text("v2\n")
    assert_converged(manifest, home)
    assert (profile(home, "clone") / "SOUL.md").read_text() == "v1\n"


def test_no_staging_directory_is_left_behind(home: Path, manifests: Path) -> None:
    bots = [{"name": f"bot{i}", "title": f"Bot {i}"} for i in range(4)]
    manifest = write_fleet(manifests, bots)
    assert apply(manifest, home).code == 0
    entries = sorted(p.name for p in (home / "profiles").iterdir())
    assert entries == ["bot0", "bot1", "bot2", "bot3"]
    leftovers = [p for p in home.rglob("*") if ".staging-" in p.name]
    assert leftovers == []


def test_staging_is_cleaned_when_creation_fails(home: Path, manifests: Path) -> None:
    # Clone from a template whose config.yaml cannot be parsed: creation fails for that bot.
    src = profile(home, "template")
    src.mkdir(parents=True)
    (src / "config.yaml").write_text("a: [unclosed\n")
    manifest = write_fleet(manifests, [{"name": "clone", "clone_from": "template"}, {"name": "ok"}])
    run = apply(manifest, home)
    assert run.code == 1, run.text
    assert not profile(home, "clone").exists()
    assert profile(home, "ok").is_dir()
    assert [p for p in home.rglob("*") if ".staging-" in p.name] == []
