"""Containment: a bot's writes stay inside its own real profile folder, and ours inside `.hermes-fleet/`.

The update run (fleet v1 home -> v2, `--prune`) meets a symlink planted where hermes-fleet writes:
a managed profile folder linked to another profile of the same home or to the root, a profile
that prune would back up, a file or folder inside a profile that leads into another profile or
out of the home, the root profile's config, the cron store, `.hermes-fleet/` and its entries. Each
time: exit 3, a message naming the link, and nothing written anywhere (the whole home and the
link's target byte-identical, modes included). A link that stays inside its own profile is
followed, as Hermes follows it. Rule: docs/reliability.md#containment.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.integration.helpers import hermes_fleet, snapshot
from tests.reliability import scenario
from tests.reliability.conftest import Pristine

pytestmark = [pytest.mark.hermes]

COUNTS = {"refused": 0, "followed": 0}


@pytest.fixture
def home(pristine: Pristine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in pristine.env.items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith("HERMES_")]:
        monkeypatch.delenv(key)
    return scenario.copy_home(pristine.root, tmp_path / "home")


def refused(pristine: Pristine, home: Path, outside: Path, link: str) -> None:
    """apply and plan exit 3 naming `link`; not one byte changes in the home or outside it."""
    before, outside_before = snapshot(home), snapshot(outside)
    for argv in (("apply", "--prune"), ("apply", "--prune", "--adopt"), ("plan", "--prune")):
        run = hermes_fleet(argv[0], "-f", pristine.v2, "--home", home, *argv[1:])
        assert run.code == 3, f"{argv}: exit {run.code}\n{run.text}"
        assert "Traceback" not in run.text
        assert link in run.text and "symlink" in run.text, run.text
        assert snapshot(home) == before, f"{argv} wrote into the home"
        assert snapshot(outside) == outside_before, f"{argv} wrote through the link"
    COUNTS["refused"] += 1


@pytest.mark.parametrize("target", ["legacy", "..", "../.."], ids=["another-profile", "the-root", "outside-the-home"])
def test_a_managed_profile_folder_that_is_a_symlink_is_refused(
    pristine: Pristine, home: Path, tmp_path: Path, target: str
) -> None:
    alpha = home / "profiles" / "alpha"
    shutil.move(alpha, tmp_path / "alpha-moved-away")
    alpha.symlink_to(target)
    refused(pristine, home, tmp_path / "alpha-moved-away", "profiles/alpha")


def test_the_profiles_folder_that_is_a_symlink_is_refused(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    profiles = home / "profiles"
    shutil.move(profiles, tmp_path / "profiles-real")
    profiles.symlink_to(tmp_path / "profiles-real")
    refused(pristine, home, tmp_path / "profiles-real", "profiles is a symlink")


def test_a_profile_prune_would_back_up_that_is_a_symlink_is_refused(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    """Without the rule, prune "backed up" only the link (and the bot's files stayed behind)."""
    delta = home / "profiles" / "delta"
    shutil.move(delta, tmp_path / "delta-real")
    delta.symlink_to("legacy")
    refused(pristine, home, tmp_path / "delta-real", "profiles/delta")
    assert not (home / ".hermes-fleet" / "backups").exists() or not any((home / ".hermes-fleet" / "backups").iterdir())


@pytest.mark.parametrize(
    "entry",
    [".env", "config.yaml", "SOUL.md", "profile.yaml", ".hermes-fleet-owner.json", "assets", "cron", "cron/jobs.json"],
)
@pytest.mark.parametrize("where", ["another-profile", "outside-the-home"])
def test_a_file_that_leads_out_of_its_profile_is_refused(
    pristine: Pristine, home: Path, tmp_path: Path, entry: str, where: str
) -> None:
    link = home / "profiles" / "alpha" / entry
    if where == "another-profile":
        target = home / "profiles" / "legacy" / entry
        outside = home / "profiles" / "legacy"
    else:
        outside = tmp_path / "outside"
        target = outside / entry
    target.parent.mkdir(parents=True, exist_ok=True)
    if not os.path.lexists(target):
        if link.is_dir():
            shutil.copytree(link, target)
        elif link.exists():
            shutil.copy2(link, target)
        else:
            target.write_text("# planted\n", encoding="utf-8")  # alpha has no config.yaml yet
    if link.is_dir():
        shutil.rmtree(link)
    elif link.exists():
        link.unlink()
    link.symlink_to(target)
    refused(pristine, home, outside, f"profiles/alpha/{entry}")


def test_the_root_config_leading_into_a_profile_is_refused(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    """The root profile owns the home minus profiles/ and .hermes-fleet/: a root file may not lead there."""
    config = home / "config.yaml"
    target = home / "profiles" / "legacy" / "root-config.yaml"
    shutil.move(config, target)
    config.symlink_to(target)
    refused(pristine, home, home / "profiles" / "legacy", "config.yaml")


@pytest.mark.parametrize("entry", ["", "inventory", "backups", "apply.lock"], ids=["state-dir", "inventory", "backups", "lock"])
def test_our_own_state_behind_a_symlink_is_refused(pristine: Pristine, home: Path, tmp_path: Path, entry: str) -> None:
    path = home / ".hermes-fleet" / entry if entry else home / ".hermes-fleet"
    outside = tmp_path / "state-elsewhere"
    if path.exists():
        shutil.move(path, outside)
    else:
        outside.mkdir()
    path.symlink_to(outside)
    refused(pristine, home, outside, str(path.relative_to(home)))


def test_a_link_that_stays_inside_its_profile_is_followed(pristine: Pristine, home: Path) -> None:
    """Hermes follows a symlinked SOUL.md or config.yaml (docs/hermes/files.md#symlinks); so do we, inside the profile."""
    alpha = home / "profiles" / "alpha"
    (alpha / "persona").mkdir()
    shutil.move(alpha / "SOUL.md", alpha / "persona" / "SOUL.md")
    (alpha / "SOUL.md").symlink_to("persona/SOUL.md")
    beta = home / "profiles" / "beta"
    (beta / "dotfiles").mkdir()
    shutil.move(beta / "config.yaml", beta / "dotfiles" / "config.yaml")
    (beta / "config.yaml").symlink_to(beta / "dotfiles" / "config.yaml")  # absolute, still inside
    run = hermes_fleet("apply", "-f", pristine.v2, "--home", home, "--prune")
    assert run.code == 0, run.text
    assert (alpha / "SOUL.md").is_symlink() and (beta / "config.yaml").is_symlink()
    assert (alpha / "persona" / "SOUL.md").read_text(encoding="utf-8") == "You are Alpha, version 2.\n"
    assert "openai/gpt-5" in (beta / "dotfiles" / "config.yaml").read_text(encoding="utf-8")
    plan = hermes_fleet("plan", "-f", pristine.v2, "--home", home, "--prune", "--detailed-exitcode")
    assert plan.code == 0, plan.text
    COUNTS["followed"] += 1


def test_restore_refuses_a_backup_behind_a_symlink(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    run = hermes_fleet("apply", "-f", pristine.v2, "--home", home, "--prune")
    assert run.code == 0, run.text
    backups = home / ".hermes-fleet" / "backups"
    (backup,) = list(backups.iterdir())
    shutil.move(backup, tmp_path / "elsewhere")
    backup.symlink_to(tmp_path / "elsewhere")
    lock = ".hermes-fleet/apply.lock"  # restore takes the apply lock: that file records who held it
    before = {k: v for k, v in snapshot(home).items() if k != lock}
    restore = hermes_fleet("restore", "--home", home, backup.name)
    assert restore.code == 1 and "is not a backup under" in restore.text, restore.text
    assert {k: v for k, v in snapshot(home).items() if k != lock} == before
    assert not (home / "profiles" / "delta").exists()
