"""Profiles made, backed up and restored by hermes-fleet, as the real Hermes 0.19 CLI sees them."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from controller.adapters import profiles
from tests.hermes_support import HermesCLI

pytestmark = pytest.mark.hermes


def listed_profiles(hermes: HermesCLI) -> list[str]:
    """Profile names from the `hermes profile list` table (rows follow the ─── rule)."""
    out = hermes.run("profile", "list")
    lines = out.stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if "───" in line)
    return [line.replace("◆", " ").split()[0] for line in lines[rule + 1 :] if line.strip()]


def max_turns(hermes: HermesCLI, name: str) -> int:
    out = hermes.run("config", profile=name)
    match = re.search(r"Max turns:\s+(\d+)", out.stdout)
    assert match, out.stdout
    return int(match.group(1))


def set_max_turns(hermes: HermesCLI, name: str, value: int) -> None:
    out = hermes.run("config", "set", "agent.max_turns", str(value), profile=name)
    assert f"Set agent.max_turns = {value}" in out.stdout, out.stdout + out.stderr


def tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) + ("/" if p.is_dir() else "") for p in folder.rglob("*")}


def env_mode(profile: Path) -> int:
    return stat.S_IMODE((profile / ".env").stat().st_mode)


def top_dirs(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.is_dir()}


@pytest.mark.parametrize("kind", ["plain", "create_empty", "clone_from"])
def test_hermes_uses_our_profile(hermes: HermesCLI, hermes_root: Path, kind: str) -> None:
    if kind == "clone_from":
        set_max_turns(hermes, "default", 11)
        profiles.create_profile(hermes_root, "bot", clone_from="default")
        assert max_turns(hermes, "bot") == 11  # the clone carries the source's config
    else:
        profiles.create_profile(hermes_root, "bot", create_empty=kind == "create_empty")

    assert "bot" in listed_profiles(hermes)
    set_max_turns(hermes, "bot", 7)
    assert max_turns(hermes, "bot") == 7
    if kind == "clone_from":
        assert max_turns(hermes, "default") == 11  # the source was not written through
    # Hermes seeds SOUL.md itself on first use (we never write its persona text).
    assert (hermes_root / "profiles" / "bot" / "SOUL.md").is_file()
    assert not (hermes.userhome / ".local").exists()


def test_layout_matches_hermes_profile_create(hermes: HermesCLI, hermes_root: Path) -> None:
    hermes.run("profile", "create", "theirs", "--no-alias")
    ours = profiles.create_profile(hermes_root, "ours")
    theirs = hermes_root / "profiles" / "theirs"

    assert top_dirs(ours) == top_dirs(theirs)
    assert (ours / ".env").read_bytes() == (theirs / ".env").read_bytes()
    assert env_mode(ours) == env_mode(theirs) == 0o600
    # The only difference: Hermes writes its default persona into SOUL.md; we leave it to Hermes.
    assert tree(theirs) - tree(ours) == {"SOUL.md"}
    assert tree(ours) - tree(theirs) == set()


def test_empty_layout_matches_hermes_no_skills(hermes: HermesCLI, hermes_root: Path) -> None:
    hermes.run("profile", "create", "theirs", "--no-alias", "--no-skills")
    ours = profiles.create_profile(hermes_root, "ours", create_empty=True)
    theirs = hermes_root / "profiles" / "theirs"
    assert (theirs / profiles.NO_BUNDLED_SKILLS_MARKER).is_file()
    assert tree(theirs) - tree(ours) == {"SOUL.md"}
    assert tree(ours) - tree(theirs) == set()


def test_clone_layout_matches_hermes_clone_from(hermes: HermesCLI, hermes_root: Path) -> None:
    source = profiles.create_profile(hermes_root, "src")
    set_max_turns(hermes, "src", 5)  # config.yaml, and Hermes' own first-use dirs and SOUL.md
    (source / "memories" / "MEMORY.md").write_text("remember\n")
    (source / "memories" / "USER.md").write_text("user\n")
    (source / "skills" / "cat" / "one").mkdir(parents=True)
    (source / "skills" / "cat" / "one" / "SKILL.md").write_text("---\nname: one\n---\n")

    hermes.run("profile", "create", "theirs", "--clone-from", "src", "--no-alias")
    ours = profiles.create_profile(hermes_root, "ours", clone_from="src")
    theirs = hermes_root / "profiles" / "theirs"

    # Hermes' clone also migrates an unversioned config.yaml in place, which runs its first-use
    # setup (audio_cache, hooks, ...). Ours gets the same on its first Hermes command.
    assert tree(ours) <= tree(theirs)
    assert max_turns(hermes, "ours") == max_turns(hermes, "theirs") == 5
    assert tree(ours) == tree(theirs)
    for rel in ("SOUL.md", "memories/MEMORY.md", "memories/USER.md", "skills/cat/one/SKILL.md", ".env"):
        assert (ours / rel).read_bytes() == (theirs / rel).read_bytes(), rel


def test_backup_and_restore_round_trip(hermes: HermesCLI, hermes_root: Path) -> None:
    profiles.create_profile(hermes_root, "bot")
    set_max_turns(hermes, "bot", 9)
    assert "bot" in listed_profiles(hermes)

    backup = profiles.backup_profile(hermes_root, "bot", fleet="test-fleet")
    assert "bot" not in listed_profiles(hermes)
    gone = hermes.run("config", profile="bot", check=False)
    assert gone.returncode != 0
    assert "does not exist" in gone.stdout + gone.stderr

    profiles.restore_profile(hermes_root, backup)
    assert "bot" in listed_profiles(hermes)
    assert max_turns(hermes, "bot") == 9
