"""A link planted between the containment check and the write: the write is refused, nothing outside
the home changes (docs/reliability.md#containment).

The attacker is a bot's own tool (or anyone who can write the profile) acting in the moment between
`home.check_profile` and the rename that publishes our file. The moment is hit exactly: a hook in
`fsio.WRITE_HOOKS` (called with the target just before the rename) swaps the folder for a link out
of the home, or puts a link at the file's name; a second case plants the link after the check and
before the write opens its folder. Each time the write is refused with ContainmentError, the target
outside the home is byte-identical, and no temp file is left behind.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from controller.adapters import fsio, home
from controller.errors import ConflictError, ContainmentError
from tests.integration.helpers import hermes_fleet, snapshot
from tests.reliability import scenario
from tests.reliability.conftest import Pristine


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """(a home with profile alpha: config.yaml, .env, cron/jobs.json; a folder outside it)."""
    root = tmp_path / "home"
    alpha = root / "profiles" / "alpha"
    (alpha / "cron").mkdir(parents=True)
    (alpha / "config.yaml").write_text("a: 1\n")
    (alpha / ".env").write_text("K=1\n")
    (alpha / "cron" / "jobs.json").write_text('{"jobs": []}\n')
    outside = tmp_path / "outside"
    (outside / "cron").mkdir(parents=True)
    (outside / "cron" / "jobs.json").write_text("theirs\n")
    (outside / "secret").write_text("do not touch\n")
    return root, outside


@pytest.fixture
def hook() -> Iterator[Callable[[Callable[[Path], None]], None]]:
    added: list[Callable[[Path], None]] = []

    def add(action: Callable[[Path], None]) -> None:
        done: list[bool] = []

        def once(path: Path) -> None:
            if not done:
                done.append(True)
                action(path)

        added.append(once)
        fsio.WRITE_HOOKS.append(once)

    yield add
    for h in added:
        fsio.WRITE_HOOKS.remove(h)


def swap_for_link(path: Path, target: Path, aside: Path) -> None:
    """What the attacker does: move `path` away, put a symlink to `target` in its place."""
    shutil.move(path, aside)
    path.symlink_to(target)


def no_temp_files(*folders: Path) -> None:
    for folder in folders:
        assert not [p for p in folder.rglob("*") if fsio.TEMP_RE.match(p.name)], folder


def test_a_folder_swapped_for_a_link_during_the_write_is_refused(tree: tuple[Path, Path], hook, tmp_path: Path) -> None:
    root, outside = tree
    cron = root / "profiles" / "alpha" / "cron"
    before = snapshot(outside)
    hook(lambda _: swap_for_link(cron, outside / "cron", tmp_path / "cron-aside"))
    with fsio.fenced(root), pytest.raises(ContainmentError, match="changed while hermes-fleet was writing"):
        home.check_profile(root, "alpha")
        fsio.atomic_write_text(cron / "jobs.json", '{"jobs": [1]}\n')
    assert snapshot(outside) == before
    assert (tmp_path / "cron-aside" / "jobs.json").read_text() == '{"jobs": []}\n'  # not published either
    no_temp_files(tmp_path)


def test_a_link_put_at_the_name_during_the_write_is_refused(tree: tuple[Path, Path], hook, tmp_path: Path) -> None:
    root, outside = tree
    env = root / "profiles" / "alpha" / ".env"
    before = snapshot(outside)
    hook(lambda _: (env.unlink(), env.symlink_to(outside / "secret")))
    with fsio.fenced(root), pytest.raises(ContainmentError, match="changed while hermes-fleet was writing"):
        fsio.atomic_write_text(env, "K=2\n", mode=0o600, expect=b"K=1\n")
    assert snapshot(outside) == before
    assert os.readlink(env) == str(outside / "secret")
    no_temp_files(tmp_path)


def test_a_link_planted_after_the_check_and_before_the_write_is_refused(tree: tuple[Path, Path], tmp_path: Path) -> None:
    root, outside = tree
    alpha = root / "profiles" / "alpha"
    before = snapshot(outside)
    home.check_profile(root, "alpha")  # the check passes: no link yet
    swap_for_link(alpha / "cron", outside / "cron", tmp_path / "cron-aside")
    swap_for_link(alpha / "config.yaml", outside / "secret", tmp_path / "config-aside")
    with fsio.fenced(root):
        with pytest.raises(ContainmentError, match="not part of profile 'alpha'"):
            fsio.atomic_write_text(alpha / "cron" / "jobs.json", "ours\n")
        with pytest.raises(ContainmentError, match="not part of profile 'alpha'"):
            fsio.atomic_write_text(alpha / "config.yaml", "ours\n")
        with pytest.raises(ContainmentError, match="not part of profile 'alpha'"):
            fsio.remove(alpha / "cron" / "jobs.json")
    assert snapshot(outside) == before
    no_temp_files(tmp_path)


def test_a_link_into_another_profile_or_our_state_is_refused(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    beta = root / "profiles" / "beta"
    beta.mkdir()
    (beta / "config.yaml").write_text("b: 1\n")
    (root / ".hermes-fleet").mkdir()
    alpha = root / "profiles" / "alpha"
    (alpha / "config.yaml").unlink()
    (alpha / "config.yaml").symlink_to(beta / "config.yaml")
    (root / "config.yaml").symlink_to(root / ".hermes-fleet" / "x")
    with fsio.fenced(root):
        with pytest.raises(ContainmentError, match="not part of profile 'alpha'"):
            fsio.atomic_write_text(alpha / "config.yaml", "ours\n")
        with pytest.raises(ContainmentError, match="not part of the root profile"):
            fsio.atomic_write_text(root / "config.yaml", "ours\n")
    assert (beta / "config.yaml").read_text() == "b: 1\n"
    assert not (root / ".hermes-fleet" / "x").exists()


def test_a_link_inside_its_own_profile_is_still_followed(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    alpha = root / "profiles" / "alpha"
    (alpha / "dotfiles").mkdir()
    (alpha / "dotfiles" / "SOUL.md").write_text("old\n")
    (alpha / "SOUL.md").symlink_to("dotfiles/SOUL.md")
    with fsio.fenced(root):
        fsio.atomic_write_text(alpha / "SOUL.md", "new\n", expect=b"old\n")
    assert (alpha / "SOUL.md").is_symlink() and (alpha / "dotfiles" / "SOUL.md").read_text() == "new\n"


def test_a_path_that_climbs_out_is_refused(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    marker = outside / home.OWNER_MARKER
    marker.write_text("{}\n")
    escape = root / "profiles" / ".." / ".." / "outside" / home.OWNER_MARKER
    with fsio.fenced(root):
        with pytest.raises(ContainmentError, match="climbs out"):
            fsio.remove(escape)
        with pytest.raises(ContainmentError, match="climbs out"):
            fsio.atomic_write_text(escape, "x\n")
    assert marker.read_text() == "{}\n"


# --- folders: publish_dir and make_dirs, relative to descriptors ----------------------------------------


def test_a_staging_folder_swapped_for_a_link_is_never_published(tree: tuple[Path, Path], hook, tmp_path: Path) -> None:
    """The rename that publishes a new profile moves the folder that was built, never a link put in
    its place (which would make `profiles/gamma` a link to wherever it points)."""
    root, outside = tree
    staging = root / "profiles" / ".gamma.staging-1"
    staging.mkdir()
    (staging / "config.yaml").write_text("ours\n")
    hook(lambda _: swap_for_link(staging, outside, tmp_path / "staging-aside"))
    with fsio.fenced(root), pytest.raises(ContainmentError, match="changed while hermes-fleet was writing"):
        fsio.publish_dir(staging, root / "profiles" / "gamma")
    assert not os.path.lexists(root / "profiles" / "gamma")
    assert (outside / "secret").read_text() == "do not touch\n"


def test_a_target_folder_swapped_for_a_link_during_the_publish_is_refused(tree: tuple[Path, Path], hook, tmp_path: Path) -> None:
    """A backup's folder swapped for a link out of the home at the moment of the rename: the profile
    is not moved out of the home."""
    root, outside = tree
    backups = root / ".hermes-fleet" / "backups" / "1"
    backups.mkdir(parents=True)
    alpha = root / "profiles" / "alpha"
    before = snapshot(outside)
    hook(lambda _: swap_for_link(backups, outside, tmp_path / "backups-aside"))
    with fsio.fenced(root), pytest.raises(ContainmentError, match="changed while hermes-fleet was writing"):
        fsio.publish_dir(alpha, backups / "tree")
    assert alpha.is_dir() and (alpha / "config.yaml").read_text() == "a: 1\n"
    assert snapshot(outside) == before


def test_something_at_the_publish_target_is_never_replaced(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    staging = root / "profiles" / ".gamma.staging-1"
    staging.mkdir()
    (root / "profiles" / "gamma").symlink_to(outside)
    with fsio.fenced(root), pytest.raises(ContainmentError, match="changed while hermes-fleet was writing"):
        fsio.publish_dir(staging, root / "profiles" / "gamma")
    assert os.readlink(root / "profiles" / "gamma") == str(outside) and staging.is_dir()
    (root / "profiles" / "delta").mkdir()  # an empty folder made meanwhile: rename(2) would replace it
    with fsio.fenced(root), pytest.raises(ConflictError, match="appeared while hermes-fleet was creating it"):
        fsio.publish_dir(staging, root / "profiles" / "delta")
    assert staging.is_dir() and not os.listdir(root / "profiles" / "delta")


@pytest.mark.parametrize(
    "link",
    ["profiles/alpha", "profiles", ".hermes-fleet", "profiles/alpha/cron"],
)
def test_make_dirs_never_creates_through_a_link_planted_on_its_way(tree: tuple[Path, Path], tmp_path: Path, link: str) -> None:
    """A link put (after the check) at a folder on the way of a `mkdir -p`: the folders are made
    relative to descriptors opened without following links, so nothing is created out of the home."""
    root, outside = tree
    (root / ".hermes-fleet").mkdir()
    swap_for_link(root / link, outside, tmp_path / "aside")
    before = snapshot(outside)
    target = root / link / "made" / "deeper"
    with fsio.fenced(root), pytest.raises(ContainmentError):
        fsio.make_dirs(target, mode=0o700)
    assert snapshot(outside) == before and not (outside / "made").exists()


def test_make_dirs_follows_a_link_inside_its_own_profile(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    alpha = root / "profiles" / "alpha"
    (alpha / "dotfiles" / "assets").mkdir(parents=True)
    (alpha / "assets").symlink_to("dotfiles/assets")
    with fsio.fenced(root):
        fsio.make_dirs(alpha / "assets" / "x", mode=0o700)
        fsio.make_dirs(root / ".hermes-fleet" / "history" / "acme", mode=0o700)
    assert (alpha / "dotfiles" / "assets" / "x").is_dir()
    assert scenario.mode(root / ".hermes-fleet" / "history" / "acme") == 0o700


# --- the whole CLI: the update run with the swap at its first write into alpha ---------------------------


@pytest.fixture
def real_home(pristine: Pristine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in pristine.env.items():
        monkeypatch.setenv(key, value)
    return scenario.copy_home(pristine.root, tmp_path / "home")


@pytest.mark.hermes
@pytest.mark.parametrize("what", ["folder", "file"])
def test_the_update_run_refuses_a_link_planted_at_its_write(
    pristine: Pristine, real_home: Path, tmp_path: Path, hook, what: str
) -> None:
    alpha = real_home / "profiles" / "alpha"
    outside = tmp_path / "outside"
    shutil.copytree(alpha, outside / "alpha", symlinks=True)
    (outside / "file").write_text("outside the home\n")
    before = snapshot(outside)
    hit: list[Path] = []

    def plant(path: Path) -> None:
        hit.append(path)
        if what == "folder":
            swap_for_link(alpha, outside / "alpha", tmp_path / "alpha-aside")
        else:
            path.unlink()
            path.symlink_to(outside / "file")

    def at_alpha(path: Path) -> None:
        if path.is_relative_to(alpha) and not hit:
            plant(path)

    fsio.WRITE_HOOKS.append(at_alpha)
    try:
        run = hermes_fleet("apply", "-f", pristine.v2, "--home", real_home, "--prune")
    finally:
        fsio.WRITE_HOOKS.remove(at_alpha)
    assert hit, "the run never wrote into alpha"
    assert run.code != 0 and "Traceback" not in run.text, run.text
    assert "changed while hermes-fleet was writing" in run.text, run.text
    assert snapshot(outside) == before, "a write went through the planted link"
    no_temp_files(tmp_path)


# --- a hard link: the same file under another profile's name --------------------------------------------


def _db_without_bot_chat(path: Path) -> None:
    import sqlite3

    from controller.adapters import sessions

    conn = sqlite3.connect(path)
    for statement in sessions._SCHEMA_STATEMENTS:
        conn.execute(statement)
    conn.commit()
    conn.close()


@pytest.mark.hermes
def test_a_hard_linked_state_db_is_never_written_in_place(pristine: Pristine, real_home: Path) -> None:
    """Before: apply wrote beta's Bot Chat row into `stranger`, a profile no fleet owns."""
    stranger = real_home / "profiles" / "stranger"
    stranger.mkdir()
    _db_without_bot_chat(stranger / "state.db")
    beta_db = real_home / "profiles" / "beta" / "state.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{beta_db}{suffix}").unlink(missing_ok=True)
    os.link(stranger / "state.db", beta_db)
    before = snapshot(stranger)
    run = hermes_fleet("apply", "-f", pristine.v2, "--home", real_home, "--prune")
    assert run.code == 1 and "Traceback" not in run.text, run.text
    assert "state.db has 2 names (a hard link)" in run.text and "bot/beta" in run.text, run.text
    assert snapshot(stranger) == before, "the Bot Chat row went into another profile"
    # The other bots converged; beta does once it has its own file.
    beta_db.unlink()
    again = hermes_fleet("apply", "-f", pristine.v2, "--home", real_home, "--prune")
    assert again.code == 0, again.text
    assert snapshot(stranger) == before
