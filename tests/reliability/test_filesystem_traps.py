"""Filesystem traps during the update run (fleet v1 home -> v2): a clear error, nothing outside the home
touched, the owner of a file kept, and the next apply converges once the trap is gone.

Tests run as root, so "read-only" is made with `chattr +i` (immutable: even root cannot replace the
file) and, where chattr is unavailable, skipped; a file sitting where a folder must be is a second,
root-proof form of "cannot write here".
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from controller.adapters import fsio
from tests.integration.helpers import hermes_fleet, snapshot
from tests.reliability import scenario
from tests.reliability.conftest import Pristine

pytestmark = [pytest.mark.hermes]


@pytest.fixture
def home(pristine: Pristine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in pristine.env.items():
        monkeypatch.setenv(key, value)
    return scenario.copy_home(pristine.root, tmp_path / "home")


def apply_v2(pristine: Pristine, home: Path) -> object:
    return hermes_fleet("apply", "-f", pristine.v2, "--home", home, "--prune")


def converges(pristine: Pristine, home: Path) -> None:
    again = apply_v2(pristine, home)
    assert again.code == 0, again.text
    plan = hermes_fleet("plan", "-f", pristine.v2, "--home", home, "--prune", "--detailed-exitcode")
    assert plan.code == 0, plan.text


def test_profile_symlinked_out_of_the_home_is_refused(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "beta"
    shutil.copytree(home / "profiles" / "beta", outside, symlinks=True)
    shutil.rmtree(home / "profiles" / "beta")
    (home / "profiles" / "beta").symlink_to(outside)
    before = snapshot(outside.parent)

    home_before = snapshot(home)
    run = apply_v2(pristine, home)
    assert run.code == 3, run.text
    assert "Traceback" not in run.text
    assert "profiles/beta is a symlink" in run.text, run.text
    assert snapshot(outside.parent) == before, "apply wrote outside the Hermes home"
    # The whole run is refused before its first write (stricter than refusing one bot).
    assert snapshot(home) == home_before


def test_immutable_file_gives_a_clear_error(pristine: Pristine, home: Path) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not available")
    soul = home / "profiles" / "alpha" / "SOUL.md"
    if subprocess.run(["chattr", "+i", str(soul)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem does not support chattr +i")
    try:
        old = soul.read_bytes()
        run = apply_v2(pristine, home)
        assert run.code == 1, run.text
        assert "Traceback" not in run.text
        assert "bot/alpha" in run.text and "Operation not permitted" in run.text, run.text
        assert soul.read_bytes() == old
        assert scenario.leftovers(home) == []
        assert scenario.ui_meta(home, "legacy")["hermes-bots"]["title"] == "Legacy Bot"  # others went on
    finally:
        subprocess.run(["chattr", "-i", str(soul)], check=True)
    converges(pristine, home)


def test_file_where_a_folder_must_be(pristine: Pristine, home: Path) -> None:
    assets = home / "profiles" / "alpha" / "assets"
    shutil.rmtree(assets)
    assets.write_text("not a folder\n", encoding="utf-8")
    run = apply_v2(pristine, home)
    assert run.code == 1, run.text
    assert "Traceback" not in run.text
    assert "bot/alpha" in run.text and "assets" in run.text, run.text
    assert assets.read_text(encoding="utf-8") == "not a folder\n"
    assets.unlink()
    converges(pristine, home)


@pytest.mark.parametrize("at", [1, 4, 11, -1], ids=["root-config", "profile-yaml", "new-profile", "inventory"])
def test_full_disk(pristine: Pristine, home: Path, at: int) -> None:
    """ENOSPC at a write point (the last one: the inventory): exit 1, the message, no debris; then converge."""
    count = scenario.run_cli(
        ["apply", "-f", pristine.v2, "--home", scenario.copy_home(home, home.parent / "count"), "--prune"],
        pristine.env,
        hook="count",
        log=home.parent / "count.log",
    )
    assert count.returncode == 0
    n = len((home.parent / "count.log").read_text().splitlines())
    k = n if at == -1 else at
    calls = [0]

    def full(target: Path) -> None:
        calls[0] += 1
        if calls[0] == k:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    fsio.WRITE_HOOKS.append(full)
    try:
        run = apply_v2(pristine, home)
    finally:
        fsio.WRITE_HOOKS.remove(full)
    assert run.code == 1, run.text
    assert "Traceback" not in run.text
    assert "No space left on device" in run.text, run.text
    assert scenario.leftovers(home) == []
    converges(pristine, home)


def test_owner_and_mode_are_kept_on_rewrite(pristine: Pristine, home: Path) -> None:
    config = home / "profiles" / "beta" / "config.yaml"
    env = home / "profiles" / "alpha" / ".env"
    os.chown(config, 4242, 4343)
    os.chmod(config, 0o640)
    os.chown(env, 4242, 4343)
    run = apply_v2(pristine, home)
    assert run.code == 0, run.text
    assert "openai/gpt-5" in config.read_text(encoding="utf-8")  # really rewritten
    st = config.stat()
    assert (st.st_uid, st.st_gid, scenario.mode(config)) == (4242, 4343, 0o640)
    st = env.stat()
    assert (st.st_uid, st.st_gid, scenario.mode(env)) == (4242, 4343, 0o600)
    assert "PLAIN_SETTING=v2" in env.read_text(encoding="utf-8")


# --- every failure is a clean error: what, where, and what to do -------------------------------------------


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        (errno.EROFS, "read-only"),
        (errno.EACCES, "permission denied"),
        (errno.EISDIR, "a folder is where a file must be"),
        (errno.ENOSPC, "the disk is full"),
        (errno.EDQUOT, "quota"),
    ],
    ids=["read-only", "permission-denied", "is-a-directory", "disk-full", "quota"],
)
@pytest.mark.parametrize("at", [1, -1], ids=["first-write", "inventory"])
def test_a_failed_write_names_the_file_and_the_fix(pristine: Pristine, home: Path, code: int, hint: str, at: int) -> None:
    """Tests run as root, so permission and read-only failures are injected where the write happens."""
    count = scenario.run_cli(
        ["apply", "-f", pristine.v2, "--home", scenario.copy_home(home, home.parent / "count"), "--prune"],
        pristine.env,
        hook="count",
        log=home.parent / "count.log",
    )
    assert count.returncode == 0
    points = (home.parent / "count.log").read_text().splitlines()
    k = len(points) if at == -1 else at
    target = points[k - 1].split("\t")[1].replace(str(home.parent / "count"), str(home))
    calls = [0]

    def fail(path: Path) -> None:
        calls[0] += 1
        if calls[0] == k:
            raise OSError(code, os.strerror(code), str(path))

    fsio.WRITE_HOOKS.append(fail)
    try:
        run = apply_v2(pristine, home)
    finally:
        fsio.WRITE_HOOKS.remove(fail)
    assert run.code == 1, run.text
    assert "Traceback" not in run.text
    assert f"{target}: {os.strerror(code)}" in run.text and hint in run.text, run.text
    assert scenario.leftovers(home) == []
    converges(pristine, home)


def test_a_lock_file_that_cannot_be_opened_is_a_clean_error(pristine: Pristine, home: Path) -> None:
    lock = home / ".hermes-fleet" / "apply.lock"
    lock.unlink()
    lock.mkdir()
    before = snapshot(home)
    run = apply_v2(pristine, home)
    assert run.code == 1, run.text
    assert "Traceback" not in run.text
    assert f"cannot open the lock file {lock}: Is a directory" in run.text and "move the folder away" in run.text, run.text
    assert snapshot(home) == before
    lock.rmdir()
    converges(pristine, home)


def _immutable(path: Path) -> bool:
    return shutil.which("chattr") is not None and subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0


def test_a_home_that_cannot_be_written_is_a_clean_error(pristine: Pristine, tmp_path: Path) -> None:
    """An immutable folder (chattr +i: even root cannot create a file in it) stands in for a read-only home."""
    empty = tmp_path / "empty-home"
    empty.mkdir()
    if not _immutable(empty):
        pytest.skip("this filesystem does not support chattr +i")
    try:
        run = hermes_fleet("apply", "-f", pristine.v1, "--home", empty, "--adopt")
        assert run.code == 1, run.text
        assert "Traceback" not in run.text
        assert f"cannot create the folder {empty / '.hermes-fleet'}: Operation not permitted" in run.text, run.text
        assert os.listdir(empty) == []
    finally:
        subprocess.run(["chattr", "-i", str(empty)], check=True)


def test_an_inventory_folder_that_cannot_be_written_keeps_the_old_inventory(pristine: Pristine, home: Path) -> None:
    folder = home / ".hermes-fleet" / "inventory"
    old = (folder / "acme.json").read_bytes()
    if not _immutable(folder):
        pytest.skip("this filesystem does not support chattr +i")
    try:
        run = apply_v2(pristine, home)
        assert run.code == 1, run.text
        assert "Traceback" not in run.text
        assert "cannot write" in run.text and "Operation not permitted" in run.text, run.text
        assert (folder / "acme.json").read_bytes() == old
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    assert scenario.leftovers(home) == []
    converges(pristine, home)


@pytest.mark.parametrize("what", ["config-fifo", "inventory-fifo", "secret-fifo", "secret-device", "manifest-fifo"])
def test_special_files_never_block_a_run(pristine: Pristine, home: Path, tmp_path: Path, what: str) -> None:
    """A FIFO where a file is read would block a plain open() forever; /dev/zero would never end. Each is
    refused at once with a message naming it (the subprocess has 60 s; a run takes about one)."""
    manifest = pristine.v2
    if what == "config-fifo":
        (home / "profiles" / "beta" / "config.yaml").unlink()
        os.mkfifo(home / "profiles" / "beta" / "config.yaml")
    elif what == "inventory-fifo":
        (home / ".hermes-fleet" / "inventory" / "acme.json").unlink()
        os.mkfifo(home / ".hermes-fleet" / "inventory" / "acme.json")
    elif what == "manifest-fifo":
        manifest = tmp_path / "pipe.yaml"
        os.mkfifo(manifest)
    else:
        folder = tmp_path / "m"
        folder.mkdir()
        for extra in ("alpha-soul.md", "avatar.png"):
            (folder / extra).write_bytes((pristine.v2.parent / extra).read_bytes())
        if what == "secret-fifo":
            os.mkfifo(folder / "token")
            ref = "token"
        else:
            ref = "/dev/zero"
        doc = json.loads(pristine.v2.read_text(encoding="utf-8"))
        (alpha,) = [b for b in doc["spec"]["bots"] if b["name"] == "alpha"]
        alpha["env"]["OPENROUTER_API_KEY"] = {"from_file": ref}
        manifest = folder / "fleet.yaml"
        manifest.write_text(json.dumps(doc), encoding="utf-8")
    for verb in ("plan", "apply"):
        run = scenario.run_cli([verb, "-f", manifest, "--home", home, "--prune"], pristine.env, timeout=60)
        out = run.stdout + run.stderr
        assert "Traceback" not in out
        if what == "manifest-fifo":
            assert run.returncode == 2 and "FIFO (named pipe), not a regular file" in out, out
        elif what == "inventory-fifo":
            assert run.returncode == 1 and "not a regular file" in out and "acme.json" in out, out
        else:
            assert run.returncode == 1, out
            assert ("config.yaml" if what == "config-fifo" else ref) in out and "not a regular file" in out, out


def test_a_file_where_the_backups_folder_must_be_fails_that_bot_only(pristine: Pristine, home: Path) -> None:
    backups = home / ".hermes-fleet" / "backups"
    backups.write_text("not a folder\n", encoding="utf-8")
    run = apply_v2(pristine, home)
    assert run.code == 1, run.text
    assert "Traceback" not in run.text
    assert "bot/delta: failed" in run.text and "a file is where a folder must be" in run.text, run.text
    assert (home / "profiles" / "delta").is_dir(), "the bot prune could not back up stays where it was"
    backups.unlink()
    converges(pristine, home)
